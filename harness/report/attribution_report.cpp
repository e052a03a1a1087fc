#include "report/attribution_report.hpp"

#include "report/markdown_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace harness::report {

namespace {

constexpr size_t kTopLayers = 10;

// The runs of each config, in the order first seen.
std::vector<std::pair<std::string, std::vector<const ProfiledRun*>>> by_config(
    const std::vector<ProfiledRun>& runs) {
    std::vector<std::pair<std::string, std::vector<const ProfiledRun*>>> groups;
    for (const ProfiledRun& r : runs) {
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const auto& g) { return g.first == r.config; });
        if (it == groups.end()) it = groups.insert(groups.end(), {r.config, {}});
        it->second.push_back(&r);
    }
    return groups;
}

double value_of(const std::map<std::string, double>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? 0.0 : it->second;
}

// A table row: the label, one cell per run (`digits` after the point), and with two runs their
// difference.
std::string table_row(const std::string& label, const std::vector<double>& values, int digits = 2) {
    std::string line = "| " + cell(label) + " |";
    for (double v : values) line += fmt::format(" {:.{}f} |", v, digits);
    if (values.size() == 2) line += fmt::format(" {:+.{}f} |", values[1] - values[0], digits);
    return line + "\n";
}

// The phases whose operations are counted together: the forward pass, the backward pass, the
// update, and the rest (loss, copies, transfers, the framework's own).
std::string part_of_phase(const std::string& phase) {
    if (phase == "forward" || phase == "update") return phase;
    if (phase.rfind("backward", 0) == 0) return "backward";
    return "other";
}

std::string table_header(const std::string& first, const std::vector<const ProfiledRun*>& runs) {
    std::string head = "| " + first + " |", rule = "|---|";
    for (const ProfiledRun* r : runs) {
        head += " " + cell(r->backend) + " |";
        rule += "--:|";
    }
    if (runs.size() == 2) {
        head += " " + cell(runs[1]->backend + " − " + runs[0]->backend) + " |";
        rule += "--:|";
    }
    return head + "\n" + rule + "\n";
}

std::string kind_table(const std::vector<const ProfiledRun*>& runs) {
    std::string out = table_header("operation kind", runs);
    const auto column = [&](auto value) {
        std::vector<double> values;
        for (const ProfiledRun* r : runs) values.push_back(value(r->profile));
        return values;
    };
    for (const std::string& kind : output::kOperationKinds) {
        const auto values =
            column([&](const output::Profile& p) { return value_of(p.kinds_ms, kind); });
        if (std::any_of(values.begin(), values.end(), [](double v) { return v != 0; }))
            out += table_row(kind, values);
    }
    out += table_row("**sum of the operations**",
                     column([](const output::Profile& p) { return p.operations_ms(); }));
    out += table_row("unaccounted (between operations)",
                     column([](const output::Profile& p) { return p.unaccounted_ms(); }));
    out += table_row("**step (profiled)**",
                     column([](const output::Profile& p) { return p.step_ms; }));
    std::string share = "| operations' share of the step |";
    for (const ProfiledRun* r : runs)
        share += fmt::format(
            " {:.1f}% |",
            r->profile.step_ms > 0 ? 100 * r->profile.operations_ms() / r->profile.step_ms : 0.0);
    out += share + (runs.size() == 2 ? " |\n" : "\n");
    std::vector<double> timed;
    for (const ProfiledRun* r : runs) timed.push_back(r->timed_median_ms);
    out += table_row("step (timed, median, unprofiled)", timed);
    // How fine-grained each step is: the operations each part of it ran.
    const char* const parts[] = {"forward", "backward", "update", "other"};
    for (const char* part : parts) {
        const auto counts = column([&](const output::Profile& p) {
            double n = 0;
            for (const auto& [phase, count] : p.phase_operations)
                if (part_of_phase(phase) == part) n += count;
            return n;
        });
        if (std::any_of(counts.begin(), counts.end(), [](double v) { return v != 0; }))
            out += table_row(std::string("operations run: ") + part, counts, 0);
    }
    return out;
}

