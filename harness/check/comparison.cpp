#include "check/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace harness::check {

namespace {

// The largest |v[i]| where `keep` is true (or of all, when `keep` is empty).
double max_magnitude(const std::vector<float>& v, const std::vector<bool>& keep = {}) {
    double m = 0;
    for (size_t i = 0; i < v.size(); ++i)
        if (keep.empty() || keep[i]) m = std::max(m, std::fabs(static_cast<double>(v[i])));
    return m;
}

// Only elements where `keep` is true (or all, when `keep` is empty) are compared; a non-finite
// candidate value anywhere makes the difference infinite, so it never passes. The scale is the
// largest |b| (|b - origin| when `origin` is given: how far b moved), or `floor` when larger; the
// resolution is that of a format of `significand_bits` at the largest |b|.
Difference tensor_difference(std::string quantity, const std::vector<float>& a,
                             const std::vector<float>& b, const std::vector<bool>& keep,
                             double floor, double tolerance, int significand_bits,
                             const std::vector<float>* origin = nullptr) {
    Difference d;
    d.quantity = std::move(quantity);
    d.max_abs = 0;
    double largest = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (!keep.empty() && !keep[i]) {
            ++d.undetermined;
            if (!std::isfinite(a[i])) d.max_abs = std::numeric_limits<double>::infinity();
            continue;
        }
        double diff = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        d.max_abs =
            diff == diff ? std::max(d.max_abs, diff) : std::numeric_limits<double>::infinity();
        const double from = origin ? static_cast<double>((*origin)[i]) : 0.0;
        largest = std::max(largest, std::fabs(static_cast<double>(b[i]) - from));
    }
    d.scale = std::max({largest, floor, std::numeric_limits<double>::min()});
    d.relative = d.max_abs / d.scale;
    d.tolerance = tolerance;
    d.resolution = std::ldexp(max_magnitude(b, keep), -significand_bits) / d.scale;
    return d;
}

using Masks = std::map<std::string, std::vector<bool>>;

// Compares every tensor of `baseline` with the same-named one of `candidate`; false (and
// `problem` set) when one is missing or has another size.
bool compare_tensors(const std::string& kind, const std::map<std::string, std::vector<float>>& a,
                     const std::map<std::string, std::vector<float>>& b, const Masks& masks,
                     double floor, double tolerance, int significand_bits, Comparison& out) {
    for (const auto& [name, expected] : b) {
        auto it = a.find(name);
        if (it == a.end()) {
            out.problem = kind + " " + name + " missing from the backend's capture";
            return false;
        }
        if (it->second.size() != expected.size()) {
            out.problem = kind + " " + name + ": " + std::to_string(it->second.size()) +
                          " elements, baseline has " + std::to_string(expected.size());
            return false;
        }
        auto mask = masks.find(name);
        out.differences.push_back(
            tensor_difference(kind + " " + name, it->second, expected,
                              mask == masks.end() ? std::vector<bool>{} : mask->second, floor,
                              tolerance, significand_bits));
    }
    return true;
}

// Per trainable tensor: true where the step-1 gradient is clear of zero by more than the error
// the gradient tolerance allows, so that every conforming backend moves the parameter the same way.
Masks determined_updates(const std::map<std::string, std::vector<float>>& gradients, double floor,
                         double tolerance) {
    Masks masks;
    for (const auto& [name, g] : gradients) {
        const double allowed = tolerance * std::max(max_magnitude(g), floor);
        std::vector<bool> keep(g.size());
        for (size_t i = 0; i < g.size(); ++i)
            keep[i] = std::fabs(static_cast<double>(g[i])) > allowed;
        masks[name] = std::move(keep);
    }
    return masks;
}

}  // namespace

