#include "check/check_runner.hpp"

#include "hb/sha256.hpp"
#include "data/dump.hpp"
#include "data/initial_state.hpp"
#include "model/hourglass.hpp"
#include "model/layer_units.hpp"
#include "output/csv_reader.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/scratch_dir.hpp"
#include "run/progress.hpp"
#include "run/runner.hpp"
#include "run/worker_launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

namespace harness::check {

namespace fs = std::filesystem;

namespace {

// The baseline: a config entry of that name, the oracle, or a plugin with its defaults.
run::WorkerJob baseline_job(const config::RunConfig& config, const CheckRequest& request) {
    run::WorkerJob job;
    job.unit = request.unit;
    job.backend = run::PluginDefaults{request.baseline, "cpu"};
    if (request.baseline == kOracle) {
        job.backend = run::PluginDefaults{"reference", "cpu"};
        job.options["math"] = "fp64";
    }
    for (size_t i = 0; i < config.backends.size(); ++i)
        if (config.backends[i].name == request.baseline) {
            job.backend = static_cast<int>(i);
            job.options.clear();
        }
    return job;
}

// Member `m` of the rounding-noise ensemble at `bits` significand bits.
run::WorkerJob ensemble_job(const CheckRequest& request, int m, int bits) {
    run::WorkerJob job;
    job.unit = request.unit;
    job.backend = run::PluginDefaults{"reference", "cpu"};
    job.options = ensemble_member_options(m, bits);
    return job;
}

// The trainable tensors' gradients in DIR/<prefix>k/ for each k from 2 while that folder exists
// (up to `last`).
LaterGradients later_gradients(const model::Graph& graph, const fs::path& dir,
                               const std::string& prefix, size_t last) {
    LaterGradients steps;
    for (size_t k = 2; k <= last && fs::exists(dir / (prefix + std::to_string(k))); ++k) {
        const fs::path folder = dir / (prefix + std::to_string(k));
        auto& step = steps.emplace_back();
        for (const auto& t : graph.tensors) {
            std::vector<int64_t> shape;
            if (t.trainable())
                step[t.name] = data::read_npy((folder / (t.name + ".npy")).string(), &shape);
        }
    }
    return steps;
}

StepCapture read_capture(const model::Graph& graph, const output::BackendRun& run,
                         const fs::path& dir) {
    StepCapture capture;
    capture.losses = run.losses;
    const bool gradients = fs::exists(dir / "gradient");  // where the plugin gives them
    for (const auto& t : graph.tensors) {
        std::vector<int64_t> shape;
        if (t.trainable() && gradients)
            capture.gradients[t.name] =
                data::read_npy((dir / "gradient" / (t.name + ".npy")).string(), &shape);
        capture.state[t.name] =
            data::read_npy((dir / "state" / (t.name + ".npy")).string(), &shape);
    }
    if (fs::exists(dir / "state-1"))
        for (const auto& t : graph.tensors)
            if (!t.trainable()) {
                std::vector<int64_t> shape;
                capture.first_state[t.name] =
                    data::read_npy((dir / "state-1" / (t.name + ".npy")).string(), &shape);
            }
    if (fs::exists(dir / "input-gradient.npy")) {
        std::vector<int64_t> shape;
        capture.input_gradient = data::read_npy((dir / "input-gradient.npy").string(), &shape);
    }
    capture.later_gradients = later_gradients(graph, dir, "gradient-", run.losses.size());
    return capture;
}

std::string baseline_problem(const config::RunConfig& config, const output::BackendRun& b,
                             double timeout_s) {
    if (b.status == output::Status::timeout)
        return fmt::format(
            "baseline '{}' gave no result within {} s on {}: the config is too big for it; pass "
            "--baseline with a backend that has passed a check on a smaller config",
            b.backend, timeout_s, config.name);
    if (b.status != output::Status::ok)
        return fmt::format("baseline '{}' {}: {}", b.backend, output::to_string(b.status),
                           b.message);
    if (b.nonfinite_loss) return fmt::format("baseline '{}' produced a non-finite loss", b.backend);
    return "";
}

// Steps 2 to K once more, each from a backend's own state after the step before, in the baseline
// and in members of the ensemble (docs/conformance.md "Step k"): computed once for each distinct
// states (one library under two entries gives the same bytes).
class AnchoredSteps {
public:
    struct Steps {
        std::shared_ptr<const LaterGradients> baseline;
        std::vector<std::shared_ptr<const LaterGradients>> members;  // the ensemble's, in order
        std::string problem;  // what failed; then no more are computed
        std::string backend;  // whose states they start from
        fs::path dir;         // that backend's capture
        int bits = 24;        // the ensemble's precision
    };

