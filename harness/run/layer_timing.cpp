#include "run/layer_timing.hpp"

#include "harness/version.hpp"
#include "model/layer_units.hpp"
#include "model/name_pattern.hpp"
#include "run/step_events.hpp"
#include "run/training.hpp"

#include <benchmark/benchmark.h>

#include <iostream>
#include <memory>
#include <numeric>
#include <set>

namespace harness::run {

namespace {

// A configuration's step: how long its own layers took, by the plugin's events when it has them.
struct UnitStep {
    double ms = 0, forward_ms = -1, backward_ms = -1;
};

UnitStep unit_step(Training& training, const std::set<int>& layers, const std::string& timed_by,
                   int k) {
    const auto start = Clock::now();
    const hb_step_result r = training.session->step(k % training.batch_count);
    const double wall = ms_since(start);
    UnitStep s;
    if (timed_by == "step") {
        s.ms = wall;
    } else if (timed_by == "phases") {
        s.forward_ms = r.forward_ms;
        s.backward_ms = r.backward_ms;
        s.ms = r.forward_ms + r.backward_ms;
    } else {
        s.forward_ms = s.backward_ms = 0;
        for (const hb_event& e : training.session->read_events()) {
            if (layers.count(e.layer) == 0) continue;
            const double ms = e.end_ms - e.start_ms;
            s.ms += ms;
            if (e.phase == HB_PHASE_FORWARD) s.forward_ms += ms;
            if (e.phase == HB_PHASE_BACKWARD_DATA || e.phase == HB_PHASE_BACKWARD_WEIGHTS ||
                e.phase == HB_PHASE_BACKWARD)
                s.backward_ms += ms;
        }
    }
    return s;
}

// The unit graph's layers that are the configuration's own (not its probes, not its loss).
std::set<int> own_layers(const model::Graph& unit_graph, const model::Graph& model,
                         const model::LayerUnit& unit) {
    std::set<std::string> names;
    for (int l : unit.layers) names.insert(model.layers[static_cast<size_t>(l)].name);
    std::set<int> own;
    for (size_t l = 0; l < unit_graph.layers.size(); ++l)
        if (names.count(unit_graph.layers[l].name)) own.insert(static_cast<int>(l));
    return own;
}

double mean(const std::vector<double>& v, size_t from) {
    if (v.size() <= from) return 0;
    return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.end(), 0.0) /
           static_cast<double>(v.size() - from);
}

// GFLOP/s, when the time says: Google Benchmark writes a counter's value as it is, and JSON has
// no infinity.
void set_rate(benchmark::State& state, int64_t flops, double ms) {
    if (ms > 0) state.counters["GFLOP/s"] = static_cast<double>(flops) / ms / 1e6;
}

void add_context(const config::RunConfig& config, const output::BackendRun& run,
                 const plugin_host::PluginLibrary& library) {
    benchmark::AddCustomContext("harness_version", std::string(kVersion) + " (" + kGitCommit + ")");
    benchmark::AddCustomContext("config", config.name);
    benchmark::AddCustomContext("config_sha256", config.sha256);
    benchmark::AddCustomContext("backend", run.backend);
    benchmark::AddCustomContext("plugin", run.plugin + " " + library.info().version);
    benchmark::AddCustomContext("device", run.device);
    for (const auto& [name, version] : run.libraries)
        benchmark::AddCustomContext("library " + name, version);
    for (const auto& [key, value] : run.options)
        benchmark::AddCustomContext("option " + key, value);
}

}  // namespace

