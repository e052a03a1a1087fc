#include "op_events.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace hb_libtorch::profile {
namespace {

constexpr std::string_view kEnginePrefix = "autograd::engine::evaluate_function: ";
constexpr std::string_view kAutogradPrefix = "torch::autograd::";

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

void SequenceMap::add(uint64_t begin, uint64_t end, Region owner) {
    if (end <= begin) return;
    if (!ranges_.empty() && begin < ranges_.back().end)
        throw std::logic_error("SequenceMap: ranges must be added in increasing order");
    ranges_.push_back({begin, end, owner});
}

const Region* SequenceMap::find(int64_t sequence_nr) const {
    if (sequence_nr < 0) return nullptr;
    const auto n = static_cast<uint64_t>(sequence_nr);
    // The first range that begins after n; the one before it is the only candidate.
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), n,
                               [](uint64_t v, const Range& r) { return v < r.begin; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return n < it->end ? &it->owner : nullptr;
}

const char* NameTable::intern(std::string_view name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second->c_str();
    auto owned = std::make_unique<std::string>(name);
    const char* s = owned->c_str();
    names_.emplace(std::string_view(*owned), std::move(owned));
    return s;
}

OpRecord* TrackRecorder::start(std::string_view name, int64_t sequence_nr, bool node,
                               Region region) {
    if (depth_++ > 0) {
        // The engine's record of a node (LibTorch 2.x) lacks the node's sequence number, which
        // the node's own record, nested in it, carries.
        if (node && sequence_nr >= 0 && !records_.empty()) {
            OpRecord& outer = records_.back();
            if (!outer.finished && outer.node && outer.sequence_nr < 0)
                outer.sequence_nr = sequence_nr;
        }
        return nullptr;
    }
    OpRecord& r = records_.emplace_back();
    r.name = names_.intern(name);
    r.sequence_nr = sequence_nr;
    r.node = node;
    r.region = region;
    return &r;
}

OpRecord* TrackRecorder::end() {
    if (depth_ == 0) return nullptr;
    if (--depth_ > 0 || records_.empty() || records_.back().finished) return nullptr;
    records_.back().finished = true;
    return &records_.back();
}

bool TrackRecorder::nested_unneeded() const {
    if (depth_ == 0 || records_.empty() || records_.back().finished) return false;
    const OpRecord& outer = records_.back();
    return !(outer.node && outer.sequence_nr < 0);
}

std::string_view short_name(std::string_view name) {
    if (starts_with(name, kEnginePrefix)) name.remove_prefix(kEnginePrefix.size());
    if (starts_with(name, kAutogradPrefix)) name.remove_prefix(kAutogradPrefix.size());
    return name;
}

bool is_engine_node(std::string_view name) {
    return starts_with(name, kEnginePrefix);
}

Attribution Attributor::operator()(const OpRecord& op) {
    const Region& r = op.region;
    switch (r.part) {
        case Part::forward:
            return {r.layer, HB_PHASE_FORWARD};
        case Part::loss:
            return {-1, HB_PHASE_LOSS};
        case Part::read_back:
            return {-1, device_ ? HB_PHASE_TRANSFER : HB_PHASE_LOSS};
        case Part::update:
            return {r.layer, HB_PHASE_UPDATE};
        case Part::stage:
            return {-1, device_ ? HB_PHASE_TRANSFER : HB_PHASE_REORDER};
        case Part::backward:
            break;
        case Part::zero_grad:
        case Part::none:
            return {-1, HB_PHASE_OTHER};
    }
    if (!op.node) return {-1, nodes_seen_ ? HB_PHASE_OTHER : HB_PHASE_LOSS};
    nodes_seen_ = true;
    const std::string_view name = short_name(op.name);
    if (name == "AccumulateGrad") return {last_node_layer_, HB_PHASE_BACKWARD_WEIGHTS};
    if (const Region* owner = map_.find(op.sequence_nr)) {
        if (owner->part == Part::forward) {
            last_node_layer_ = owner->layer;
            return {owner->layer, HB_PHASE_BACKWARD};
        }
        last_node_layer_ = -1;
        return {-1, owner->part == Part::loss ? HB_PHASE_LOSS : HB_PHASE_OTHER};
    }
    last_node_layer_ = -1;
    return {-1, name == "GraphRoot" ? HB_PHASE_LOSS : HB_PHASE_BACKWARD};
}

void add_events(const std::vector<Track>& tracks, const SequenceMap& map, bool device,
                hb::EventLog& log) {
    struct Pending {
        const OpRecord* op;
        Attribution attribution;
        const std::string* track;
    };
    std::vector<Pending> pending;
    std::map<int64_t, std::string> streams;
    Attributor attribute(map, device);
    for (const Track& track : tracks) {
        attribute.new_track();
        for (const OpRecord& op : *track.records) {
            if (!op.finished) continue;
            const std::string* name = &track.name;
            if (track.by_stream) {
                auto [it, added] = streams.try_emplace(op.stream);
                if (added) it->second = "stream " + std::to_string(op.stream);
                name = &it->second;
            }
            pending.push_back({&op, attribute(op), name});
        }
    }
    std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
        return a.op->start_ms < b.op->start_ms;
    });
    for (const Pending& p : pending) {
        const OpRecord& op = *p.op;
        log.add(op.node ? short_name(op.name) : std::string_view(op.name), p.attribution.layer,
                p.attribution.phase, op.start_ms, op.end_ms, *p.track);
    }
}

size_t MarkPool::shortfall() const {
    return used_ < capacity_ ? 0 : std::max<size_t>(256, capacity_ / 2);
}

uint32_t MarkPool::take() {
    if (used_ >= capacity_) throw std::logic_error("MarkPool: every mark is taken");
    return static_cast<uint32_t>(used_++);
}

}  // namespace hb_libtorch::profile
