#include "commands.hpp"

#include "check/check_table_reporter.hpp"
#include "check/suite.hpp"
#include "config/config.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/option_check.hpp"
#include "plugin_host/plugin_listing.hpp"
#include "plugin_host/plugin_search.hpp"
#include "run/progress.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace harness {

namespace {

struct PreparedPart {
    check::SuitePart part;
    config::RunConfig config;  // the shipped config with the suite's backend as its only entry
    std::string note;          // what the part changed of its config for the plugin
};

struct PreparedSuite {
    std::vector<PreparedPart> parts;
    std::vector<std::string> options_not_run;  // check::OptionParts::not_run
};

// The part's config with the suite's backend as its only entry, the part's option set, and the
// batches on the device where the config has them on the host and the plugin cannot take them
// from there.
PreparedPart prepare_part(const check::SuitePart& part, const check::SuiteBackend& backend,
                          const nlohmann::json& description) {
    const bool host_placement = plugin_host::announces(description, "host_placement");
    PreparedPart p{part, check::with_backend(config::load_config(part.config.string()), backend),
                   ""};
    config::BackendEntry& entry = p.config.backends.front();
    if (part.option) {
        entry.options[part.option->first] = part.option->second;
        entry.option_places[part.option->first] = {part.option->first, 0, 0};
    }
    if (entry.placement == HB_PLACEMENT_HOST && !host_placement) {
        entry.placement = HB_PLACEMENT_DEVICE;
        p.note = "batches on the device: the plugin cannot take them from host memory";
    }
    plugin_host::check_entries_against_plugins(p.config, {0}, {{backend.plugin, description}});
    return p;
}

// Every part's config loaded with the suite's backend as its entry, the plugin's defaults and
// each option's values checked: what can be refused is refused before any part runs.
PreparedSuite prepare(const check::SuiteBackend& backend) {
    const auto file = plugin_host::find_plugin(backend.plugin);
    if (!file) {
        std::string why = "no plugin '" + backend.plugin + "' (" +
                          plugin_host::plugin_file_name(backend.plugin) + ") on the plugin path " +
                          plugin_host::describe_search_path();
        if (const auto reason = plugin_host::not_built_reason(backend.plugin))
            why += "; it was not built: " + *reason;
        throw std::runtime_error(why);
    }
    const nlohmann::json description = plugin_host::describe_in_child(*file);
    const std::filesystem::path folder = check::check_config_folder();
    std::vector<check::SuitePart> parts = check::suite_parts(folder);
    check::OptionParts options;
    if (const auto declared = plugin_host::declared_options(description))
        options = check::option_parts(*declared, folder);
    parts.insert(parts.end(), options.parts.begin(), options.parts.end());
    PreparedSuite prepared;
    prepared.options_not_run = options.not_run;
    for (const auto& part : parts)
        prepared.parts.push_back(prepare_part(part, backend, description));
    return prepared;
}

check::PartResult run_part(const PreparedPart& p, const CheckArgs& args,
                           run::ProgressLine& progress) {
    check::CheckRequest request;
    request.config_path = p.config.path;
    request.entries = {0};
    request.steps = args.steps;
    request.progress = &progress;
    check::CheckTableReporter reporter(std::cout);
    if (!p.part.layers) {
        const check::CheckOutcome outcome = check::run_check(p.config, request);
        reporter.report(request, outcome);
        return check::part_result(outcome);
    }
    const auto units = model::layer_units(model::build_hourglass(p.config.model));
    const check::LayerCheckOutcome outcome =
        check::run_layer_check(p.config, request, check::select_units(units, ""), "");
    reporter.report_layers(request, outcome);
    return check::part_result(outcome);
}

}  // namespace

int check_suite_command(const CheckArgs& args) {
    const check::SuiteBackend backend{*args.suite, args.device.value_or("cpu")};
    run::ProgressLine progress(run::ProgressLine::wanted(args.quiet));
    PreparedSuite suite;
    try {
        suite = prepare(backend);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check --suite: %s\n", e.what());
        return kExitUsage;
    }

    const std::vector<PreparedPart>& parts = suite.parts;
    std::vector<check::PartResult> results;
    for (const auto& p : parts) {
        std::cout << fmt::format("== suite part {} of {}: {}\n", results.size() + 1, parts.size(),
                                 p.part.label);
        try {
            results.push_back(run_part(p, args, progress));
        } catch (const std::exception& e) {
            results.push_back({"FAILED", e.what()});
        }
        if (!p.note.empty()) results.back().detail += "; " + p.note;
        std::cout << "\n";
        if (plugin_host::interrupted()) break;
    }

    std::cout << fmt::format("suite: plugin {} on {}, {} steps, the check configs of {}\n",
                             backend.plugin, backend.device, args.steps,
                             parts.front().part.config.parent_path().string());
    size_t width = 16;
    for (const auto& p : parts) width = std::max(width, p.part.label.size());
    int passed = 0, skipped = 0;
    std::string failing;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        std::cout << fmt::format("  {:<{}} {:<9} {}\n", parts[i].part.label, width, r.verdict,
                                 r.detail);
        if (r.verdict == "PASS")
            ++passed;
        else if (r.verdict == "SKIPPED")
            ++skipped;
        else
            failing +=
                fmt::format("{}{} {}", failing.empty() ? "" : ", ", parts[i].part.label, r.verdict);
    }
    std::string values;
    for (const auto& p : parts)
        if (p.part.option)
            values += fmt::format("{}{}={}", values.empty() ? "" : ", ", p.part.option->first,
                                  p.part.option->second);
    std::cout << fmt::format("  option values run: {}\n", values.empty() ? "none" : values);
    if (!suite.options_not_run.empty())
        std::cout << fmt::format("  options not checked: {}\n",
                                 fmt::join(suite.options_not_run, "; "));
    const std::string who = backend.plugin + " on " + backend.device;
    if (plugin_host::interrupted()) {
        std::cout << fmt::format("{}: INTERRUPTED after {} of {} parts\n", who, results.size(),
                                 parts.size());
        return kExitInterrupted;
    }
    if (!failing.empty()) {
        std::cout << fmt::format("{}: NOT CONFORMANT ({}; {} of {} parts pass)\n", who, failing,
                                 passed, parts.size());
        return kExitBackendFailed;
    }
    if (passed == 0) {
        std::cout << fmt::format("{}: NOT CHECKED (every part skipped it)\n", who);
        return kExitNothingRan;
    }
    if (skipped > 0) {
        std::cout << fmt::format(
            "{}: CONFORMANT on the parts it runs ({} of {} pass, {} skipped)\n", who, passed,
            parts.size(), skipped);
        return kExitOk;
    }
    std::cout << fmt::format("{}: CONFORMANT (all {} parts pass)\n", who, parts.size());
    return kExitOk;
}

}  // namespace harness
