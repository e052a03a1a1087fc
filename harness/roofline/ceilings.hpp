// This machine's two ceilings for the roofline (docs/roofline.md), measured on a number of threads
// as STREAM and a peak-FLOPs kernel measure them: the float32 FMA rate of a register-only kernel
// on the widest vectors the processor runs (AVX-512, else AVX2 with FMA, else scalar), and the
// memory bandwidth of a STREAM triad, a[i] = b[i] + s c[i], over arrays four times the last-level
// cache or more. Each is repeated; the ceiling is the best repetition, as STREAM reports it, with
// the median and the worst for its spread.
#pragma once

#include <string>
#include <vector>

namespace harness::roofline {

struct Measured {
    double best = 0, median = 0, worst = 0;  // per second
    int repetitions = 0;
    std::string how;  // "AVX2+FMA, 10 accumulators per thread", "triad over 3 x 128 MiB"
};

struct Ceilings {
    int threads = 1;
    Measured flops;  // float32 FLOP/s, a multiply-add 2
    Measured bytes;  // bytes/s: a triad moves 3 x 4 bytes per element (no write allocate)
};

// Takes about a second. `threads` >= 1.
Ceilings measure_ceilings(int threads);

// The best, median and worst of rates.
Measured spread_of(std::vector<double> rates);

}  // namespace harness::roofline
