// What one backend run produced: the unit the runner hands to the reporters (table, CSV, JSON).
#pragma once

#include "hb/manifest.hpp"
#include "output/ceilings.hpp"
#include "output/profile.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::output {

// What names a row: its backend, and for a data-parallel row (ranks > 0) its rank count, since a
// backend has a row per rank count (docs/parallel.md).
std::string row_name(const std::string& backend, int ranks);

// The version of the results' columns and fields (docs/results-schema.md), in the CSV and the JSON
// sidecar.
inline constexpr int kSchemaVersion = 1;

// docs/design.md §6. `ok` is the only status whose timings count. `interrupted`: the run was
// stopped (SIGINT, SIGTERM) and keeps the timed steps it completed, a partial row.
enum class Status { ok, skipped, failed, crashed, timeout, oom, mismatch, interrupted };
const char* to_string(Status s);
std::optional<Status> status_from_string(const std::string& s);

struct Stats {
    double median_ms = 0, mean_ms = 0, stddev_ms = 0, min_ms = 0, max_ms = 0;
    double p10_ms = 0, p90_ms = 0, iqr_ms = 0, cv = 0;
    double images_per_s = 0, gflops = 0;  // from the median
    bool noisy = false;                   // IQR / median > 10%
};
// Samples in milliseconds; batch and flops_per_step turn the median into throughput.
Stats compute_stats(const std::vector<double>& samples_ms, int64_t batch, int64_t flops_per_step);

// One state of the machine at the start of an invocation that can spoil timings: CPU frequency
// scaling, load, other GPU processes, GPU clocks (docs/design.md §6).
struct EnvironmentFinding {
    std::string check;  // "cpu_scaling", "load_average", "gpu_processes", "gpu_clocks"
    std::string state;  // short, without ';' or '=': "performance", "powersave", "0.42", "unknown"
    std::string message;   // a sentence for the console
    bool warning = false;  // the state spoils timings
};

// How many rounds an invocation runs and when it stops (docs/statistics.md, "Rounds in one run"):
// at least min_rounds, at most max_rounds; in between, after a second round or later, it stops
// once every backend's interval against the baseline reaches within `target` of its ratio, or
// before a round that would end past `budget_s`.
struct RoundPlan {
    int min_rounds = 1, max_rounds = 1;
    double target = 0;     // a share of the ratio (0.02: ±2%); 0: none
    double budget_s = 0;   // seconds from the start of the first round; 0: none
    std::string baseline;  // the backend the others are compared with; "": none
    // Once the rounds are over: why no other was run ("target", "budget", "max_rounds",
    // "nothing_ran"); "" while they run, and for an interrupted run.
    std::string stopped_by;
    // Each round's workers alive together, their timed steps interleaved (docs/statistics.md,
    // "Paired steps"); false: one worker after another.
    bool paired_steps = false;
};

// Provenance shared by every row of one invocation.
struct Provenance {
    std::string utc_time, harness_version, git_commit;
    std::string config_name, config_path, config_sha256;
    std::string host, cpu_model, gpu_name, gpu_driver;
    uint64_t seed = 0;
    std::string placement;
    // The seed of the rounds' drawn orders (docs/statistics.md, "Rounds"); none for one round,
    // which runs in the config's order.
    std::optional<uint64_t> order_seed;
    RoundPlan rounds;
    std::vector<EnvironmentFinding> environment;  // one per check made, in the order made
    // Measured once the rounds end, one per thread count a CPU row ran on (docs/roofline.md).
    std::vector<Ceilings> ceilings;
    std::vector<KindCost> step_cost;  // with the ceilings, by layer kind in the graph's order
};

// The findings that are warnings, as "check=state;check=state" ("" when none): the CSV's
// environment_warnings.
std::string environment_warnings(const Provenance& p);
// The same warnings for a person, one "***WARNING*** message" line each ("" when none): under the
// console table, and on stderr before the first backend runs.
std::string environment_warning_lines(const Provenance& p);

