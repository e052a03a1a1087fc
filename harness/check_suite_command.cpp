#include "commands.hpp"

#include "check/check_table_reporter.hpp"
#include "check/suite.hpp"
#include "config/config.hpp"
#include "model/hourglass.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/option_check.hpp"
#include "plugin_host/plugin_search.hpp"
#include "run/progress.hpp"

#include <fmt/format.h>

#include <iostream>
#include <stdexcept>

namespace harness {

namespace {

struct PreparedPart {
    check::SuitePart part;
    config::RunConfig config;  // the shipped config with the suite's backend as its only entry
};

// Every part's config loaded with the suite's backend as its entry, the plugin's defaults checked:
// what can be refused is refused before any part runs.
std::vector<PreparedPart> prepare(const check::SuiteBackend& backend) {
    if (!plugin_host::find_plugin(backend.plugin)) {
        std::string why = "no plugin '" + backend.plugin + "' (" +
                          plugin_host::plugin_file_name(backend.plugin) + ") on the plugin path " +
                          plugin_host::describe_search_path();
        if (const auto reason = plugin_host::not_built_reason(backend.plugin))
            why += "; it was not built: " + *reason;
        throw std::runtime_error(why);
    }
    std::vector<PreparedPart> prepared;
    for (const auto& part : check::suite_parts(check::check_config_folder())) {
        PreparedPart p{part, check::with_backend(config::load_config(part.config.string()), backend)};
        plugin_host::check_entries_against_plugins(p.config, {0});
        prepared.push_back(std::move(p));
    }
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
    std::vector<PreparedPart> parts;
    try {
        parts = prepare(backend);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness check --suite: %s\n", e.what());
        return kExitUsage;
    }

    std::vector<check::PartResult> results;
    for (const auto& p : parts) {
        std::cout << fmt::format("== suite part {} of {}: {}\n", results.size() + 1, parts.size(),
                                 p.part.label);
        try {
            results.push_back(run_part(p, args, progress));
        } catch (const std::exception& e) {
            results.push_back({"FAILED", e.what()});
        }
        std::cout << "\n";
        if (plugin_host::interrupted()) break;
    }

    std::cout << fmt::format("suite: plugin {} on {}, {} steps, the check configs of {}\n",
                             backend.plugin, backend.device, args.steps,
                             parts.front().part.config.parent_path().string());
    int passed = 0, skipped = 0;
    std::string failing;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        std::cout << fmt::format("  {:<16} {:<9} {}\n", parts[i].part.label, r.verdict, r.detail);
        if (r.verdict == "PASS")
            ++passed;
        else if (r.verdict == "SKIPPED")
            ++skipped;
        else
            failing +=
                fmt::format("{}{} {}", failing.empty() ? "" : ", ", parts[i].part.label, r.verdict);
    }
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
