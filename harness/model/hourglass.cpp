#include "model/hourglass.hpp"

#include <stdexcept>
#include <utility>

namespace harness::model {

namespace {

void require(bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument("hourglass spec: " + message);
}

void validate(const HourglassSpec& s) {
    require(s.stacks >= 1, "stacks must be at least 1 (got " + std::to_string(s.stacks) + ")");
    require(s.features >= 2 && s.features % 2 == 0,
            "features must be a positive even number (got " + std::to_string(s.features) + ")");
    require(s.depth >= 1 && s.depth <= 16,
            "depth must be between 1 and 16 (got " + std::to_string(s.depth) + ")");
    require(s.joints >= 1, "joints must be at least 1 (got " + std::to_string(s.joints) + ")");
    require(s.batch >= 1, "batch must be at least 1 (got " + std::to_string(s.batch) + ")");
    // The stem divides by 4 (stride-2 conv, then a 2x2 pool) and every hourglass level by 2.
    const int64_t divisor = int64_t{4} << s.depth;
    require(s.input_size >= 1 && s.input_size % divisor == 0,
            "input_size must be a positive multiple of 4 * 2^depth = " + std::to_string(divisor) +
                " (got " + std::to_string(s.input_size) + " with depth " + std::to_string(s.depth) +
                ")");
    require(s.bn_momentum >= 0.0f && s.bn_momentum <= 1.0f, "bn_momentum must be in [0, 1]");
    require(s.bn_eps > 0.0f, "bn_eps must be positive");
}

class Builder {
public:
    explicit Builder(const HourglassSpec& spec) : spec_(spec) {}

    int input(Shape shape) {
        graph_.input = new_value("input", shape);
        return graph_.input;
    }

    int conv(const std::string& name, int x, int out_channels, int kernel, int stride,
             int padding) {
        const Shape& in = shape(x);
        const int64_t h = (in[2] + 2 * padding - kernel) / stride + 1;
        const int64_t w = (in[3] + 2 * padding - kernel) / stride + 1;
        Layer l = new_layer(name, LayerKind::conv2d, {x});
        l.in_channels = static_cast<int>(in[1]);
        l.out_channels = out_channels;
        l.kernel = kernel;
        l.stride = stride;
        l.padding = padding;
        const int index = static_cast<int>(graph_.layers.size());
        l.weight = new_tensor(name + ".weight", index, TensorRole::weight,
                              {out_channels, in[1], kernel, kernel});
        if (spec_.conv_bias)
            l.bias = new_tensor(name + ".bias", index, TensorRole::bias, {out_channels});
        return finish(std::move(l), {in[0], out_channels, h, w});
    }

    int conv1x1(const std::string& name, int x, int out_channels) {
        return conv(name, x, out_channels, 1, 1, 0);
    }

    int batchnorm(const std::string& name, int x) {
        const Shape in = shape(x);
        Layer l = new_layer(name, LayerKind::batchnorm, {x});
        const int index = static_cast<int>(graph_.layers.size());
        if (spec_.bn_scale)
            l.weight = new_tensor(name + ".weight", index, TensorRole::weight, {in[1]});
        l.bias = new_tensor(name + ".bias", index, TensorRole::bias, {in[1]});
        l.running_mean =
            new_tensor(name + ".running_mean", index, TensorRole::running_mean, {in[1]});
        l.running_var = new_tensor(name + ".running_var", index, TensorRole::running_var, {in[1]});
        l.momentum = spec_.bn_momentum;
        l.eps = spec_.bn_eps;
        return finish(std::move(l), in);
    }

    int relu(const std::string& name, int x) {
        return finish(new_layer(name, LayerKind::relu, {x}), shape(x));
    }

    int maxpool(const std::string& name, int x) {
        const Shape in = shape(x);
        return finish(new_layer(name, LayerKind::maxpool2d, {x}),
                      {in[0], in[1], in[2] / 2, in[3] / 2});
    }

    int upsample(const std::string& name, int x) {
        const Shape in = shape(x);
        return finish(new_layer(name, LayerKind::upsample, {x}),
                      {in[0], in[1], in[2] * 2, in[3] * 2});
    }

    int add(const std::string& name, std::vector<int> xs) {
        const Shape out = shape(xs.at(0));
        for (int x : xs)
            if (shape(x) != out)
                throw std::logic_error("add '" + name + "': shapes " + to_string(out) + " and " +
                                       to_string(shape(x)) + " differ");
        return finish(new_layer(name, LayerKind::add, std::move(xs)), out);
    }

    int mse_loss(const std::string& name, int x, float weight) {
        if (shape(x) != graph_.target_shape)
            throw std::logic_error("mse_loss '" + name + "': input " + to_string(shape(x)) +
                                   " is not the target shape " + to_string(graph_.target_shape));
        Layer l = new_layer(name, LayerKind::mse_loss, {x});
        l.loss_weight = weight;
        return finish(std::move(l), {1, 1, 1, 1});
    }

