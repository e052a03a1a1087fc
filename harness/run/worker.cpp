#include "run/worker.hpp"

#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "results/atomic_file.hpp"
#include "results/json_writer.hpp"
#include "run/plugin_library.hpp"
#include "run/plugin_search.hpp"
#include "run/progress.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <new>

namespace harness::run {

namespace {

using clock = std::chrono::steady_clock;

double ms_since(clock::time_point start) {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

results::Status status_for(hb_status status) {
    switch (status) {
        case HB_UNAVAILABLE:
            return results::Status::skipped;
        case HB_OUT_OF_MEMORY:
            return results::Status::oom;
        default:
            return results::Status::failed;
    }
}

std::vector<const float*> pointers(const std::vector<data::HostTensor>& tensors) {
    std::vector<const float*> p;
    for (const auto& t : tensors) p.push_back(t.data());
    return p;
}

// Where the entry's device stands in the plugin's own description; empty when it can be used.
std::string device_problem(const hb_plugin_info& info, const std::string& device) {
    std::string offered;
    for (int32_t i = 0; i < info.num_devices; ++i) {
        const hb_device_info& d = info.devices[i];
        if (device == d.name) {
            if (d.available) return "";
            return "device " + device + " unavailable: " +
                   (d.unavailable_reason ? d.unavailable_reason : "no reason given");
        }
        offered += (offered.empty() ? "" : ", ") + std::string(d.name);
    }
    return "device " + device + " not offered by plugin " + info.name + " (offers: " + offered +
           ")";
}

void read_manifest(results::BackendRun& run) {
    auto manifest = nlohmann::json::parse(run.manifest_json, nullptr, false);
    if (!manifest.is_object()) return;
    if (manifest.contains("math") && manifest["math"].is_string())
        run.math_mode = manifest["math"].get<std::string>();
    if (manifest.contains("threads") && manifest["threads"].is_number_integer())
        run.threads = manifest["threads"].get<int>();
}

void train(const config::RunConfig& config, const config::BackendEntry& entry,
           const PluginLibrary& library, results::BackendRun& run) {
    const model::Graph graph = model::build_hourglass(config.model);
    const model::AbiGraph abi_graph(graph);

    std::vector<hb_option> options;
    for (const auto& kv : entry.options) options.push_back({kv.first.c_str(), kv.second.c_str()});
    hb_session_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.graph = abi_graph.get();
    desc.optimizer = &config.optimizer;
    desc.device = entry.device.c_str();
    desc.placement = config.placement;
    desc.num_options = static_cast<int32_t>(options.size());
    desc.options = options.data();

    const auto state = data::initial_state(graph, config.seed);
    const auto batches = data::make_batches(graph, config.seed, config.batches);

    const auto setup_start = clock::now();
    PluginSession session(library, desc);
    session.load_state(pointers(state).data());
    session.set_batches(config.batches, pointers(batches.inputs).data(),
                        pointers(batches.targets).data());
    run.setup_ms = ms_since(setup_start);

    Progress progress(run.backend, run.warmup, run.iterations);
    const int total = run.warmup + run.iterations;
    for (int k = 0; k < total; ++k) {
        const auto start = clock::now();
        hb_step_result r = session.step(k % config.batches);
        const double ms = ms_since(start);
        const bool timed = k >= run.warmup;
        (timed ? run.samples_ms : run.warmup_ms).push_back(ms);
        (timed ? run.losses : run.warmup_losses).push_back(r.loss);
        if (!std::isfinite(r.loss)) run.nonfinite_loss = true;
        if (timed && r.forward_ms >= 0) {
            run.forward_ms.push_back(r.forward_ms);
            run.backward_ms.push_back(r.backward_ms);
            run.optimizer_ms.push_back(r.optimizer_ms);
        }
        progress.step(k + 1);
    }
    progress.done();

    run.peak_memory_bytes = session.peak_memory();
    run.manifest_json = session.manifest();
    read_manifest(run);
    run.stats = results::compute_stats(run.samples_ms, run.batch, run.flops_per_step);
    run.status = results::Status::ok;
}

results::BackendRun run_entry(const std::string& config_path, int index,
                              const StepCounts& overrides) {
    const config::RunConfig config = config::load_config(config_path);
    results::BackendRun run = describe_entry(config, index, overrides);
    const config::BackendEntry& entry = config.backends.at(static_cast<size_t>(index));
    try {
        auto path = find_plugin(entry.plugin);
        if (!path) {
            run.status = results::Status::skipped;
            run.message = "plugin '" + entry.plugin + "' not found (no " +
                          plugin_file_name(entry.plugin) + " in " + describe_search_path() +
                          "); it is not built on this machine";
            return run;
        }
        const PluginLibrary library = PluginLibrary::load(*path);
        const hb_plugin_info& info = library.info();
        run.plugin_version = info.version;
        for (int32_t i = 0; i < info.num_libraries; ++i)
            run.libraries[info.libraries[i].name] = info.libraries[i].version;
        if (auto problem = device_problem(info, entry.device); !problem.empty()) {
            run.status = results::Status::skipped;
            run.message = problem;
            return run;
        }
        train(config, entry, library, run);
    } catch (const PluginCallError& e) {
        run.status = status_for(e.status());
        run.message = e.what();
    } catch (const std::bad_alloc&) {
        run.status = results::Status::oom;
        run.message = "out of host memory";
    } catch (const std::exception& e) {
        run.status = results::Status::failed;
        run.message = e.what();
    }
    return run;
}

}  // namespace

results::BackendRun describe_entry(const config::RunConfig& config, int index,
                                   const StepCounts& overrides) {
    const config::BackendEntry& entry = config.backends.at(static_cast<size_t>(index));
    results::BackendRun run;
    run.backend = entry.name;
    run.plugin = entry.plugin;
    run.device = entry.device;
    run.options = entry.options;
    run.math_mode = "fp32";
    if (auto t = entry.options.find("threads"); t != entry.options.end())
        run.threads = std::atoi(t->second.c_str());
    run.warmup = overrides.warmup >= 0 ? overrides.warmup
                 : entry.warmup >= 0   ? entry.warmup
                                       : config.warmup;
    run.iterations = overrides.iterations >= 0 ? overrides.iterations
                     : entry.iterations >= 0   ? entry.iterations
                                               : config.iterations;
    run.batch = config.model.batch;
    const model::Graph graph = model::build_hourglass(config.model);
    run.flops_per_step = graph.training_flops_per_step();
    run.manifest_json = "{}";
    return run;
}

int worker_main(const std::string& config_path, int index, const StepCounts& overrides,
                const std::string& result_path) {
    results::BackendRun run;
    try {
        run = run_entry(config_path, index, overrides);
    } catch (const std::exception& e) {
        run.status = results::Status::failed;
        run.message = e.what();
    }
    try {
        results::write_file_atomically(result_path, results::to_json(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness worker: %s\n", e.what());
        return 3;
    }
    return 0;
}

}  // namespace harness::run
