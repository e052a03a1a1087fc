#include "commands.hpp"

#include "backend_selection.hpp"
#include "destinations.hpp"
#include "layers/gbench_json.hpp"
#include "layers/layer_table.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "model/name_pattern.hpp"
#include "output/atomic_file.hpp"
#include "output/output_lock.hpp"
#include "output/reporter.hpp"
#include "output/run_json.hpp"
#include "plugin_host/option_check.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "roofline/run_bound.hpp"
#include "roofline/step_bound.hpp"
#include "run/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace harness {

namespace fs = std::filesystem;

namespace {

// What every worker measured so far, in run order.
struct Collected {
    std::vector<layers::BackendLayers> backends;
    std::vector<std::pair<std::string, nlohmann::json>> gbench;
    int configurations_in_model = 0;
    std::string config_name;
    layers::LayerTable table() const {
        return layers::make_layer_table(config_name, backends, configurations_in_model);
    }
};

// A worker's file, absent when the worker wrote none (it crashed, or ran nothing).
std::optional<std::string> read_text(const fs::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), {});
}

class LayerCsvReporter final : public output::FileReporter {
public:
    LayerCsvReporter(std::string path, const Collected& collected)
        : FileReporter(std::move(path)), collected_(collected) {}

private:
    std::string contents(const output::Provenance& provenance,
                         const std::vector<output::BackendRun>&) const override {
        return layers::layer_csv(provenance, collected_.backends, collected_.table());
    }
    const Collected& collected_;
};

class GbenchJsonReporter final : public output::FileReporter {
public:
    GbenchJsonReporter(std::string path, const Collected& collected)
        : FileReporter(std::move(path)), collected_(collected) {}

private:
    std::string contents(const output::Provenance&,
                         const std::vector<output::BackendRun>&) const override {
        return layers::merge_gbench(collected_.gbench).dump(2) + "\n";
    }
    const Collected& collected_;
};

// The backends in the order --backends names them: the first is the one the others are compared
// with.
void order_as_named(std::vector<int>& entries, const config::RunConfig& config,
                    const std::optional<std::string>& names) {
    if (!names) return;
    auto position = [&](int entry) {
        return (',' + *names + ',')
            .find(',' + config.backends[static_cast<size_t>(entry)].name + ',');
    };
    std::stable_sort(entries.begin(), entries.end(),
                     [&](int a, int b) { return position(a) < position(b); });
}

}  // namespace

int layers_command(const LayersArgs& args) {
    config::RunConfig config;
    run::RunRequest request;
    std::string csv_path;
    std::optional<output::OutputLock> lock;
    Collected collected;
    try {
        config = config::load_config(args.config);
        request.config_path = args.config;
        request.entries = select_entries(config, args.backends);
        order_as_named(request.entries, config, args.backends);
        plugin_host::check_entries_against_plugins(config, request.entries);
        request.overrides = {args.warmup, -1};
        std::unique_ptr<model::NamePattern> pattern;
        try {
            pattern = std::make_unique<model::NamePattern>(args.filter);
        } catch (const std::invalid_argument& e) {
            throw UsageError("--filter: '" + args.filter +
                             "' is not a regular expression: " + e.what());
        }
        const auto units = model::layer_units(model::build_hourglass(config.model));
        collected.configurations_in_model = static_cast<int>(units.size());
        collected.config_name = config.name;
        size_t matched = 0;
        for (const auto& u : units) matched += pattern->found_in(u.name) ? 1 : 0;
        if (matched == 0) {
            std::string names;
            for (const auto& u : units) names += "\n  " + u.name;
            throw UsageError("--filter: '" + args.filter + "' matches none of " + config.name +
                             "'s layer configurations:" + names);
        }
        csv_path = args.output.empty() ? default_output(config, "-layers") : args.output;
        std::vector<NamedFile> destinations = {{"--output", csv_path}};
        if (!args.json.empty()) destinations.push_back({"--json", args.json});
        check_distinct(destinations, {{"the config", args.config}});
        check_file("--output", csv_path);
        if (!args.json.empty()) check_file("--json", args.json);
        create_folder("--output", fs::path(csv_path).parent_path());
        if (!args.json.empty()) create_folder("--json", fs::path(args.json).parent_path());
        lock.emplace(csv_path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness layers: %s\n", e.what());
        return kExitUsage;
    }

    plugin_host::ScratchDir scratch("harness-layers");
    auto gbench_path = [&](int entry) {
        return scratch.path() / fmt::format("gbench-{}.json", entry);
    };
    auto units_path = [&](int entry) {
        return scratch.path() / fmt::format("units-{}.json", entry);
    };
    request.on_end = [&](output::Provenance& p, std::vector<output::BackendRun>& runs) {
        const model::Graph model = model::build_hourglass(config.model);
        roofline::bound_runs(model, config.optimizer, p, runs);
        const auto units = model::layer_units(model);
        for (size_t k = 0; k < collected.backends.size() && k < runs.size(); ++k) {
            layers::BackendLayers& b = collected.backends[k];
            b.whole.bound_ms = runs[k].bound_ms;
            if (const output::Ceilings* c = roofline::ceilings_on(p, runs[k].threads))
                for (const model::LayerUnit& u : units)
                    b.bound_ms[u.name] = 1e3 * roofline::layers_bound_seconds(model, u.layers, *c);
        }
    };
    request.one_process = true;
    request.quiet = args.quiet;
    request.timed_steps = false;
    request.adjust_job = [&](run::WorkerJob& job) {
        const int entry = std::get<int>(job.backend);
        job.layer_timing =
            run::LayerTiming{args.filter, args.repetitions, args.iterations,
                             gbench_path(entry).string(), units_path(entry).string()};
    };
    size_t finished = 0;
    request.on_finished = [&](output::BackendRun& run) {
        const int entry = request.entries.at(finished++);
        layers::BackendLayers& b = collected.backends.emplace_back();
        b.whole = run;
        try {
            // The samples are written at once when Google Benchmark has finished; without them,
            // its JSON may be the part written before the worker died.
            if (auto units = read_text(units_path(entry))) {
                b.units = layers::units_from_json(nlohmann::json::parse(*units));
                if (auto doc = read_text(gbench_path(entry)))
                    collected.gbench.emplace_back(run.backend, layers::parse_gbench(*doc));
            }
        } catch (const std::exception& e) {
            run.message += (run.message.empty() ? "" : "; ") +
                           std::string("its worker's files cannot be read: ") + e.what();
            b.whole.message = run.message;
        }
    };

    output::Reporters reporters;
    reporters.add(std::make_unique<LayerCsvReporter>(csv_path, collected));
    if (!args.json.empty())
        reporters.add(std::make_unique<GbenchJsonReporter>(args.json, collected));
    run::RunOutcome outcome;
    try {
        outcome = run::run_backends(config, request, reporters);
    } catch (const output::OutputError& e) {
        std::fprintf(stderr, "harness layers: %s\n", e.what());
        return kExitOutputFailed;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness layers: %s\n", e.what());
        return kExitBackendFailed;
    }
    std::cout << layers::format_layer_table(collected.table()) << std::flush;
    std::fprintf(stderr, "results: %s%s\n", csv_path.c_str(),
                 args.json.empty() ? "" : (" (Google Benchmark JSON: " + args.json + ")").c_str());
    return run::exit_code_of(outcome, "harness layers");
}

}  // namespace harness
