#include "results/markdown_report.hpp"

#include <fmt/format.h>

#include <set>

namespace harness::results {

namespace {

std::string fixed(const CsvRow& row, const std::string& column, int digits) {
    return text_of(row, column).empty() ? ""
                                        : fmt::format("{:.{}f}", number_of(row, column), digits);
}

// The distinct values of a provenance column, joined.
std::string distinct(const std::vector<CsvRow>& rows, const std::string& column) {
    std::set<std::string> values;
    for (const auto& r : rows)
        if (!text_of(r, column).empty()) values.insert(text_of(r, column));
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
        if (!baseline.empty() && text_of(r, "backend") == baseline && text_of(r, "status") == "ok")
            baseline_ms[text_of(r, "config_sha256")] = number_of(r, "median_ms");

    out +=
        "| backend | device | status | check | math | threads | median ms | IQR ms | "
        "images/s | GFLOP/s | peak MiB | first loss | last loss |";
    if (attainable) out += fmt::format(" of {:.1f} GFLOP/s |", options.attainable_gflops);
    out += baseline.empty() ? "\n" : fmt::format(" vs {} |\n", cell(baseline));
    out += "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|";
    if (attainable) out += "---:|";
    out += baseline.empty() ? "\n" : "---:|\n";
    for (const auto& r : rows) {
        std::string status = text_of(r, "status");
        if (!text_of(r, "message").empty()) status += ": " + text_of(r, "message");
        if (text_of(r, "noisy") == "true") status += " (noisy)";
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                           cell(text_of(r, "backend")), cell(text_of(r, "device")), cell(status),
                           text_of(r, "check"), text_of(r, "math_mode"), text_of(r, "threads"),
                           fixed(r, "median_ms", 2), fixed(r, "iqr_ms", 2),
                           fixed(r, "images_per_s", 1), fixed(r, "gflops", 1),
                           fixed(r, "peak_memory_mb", 0), text_of(r, "first_loss"),
                           text_of(r, "last_loss"));
        if (attainable) {
            const double gflops = number_of(r, "gflops");
            out += gflops > 0 ? fmt::format(" {:.1f}% |", 100 * gflops / options.attainable_gflops)
                              : " |";
        }
        if (!baseline.empty()) {
            auto b = baseline_ms.find(text_of(r, "config_sha256"));
            const double ms = number_of(r, "median_ms");
            out += (b != baseline_ms.end() && ms > 0 && text_of(r, "status") == "ok")
                       ? fmt::format(" {:.2f}x |", ms / b->second)
                       : " |";
        }
        out += "\n";
    }
    return out;
}

}  // namespace harness::results
