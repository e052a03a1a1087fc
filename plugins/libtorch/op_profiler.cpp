#include "op_profiler.hpp"

#include "device_marks.hpp"
#include "hb/plugin.hpp"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>

#include <string>

namespace hb_libtorch {
namespace {

// The profiled step of the process, if any: RecordFunction's callbacks are plain functions.
std::atomic<OpProfiler*> active_profiler{nullptr};
std::atomic<uint64_t> profiled_steps{0};

// The calling thread's track in the profiled step numbered `generation`.
struct ThreadSlot {
    uint64_t generation = 0;
    profile::TrackRecorder* recorder = nullptr;
};
thread_local ThreadSlot thread_slot;

std::unique_ptr<at::ObserverContext> start_callback(const at::RecordFunction& fn) {
    if (OpProfiler* p = active_profiler.load(std::memory_order_acquire)) p->on_start(fn);
    return nullptr;
}

void end_callback(const at::RecordFunction&, at::ObserverContext*) {
    if (OpProfiler* p = active_profiler.load(std::memory_order_acquire)) p->on_end();
}

}  // namespace

OpProfiler::OpProfiler(const c10::Device& device) : cuda_(device.is_cuda()) {
    if (cuda_) marks_ = std::make_unique<DeviceMarks>(device);
}

OpProfiler::~OpProfiler() = default;

void OpProfiler::set_enabled(bool enabled) {
    log_.set_enabled(enabled);
}

OpProfiler::Step::Step(OpProfiler& profiler) {
    profiler.log_.begin_step();
    if (!profiler.enabled()) return;
    OpProfiler* none = nullptr;
    if (!active_profiler.compare_exchange_strong(none, &profiler))
        throw hb::Error("profiling: another session of this process is running a profiled step");
    active_ = &profiler;
    try {
        profiler.begin_step();
        handle_ = at::addThreadLocalCallback(
            at::RecordFunctionCallback(start_callback, end_callback)
                .needsInputs(false)
                .needsOutputs(false)
                .needsIds(false)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    } catch (...) {
        active_profiler.store(nullptr);
        throw;
    }
}

OpProfiler::Step::~Step() {
    if (handle_) at::removeCallback(handle_);
    if (active_) active_profiler.store(nullptr);
}

void OpProfiler::Step::finish() {
    if (!active_) return;
    at::removeCallback(handle_);
    handle_ = 0;
    active_->finish_step();
}

void OpProfiler::begin_step() {
    tracks_.clear();
    sequence_map_.clear();
    layer_.store(-1);
    part_.store(static_cast<uint8_t>(profile::Part::none));
    timed_as_ = nullptr;
    generation_ = ++profiled_steps;
    track();  // the step's own thread is the first track, "main"
    if (marks_) marks_->begin_step();
}

profile::TrackRecorder& OpProfiler::track() {
    ThreadSlot& slot = thread_slot;
    if (slot.generation == generation_ && slot.recorder) return *slot.recorder;
    const std::lock_guard<std::mutex> lock(tracks_mutex_);
    auto t = std::make_unique<ThreadTrack>();
    t->name = tracks_.empty() ? "main" : "thread " + std::to_string(tracks_.size());
    slot = {generation_, &t->recorder};
    tracks_.push_back(std::move(t));
    return *slot.recorder;
}

void OpProfiler::start_record(profile::OpRecord& r) {
    if (marks_)
        r.start_mark = marks_->record(r.stream);
    else
        r.start_ms = log_.now_ms();
}

void OpProfiler::end_record(profile::OpRecord& r) {
    if (marks_) {
        int64_t stream = 0;
        r.end_mark = marks_->record(stream);
    } else {
        r.end_ms = log_.now_ms();
    }
}

void OpProfiler::on_start(const at::RecordFunction& fn) {
    const char* name = fn.name();
    const std::string_view view = name ? name : "";
    const bool node =
        fn.scope() == at::RecordScope::BACKWARD_FUNCTION || profile::is_engine_node(view);
    const profile::Region region{layer_.load(std::memory_order_relaxed),
                                 static_cast<profile::Part>(part_.load(std::memory_order_relaxed))};
    profile::TrackRecorder& t = track();
    profile::OpRecord* r = t.start(view, fn.seqNr(), node, region);
    // The operations nested in this one are its own work: RecordFunction is switched off on this
    // thread until it ends, so that they cost what they cost unprofiled. (A node's own record,
    // nested in the engine's, is awaited for its sequence number first.) The clock is read last
    // here and first at the end, so that the profiler's own work stays outside the event.
    if (!t.quiet && t.nested_unneeded()) {
        at::enableRecordFunction(false);
        t.quiet = true;
    }
    if (r) start_record(*r);
}

void OpProfiler::close_record(profile::TrackRecorder& t) {
    if (profile::OpRecord* r = t.end()) {
        end_record(*r);
        if (t.quiet) {
            at::enableRecordFunction(true);
            t.quiet = false;
        }
    }
}

void OpProfiler::on_end() {
    close_record(track());
}

void OpProfiler::begin(profile::Part part, int32_t layer, const char* timed_as) {
    sequence_begin_ = at::sequence_number::peek();
    layer_.store(layer, std::memory_order_relaxed);
    part_.store(static_cast<uint8_t>(part), std::memory_order_relaxed);
    timed_as_ = timed_as;
    if (timed_as)
        if (profile::OpRecord* r = track().start(timed_as, -1, false, {layer, part}))
            start_record(*r);
}

void OpProfiler::end() {
    const profile::Region region{layer_.load(std::memory_order_relaxed),
                                 static_cast<profile::Part>(part_.load(std::memory_order_relaxed))};
    if (timed_as_) {
        // The operators the part ran are nested in its own event, which quieted RecordFunction
        // as an operator's event does.
        close_record(track());
        timed_as_ = nullptr;
    }
    sequence_map_.add(sequence_begin_, at::sequence_number::peek(), region);
    layer_.store(-1, std::memory_order_relaxed);
    part_.store(static_cast<uint8_t>(profile::Part::none), std::memory_order_relaxed);
}

void OpProfiler::finish_step() {
    std::vector<profile::Track> tracks;
    for (const auto& t : tracks_) {
        std::vector<profile::OpRecord>& records = t->recorder.records();
        if (marks_)
            for (profile::OpRecord& r : records)
                if (r.finished) {
                    r.start_ms = marks_->elapsed_ms(r.start_mark);
                    r.end_ms = marks_->elapsed_ms(r.end_mark);
                }
        tracks.push_back({t->name, &records, cuda_});
    }
    profile::add_events(tracks, sequence_map_, cuda_, log_);
}

}  // namespace hb_libtorch
