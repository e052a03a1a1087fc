#include "publish/run_validation.hpp"

#include "output/csv_line.hpp"
#include "output/csv_reader.hpp"
#include "output/csv_reporter.hpp"
#include "output/record.hpp"
#include "output/run_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

namespace harness::publish {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

enum class Kind { integer, number, boolean };

// The columns whose text must parse, by what the schema promises.
const std::map<std::string, Kind>& column_kinds() {
    static const std::map<std::string, Kind> kinds{
        {"schema_version", Kind::integer},
        {"threads", Kind::integer},
        {"seed", Kind::integer},
        {"batch", Kind::integer},
        {"warmup", Kind::integer},
        {"iterations", Kind::integer},
        {"flops_per_step", Kind::integer},
        {"ranks", Kind::integer},
        {"allreduce_bytes", Kind::integer},
        {"nonfinite_loss", Kind::boolean},
        {"noisy", Kind::boolean},
        {"oversubscribed", Kind::boolean},
        {"setup_ms", Kind::number},
        {"median_ms", Kind::number},
        {"mean_ms", Kind::number},
        {"stddev_ms", Kind::number},
        {"min_ms", Kind::number},
        {"max_ms", Kind::number},
        {"p10_ms", Kind::number},
        {"p90_ms", Kind::number},
        {"iqr_ms", Kind::number},
        {"cv", Kind::number},
        {"images_per_s", Kind::number},
        {"gflops", Kind::number},
        {"forward_ms", Kind::number},
        {"backward_ms", Kind::number},
        {"optimizer_ms", Kind::number},
        {"peak_memory_mb", Kind::number},
        {"first_loss", Kind::number},
        {"last_loss", Kind::number},
        {"communication_share", Kind::number},
        {"allreduce_algbw_gbps", Kind::number},
        {"allreduce_busbw_gbps", Kind::number},
        {"scaling_efficiency", Kind::number},
        {"bound_ms", Kind::number},
        {"bound_share", Kind::number},
    };
    return kinds;
}

// The columns that hold one of a few words ("" where the schema lets them be empty).
const std::map<std::string, std::vector<std::string>>& column_words() {
    static const std::map<std::string, std::vector<std::string>> words{
        {"status",
         {"ok", "skipped", "failed", "crashed", "timeout", "oom", "mismatch", "interrupted"}},
        {"check", {"", "pass", "mismatch", "stale"}},
        {"placement", {"device", "host"}},
        {"loss_agreement", {"", "ok", "disagrees"}},
        {"communicator", {"", "mpi", "nccl"}},
    };
    return words;
}

// Never empty in a published row: the schema's "never" columns, and the provenance it lets be
// empty when unknown, which a published row must know.
const std::vector<std::string> kAlways{
    "schema_version", "utc_time", "harness_version", "git_commit",     "config_name",
    "config_sha256",  "host",     "cpu_model",       "backend",        "placement",
    "seed",           "batch",    "status",          "nonfinite_loss", "warmup",
    "iterations"};

// Never empty in a row that was timed (`ok`, `mismatch`): it ran a loaded plugin's steps.
const std::vector<std::string> kTimed{
    "plugin",    "plugin_version", "device",       "setup_ms", "median_ms",  "mean_ms",
    "stddev_ms", "min_ms",         "max_ms",       "p10_ms",   "p90_ms",     "iqr_ms",
    "cv",        "noisy",          "images_per_s", "gflops",   "first_loss", "last_loss"};

bool is_integer(const std::string& s) {
    const size_t digits = !s.empty() && s[0] == '-' ? 1 : 0;
    return s.size() > digits && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits),
                                            s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_number(const std::string& s) {
    double value = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    return !s.empty() && error == std::errc() && end == s.data() + s.size();
}

bool parses_as(const std::string& text, Kind kind) {
    switch (kind) {
        case Kind::integer:
            return is_integer(text);
        case Kind::number:
            return is_number(text);
        case Kind::boolean:
            break;
    }
    return text == "true" || text == "false";
}

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::integer:
            return "a whole number";
        case Kind::number:
            return "a number";
        case Kind::boolean:
            break;
    }
    return "true or false";
}

std::string word_list(const std::vector<std::string>& words) {
    std::string s;
    for (const auto& w : words)
        if (!w.empty()) s += (s.empty() ? "" : ", ") + w;
    return s;
}

bool is_timed(const output::CsvRow& row) {
    const std::string status = output::text_of(row, "status");
    return status == "ok" || status == "mismatch";
}

// Collects problems, each saying where it is.
class Problems {
public:
    explicit Problems(std::string csv) : csv_(std::move(csv)) {}

