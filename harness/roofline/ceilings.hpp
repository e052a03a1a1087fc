// This machine's two ceilings for the roofline (docs/roofline.md), measured on a number of threads
// as STREAM and a peak-FLOPs kernel measure them: the float32 FMA rate of a register-only kernel
// on the widest vectors the processor runs (AVX-512, else AVX2 with FMA, else scalar), and the
// memory bandwidth of a STREAM triad, a[i] = b[i] + s c[i], over three arrays each the size of the
// last-level cache, within [64 MiB, 256 MiB]. Each is repeated; the ceiling is the best
// repetition, as STREAM reports it, with the median and the worst for its spread.
#pragma once

#include "output/ceilings.hpp"

#include <vector>

namespace harness::roofline {

using output::Ceilings;
using output::Measured;

// Takes a second or two. `threads` >= 1.
Ceilings measure_ceilings(int threads);
// The FMA rate alone (a few tenths of a second).
Measured measure_fma_rate(int threads);

// The best, median and worst of rates.
Measured spread_of(std::vector<double> rates);

}  // namespace harness::roofline
