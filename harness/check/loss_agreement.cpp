#include "check/loss_agreement.hpp"

#include "check/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace harness::check {

namespace {

using output::BackendRun;

bool compared(const BackendRun& r) {
    return (r.status == output::Status::ok || r.status == output::Status::mismatch) &&
           (!r.warmup_losses.empty() || !r.losses.empty());
}

double loss_tolerance(const BackendRun& r) {
    return tolerance_for(r.math.value_or(hb::Math::fp32)).loss;
}

std::string mode_of(const BackendRun& r) {
    return hb::to_string(r.math.value_or(hb::Math::fp32));
}

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    const size_t n = xs.size();
    return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

void judge(BackendRun& r, double expected, const std::string& against, double tolerance) {
    const double loss = r.first_loss();
    const double difference = std::abs(loss - expected);
    const double relative = expected != 0 ? difference / std::abs(expected) : difference;
    const bool agrees = std::isfinite(loss) && relative <= tolerance;
    r.loss_agreement = agrees ? "ok" : "disagrees";
    r.loss_agreement_detail = fmt::format(
        "first-step loss {:.9g} {} {:.9g}, {}: relative difference {:.2g}, tolerance {:.2g}", loss,
        agrees ? "agrees with" : "against", expected, against, relative, tolerance);
}

}  // namespace

void annotate_loss_agreement(std::vector<BackendRun>& runs) {
    for (BackendRun& r : runs) r.loss_agreement = r.loss_agreement_detail = "";
    auto usable = [](const BackendRun& r) { return compared(r) && std::isfinite(r.first_loss()); };

    // The yardstick: the reference's first loss, else the median over the strictest math mode.
    const BackendRun* yardstick_run = nullptr;  // the one run the yardstick is, if any
    double yardstick = 0, yardstick_tolerance = 0;
    std::string against;
    for (const BackendRun& r : runs)
        if (usable(r) && r.plugin == kReferencePlugin) {
            yardstick_run = &r;
            yardstick = r.first_loss();
            yardstick_tolerance = loss_tolerance(r);
            against = "the reference's (" + r.backend + ")";
            break;
        }
    if (!yardstick_run) {
        double strictest = INFINITY;
        for (const BackendRun& r : runs)
            if (usable(r)) strictest = std::min(strictest, loss_tolerance(r));
        if (!std::isfinite(strictest)) return;  // no finite first loss at all
        std::vector<const BackendRun*> group;
        for (const BackendRun& r : runs)
            if (usable(r) && loss_tolerance(r) == strictest) group.push_back(&r);
        std::vector<double> losses;
        std::string names;
        for (const BackendRun* r : group) {
            losses.push_back(r->first_loss());
            names += (names.empty() ? "" : ", ") + r->backend;
        }
        yardstick = median(losses);
        yardstick_tolerance = strictest;
        if (group.size() == 1) {
            yardstick_run = group.front();
            against = names + "'s (" + mode_of(*group.front()) + ")";
        } else {
            against = "the median of " + names + " (" + mode_of(*group.front()) + ")";
        }
    }

    for (BackendRun& r : runs)
        if (compared(r) && &r != yardstick_run)
            judge(r, yardstick, against, std::max(loss_tolerance(r), yardstick_tolerance));
}

}  // namespace harness::check
