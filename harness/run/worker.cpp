#include "run/worker.hpp"

#include "exit_codes.hpp"
#include "harness/version.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "output/atomic_file.hpp"
#include "output/chrome_trace.hpp"
#include "output/run_json.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/plugin_library.hpp"
#include "plugin_host/plugin_search.hpp"
#include "run/data_parallel.hpp"
#include "run/job_file.hpp"
#include "run/layer_timing.hpp"
#include "run/runner.hpp"
#include "run/step_events.hpp"
#include "run/training.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <optional>
#include <tuple>
#include <utility>

namespace harness::run {

namespace {

output::Status status_for(hb_status status) {
    switch (status) {
        case HB_UNAVAILABLE:
            return output::Status::skipped;
        case HB_OUT_OF_MEMORY:
            return output::Status::oom;
        default:
            return output::Status::failed;
    }
}

// The kind of a device name: "cuda" for "cuda:1", "cpu" for "cpu".
std::string device_kind(const std::string& device) {
    return device.substr(0, device.find(':'));
}

// Where the entry's device stands in the plugin's own description: nothing when it can be used;
// `skipped` when the plugin has it (or devices of its kind) but this machine lacks it; `failed`
// when the plugin has no device of that kind at all: the config names a device the plugin
// cannot run on.
std::optional<std::pair<output::Status, std::string>> device_problem(const hb_plugin_info& info,
                                                                     const std::string& device) {
    std::string offered;
    bool same_kind = false;
    for (int32_t i = 0; i < info.num_devices; ++i) {
        const hb_device_info& d = info.devices[i];
        if (device == d.name) {
            if (d.available) return std::nullopt;
            return std::pair{output::Status::skipped,
                             "device " + device + " unavailable: " +
                                 (d.unavailable_reason ? d.unavailable_reason : "no reason given")};
        }
        same_kind = same_kind || device_kind(d.name) == device_kind(device);
        offered += (offered.empty() ? "" : ", ") + std::string(d.name);
    }
    if (same_kind)
        return std::pair{output::Status::skipped, "device " + device + " not on this machine (" +
                                                      info.name + " offers: " + offered + ")"};
    return std::pair{output::Status::failed,
                     "plugin " + std::string(info.name) + " does not run on " +
                         device_kind(device) +
                         " devices (it offers: " + (offered.empty() ? "none" : offered) + ")"};
}

// Set by SIGINT, SIGTERM or SIGHUP in a timing worker: the harness (or the user) asks it to stop;
// it does so after the step in progress and keeps the steps it completed.
volatile sig_atomic_t g_stop = 0;

void on_stop(int) {
    g_stop = 1;
}

void install_stop_handler() {
    struct sigaction action {};
    action.sa_handler = on_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGHUP, &action, nullptr);
}

// A paired worker's word to take its next timed step (WorkerJob::gate_fd): true for an 's'; a
// closed gate, any other byte or a stop signal end its steps.
bool gate_opens(int fd) {
    char word = 0;
    ssize_t got;
    do {
        got = read(fd, &word, 1);
    } while (got < 0 && errno == EINTR && g_stop == 0);
    return got == 1 && word == 's';
}

output::TraceMetadata trace_metadata(const config::RunConfig& config,
                                     const output::BackendRun& run) {
    output::TraceMetadata m;
    m.config_name = config.name;
    m.config_path = config.path;
    m.config_sha256 = config.sha256;
    m.harness_version = std::string(kVersion) + " (" + kGitCommit + ")";
    m.backend = run.backend;
    m.plugin = run.plugin;
    m.device = run.device;
    m.placement = run.placement;
    m.options = run.options;
    return m;
}

// After the timed steps, `job.profiling.steps` more with the plugin's events on: the row's
// profile and, when asked, the backend's trace. A plugin that cannot profile, or fails to, keeps
// its timings; the profile says why it is missing.
void profile_steps(Training& training, bool can_profile, const config::RunConfig& config,
                   const WorkerJob& job, output::BackendRun& run) {
    output::Profile& profile = run.profile.emplace();
    if (!can_profile) {
        profile.error = "plugin " + run.plugin + " cannot profile (no HB_CAP_PROFILE)";
        return;
    }
    try {
        std::vector<output::ProfiledStep> steps;
        training.session->set_profiling(true);
        const auto origin = Clock::now();
        const int first = run.warmup + run.iterations;
        send_step_event({"profiling", 0, job.profiling.steps});
        for (int k = 0; k < job.profiling.steps; ++k) {
            output::ProfiledStep& s = steps.emplace_back();
            s.start_ms = ms_since(origin);
            const auto start = Clock::now();
            training.session->step((first + k) % training.batch_count);
            s.duration_ms = ms_since(start);
            send_step_event({"profiling", k + 1, job.profiling.steps, s.duration_ms});
            for (const hb_event& e : training.session->read_events())
                s.operations.push_back(operation_of(e, training.graph));
        }
        training.session->set_profiling(false);
        profile = output::summarize(steps);
        if (!job.profiling.trace_dir.empty())
            output::write_file_atomically(
                trace_path(job.profiling.trace_dir, config.name, run.backend),
                output::json_text(output::chrome_trace(trace_metadata(config, run), steps)));
    } catch (const std::exception& e) {
        profile = output::Profile{};
        profile.error = e.what();
    }
}

// A conformance run (Capture): `run.iterations` steps, no warm-up; the gradients of step 1
// (`gradient/`) and of each later step k (`gradient-k/`, both where the plugin gives them), the
// input's gradient of step 1 (`input-gradient.npy`, where the plugin gives it), the state after
// each step k but the last (`state-k/`) and after the last (`state/`) are written under
// `capture.dir`; then the steps anchored on another capture's states (`anchored-k/`).
void capture_steps(Training& training, output::BackendRun& run, const Capture& capture) {
    const int total = run.iterations + capture.anchored;
    send_step_event({"capture", 0, total});
    for (int k = 0; k < run.iterations; ++k) {
        training.step(k, true, run);
        send_step_event({"capture", k + 1, total, run.samples_ms.back()});
        if (training.gradients)
            training.write_tensors(capture.dir, "gradient",
                                   k == 0 ? "gradient" : "gradient-" + std::to_string(k + 1));
        if (k == 0 && training.input_gradient) training.write_input_gradient(capture.dir);
        if (k + 1 < run.iterations)
            training.write_tensors(capture.dir, "state", "state-" + std::to_string(k + 1));
    }
    training.write_tensors(capture.dir, "state");
    for (int k = 2; k <= capture.anchored + 1 && training.gradients; ++k) {
        training.load_tensors(
            (std::filesystem::path(capture.anchor) / ("state-" + std::to_string(k - 1))).string());
        const StepClock clock;
        const hb_step_result r = training.session->step((k - 1) % training.batch_count);
        if (!std::isfinite(r.loss)) run.nonfinite_loss = true;
        send_step_event({"capture", run.iterations + k - 1, total, clock.wall_ms()});
        training.write_tensors(capture.dir, "gradient", "anchored-" + std::to_string(k));
    }
    training.finish(run);
}

// `harness layers`: the whole step in `run`, every configuration's samples in the job's file.
void time_layer_units(const model::Graph& graph, const config::RunConfig& config,
                      const config::BackendEntry& entry, const plugin_host::PluginLibrary& library,
                      const LayerTiming& timing, output::BackendRun& run) {
    const auto units =
        time_layers(graph, config, entry, library, timing, run, [] { return g_stop != 0; });
    output::write_file_atomically(timing.units_out, output::json_text(layers::to_json(units)));
    if (g_stop != 0) {
        run.status = output::Status::interrupted;
        run.message = "interrupted (partial: the figures are from the steps completed)";
    }
}

output::BackendRun run_job(const config::RunConfig& config, const WorkerJob& job) {
    const config::BackendEntry entry = entry_for(config, job);
    model::Graph graph = model::build_hourglass(config.model);
    if (job.unit >= 0) graph = model::unit_graph(graph, model::layer_units(graph).at(job.unit));
    output::BackendRun run = describe_entry(config, entry, job.overrides, graph);
    if (job.capture) {
        run.warmup = 0;
        run.iterations = job.overrides.iterations;
    }
    try {
        // Before any plugin library (and its threads) is loaded.
        parallel::World* world = job.ranks > 0 ? &join_ranks(job) : nullptr;
        for (const auto& [name, value] : entry.environment)
            ::setenv(name.c_str(), value.c_str(), 1);
        auto path = plugin_host::find_plugin(entry.plugin);
        if (!path) {
            run.status = output::Status::skipped;
            const auto reason = plugin_host::not_built_reason(entry.plugin);
            run.message = "plugin '" + entry.plugin + "' not found (no " +
                          plugin_host::plugin_file_name(entry.plugin) + " in " +
                          plugin_host::describe_search_path() + "); " +
                          (reason ? "configure said: " + *reason
                                  : std::string("it is not built on this machine"));
            return run;
        }
        send_step_event({"loading", 0, 0});
        const plugin_host::PluginLibrary library = plugin_host::PluginLibrary::load(*path);
        const hb_plugin_info& info = library.info();
        run.plugin_version = info.version;
        for (int32_t i = 0; i < info.num_libraries; ++i)
            run.libraries[info.libraries[i].name] = info.libraries[i].version;
        if (auto problem = device_problem(info, entry.device)) {
            std::tie(run.status, run.message) = *problem;
            return run;
        }
        if (world) {
            run_data_parallel(
                job, config, entry, std::move(graph), library, *world, [] { return g_stop != 0; },
                run);
            return run;
        }
        if (job.layer_timing) {
            time_layer_units(graph, config, entry, library, *job.layer_timing, run);
            return run;
        }
        Training training(std::move(graph), config, entry, library, run, job.capture.has_value(),
                          job.capture.has_value());
        if (job.capture) {
            capture_steps(training, run, *job.capture);
        } else {
            const bool stopped = time_steps(
                training, run, [&](int k, bool timed) { training.step(k, timed, run); },
                [&](bool timed) {
                    return g_stop != 0 || (timed && job.gate_fd >= 0 && !gate_opens(job.gate_fd));
                });
            if (!stopped && job.profiling.steps > 0)
                profile_steps(training, library.can_profile(), config, job, run);
        }
    } catch (const plugin_host::PluginCallError& e) {
        run.status = status_for(e.status());
        run.message = e.what();
        run.unsupported = e.status() == HB_UNSUPPORTED;
    } catch (const std::bad_alloc&) {
        run.status = output::Status::oom;
        run.message = "out of host memory";
    } catch (const std::exception& e) {
        run.status = output::Status::failed;
        run.message = e.what();
    }
    return run;
}

}  // namespace

