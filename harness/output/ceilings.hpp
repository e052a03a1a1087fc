// This machine's ceilings for the roofline as a run records them (docs/roofline.md): the float32
// FMA rate and the memory bandwidth, each measured on a number of threads with its spread.
// harness/roofline/ceilings.hpp measures them.
#pragma once

#include <string>

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

}  // namespace harness::output