    void file(const std::string& message) { out_.push_back({csv_ + ": " + message}); }
    void at(size_t line, const output::CsvRow& row, const std::string& column,
            const std::string& message, bool unchecked = false) {
        const std::string backend = output::row_name(row);
        out_.push_back(
            {fmt::format("{} line {}{}, column {}: {}", csv_, line,
                         backend.empty() ? "" : " (backend " + backend + ")", column, message),
             unchecked});
    }
    std::vector<PublishProblem> take() { return std::move(out_); }

private:
    std::string csv_;
    std::vector<PublishProblem> out_;
};

// The header is this schema version's columns, in order; "" when it is.
std::string header_problem(const std::vector<std::string>& header) {
    const std::vector<std::string> expected = output::csv_columns();
    const std::string schema = fmt::format(
        "the header must be schema version {}'s {} columns, in order "
        "(docs/results-schema.md)",
        output::kSchemaVersion, expected.size());
    for (const auto& c : expected)
        if (std::find(header.begin(), header.end(), c) == header.end())
            return fmt::format("column {} is missing: {}", c, schema);
    for (const auto& c : header)
        if (std::find(expected.begin(), expected.end(), c) == expected.end())
            return fmt::format("unexpected column '{}': {}", c, schema);
    for (size_t i = 0; i < header.size(); ++i)
        if (i >= expected.size() || header[i] != expected[i])
            return fmt::format("column {} is {}, where the schema has {}: {}", i + 1, header[i],
                               i < expected.size() ? expected[i] : "none", schema);
    return "";
}

void check_row(Problems& problems, size_t line, const output::CsvRow& row) {
    const std::string version = output::text_of(row, "schema_version");
    if (version != std::to_string(output::kSchemaVersion))
        problems.at(line, row, "schema_version",
                    fmt::format("'{}', not this harness's schema version {}", version,
                                output::kSchemaVersion));
    for (const auto& column : kAlways)
        if (output::text_of(row, column).empty())
            problems.at(line, row, column, "empty, but a published row always has it");
    if (is_timed(row))
        for (const auto& column : kTimed)
            if (output::text_of(row, column).empty())
                problems.at(
                    line, row, column,
                    "empty in a " + output::text_of(row, "status") + " row, which was timed");
    for (const auto& [column, kind] : column_kinds()) {
        const std::string text = output::text_of(row, column);
        if (!text.empty() && !parses_as(text, kind))
            problems.at(line, row, column, fmt::format("'{}' is not {}", text, kind_name(kind)));
    }
    for (const auto& [column, words] : column_words()) {
        const std::string text = output::text_of(row, column);
        if (!text.empty() && std::find(words.begin(), words.end(), text) == words.end())
            problems.at(line, row, column,
                        fmt::format("'{}' is none of {}", text, word_list(words)));
    }
    const std::string check = output::text_of(row, "check");
    if (output::text_of(row, "status") == "ok" && check != "pass")
        problems.at(line, row, "check",
                    (check.empty() ? std::string("empty (never checked)") : "'" + check + "'") +
                        ": run harness check on this build, or pass --allow-unchecked",
                    true);
}

