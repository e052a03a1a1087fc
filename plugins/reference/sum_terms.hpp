// Sums in double, in a fixed order, for the reductions of the layer kernels.
#pragma once

#include <cstdint>

namespace hb_reference {

// Sums term(0) + ... + term(n-1) in double with eight interleaved partial sums: the compiler can
// vectorise it, and the order of additions is still fixed.
template <class Term>
double sum_terms(int64_t n, Term term) {
    double lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int64_t l = 0; l < 8; ++l) lanes[l] += term(i + l);
    double total = 0;
    for (int64_t l = 0; l < 8; ++l) total += lanes[l];
    for (; i < n; ++i) total += term(i);
    return total;
}

}  // namespace hb_reference
