#include "data/perturbation.hpp"

#include "data/generator.hpp"

#include <cmath>
#include <limits>

namespace harness::data {

void perturb_by_one_ulp(const model::Graph& graph, uint64_t seed, std::vector<HostTensor>& state) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
        if (!graph.tensors[t].trainable()) continue;
        const std::string stream = "perturb." + graph.tensors[t].name;
        HostTensor& values = state[t];
        for (size_t i = 0; i < values.size(); ++i)
            if (values[i] != 0.0f)
                values[i] =
                    std::nextafter(values[i], (random_bits(seed, stream, i) & 1u) ? kInf : -kInf);
    }
}

}  // namespace harness::data
