#include "layers/layer_samples.hpp"

#include <nlohmann/json.hpp>

namespace harness::layers {

nlohmann::json to_json(const std::vector<UnitSamples>& units) {
    nlohmann::json list = nlohmann::json::array();
    for (const UnitSamples& u : units)
        list.push_back({{"name", u.name},
                        {"kind", u.kind},
                        {"count", u.count},
                        {"training_flops", u.training_flops},
                        {"timed_by", u.timed_by},
                        {"ms", u.ms},
                        {"forward_ms", u.forward_ms},
                        {"backward_ms", u.backward_ms},
                        {"error", u.error}});
    return {{"units", list}};
}

std::vector<UnitSamples> units_from_json(const nlohmann::json& j) {
    std::vector<UnitSamples> units;
    for (const nlohmann::json& u : j.at("units")) {
        UnitSamples& s = units.emplace_back();
        u.at("name").get_to(s.name);
        u.at("kind").get_to(s.kind);
        u.at("count").get_to(s.count);
        u.at("training_flops").get_to(s.training_flops);
        u.at("timed_by").get_to(s.timed_by);
        u.at("ms").get_to(s.ms);
        u.at("forward_ms").get_to(s.forward_ms);
        u.at("backward_ms").get_to(s.backward_ms);
        u.at("error").get_to(s.error);
    }
    return units;
}

}  // namespace harness::layers