Tolerance tolerance_for(hb::Math math) {
    switch (math) {
        case hb::Math::fp32:
            break;
        case hb::Math::fp64:
            return {"fp64 (fp32 strict tolerances)", 1e-4, 2e-3, 2e-3, false, 24, 1e-3, 0};
        case hb::Math::tf32:
            return {"tf32 (reduced precision)", 1e-2, 5e-2, 5e-2, true, 11, 1e-2, 0, true};
        case hb::Math::fp16:
            return {"fp16 mixed (reduced precision)", 3e-2, 1.5e-1, 1e-1, true, 11, 3e-2, 0, true};
        case hb::Math::bf16:
            return {"bf16 mixed (reduced precision)", 3e-2, 1.5e-1, 1e-1, true, 8, 3e-2, 0, true};
    }
    return {"fp32 strict", 1e-4, 2e-3, 2e-3, false, 24, 1e-3, 0};
}

// Over the worst errors of the CPU backends measured on layer configurations alone, with a margin
// (docs/conformance.md "Tolerances of one layer"); they floor the ensemble's, which does not model
// the rounding of a parameter gradient's sum over positions that a layer alone shows.
Tolerance layer_tolerance_for(hb::Math math) {
    Tolerance t = tolerance_for(math);
    if (t.reduced_precision) return t;
    t.label = "fp32 strict, one layer";
    t.loss = 1e-5;
    t.gradient = 1e-3;
    t.state = 1e-3;
    t.floors_with_ensemble = true;
    return t;
}

const Difference* Comparison::worst_abs() const {
    const Difference* worst = nullptr;
    for (const auto& d : differences)
        if (!worst || d.max_abs > worst->max_abs) worst = &d;
    return worst;
}

const Difference* Comparison::worst_relative() const {
    const Difference* worst = nullptr;
    for (const auto& d : differences)
        if (d.determined && (!worst || !(d.ratio() <= worst->ratio()))) worst = &d;
    return worst;
}

int Comparison::undetermined_quantities() const {
    return static_cast<int>(std::count_if(differences.begin(), differences.end(),
                                          [](const Difference& d) { return !d.determined; }));
}

