// `harness layers` in a worker (docs/layers.md): the model's whole step and each selected layer
// configuration alone, timed by Google Benchmark in the backend's own process.
#pragma once

#include "config/config.hpp"
#include "layers/layer_samples.hpp"
#include "model/graph.hpp"
#include "output/record.hpp"
#include "plugin_host/plugin_library.hpp"
#include "run/worker_job.hpp"

#include <functional>

namespace harness::run {

// Registers the whole step ("step") and every configuration of `model` that `timing.units`
// matches as Google Benchmark benchmarks with manual time, runs them, and has Google Benchmark
// write its JSON to `timing.gbench_out`. The whole step's steps and status go into `run`, as a
// timed run's would; each configuration's samples are returned. `stopped` is polled between
// steps: once it says so, what is left is skipped as interrupted.
std::vector<layers::UnitSamples> time_layers(const model::Graph& model,
                                             const config::RunConfig& config,
                                             const config::BackendEntry& entry,
                                             const plugin_host::PluginLibrary& library,
                                             const LayerTiming& timing, output::BackendRun& run,
                                             const std::function<bool()>& stopped);

}  // namespace harness::run
