#include "run/paired_round.hpp"

#include "plugin_host/child_process.hpp"
#include "run/live_worker.hpp"
#include "run/progress.hpp"
#include "run/round_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>

namespace harness::run {

bool MemoryBook::admits(size_t job, size_t alive) const {
    if (alive == 0) return true;
    double expected = 0;
    if (auto it = peak_.find(job); it != peak_.end()) {
        expected = it->second;
    } else {
        for (const auto& [other, bytes] : peak_) expected = std::max(expected, bytes);
    }
    return available_memory_bytes() >= kHeadroom * expected;
}

void MemoryBook::record(size_t job, double peak_bytes) {
    if (peak_bytes > 0) peak_[job] = std::max(peak_[job], peak_bytes);
}

namespace {

struct Live {
    size_t job;
    std::unique_ptr<LiveWorker> worker;
    std::vector<int> sequence;
    double seconds = 0;  // spent on this worker alone
};

// Calls `f` and adds the seconds it took to `seconds`.
template <typename F>
auto timed(double& seconds, const F& f) {
    const auto start = std::chrono::steady_clock::now();
    auto result = f();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace

void run_paired_round(const config::RunConfig& config, const std::vector<PairedJob>& jobs,
                      const std::vector<size_t>& order, uint64_t seed, int round,
                      MemoryBook& memory, ProgressLine* progress, const PairedRoundHooks& hooks) {
    std::deque<size_t> waiting(order.begin(), order.end());
    std::vector<Live> alive;
    auto end = [&](Live& live) {
        output::BackendRun row = timed(live.seconds, [&] { return live.worker->finish(); });
        if (row.samples_ms.size() == live.sequence.size()) row.step_sequence = live.sequence;
        hooks.on_row(live.job, std::move(row), live.seconds);
    };
    int slot = 0, taken = 0;
    int line_steps = 0, line_done = 0;  // the progress line's steps in all (0: no line), and done
    while (!plugin_host::interrupted() && (!waiting.empty() || !alive.empty())) {
        while (!waiting.empty() && !plugin_host::interrupted() &&
               memory.admits(waiting.front(), alive.size())) {
            const size_t j = waiting.front();
            waiting.pop_front();
            hooks.on_start(j);
            Live live{j, nullptr, {}};
            const bool ready = timed(live.seconds, [&] {
                live.worker = std::make_unique<LiveWorker>(config, jobs[j].job, jobs[j].iterations,
                                                           jobs[j].timeout_s, progress);
                return live.worker->wait_ready();
            });
            if (progress) progress->end();
            if (!ready) {
                end(live);
                continue;
            }
            memory.record(j, live.worker->peak_bytes());
            alive.push_back(std::move(live));
        }
        // The line counts the steps of the workers alive together, until one ends.
        if (progress && line_steps == 0 && !alive.empty()) {
            int steps_left = 0;
            for (const Live& live : alive)
                steps_left += jobs[live.job].iterations - live.worker->steps_taken();
            progress->begin(fmt::format("round {}, paired steps of {} backend{}", round,
                                        alive.size(), alive.size() == 1 ? "" : "s"),
                            {0, steps_left, 0, 0, 0});
            line_steps = steps_left;
            line_done = 0;
        }
        // One slot: a step of every live worker, in a drawn order.
        for (size_t k : step_order(alive.size(), seed, round, slot++)) {
            if (plugin_host::interrupted()) break;
            Live& live = alive[k];
            if (live.worker->ended()) continue;
            const double ms = timed(live.seconds, [&] { return live.worker->step(); });
            if (live.worker->steps_taken() > static_cast<int>(live.sequence.size()))
                live.sequence.push_back(taken++);
            if (line_steps > 0) progress->update({"timed", ++line_done, line_steps, ms});
        }
        // Those with every step taken (or ended) end now, which may admit the next.
        for (auto it = alive.begin(); it != alive.end();) {
            const PairedJob& job = jobs[it->job];
            if (plugin_host::interrupted() || it->worker->ended() ||
                it->worker->steps_taken() >= job.iterations) {
                if (line_steps > 0) progress->end();
                line_steps = 0;
                end(*it);
                it = alive.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (Live& live : alive) end(live);
}

}  // namespace harness::run