namespace {

// The backend's state of one trainable tensor against its updates replayed from `initial`.
Difference update_difference(const std::string& name, const std::vector<float>& state,
                             const std::vector<double>& replayed, const std::vector<float>& initial,
                             double rounding, double tolerance) {
    Difference d;
    d.quantity = "update " + name;
    d.tolerance = tolerance;
    d.rounding = rounding;
    double movement = 0, excess = 0;
    for (size_t i = 0; i < state.size(); ++i) {
        movement = std::max(movement, std::fabs(replayed[i] - static_cast<double>(initial[i])));
        const double diff = std::fabs(static_cast<double>(state[i]) - replayed[i]);
        if (!(diff == diff) || std::isinf(diff)) {
            d.max_abs = excess = std::numeric_limits<double>::infinity();
            continue;
        }
        d.max_abs = std::max(d.max_abs, diff);
        const double magnitude =
            std::max(std::fabs(static_cast<double>(state[i])), std::fabs(replayed[i]));
        excess = std::max(excess, diff - rounding * magnitude);
    }
    d.scale = std::max(movement, std::numeric_limits<double>::min());
    d.relative = excess / d.scale;
    return d;
}

// Every difference of candidate against baseline with the fixed tolerances, step k's gradients
// against `later_baseline`'s; `pass` is not set.
Comparison measure(const StepCapture& candidate, const StepCapture& baseline,
                   const LaterGradients* later_baseline, const Tolerance& tolerance,
                   const UpdateReplay* replay) {
    Comparison out;
    out.tolerance = tolerance;
    if (candidate.losses.size() != baseline.losses.size()) {
        out.problem = "the backend ran " + std::to_string(candidate.losses.size()) +
                      " steps, the baseline " + std::to_string(baseline.losses.size());
        return out;
    }
    const bool gradients = !candidate.gradients.empty();
    if (!gradients)
        out.not_compared.push_back(
            "gradients: the plugin cannot give them (no HB_CAP_GRADIENTS); its parameters after "
            "the last step are measured against the baseline's, not against its own updates "
            "replayed");
    if (replay && candidate.later_gradients.size() + 1 != candidate.losses.size()) {
        out.problem = "the backend's capture has the gradients of " +
                      std::to_string(candidate.later_gradients.size() + 1) + " steps, not " +
                      std::to_string(candidate.losses.size());
        return out;
    }
    for (size_t k = 0; k < baseline.losses.size(); ++k) {
        Difference d;
        d.quantity = "loss[" + std::to_string(k + 1) + "]";
        d.max_abs = std::fabs(candidate.losses[k] - baseline.losses[k]);
        if (!(d.max_abs == d.max_abs)) d.max_abs = std::numeric_limits<double>::infinity();
        d.scale = std::max(std::fabs(baseline.losses[k]), std::numeric_limits<double>::min());
        d.relative = d.max_abs / d.scale;
        d.tolerance = tolerance.loss;
        d.resolution = std::ldexp(1.0, -tolerance.significand_bits);
        out.differences.push_back(d);
    }
    double largest_gradient = 0;
    for (const auto& kv : baseline.gradients)
        largest_gradient = std::max(largest_gradient, max_magnitude(kv.second));
    const double floor = tolerance.gradient_floor * largest_gradient;
    if (gradients && !compare_tensors("gradient", candidate.gradients, baseline.gradients, {},
                                      floor, tolerance.gradient, tolerance.significand_bits, out))
        return out;
    if (!baseline.input_gradient.empty()) {
        if (candidate.input_gradient.empty()) {
            out.not_compared.push_back(
                "gradient input: the plugin cannot give it (no HB_CAP_INPUT_GRADIENT)");
        } else if (candidate.input_gradient.size() != baseline.input_gradient.size()) {
            out.problem = "gradient input: " + std::to_string(candidate.input_gradient.size()) +
                          " elements, baseline has " +
                          std::to_string(baseline.input_gradient.size());
            return out;
        } else {
            // Measured against its own largest element: the input's gradient is of another
            // magnitude than the parameters'.
            out.differences.push_back(tensor_difference(
                "gradient input", candidate.input_gradient, baseline.input_gradient, {},
                tolerance.gradient_floor * max_magnitude(baseline.input_gradient),
                tolerance.gradient, tolerance.significand_bits));
        }
    }

    const size_t anchored_steps = later_baseline ? later_baseline->size() : 0;
    for (size_t k = 0; k < anchored_steps; ++k) {
        const auto& expected = (*later_baseline)[k];
        if (!candidate.anchored || k >= candidate.anchored->size()) {
            out.problem = "gradient[" + std::to_string(k + 2) + "] missing from the capture";
            return out;
        }
        double largest = 0;
        for (const auto& kv : expected) largest = std::max(largest, max_magnitude(kv.second));
        if (!compare_tensors("gradient[" + std::to_string(k + 2) + "]", (*candidate.anchored)[k],
                             expected, {}, tolerance.gradient_floor * largest, tolerance.gradient,
                             tolerance.significand_bits, out))
            return out;
    }

    // The running statistics after step 1: they depend on its forward pass alone, not on which
    // way RMSProp moved a parameter whose gradient is within rounding of zero.
    for (const auto& [name, expected] : baseline.first_state) {
        auto it = candidate.first_state.find(name);
        if (it == candidate.first_state.end()) continue;
        if (it->second.size() != expected.size()) {
            out.problem = "state-1 " + name + ": " + std::to_string(it->second.size()) +
                          " elements, baseline has " + std::to_string(expected.size());
            return out;
        }
        const std::vector<float>* initial = nullptr;
        if (replay) {
            auto found = replay->initial.find(name);
            if (found != replay->initial.end() && found->second.size() == expected.size())
                initial = &found->second;
        }
        out.differences.push_back(tensor_difference("state-1 " + name, it->second, expected, {},
                                                    tolerance.state_floor, tolerance.state,
                                                    tolerance.significand_bits, initial));
    }

    const Masks masks =
        replay ? Masks{} : determined_updates(baseline.gradients, floor, tolerance.gradient);
    const double rounding = static_cast<double>(candidate.losses.size()) *
                            std::ldexp(1.0, 1 - tolerance.significand_bits);
    for (const auto& [name, expected] : baseline.state) {
        auto it = candidate.state.find(name);
        if (it == candidate.state.end()) {
            out.problem = "state " + name + " missing from the backend's capture";
            return out;
        }
        const std::vector<float>& actual = it->second;
        if (actual.size() != expected.size()) {
            out.problem = "state " + name + ": " + std::to_string(actual.size()) +
                          " elements, baseline has " + std::to_string(expected.size());
            return out;
        }
        const std::vector<float>* initial = nullptr;
        if (replay) {
            auto found = replay->initial.find(name);
            if (found == replay->initial.end() || found->second.size() != expected.size()) {
                out.problem = "state " + name + ": no initial value of its size to start from";
                return out;
            }
            initial = &found->second;
        }
        const bool trainable = baseline.gradients.count(name) > 0;
        if (replay && trainable) {
            std::vector<const std::vector<float>*> steps = {&candidate.gradients.at(name)};
            for (const auto& later : candidate.later_gradients) {
                auto g = later.find(name);
                if (g == later.end() || g->second.size() != expected.size()) {
                    out.problem =
                        "gradient " + name + " of a later step missing or of another size";
                    return out;
                }
                steps.push_back(&g->second);
            }
            out.differences.push_back(
                update_difference(name, actual, replay_rmsprop(replay->optimizer, *initial, steps),
                                  *initial, rounding, tolerance.state));
            continue;
        }
        auto mask = masks.find(name);
        out.differences.push_back(tensor_difference(
            "state " + name, actual, expected,
            mask == masks.end() ? std::vector<bool>{} : mask->second, tolerance.state_floor,
            tolerance.state, tolerance.significand_bits, initial));
    }
    return out;
}

}  // namespace

