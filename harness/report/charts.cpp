#include "report/charts.hpp"

#include "report/chart_style.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

namespace harness::report {

namespace {

std::string label_of(const std::string& backend, const std::string& device,
                     const std::string& math) {
    return backend + " (" + device + (math.empty() ? "" : ", " + math) + ")";
}

// Labels that repeat (the same backend in several CSVs, as rounds) get " #2", " #3", ...
void number_repeats(std::vector<std::string>& labels) {
    std::map<std::string, int> total, seen;
    for (const auto& l : labels) ++total[l];
    for (auto& l : labels)
        if (total[l] > 1) l += " #" + std::to_string(++seen[l]);
}

bool wide_range(double low, double high) {
    return low > 0 && high / low > 20;
}

// The ok rows that `keep` accepts, grouped by config, each with its label.
struct LabelledRows {
    std::vector<const output::CsvRow*> rows;
    std::vector<std::string> labels;
};
template <class Keep>
std::map<std::string, LabelledRows> ok_rows_by_config(const std::vector<output::CsvRow>& rows,
                                                      Keep keep) {
    std::map<std::string, LabelledRows> groups;
    for (const auto& r : rows) {
        if (output::text_of(r, "status") != "ok" || !keep(r)) continue;
        LabelledRows& g = groups[output::text_of(r, "config_name")];
        g.rows.push_back(&r);
        g.labels.push_back(label_of(output::row_name(r), output::text_of(r, "device"),
                                    output::text_of(r, "math_mode")));
    }
    for (auto& [config, g] : groups) number_repeats(g.labels);
    return groups;
}

}  // namespace

std::vector<StepSamples> step_samples(const output::SidecarRuns& sidecar) {
    std::vector<StepSamples> out;
    for (const output::BackendRun& run : sidecar.runs)
        if (!run.samples_ms.empty())
            out.push_back({sidecar.config_name, label_of(run.name(), run.device, run.math_word()),
                           run.samples_ms, run.name(), run.round});
    return out;
}

std::vector<Chart> step_time_charts(const std::vector<output::CsvRow>& rows) {
    const auto groups = ok_rows_by_config(
        rows, [](const output::CsvRow& r) { return output::number_of(r, "median_ms") > 0; });
    std::vector<Chart> charts;
    for (const auto& [config, group] : groups) {
        const auto& [members, labels] = group;
        Chart c;
        c.name = file_stem(config) + "-step-time";
        c.title = config + ": time per training step";
        double low = 0, high = 0;
        std::ostringstream data;
        data << "# row\tlabel\tmedian_ms\tp10_ms\tp90_ms\tmin_ms\tmax_ms\n";
        for (size_t i = 0; i < members.size(); ++i) {
            const output::CsvRow& r = *members[i];
            const double median = output::number_of(r, "median_ms");
            low = i == 0 ? median : std::min(low, median);
            high = std::max(high, median);
            data << i << '\t' << quoted(labels[i]);
            for (const char* column : {"median_ms", "p10_ms", "p90_ms", "min_ms", "max_ms"})
                data << '\t' << fmt::format("{:.6g}", output::number_of(r, column));
            data << '\n';
        }
        c.data = data.str();
        const int n = static_cast<int>(members.size());
        c.script = chart_header(c.name, c.title + " (median; bar: p10-p90; +: min and max)", 900,
                                120 + 32 * n) +
                   fmt::format(
                       "set xlabel \"ms per step{0}\"\n"
                       "{1}"
                       "set yrange [-0.6:{2}.6] reverse\n"
                       "set offsets graph 0.05, graph 0.05, 0, 0\n"
                       "set key off\n"
                       "plot \"{3}.dat\" using 3:1:4:5:ytic(2) with xerrorbars pt 7 ps 1.2 "
                       "lc rgb \"#1f77b4\", \\\n"
                       "     \"\" using 6:1 with points pt 1 lc rgb \"#555555\", \\\n"
                       "     \"\" using 7:1 with points pt 1 lc rgb \"#555555\"\n",
                       wide_range(low, high) ? " (logarithmic)" : "",
                       wide_range(low, high) ? "set logscale x\n" : "", n - 1, c.name);
        charts.push_back(std::move(c));
    }
    return charts;
}

std::vector<Chart> phase_charts(const std::vector<output::CsvRow>& rows) {
    const auto groups = ok_rows_by_config(rows, [](const output::CsvRow& r) {
        return output::number_of(r, "forward_ms") + output::number_of(r, "backward_ms") +
                   output::number_of(r, "optimizer_ms") >
               0;
    });
    std::vector<Chart> charts;
    for (const auto& [config, group] : groups) {
        const auto& [members, labels] = group;
        Chart c;
        c.name = file_stem(config) + "-phases";
        c.title = config + ": where a step goes";
        std::ostringstream data;
        data << "# row\tlabel\tforward_%\tbackward_%\toptimizer_%\tforward_ms\tbackward_ms\t"
                "optimizer_ms\n";
        for (size_t i = 0; i < members.size(); ++i) {
            const output::CsvRow& r = *members[i];
            const double f = output::number_of(r, "forward_ms"),
                         b = output::number_of(r, "backward_ms"),
                         o = output::number_of(r, "optimizer_ms"), total = f + b + o;
            data << i << '\t'
                 << quoted(labels[i] +
                           fmt::format(": {:.4g} ms", output::number_of(r, "median_ms")))
                 << fmt::format("\t{:.4g}\t{:.4g}\t{:.4g}\t{:.6g}\t{:.6g}\t{:.6g}\n",
                                100 * f / total, 100 * b / total, 100 * o / total, f, b, o);
        }
        c.data = data.str();
        const int n = static_cast<int>(members.size());
        // Each phase is a box from the end of the phases before it; columns 3-5 are percentages.
        const std::string bar = "($1-0.35):($1+0.35)";
        c.script =
            chart_header(
                c.name,
                c.title + " (shares of the phase medians; the label gives the step's median)", 900,
                140 + 32 * n) +
            fmt::format(
                "set xlabel \"% of the step\"\n"
                "set xrange [0:100]\n"
                "set yrange [-0.6:{0}.6] reverse\n"
                "set style fill solid 0.8 border -1\n"
                "set key outside right top\n"
                "plot \"{1}.dat\" using ($3/2):1:(0):3:{2}:ytic(2) with boxxyerror "
                "lc rgb \"#1f77b4\" title \"forward\", \\\n"
                "     \"\" using ($3+$4/2):1:3:($3+$4):{2} with boxxyerror lc rgb \"#ff7f0e\" "
                "title \"backward\", \\\n"
                "     \"\" using ($3+$4+$5/2):1:($3+$4):($3+$4+$5):{2} with boxxyerror "
                "lc rgb \"#2ca02c\" title \"optimizer\"\n",
                n - 1, c.name, bar);
        charts.push_back(std::move(c));
    }
    return charts;
}

std::vector<Chart> sample_charts(const std::vector<StepSamples>& samples) {
    std::map<std::string, std::vector<const StepSamples*>> by_config;
    for (const auto& s : samples) by_config[s.config].push_back(&s);
    std::vector<Chart> charts;
    for (const auto& [config, runs] : by_config) {
        std::vector<std::string> labels;
        for (const StepSamples* s : runs) labels.push_back(s->label);
        number_repeats(labels);
        Chart c;
        c.name = file_stem(config) + "-samples";
        c.title = config + ": every timed step";
        double low = 0, high = 0;
        bool first = true;
        std::ostringstream data, plot;
        for (size_t k = 0; k < runs.size(); ++k) {
            data << "# " << labels[k] << "\n# step\tms\n";
            for (size_t i = 0; i < runs[k]->ms.size(); ++i) {
                const double ms = runs[k]->ms[i];
                data << i + 1 << '\t' << fmt::format("{:.6g}", ms) << '\n';
                if (!(ms > 0) || !std::isfinite(ms)) continue;
                low = first ? ms : std::min(low, ms);
                high = std::max(high, ms);
                first = false;
            }
            data << "\n\n";  // one gnuplot data block per run
            plot << (k ? ", \\\n     \"\"" : "plot \"" + c.name + ".dat\"") << " index " << k
                 << " using 1:2 with linespoints pt 7 ps 0.5 title " << quoted(labels[k]);
        }
        c.data = data.str();
        c.script = chart_header(c.name, c.title, 900, 500) +
                   fmt::format("set xlabel \"timed step\"\nset ylabel \"ms{}\"\n{}",
                               wide_range(low, high) ? " (logarithmic)" : "",
                               wide_range(low, high) ? "set logscale y\n" : "") +
                   "set key outside right top\n" + plot.str() + "\n";
        charts.push_back(std::move(c));
    }
    return charts;
}

std::vector<Chart> attribution_charts(const std::vector<ProfiledRun>& runs) {
    std::map<std::string, std::vector<ProfiledRun>> by_config;
    for (const ProfiledRun& r : merge_rounds(runs)) by_config[r.config].push_back(r);
    std::vector<Chart> charts;
    for (const auto& [config, group] : by_config) {
        std::vector<std::string> kinds;
        for (const std::string& kind : output::kOperationKinds)
            if (std::any_of(group.begin(), group.end(), [&](const ProfiledRun& r) {
                    return r.profile.kinds_ms.count(kind) != 0;
                }))
                kinds.push_back(kind);
        Chart c;
        c.name = file_stem(config) + "-attribution";
        c.title = config + ": where a traced step goes, by operation kind";
        std::ostringstream data;
        data << "# ms per profiled (traced) step by kind; a negative unaccounted rest (operations "
                "on several tracks at once) is drawn as 0; last, the median of the timed steps\n"
                "# backend";
        for (const std::string& kind : kinds) data << '\t' << quoted(kind);
        data << "\t\"unaccounted\"\t\"timed median\"\n";
        for (const ProfiledRun& r : group) {
            data << quoted(r.backend);
            for (const std::string& kind : kinds) {
                auto it = r.profile.kinds_ms.find(kind);
                data << '\t'
                     << fmt::format("{:.6g}", it == r.profile.kinds_ms.end() ? 0.0 : it->second);
            }
            data << '\t' << fmt::format("{:.6g}", std::max(0.0, r.profile.unaccounted_ms())) << '\t'
                 << (r.timed_median_ms > 0 ? fmt::format("{:.6g}", r.timed_median_ms) : "NaN")
                 << '\n';
        }
        c.data = data.str();
        // One bar segment per kind, each kind its own colour in every chart; then the timed
        // median as a dot on each bar, since tracing lengthens a step.
        std::string plot;
        kinds.push_back("unaccounted");
        for (size_t k = 0; k < kinds.size(); ++k) {
            const std::string& kind = kinds[k];
            plot += fmt::format("{} using {}{} title {} lc rgb \"{}\", \\\n",
                                k == 0 ? "plot " + quoted(c.name + ".dat") : "     \"\"", k + 2,
                                k == 0 ? ":xtic(1)" : "", quoted(kind), kind_colour(kind));
        }
        plot += fmt::format(
            "     \"\" using 0:{} with points pt 7 ps 1.2 lc rgb \"black\" "
            "title \"timed median\"\n",
            kinds.size() + 2);
        const int key_rows = static_cast<int>(kinds.size() + 1 + 2) / 3;
        c.script = chart_header(c.name, c.title, 900, 460 + 22 * key_rows) +
                   "set ylabel \"ms per traced step (dot: the timed steps' median)\"\n"
                   "set style data histograms\n"
                   "set style histogram rowstacked\n"
                   "set style fill solid 0.8 border -1\n"
                   "set boxwidth 0.6\n"
                   "set key below horizontal maxcols 3\n"
                   "set xtics rotate by -20\n" +
                   plot;
        charts.push_back(std::move(c));
    }
    return charts;
}

}  // namespace harness::report
