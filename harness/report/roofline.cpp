#include "report/roofline.hpp"

#include "report/chart_style.hpp"
#include "report/markdown_cells.hpp"
#include "roofline/step_bound.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace harness::report {

namespace {

// One per backend, filled shapes first.
constexpr int kPointTypes[] = {7, 5, 9, 11, 13, 15, 6, 4, 8, 10, 12, 14};
const std::string kStep = "the step (timed)";

struct Point {
    std::string kind;
    double intensity = 0, gflops = 0;
    std::string colour;
};

// A layer kind's traced time per step: its operation kinds' in the profile.
double kind_ms(const output::Profile& profile, const output::KindCost& kind) {
    double ms = 0;
    for (const std::string& op : kind.operation_kinds) {
        const auto it = profile.kinds_ms.find(op);
        if (it != profile.kinds_ms.end()) ms += it->second;
    }
    return ms;
}

// A layer kind's bound in ms: its FLOPs and bytes taken together (roofline::bound_of).
double kind_bound_ms(const output::KindCost& kind, const output::Ceilings& c) {
    roofline::Cost cost;
    cost.forward_flops = kind.flops;
    cost.forward_bytes = kind.bytes;
    return 1e3 * roofline::bound_of(cost, c).seconds;
}

std::vector<Point> points_of(const ProfiledRun& run, const std::vector<output::KindCost>& costs) {
    std::vector<Point> points;
    int64_t flops = 0, bytes = 0;
    for (const output::KindCost& k : costs) {
        flops += k.flops;
        bytes += k.bytes;
        const double ms = kind_ms(run.profile, k);
        if (k.flops <= 0 || k.bytes <= 0 || !(ms > 0) || k.operation_kinds.empty()) continue;
        points.push_back({k.kind, double(k.flops) / double(k.bytes), double(k.flops) / (ms * 1e6),
                          kind_colour(k.operation_kinds.front())});
    }
    if (flops > 0 && bytes > 0 && run.timed_median_ms > 0)
        points.push_back({kStep, double(flops) / double(bytes),
                          double(flops) / (run.timed_median_ms * 1e6), "#000000"});
    return points;
}

struct Backend {
    std::string name;
    std::vector<Point> points;
};

std::string data_of(const std::vector<Backend>& backends) {
    std::string data =
        "# Per backend: each layer kind's FLOPs over the bytes it must move at the least "
        "(docs/roofline.md) and over its traced time per step; the whole step's over its timed "
        "median. A point above the roof is a kind whose work the profile counts in part under "
        "another kind (a fusion, XLA's clusters); above twice the FMA rate it is off the chart\n";
    for (const Backend& b : backends) {
        data += "# " + b.name + "\n# kind\tFLOPs per byte\tGFLOP/s\tcolour\n";
        for (const Point& p : b.points)
            data += fmt::format("{}\t{:.6g}\t{:.6g}\t{}\n", quoted(p.kind), p.intensity, p.gflops,
                                std::stoi(p.colour.substr(1), nullptr, 16));
        data += "\n\n";  // one gnuplot data block per backend
    }
    return data;
}

// The roof, each backend's block of points, and a key: one shape per backend, one colour per
// layer kind that has a point, in the step cost's order.
std::string plot_of(const std::string& name, const std::vector<Backend>& backends,
                    const std::vector<output::KindCost>& costs) {
    std::string plot = "plot ceiling(x) with lines lw 2 lc rgb \"#333333\" title \"roof\"";
    for (size_t b = 0; b < backends.size(); ++b)
        plot += fmt::format(
            ", \\\n     {} index {} using 2:3:4 with points pt {} ps 1.4 lc rgb variable notitle",
            quoted(name + ".dat"), b, kPointTypes[b % std::size(kPointTypes)]);
    for (size_t b = 0; b < backends.size(); ++b)
        plot +=
            fmt::format(", \\\n     keyentry with points pt {} ps 1.4 lc rgb \"#555555\" title {}",
                        kPointTypes[b % std::size(kPointTypes)], quoted(backends[b].name));
    const auto has_point = [&](const std::string& kind) {
        return std::any_of(backends.begin(), backends.end(), [&](const Backend& b) {
            return std::any_of(b.points.begin(), b.points.end(),
                               [&](const Point& p) { return p.kind == kind; });
        });
    };
    for (const output::KindCost& k : costs)
        if (has_point(k.kind))
            plot +=
                fmt::format(", \\\n     keyentry with boxes fill solid 0.8 lc rgb \"{}\" title {}",
                            kind_colour(k.operation_kinds.front()), quoted(k.kind));
    return plot + fmt::format(
                      ", \\\n     keyentry with boxes fill solid 0.8 lc rgb \"#000000\" title {}\n",
                      quoted(kStep));
}

void keep_best(output::Measured& into, const output::Measured& from) {
    if (from.best > into.best) into = from;
}

}  // namespace

std::vector<RooflineMachine> roofline_machines(const std::vector<output::SidecarRuns>& sidecars) {
    std::vector<RooflineMachine> machines;
    for (const output::SidecarRuns& s : sidecars) {
        if (s.step_cost.empty()) continue;
        auto m = std::find_if(machines.begin(), machines.end(),
                              [&](const RooflineMachine& r) { return r.config == s.config_name; });
        if (m == machines.end())
            m = machines.insert(machines.end(), {s.config_name, {}, s.step_cost});
        for (const output::Ceilings& c : s.ceilings) {
            auto it =
                std::find_if(m->ceilings.begin(), m->ceilings.end(),
                             [&](const output::Ceilings& o) { return o.threads == c.threads; });
            if (it == m->ceilings.end()) {
                m->ceilings.push_back(c);
                continue;
            }
            keep_best(it->flops, c.flops);
            keep_best(it->bytes, c.bytes);
        }
    }
    return machines;
}

