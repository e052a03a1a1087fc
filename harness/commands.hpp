// The `harness` commands. Each returns the process exit code (exit_codes.hpp).
#pragma once

#include "exit_codes.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct RunArgs {
    std::string config;
    std::optional<std::string> backends;  // comma-separated entry names; absent = all
    int iterations = -1, warmup = -1;
    int rounds = -1;                       // -1: the config's
    int max_rounds = -1;                   // -1: the config's (--rounds alone: --rounds)
    std::optional<double> target;          // absent: the config's
    std::optional<double> budget_s;        // absent: the config's
    std::optional<uint64_t> order_seed;    // absent: the config's, else drawn
    std::optional<std::string> interleave;  // "steps" or "workers"; absent: the config's
    std::optional<std::string> baseline;   // absent: the config's, else the first CPU entry
    std::string output;
    std::string dump_dir;
    bool json = false;
    bool profile = false;   // profile steps after the timed ones (implied by trace_dir)
    int profile_steps = 5;  // how many
    std::string trace_dir;  // a Chrome trace per backend here; "" = none
    bool quiet = false;     // no progress line on a terminal
};
int run_command(const RunArgs& args);

struct CheckArgs {
    std::string config;
    std::optional<std::string> backends;  // as in RunArgs
    std::optional<std::string> baseline;  // absent: check::kOracle
    int steps = 2;
    bool json = false;
    // Set: check each of the model's layer configurations whose names this POSIX extended
    // regular expression matches (empty: all) alone, with one layer's tolerances
    // (docs/conformance.md "Layer by layer"); no verdict is recorded.
    std::optional<std::string> layers;
    bool quiet = false;  // no progress line on a terminal
    // Set (and `config` empty): the conformance suite of this plugin (check/suite.hpp), its
    // entry on `device`.
    std::optional<std::string> suite;
    // Set: the config's model, data and optimizer checked on this plugin alone, with its
    // defaults, on `device`, in place of the config's entries; no verdict is recorded.
    std::optional<std::string> plugin;
    std::optional<std::string> device;  // of --suite or --plugin; absent: cpu
};
int check_command(const CheckArgs& args);
int check_suite_command(const CheckArgs& args);

struct ReportArgs {
    std::vector<std::string> csvs;
    std::string baseline;  // backend name the others are compared with; empty = none
    std::string output;    // Markdown file; empty = stdout
    double attainable_gflops = 0;
    std::string charts;           // folder for gnuplot charts; empty = none
    bool explain = false;         // also what each entry's one change from its base costs
    std::vector<std::string> by;  // "kind", "layer": where the profiled steps go
};
int report_command(const ReportArgs& args);

struct PublishArgs {
    std::string csv;               // a results CSV of harness run, its JSON sidecar beside it
    std::string to;                // results/NAME; the index is README.md in its parent
    bool allow_unchecked = false;  // publish ok rows without a passing check, marked so
    std::string what;              // what the run shows, for the index; "" = a default sentence
};
int publish_command(const PublishArgs& args);

struct LayersArgs {
    std::string config;
    std::optional<std::string> backends;  // as in RunArgs
    std::string filter;                   // POSIX extended regex over configuration names; "" = all
    std::string json;                     // Google Benchmark JSON here; "" = none
    std::string output;                   // the table as CSV; "" = runs/<config>-layers-<time>.csv
    int repetitions = 5;                  // Google Benchmark repetitions of each benchmark
    int iterations = 3;                   // steps per repetition
    int warmup = -1;                      // untimed steps per session; negative = the config's
    bool quiet = false;                   // no progress line on a terminal
};
int layers_command(const LayersArgs& args);

int list_command(bool json);

// The config's model, and its step's roofline bound with this machine's ceilings measured on
// `threads` threads.
int info_command(const std::string& config, bool json, int threads);

// `harness __describe`: run by `harness list` in a child process per plugin.
int describe_command(const std::string& plugin_file, const std::string& result);

}  // namespace harness