// A data-parallel row (docs/parallel.md): its ranks and how their gradients were averaged. The
// row's batch, FLOPs and images/s are the global step's (every rank's together), its step times
// the slowest rank's.
struct ParallelRun {
    int ranks = 1;
    std::string communicator;     // "mpi", "nccl"
    std::string algorithm;        // the all-reduce as the communicator does it
    bool oversubscribed = false;  // more ranks than logical processors on some machine
    bool overlap = true;          // buckets started during the backward pass
    int buckets = 0;
    int64_t gradient_bytes = 0;
    // Per timed step, the slowest rank's time in the harness's communication calls.
    std::vector<double> communication_ms;
    // One all-reduce of gradient_bytes timed alone (nccl-tests): its time, algorithm bandwidth
    // (bytes / time) and bus bandwidth (algbw * 2 (ranks - 1) / ranks), in GB/s.
    double allreduce_ms = 0, algbw_gbps = 0, busbw_gbps = 0;
    // Against the same backend at one rank in the same invocation: its median step over this
    // one's (weak scaling); NaN when there is none, or when either was oversubscribed.
    double scaling_efficiency = 0;
};

struct BackendRun {
    // Identity
    std::string backend;  // the config entry's name
    std::string plugin, plugin_version, device;
    std::string placement;  // the entry's ("" in results from before entries had their own)
    std::map<std::string, std::string> options;  // what the config's entry set
    // Every option the session ran with: those set, and each declared default left (ABI 2.5).
    std::map<std::string, std::string> options_in_force;
    std::map<std::string, std::string> environment;  // what the entry set for its worker
    std::map<std::string, std::string> libraries;    // library name -> version
    std::optional<hb::Math> math;                    // from the manifest; none = unknown
    int threads = 0;                                 // 0 = unknown
    std::string check;  // conformance: "", "pass", "mismatch", "stale" (for another build)
    int round = 1;      // which round of the invocation this run was (docs/statistics.md)

    Status status = Status::failed;
    std::string message;  // reason for skipped / failed / crashed / ...
    // The plugin answered HB_UNSUPPORTED: it does not implement something the entry asked of it
    // (an option's value on this device, a model feature); the status is failed.
    bool unsupported = false;
    bool nonfinite_loss = false;

    int warmup = 0, iterations = 0;
    int64_t batch = 0, flops_per_step = 0;
    double setup_ms = 0;
    std::vector<double> warmup_ms, samples_ms;                  // every sample kept
    std::vector<double> warmup_losses, losses;                  // every step's loss
    std::vector<double> forward_ms, backward_ms, optimizer_ms;  // per timed step, when reported
    // Per timed step: the worker's CPU time (user + system, all its threads) during the step.
    std::vector<double> cpu_ms;
    // Per timed step of a round of paired steps (docs/statistics.md, "Paired steps"): its place,
    // from 0, in the round's sequence of every worker's timed steps; empty where the round ran
    // its workers one after another.
    std::vector<int> step_sequence;
    uint64_t peak_memory_bytes = 0;
    // The step's roofline bound on this machine at the row's thread count (docs/roofline.md);
    // 0 where none was measured (a GPU or data-parallel row, an interrupted run).
    double bound_ms = 0;
    std::string manifest_json;  // "{}" when none
    std::string log;  // what the worker's libraries wrote to stderr (its tail; "" when nothing)
    std::optional<Profile> profile;       // when profiling was asked for
    std::optional<ParallelRun> parallel;  // a data-parallel run

    // Whether the first step's loss agrees with the other backends' of the invocation (same
    // weights, same data): "ok", "disagrees", or "" when there was nothing to compare it with
    // (check/loss_agreement.hpp); the detail says against what and how far, for a person.
    std::string loss_agreement, loss_agreement_detail;

    Stats stats;                   // valid when status == ok
    double first_loss() const;     // NaN when no step ran
    double cpu_median_ms() const;  // the median of cpu_ms; NaN when none was recorded
    double last_loss() const;
    // The backend's name, and for a data-parallel row its ranks: "onednn (2 ranks)".
    std::string name() const;
    // The math mode's word ("fp32"), as the CSV and the sidecar write it; "" when unknown.
    std::string math_word() const { return math ? hb::to_string(*math) : ""; }
};

}  // namespace harness::output
