// The order of a round's workers: drawn anew each round from the run's order seed, so that no
// backend always runs first, after the same neighbour or in the same minute of a drift
// (randomized multiple interleaved trials; docs/statistics.md, "Rounds").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace harness::run {

// A permutation of 0 .. n-1 for round `round` (1, 2, ...): a Fisher-Yates shuffle whose draws are
// the data generator's stream (seed, "round order <round>") (docs/design.md §5), each index drawn
// without bias by rejection. The same seed and round give the same order on every machine.
std::vector<size_t> round_order(size_t n, uint64_t seed, int round);

// The order of slot `slot` (0, 1, ...) of round `round`'s paired steps: a permutation of the n
// workers with a timed step left (in the order they started), drawn as round_order draws, from the
// stream (seed, "step order <round> <slot>") (docs/statistics.md, "Paired steps").
std::vector<size_t> step_order(size_t n, uint64_t seed, int round, int slot);

// A seed for a run that names none: from the clock and the process, recorded with the results.
uint64_t fresh_order_seed();

}  // namespace harness::run
