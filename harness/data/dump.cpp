#include "data/dump.hpp"

#include "data/spec_json.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace harness::data {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* role_name(model::TensorRole role) {
    switch (role) {
        case model::TensorRole::weight:
            return "weight";
        case model::TensorRole::bias:
            return "bias";
        case model::TensorRole::running_mean:
            return "running_mean";
        case model::TensorRole::running_var:
            return "running_var";
    }
    return "unknown";
}

std::vector<int64_t> dims(const model::Shape& s) {
    return {s.begin(), s.end()};
}

json layer_entry(const model::Graph& graph, const model::Layer& l) {
    json inputs = json::array();
    for (int v : l.inputs) inputs.push_back(graph.values[static_cast<size_t>(v)].name);
    json entry = {{"name", l.name},
                  {"kind", model::to_string(l.kind)},
                  {"inputs", inputs},
                  {"output", graph.values[static_cast<size_t>(l.output)].name},
                  {"output_shape", dims(graph.values[static_cast<size_t>(l.output)].shape)}};
    auto tensor_name = [&](int t) -> json {
        return t < 0 ? json(nullptr) : json(graph.tensors[static_cast<size_t>(t)].name);
    };
    switch (l.kind) {
        case model::LayerKind::conv2d:
            entry["in_channels"] = l.in_channels;
            entry["out_channels"] = l.out_channels;
            entry["kernel"] = l.kernel;
            entry["stride"] = l.stride;
            entry["padding"] = l.padding;
            entry["weight"] = tensor_name(l.weight);
            entry["bias"] = tensor_name(l.bias);
            break;
        case model::LayerKind::batchnorm:
            entry["momentum"] = l.momentum;
            entry["eps"] = l.eps;
            entry["weight"] = tensor_name(l.weight);
            entry["bias"] = tensor_name(l.bias);
            entry["running_mean"] = tensor_name(l.running_mean);
            entry["running_var"] = tensor_name(l.running_var);
            break;
        case model::LayerKind::mse_loss:
            entry["loss_weight"] = l.loss_weight;
            break;
        default:
            break;
    }
    return entry;
}

json file_entry(const std::string& name, const std::vector<int64_t>& shape, const char* kind,
                json layer, json role, size_t order) {
    return {{"name", name}, {"file", name + ".npy"}, {"shape", shape}, {"dtype", "float32"},
            {"kind", kind}, {"layer", layer},        {"role", role},   {"order", order}};
}

int64_t product(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

void write_checked(const fs::path& dir, const std::string& name, const std::vector<int64_t>& shape,
                   const HostTensor& data) {
    if (static_cast<int64_t>(data.size()) != product(shape))
        throw std::invalid_argument("dump: '" + name + "' has " + std::to_string(data.size()) +
                                    " elements, its shape needs " + std::to_string(product(shape)));
    write_npy((dir / (name + ".npy")).string(), shape, data.data());
}

}  // namespace

void dump(const std::string& dir, const model::Graph& graph, uint64_t seed,
          const std::vector<HostTensor>& state, const Batches& batches,
          const hb_optimizer& optimizer) {
    if (state.size() != graph.tensors.size())
        throw std::invalid_argument("dump: " + std::to_string(state.size()) +
                                    " state buffers for " + std::to_string(graph.tensors.size()) +
                                    " graph tensors");
    if (batches.inputs.size() != batches.targets.size())
        throw std::invalid_argument("dump: as many input as target batches are needed");
    const fs::path root(dir);
    fs::create_directories(root);

    json tensors = json::array();
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
        const model::Tensor& t = graph.tensors[i];
        write_checked(root, t.name, t.shape, state[i]);
        tensors.push_back(file_entry(t.name, t.shape, t.trainable() ? "parameter" : "running_stat",
                                     graph.layers[static_cast<size_t>(t.layer)].name,
                                     role_name(t.role), i));
    }
    const std::vector<int64_t> input_shape =
        dims(graph.values[static_cast<size_t>(graph.input)].shape);
    const std::vector<int64_t> target_shape = dims(graph.target_shape);
    for (size_t b = 0; b < batches.inputs.size(); ++b) {
        const std::string input = "input." + std::to_string(b);
        const std::string target = "target." + std::to_string(b);
        write_checked(root, input, input_shape, batches.inputs[b]);
        write_checked(root, target, target_shape, batches.targets[b]);
        tensors.push_back(file_entry(input, input_shape, "input", nullptr, nullptr, b));
        tensors.push_back(file_entry(target, target_shape, "target", nullptr, nullptr, b));
    }

    json layers = json::array();
    for (const model::Layer& l : graph.layers) layers.push_back(layer_entry(graph, l));

    const json index = {
        {"format", 1},
        {"seed", seed},
        {"input",
         {{"name", graph.values[static_cast<size_t>(graph.input)].name}, {"shape", input_shape}}},
        {"target_shape", target_shape},
        {"batches", batches.inputs.size()},
        {"tensors", tensors},
        {"layers", layers},
        {"optimizer", optimizer_json(optimizer)}};
    const fs::path index_path = root / "index.json";
    std::ofstream out(index_path, std::ios::trunc);
    if (!out) throw std::runtime_error(index_path.string() + ": cannot open for writing");
    out << index.dump(1) << '\n';
    out.close();
    if (!out) throw std::runtime_error(index_path.string() + ": write failed");
}

}  // namespace harness::data
