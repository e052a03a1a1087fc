#include "data/perturbation.hpp"

#include "data/generator.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace harness::data {

void perturb_by_one_ulp(const model::Graph& graph, uint64_t seed, std::vector<HostTensor>& state,
                        int significand_bits) {
    if (significand_bits < 2 || significand_bits > 24)
        throw std::invalid_argument("perturb_by_one_ulp: significand_bits must be 2-24, got " +
                                    std::to_string(significand_bits));
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
        if (!graph.tensors[t].trainable()) continue;
        const std::string stream = "perturb." + graph.tensors[t].name;
        HostTensor& values = state[t];
        for (size_t i = 0; i < values.size(); ++i) {
            float& x = values[i];
            if (x == 0.0f) continue;
            const bool up = (random_bits(seed, stream, i) & 1u) != 0;
            if (significand_bits == 24) {
                x = std::nextafter(x, up ? kInf : -kInf);
                continue;
            }
            // |x| = m 2^exponent with 0.5 <= m < 1; below a power of two the spacing halves.
            int exponent = 0;
            const float m = std::fabs(std::frexp(x, &exponent));
            const bool toward_zero = up == (x < 0.0f);
            if (m == 0.5f && toward_zero) --exponent;
            const float ulp = std::ldexp(1.0f, exponent - significand_bits);
            x += up ? ulp : -ulp;
        }
    }
}

}  // namespace harness::data