    AnchoredSteps(const config::RunConfig& config, const model::Graph& graph,
                  const CheckRequest& request, const run::WorkerJob& base, int& later)
        : config_(config), graph_(graph), request_(request), base_(base), later_(later) {}

    // The steps from the states of the backend `name` captured in `dir`, with the baseline's:
    // computed now, or those of an earlier backend whose states are the same bytes.
    Steps& from(int bits, const fs::path& dir, const std::string& name) {
        const auto key = std::pair{bits, states_digest(dir)};
        if (auto found = computed_.find(key); found != computed_.end()) {
            std::fprintf(stderr, "%s: steps 2 to %d from its own states, as %s's\n", name.c_str(),
                         request_.steps, found->second.backend.c_str());
            return found->second;
        }
        std::fprintf(stderr,
                     "%s: steps 2 to %d from its own states, in the baseline and the ensemble\n",
                     name.c_str(), request_.steps);
        Steps& steps = computed_[key];
        steps.backend = name;
        steps.dir = dir;
        steps.bits = bits;
        steps.baseline = capture(steps, base_, "baseline");
        return steps;
    }

    // Computes the steps of the ensemble's members up to the first `n`, unless one fails.
    void grow(Steps& steps, int n) {
        while (steps.problem.empty() && static_cast<int>(steps.members.size()) < n) {
            if (plugin_host::interrupted()) steps.problem = "interrupted";
            const int m = static_cast<int>(steps.members.size());
            if (steps.problem.empty())
                steps.members.push_back(capture(steps, ensemble_job(request_, m, steps.bits),
                                                fmt::format("member-{}", m + 1)));
        }
    }

private:
    std::shared_ptr<const LaterGradients> capture(Steps& steps, run::WorkerJob job,
                                                  const std::string& who) {
        job.capture = run::Capture{"", steps.dir.string(), request_.steps - 1};
        const fs::path at = steps.dir / "anchored" / who;
        const output::BackendRun run = run_capture(
            config_, job, 0, at, request_.progress,
            fmt::format("{} from {}'s states", who, steps.backend), std::max(0, --later_));
        if (steps.problem.empty())
            steps.problem = baseline_problem(
                config_, run, run::timeout_of(config_, run::entry_for(config_, job)));
        return std::make_shared<const LaterGradients>(
            later_gradients(graph_, at, "anchored-", static_cast<size_t>(request_.steps)));
    }

    // One digest of the backend's states after each step but the last.
    std::string states_digest(const fs::path& dir) const {
        std::string bytes;
        for (int k = 1; k < request_.steps; ++k) {
            std::vector<fs::path> files;
            for (const auto& f : fs::directory_iterator(dir / ("state-" + std::to_string(k))))
                files.push_back(f.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files)
                bytes += f.filename().string() + '\0' + output::read_text(f.string());
        }
        return hb::sha256_hex(bytes);
    }

