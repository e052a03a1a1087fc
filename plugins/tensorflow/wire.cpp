#include "wire.hpp"

#include <algorithm>
#include <stdexcept>

namespace hb_tensorflow::wire {
namespace {

// ConfigProto (config.proto).
constexpr int kIntraOpThreads = 2;
constexpr int kInterOpThreads = 5;
constexpr int kGraphOptions = 10;
// GraphOptions, OptimizerOptions.
constexpr int kOptimizerOptions = 3;
constexpr int kGlobalJitLevel = 5;
constexpr uint64_t kJitOn2 = 2;
// RunOptions: trace_level SOFTWARE_TRACE.
constexpr int kTraceLevel = 1;
constexpr uint64_t kSoftwareTrace = 1;
// RunMetadata, StepStats, DeviceStepStats, NodeExecStats (step_stats.proto).
constexpr int kStepStats = 1;
constexpr int kDevStats = 1;
constexpr int kDevice = 1;
constexpr int kNodeStats = 2;
constexpr int kNodeName = 1;
constexpr int kAllStartMicros = 2;
constexpr int kAllEndRelMicros = 5;
constexpr int kTimelineLabel = 8;
constexpr int kThreadId = 10;
constexpr int kAllStartNanos = 13;
constexpr int kAllEndRelNanos = 16;
// GraphDef (graph.proto), NodeDef (node_def.proto).
constexpr int kNode = 1;
constexpr int kNodeDefName = 1;
constexpr int kNodeDefInput = 3;
constexpr int kNodeDefAttr = 5;

class Cursor {
public:
    explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
    bool done() const { return at_ >= bytes_.size(); }

    uint64_t varint() {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (done()) throw std::runtime_error("protobuf message: a varint runs past the end");
            const auto byte = static_cast<unsigned char>(bytes_[at_++]);
            value |= uint64_t(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return value;
        }
        throw std::runtime_error("protobuf message: a varint longer than 10 bytes");
    }