std::vector<double> replay_rmsprop(const hb_optimizer& o, const std::vector<float>& initial,
                                   const std::vector<const std::vector<float>*>& gradients) {
    const double lr = o.learning_rate, alpha = o.alpha, eps = o.eps, momentum = o.momentum,
                 decay = o.weight_decay;
    const bool torch = o.variant == HB_RMSPROP_TORCH;
    std::vector<double> p(initial.begin(), initial.end());
    for (size_t i = 0; i < p.size(); ++i) {
        double v = o.initial_square_average, buffer = 0;
        for (const std::vector<float>* step : gradients) {
            const double g = static_cast<double>((*step)[i]) + decay * p[i];
            v = alpha * v + (1 - alpha) * g * g;
            const double denominator = torch ? std::sqrt(v) + eps : std::sqrt(v + eps);
            if (momentum == 0) {
                p[i] -= lr * g / denominator;
            } else if (torch) {
                buffer = momentum * buffer + g / denominator;
                p[i] -= lr * buffer;
            } else {
                buffer = momentum * buffer + lr * g / denominator;
                p[i] -= buffer;
            }
        }
    }
    return p;
}

namespace {

// Each quantity's relative distance of `member` from `baseline`, measured as measure() measures
// the candidate's.
std::map<std::string, double> distances(const StepCapture& member, const StepCapture& baseline,
                                        const Tolerance& tolerance, const UpdateReplay* replay) {
    std::map<std::string, double> of;
    const Comparison c =
        measure(member, baseline, member.anchored_baseline.get(), tolerance, replay);
    if (!c.problem.empty()) return of;
    for (const auto& d : c.differences) of[d.quantity] = d.relative;
    return of;
}

// How many quantities are out of bounds, "update"s aside (they take no noise).
size_t out_of_bounds_from(const Comparison& c) {
    return static_cast<size_t>(
        std::count_if(c.differences.begin(), c.differences.end(), [](const Difference& d) {
            return d.out_of_bounds() && d.quantity.rfind("update ", 0) != 0;
        }));
}

// Marks each quantity of `out` out of bounds from the baseline's value but within its tolerance
// of member `m`'s, measured over the same scale.
void near_member(Comparison& out, const StepCapture& candidate, const StepCapture& member, size_t m,
                 const Tolerance& tolerance, const UpdateReplay* replay) {
    const Comparison from = measure(candidate, member, member.anchored.get(), tolerance, replay);
    if (!from.problem.empty()) return;
    std::map<std::string, double> max_abs;
    for (const auto& d : from.differences) max_abs[d.quantity] = d.max_abs;
    for (Difference& d : out.differences) {
        if (!d.out_of_bounds() || d.quantity.rfind("update ", 0) == 0) continue;
        auto it = max_abs.find(d.quantity);
        if (it == max_abs.end() || !(it->second / d.scale <= d.tolerance)) continue;
        d.member = static_cast<int>(m) + 1;
        d.member_relative = it->second / d.scale;
    }
}

}  // namespace