std::vector<Chart> roofline_charts(const std::vector<ProfiledRun>& runs,
                                   const std::vector<RooflineMachine>& machines) {
    const std::vector<ProfiledRun> merged = merge_rounds(runs);
    std::vector<Chart> charts;
    for (const RooflineMachine& m : machines)
        for (const output::Ceilings& c : m.ceilings) {
            std::vector<Backend> backends;
            for (const ProfiledRun& r : merged)
                if (r.config == m.config && r.threads == c.threads)
                    if (auto points = points_of(r, m.step_cost); !points.empty())
                        backends.push_back({r.backend, std::move(points)});
            if (backends.empty()) continue;
            const double peak = c.flops.best / 1e9, bandwidth = c.bytes.best / 1e9;
            Chart chart;
            chart.name = file_stem(m.config) + "-roofline" +
                         (m.ceilings.size() > 1 ? fmt::format("-{}t", c.threads) : "");
            chart.title = fmt::format(
                "{}: each layer kind against the roofline ({:.1f} GFLOP/s FMA, {:.1f} GB/s triad, "
                "{} thread{})",
                m.config, peak, bandwidth, c.threads, c.threads == 1 ? "" : "s");
            chart.data = data_of(backends);
            double x_low = peak / bandwidth, x_high = x_low, y_low = peak;
            for (const Backend& b : backends)
                for (const Point& p : b.points) {
                    x_low = std::min(x_low, p.intensity);
                    x_high = std::max(x_high, p.intensity);
                    y_low = std::min(y_low, p.gflops);
                }
            const std::string plot = plot_of(chart.name, backends, m.step_cost);
            size_t key_entries = 1;  // the roof, then every keyentry
            for (size_t at = plot.find("keyentry"); at != std::string::npos;
                 at = plot.find("keyentry", at + 1))
                ++key_entries;
            chart.script =
                chart_header(chart.name, chart.title, 900,
                             540 + 22 * static_cast<int>((key_entries + 2) / 3)) +
                fmt::format(
                    "set logscale xy\n"
                    "set xlabel \"arithmetic intensity (FLOPs per byte moved at the least)\"\n"
                    "set ylabel \"GFLOP/s achieved\"\n"
                    "set xrange [{:.6g}:{:.6g}]\n"
                    "set yrange [{:.6g}:{:.6g}]\n"
                    "set samples 400\n"
                    "set key below horizontal maxcols 3\n"
                    "F = {:.6g}  # GFLOP/s, float32 FMA, best of {}\n"
                    "B = {:.6g}  # GB/s, triad, best of {}\n"
                    "ceiling(x) = B * x < F ? B * x : F\n",
                    x_low / 2, x_high * 2, y_low / 2, peak * 2, peak, c.flops.repetitions,
                    bandwidth, c.bytes.repetitions) +
                plot;
            charts.push_back(std::move(chart));
        }
    return charts;
}

std::string roofline_report(const std::vector<ProfiledRun>& runs,
                            const std::vector<RooflineMachine>& machines) {
    const std::vector<ProfiledRun> merged = merge_rounds(runs);
    std::string out;
    for (const RooflineMachine& m : machines)
        for (const output::Ceilings& c : m.ceilings) {
            std::vector<const ProfiledRun*> group;
            for (const ProfiledRun& r : merged)
                if (r.config == m.config && r.threads == c.threads) group.push_back(&r);
            if (group.empty()) continue;
            out += fmt::format(
                "\n## {}: each layer kind against its roofline bound, {} thread{}\n\n"
                "Milliseconds per profiled step, the mean of the profiled steps (rounds merged), "
                "and "
                "in brackets how far above the kind's bound: max(its FLOPs / {:.1f} GFLOP/s, its "
                "bytes / {:.1f} GB/s), the kind taken as a whole, a little under the sum of its "
                "layers' bounds that the run's *of bound* sums where its layers differ in which "
                "ceiling binds (docs/roofline.md). A kind that a backend fuses into another is "
                "counted under that one; *outside the kinds* is the "
                "profiled step's rest (reorders, copies, the framework's own time).\n\n",
                m.config, c.threads, c.threads == 1 ? "" : "s", c.flops.best / 1e9,
                c.bytes.best / 1e9);
            std::string head = "| layer kind | bound |", rule = "|---|--:|";
            for (const ProfiledRun* r : group) {
                head += " " + cell(r->backend) + " |";
                rule += "--:|";
            }
            out += head + "\n" + rule + "\n";
            const auto against = [](double ms, double bound) {
                return fmt::format(" {:.1f} ({:+.1f}) |", ms, ms - bound);
            };
            double step_bound = 0;
            for (const output::KindCost& k : m.step_cost) {
                const double bound = kind_bound_ms(k, c);
                step_bound += bound;
                std::string row = fmt::format("| {} | {:.1f} |", k.kind, bound);
                for (const ProfiledRun* r : group) row += against(kind_ms(r->profile, k), bound);
                out += row + "\n";
            }
            std::string rest = "| outside the kinds | 0 |",
                        step = fmt::format("| **step (profiled)** | {:.1f} |", step_bound);
            std::string timed = fmt::format("| step (timed, median) | {:.1f} |", step_bound);
            for (const ProfiledRun* r : group) {
                double kinds = 0;
                for (const output::KindCost& k : m.step_cost) kinds += kind_ms(r->profile, k);
                rest += against(r->profile.step_ms - kinds, 0);
                step += against(r->profile.step_ms, step_bound);
                timed += against(r->timed_median_ms, step_bound);
            }
            out += rest + "\n" + step + "\n" + timed + "\n";
        }
    return out;
}

}  // namespace harness::report
