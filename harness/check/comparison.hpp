// Conformance (docs/design.md §7): how far a backend's training step is from the baseline's, tensor
// by tensor, and whether that is within the tolerance of the backend's math mode.
#pragma once

#include "hb/manifest.hpp"
#include "hb/plugin.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace harness::check {

// The gradients of steps 2, 3, ... of every trainable tensor.
using LaterGradients = std::vector<std::map<std::string, std::vector<float>>>;

// What a check run captures: the loss of every step, every parameter gradient after step 1 (and
// the input's), and every parameter and BN running statistic after the last step.
struct StepCapture {
    std::vector<double> losses;
    std::map<std::string, std::vector<float>> gradients;  // trainable tensors
    std::map<std::string, std::vector<float>> state;      // all tensors
    // What the backend's later updates used.
    LaterGradients later_gradients;
    // The gradient of step 1's input batch; empty when the plugin cannot give it.
    std::vector<float> input_gradient;
    // Every tensor after step 1, where the capture has it (the BN running statistics are
    // compared there too: they depend on step 1's forward pass alone).
    std::map<std::string, std::vector<float>> first_state;
    // The gradients of steps 2, 3, ... from a state both sides share (docs/conformance.md "Step
    // k"): this implementation's (`anchored`) and the baseline's (`anchored_baseline`), step k of
    // both computed from the same state after step k - 1 and on step k's batch: the backend's
    // state. A backend's are its own later_gradients; an ensemble member's are its own computed
    // from the backend's states. Null where the check has none (one step, or no gradients).
    std::shared_ptr<const LaterGradients> anchored, anchored_baseline;
};

// What every backend started from: with it, each trainable tensor's state after the last step is
// checked against the backend's own updates replayed in double (see compare).
struct UpdateReplay {
    hb_optimizer optimizer{};
    std::map<std::string, std::vector<float>> initial;  // every tensor before step 1
};

// RMSProp (docs/design.md §4) in double: `initial` after one update per gradient of `gradients`.
std::vector<double> replay_rmsprop(const hb_optimizer& optimizer, const std::vector<float>& initial,
                                   const std::vector<const std::vector<float>*>& gradients);

struct Tolerance {
    std::string label;  // "fp32 strict", "tf32 (reduced precision)", ...
    // Fixed relative tolerances: without an ensemble, and for "update" quantities (`state`).
    double loss = 0, gradient = 0, state = 0;
    bool reduced_precision = false;
    // Significand bits of the format the backend rounds to (24 float32, 11 TF32 and float16, 8
    // bfloat16): the baseline's rounding noise is measured at that precision.
    int significand_bits = 24;
    // A gradient tensor is measured against at least this fraction of the largest gradient.
    double gradient_floor = 1e-3;
    // A tensor's value after the last step is measured against at least this magnitude: with
    // `state`, an absolute tolerance for tensors whose values are small (0: none).
    double state_floor = 0;
    // With a rounding-noise ensemble, whether `loss`, `gradient` and `state` still floor each
    // quantity's tolerance (reduced precision), or only the format's resolution does (float32).
    bool floors_with_ensemble = false;
};
Tolerance tolerance_for(hb::Math math);
// The tolerances of one layer configuration checked alone (`harness check --layers`,
// docs/conformance.md "Layer by layer"): in float32 tighter than a whole step's, which
// rounding carries further; in reduced precision the same as tolerance_for's.
Tolerance layer_tolerance_for(hb::Math math);

// One compared quantity: a step's loss, a tensor's gradient or a tensor's final value.
struct Difference {
    std::string quantity;  // "loss[1]", "gradient stack0.out.weight", "state pre.bn.running_var"
    double max_abs = 0;    // max |candidate - baseline|
    double relative = 0;   // max_abs over the scale below
    double scale = 0;      // what max_abs is measured against
    double tolerance = 0;
    // The rounding-noise ensemble's spread: the largest relative distance of one of its members
    // from the baseline, measured as this quantity is (0: no ensemble).
    double noise = 0;
    // The format's unit roundoff, 2^-p, at the quantity's largest value, relative to its scale:
    // the finest distance the ensemble's members, read back in that format, can show.
    double resolution = 0;
    // False when that spread is comparable to the quantity itself (kUndeterminedSpread): the
    // format cannot determine it at this data, and it is neither a pass nor a mismatch.
    bool determined = true;
    // Of the tolerance: elements whose difference is at most this many units of their own
    // magnitude count as equal (the rounding of a stored value; "update" quantities only).
    double rounding = 0;
    int64_t undetermined = 0;  // elements left out (see compare)
    // Where `relative` is over the tolerance and the value is within it of a member's of the
    // ensemble instead: that member (from 1), and the distance from its value over `scale`.
    int member = 0;
    double member_relative = 0;
    // The distance that judges it: from the baseline's value, or from that member's.
    double judged() const { return member > 0 ? member_relative : relative; }
    bool within() const { return judged() <= tolerance; }
    bool out_of_bounds() const { return determined && !within(); }
    // Over 1: out of bounds. An exact agreement is 0 even where the tolerance is 0 (every element
    // left out, or no rounding to allow for).
    double ratio() const { return judged() == 0 ? 0 : judged() / tolerance; }
};

