#include "cli.hpp"

#include "commands.hpp"
#include "config/printable.hpp"
#include "harness/version.hpp"
#include "run/worker.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace harness {

namespace {

// A whole number in [lo, hi]: "abc" is not a number, which is not the same as being out of range.
CLI::Validator count_in(int lo, int hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            long long value = 0;
            const char* first = text.data();
            const char* last = first + text.size();
            const auto [end, error] = std::from_chars(first, last, value);
            if (text.empty() || end != last || error == std::errc::invalid_argument)
                return "'" + text + "' is not a whole number";
            if (error != std::errc() || value < lo || value > hi)
                return text + " is out of range: expected " + std::to_string(lo) + " to " +
                       std::to_string(hi);
            return "";
        },
        "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

const std::vector<std::string> kCommands{"run",     "check", "layers", "report",
                                         "publish", "list",  "info"};

const char* const kQuietHelp =
    "No progress line on the terminal (there is none in a pipe, a log or a dumb terminal)";

// The first argument that is not an option names the command; one that names none is refused
// by name (CLI11 would only say that a command is required, or that the word was not expected).
std::optional<std::string> unknown_command(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word.empty() || word[0] == '-') continue;
        if (word.rfind("__", 0) == 0) return std::nullopt;  // the worker and describe children
        if (std::find(kCommands.begin(), kCommands.end(), word) != kCommands.end())
            return std::nullopt;
        return word;
    }
    return std::nullopt;
}

}  // namespace

