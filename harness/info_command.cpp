#include "commands.hpp"

#include "config/config.hpp"
#include "data/spec_json.hpp"
#include "model/hourglass.hpp"
#include "output/run_json.hpp"
#include "roofline/step_bound.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>

namespace harness {

namespace {

nlohmann::json describe(const config::RunConfig& config, const model::Graph& graph) {
    const auto& m = config.model;
    std::map<std::string, int> kinds;
    for (const auto& layer : graph.layers) ++kinds[model::to_string(layer.kind)];
    int64_t running_stats = 0;
    for (const auto& t : graph.tensors)
        if (!t.trainable()) running_stats += t.elements();
    return {
        {"config", config.path},
        {"name", config.name},
        {"config_sha256", config.sha256},
        {"model", data::model_json(m)},
        {"layers", graph.layers.size()},
        {"layer_kinds", kinds},
        {"tensors", graph.tensors.size()},
        {"parameters", graph.parameter_count()},
        {"running_statistics", running_stats},
        {"flops_per_image_forward", graph.forward_flops_per_image()},
        {"flops_per_training_step", graph.training_flops_per_step()},
        {"activation_bytes", graph.activation_bytes()},
    };
}

// The step's bound on this machine, by layer kind (docs/roofline.md).
nlohmann::json roofline_json(const config::RunConfig& config, const model::Graph& graph,
                             int threads) {
    const roofline::Ceilings ceilings = roofline::measure_ceilings(threads);
    const roofline::StepBound step = roofline::step_bound(graph, config.optimizer.weight_decay != 0,
                                                          config.optimizer.momentum != 0, ceilings);
    nlohmann::json kinds = nlohmann::json::array();
    for (const roofline::KindBound& k : step.kinds)
        kinds.push_back({{"kind", k.kind},
                         {"layers", k.kind == "rmsprop" ? 0 : k.layers},
                         {"flops", k.cost.flops()},
                         {"bytes", k.cost.bytes()},
                         {"bound_ms", k.seconds * 1e3},
                         {"binding", k.compute_bound() ? "compute" : "memory"}});
    nlohmann::json j = output::to_json(ceilings);
    j["step_bound_ms"] = step.seconds * 1e3;
    j["batch"] = graph.batch();
    j["kinds"] = kinds;
    return j;
}

void print(const nlohmann::json& j) {
    const auto& m = j["model"];
    std::string kinds;
    for (const auto& [kind, n] : j["layer_kinds"].items())
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n.get<int>(), kind);
    std::cout << fmt::format(
        "config        {} ({})\n"
        "model         {} stacks, {} features, depth {}, {} joints, {}x{} input, batch {}\n"
        "layers        {} ({})\n"
        "parameters    {} trainable ({:.2f} M), {} running statistics\n"
        "FLOPs         {:.3f} GFLOP per image (forward), {:.3f} GFLOP per training step\n"
        "activations   {:.1f} MiB per batch (float32, every layer output)\n",
        j["config"].get<std::string>(), j["name"].get<std::string>(), m["stacks"].get<int>(),
        m["features"].get<int>(), m["depth"].get<int>(), m["joints"].get<int>(),
        m["input_size"].get<int>(), m["input_size"].get<int>(), m["batch"].get<int>(),
        j["layers"].get<size_t>(), kinds, j["parameters"].get<int64_t>(),
        static_cast<double>(j["parameters"].get<int64_t>()) / 1e6,
        j["running_statistics"].get<int64_t>(),
        static_cast<double>(j["flops_per_image_forward"].get<int64_t>()) / 1e9,
        static_cast<double>(j["flops_per_training_step"].get<int64_t>()) / 1e9,
        static_cast<double>(j["activation_bytes"].get<int64_t>()) / (1024.0 * 1024.0));
    const auto& r = j["roofline"];
    const auto ceiling = [](const nlohmann::json& c, const char* name) {
        return fmt::format("{:.1f} {} (best of {}; median {:.1f}, worst {:.1f}; {})",
                           c["best"].get<double>() / 1e9, name, c["repetitions"].get<int>(),
                           c["median"].get<double>() / 1e9, c["worst"].get<double>() / 1e9,
                           c["how"].get<std::string>());
    };
    const double step_ms = r["step_bound_ms"].get<double>();
    std::cout << fmt::format(
        "ceilings      {} threads: {}\n"
        "              {}\n"
        "bound         {:.2f} ms per step at batch {} (docs/roofline.md): each layer's "
        "max(FLOPs / FMA rate, bytes / bandwidth), summed\n\n",
        r["threads"].get<int>(), ceiling(r["flops_per_s"], "GFLOP/s float32 FMA"),
        ceiling(r["bytes_per_s"], "GB/s"), step_ms, r["batch"].get<int64_t>());
    std::cout << fmt::format("{:<12} {:>6} {:>10} {:>10} {:>10} {:>6}  {}\n", "kind", "layers",
                             "GFLOP", "GB", "bound ms", "share", "binding ceiling");
    for (const auto& k : r["kinds"]) {
        const int layers = k["layers"].get<int>();
        const double ms = k["bound_ms"].get<double>();
        std::cout << fmt::format(
            "{:<12} {:>6} {:>10.3f} {:>10.3f} {:>10.2f} {:>5.1f}%  {}\n",
            k["kind"].get<std::string>(), layers ? std::to_string(layers) : "-",
            static_cast<double>(k["flops"].get<int64_t>()) / 1e9,
            static_cast<double>(k["bytes"].get<int64_t>()) / 1e9, ms,
            step_ms > 0 ? 100 * ms / step_ms : 0.0,
            k["binding"].get<std::string>() == "compute" ? "compute (FMA rate)"
                                                         : "memory (bandwidth)");
    }
}

}  // namespace

int info_command(const std::string& config_path, bool json, int threads) {
    try {
        const config::RunConfig config = config::load_config(config_path);
        const model::Graph graph = model::build_hourglass(config.model);
        nlohmann::json j = describe(config, graph);
        j["roofline"] = roofline_json(config, graph, threads);
        if (json)
            std::cout << j.dump(2) << "\n";
        else
            print(j);
        return kExitOk;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness info: %s\n", e.what());
        return kExitUsage;
    }
}

}  // namespace harness
