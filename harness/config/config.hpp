// Run configs (YAML). Every key is validated: an unknown key, a wrong type or an out-of-range
// value is a ConfigError naming the file, line, column and key.
#pragma once

#include "hb/plugin.h"
#include "model/hourglass.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::config {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;  // what() = "FILE:LINE:COL: key 'a.b': message"
};

// Where a value is in the file: its key path ("backends[1].options.threads") and its line and
// column, counted from 0.
struct Place {
    std::string key;
    int line = 0, column = 0;
};

// For a value found wrong after loading (a plugin option against the plugin's declaration):
// throws the ConfigError "FILE:LINE:COL: key 'a.b': message" at its place.
[[noreturn]] void fail_at(const std::string& path, const Place& place, const std::string& message);

// The one of `known` that `key` is a typo of (an edit or two away, by their length), or "".
std::string near_miss(const std::string& key, const std::vector<std::string>& known);

struct BackendEntry {
    std::string name;    // unique label in this config (defaults to the plugin name)
    std::string plugin;  // plugin name: loads hb_<plugin>.so
    std::string device = "cpu";
    hb_placement placement = HB_PLACEMENT_DEVICE;  // the entry's `placement`, else data.placement
    Place placement_place;  // where it is set: the entry's `placement` or data.placement
    std::map<std::string, std::string> options;  // passed to the plugin as strings
    std::map<std::string, Place> option_places;  // where each option is
    // The options the session runs with: `options` and every default its plugin declares for one
    // left unset (plugin_host::check_entries_against_plugins resolves them); `options` until then.
    std::map<std::string, std::string> options_in_force;
    // Set in the entry's worker before any plugin is loaded: what a library reads while it loads
    // (TensorFlow's TF_ENABLE_ONEDNN_OPTS), or threading variables (OMP_*).
    std::map<std::string, std::string> environment;
    int line = 0;  // where the entry starts in the file
    // Per-entry overrides of the run section; negative = use the run section's value.
    int warmup = -1, iterations = -1;
    double timeout_s = -1;
};

// Data-parallel steps (docs/parallel.md): each backend trained by `ranks` processes launched
// through mpirun, the gradients averaged between the two halves of every step.
enum class CommunicatorKind { automatic, mpi, nccl };  // automatic: nccl on cuda, else mpi

struct ParallelConfig {
    std::vector<int>
        ranks;  // the rank counts to run each backend at, ascending; empty: no parallel
    CommunicatorKind communicator = CommunicatorKind::automatic;
    double bucket_mb = 25;  // gradients all-reduced together, in MiB
    bool overlap = true;    // start a bucket's all-reduce during the backward pass
    std::string hostfile;   // mpirun's --hostfile, resolved against the config's folder; "" none
    // Every rank trains on the same batch (the rank conformance check does): otherwise rank r
    // of N takes batch k*N + r at step k.
    bool same_batch = false;
    int line = 0;  // where the section starts in the file
};

struct RunConfig {
    std::string path;    // as given
    std::string name;    // `name:` or the file's stem
    std::string sha256;  // of the file's bytes
    std::string description;

    model::HourglassSpec model;
    hb_optimizer optimizer{};  // RMSProp; defaults per variant (docs/design.md §4)

    uint64_t seed = 1;
    int batches = 2;  // distinct batches, cycled through the steps
    hb_placement placement = HB_PLACEMENT_DEVICE;
    Place placement_place;  // where data.placement is, when set
    // Inputs constant on input_block x input_block pixel blocks (1: every pixel its own draw), so
    // that max-pooling windows tie (docs/design.md §5).
    int input_block = 1;

    int warmup = 3;
    int iterations = 10;
    double timeout_s = 600;  // per backend worker
    // A run is `rounds` rounds: in each, every entry once in a fresh worker, in an order drawn
    // anew from `order_seed` (absent: drawn from the clock, and recorded) (docs/statistics.md).
    int rounds = 1;
    int max_rounds = 0;   // 0: `rounds`
    double target = 0;    // stop once every interval is within this share of its ratio; 0: none
    double budget_s = 0;  // start no round that would end past it; 0: none
    std::optional<uint64_t> order_seed;
    // run.interleave: "steps" (true), each round's workers alive together and their timed steps
    // interleaved, or "workers" (false), one worker after another (docs/statistics.md).
    bool paired_steps = true;
    // The entry the run's table compares the others with; "": the first CPU entry.
    std::string baseline;

    ParallelConfig parallel;

    std::vector<BackendEntry> backends;
};

RunConfig load_config(const std::string& path);  // throws ConfigError
// The config file's bytes, as load_config reads them (and its SHA-256 is of); throws ConfigError.
std::string read_config_bytes(const std::string& path);

const char* to_string(hb_placement p);
const char* to_string(hb_rmsprop_variant v);
const char* to_string(CommunicatorKind c);

}  // namespace harness::config