int main_cli(int argc, char** argv) {
    if (const auto word = unknown_command(argc, argv)) {
        std::string known;
        for (const auto& c : kCommands) known += (known.empty() ? "" : ", ") + c;
        std::fprintf(stderr,
                     "harness: unknown command '%s' (the commands: %s; see harness --help)\n",
                     printable(*word).c_str(), known.c_str());
        return kExitUsage;
    }
    CLI::App app{
        "harness: runs the same stacked-hourglass training step in every deep-learning backend "
        "plugin, checks that they agree and times them."};
    app.set_version_flag("--version", std::string(kVersion) + " (" + kGitCommit + ")");
    app.require_subcommand(1);

    RunArgs run;
    auto* run_cmd = app.add_subcommand("run", "Run and time the backends of a config; write a CSV");
    run_cmd->add_option("config", run.config, "Run config (YAML)")->required();
    run_cmd->add_option("--backends", run.backends,
                        "Comma-separated backend names from the config (default: all)");
    run_cmd->add_option("--iterations", run.iterations, "Timed steps per backend")
        ->check(count_in(1, 1000000));
    run_cmd->add_option("--warmup", run.warmup, "Untimed warm-up steps per backend")
        ->check(count_in(0, 100000));
    run_cmd
        ->add_option("--rounds", run.rounds,
                     "Rounds: every backend once per round, each in a fresh worker, in an "
                     "order drawn anew each round (default: the config's run.rounds)")
        ->check(count_in(1, 1000));
    run_cmd
        ->add_option("--max-rounds", run.max_rounds,
                     "Run further rounds, up to this many, until --target is met or --budget "
                     "is spent (default: the config's run.max_rounds, else --rounds)")
        ->check(count_in(1, 1000));
    run_cmd
        ->add_option("--target", run.target,
                     "Stop once every backend's 95% interval against the baseline is within "
                     "this share of its ratio (0.02: ±2%) (default: the config's run.target)")
        ->check(CLI::Range(0.0, 1.0).description("in (0, 1)") & CLI::PositiveNumber);
    run_cmd
        ->add_option("--budget", run.budget_s,
                     "Start no round that would end more than this many seconds after the "
                     "first began (default: the config's run.budget)")
        ->check(CLI::PositiveNumber);
    run_cmd->add_option("--order-seed", run.order_seed,
                        "Seed of the rounds' orders (default: the config's run.order_seed, else "
                        "drawn and recorded)");
    run_cmd
        ->add_option("--interleave", run.interleave,
                     "steps: each round's workers alive together, their timed steps taken in "
                     "an order drawn anew; workers: one worker after another (default: the "
                     "config's run.interleave, else steps)")
        ->check(CLI::IsMember({"steps", "workers"}));
    run_cmd->add_option("--baseline", run.baseline,
                        "The backend the table compares the others with (default: the config's "
                        "run.baseline, else the first CPU entry)");
    run_cmd->add_option("--output", run.output,
                        "Results CSV (default: runs/<config>-<UTC time>.csv); a JSON sidecar "
                        "with the raw samples is written beside it");
    run_cmd->add_option("--dump", run.dump_dir,
                        "Also write the initial weights and batches as .npy files + index.json");
    run_cmd->add_flag("--json", run.json, "Print the results as JSON instead of a table");
    run_cmd->add_flag("--quiet", run.quiet, kQuietHelp);
    run_cmd->add_flag("--profile", run.profile,
                      "After the timed steps, run --profile-steps more with every operation "
                      "timed: the JSON sidecar gets each backend's time per operation kind and "
                      "layer (harness report --by)");
    auto* profile_steps = run_cmd->add_option("--profile-steps", run.profile_steps,
                                              "Profiled steps per backend (implies --profile)");
    profile_steps->check(count_in(1, 1000))->capture_default_str();
    run_cmd->add_option("--trace", run.trace_dir,
                        "Profile (as --profile) and write each backend's steps as a Chrome "
                        "trace (ui.perfetto.dev, chrome://tracing) in this folder");

    CheckArgs check;
    auto* check_cmd = app.add_subcommand(
        "check", "Prove the backends compute the same training step as a baseline");
    auto* check_config =
        check_cmd->add_option("config", check.config, "Run config (YAML); not with --suite");
    auto* check_backends =
        check_cmd->add_option("--backends", check.backends,
                              "Comma-separated backend names from the config (default: all)");
    auto* check_baseline = check_cmd->add_option(
        "--baseline", check.baseline,
        "The backend compared against: a config entry's name or a plugin name (run on cpu with its "
        "defaults); default: reference-fp64, the reference plugin in float64");
    auto* check_suite =
        check_cmd->add_option("--suite", check.suite,
                              "Instead of a config: check this plugin, with its defaults, on "
                              "every check config and layer by layer on check.yaml, then each "
                              "value of its options that change the step, and say whether it is "
                              "conformant (docs/conformance.md)");
    auto* check_plugin = check_cmd->add_option(
        "--plugin", check.plugin,
        "Check this plugin, with its defaults, on the config's model, data and optimizer, in place "
        "of the config's entries; no verdict is recorded");
    check_cmd->add_option("--device", check.device,
                          "The device of --suite or --plugin (default: cpu)");
    check_plugin->excludes(check_backends);
    check_cmd->add_option("--steps", check.steps, "Training steps compared")
        ->check(count_in(1, 1000))
        ->capture_default_str();
    check_cmd->add_flag("--json", check.json, "Machine-readable output");
    check_cmd->add_flag("--quiet", check.quiet, kQuietHelp);
    std::string check_layers;
    auto* check_layers_opt =
        check_cmd
            ->add_option("--layers", check_layers,
                         "Check each layer configuration of the model alone, with one layer's "
                         "tolerances: those whose names this POSIX extended regex matches (none or "
                         "empty: every one); no verdict is recorded")
            ->expected(0, 1);
    auto* check_json = check_cmd->get_option("--json");
    for (CLI::Option* option :
         {check_config, check_backends, check_baseline, check_layers_opt, check_json, check_plugin})
        check_suite->excludes(option);

    ReportArgs report;
    auto* report_cmd =
        app.add_subcommand("report", "Turn result CSVs into a Markdown table (with ratios)");
    report_cmd->add_option("csv", report.csvs, "Result CSVs written by harness run")
        ->required()
        ->check(CLI::ExistingFile);
    report_cmd->add_option("--baseline", report.baseline,
                           "Add a column: each median over this backend's median in the same "
                           "file, with its 95% interval and Mann-Whitney p (docs/statistics.md)");
    report_cmd
        ->add_option("--attainable", report.attainable_gflops,
                     "Add a column: each row's GFLOP/s as a fraction of this attainable rate")
        ->check(CLI::PositiveNumber);
    report_cmd->add_option("--output", report.output, "Write the Markdown here (default: stdout)");
    report_cmd->add_option("--charts", report.charts,
                           "Draw SVG charts (and their gnuplot scripts and data) in this folder, "
                           "the roofline's among them, and link them from the Markdown; needs "
                           "gnuplot");
    report_cmd->add_flag("--explain", report.explain,
                         "Add a table: what each entry's one change from its base entry (the "
                         "first of its plugin and device) costs, in ms and %");

    report_cmd
        ->add_option("--by", report.by,
                     "Add a table from the profiles of `harness run --profile` or --trace: "
                     "ms per step per operation kind with the unaccounted rest, then each layer "
                     "kind against its roofline bound (kind), or the ten layers whose times "
                     "differ most between backends (layer)")
        ->check(CLI::IsMember({"kind", "layer"}));

    PublishArgs publish;
    auto* publish_cmd = app.add_subcommand(
        "publish",
        "Check a results CSV and its JSON sidecar against the schema and each other, copy them "
        "into a results folder, rewrite its summary.md and add the run to the index");
    publish_cmd->add_option("csv", publish.csv, "Results CSV written by harness run")->required();
    publish_cmd
        ->add_option("--to", publish.to,
                     "The results folder, such as results/NAME; the index is README.md in its "
                     "parent")
        ->required();
    publish_cmd->add_flag("--allow-unchecked", publish.allow_unchecked,
                          "Publish ok rows without a passing harness check; the index says "
                          "which are unchecked");
    publish_cmd->add_option("--what", publish.what,
                            "What the run shows, for the index (default: a sentence naming the "
                            "config)");

    LayersArgs layers;
    auto* layers_cmd = app.add_subcommand(
        "layers",
        "Time every layer configuration of a config's model alone, with Google Benchmark, "
        "against the whole step");
    layers_cmd->add_option("config", layers.config, "Run config (YAML)")->required();
    layers_cmd->add_option("--backends", layers.backends,
                           "Comma-separated backend names from the config (default: all); the "
                           "first is the one the others are compared with");
    layers_cmd->add_option("--filter", layers.filter,
                           "Only the configurations whose names match this regular expression "
                           "(then no sum of the parts)");
    std::vector<CLI::Option*> timing_options{
        layers_cmd->add_option("--json", layers.json,
                               "Also write Google Benchmark's JSON (for its compare.py) here"),
        layers_cmd->add_option("--output", layers.output,
                               "The table as CSV (default: runs/<config>-layers-<UTC time>.csv)"),
        layers_cmd->add_option("--repetitions", layers.repetitions, "Repetitions of each benchmark")
            ->check(count_in(1, 1000))
            ->capture_default_str(),
        layers_cmd->add_option("--iterations", layers.iterations, "Timed steps per repetition")
            ->check(count_in(1, 100000))
            ->capture_default_str(),
        layers_cmd
            ->add_option("--warmup", layers.warmup,
                         "Untimed steps before each benchmark (default: the entry's)")
            ->check(count_in(0, 100000))};
    layers_cmd->add_flag("--quiet", layers.quiet, kQuietHelp);
    bool layers_check = false;
    CheckArgs layers_check_args;
    auto* layers_check_flag = layers_cmd->add_flag(
        "--check", layers_check,
        "Instead of timing, check each configuration against the baseline, as harness check "
        "--layers does");
    layers_cmd->add_option("--baseline", layers_check_args.baseline, "The baseline of --check")
        ->needs(layers_check_flag);
    layers_cmd->add_option("--steps", layers_check_args.steps, "Training steps --check compares")
        ->needs(layers_check_flag)
        ->check(count_in(1, 1000))
        ->capture_default_str();
    for (CLI::Option* option : timing_options) layers_check_flag->excludes(option);

    bool list_json = false;
    auto* list_cmd = app.add_subcommand("list", "List the plugins found and their devices");
    list_cmd->add_flag("--json", list_json, "Machine-readable output");

    std::string info_config;
    bool info_json = false;
    int info_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto* info_cmd = app.add_subcommand(
        "info",
        "Describe a config's model: layers, parameters, FLOPs, activation memory, and the step's "
        "roofline bound on this machine");
    info_cmd->add_option("config", info_config, "Run config (YAML)")->required();
    info_cmd->add_flag("--json", info_json, "Machine-readable output");
    info_cmd
        ->add_option("--threads", info_threads,
                     "Threads the ceilings are measured on (the FMA rate and the bandwidth)")
        ->check(count_in(1, 1024))
        ->capture_default_str();

    // The worker's command line, written by run::worker_arguments: the file of its job, which the
    // harness resolved (run/job_file.hpp).
    std::string worker_job;
    auto* worker_cmd = app.add_subcommand("__worker", "")->group("");
    worker_cmd->add_option("job", worker_job)->required();

    std::string describe_file, describe_result;
    auto* describe_cmd = app.add_subcommand("__describe", "")->group("");
    describe_cmd->add_option("plugin", describe_file)->required();
    describe_cmd->add_option("result", describe_result)->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? kExitOk : kExitUsage;
    }

    if (*run_cmd) {
        if (*profile_steps) run.profile = true;
        return run_command(run);
    }
    if (*check_cmd) {
        if (check.suite) return check_suite_command(check);
        if (check.config.empty()) {
            std::fprintf(stderr, "harness check: a config is required, or --suite PLUGIN\n");
            return kExitUsage;
        }
        if (*check_layers_opt) check.layers = check_layers;
        return check_command(check);
    }
    if (*report_cmd) return report_command(report);
    if (*publish_cmd) return publish_command(publish);
    if (*layers_cmd) {
        if (!layers_check) return layers_command(layers);
        layers_check_args.config = layers.config;
        layers_check_args.backends = layers.backends;
        layers_check_args.layers = layers.filter;
        layers_check_args.quiet = layers.quiet;
        return check_command(layers_check_args);
    }
    if (*list_cmd) return list_command(list_json);
    if (*info_cmd) return info_command(info_config, info_json, info_threads);
    if (*worker_cmd) return run::worker_main(worker_job);
    if (*describe_cmd) return describe_command(describe_file, describe_result);
    return kExitUsage;
}

}  // namespace harness
