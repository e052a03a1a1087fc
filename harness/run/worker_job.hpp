// What a worker process is asked to do (`harness __worker`): one backend of a config, timed or
// captured for a check, and the command line that says so (docs/design.md §6).
#pragma once

#include "config/config.hpp"
#include "model/graph.hpp"
#include "output/record.hpp"
#include "run/profiling.hpp"

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace harness::run {

struct StepCounts {
    int warmup = -1, iterations = -1;  // negative = from the config
};

// A plugin run with its default options: a check's baseline named by plugin, not by entry.
struct PluginDefaults {
    std::string plugin, device = "cpu";
};

// A conformance capture instead of a timed run: `overrides.iterations` steps without warm-up,
// their gradients and the state after each written into `dir` as .npy files. Then, with an
// `anchor` (another capture's dir), steps 2 to `anchored` + 1 once more, step k from the state
// that capture had after step k - 1 and on step k's batch: their gradients as `anchored-k/`.
struct Capture {
    std::string dir;
    std::string anchor;
    int anchored = 0;
};

// `harness layers` (docs/layers.md): the model's whole step and each of its layer configurations
// (model/layer_units.hpp) timed by Google Benchmark instead of a timed run.
struct LayerTiming {
    std::string units;       // a POSIX extended regex: the configurations whose names it matches
    int repetitions = 5;     // Google Benchmark's repetitions of each
    int iterations = 3;      // steps per repetition (after the entry's warm-up steps)
    std::string gbench_out;  // where Google Benchmark writes its JSON
    std::string units_out;   // where the worker writes every configuration's samples
};

struct WorkerJob {
    std::variant<int, PluginDefaults> backend;  // the config's backend entry, or a plugin
    // Plugin options over the entry's own, key by key (the check's oracle in float64, each
    // member of its rounding-noise ensemble). The job file carries the entry with them applied.
    std::map<std::string, std::string> options;
    StepCounts overrides;
    std::string result_path;
    std::optional<Capture> capture;           // absent: a timed run
    Profiling profiling;                      // of a timed run
    std::optional<LayerTiming> layer_timing;  // instead of a timed run
    // Non-negative: the graph is layer configuration `unit` of the model alone
    // (model::unit_graph of model::layer_units), not the model.
    int unit = -1;
    // Positive: a data-parallel run of this many ranks (config.parallel; docs/parallel.md), each
    // rank a worker; more than one are launched through mpirun.
    int ranks = 0;
    bool same_batch = false;  // every rank trains on the same batch (the rank check)
    // Non-negative: the worker writes its step events here (run/step_events.hpp).
    int progress_fd = -1;
    // Non-negative: before each timed step the worker reads one byte here, and takes the step
    // only for an 's' (a paired worker, run/live_worker.hpp); the end of the pipe stops it.
    int gate_fd = -1;
};

config::BackendEntry entry_for(const config::RunConfig& config, const WorkerJob& job);

// What a row says about an entry before anything has run: names, options, step counts, sizes
// (of `graph`, the config's model).
output::BackendRun describe_entry(const config::RunConfig& config,
                                  const config::BackendEntry& entry, const StepCounts& overrides,
                                  const model::Graph& graph);

// The command line that makes `harness` (at path `harness`) run this job, written to `job_file`
// (run/job_file.hpp): through mpirun when it has more than one rank (`mpirun` is mpirun's path;
// docs/parallel.md).
std::vector<std::string> worker_arguments(const std::string& harness, const std::string& job_file,
                                          const WorkerJob& job, const config::RunConfig& config,
                                          const std::string& mpirun = "mpirun");

// Where rank `rank` of a data-parallel job writes its row: rank 0 (and any other job) at
// `result_path`, rank r at `result_path`.rank-r.
std::string rank_result_path(const std::string& result_path, int rank);

}  // namespace harness::run