std::vector<layers::UnitSamples> time_layers(const model::Graph& model,
                                             const config::RunConfig& config,
                                             const config::BackendEntry& entry,
                                             const plugin_host::PluginLibrary& library,
                                             const LayerTiming& timing, output::BackendRun& run,
                                             const std::function<bool()>& stopped) {
    const model::NamePattern pattern(timing.units);
    const std::vector<model::LayerUnit> all = model::layer_units(model);
    std::vector<const model::LayerUnit*> units;
    for (const model::LayerUnit& u : all)
        if (pattern.found_in(u.name)) units.push_back(&u);
    const std::string timed_by = library.can_profile()                                ? "events"
                                 : (library.info().capabilities & HB_CAP_PHASE_TIMES) ? "phases"
                                                                                      : "step";

    std::vector<std::string> args{"harness", "--benchmark_out=" + timing.gbench_out,
                                  "--benchmark_out_format=json"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    int argc = static_cast<int>(argv.size());
    benchmark::Initialize(&argc, argv.data());
    add_context(config, run, library);

    // One session at a time: made by a benchmark's first repetition, warmed up, kept for the
    // others.
    std::unique_ptr<Training> training;
    int current = -2;  // -1: the whole step; k: configuration k of `units`
    int steps = 0;
    auto prepare = [&](int which, const model::Graph& graph, output::BackendRun& into) {
        if (current == which) return;
        send_step_event({"layers", which + 1, static_cast<int>(units.size())});
        if (training && current == -1) training->finish(run);
        training.reset();
        current = which;
        training = std::make_unique<Training>(graph, config, entry, library, into);
        if (which >= 0 && timed_by == "events") training->session->set_profiling(true);
        for (steps = 0; steps < run.warmup && !stopped(); ++steps)
            training->session->step(steps % training->batch_count);
    };

    auto* whole = benchmark::RegisterBenchmark("step", [&](benchmark::State& state) {
        try {
            prepare(-1, model, run);
            const size_t first = run.samples_ms.size();
            for (auto _ : state) {
                if (stopped()) {
                    state.SkipWithError("interrupted");
                    break;
                }
                training->step(steps++, true, run);
                state.SetIterationTime(run.samples_ms.back() / 1e3);
            }
            set_rate(state, model.training_flops_per_step(), mean(run.samples_ms, first));
        } catch (const std::exception& e) {
            run.status = output::Status::failed;
            run.message = e.what();
            state.SkipWithError(e.what());
            training.reset();  // a failed step's session says nothing more about the run
            current = -2;
        }
    });

    std::vector<layers::UnitSamples> samples(units.size());
    std::vector<model::Graph> graphs;
    for (const model::LayerUnit* u : units) graphs.push_back(model::unit_graph(model, *u));
    std::vector<benchmark::internal::Benchmark*> registered{whole};
    for (size_t i = 0; i < units.size(); ++i) {
        const model::LayerUnit& unit = *units[i];
        layers::UnitSamples& out = samples[i];
        out.name = unit.name;
        out.kind = unit.kind;
        out.count = unit.count();
        out.training_flops = unit.training_flops;
        out.timed_by = timed_by;
        const std::set<int> layers = own_layers(graphs[i], model, unit);
        registered.push_back(benchmark::RegisterBenchmark(
            unit.name.c_str(), [&, i, layers](benchmark::State& state) {
                try {
                    output::BackendRun setup;
                    prepare(static_cast<int>(i), graphs[i], setup);
                    const size_t first = out.ms.size();
                    for (auto _ : state) {
                        if (stopped()) {
                            state.SkipWithError("interrupted");
                            break;
                        }
                        const UnitStep s = unit_step(*training, layers, timed_by, steps++);
                        out.ms.push_back(s.ms);
                        if (s.forward_ms >= 0) out.forward_ms.push_back(s.forward_ms);
                        if (s.backward_ms >= 0) out.backward_ms.push_back(s.backward_ms);
                        state.SetIterationTime(s.ms / 1e3);
                    }
                    state.counters["count"] = out.count;
                    state.counters["forward_ms"] = mean(out.forward_ms, first);
                    state.counters["backward_ms"] = mean(out.backward_ms, first);
                    set_rate(state, out.training_flops, mean(out.ms, first));
                } catch (const std::exception& e) {
                    out.error = e.what();
                    state.SkipWithError(e.what());
                    training.reset();  // the next repetition starts again, with a new session
                    current = -2;
                }
            }));
    }
    for (auto* b : registered)
        b->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(timing.iterations)
            ->Repetitions(timing.repetitions);

    benchmark::ConsoleReporter display;
    display.SetOutputStream(&std::cerr);
    display.SetErrorStream(&std::cerr);
    benchmark::RunSpecifiedBenchmarks(&display);
    benchmark::Shutdown();
    if (training && current == -1) training->finish(run);
    training.reset();
    run.stats = output::compute_stats(run.samples_ms, run.batch, run.flops_per_step);
    return samples;
}

}  // namespace harness::run