    void set_target_shape(Shape s) { graph_.target_shape = s; }
    const Shape& shape(int value) const { return graph_.values[static_cast<size_t>(value)].shape; }
    Graph take() { return std::move(graph_); }

private:
    int new_value(const std::string& name, Shape shape) {
        graph_.values.push_back(Value{name, shape});
        return static_cast<int>(graph_.values.size()) - 1;
    }

    static Layer new_layer(const std::string& name, LayerKind kind, std::vector<int> inputs) {
        Layer l;
        l.name = name;
        l.kind = kind;
        l.inputs = std::move(inputs);
        return l;
    }

    int new_tensor(std::string name, int layer, TensorRole role, std::vector<int64_t> shape) {
        Tensor t;
        t.name = std::move(name);
        t.layer = layer;
        t.role = role;
        t.shape = std::move(shape);
        graph_.tensors.push_back(std::move(t));
        return static_cast<int>(graph_.tensors.size()) - 1;
    }

    int finish(Layer l, Shape out) {
        l.output = new_value(l.name, out);
        graph_.layers.push_back(std::move(l));
        return graph_.layers.back().output;
    }

    const HourglassSpec& spec_;
    Graph graph_;
};

// BN-ReLU-conv1x1(cin->cout/2), BN-ReLU-conv3x3(cout/2), BN-ReLU-conv1x1(cout/2->cout), plus
// the input itself or a bare conv1x1 when the channel counts differ.
int residual(Builder& b, const std::string& name, int x, int out_channels) {
    const int in_channels = static_cast<int>(b.shape(x)[1]);
    const int mid = out_channels / 2;
    int y = b.batchnorm(name + ".bn1", x);
    y = b.relu(name + ".relu1", y);
    y = b.conv1x1(name + ".conv1", y, mid);
    y = b.batchnorm(name + ".bn2", y);
    y = b.relu(name + ".relu2", y);
    y = b.conv(name + ".conv2", y, mid, 3, 1, 1);
    y = b.batchnorm(name + ".bn3", y);
    y = b.relu(name + ".relu3", y);
    y = b.conv1x1(name + ".conv3", y, out_channels);
    const int skip = in_channels == out_channels ? x : b.conv1x1(name + ".skip", x, out_channels);
    return b.add(name + ".add", {y, skip});
}

int hourglass(Builder& b, const std::string& name, int n, int x, int features) {
    const int up1 = residual(b, name + ".up1", x, features);
    const int pooled = b.maxpool(name + ".pool", x);
    const int low1 = residual(b, name + ".low1", pooled, features);
    const int low2 = n > 1 ? hourglass(b, name + ".low2", n - 1, low1, features)
                           : residual(b, name + ".low2", low1, features);
    const int low3 = residual(b, name + ".low3", low2, features);
    const int up2 = b.upsample(name + ".upsample", low3);
    return b.add(name + ".add", {up1, up2});
}

}  // namespace

Graph build_hourglass(const HourglassSpec& spec) {
    validate(spec);
    const int f = spec.features;
    const int64_t heatmap = spec.input_size / 4;
    Builder b(spec);
    b.set_target_shape({spec.batch, spec.joints, heatmap, heatmap});

    int x = b.input({spec.batch, 3, spec.input_size, spec.input_size});
    x = b.conv("pre.conv", x, 64, 7, 2, 3);
    x = b.batchnorm("pre.bn", x);
    x = b.relu("pre.relu", x);
    x = residual(b, "pre.res1", x, 128);
    x = b.maxpool("pre.pool", x);
    x = residual(b, "pre.res2", x, 128);
    x = residual(b, "pre.res3", x, f);

    const float loss_weight =
        spec.loss == LossReduction::sum ? 1.0f : 1.0f / static_cast<float>(spec.stacks);
    for (int i = 0; i < spec.stacks; ++i) {
        const std::string s = "stack" + std::to_string(i);
        int y = hourglass(b, s + ".hg", spec.depth, x, f);
        y = residual(b, s + ".res", y, f);
        y = b.conv1x1(s + ".lin", y, f);
        y = b.batchnorm(s + ".lin_bn", y);
        const int features = b.relu(s + ".lin_relu", y);
        const int heatmaps = b.conv1x1(s + ".out", features, spec.joints);
        b.mse_loss(s + ".loss", heatmaps, loss_weight);
        if (i + 1 < spec.stacks) {
            const int merged_features = b.conv1x1(s + ".merge_features", features, f);
            const int merged_heatmaps = b.conv1x1(s + ".merge_heatmaps", heatmaps, f);
            x = b.add(s + ".merge", {x, merged_features, merged_heatmaps});
        }
    }
    return b.take();
}

}  // namespace harness::model
