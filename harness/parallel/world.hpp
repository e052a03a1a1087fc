// The ranks of a data-parallel run (docs/parallel.md) and the few collective operations the
// harness itself needs besides the gradients': the slowest rank's times, a verdict any rank
// reached, an identifier every rank must share.
#pragma once

#include "hb/cpu.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace harness::parallel {

class World {
public:
    virtual ~World() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual int local_size() const = 0;  // the ranks on this rank's machine
    // Element by element, the largest value over every rank, on every rank.
    virtual std::vector<double> max_each(const std::vector<double>& values) const = 0;
    virtual bool any(bool value) const = 0;  // true on some rank
    // Rank `root`'s bytes on every rank (the same count everywhere).
    virtual void broadcast(void* bytes, int64_t count, int root) const = 0;
    virtual void barrier() const = 0;

    // More ranks on some machine than it has logical processors.
    bool oversubscribed() const { return any(local_size() > hb::logical_processors()); }
};

// One rank in the harness's own worker process, without a launcher.
class SingleWorld : public World {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int local_size() const override { return 1; }
    std::vector<double> max_each(const std::vector<double>& values) const override {
        return values;
    }
    bool any(bool value) const override { return value; }
    void broadcast(void*, int64_t, int) const override {}
    void barrier() const override {}
};

}  // namespace harness::parallel
