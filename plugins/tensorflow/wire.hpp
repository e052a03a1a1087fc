// The few protobuf messages the TensorFlow backend exchanges with TensorFlow's C API, written and
// read as protobuf's wire format: no protobuf library is needed at build or run time (TensorFlow
// carries its own, of a version no Debian package matches). Field numbers are those of
// tensorflow/core/protobuf/config.proto, rewriter_config.proto and
// tensorflow/core/framework/step_stats.proto, graph.proto and node_def.proto; docs/backends.md
// lists the ones used.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hb_tensorflow::wire {

// Appends fields to a message.
class Writer {
public:
    Writer& varint(int field, uint64_t value);
    Writer& message(int field, const Writer& nested);
    Writer& text(int field, std::string_view value);
    const std::string& bytes() const { return bytes_; }

private:
    void raw_varint(uint64_t value);
    std::string bytes_;
};

// One field of a message as read: its number, its wire type and its value (a varint, or the
// bytes of a length-delimited field).
struct Field {
    int number = 0;
    int wire_type = 0;  // 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit
    uint64_t value = 0;
    std::string_view bytes;
};

// The fields of one message in order; throws std::runtime_error on bytes that are not a message.
std::vector<Field> read_fields(std::string_view message);

// ConfigProto: the session's thread pools and XLA's auto-clustering.
struct SessionConfig {
    int intra_op_threads = 1;
    int inter_op_threads = 1;
    bool xla = false;  // GraphOptions.optimizer_options.global_jit_level = ON_2
};
std::string config_proto(const SessionConfig& config);

// RunOptions asking for a software trace (the step's per-node statistics).
std::string traced_run_options();

// One executed node of RunMetadata.step_stats: microseconds and nanoseconds since the epoch.
struct NodeStats {
    std::string device;
    std::string node_name;
    std::string timeline_label;  // "name = OpType(inputs)"
    int64_t thread_id = 0;
    int64_t start_ns = 0;  // all_start
    int64_t end_ns = 0;    // all_start + all_end_rel
};

// Every node of every device in a serialised RunMetadata.
std::vector<NodeStats> read_step_stats(std::string_view run_metadata);

// The op type a timeline label names ("conv/Conv2D = Conv2D(x, w)" gives "Conv2D"), or "".
std::string op_type_of_label(std::string_view label);

// One NodeDef of a GraphDef: its name, its inputs as written ("x", "x:1", "^x" for a control
// input) and the node's serialised bytes.
struct GraphNode {
    std::string_view name;
    std::vector<std::string_view> inputs;
    std::string_view bytes;
};

// The nodes of a serialised GraphDef, in order.
std::vector<GraphNode> graph_nodes(std::string_view graph_def);

// The GraphDef with only the nodes `keep` says yes to; its other fields (versions, library) as
// they were.
std::string graph_with_nodes(std::string_view graph_def,
                             const std::function<bool(std::string_view name)>& keep);

// A node's identity independent of how protobuf ordered its attribute map (whose order is not
// kept from one process to another): its fields in order, its attributes sorted.
std::string canonical_node(std::string_view node_def);

}  // namespace hb_tensorflow::wire
