#include "commands.hpp"

#include "destinations.hpp"
#include "output/atomic_file.hpp"
#include "output/csv_reporter.hpp"
#include "output/run_results.hpp"
#include "output/sidecar_path.hpp"
#include "plugin_host/child_process.hpp"
#include "report/attribution_report.hpp"
#include "report/charts.hpp"
#include "report/explain_report.hpp"
#include "report/markdown_report.hpp"
#include "report/roofline.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace harness {

namespace {

namespace fs = std::filesystem;

constexpr double kGnuplotTimeout_s = 120;

// A gnuplot string in single quotes, where a quote is written twice.
std::string single_quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

// Writes each chart's data and script into `folder` and runs gnuplot there; returns the Markdown
// that shows the SVGs, with paths relative to `markdown_folder`. Throws std::runtime_error.
std::string draw_charts(const std::vector<report::Chart>& charts, const fs::path& folder,
                        const fs::path& markdown_folder) {
    fs::create_directories(folder);
    for (const auto& c : charts) {
        output::write_file_atomically((folder / (c.name + ".dat")).string(), c.data);
        output::write_file_atomically((folder / (c.name + ".gp")).string(), c.script);
    }
    const std::string gnuplot = plugin_host::find_executable("gnuplot");
    if (gnuplot.empty())
        throw std::runtime_error(
            "gnuplot not found on PATH (Debian: apt-get install gnuplot-nox); the charts' data "
            "and scripts are in " +
            folder.string() + ": run gnuplot NAME.gp there");
    const fs::path absolute = fs::absolute(folder);
    std::string markdown;
    for (const auto& c : charts) {
        plugin_host::ChildProcess process(
            {gnuplot, "-e", "cd " + single_quoted(absolute.string()), c.name + ".gp"});
        const plugin_host::ExitInfo exit = process.wait(kGnuplotTimeout_s);
        if (exit.timed_out || exit.signaled || exit.exit_code != 0 ||
            !fs::exists(absolute / (c.name + ".svg")))
            throw std::runtime_error("gnuplot could not draw " +
                                     (folder / (c.name + ".gp")).string());
        const fs::path svg =
            fs::relative(absolute / (c.name + ".svg"), fs::absolute(markdown_folder));
        markdown += "\n![" + c.title + "](" + svg.generic_string() + ")\n";
    }
    return markdown;
}

}  // namespace

int report_command(const ReportArgs& args) {
    std::vector<report::ResultsFile> files;
    std::vector<output::CsvRow> rows;
    std::vector<report::StepSamples> samples;
    std::vector<report::ProfiledRun> profiles;
    std::vector<output::SidecarRuns> sidecars;  // for the roofline's ceilings and step cost
    std::vector<std::string> without_sidecar;   // whose runs the sidecar's charts leave out
    try {
        std::vector<NamedFile> inputs, destinations;
        for (const auto& csv : args.csvs) {
            inputs.push_back({"a results CSV", csv});
            inputs.push_back({"a results CSV's JSON sidecar", output::sidecar_path(csv)});
        }
        if (!args.output.empty()) destinations.push_back({"--output", args.output});
        if (!args.charts.empty()) destinations.push_back({"--charts", args.charts});
        check_distinct(destinations, inputs);
        for (const auto& csv : args.csvs) {
            const output::RunResults results = output::read_run_results(csv);
            const output::CsvTable& table = results.table;
            if (const std::string problem = output::run_header_problem(table.header);
                !problem.empty())
                throw std::runtime_error(csv + ": " + problem);
            rows.insert(rows.end(), table.rows.begin(), table.rows.end());
            if (!results.sidecar_text) without_sidecar.push_back(csv);
            output::SidecarRuns sidecar;
            try {
                sidecar = results.sidecar_runs();
            } catch (const std::exception& e) {
                if (!args.charts.empty()) throw;  // the charts need every sample
                std::fprintf(stderr,
                             "harness report: %s; its rows are compared without intervals\n",
                             e.what());
            }
            const std::vector<report::StepSamples> file_samples = report::step_samples(sidecar);
            for (auto& round : report::rounds_of(table.rows, file_samples))
                files.push_back(std::move(round));
            samples.insert(samples.end(), file_samples.begin(), file_samples.end());
            for (auto& p : report::profiles(sidecar)) profiles.push_back(std::move(p));
            sidecar.runs.clear();
            sidecars.push_back(std::move(sidecar));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness report: %s\n", e.what());
        return kExitUsage;
    }
    std::string markdown = report::markdown_report(files, {args.baseline, args.attainable_gflops});
    if (args.explain) markdown += report::explain_report(files);
    const std::vector<report::RooflineMachine> machines = report::roofline_machines(sidecars);
    for (const std::string& by : args.by) {
        markdown += report::attribution_report(
            profiles, by == "layer" ? report::Attribution::layer : report::Attribution::kind);
        if (by == "kind") markdown += report::roofline_report(profiles, machines);
    }
    if (!args.charts.empty()) {
        std::vector<report::Chart> charts = report::step_time_charts(rows);
        for (auto& c : report::phase_charts(rows)) charts.push_back(std::move(c));
        for (auto& c : report::sample_charts(samples)) charts.push_back(std::move(c));
        for (auto& c : report::attribution_charts(profiles)) charts.push_back(std::move(c));
        for (auto& c : report::roofline_charts(profiles, machines)) charts.push_back(std::move(c));
        const fs::path markdown_folder =
            args.output.empty() ? fs::current_path() : fs::absolute(args.output).parent_path();
        for (const auto& csv : without_sidecar) {
            const std::string note = csv + " has no JSON sidecar (" + output::sidecar_path(csv) +
                                     "): its runs are left out of the every-step and attribution "
                                     "charts and the roofline, which are drawn from the sidecar's "
                                     "steps and traces";
            std::fprintf(stderr, "harness report --charts: %s\n", note.c_str());
            markdown += "\n_" + note + "._\n";
        }
        try {
            markdown += draw_charts(charts, args.charts, markdown_folder);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "harness report --charts: %s\n", e.what());
            return kExitOutputFailed;
        }
    }
    if (args.output.empty()) {
        std::cout << markdown;
        return kExitOk;
    }
    try {
        output::write_file_atomically(args.output, markdown);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness report: %s\n", e.what());
        return kExitOutputFailed;
    }
    return kExitOk;
}

}  // namespace harness