std::string layer_table(const std::vector<const ProfiledRun*>& runs) {
    std::map<std::string, std::vector<double>> layers;
    for (size_t i = 0; i < runs.size(); ++i)
        for (const auto& [layer, v] : runs[i]->profile.layers_ms) {
            auto& values = layers[layer];
            values.resize(runs.size(), 0.0);
            values[i] = v;
        }
    std::vector<std::pair<double, std::string>> spread;
    for (const auto& [layer, values] : layers) {
        const auto [low, high] = std::minmax_element(values.begin(), values.end());
        spread.push_back({*high - *low, layer});
    }
    std::sort(spread.begin(), spread.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (spread.size() > kTopLayers) spread.resize(kTopLayers);
    std::string out = table_header("layer", runs);
    for (const auto& [difference, layer] : spread)
        out += table_row("`" + layer + "`", layers[layer]);
    return out;
}

}  // namespace

std::vector<ProfiledRun> profiles(const output::SidecarRuns& sidecar) {
    std::vector<ProfiledRun> out;
    for (const output::BackendRun& run : sidecar.runs)
        if (run.profile)
            out.push_back(
                {sidecar.config_name, run.backend, run.stats.median_ms, *run.profile, run.threads});
    return out;
}

std::vector<ProfiledRun> merge_rounds(const std::vector<ProfiledRun>& runs) {
    std::vector<ProfiledRun> merged;
    std::vector<double> timed_rounds;
    for (const ProfiledRun& r : runs) {
        if (!r.profile.error.empty() || r.profile.steps == 0) continue;
        auto it = std::find_if(merged.begin(), merged.end(), [&](const ProfiledRun& m) {
            return m.config == r.config && m.backend == r.backend;
        });
        if (it == merged.end()) {
            merged.push_back(r);
            timed_rounds.push_back(1);
            continue;
        }
        output::Profile& p = it->profile;
        const double a = p.steps, b = r.profile.steps, total = a + b;
        const auto blend = [&](std::map<std::string, double>& into,
                               const std::map<std::string, double>& from) {
            for (auto& [key, v] : into) v *= a / total;
            for (const auto& [key, v] : from) into[key] += v * b / total;
        };
        blend(p.kinds_ms, r.profile.kinds_ms);
        blend(p.layers_ms, r.profile.layers_ms);
        blend(p.phase_operations, r.profile.phase_operations);
        p.step_ms = (p.step_ms * a + r.profile.step_ms * b) / total;
        p.steps += r.profile.steps;
        double& rounds = timed_rounds[static_cast<size_t>(it - merged.begin())];
        it->timed_median_ms = (it->timed_median_ms * rounds + r.timed_median_ms) / (rounds + 1);
        rounds += 1;
    }
    return merged;
}

std::string attribution_report(const std::vector<ProfiledRun>& runs, Attribution by) {
    std::string out;
    const std::vector<ProfiledRun> merged = merge_rounds(runs);
    for (const auto& [config, group] : by_config(merged)) {
        int steps = 0;
        for (const ProfiledRun* r : group) steps += r->profile.steps;
        if (by == Attribution::kind) {
            out += fmt::format(
                "\n## {}: where the step goes, by operation kind\n\nMilliseconds per step, the "
                "mean of {} profiled steps; *unaccounted* is the step's time outside every "
                "operation the backend reported (its framework's own work between them).\n\n",
                config, steps);
            out += kind_table(group);
        } else {
            out += fmt::format(
                "\n## {}: the layers whose times differ most\n\nMilliseconds per step in each "
                "layer (every phase, the mean of {} profiled steps), the {} layers with the "
                "largest difference between two backends.\n\n",
                config, steps, kTopLayers);
            out += layer_table(group);
        }
    }
    std::string missing;
    for (const ProfiledRun& r : runs)
        if (!r.profile.error.empty())
            missing += "- " + r.config + " / " + r.backend + ": " + r.profile.error + "\n";
    if (!missing.empty()) out += "\nNot profiled:\n\n" + missing;
    if (out.empty())
        out =
            "\nNo profiles in these results: run `harness run CONFIG --profile` (or --trace "
            "DIR).\n";
    return out;
}

}  // namespace harness::report
