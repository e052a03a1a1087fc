#include "run/training.hpp"

#include "data/dump.hpp"
#include "hb/manifest.hpp"
#include "run/step_events.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace harness::run {

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

namespace {
double process_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}
}  // namespace

StepClock::StepClock() : wall_start_(Clock::now()), cpu_start_ms_(process_cpu_ms()) {}

double StepClock::wall_ms() const {
    return ms_since(wall_start_);
}

double StepClock::cpu_ms() const {
    return process_cpu_ms() - cpu_start_ms_;
}

namespace {

std::vector<const float*> pointers(const std::vector<data::HostTensor>& tensors) {
    std::vector<const float*> p;
    for (const auto& t : tensors) p.push_back(t.data());
    return p;
}

// The keys the harness reads from the manifest (include/hb/manifest.hpp); a manifest without them
// is the plugin's defect, and fails the row rather than be taken as float32.
void read_manifest(output::BackendRun& run) {
    const auto defect = [&](const std::string& what) {
        return std::runtime_error("plugin defect: its manifest " + what +
                                  " (hb::manifest in include/hb/manifest.hpp)");
    };
    auto manifest = nlohmann::json::parse(run.manifest_json, nullptr, false);
    if (!manifest.is_object()) throw defect("is not a JSON object");
    if (!manifest.contains("math") || !manifest["math"].is_string())
        throw defect("has no \"math\" (one of " + hb::math_words() + ")");
    const std::string math = manifest["math"].get<std::string>();
    run.math = hb::math_from_string(math);
    if (!run.math) throw defect("says \"math\": \"" + math + "\", none of " + hb::math_words());
    if (!manifest.contains("threads") || !manifest["threads"].is_number_integer())
        throw defect("has no whole number \"threads\"");
    run.threads = manifest["threads"].get<int>();
}

}  // namespace

Training::Training(model::Graph model_graph, const config::RunConfig& config,
                   const config::BackendEntry& entry, const plugin_host::PluginLibrary& library,
                   output::BackendRun& run, bool read_back, bool want_input_gradient)
    : graph(std::move(model_graph)),
      abi_graph(graph),
      state(data::initial_state(graph, config.seed)),
      batches(data::make_batches(graph, config.seed, config.batches, config.input_block)),
      batch_count(config.batches),
      gradients(library.can_read_gradients()),
      input_gradient(want_input_gradient && library.can_read_input_gradient()) {
    std::vector<hb_option> options;
    for (const auto& kv : entry.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi_graph.get();
    desc.optimizer = &config.optimizer;
    desc.device = entry.device.c_str();
    desc.placement = entry.placement;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();
    desc.input_gradient = input_gradient ? 1 : 0;
    desc.read_back = read_back ? 1 : 0;

    const auto setup_start = Clock::now();
    session = std::make_unique<plugin_host::PluginSession>(library, desc);
    session->load_state(pointers(state).data());
    session->set_batches(batch_count, pointers(batches.inputs).data(),
                         pointers(batches.targets).data());
    run.setup_ms = ms_since(setup_start);
}

void Training::step(int k, bool timed, output::BackendRun& run) {
    const StepClock clock;
    hb_step_result r = session->step(k % batch_count);
    record(r, clock, timed, run);
}

void Training::record(const hb_step_result& r, const StepClock& clock, bool timed,
                      output::BackendRun& run) {
    const double cpu_ms = clock.cpu_ms();
    (timed ? run.samples_ms : run.warmup_ms).push_back(clock.wall_ms());
    if (timed) run.cpu_ms.push_back(cpu_ms);
    (timed ? run.losses : run.warmup_losses).push_back(r.loss);
    if (!std::isfinite(r.loss)) run.nonfinite_loss = true;
    if (timed && r.forward_ms >= 0) {
        run.forward_ms.push_back(r.forward_ms);
        run.backward_ms.push_back(r.backward_ms);
        run.optimizer_ms.push_back(r.optimizer_ms);
    }
}

void Training::finish(output::BackendRun& run) {
    run.peak_memory_bytes = session->peak_memory();
    run.manifest_json = session->manifest();
    read_manifest(run);
    run.status = output::Status::ok;
}

void Training::write_tensors(const std::string& dir, const std::string& which,
                             const std::string& folder_name) {
    std::vector<data::HostTensor> buffers(graph.tensors.size());
    std::vector<float*> out(graph.tensors.size(), nullptr);
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        if (which == "gradient" && !graph.tensors[i].trainable()) continue;
        buffers[i].resize(static_cast<size_t>(graph.tensors[i].elements()));
        out[i] = buffers[i].data();
    }
    if (which == "gradient")
        session->read_gradients(out.data());
    else
        session->read_state(out.data());
    const std::filesystem::path folder =
        std::filesystem::path(dir) / (folder_name.empty() ? which : folder_name);
    std::filesystem::create_directories(folder);
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        if (out[i])
            data::write_npy((folder / (graph.tensors[i].name + ".npy")).string(),
                            graph.tensors[i].shape, out[i]);
}

void Training::load_tensors(const std::string& folder) {
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        const model::Tensor& t = graph.tensors[i];
        std::vector<int64_t> shape;
        const std::string path = (std::filesystem::path(folder) / (t.name + ".npy")).string();
        state[i] = data::read_npy(path, &shape);
        if (state[i].size() != static_cast<size_t>(t.elements()))
            throw std::runtime_error(fmt::format("{}: {} elements, {} has {}", path,
                                                 state[i].size(), t.name, t.elements()));
    }
    session->load_state(pointers(state).data());
}

void Training::write_input_gradient(const std::string& dir) {
    const model::Value& input = graph.values[static_cast<size_t>(graph.input)];
    data::HostTensor gradient(static_cast<size_t>(model::elements(input.shape)));
    session->read_input_gradient(gradient.data());
    std::filesystem::create_directories(dir);
    data::write_npy((std::filesystem::path(dir) / "input-gradient.npy").string(),
                    {input.shape.begin(), input.shape.end()}, gradient.data());
}

bool time_steps(Training& training, output::BackendRun& run,
                const std::function<void(int, bool)>& step, const std::function<bool(bool)>& stop) {
    const int total = run.warmup + run.iterations;
    int done = 0;
    auto phase_of = [&](int k) {
        return k < run.warmup ? StepEvent{"warmup", k, run.warmup}
                              : StepEvent{"timed", k - run.warmup, run.iterations};
    };
    send_step_event(phase_of(0));
    while (done < total && !stop(done >= run.warmup)) {
        const bool timed = done >= run.warmup;
        step(done, timed);
        StepEvent finished = phase_of(done++);
        ++finished.done;
        const std::vector<double>& times = timed ? run.samples_ms : run.warmup_ms;
        finished.last_ms = times.empty() ? -1 : times.back();
        send_step_event(finished);
        if (done == run.warmup && done < total) send_step_event(phase_of(done));
    }
    training.finish(run);
    run.stats = output::compute_stats(run.samples_ms, run.batch, run.flops_per_step);
    if (done == total) return false;
    run.status = output::Status::interrupted;
    if (done > run.warmup)
        run.message = fmt::format(
            "interrupted after {} of {} timed steps (partial: the figures are from those steps)",
            done - run.warmup, run.iterations);
    else if (done > 0)
        run.message = fmt::format("interrupted after {} of {} warm-up steps, before any timed step",
                                  done, run.warmup);
    else
        run.message = "interrupted before the first step";
    return true;
}

}  // namespace harness::run
