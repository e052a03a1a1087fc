#include "report/markdown_report.hpp"

#include "output/comparison_stats.hpp"
#include "output/round_comparison.hpp"
#include "report/markdown_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace harness::report {

namespace {

std::string fixed(const output::CsvRow& row, const std::string& column, int digits) {
    return output::text_of(row, column).empty()
               ? ""
               : fmt::format("{:.{}f}", output::number_of(row, column), digits);
}

// The worker's CPU time over the wall time of the median step ("" for a row without both).
std::string cpu_per_wall(const output::CsvRow& row) {
    if (output::text_of(row, "cpu_ms").empty() || output::text_of(row, "median_ms").empty())
        return "";
    const double wall = output::number_of(row, "median_ms");
    return wall > 0 ? fmt::format("{:.2f}", output::number_of(row, "cpu_ms") / wall) : "";
}

// The distinct values of a provenance column, joined.
std::string distinct(const std::vector<output::CsvRow>& rows, const std::string& column) {
    std::set<std::string> values;
    for (const auto& r : rows)
        if (!output::text_of(r, column).empty()) values.insert(output::text_of(r, column));
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : "; ") + v;
    return s.empty() ? "—" : s;
}

// "- config: NAME (sha256 …)", or each config with its own hash where the rows span several.
std::string config_line(const std::vector<output::CsvRow>& rows) {
    std::vector<std::pair<std::string, std::string>> configs;
    for (const auto& r : rows) {
        const std::pair config{output::text_of(r, "config_name"),
                               output::text_of(r, "config_sha256").substr(0, 16)};
        if (std::find(configs.begin(), configs.end(), config) == configs.end())
            configs.push_back(config);
    }
    std::string s;
    for (const auto& [name, sha] : configs)
        s += fmt::format("{}{} (sha256 {})", s.empty() ? "" : ", ", name.empty() ? "—" : name,
                         sha.empty() ? "—" : sha);
    if (configs.size() > 1)
        return "- configs: " + s + ": this report compares across configs; each ratio is within one\n";
    return "- config: " + (s.empty() ? std::string("—") : s) + "\n";
}

std::string p_text(double p) {
    return p < 0.001 ? "< 0.001" : fmt::format("{:.2g}", p);
}

// "1.472x [1.431, 1.502], p < 0.001", or "..., p = 0.41, no significant difference".
std::string ratio_text(const output::Comparison& c) {
    std::string s = output::ratio_and_interval(c.ratio, c.ratio_interval);
    if (!std::isnan(c.p)) s += c.p < 0.001 ? ", p < 0.001" : ", p = " + p_text(c.p);
    if (c.ratio_interval.known() && !c.significant()) s += ", no significant difference";
    return s;
}

// The baseline's ok rows: of each (file, config), and the last one of each config. The baseline
// is a row's name ("onednn", "onednn (2 ranks)"), or the backend of a data-parallel run, whose row
// at each rank count is the baseline of the rows at that rank count.
class Baselines {
public:
    Baselines(const std::vector<ResultsFile>& files, const std::string& baseline) {
        if (baseline.empty()) return;
        for (size_t f = 0; f < files.size(); ++f)
            for (const auto& r : files[f].rows) {
                if (!is_ok(r)) continue;
                std::string ranks;  // empty: the baseline of every row of its config
                if (output::row_name(r) != baseline) {
                    if (output::text_of(r, "backend") != baseline) continue;
                    ranks = output::text_of(r, "ranks");
                }
                const Key key{output::text_of(r, "config_sha256"), ranks};
                in_file_[{f, key}] = &r;
                last_[key] = {f, &r};
            }
    }
    // The baseline row for `row` of file `f` and the file it is in; none when there is none.
    std::pair<size_t, const output::CsvRow*> for_row(size_t f, const output::CsvRow& row) const {
        for (const Key& key : keys_of(row)) {
            if (auto it = in_file_.find({f, key}); it != in_file_.end()) return {f, it->second};
            if (auto it = last_.find(key); it != last_.end()) return it->second;
        }
        return {0, nullptr};
    }
    // Only the baseline row of the same file.
    const output::CsvRow* in_file(size_t f, const output::CsvRow& row) const {
        for (const Key& key : keys_of(row))
            if (auto it = in_file_.find({f, key}); it != in_file_.end()) return it->second;
        return nullptr;
    }

private:
    using Key = std::pair<std::string, std::string>;  // config, ranks
    // The baseline at the row's rank count first, then one for any.
    static std::vector<Key> keys_of(const output::CsvRow& row) {
        const std::string config = output::text_of(row, "config_sha256");
        return {{config, output::text_of(row, "ranks")}, {config, ""}};
    }
    std::map<std::pair<size_t, Key>, const output::CsvRow*> in_file_;
    std::map<Key, std::pair<size_t, const output::CsvRow*>> last_;
};