struct Comparison {
    std::vector<Difference> differences;  // every quantity, in a stable order
    Tolerance tolerance;
    bool pass = false;
    int members = 0;      // of the rounding-noise ensemble it was compared with
    std::string problem;  // set when the captures cannot be compared (missing tensor, sizes)
    // Quantities the baseline has and the backend could not give, with why.
    std::vector<std::string> not_compared;
    const Difference* worst_abs() const;
    // The largest relative / tolerance ratio among the determined quantities.
    const Difference* worst_relative() const;
    int undetermined_quantities() const;
};

// The first `count` of `captures` (all of them by default), as compare() takes an ensemble.
std::vector<const StepCapture*> members_of(const std::vector<StepCapture>& captures,
                                           size_t count = SIZE_MAX);

// A quantity's tolerance is at least this many times the ensemble's spread.
constexpr double kNoiseFactor = 5;
// A quantity whose ensemble spread reaches this fraction of its scale is undetermined.
constexpr double kUndeterminedSpread = 0.5;
// So is one whose tolerance reaches this fraction of its scale: such a tolerance judges nothing.
constexpr double kJudgingTolerance = 1.0;

// Relative errors are normwise per tensor: max|a - b| over a scale. A gradient tensor is measured
// against max|baseline|, or at least a fraction of the largest gradient in the network
// (Tolerance::gradient_floor: 1e-3 in float32, more where the backend stores values in fewer
// bits), because some gradients are zero in exact arithmetic (a conv bias feeding a batchnorm)
// and then both sides only hold rounding noise that cannot agree in relative terms.
//
// Step k's gradients (k > 1) are "gradient[k] <name>", `anchored` against `anchored_baseline`,
// each against a floor from the largest of that step's baseline gradients. Taken from the same
// state, they are as well-conditioned as step 1's; on each side's own trajectory they would not
// be (RMSProp's first update moves a parameter by the sign of its gradient, which rounding does
// not determine where the gradient is near zero). How well-conditioned depends on the state, so
// the ensemble's members compute them from the backend's state too.
//
// The state after the last step is measured against how far it moved, not against its size, so
// that a tensor left un-updated is an error of 100% whatever its values:
//
// - With `replay`, each trainable tensor is "update <name>": the backend's state against its own
//   updates replayed in double from the initial state with the gradients the backend reported at
//   each step, measured against the largest replayed movement (max |replayed - initial|); an
//   element within steps x 2^(1 - significand bits) of its magnitude counts as equal (the
//   rounding of the stored value at each step). The backend's gradients are the ones that are
//   compared with the baseline's (step 1); the replay decides whether it applied them as RMSProp
//   says, element by element, with no rounding noise to amplify: RMSProp's first update, about
//   lr / sqrt(1 - alpha) times the *sign* of the gradient, is only ill-conditioned in the
//   gradient, and the replay takes the gradient as given.
// - Every other tensor (BN running statistics; without `replay`, the parameters too) is "state
//   <name>", against the baseline's, measured against the baseline's movement (max |baseline -
//   initial|; without `replay`, max |baseline|). Without `replay`, parameter elements whose
//   baseline step-1 gradient is within the gradient tolerance of zero (the direction RMSProp moves
//   them is not determined in float32) are left out and counted as `undetermined`.
//
// `ensemble`, when not empty, is the rounding-noise ensemble (docs/conformance.md): captures of the
// same step computed by implementations that round differently from one another at the precision
// the backend computes in (Tolerance::significand_bits). Each quantity's spread is the largest
// distance of a member from the baseline, measured as the quantity is; its tolerance is then
// kNoiseFactor times that spread, or times the format's resolution where the spread is finer, and
// at least the math mode's fixed tolerance where Tolerance::floors_with_ensemble says so. A
// quantity whose spread reaches kUndeterminedSpread, or whose tolerance reaches kJudgingTolerance,
// is undetermined: reported with its spread, not a pass nor a mismatch. "update" quantities take no
// noise: they compare the backend with itself, within the fixed `state` tolerance. Only the first
// `spread_members` of the ensemble measure the spread, so a tolerance does not widen with the
// number of members drawn. Every member's value is a correct outcome as the baseline's is: a
// quantity over its tolerance from the baseline's value is within bounds where it is within its
// tolerance of one member's (Difference::member: a decision within rounding that the backend and
// that member took). So a candidate that passes against some members passes against any ensemble
// that holds them and measures the spread with the same ones.
Comparison compare(const StepCapture& candidate, const StepCapture& baseline,
                   const Tolerance& tolerance, const std::vector<const StepCapture*>& ensemble = {},
                   const UpdateReplay* replay = nullptr, size_t spread_members = SIZE_MAX);

// compare() against the first `first` members of an ensemble (`members(n)`: its first n), which
// measure the spread, then, while the candidate does not pass, against one more at a time up to
// `last`: the verdict that `last` members give, from as few as hold it (Comparison::members).
// Stops where `members(n)` gives fewer than n.
Comparison compare_growing(const StepCapture& candidate, const StepCapture& baseline,
                           const Tolerance& tolerance, const UpdateReplay* replay, int first,
                           int last,
                           const std::function<std::vector<const StepCapture*>(int n)>& members);

}  // namespace harness::check
