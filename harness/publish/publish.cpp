#include "publish/publish.hpp"

#include "output/run_results.hpp"
#include "report/charts.hpp"
#include "report/markdown_cells.hpp"
#include "report/markdown_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::publish {

namespace {

namespace fs = std::filesystem;

std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '\r', ' ');
    return report::cell(s);
}

std::vector<std::string> distinct(const std::vector<output::CsvRow>& rows,
                                  std::string (*of)(const output::CsvRow&)) {
    std::vector<std::string> values;
    for (const auto& r : rows) {
        const std::string v = of(r);
        if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end())
            values.push_back(v);
    }
    return values;
}

std::string joined(const std::vector<std::string>& values, const char* separator) {
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : separator) + v;
    return s;
}

// As the index's other lines: the folder's summary, then the file.
std::string file_cell(const IndexEntry& e) {
    return fmt::format("[{0}/]({0}/summary.md) `{1}`", e.folder, e.file);
}

std::string index_line(const IndexEntry& e) {
    return fmt::format("| {} | {} | {} | {} |", one_line(file_cell(e)), one_line(e.config),
                       one_line(e.machine), one_line(e.what));
}

}  // namespace

const char* const kSummaryMark =
    "<!-- Written by harness publish, which rewrites it whenever a run is published here. -->";

std::string summary_markdown(const std::string& name, const std::vector<output::RunResults>& runs) {
    std::vector<report::ResultsFile> files;
    std::vector<std::string> names;
    for (const auto& run : runs) {
        for (auto& round :
             report::rounds_of(run.table.rows, report::step_samples(run.sidecar_runs())))
            files.push_back(std::move(round));
        names.push_back("`" + fs::path(run.csv_path).filename().string() + "`");
    }
    return fmt::format(
        "{}\n# {}\n\nThe runs published here ({}), as `harness report` shows them; "
        "each file's rows carry their provenance.\n\n{}",
        kSummaryMark, name, joined(names, ", "), report::markdown_report(files, {}));
}

IndexEntry index_entry(const std::string& folder, const std::string& file,
                       const std::vector<output::CsvRow>& rows, const std::string& what,
                       bool unchecked) {
    IndexEntry e;
    e.folder = folder;
    e.file = file;
    const auto config =
        distinct(rows, [](const output::CsvRow& r) { return output::text_of(r, "config_name"); });
    const auto backends =
        distinct(rows, [](const output::CsvRow& r) { return output::text_of(r, "backend"); });
    e.config = joined(config, ", ") + " (backends: " + joined(backends, ", ") + ")";
    e.machine = joined(distinct(rows,
                                [](const output::CsvRow& r) {
                                    std::string m = output::text_of(r, "host") + ": " +
                                                    output::text_of(r, "cpu_model");
                                    if (!output::text_of(r, "gpu_name").empty())
                                        m += ", " + output::text_of(r, "gpu_name");
                                    return m;
                                }),
                       "; ");
    e.what = !what.empty() ? what
                           : "`harness run` of " + joined(config, ", ") +
                                 ": each backend's time per training step, every step in the "
                                 "sidecar";
    if (unchecked) {
        std::vector<std::string> names;
        for (const auto& r : rows)
            if (output::text_of(r, "status") == "ok" && output::text_of(r, "check") != "pass")
                names.push_back("`" + output::row_name(r) + "`");
        e.what += "; **unchecked**: " + joined(names, ", ") +
                  " published without a passing `harness check` (--allow-unchecked)";
    }
    return e;
}

const char* const kIndexHeader = "| file | config | machine | what it shows |";

std::string update_index(const std::string& index, const IndexEntry& entry) {
    const std::string line = index_line(entry);
    if (index.empty())
        return fmt::format(
            "# Published results\n\nEach CSV here is the output of one `harness run` (schema: "
            "docs/results-schema.md), with its JSON sidecar beside it, published by `harness "
            "publish`.\n\n{}\n|---|---|---|---|\n{}\n",
            kIndexHeader, line);
    std::vector<std::string> lines;
    std::istringstream in(index);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    const auto header = std::find(lines.begin(), lines.end(), kIndexHeader);
    if (header == lines.end() || header + 1 == lines.end() || (header + 1)->rfind("|-", 0) != 0)
        throw std::runtime_error(std::string("it has no table of published runs (") + kIndexHeader +
                                 ")");
    const std::string key = "| " + one_line(file_cell(entry)) + " |";
    auto last = header + 1;
    while (last + 1 != lines.end() && !(last + 1)->empty() && (*(last + 1))[0] == '|') {
        ++last;
        if (last->rfind(key, 0) == 0) {
            *last = line;
            return joined(lines, "\n") + "\n";
        }
    }
    lines.insert(last + 1, line);
    return joined(lines, "\n") + "\n";
}

}  // namespace harness::publish
