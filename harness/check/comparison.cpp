#include "check/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace harness::check {

namespace {

constexpr double kNoiseFactor = 10;

double max_magnitude(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
    return m;
}

// Only elements where `keep` is true (or all, when `keep` is empty) are compared; a non-finite
// candidate value anywhere makes the difference infinite, so it never passes.
Difference tensor_difference(std::string quantity, const std::vector<float>& a,
                             const std::vector<float>& b, const std::vector<bool>& keep,
                             double floor, double tolerance) {
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
        largest = std::max(largest, std::fabs(static_cast<double>(b[i])));
    }
    d.scale = std::max({largest, floor, std::numeric_limits<double>::min()});
    d.relative = d.max_abs / d.scale;
    d.tolerance = tolerance;
    return d;
}

using Masks = std::map<std::string, std::vector<bool>>;

// Compares every tensor of `baseline` with the same-named one of `candidate`; false (and
// `problem` set) when one is missing or has another size.
bool compare_tensors(const std::string& kind, const std::map<std::string, std::vector<float>>& a,
                     const std::map<std::string, std::vector<float>>& b, const Masks& masks,
                     double floor, double tolerance, Comparison& out) {
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
        out.differences.push_back(tensor_difference(
            kind + " " + name, it->second, expected,
            mask == masks.end() ? std::vector<bool>{} : mask->second, floor, tolerance));
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

Tolerance tolerance_for(const std::string& math_mode) {
    if (math_mode == "fp32" || math_mode.empty())
        return {"fp32 strict", 1e-4, 2e-3, 2e-3, false, 24, 1e-3, 0};
    if (math_mode == "tf32")
        return {"tf32 (reduced precision)", 1e-2, 5e-2, 5e-2, true, 11, 1e-2, 0};
    if (math_mode == "fp16")
        return {"fp16 mixed (reduced precision)", 3e-2, 1.5e-1, 1e-1, true, 11, 3e-2, 0};
    if (math_mode == "bf16")
        return {"bf16 mixed (reduced precision)", 3e-2, 1.5e-1, 1e-1, true, 8, 3e-2, 0};
    return {math_mode + " (unknown math mode, reduced-precision tolerance)",
            3e-2,
            1.5e-1,
            1e-1,
            true,
            8,
            3e-2,
            0};
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
        if (!worst || d.relative / d.tolerance > worst->relative / worst->tolerance) worst = &d;
    return worst;
}

namespace {

// Every difference of candidate against baseline with the fixed tolerances; `pass` is not set.
Comparison measure(const StepCapture& candidate, const StepCapture& baseline,
                   const Tolerance& tolerance) {
    Comparison out;
    out.tolerance = tolerance;
    if (candidate.losses.size() != baseline.losses.size()) {
        out.problem = "the backend ran " + std::to_string(candidate.losses.size()) +
                      " steps, the baseline " + std::to_string(baseline.losses.size());
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
        out.differences.push_back(d);
    }
    double largest_gradient = 0;
    for (const auto& kv : baseline.gradients)
        largest_gradient = std::max(largest_gradient, max_magnitude(kv.second));
    const double floor = tolerance.gradient_floor * largest_gradient;
    if (!compare_tensors("gradient", candidate.gradients, baseline.gradients, {}, floor,
                         tolerance.gradient, out) ||
        !compare_tensors("state", candidate.state, baseline.state,
                         determined_updates(baseline.gradients, floor, tolerance.gradient),
                         tolerance.state_floor, tolerance.state, out))
        return out;
    return out;
}

}  // namespace

Comparison compare(const StepCapture& candidate, const StepCapture& baseline,
                   const Tolerance& tolerance, const StepCapture* rounding_noise) {
    Comparison out = measure(candidate, baseline, tolerance);
    if (!out.problem.empty()) return out;
    if (rounding_noise) {
        const Comparison noise = measure(*rounding_noise, baseline, tolerance);
        if (noise.problem.empty() && noise.differences.size() == out.differences.size())
            for (size_t i = 0; i < out.differences.size(); ++i) {
                Difference& d = out.differences[i];
                d.noise = noise.differences[i].relative;
                if (std::isfinite(d.noise))
                    d.tolerance = std::max(d.tolerance, kNoiseFactor * d.noise);
            }
    }
    out.pass = std::all_of(out.differences.begin(), out.differences.end(),
                           [](const Difference& d) { return d.within(); });
    return out;
}

}  // namespace harness::check