// The "vs baseline" cell of row `r` of file `f`.
std::string baseline_cell(const std::vector<ResultsFile>& files, size_t f, const output::CsvRow& r,
                          const Baselines& baselines, const std::string& baseline) {
    const auto [bf, b] = baselines.for_row(f, r);
    const double ms = output::number_of(r, "median_ms");
    if (b == nullptr || ms <= 0 || !is_ok(r)) return "";
    const std::vector<double>* steps = steps_of(files[f], r);
    const std::vector<double>* baseline_steps = steps_of(files[bf], *b);
    if (b == &r || steps == nullptr || baseline_steps == nullptr)
        return fmt::format("{:.2f}x", ms / output::number_of(*b, "median_ms"));
    return ratio_text(output::compare({{*steps, *baseline_steps}},
                                      stream_of(r, baseline, output::text_of(r, "utc_time"))));
}

// Each backend against the baseline over every round of its config, and its geometric mean over
// the configs; "" unless a config has several rounds or there are several configs.
std::string over_rounds(const std::vector<ResultsFile>& files, const Baselines& baselines,
                        const std::string& baseline) {
    struct Group {
        const output::CsvRow* first;  // names the config and the backend
        std::vector<output::Round> rounds;
        output::StepsByRound steps;                     // file index as the round
        std::map<size_t, const output::CsvRow*> bases;  // file index -> its baseline row
        output::Comparison comparison;
    };
    std::vector<Group> groups;
    std::map<std::pair<std::string, std::string>, size_t> index;  // (config, backend) -> group
    std::set<std::string> configs;
    bool several_rounds = false;
    for (size_t f = 0; f < files.size(); ++f)
        for (const auto& r : files[f].rows) {
            const output::CsvRow* b = baselines.in_file(f, r);
            if (!is_ok(r) || b == nullptr || b == &r) continue;
            const std::vector<double>* steps = steps_of(files[f], r);
            const std::vector<double>* baseline_steps = steps_of(files[f], *b);
            if (steps == nullptr || baseline_steps == nullptr) continue;
            const std::pair key{output::text_of(r, "config_sha256"), output::row_name(r)};
            auto [it, added] = index.emplace(key, groups.size());
            if (added) groups.push_back({&r, {}, {}, {}, {}});
            groups[it->second].rounds.push_back({*steps, *baseline_steps});
            groups[it->second].steps.emplace_back(static_cast<int>(f), *steps);
            groups[it->second].bases[f] = b;
            several_rounds = several_rounds || groups[it->second].rounds.size() > 1;
            configs.insert(key.first);
        }
    if (!several_rounds && configs.size() < 2) return "";

    std::string out = fmt::format(
        "\n**Against {0} over every round given**: per config, the ratio of each backend's "
        "round figures (lower medians) to the baseline's with its 95% interval from the rounds "
        "model of every backend of the config (Student's t on their pooled noise), and the "
        "Mann-Whitney p over every step; with several configs, each backend's geometric mean "
        "over them (docs/statistics.md).\n\n"
        "| config | backend | rounds | vs {0} [95% interval] | p | |\n"
        "|---|---|---:|---:|---:|---|\n",
        cell(baseline));
    std::map<std::string, std::vector<const output::Comparison*>> by_backend;
    std::vector<std::string> backends;  // in order of appearance
    // Each config's backends in one rounds model where they share their baseline rows (not
    // where data-parallel rows have a baseline of their own rank count): as `harness run`'s
    // table compares them.
    for (const std::string& config : configs) {
        std::vector<Group*> members;
        for (auto& g : groups)
            if (output::text_of(*g.first, "config_sha256") == config) members.push_back(&g);
        const bool shared = std::all_of(members.begin(), members.end(), [&](const Group* g) {
            for (const auto& [f, b] : g->bases)
                for (const Group* other : members)
                    if (auto it = other->bases.find(f); it != other->bases.end() && it->second != b)
                        return false;
            return true;
        });
        if (!shared) {
            for (Group* g : members)
                g->comparison = output::compare(g->rounds, stream_of(*g->first, baseline, ""));
            continue;
        }
        std::vector<output::StepsByRound> steps{{}};
        std::vector<std::string> streams{""};
        std::map<size_t, const output::CsvRow*> bases;
        for (const Group* g : members) {
            steps.push_back(g->steps);
            streams.push_back(stream_of(*g->first, baseline, ""));
            bases.insert(g->bases.begin(), g->bases.end());
        }
        for (const auto& [f, b] : bases)
            steps[0].emplace_back(static_cast<int>(f), *steps_of(files[f], *b));
        const std::vector<output::Comparison> compared =
            output::compare_over_rounds(steps, 0, streams);
        for (size_t i = 0; i < members.size(); ++i) members[i]->comparison = compared[i + 1];
    }
    for (auto& g : groups) {
        const output::Comparison& c = g.comparison;
        const std::string backend = output::row_name(*g.first);
        out += fmt::format("| {} | {} | {} | {} | {} | {} |\n",
                           cell(output::text_of(*g.first, "config_name")), cell(backend), c.rounds,
                           output::ratio_and_interval(c.ratio, c.ratio_interval), p_text(c.p),
                           verdict(c.ratio_interval, 1));
        if (by_backend[backend].empty()) backends.push_back(backend);
        by_backend[backend].push_back(&c);
    }
    for (const auto& backend : backends) {
        if (by_backend[backend].size() < 2) continue;
        const output::GeometricMean g = output::geometric_mean(by_backend[backend]);
        out += fmt::format("| geometric mean of {} configs | {} | | {} | | {} |\n", g.comparisons,
                           cell(backend), output::ratio_and_interval(g.ratio, g.ratio_interval),
                           verdict(g.ratio_interval, 1));
    }
    return out;
}

}  // namespace

