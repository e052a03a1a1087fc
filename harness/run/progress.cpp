#include "run/progress.hpp"

#include "output/stats.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace harness::run {

namespace {

int terminal_columns() {
    winsize size{};
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    return 80;
}

std::string phase_text(const StepEvent& e, const ProgressPlan& plan) {
    if (e.phase == "loading") return "loading";
    if (e.phase == "warmup")
        return e.done == 0 ? fmt::format("first step (warm-up 1/{})", e.total)
                           : fmt::format("warm-up {}/{}", e.done, e.total);
    if (e.phase == "timed")
        return e.done == 0 && plan.warmup == 0 ? fmt::format("first step (timed 1/{})", e.total)
                                               : fmt::format("timed {}/{}", e.done, e.total);
    if (e.phase == "capture")
        return e.done == 0 ? fmt::format("first step (of {})", e.total)
                           : fmt::format("step {}/{}", e.done, e.total);
    if (e.phase == "layers")
        return e.done == 0 ? "the whole step"
                           : fmt::format("configuration {} of {}", e.done, e.total);
    return fmt::format("{} {}/{}", e.phase, e.done, e.total);
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return output::percentile(values, 0.5);
}

}  // namespace

std::string duration_text(double ms) {
    const double s = ms / 1000;
    if (s < 60) return fmt::format("{:.{}f} s", s, s < 10 ? 2 : 1);
    const long total = std::lround(s);
    if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
    return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

bool ProgressLine::wanted(bool quiet) {
    if (quiet || !isatty(STDERR_FILENO)) return false;
    const char* term = std::getenv("TERM");
    return !(term && std::strcmp(term, "dumb") == 0);
}

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {
    const char* no_color = std::getenv("NO_COLOR");
    bold_ = !(no_color && *no_color);
}

void ProgressLine::begin(std::string label, const ProgressPlan& plan) {
    label_ = std::move(label);
    plan_ = plan;
    timed_ms_.clear();
    last_ms_ = -1;
}

double ProgressLine::worker_left_ms(const StepEvent& e) const {
    int left = 0;
    if (e.phase == "loading") left = plan_.warmup + plan_.timed + plan_.profiled;
    if (e.phase == "warmup") left = e.total - e.done + plan_.timed + plan_.profiled;
    if (e.phase == "timed" || e.phase == "capture") left = e.total - e.done + plan_.profiled;
    if (e.phase == "profiling") left = e.total - e.done;
    double per_step = !timed_ms_.empty() ? median_of(timed_ms_) : last_ms_;
    if (per_step < 0 && seen_flops_ > 0 && plan_.flops_per_step > 0)
        per_step = seen_ms_ / seen_flops_ * plan_.flops_per_step;
    return per_step < 0 ? -1 : left * per_step;
}

std::string ProgressLine::text(const StepEvent& e) const {
    std::string line = label_ + ": " + phase_text(e, plan_);
    if (last_ms_ >= 0) line += ", last " + duration_text(last_ms_);
    if (!timed_ms_.empty()) line += ", median " + duration_text(median_of(timed_ms_));
    const double left = e.phase == "layers" ? -1 : worker_left_ms(e);
    if (left >= 0) line += "; " + duration_text(left) + " left";
    if (left >= 0 && plan_.later_flops > 0 && seen_flops_ > 0)
        line += ", all ~" + duration_text(left + plan_.later_flops * seen_ms_ / seen_flops_) +
                " (estimate)";
    return line;
}

void ProgressLine::update(const StepEvent& e) {
    if (e.last_ms >= 0) {
        last_ms_ = e.last_ms;
        if (e.phase == "timed" || e.phase == "capture") timed_ms_.push_back(e.last_ms);
        if (plan_.flops_per_step > 0 && e.phase != "layers") {
            seen_ms_ += e.last_ms;
            seen_flops_ += plan_.flops_per_step;
        }
    }
    if (!enabled_) return;
    std::string line = "      " + text(e);
    const size_t columns = static_cast<size_t>(terminal_columns());
    if (line.size() >= columns) line.resize(columns - 1);  // a wrapped line cannot be rewritten
    const size_t name_end = std::min(line.size(), 6 + label_.size());
    if (bold_) line = line.substr(0, 6) + "\033[1m" + line.substr(6, name_end - 6) + "\033[0m" +
                      line.substr(name_end);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressLine::end() {
    if (!enabled_ || !drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace harness::run
