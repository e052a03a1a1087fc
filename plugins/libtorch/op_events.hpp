// The events of a profiled step (docs/design.md §3 "Profiling"), worked out without LibTorch:
// which part of the step is running, which layer created each autograd node (by its sequence
// number), the outermost operation of each thread, and how each operation becomes an hb_event.
// op_profiler.cpp feeds these from ATen's RecordFunction callbacks; the tests drive them directly.
#pragma once

#include "hb/plugin.h"
#include "hb/profile.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hb_libtorch::profile {

// What the plugin's code is doing when an operation starts; the session says so before each part.
enum class Part : uint8_t {
    none,       // outside the parts below
    stage,      // the batch handed to the device (host placement)
    zero_grad,  // the gradients of the last step zeroed
    forward,    // one layer's forward (with its layer index)
    loss,       // the sum of the loss layers and the backward pass's seed
    backward,   // loss.backward(): autograd's nodes
    update,     // the optimizer (with the layer of the parameter, or -1 for all at once)
    read_back   // the loss read back to the host
};

struct Region {
    int32_t layer = -1;
    Part part = Part::none;
};

// Which part of the forward pass created each autograd node: LibTorch numbers the nodes a thread
// creates in order (at::sequence_number), so the nodes of layer L's forward have the numbers
// [peek() before it, peek() after it). Ranges are added in increasing order.
class SequenceMap {
public:
    void clear() { ranges_.clear(); }
    // Ignores an empty range; throws std::logic_error if `begin` is below the last range's end.
    void add(uint64_t begin, uint64_t end, Region owner);
    // The region whose range holds `sequence_nr`, or nullptr (a negative number is none).
    const Region* find(int64_t sequence_nr) const;
    size_t size() const { return ranges_.size(); }

private:
    struct Range {
        uint64_t begin, end;
        Region owner;
    };
    std::vector<Range> ranges_;
};

// Names kept for the life of the table; one lookup per outermost operation.
class NameTable {
public:
    const char* intern(std::string_view name);

private:
    std::unordered_map<std::string_view, std::unique_ptr<std::string>> names_;
};

// One outermost operation as it was seen on its thread.
struct OpRecord {
    const char* name = "";  // interned
    int64_t sequence_nr = -1;
    bool node = false;  // an autograd node (backward), rather than an operator call
    Region region;      // the part of the step when it started
    // Host milliseconds from the step's start, or filled from device marks after the step.
    double start_ms = 0, end_ms = 0;
    uint32_t start_mark = 0, end_mark = 0;  // device marks (CUDA events), when timed on a device
    int64_t stream = 0;                     // the device stream it was timed on
    bool finished = false;
};

// One thread's operations in a step: a depth counter keeps only the outermost ones (those nested
// in another are that one's work).
class TrackRecorder {
public:
    // Starts an operation; returns the record to time when it is the thread's outermost one,
    // nullptr when it is nested. A node nested in an outermost node without a sequence number
    // (the engine's record around the node's own) gives it its number. The pointer is valid
    // until the next start().
    OpRecord* start(std::string_view name, int64_t sequence_nr, bool node, Region region);
    // Ends the latest operation; returns its record when it was the outermost one. An end without
    // a start (callbacks installed in the middle of an operation) is ignored.
    OpRecord* end();

    int depth() const { return depth_; }
    // Whether the open outermost operation has all it needs from the operations nested in it
    // (none, unless it is a node still without its number): they need not be seen at all.
    bool nested_unneeded() const;
    const std::vector<OpRecord>& records() const { return records_; }
    std::vector<OpRecord>& records() { return records_; }
    void clear() {
        records_.clear();
        depth_ = 0;
    }
    // Whether the thread stopped RecordFunction inside the open outermost operation (the
    // profiler's flag, kept per thread).
    bool quiet = false;

private:
    int depth_ = 0;
    std::vector<OpRecord> records_;
    NameTable names_;
};

// "autograd::engine::evaluate_function: ConvolutionBackward0" -> "ConvolutionBackward0",
// "torch::autograd::AccumulateGrad" -> "AccumulateGrad"; other names unchanged.
std::string_view short_name(std::string_view name);
// Whether a RecordFunction of this name wraps an autograd node on the engine's thread.
bool is_engine_node(std::string_view name);

struct Attribution {
    int32_t layer;
    hb_phase phase;
};

// The layer and phase of each operation (docs/design.md §3's rules), operation by operation in the
// order a track ran them:
// - a layer's forward operations: `forward`, that layer;
// - an autograd node: `backward` with the layer whose forward created it (one node computes the
//   input and parameter gradients together); a node of the loss sum: `loss`; AccumulateGrad, which
//   stores a parameter's gradient, `backward_weights` with the layer of the node that ran just
//   before it on the same track (the engine runs it right after the node that produced its
//   gradient); a node of no known range: `backward`, -1;
// - other operations during the backward pass: `loss` before the first node of the track (the
//   seed), `other` after;
// - the loss sum: `loss`; the loss read back: `transfer` from a device, `loss` on the CPU;
// - the optimizer: `update`, the parameter's layer or -1;
// - staging a batch: `transfer` to a device, `reorder` on the CPU (a copy in host memory);
// - dropping the gradients and anything else: `other`, -1.
class Attributor {
public:
    Attributor(const SequenceMap& map, bool device) : map_(map), device_(device) {}
    // Call at the start of each track.
    void new_track() {
        last_node_layer_ = -1;
        nodes_seen_ = false;
    }
    Attribution operator()(const OpRecord& op);

private:
    const SequenceMap& map_;
    bool device_;
    int32_t last_node_layer_ = -1;
    bool nodes_seen_ = false;
};

// One thread's operations in a step, in the order it ran them, and the track they are shown on:
// the thread's name ("main", "thread 1") or, when timed on a device, the stream's ("stream 0").
struct Track {
    std::string name;
    const std::vector<OpRecord>* records;
    bool by_stream = false;
};

// The events of the threads into `log` (which began the step), each finished operation with its
// attribution, ordered by their start; unfinished ones (an exception in the middle) are dropped.
void add_events(const std::vector<Track>& tracks, const SequenceMap& map, bool device,
                hb::EventLog& log);

// The indices of a step's device marks (CUDA events, two per operation and the step's start),
// taken from a pool that keeps its marks from step to step: it grows by half again (256 at
// least) when every mark is taken, so a profiled step after the first creates none.
class MarkPool {
public:
    void begin_step() { used_ = 0; }
    // How many marks to create before the next take(): 0 while some are free.
    size_t shortfall() const;
    void grown(size_t added) { capacity_ += added; }
    // The next free mark; throws std::logic_error when none is (see shortfall()).
    uint32_t take();
    size_t used() const { return used_; }
    size_t capacity() const { return capacity_; }

private:
    size_t used_ = 0, capacity_ = 0;
};

}  // namespace hb_libtorch::profile