std::vector<const StepCapture*> members_of(const std::vector<StepCapture>& captures, size_t count) {
    std::vector<const StepCapture*> members;
    for (size_t m = 0; m < std::min(count, captures.size()); ++m) members.push_back(&captures[m]);
    return members;
}

Comparison compare(const StepCapture& candidate, const StepCapture& baseline,
                   const Tolerance& tolerance, const std::vector<const StepCapture*>& ensemble,
                   const UpdateReplay* replay, size_t spread_members) {
    // Without the candidate's gradients there is nothing to replay, for it or for the members
    // measured as it is.
    if (candidate.gradients.empty()) replay = nullptr;
    Comparison out =
        measure(candidate, baseline, candidate.anchored_baseline.get(), tolerance, replay);
    if (!out.problem.empty()) return out;
    out.members = static_cast<int>(ensemble.size());
    if (!ensemble.empty()) {
        std::map<std::string, double> spread;
        for (size_t m = 0; m < std::min(spread_members, ensemble.size()); ++m)
            for (const auto& [quantity, distance] :
                 distances(*ensemble[m], baseline, tolerance, replay))
                spread[quantity] = std::isfinite(distance)
                                       ? std::max(spread[quantity], distance)
                                       : std::numeric_limits<double>::infinity();
        for (Difference& d : out.differences) {
            if (d.quantity.rfind("update ", 0) == 0) continue;
            auto it = spread.find(d.quantity);
            if (it == spread.end()) continue;
            d.noise = it->second;
            d.determined = d.noise < kUndeterminedSpread;
            if (!std::isfinite(d.noise)) continue;
            const double noise = kNoiseFactor * std::max(d.noise, d.resolution);
            d.tolerance = tolerance.floors_with_ensemble ? std::max(d.tolerance, noise) : noise;
        }
    }
    for (Difference& d : out.differences)
        if (d.tolerance >= kJudgingTolerance) d.determined = false;
    for (size_t m = 0; m < ensemble.size() && out_of_bounds_from(out) > 0; ++m)
        near_member(out, candidate, *ensemble[m], m, tolerance, replay);
    out.pass = std::none_of(out.differences.begin(), out.differences.end(),
                            [](const Difference& d) { return d.out_of_bounds(); });
    return out;
}

Comparison compare_growing(const StepCapture& candidate, const StepCapture& baseline,
                           const Tolerance& tolerance, const UpdateReplay* replay, int first,
                           int last,
                           const std::function<std::vector<const StepCapture*>(int n)>& members) {
    for (int n = first;; ++n) {
        const std::vector<const StepCapture*> ensemble = members(n);
        Comparison out =
            compare(candidate, baseline, tolerance, ensemble, replay, static_cast<size_t>(first));
        if (out.pass || !out.problem.empty() || n >= last || static_cast<int>(ensemble.size()) < n)
            return out;
    }
}

}  // namespace harness::check
