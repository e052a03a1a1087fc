// Step progress on the console ("onednn: step 12/23 (timed 9/20), 14.2 s"), only when it is a
// terminal, so that logs and CI output stay clean.
#pragma once

#include <chrono>
#include <string>

namespace harness::run {

class Progress {
public:
    Progress(std::string backend, int warmup, int iterations);
    void step(int done);  // `done` steps finished so far
    void done();          // clears the line

private:
    std::string backend_;
    int warmup_, iterations_;
    bool enabled_;
    std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace harness::run