    const config::RunConfig& config_;
    const model::Graph& graph_;
    const CheckRequest& request_;
    const run::WorkerJob& base_;
    int& later_;
    std::map<std::pair<int, std::string>, Steps> computed_;  // by bits and states digest
};

// Pairs the later steps of `actual` and of the first `n` members with the baseline's from the
// same states; with none where `steps` is null or failed.
void pair_later_steps(const AnchoredSteps::Steps* steps, StepCapture& actual,
                      std::vector<StepCapture>& members, size_t n) {
    const bool paired = steps && steps->problem.empty();
    actual.anchored_baseline = paired ? steps->baseline : nullptr;
    for (size_t m = 0; m < std::min(n, members.size()); ++m) {
        members[m].anchored = paired ? steps->members.at(m) : nullptr;
        members[m].anchored_baseline = actual.anchored_baseline;
    }
}

}  // namespace

std::map<std::string, std::string> ensemble_member_options(int m, int bits) {
    return {{"rounding_seed", std::to_string(m + 1)}, {"rounding_bits", std::to_string(bits)}};
}

output::BackendRun run_capture(const config::RunConfig& config, run::WorkerJob job, int steps,
                               const fs::path& dir, run::ProgressLine* progress,
                               const std::string& label, int later_captures) {
    job.overrides = {0, steps};
    job.result_path = (dir / "result.json").string();
    run::Capture capture = job.capture.value_or(run::Capture{});
    capture.dir = dir.string();
    job.capture = capture;
    steps += capture.anchored;  // for the progress line
    fs::create_directories(dir);
    const config::BackendEntry entry = run::entry_for(config, job);
    if (progress && progress->enabled()) {
        model::Graph graph = model::build_hourglass(config.model);
        if (job.unit >= 0)
            graph = model::unit_graph(graph,
                                      model::layer_units(graph).at(static_cast<size_t>(job.unit)));
        const auto flops = static_cast<double>(
            run::describe_entry(config, entry, job.overrides, graph).flops_per_step);
        progress->begin(label, {0, steps, 0, flops, later_captures * steps * flops});
    }
    output::BackendRun run =
        run::launch_worker(config, job, run::timeout_of(config, entry), progress);
    if (progress) progress->end();
    if (run::is_failure(run.status))
        std::fputs(
            plugin_host::log_tail_for_console(run.log, plugin_host::kFailureLogLines, "  ").c_str(),
            stderr);
    return run;
}

CheckOutcome run_check(const config::RunConfig& config, const CheckRequest& request) {
    plugin_host::install_interrupt_handler();
    model::Graph graph = model::build_hourglass(config.model);
    if (request.unit >= 0)
        graph = model::unit_graph(graph,
                                  model::layer_units(graph).at(static_cast<size_t>(request.unit)));
    const plugin_host::ScratchDir scratch("harness-check");
    CheckOutcome outcome;

    const run::WorkerJob base = baseline_job(config, request);
    std::fprintf(stderr, "baseline %s: %d steps\n", request.baseline.c_str(), request.steps);
    // Captures still to come after each, for the progress line's estimate.
    int later = kFirstMembers + static_cast<int>(request.entries.size()) *
                                    (request.steps > 1 ? kFirstMembers + 2 : 1);
    outcome.baseline = run_capture(config, base, request.steps, scratch.path() / "baseline",
                                   request.progress, "baseline " + request.baseline, --later);
    const config::BackendEntry entry_of_base = run::entry_for(config, base);
    outcome.baseline_problem =
        baseline_problem(config, outcome.baseline, run::timeout_of(config, entry_of_base));
    if (!outcome.baseline_problem.empty()) return outcome;
    const StepCapture expected = read_capture(graph, outcome.baseline, scratch.path() / "baseline");
    if (expected.gradients.empty()) {
        outcome.baseline_problem = fmt::format(
            "baseline '{}' cannot give its gradients (its plugin lacks HB_CAP_GRADIENTS): pass "
            "--baseline with a backend that can",
            request.baseline);
        return outcome;
    }

    // What every backend starts from, for replaying its updates.
    UpdateReplay replay;
    replay.optimizer = config.optimizer;
    const std::vector<data::HostTensor> initial = data::initial_state(graph, config.seed);
    for (size_t i = 0; i < graph.tensors.size(); ++i)
        replay.initial[graph.tensors[i].name] = initial[i];

    // The rounding-noise ensemble, per precision the backends compute in (float32 first, then
    // each reduced precision when a backend needs it), with at least `n` members.
    std::map<int, std::vector<StepCapture>> ensembles;
    auto ensemble_at = [&](int bits, int n) -> std::vector<StepCapture>* {
        std::vector<StepCapture>& members = ensembles[bits];
        while (static_cast<int>(members.size()) < n && !plugin_host::interrupted()) {
            const int m = static_cast<int>(members.size());
            const std::string label =
                m < kFirstMembers ? fmt::format("member {} of {}", m + 1, kFirstMembers)
                                  : fmt::format("member {} of at most {}", m + 1, kEnsembleSize);
            std::fprintf(stderr, "rounding-noise ensemble, %d significand bits: %s, %d steps\n",
                         bits, label.c_str(), request.steps);
            const run::WorkerJob job = ensemble_job(request, m, bits);
            const fs::path dir = scratch.path() / fmt::format("ensemble-{}-{}", bits, m);
            const output::BackendRun run =
                run_capture(config, job, request.steps, dir, request.progress, "ensemble " + label,
                            std::max(0, --later));
            outcome.baseline_problem =
                baseline_problem(config, run, run::timeout_of(config, run::entry_for(config, job)));
            if (!outcome.baseline_problem.empty()) {
                outcome.baseline_problem = "rounding-noise ensemble: " + outcome.baseline_problem;
                return nullptr;
            }
            members.push_back(read_capture(graph, run, dir));
        }
        return &members;
    };
    if (!ensemble_at(24, kFirstMembers)) return outcome;
    AnchoredSteps anchored(config, graph, request, base, later);

    for (int index : request.entries) {
        const int* base_entry = std::get_if<int>(&base.backend);
        if ((base_entry && index == *base_entry) || plugin_host::interrupted()) continue;
        run::WorkerJob job;
        job.backend = index;
        job.unit = request.unit;
        const fs::path dir = scratch.path() / fmt::format("backend-{}", index);
        const std::string& name = config.backends[static_cast<size_t>(index)].name;
        std::fprintf(stderr, "%s: %d steps\n", name.c_str(), request.steps);
        BackendCheck check;
        check.run = run_capture(config, job, request.steps, dir, request.progress, name,
                                std::max(0, --later));
        if (check.run.status == output::Status::ok) {
            const hb::Math math = check.run.math.value_or(hb::Math::fp32);
            const Tolerance tolerance =
                request.unit >= 0 ? layer_tolerance_for(math) : tolerance_for(math);
            const int bits = tolerance.significand_bits;
            StepCapture actual = read_capture(graph, check.run, dir);
            AnchoredSteps::Steps* steps = nullptr;
            if (!actual.later_gradients.empty()) {
                steps = &anchored.from(bits, dir, name);
                actual.anchored = std::make_shared<const LaterGradients>(actual.later_gradients);
            }
            bool failed = false;  // a member of the ensemble
            check.comparison = compare_growing(
                actual, expected, tolerance, &replay, kFirstMembers, kEnsembleSize, [&](int n) {
                    if (n == kFirstMembers + 1)
                        std::fprintf(stderr,
                                     "%s: out of bounds against %d members; one more at a "
                                     "time, up to %d\n",
                                     name.c_str(), kFirstMembers, kEnsembleSize);
                    std::vector<StepCapture>* ensemble = ensemble_at(bits, n);
                    failed = !ensemble;
                    if (failed) return std::vector<const StepCapture*>{};
                    if (steps) anchored.grow(*steps, n);
                    pair_later_steps(steps, actual, *ensemble, static_cast<size_t>(n));
                    return members_of(*ensemble, static_cast<size_t>(n));
                });
            if (failed) return outcome;
            if (steps && !steps->problem.empty())
                check.comparison.not_compared.push_back(
                    fmt::format("gradient[2] to gradient[{}]: from the backend's states, {}",
                                request.steps, steps->problem));
            if (!check.comparison.pass) check.run.status = output::Status::mismatch;
        }
        outcome.checks.push_back(std::move(check));
    }
    if (!config.parallel.ranks.empty() && request.unit < 0)
        outcome.rank_checks = run_rank_check(config, request.entries, request.steps);
    return outcome;
}

}  // namespace harness::check
