#include "report/explain_report.hpp"

#include "output/comparison_stats.hpp"
#include "report/markdown_cells.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

namespace harness::report {

namespace {

// An entry and its base, over every round (file) given.
struct Pair {
    const output::CsvRow* base;  // of the first round they are in: they name the pair
    const output::CsvRow* entry;
    std::vector<Change> changes;
    int timed = 0;                      // rounds in which both are ok
    double base_ms = 0, entry_ms = 0;   // sums of their medians over those rounds
    std::vector<output::Round> rounds;  // those of them whose steps are both known
    std::string untimed;                // why a round had no timings: the statuses
};

std::string value_text(const std::string& value) {
    return value.empty() ? "(default)" : value;
}

std::string status_text(const output::CsvRow& row) {
    const std::string message = output::text_of(row, "message");
    return output::row_name(row) + " " + output::text_of(row, "status") +
           (message.empty() ? "" : ": " + message);
}

// " [+6.80, +13.20]" (ms), or with `percent`, of an interval of ratios minus 1, " [+6.8%, +13.2%]";
// "" when the interval is not known.
std::string interval_text(const output::Interval& i, bool percent) {
    if (!i.known()) return "";
    if (percent) return fmt::format(" [{:+.1f}%, {:+.1f}%]", 100 * i.lo, 100 * i.hi);
    return fmt::format(" [{:+.2f}, {:+.2f}]", i.lo, i.hi);
}

// The change's cell: with the math mode it brings when an option changed it.
std::string change_cell(const Pair& p) {
    std::string text = to_string(p.changes.front());
    const std::string base_math = output::text_of(*p.base, "math_mode");
    const std::string math = output::text_of(*p.entry, "math_mode");
    if (p.changes.front().what != "math_mode" && base_math != math)
        text += " (math_mode " + value_text(base_math) + " → " + value_text(math) + ")";
    return cell(text);
}

// The table row of a pair that changes one thing and was timed.
std::string cost_row(const Pair& p) {
    const double base_ms = p.base_ms / p.timed, entry_ms = p.entry_ms / p.timed;
    std::string cost_ms = fmt::format("{:+.2f}", entry_ms - base_ms);
    std::string cost_percent = fmt::format("{:+.1f}%", 100 * (entry_ms / base_ms - 1));
    std::string rounds = std::to_string(p.timed), judged;
    if (static_cast<int>(p.rounds.size()) == p.timed) {
        const output::Comparison c =
            output::compare(p.rounds, stream_of(*p.entry, output::row_name(*p.base), ""));
        cost_ms =
            fmt::format("{:+.2f}", c.difference_ms) + interval_text(c.difference_interval, false);
        cost_percent = fmt::format("{:+.1f}%", 100 * (c.ratio - 1)) +
                       interval_text({c.ratio_interval.lo - 1, c.ratio_interval.hi - 1}, true);
        // The ratio's interval decides: over rounds on a machine whose speed moved, the ratio
        // cancels what a round shares and the difference in ms does not.
        judged = verdict(c.ratio_interval, 1);
    }
    return fmt::format("| {} | {} | {} | {} | {:.2f} | {:.2f} | {} | {} | {} | {} |\n",
                       cell(output::text_of(*p.entry, "config_name")),
                       cell(output::row_name(*p.entry)), cell(output::row_name(*p.base)),
                       change_cell(p), base_ms, entry_ms, cost_ms, cost_percent, rounds, judged);
}

std::string changes_text(const std::vector<Change>& list) {
    if (list.empty()) return "nothing differs (a repeat of the base)";
    std::string text;
    for (const Change& c : list) text += (text.empty() ? "" : "; ") + to_string(c);
    return text;
}

// The config of the first file's first row, and each config's files in order: the rounds.
struct Rounds {
    std::string first;
    std::map<std::string, std::vector<size_t>> files_of;
    explicit Rounds(const std::vector<ResultsFile>& files) {
        for (size_t f = 0; f < files.size(); ++f) {
            std::set<std::string> configs;
            for (const output::CsvRow& row : files[f].rows)
                configs.insert(output::text_of(row, "config_sha256"));
            for (const auto& c : configs) files_of[c].push_back(f);
            if (first.empty() && !files[f].rows.empty())
                first = output::text_of(files[f].rows.front(), "config_sha256");
        }
    }
    // The first config's entry of `row`'s name in the round that pairs with `row`'s (the k-th
    // file of each config), and that file; none when there is none.
    std::pair<size_t, const output::CsvRow*> counterpart(const std::vector<ResultsFile>& files,
                                                         size_t f,
                                                         const output::CsvRow& row) const {
        const std::string config = output::text_of(row, "config_sha256");
        if (config == first) return {0, nullptr};
        const auto& own = files_of.at(config);
        const size_t round = std::find(own.begin(), own.end(), f) - own.begin();
        const auto& theirs = files_of.at(first);
        if (round >= theirs.size()) return {0, nullptr};
        for (const output::CsvRow& candidate : files[theirs[round]].rows)
            if (output::text_of(candidate, "config_sha256") == first &&
                output::row_name(candidate) == output::row_name(row))
                return {theirs[round], &candidate};
        return {0, nullptr};
    }
};

std::vector<Pair> pairs_of(const std::vector<ResultsFile>& files) {
    std::vector<Pair> pairs;
    std::map<std::pair<std::string, std::string>, size_t> index;  // (config, entry) -> pair
    const Rounds rounds(files);
    for (size_t f = 0; f < files.size(); ++f)
        for (const output::CsvRow& row : files[f].rows) {
            size_t base_file = f;
            const output::CsvRow* base = base_of(files[f], row);
            std::vector<Change> changed;
            if (base != nullptr) {
                changed = changes(*base, row);
            } else {
                std::tie(base_file, base) = rounds.counterpart(files, f, row);
                if (base == nullptr) continue;
                changed = changes(*base, row);
                changed.insert(changed.begin(),
                               Change{"config", output::text_of(*base, "config_name"),
                                      output::text_of(row, "config_name")});
            }
            const std::pair key{output::text_of(row, "config_sha256"), output::row_name(row)};
            auto [it, added] = index.emplace(key, pairs.size());
            if (added) pairs.push_back({base, &row, changed, 0, 0, 0, {}, {}});
            Pair& p = pairs[it->second];
            if (!is_ok(row) || !is_ok(*base)) {
                p.untimed = status_text(is_ok(*base) ? row : *base);
                continue;
            }
            ++p.timed;
            p.base_ms += output::number_of(*base, "median_ms");
            p.entry_ms += output::number_of(row, "median_ms");
            const std::vector<double>* steps = steps_of(files[f], row);
            const std::vector<double>* base_steps = steps_of(files[base_file], *base);
            if (steps != nullptr && base_steps != nullptr)
                p.rounds.push_back({*steps, *base_steps});
        }
    return pairs;
}

}  // namespace

std::string to_string(const Change& change) {
    return change.what + ": " + value_text(change.base_value) + " → " + value_text(change.value);
}

std::map<std::string, std::string> options_of(const output::CsvRow& row) {
    std::map<std::string, std::string> options;
    const std::string text = output::text_of(row, "options");
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(';', start);
        if (end == std::string::npos) end = text.size();
        const std::string pair = text.substr(start, end - start);
        const size_t equals = pair.find('=');
        if (equals != std::string::npos) options[pair.substr(0, equals)] = pair.substr(equals + 1);
        start = end + 1;
    }
    return options;
}

