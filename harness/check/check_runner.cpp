#include "check/check_runner.hpp"

#include "config/sha256.hpp"
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
std::vector<std::map<std::string, std::vector<float>>> later_gradients(const model::Graph& graph,
                                                                       const fs::path& dir,
                                                                       const std::string& prefix,
                                                                       size_t last) {
    std::vector<std::map<std::string, std::vector<float>>> steps;
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
// and in each member of the ensemble (docs/conformance.md "Step k"): computed once for each
// distinct states (one library under two entries gives the same bytes).
class AnchoredSteps {
public:
    AnchoredSteps(const config::RunConfig& config, const model::Graph& graph,
                  const CheckRequest& request, const run::WorkerJob& base, int& later)
        : config_(config), graph_(graph), request_(request), base_(base), later_(later) {}

    // Pairs the backend's own later gradients with the baseline's from its states, and each
    // member's from its states with the baseline's (the ensemble at `bits`); returns what failed,
    // and then pairs nothing.
    std::string pair(int bits, const fs::path& dir, const std::string& name, StepCapture& actual,
                     std::vector<StepCapture>& members) {
        const auto key = std::pair{bits, states_digest(dir)};
        auto found = computed_.find(key);
        if (found == computed_.end())
            found = computed_.emplace(key, compute(bits, dir, name)).first;
        else
            std::fprintf(stderr, "%s: steps 2 to %d from its own states, as %s's\n", name.c_str(),
                         request_.steps, found->second.backend.c_str());
        const Computed& steps = found->second;
        if (!steps.problem.empty()) return steps.problem;
        actual.anchored = actual.later_gradients;
        actual.anchored_baseline = steps.baseline;
        for (size_t m = 0; m < members.size(); ++m) {
            members[m].anchored = steps.members.at(m);
            members[m].anchored_baseline = steps.baseline;
        }
        return "";
    }

private:
    using Gradients = std::vector<std::map<std::string, std::vector<float>>>;  // steps 2, 3, ...
    struct Computed {
        Gradients baseline;
        std::vector<Gradients> members;
        std::string problem;
        std::string backend;  // whose states they started from
    };

    Computed compute(int bits, const fs::path& dir, const std::string& name) {
        std::fprintf(stderr,
                     "%s: steps 2 to %d from its own states, in the baseline and the ensemble\n",
                     name.c_str(), request_.steps);
        Computed out;
        out.backend = name;
        const auto from_backend = [&](run::WorkerJob job, const std::string& who) {
            job.capture = run::Capture{"", dir.string(), request_.steps - 1};
            const fs::path at = dir / "anchored" / who;
            const output::BackendRun run =
                run_capture(config_, job, 0, at, request_.progress,
                            fmt::format("{} from {}'s states", who, name), std::max(0, --later_));
            if (out.problem.empty())
                out.problem = baseline_problem(
                    config_, run, run::timeout_of(config_, run::entry_for(config_, job)));
            return later_gradients(graph_, at, "anchored-", request_.steps);
        };
        out.baseline = from_backend(base_, "baseline");
        for (int m = 0; m < kEnsembleSize && out.problem.empty() && !plugin_host::interrupted();
             ++m)
            out.members.push_back(
                from_backend(ensemble_job(request_, m, bits), fmt::format("member-{}", m + 1)));
        if (plugin_host::interrupted()) out.problem = "interrupted";
        return out;
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
        return config::sha256_hex(bytes);
    }

    const config::RunConfig& config_;
    const model::Graph& graph_;
    const CheckRequest& request_;
    const run::WorkerJob& base_;
    int& later_;
    std::map<std::pair<int, std::string>, Computed> computed_;  // by bits and states digest
};

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
    int later = kEnsembleSize + static_cast<int>(request.entries.size()) *
                                    (request.steps > 1 ? kEnsembleSize + 2 : 1);
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
    // each reduced precision when a backend needs it).
    std::map<int, std::vector<StepCapture>> ensembles;
    auto ensemble_at = [&](int bits) -> const std::vector<StepCapture>* {
        if (auto it = ensembles.find(bits); it != ensembles.end()) return &it->second;
        std::vector<StepCapture> members;
        for (int m = 0; m < kEnsembleSize && !plugin_host::interrupted(); ++m) {
            std::fprintf(stderr,
                         "rounding-noise ensemble, %d significand bits: member %d of %d, "
                         "%d steps\n",
                         bits, m + 1, kEnsembleSize, request.steps);
            const run::WorkerJob job = ensemble_job(request, m, bits);
            const fs::path dir = scratch.path() / fmt::format("ensemble-{}-{}", bits, m);
            const output::BackendRun run =
                run_capture(config, job, request.steps, dir, request.progress,
                            fmt::format("ensemble member {} of {}", m + 1, kEnsembleSize),
                            std::max(0, --later));
            outcome.baseline_problem =
                baseline_problem(config, run, run::timeout_of(config, run::entry_for(config, job)));
            if (!outcome.baseline_problem.empty()) {
                outcome.baseline_problem = "rounding-noise ensemble: " + outcome.baseline_problem;
                return nullptr;
            }
            members.push_back(read_capture(graph, run, dir));
        }
        return &ensembles.emplace(bits, std::move(members)).first->second;
    };
    if (!ensemble_at(24)) return outcome;
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
            const std::vector<StepCapture>* ensemble = ensemble_at(tolerance.significand_bits);
            if (!ensemble) return outcome;
            StepCapture actual = read_capture(graph, check.run, dir);
            std::vector<StepCapture> members = *ensemble;
            const std::string problem =
                actual.later_gradients.empty()
                    ? ""
                    : anchored.pair(tolerance.significand_bits, dir, name, actual, members);
            check.comparison = compare(actual, expected, tolerance, &members, &replay);
            if (!problem.empty())
                check.comparison.not_compared.push_back(
                    fmt::format("gradient[2] to gradient[{}]: from the backend's states, {}",
                                request.steps, problem));
            if (!check.comparison.pass) check.run.status = output::Status::mismatch;
        }
        outcome.checks.push_back(std::move(check));
    }
    if (!config.parallel.ranks.empty() && request.unit < 0)
        outcome.rank_checks = run_rank_check(config, request.entries, request.steps);
    return outcome;
}

}  // namespace harness::check