    std::string_view take(uint64_t n) {
        if (n > bytes_.size() - at_)
            throw std::runtime_error("protobuf message: a field runs past the end");
        const std::string_view out = bytes_.substr(at_, n);
        at_ += n;
        return out;
    }

private:
    std::string_view bytes_;
    size_t at_ = 0;
};

}  // namespace

void Writer::raw_varint(uint64_t value) {
    while (value >= 0x80) {
        bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
}

Writer& Writer::varint(int field, uint64_t value) {
    raw_varint(uint64_t(field) << 3);
    raw_varint(value);
    return *this;
}

Writer& Writer::message(int field, const Writer& nested) {
    return text(field, nested.bytes());
}

Writer& Writer::text(int field, std::string_view value) {
    raw_varint((uint64_t(field) << 3) | 2);
    raw_varint(value.size());
    bytes_ += value;
    return *this;
}

std::vector<Field> read_fields(std::string_view message) {
    std::vector<Field> fields;
    Cursor in(message);
    while (!in.done()) {
        const uint64_t key = in.varint();
        Field f;
        f.number = static_cast<int>(key >> 3);
        f.wire_type = static_cast<int>(key & 7);
        if (f.number == 0) throw std::runtime_error("protobuf message: field number 0");
        switch (f.wire_type) {
            case 0:
                f.value = in.varint();
                break;
            case 1:
                f.bytes = in.take(8);
                break;
            case 2:
                f.bytes = in.take(in.varint());
                break;
            case 5:
                f.bytes = in.take(4);
                break;
            default:
                throw std::runtime_error("protobuf message: unknown wire type " +
                                         std::to_string(f.wire_type));
        }
        fields.push_back(f);
    }
    return fields;
}

std::string config_proto(const SessionConfig& config) {
    Writer w;
    w.varint(kIntraOpThreads, static_cast<uint64_t>(config.intra_op_threads))
        .varint(kInterOpThreads, static_cast<uint64_t>(config.inter_op_threads));
    if (config.xla)
        w.message(kGraphOptions,
                  Writer().message(kOptimizerOptions, Writer().varint(kGlobalJitLevel, kJitOn2)));
    return w.bytes();
}

std::string traced_run_options() {
    return Writer().varint(kTraceLevel, kSoftwareTrace).bytes();
}

namespace {

NodeStats read_node(std::string_view message, const std::string& device) {
    NodeStats n;
    n.device = device;
    int64_t start_us = 0, end_rel_us = 0, start_ns = 0, end_rel_ns = 0;
    for (const Field& f : read_fields(message)) {
        const auto v = static_cast<int64_t>(f.value);
        switch (f.number) {
            case kNodeName:
                n.node_name = std::string(f.bytes);
                break;
            case kTimelineLabel:
                n.timeline_label = std::string(f.bytes);
                break;
            case kThreadId:
                n.thread_id = v;
                break;
            case kAllStartMicros:
                start_us = v;
                break;
            case kAllEndRelMicros:
                end_rel_us = v;
                break;
            case kAllStartNanos:
                start_ns = v;
                break;
            case kAllEndRelNanos:
                end_rel_ns = v;
                break;
            default:
                break;
        }
    }
    // The nanosecond fields where TensorFlow filled them, else the microsecond ones.
    n.start_ns = start_ns != 0 ? start_ns : start_us * 1000;
    n.end_ns = n.start_ns + (start_ns != 0 ? end_rel_ns : end_rel_us * 1000);
    return n;
}

}  // namespace

std::vector<NodeStats> read_step_stats(std::string_view run_metadata) {
    std::vector<NodeStats> nodes;
    for (const Field& stats : read_fields(run_metadata)) {
        if (stats.number != kStepStats || stats.wire_type != 2) continue;
        for (const Field& dev : read_fields(stats.bytes)) {
            if (dev.number != kDevStats || dev.wire_type != 2) continue;
            std::string device;
            const std::vector<Field> fields = read_fields(dev.bytes);
            for (const Field& f : fields)
                if (f.number == kDevice && f.wire_type == 2) device = std::string(f.bytes);
            for (const Field& f : fields)
                if (f.number == kNodeStats && f.wire_type == 2)
                    nodes.push_back(read_node(f.bytes, device));
        }
    }
    return nodes;
}

std::string op_type_of_label(std::string_view label) {
    const size_t eq = label.find(" = ");
    if (eq == std::string_view::npos) return "";
    const size_t from = eq + 3;
    const size_t paren = label.find('(', from);
    return std::string(label.substr(from, paren == std::string_view::npos ? paren : paren - from));
}

namespace {

// A field as it was written, for a message copied field by field.
void copy_field(Writer& to, const Field& f) {
    switch (f.wire_type) {
        case 0:
            to.varint(f.number, f.value);
            break;
        case 2:
            to.text(f.number, f.bytes);
            break;
        default:
            throw std::runtime_error("protobuf message: field " + std::to_string(f.number) +
                                     " of wire type " + std::to_string(f.wire_type) +
                                     " where a GraphDef has none");
    }
}

}  // namespace

std::vector<GraphNode> graph_nodes(std::string_view graph_def) {
    std::vector<GraphNode> nodes;
    for (const Field& f : read_fields(graph_def)) {
        if (f.number != kNode || f.wire_type != 2) continue;
        GraphNode node;
        node.bytes = f.bytes;
        for (const Field& g : read_fields(f.bytes)) {
            if (g.wire_type != 2) continue;
            if (g.number == kNodeDefName) node.name = g.bytes;
            if (g.number == kNodeDefInput) node.inputs.push_back(g.bytes);
        }
        nodes.push_back(node);
    }
    return nodes;
}

std::string graph_with_nodes(std::string_view graph_def,
                             const std::function<bool(std::string_view name)>& keep) {
    Writer out;
    for (const Field& f : read_fields(graph_def)) {
        if (f.number == kNode && f.wire_type == 2) {
            std::string_view name;
            for (const Field& g : read_fields(f.bytes))
                if (g.number == kNodeDefName && g.wire_type == 2) name = g.bytes;
            if (!keep(name)) continue;
        }
        copy_field(out, f);
    }
    return out.bytes();
}

std::string canonical_node(std::string_view node_def) {
    Writer out;
    std::vector<std::string_view> attributes;
    for (const Field& f : read_fields(node_def)) {
        if (f.number == kNodeDefAttr && f.wire_type == 2)
            attributes.push_back(f.bytes);
        else
            copy_field(out, f);
    }
    std::sort(attributes.begin(), attributes.end());
    for (std::string_view a : attributes) out.text(kNodeDefAttr, a);
    return out.bytes();
}

}  // namespace hb_tensorflow::wire
