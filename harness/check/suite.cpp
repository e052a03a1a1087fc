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
            parts.push_back({path.stem().string(), path, false});
    parts.push_back({"check --layers", whole, true});
    return parts;
}

namespace {

// A name written into YAML as a plain double-quoted scalar needs no escape.
void require_plain(const std::string& what, const std::string& value) {
    const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
               c == ':';
    });
    if (!plain)
        throw std::invalid_argument(fmt::format(
            "{} '{}' is not a name (letters, digits, '_', '-', '.', ':')", what, value));
}

}  // namespace

std::string suite_config(const std::string& text, const std::string& source,
                         const SuiteBackend& backend) {
    require_plain("plugin", backend.plugin);
    require_plain("device", backend.device);
    std::istringstream in(text);
    std::string kept, line;
    bool in_backends = false;
    while (std::getline(in, line)) {
        const bool top_level_key =
            !line.empty() && line[0] != ' ' && line[0] != '#' && line[0] != '-';
        if (in_backends && top_level_key)
            throw std::invalid_argument(source +
                                        ": the suite needs backends as its last key, and '" + line +
                                        "' follows it");
        if (top_level_key && line.rfind("backends:", 0) == 0) in_backends = true;
        if (!in_backends) kept += line + "\n";
    }
    if (!in_backends) throw std::invalid_argument(source + ": has no backends section");
    return kept +
           fmt::format("backends:\n  - name: \"{0}\"\n    plugin: \"{0}\"\n    device: \"{1}\"\n",
                       backend.plugin, backend.device);
}

namespace {

std::string worst_of(const Comparison& comparison) {
    const Difference* worst = comparison.worst_relative();
    if (!worst) return "nothing compared";
    return fmt::format("worst {}: {:.2g} of its tolerance", worst->quantity, worst->ratio());
}

PartResult result_of(const BackendCheck& check) {
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
