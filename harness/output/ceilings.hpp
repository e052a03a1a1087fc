// What a run records for the roofline (docs/roofline.md): this machine's ceilings, the float32
// FMA rate and the memory bandwidth, each measured on a number of threads with its spread
// (harness/roofline/ceilings.hpp measures them), and the step's least work by layer kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace harness::output {

struct Measured {
    double best = 0, median = 0, worst = 0;  // per second
    int repetitions = 0;
    std::string how;  // "AVX2+FMA, 12 accumulators per thread", "triad over 3 x 128 MiB"
};

struct Ceilings {
    int threads = 1;
    Measured flops;  // float32 FLOP/s, a multiply-add 2
    Measured bytes;  // bytes/s: a triad moves 3 x 4 bytes per element (no write allocate)
};

// One layer kind's FLOPs and bytes in a step, forward and backward ("rmsprop": the update), and
// the operation kinds (output::kOperationKinds) a profile counts its time under.
struct KindCost {
    std::string kind;
    int layers = 0;
    int64_t flops = 0, bytes = 0;
    std::vector<std::string> operation_kinds;
};

}  // namespace harness::output
