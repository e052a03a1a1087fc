#include "commands.hpp"

#include "results/atomic_file.hpp"
#include "results/csv_writer.hpp"
#include "results/markdown_report.hpp"

#include <cstdio>
#include <iostream>

namespace harness {

int report_command(const ReportArgs& args) {
    std::vector<results::CsvRow> rows;
    try {
        for (const auto& csv : args.csvs) {
            auto file_rows = results::read_csv(csv);
            rows.insert(rows.end(), file_rows.begin(), file_rows.end());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness report: %s\n", e.what());
        return kExitUsage;
    }
    const std::string markdown =
        results::markdown_report(rows, {args.baseline, args.attainable_gflops});
    if (args.output.empty()) {
        std::cout << markdown;
        return kExitOk;
    }
    try {
        results::write_file_atomically(args.output, markdown);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness report: %s\n", e.what());
        return kExitBackendFailed;
    }
    return kExitOk;
}

}  // namespace harness
