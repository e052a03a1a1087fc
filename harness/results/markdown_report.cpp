#include "results/markdown_report.hpp"

#include <fmt/format.h>

#include <set>

namespace harness::results {

namespace {

std::string get(const CsvRow& row, const std::string& column) {
    auto it = row.find(column);
    return it == row.end() ? "" : it->second;
}

double number(const CsvRow& row, const std::string& column) {
    const std::string s = get(row, column);
    if (s.empty()) return 0;
    try {
        return std::stod(s);
    } catch (const std::exception&) {
        return 0;
    }
}

std::string fixed(const CsvRow& row, const std::string& column, int digits) {
    return get(row, column).empty() ? "" : fmt::format("{:.{}f}", number(row, column), digits);
}

// The distinct values of a provenance column, joined.
std::string distinct(const std::vector<CsvRow>& rows, const std::string& column) {
    std::set<std::string> values;
    for (const auto& r : rows)
        if (!get(r, column).empty()) values.insert(get(r, column));
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : "; ") + v;
    return s.empty() ? "—" : s;
}

// Markdown cells must not contain a bare '|'.
std::string cell(std::string s) {
    for (size_t pos = 0; (pos = s.find('|', pos)) != std::string::npos; pos += 2)
        s.replace(pos, 1, "\\|");
    return s;
}

}  // namespace

std::string markdown_report(const std::vector<CsvRow>& rows, const ReportOptions& options) {
    const std::string& baseline = options.baseline;
    const bool attainable = options.attainable_gflops > 0;
    std::string out;
    out += fmt::format("- config: {} (sha256 {})\n", distinct(rows, "config_name"),
                       distinct(rows, "config_sha256").substr(0, 16));
    out += fmt::format("- machine: {} — CPU {} — GPU {} (driver {})\n", distinct(rows, "host"),
                       distinct(rows, "cpu_model"), distinct(rows, "gpu_name"),
                       distinct(rows, "gpu_driver"));
    out += fmt::format("- harness {} at {}, {}\n\n", distinct(rows, "harness_version"),
                       distinct(rows, "git_commit"), distinct(rows, "utc_time"));

    std::map<std::string, double> baseline_ms;  // config_sha256 -> median
    for (const auto& r : rows)
        if (!baseline.empty() && get(r, "backend") == baseline && get(r, "status") == "ok")
            baseline_ms[get(r, "config_sha256")] = number(r, "median_ms");

    out +=
        "| backend | device | status | check | math | threads | median ms | IQR ms | "
        "images/s | GFLOP/s | peak MiB | first loss | last loss |";
    if (attainable) out += fmt::format(" of {:.1f} GFLOP/s |", options.attainable_gflops);
    out += baseline.empty() ? "\n" : fmt::format(" vs {} |\n", cell(baseline));
    out += "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|";
    if (attainable) out += "---:|";
    out += baseline.empty() ? "\n" : "---:|\n";
    for (const auto& r : rows) {
        std::string status = get(r, "status");
        if (!get(r, "message").empty()) status += ": " + get(r, "message");
        if (get(r, "noisy") == "true") status += " (noisy)";
        out += fmt::format(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(get(r, "backend")), cell(get(r, "device")), cell(status), get(r, "check"),
            get(r, "math_mode"), get(r, "threads"), fixed(r, "median_ms", 2), fixed(r, "iqr_ms", 2),
            fixed(r, "images_per_s", 1), fixed(r, "gflops", 1), fixed(r, "peak_memory_mb", 0),
            get(r, "first_loss"), get(r, "last_loss"));
        if (attainable) {
            const double gflops = number(r, "gflops");
            out += gflops > 0 ? fmt::format(" {:.1f}% |", 100 * gflops / options.attainable_gflops)
                              : " |";
        }
        if (!baseline.empty()) {
            auto b = baseline_ms.find(get(r, "config_sha256"));
            const double ms = number(r, "median_ms");
            out += (b != baseline_ms.end() && ms > 0 && get(r, "status") == "ok")
                       ? fmt::format(" {:.2f}x |", ms / b->second)
                       : " |";
        }
        out += "\n";
    }
    return out;
}

}  // namespace harness::results
