// A data-parallel run in one rank's worker (docs/parallel.md): the step in its two halves with
// the gradients averaged across ranks between them; the slowest rank's times in rank 0's row.
#pragma once

#include "config/config.hpp"
#include "model/graph.hpp"
#include "output/record.hpp"
#include "plugin_host/plugin_library.hpp"
#include "run/worker_job.hpp"

#include <functional>
#include <memory>

namespace harness::parallel {
class World;
}  // namespace harness::parallel

namespace harness::run {

// The ranks of `job`: those mpirun launched (MPI initialised now, before any plugin library and
// its threads exist), or this process alone. Throws when they are not the job's rank count.
// Where several ranks share a machine and OMP_NUM_THREADS is not set, it becomes that machine's
// logical processors shared among them.
parallel::World& join_ranks(const WorkerJob& job);

// This worker's rank, known before join_ranks from mpirun's environment; 0 without mpirun.
int launched_rank();

// The timed run or capture of `job` on `world`'s ranks; `stop` is polled between steps (every rank
// stops after the same step).
void run_data_parallel(const WorkerJob& job, const config::RunConfig& config,
                       const config::BackendEntry& entry, model::Graph graph,
                       const plugin_host::PluginLibrary& library, parallel::World& world,
                       const std::function<bool()>& stop, output::BackendRun& run);

}  // namespace harness::run