int worker_main(const std::string& job_file) {
    config::RunConfig config;
    WorkerJob job;
    try {
        std::tie(config, job) = read_job_file(job_file);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness worker: %s\n", e.what());
        return kExitUsage;
    }
    // A timing run stopped by the harness writes what it measured; a capture is all or nothing.
    if (!job.capture) install_stop_handler();
    output::BackendRun run;
    open_step_events(job.progress_fd);
    try {
        const plugin_host::LibraryOutput output(plugin_host::log_path_of(job.result_path));
        run = run_job(config, job);
    } catch (const std::exception& e) {
        run.status = output::Status::failed;
        run.message = e.what();
    }
    // Every rank of a data-parallel run writes its row; rank 0's is the run's.
    const int rank = job.ranks > 0 ? launched_rank() : 0;
    try {
        // Plugin messages may hold bytes that are not UTF-8; they must not cost the result.
        const std::string json = output::json_text(output::to_json(run));
        output::write_file_atomically(rank_result_path(job.result_path, rank), json);
    } catch (const std::exception& e) {
        std::fprintf(plugin_host::console(), "harness worker: %s\n", e.what());
        return kExitOutputFailed;
    }
    if (job.ranks > 1 && is_failure(run.status)) {
        // The other ranks may wait for this one in a collective call: mpirun ends them all when
        // one rank leaves without finalising MPI.
        std::fflush(nullptr);
        std::_Exit(kExitBackendFailed);
    }
    return kExitOk;
}

}  // namespace harness::run
