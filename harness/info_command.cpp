#include "commands.hpp"

#include "config/config.hpp"
#include "data/spec_json.hpp"
#include "model/hourglass.hpp"

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
}

}  // namespace

int info_command(const std::string& config_path, bool json) {
    try {
        const config::RunConfig config = config::load_config(config_path);
        const model::Graph graph = model::build_hourglass(config.model);
        const nlohmann::json j = describe(config, graph);
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