std::vector<Change> changes(const output::CsvRow& base, const output::CsvRow& entry) {
    const auto base_options = options_of(base), options = options_of(entry);
    std::set<std::string> keys;
    for (const auto& kv : base_options) keys.insert(kv.first);
    for (const auto& kv : options) keys.insert(kv.first);
    std::vector<Change> found;
    for (const std::string& key : keys) {
        auto b = base_options.find(key);
        auto e = options.find(key);
        const std::string base_value = b == base_options.end() ? "" : b->second;
        const std::string value = e == options.end() ? "" : e->second;
        if (b == base_options.end() || e == options.end() || base_value != value)
            found.push_back({key, base_value, value});
    }
    const bool options_differ = !found.empty();
    for (const char* column : {"placement", "math_mode"}) {
        if (output::text_of(base, column) == output::text_of(entry, column)) continue;
        if (std::string(column) == "math_mode" && options_differ) continue;
        found.push_back({column, output::text_of(base, column), output::text_of(entry, column)});
    }
    return found;
}

const output::CsvRow* base_of(const ResultsFile& file, const output::CsvRow& row) {
    for (const output::CsvRow& candidate : file.rows) {
        if (&candidate == &row) return nullptr;
        if (output::text_of(candidate, "config_sha256") == output::text_of(row, "config_sha256") &&
            output::text_of(candidate, "plugin") == output::text_of(row, "plugin") &&
            output::text_of(candidate, "device") == output::text_of(row, "device"))
            return &candidate;
    }
    return nullptr;
}

std::string explain_report(const std::vector<ResultsFile>& files) {
    const std::vector<Pair> pairs = pairs_of(files);
    std::string out =
        "\n**What each change costs** (`--explain`): each entry against its base, the first entry "
        "of its config with the same plugin and device, or, for a base of another config than "
        "the first file's, the first config's entry of its name, round by round. Where the two "
        "differ in one thing (an option, the placement, the math mode or the config): their "
        "median ms (the mean over rounds), the "
        "entry's time minus the base's in ms and in % of the base's, with 95% intervals (one "
        "round: the bootstrap over its steps; several: Student's t over the rounds), and \"no "
        "significant difference\" where the % interval holds 0 (docs/statistics.md).\n\n"
        "| config | entry | base | change | base ms | entry ms | cost ms [95% interval] | "
        "cost % [95% interval] | rounds | |\n"
        "|---|---|---|---|---:|---:|---:|---:|---:|---|\n";
    std::string not_comparable, untimed;
    for (const Pair& p : pairs) {
        const std::string names = cell(output::text_of(*p.entry, "config_name")) + " | " +
                                  cell(output::row_name(*p.entry)) + " | " +
                                  cell(output::row_name(*p.base));
        if (p.changes.size() != 1)
            not_comparable += "| " + names + " | " + cell(changes_text(p.changes)) + " |\n";
        else if (p.timed == 0)
            untimed += "| " + names + " | " + change_cell(p) + " | " + cell(p.untimed) + " |\n";
        else
            out += cost_row(p);
    }
    if (!not_comparable.empty())
        out +=
            "\nNot comparable with their base (they change several things, or none):\n\n"
            "| config | entry | base | what differs |\n|---|---|---|---|\n" +
            not_comparable;
    if (!untimed.empty())
        out += "\nNot timed:\n\n| config | entry | base | change | why |\n|---|---|---|---|---|\n" +
               untimed;
    return out;
}

}  // namespace harness::report
