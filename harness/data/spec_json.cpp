#include "data/spec_json.hpp"

namespace harness::data {

using nlohmann::json;

json model_json(const model::HourglassSpec& m) {
    return {{"stacks", m.stacks},
            {"features", m.features},
            {"depth", m.depth},
            {"joints", m.joints},
            {"input_size", m.input_size},
            {"batch", m.batch},
            {"conv_bias", m.conv_bias},
            {"bn_scale", m.bn_scale},
            {"bn_momentum", m.bn_momentum},
            {"bn_eps", m.bn_eps},
            {"loss", m.loss == model::LossReduction::mean ? "mean" : "sum"}};
}

model::HourglassSpec model_from_json(const json& j) {
    model::HourglassSpec m;
    m.stacks = j.at("stacks").get<int>();
    m.features = j.at("features").get<int>();
    m.depth = j.at("depth").get<int>();
    m.joints = j.at("joints").get<int>();
    m.input_size = j.at("input_size").get<int>();
    m.batch = j.at("batch").get<int>();
    m.conv_bias = j.at("conv_bias").get<bool>();
    m.bn_scale = j.at("bn_scale").get<bool>();
    m.bn_momentum = j.at("bn_momentum").get<float>();
    m.bn_eps = j.at("bn_eps").get<float>();
    m.loss = j.at("loss") == "mean" ? model::LossReduction::mean : model::LossReduction::sum;
    return m;
}

json optimizer_json(const hb_optimizer& o) {
    return {{"type", "rmsprop"},
            {"variant", o.variant == HB_RMSPROP_TENSORFLOW ? "tensorflow" : "torch"},
            {"learning_rate", o.learning_rate},
            {"alpha", o.alpha},
            {"eps", o.eps},
            {"momentum", o.momentum},
            {"weight_decay", o.weight_decay},
            {"initial_square_average", o.initial_square_average}};
}

hb_optimizer optimizer_from_json(const json& j) {
    hb_optimizer o{};
    o.variant = j.at("variant") == "tensorflow" ? HB_RMSPROP_TENSORFLOW : HB_RMSPROP_TORCH;
    o.learning_rate = j.at("learning_rate").get<float>();
    o.alpha = j.at("alpha").get<float>();
    o.eps = j.at("eps").get<float>();
    o.momentum = j.at("momentum").get<float>();
    o.weight_decay = j.at("weight_decay").get<float>();
    o.initial_square_average = j.at("initial_square_average").get<float>();
    return o;
}

}  // namespace harness::data
