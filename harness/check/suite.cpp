#include "check/suite.hpp"

#include "check/check_reporter.hpp"
#include "config/config.hpp"

#include <fmt/format.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace harness::check {

namespace fs = std::filesystem;

fs::path check_config_folder() {
    const fs::path exe_dir = boost::dll::program_location().parent_path();
    std::error_code ec;
    if (exe_dir.filename() == "bin") {
        const fs::path installed = exe_dir.parent_path() / "share" / "harness" / "configs";
        if (fs::is_directory(installed, ec)) return installed;
    }
    const fs::path source = HB_SOURCE_CONFIGS;
    if (fs::is_directory(source, ec)) return source;
    throw std::runtime_error("no check configs: neither " +
                             (exe_dir.parent_path() / "share/harness/configs").string() + " nor " +
                             source.string() + " exists");
}

std::vector<SuitePart> suite_parts(const fs::path& folder) {
    std::vector<fs::path> configs;
    for (const auto& entry : fs::directory_iterator(folder)) {
        const std::string file = entry.path().filename().string();
        if (file.rfind("check", 0) == 0 && entry.path().extension() == ".yaml")
            configs.push_back(entry.path());
    }
    std::sort(configs.begin(), configs.end());
    const fs::path whole = folder / "check.yaml";
    if (std::find(configs.begin(), configs.end(), whole) == configs.end())
        throw std::runtime_error("no " + whole.string() + ": the suite's layer checks run on it");
    std::vector<SuitePart> parts;
    for (const auto& path : configs)
        if (config::load_config(path.string()).parallel.ranks.empty())
            parts.push_back({path.stem().string(), path, false, std::nullopt});
    parts.push_back({"check --layers", whole, true, std::nullopt});
    return parts;
}

OptionParts option_parts(const std::vector<hb::OptionSpec>& specs, const fs::path& folder) {
    OptionParts out;
    for (const hb::OptionSpec& spec : specs) {
        if (spec.effect == HB_OPTION_CHANGES_TIMING) {
            out.not_run.push_back(spec.key + " (timing only)");
            continue;
        }
        if (spec.type == HB_OPTION_INT) {
            out.not_run.push_back(spec.key + " (an integer)");
            continue;
        }
        const std::string name = spec.checked_on.empty() ? "check" : spec.checked_on;
        const fs::path config = folder / (name + ".yaml");
        if (!fs::is_regular_file(config))
            throw std::invalid_argument("option '" + spec.key + "' is checked on '" + name +
                                        "', which is not a check config of " + folder.string());
        const std::vector<std::string> values =
            spec.type == HB_OPTION_BOOL ? std::vector<std::string>{"true", "false"} : spec.choices;
        for (const std::string& value : values)
            if (value != spec.default_value)
                out.parts.push_back(
                    {name + " " + spec.key + "=" + value, config, false, {{spec.key, value}}});
    }
    return out;
}

namespace {

bool is_plugin_name(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

bool is_device_name(const std::string& s) {
    if (s == "cpu") return true;
    const std::string index = s.rfind("cuda:", 0) == 0 ? s.substr(5) : "";
    return !index.empty() && index.size() <= 4 &&
           std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
           (index.size() == 1 || index[0] != '0');
}

}  // namespace

config::RunConfig with_backend(config::RunConfig config, const SuiteBackend& backend) {
    if (!is_plugin_name(backend.plugin))
        throw std::invalid_argument("'" + backend.plugin +
                                    "' is not a plugin name (a name matching [a-z0-9_]+)");
    if (!is_device_name(backend.device))
        throw std::invalid_argument("'" + backend.device + "' is not a device (cpu or cuda:N)");
    config::BackendEntry entry;
    entry.name = backend.plugin;
    entry.plugin = backend.plugin;
    entry.device = backend.device;
    entry.placement = config.placement;
    entry.placement_place = config.placement_place;
    config.backends = {entry};
    return config;
}

namespace {

std::string worst_of(const Comparison& comparison) {
    const Difference* worst = comparison.worst_relative();
    if (!worst) return "nothing compared";
    return fmt::format("worst {}: {:.2g} of its tolerance", worst->quantity, worst->ratio());
}

PartResult result_of(const BackendCheck& check) {
    if (check.run.unsupported) return {"SKIPPED", "refused: " + check.run.message};
    PartResult r{verdict_of(check), check.run.message};
    if (!compared(check)) return r;
    r.detail =
        check.comparison.problem.empty() ? worst_of(check.comparison) : check.comparison.problem;
    for (const auto& n : check.comparison.not_compared) r.detail += "; not compared: " + n;
    return r;
}

}  // namespace

PartResult part_result(const CheckOutcome& outcome) {
    if (!outcome.baseline_problem.empty()) return {"BASELINE FAILED", outcome.baseline_problem};
    if (outcome.checks.empty()) return {"FAILED", "the backend was not checked"};
    return result_of(outcome.checks.front());
}

PartResult part_result(const LayerCheckOutcome& outcome) {
    // The worst verdict of any configuration stands for the part.
    const std::vector<std::string> order{"PASS", "SKIPPED", "MISMATCH", "FAILED",
                                         "BASELINE FAILED"};
    auto rank = [&](const std::string& v) { return std::find(order.begin(), order.end(), v); };
    PartResult result{"PASS", ""};
    int failing = 0, skipped = 0;
    std::string failing_names, first_skip, worst_unit;
    const Difference* worst = nullptr;
    for (const auto& u : outcome.units) {
        const PartResult r = part_result(u.outcome);
        if (rank(r.verdict) > rank(result.verdict)) result.verdict = r.verdict;
        if (r.verdict == "SKIPPED") {
            if (skipped++ == 0) first_skip = r.detail;
        } else if (r.verdict != "PASS") {
            if (failing++ < 3) failing_names += (failing_names.empty() ? "" : ", ") + u.unit.name;
        } else if (const Difference* d = u.outcome.checks.front().comparison.worst_relative();
                   d && (!worst || d->ratio() > worst->ratio())) {
            worst = d;
            worst_unit = u.unit.name;
        }
    }
    const int n = static_cast<int>(outcome.units.size());
    if (failing > 0) {
        result.detail = fmt::format("{} of {} configurations: {}{}", failing, n, failing_names,
                                    failing > 3 ? ", ..." : "");
        return result;
    }
    if (skipped == n) return {"SKIPPED", first_skip};
    result.verdict = "PASS";
    result.detail = fmt::format("{} configurations", n - skipped);
    if (worst)
        result.detail += fmt::format("; worst {} {}: {:.2g} of its tolerance", worst_unit,
                                     worst->quantity, worst->ratio());
    if (skipped > 0) result.detail += fmt::format("; {} skipped: {}", skipped, first_skip);
    return result;
}

}  // namespace harness::check
