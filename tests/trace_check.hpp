// What makes a Chrome trace-event file load in ui.perfetto.dev and chrome://tracing as intended:
// every event complete, every track named, the slices of each track properly nested.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace harness::testing {

// The problems found, one sentence each; none for a good trace.
inline std::vector<std::string> trace_problems(const nlohmann::json& trace) {
    std::vector<std::string> problems;
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
        return {"no traceEvents array"};
    if (!trace.contains("metadata") || !trace["metadata"].is_object())
        problems.push_back("no metadata object");
    struct Slice {
        double start, end;
        std::string name;
    };
    std::map<std::pair<int, int>, std::vector<Slice>> tracks;
    std::set<std::pair<int, int>> named;
    bool process_named = false;
    for (const auto& e : trace["traceEvents"]) {
        const std::string what = e.dump();
        if (!e.contains("name") || !e["name"].is_string() || !e.contains("ph") ||
            !e.contains("pid") || !e["pid"].is_number_integer()) {
            problems.push_back("incomplete event " + what);
            continue;
        }
        const std::string ph = e["ph"].get<std::string>();
        if (ph == "M") {
            if (!e.contains("args") || !e["args"].contains("name"))
                problems.push_back("metadata event without args.name " + what);
            else if (e["name"] == "process_name")
                process_named = true;
            else if (e["name"] == "thread_name" && e.contains("tid"))
                named.insert({e["pid"].get<int>(), e["tid"].get<int>()});
            continue;
        }
        if (ph != "X") {
            problems.push_back("event of phase '" + ph + "' " + what);
            continue;
        }
        if (!e.contains("tid") || !e["tid"].is_number_integer() || !e.contains("ts") ||
            !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number() ||
            e["dur"].get<double>() < 0 || e["ts"].get<double>() < 0) {
            problems.push_back("incomplete slice " + what);
            continue;
        }
        const double ts = e["ts"].get<double>();
        tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
            {ts, ts + e["dur"].get<double>(), e["name"].get<std::string>()});
    }
    if (!process_named) problems.push_back("no process_name");
    constexpr double slack_us = 1e-3;  // the printed numbers' rounding
    for (auto& [track, slices] : tracks) {
        if (!named.count(track))
            problems.push_back("track " + std::to_string(track.second) + " has no thread_name");
        std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
            return a.start != b.start ? a.start < b.start : a.end > b.end;
        });
        std::vector<const Slice*> open;
        for (const Slice& s : slices) {
            while (!open.empty() && open.back()->end <= s.start + slack_us) open.pop_back();
            if (!open.empty() && s.end > open.back()->end + slack_us)
                problems.push_back("slice '" + s.name + "' on track " +
                                   std::to_string(track.second) + " overlaps '" +
                                   open.back()->name + "' without nesting in it");
            open.push_back(&s);
        }
    }
    return problems;
}

}  // namespace harness::testing
