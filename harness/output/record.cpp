#include "output/record.hpp"

#include <array>
#include <limits>
#include <utility>

namespace harness::output {

namespace {

constexpr std::array<std::pair<Status, const char*>, 8> kNames{{
    {Status::ok, "ok"},
    {Status::skipped, "skipped"},
    {Status::failed, "failed"},
    {Status::crashed, "crashed"},
    {Status::timeout, "timeout"},
    {Status::oom, "oom"},
    {Status::mismatch, "mismatch"},
    {Status::interrupted, "interrupted"},
}};

}  // namespace

const char* to_string(Status s) {
    for (const auto& [status, name] : kNames) {
        if (status == s) return name;
    }
    return "unknown";
}

std::optional<Status> status_from_string(const std::string& s) {
    for (const auto& [status, name] : kNames) {
        if (s == name) return status;
    }
    return std::nullopt;
}

std::string environment_warnings(const Provenance& p) {
    std::string out;
    for (const EnvironmentFinding& f : p.environment) {
        if (!f.warning) continue;
        if (!out.empty()) out += ';';
        out += f.check + '=' + f.state;
    }
    return out;
}

std::string environment_warning_lines(const Provenance& p) {
    std::string out;
    for (const EnvironmentFinding& f : p.environment)
        if (f.warning) out += "***WARNING*** " + f.message + '\n';
    return out;
}

std::string row_name(const std::string& backend, int ranks) {
    if (ranks <= 0) return backend;
    return backend + " (" + std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)");
}

std::string BackendRun::name() const {
    return row_name(backend.empty() ? plugin : backend, parallel ? parallel->ranks : 0);
}

double BackendRun::cpu_median_ms() const {
    if (cpu_ms.empty()) return std::numeric_limits<double>::quiet_NaN();
    return compute_stats(cpu_ms, 0, 0).median_ms;
}

double BackendRun::first_loss() const {
    if (!warmup_losses.empty()) return warmup_losses.front();
    if (!losses.empty()) return losses.front();
    return std::numeric_limits<double>::quiet_NaN();
}

double BackendRun::last_loss() const {
    if (!losses.empty()) return losses.back();
    if (!warmup_losses.empty()) return warmup_losses.back();
    return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace harness::output
