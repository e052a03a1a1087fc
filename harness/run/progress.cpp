#include "run/progress.hpp"

#include "run/library_output.hpp"

#include <unistd.h>

#include <cstdio>

namespace harness::run {

namespace {
constexpr auto kRefresh = std::chrono::milliseconds(200);
}

Progress::Progress(std::string backend, int warmup, int iterations)
    : backend_(std::move(backend)),
      warmup_(warmup),
      iterations_(iterations),
      enabled_(isatty(fileno(console())) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_ - kRefresh) {}

void Progress::step(int done) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_print_ < kRefresh && done < warmup_ + iterations_) return;
    last_print_ = now;
    double elapsed = std::chrono::duration<double>(now - start_).count();
    if (done <= warmup_)
        std::fprintf(console(), "\r\033[K%s: warm-up step %d/%d, %.1f s", backend_.c_str(), done,
                     warmup_, elapsed);
    else
        std::fprintf(console(), "\r\033[K%s: step %d/%d, %.1f s", backend_.c_str(), done - warmup_,
                     iterations_, elapsed);
    std::fflush(console());
}

void Progress::done() {
    if (!enabled_) return;
    std::fprintf(console(), "\r\033[K");
    std::fflush(console());
}

}  // namespace harness::run
