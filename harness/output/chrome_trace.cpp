#include "output/chrome_trace.hpp"

#include <algorithm>

namespace harness::output {

using nlohmann::json;

namespace {

constexpr int kProcess = 1;

json slice(const std::string& name, const std::string& category, int thread, double start_ms,
           double end_ms, json args) {
    return {{"name", name},
            {"cat", category},
            {"ph", "X"},
            {"pid", kProcess},
            {"tid", thread},
            {"ts", start_ms * 1000},
            {"dur", std::max(0.0, end_ms - start_ms) * 1000},
            {"args", std::move(args)}};
}

json thread_name(int thread, const std::string& name) {
    return {{"name", "thread_name"},
            {"ph", "M"},
            {"pid", kProcess},
            {"tid", thread},
            {"args", {{"name", name}}}};
}

// One step's slices on one track: the step, each run of operations in one phase, and the
// operations, each kept inside the step so that the slices nest.
void add_track(json& events, int thread, int index, const ProfiledStep& step,
               std::vector<const Operation*> ops) {
    std::stable_sort(ops.begin(), ops.end(), [](const Operation* a, const Operation* b) {
        return a->start_ms < b->start_ms;
    });
    const double base = step.start_ms;
    const auto clamp = [&](double ms) { return std::clamp(ms, 0.0, step.duration_ms); };
    events.push_back(slice("step " + std::to_string(index), "step", thread, base,
                           base + step.duration_ms, {{"step_ms", step.duration_ms}}));
    for (size_t first = 0; first < ops.size();) {
        size_t last = first;
        while (last + 1 < ops.size() && ops[last + 1]->phase == ops[first]->phase) ++last;
        events.push_back(slice(ops[first]->phase, "phase", thread,
                               base + clamp(ops[first]->start_ms), base + clamp(ops[last]->end_ms),
                               json::object()));
        for (size_t k = first; k <= last; ++k) {
            const Operation& op = *ops[k];
            json args = {{"kind", op.kind}, {"phase", op.phase}};
            if (!op.layer.empty()) args["layer"] = op.layer;
            events.push_back(slice(op.name, op.kind, thread, base + clamp(op.start_ms),
                                   base + clamp(op.end_ms), std::move(args)));
        }
        first = last + 1;
    }
}

}  // namespace

json chrome_trace(const TraceMetadata& metadata, const std::vector<ProfiledStep>& steps) {
    json events = json::array();
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", kProcess},
         {"args",
          {{"name", metadata.backend + " (" + metadata.plugin + " on " + metadata.device + ")"}}}});
    std::vector<std::string> tracks;  // thread ids are positions here, from 1
    const auto thread_of = [&](const std::string& track) {
        auto it = std::find(tracks.begin(), tracks.end(), track);
        if (it != tracks.end()) return static_cast<int>(it - tracks.begin()) + 1;
        tracks.push_back(track);
        events.push_back(thread_name(static_cast<int>(tracks.size()), track));
        return static_cast<int>(tracks.size());
    };
    thread_of("main");
    for (size_t s = 0; s < steps.size(); ++s) {
        std::map<int, std::vector<const Operation*>> by_thread = {{thread_of("main"), {}}};
        for (const Operation& op : steps[s].operations)
            by_thread[thread_of(op.track.empty() ? "main" : op.track)].push_back(&op);
        for (const auto& [thread, ops] : by_thread)
            add_track(events, thread, static_cast<int>(s), steps[s], ops);
    }
    return {{"traceEvents", events},
            {"displayTimeUnit", "ms"},
            {"metadata",
             {{"config", metadata.config_name},
              {"config_path", metadata.config_path},
              {"config_sha256", metadata.config_sha256},
              {"harness_version", metadata.harness_version},
              {"backend", metadata.backend},
              {"plugin", metadata.plugin},
              {"device", metadata.device},
              {"placement", metadata.placement},
              {"options", metadata.options}}}};
}

}  // namespace harness::output