std::vector<ResultsFile> rounds_of(const std::vector<output::CsvRow>& rows,
                                   const std::vector<StepSamples>& samples) {
    std::vector<ResultsFile> files;
    std::vector<std::string> rounds;
    auto file_of = [&](const std::string& round) -> ResultsFile& {
        const auto it = std::find(rounds.begin(), rounds.end(), round);
        if (it != rounds.end()) return files[static_cast<size_t>(it - rounds.begin())];
        rounds.push_back(round);
        return files.emplace_back();
    };
    auto round_of = [](const output::CsvRow& r) {
        const std::string round = output::text_of(r, "round");
        return round.empty() ? std::string("1") : round;
    };
    for (const auto& r : rows) file_of(round_of(r)).rows.push_back(r);
    for (const auto& s : samples) file_of(std::to_string(s.round)).steps_ms[s.backend] = s.ms;
    return files;
}

std::string cell(std::string s) {
    for (size_t pos = 0; (pos = s.find('|', pos)) != std::string::npos; pos += 2)
        s.replace(pos, 1, "\\|");
    return s;
}

bool is_ok(const output::CsvRow& r) {
    return output::text_of(r, "status") == "ok";
}

const std::vector<double>* steps_of(const ResultsFile& file, const output::CsvRow& row) {
    auto it = file.steps_ms.find(output::row_name(row));
    return it == file.steps_ms.end() || it->second.empty() ? nullptr : &it->second;
}

std::string stream_of(const output::CsvRow& row, const std::string& baseline,
                      const std::string& round) {
    return output::text_of(row, "config_sha256") + " " + output::row_name(row) + " vs " + baseline +
           (round.empty() ? "" : " at " + round);
}

std::string verdict(const output::Interval& interval, double neutral) {
    if (!interval.known()) return "";
    if (interval.lo > neutral) return "slower";
    if (interval.hi < neutral) return "faster";
    return "no significant difference";
}