// The sidecar agrees with the rows: the same backends in the same order, every cell as harness run
// prints it from the sidecar's provenance and run, and each printed median its samples' median.
void check_sidecar(Problems& problems, const output::RunResults& results) {
    const std::string& sidecar = results.sidecar_path;
    const output::CsvTable& table = results.table;
    if (!results.sidecar_text) {
        problems.file("its JSON sidecar " + sidecar +
                      " is missing: harness run writes it beside the CSV, with every sample, and "
                      "publish needs it");
        return;
    }
    json j;
    try {
        j = json::parse(*results.sidecar_text);
    } catch (const json::exception& e) {
        problems.file("its JSON sidecar " + sidecar + " is not JSON: " + e.what());
        return;
    }
    const std::string where = "the sidecar " + sidecar;
    try {
        if (j.at("schema_version") != output::kSchemaVersion)
            problems.file(fmt::format("{}: schema_version {}, not this harness's {}", where,
                                      j.at("schema_version").dump(), output::kSchemaVersion));
        const output::Provenance their_provenance =
            output::provenance_from_json(j.at("provenance"));
        const json& runs = j.at("runs");
        if (runs.size() != table.rows.size())
            problems.file(fmt::format("{} has {} runs, the CSV {} rows", where, runs.size(),
                                      table.rows.size()));
        for (size_t i = 0; i < table.rows.size(); ++i) {
            const output::CsvRow& row = table.rows[i];
            const size_t line = table.lines[i];
            if (i >= runs.size()) continue;
            output::BackendRun run;
            try {
                run = output::backend_run_from_json(runs[i]);
            } catch (const json::exception& e) {
                problems.file(fmt::format("{}, runs[{}]: {}", where, i, e.what()));
                continue;
            }
            if (run.backend != output::text_of(row, "backend")) {
                problems.at(
                    line, row, "backend",
                    fmt::format("but run {} of {} is backend '{}'", i + 1, where, run.backend));
                continue;
            }
            // Every cell as the sidecar's run would print it: a cell edited alone (a check
            // verdict, a figure) or cut short disagrees.
            const std::vector<std::string> cells = output::csv_row(their_provenance, run);
            const std::vector<std::string> columns = output::csv_columns();
            for (size_t c = 0; c < columns.size(); ++c)
                if (output::text_of(row, columns[c]) != cells[c])
                    problems.at(line, row, columns[c],
                                fmt::format("'{}', but {} says '{}'",
                                            output::text_of(row, columns[c]), where, cells[c]));
            const std::string median = output::text_of(row, "median_ms");
            if (median.empty()) continue;
            if (run.samples_ms.empty()) {
                problems.at(line, row, "median_ms",
                            fmt::format("{}, but {} has no samples_ms for it", median, where));
                continue;
            }
            const std::string expected =
                output::format_ms(output::compute_stats(run.samples_ms, 0, 0).median_ms);
            if (median != expected)
                problems.at(line, row, "median_ms",
                            fmt::format("{}, but the median of the {} samples_ms in {} is {}",
                                        median, run.samples_ms.size(), where, expected));
        }
    } catch (const json::exception& e) {
        problems.file(where + " is not a results sidecar: " + e.what());
    }
}

}  // namespace

std::vector<PublishProblem> validate_run(const output::RunResults& run) {
    const std::string& csv_path = run.csv_path;
    const output::CsvTable& table = run.table;
    Problems problems(csv_path);
    if (const std::string header = header_problem(table.header); !header.empty()) {
        problems.file("line 1: " + header);
        return problems.take();
    }
    if (run.csv_text.empty() || run.csv_text.back() != '\n')
        problems.file(
            "it does not end with a line break: cut short (harness run ends every row "
            "with one)");
    if (table.rows.empty()) problems.file("no rows: there is no run to publish");
    std::map<std::pair<std::string, std::string>, size_t> first_line;  // of a backend's round
    for (size_t i = 0; i < table.rows.size(); ++i) {
        const output::CsvRow& row = table.rows[i];
        check_row(problems, table.lines[i], row);
        const auto [at, fresh] = first_line.try_emplace(
            {output::row_name(row), output::text_of(row, "round")}, table.lines[i]);
        if (!fresh)
            problems.at(table.lines[i], row, "backend",
                        fmt::format("a second row of it in round {} (the first is line {}): a "
                                    "run has each backend once a round",
                                    at->first.second, at->second));
    }
    check_sidecar(problems, run);
    return problems.take();
}

std::string canonical_csv(const output::CsvTable& table) {
    std::string text;
    output::append_csv_line(text, table.header);
    for (const auto& row : table.rows) {
        std::vector<std::string> fields;
        for (const auto& column : table.header) fields.push_back(row.at(column));
        output::append_csv_line(text, fields);
    }
    return text;
}

std::vector<std::string> published_elsewhere(const output::CsvTable& table, const fs::path& root,
                                             const fs::path& destination) {
    // Every cell: two runs' rows differ at least in their times, a copy's are the same.
    const auto identity = [](const output::CsvRow& row) {
        std::string cells;
        for (const auto& [column, text] : row) cells += column + "=" + text + "\n";
        return cells;
    };
    std::vector<std::string> run;
    for (const auto& row : table.rows) run.push_back(identity(row));
    std::vector<std::string> found;
    std::error_code ec;
    for (fs::directory_iterator folders(root, ec), end; !ec && folders != end;
         folders.increment(ec)) {
        if (!folders->is_directory()) continue;
        for (const auto& file : fs::directory_iterator(folders->path())) {
            const fs::path path = file.path();
            std::error_code absent;
            if (path.extension() != ".csv" || fs::equivalent(path, destination, absent) ||
                !output::is_run_csv(path.string()))
                continue;
            try {
                for (const auto& row : output::read_csv(path.string()))
                    if (std::find(run.begin(), run.end(), identity(row)) != run.end()) {
                        found.push_back(path.string());
                        break;
                    }
            } catch (const std::exception&) {
                // A file publish cannot read holds no run of ours to compare.
            }
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

}  // namespace harness::publish