// The data-parallel rows' own columns (docs/parallel.md), when there are any.
std::string data_parallel_table(const std::vector<ResultsFile>& files) {
    std::string out;
    for (const auto& file : files)
        for (const auto& r : file.rows) {
            if (output::text_of(r, "ranks").empty()) continue;
            if (out.empty())
                out =
                    "\nData-parallel rows (docs/parallel.md): step times are the slowest rank's, "
                    "images/s the global step's.\n\n"
                    "| backend | ranks | communicator | oversubscribed | communication share | "
                    "all-reduce MB | busbw GB/s | weak-scaling efficiency |\n"
                    "|---|---:|---|---|---:|---:|---:|---:|\n";
            const double bytes = output::number_of(r, "allreduce_bytes");
            out += fmt::format(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(output::row_name(r)),
                output::text_of(r, "ranks"), output::text_of(r, "communicator"),
                output::text_of(r, "oversubscribed"), output::text_of(r, "communication_share"),
                bytes > 0 ? fmt::format("{:.1f}", bytes / 1e6) : "",
                output::text_of(r, "allreduce_busbw_gbps"),
                output::text_of(r, "scaling_efficiency"));
        }
    return out;
}

std::string markdown_report(const std::vector<output::CsvRow>& rows, const ReportOptions& options) {
    return markdown_report(std::vector<ResultsFile>{{rows, {}}}, options);
}

std::string markdown_report(const std::vector<ResultsFile>& files, const ReportOptions& options) {
    const std::string& baseline = options.baseline;
    const bool attainable = options.attainable_gflops > 0;
    std::vector<output::CsvRow> rows;
    for (const auto& f : files) rows.insert(rows.end(), f.rows.begin(), f.rows.end());
    std::string out;
    out += config_line(rows);
    out += fmt::format("- machine: {} — CPU {} — GPU {} (driver {})\n", distinct(rows, "host"),
                       distinct(rows, "cpu_model"), distinct(rows, "gpu_name"),
                       distinct(rows, "gpu_driver"));
    out += fmt::format("- harness {} at {}, {}\n\n", distinct(rows, "harness_version"),
                       distinct(rows, "git_commit"), distinct(rows, "utc_time"));

    const Baselines baselines(files, baseline);

    out +=
        "| backend | device | status | check | math | threads | median ms | IQR ms | CPU/wall | "
        "images/s | GFLOP/s | peak MiB | first loss | last loss |";
    if (attainable) out += fmt::format(" of {:.1f} GFLOP/s |", options.attainable_gflops);
    out += baseline.empty() ? "\n" : fmt::format(" vs {} |\n", cell(baseline));
    out += "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|";
    if (attainable) out += "---:|";
    out += baseline.empty() ? "\n" : "---:|\n";
    bool intervals = false;
    for (size_t f = 0; f < files.size(); ++f)
        for (const auto& r : files[f].rows) {
            std::string status = output::text_of(r, "status");
            if (!output::text_of(r, "message").empty())
                status += ": " + output::text_of(r, "message");
            if (output::text_of(r, "noisy") == "true") status += " (noisy)";
            out += fmt::format(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(output::row_name(r)), cell(output::text_of(r, "device")), cell(status),
                output::text_of(r, "check"), output::text_of(r, "math_mode"),
                output::text_of(r, "threads"), fixed(r, "median_ms", 2), fixed(r, "iqr_ms", 2),
                cpu_per_wall(r), fixed(r, "images_per_s", 1), fixed(r, "gflops", 1),
                fixed(r, "peak_memory_mb", 0), output::text_of(r, "first_loss"),
                output::text_of(r, "last_loss"));
            if (attainable) {
                const double gflops = output::number_of(r, "gflops");
                out += gflops > 0
                           ? fmt::format(" {:.1f}% |", 100 * gflops / options.attainable_gflops)
                           : " |";
            }
            if (!baseline.empty()) {
                const std::string ratio = baseline_cell(files, f, r, baselines, baseline);
                intervals = intervals || ratio.find('[') != std::string::npos;
                out += ratio.empty() ? " |" : " " + ratio + " |";
            }
            out += "\n";
        }
    if (intervals)
        out += fmt::format(
            "\nvs {}: median time per step over the baseline's in the same file, [95% bootstrap "
            "interval], p: Mann-Whitney U test (docs/statistics.md).\n",
            cell(baseline));
    if (!baseline.empty()) out += over_rounds(files, baselines, baseline);
    out += data_parallel_table(files);
    return out;
}

}  // namespace harness::report
