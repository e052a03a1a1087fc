#include "config/config.hpp"

#include "hb/sha256.hpp"
#include "config/yaml_document.hpp"
#include "config/yaml_fields.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

namespace harness::config {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const Range kLearningRate{0, 10, true, false};
const Range kUnitOpenBelow{0, 1, true, false};  // (0, 1]
const Range kUnitOpenAbove{0, 1, false, true};  // [0, 1)
const Range kUnitOpen{0, 1, true, true};        // (0, 1)
const Range kPositive{0, kInf, true, false};
const Range kNonNegative{0, kInf, false, false};
const Range kTimeout{0, 604800, true, false};  // up to a week

constexpr int kMaxWarmup = 100000;
constexpr size_t kMaxNameLength = 100;
constexpr int kMaxIterations = 1000000;
// What an entry's `options` or `environment` may put into one CSV cell, names and values together:
// far below the 131072 characters a field may have in Python's csv module and other readers.
constexpr size_t kMaxCellText = 16384;

bool in_charset(const std::string& text, bool uppercase, const char* punctuation) {
    if (text.empty()) return false;
    for (char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                        (uppercase && c >= 'A' && c <= 'Z') ||
                        (c != '\0' && std::strchr(punctuation, c) != nullptr);
        if (!ok) return false;
    }
    return true;
}

model::HourglassSpec read_model(const Field& field) {
    const Section s(field, {"stacks", "features", "depth", "joints", "input_size", "batch",
                            "conv_bias", "bn_scale", "bn_momentum", "bn_eps", "loss"});
    model::HourglassSpec m;
    if (auto f = s.get("stacks")) m.stacks = read_int(*f, 1, 16);
    if (auto f = s.get("features")) {
        m.features = read_int(*f, 2, 2048);
        if (m.features % 2 != 0)
            f->fail("expected an even integer in [2, 2048], got " + f->describe());
    }
    if (auto f = s.get("depth")) m.depth = read_int(*f, 1, 8);
    if (auto f = s.get("joints")) m.joints = read_int(*f, 1, 1024);
    if (auto f = s.get("input_size")) m.input_size = read_int(*f, 8, 2048);
    if (auto f = s.get("batch")) m.batch = read_int(*f, 1, 4096);
    if (auto f = s.get("conv_bias")) m.conv_bias = read_bool(*f);
    if (auto f = s.get("bn_scale")) m.bn_scale = read_bool(*f);
    if (auto f = s.get("bn_momentum")) m.bn_momentum = read_float(*f, kUnitOpenBelow);
    if (auto f = s.get("bn_eps")) m.bn_eps = read_float(*f, kPositive);
    if (auto f = s.get("loss")) {
        m.loss = read_choice(*f, {"sum", "mean"}) == 0 ? model::LossReduction::sum
                                                       : model::LossReduction::mean;
    }

    // The stem divides the input by 4, and each hourglass level halves it again.
    const int divisor = 4 << m.depth;
    if (m.input_size % divisor != 0) {
        const auto blamed = s.get("input_size") ? s.get("input_size") : s.get("depth");
        blamed->fail("input_size " + std::to_string(m.input_size) + " must be divisible by " +
                     std::to_string(divisor) + " (4 * 2^depth)");
    }
    return m;
}

hb_optimizer read_optimizer(const std::optional<Field>& field) {
    hb_optimizer o{};
    o.variant = HB_RMSPROP_TORCH;
    o.learning_rate = 2.5e-4f;
    std::optional<float> alpha, eps;
    if (field) {
        const Section s(*field, {"type", "variant", "learning_rate", "alpha", "eps", "momentum",
                                 "weight_decay"});
        if (auto f = s.get("type")) read_choice(*f, {"rmsprop"});
        if (auto f = s.get("variant")) {
            o.variant = read_choice(*f, {"torch", "tensorflow"}) == 0 ? HB_RMSPROP_TORCH
                                                                      : HB_RMSPROP_TENSORFLOW;
        }
        if (auto f = s.get("learning_rate")) o.learning_rate = read_float(*f, kLearningRate);
        if (auto f = s.get("alpha")) alpha = read_float(*f, kUnitOpenAbove);
        if (auto f = s.get("eps")) eps = read_float(*f, kUnitOpen);
        if (auto f = s.get("momentum")) o.momentum = read_float(*f, kUnitOpenAbove);
        if (auto f = s.get("weight_decay")) o.weight_decay = read_float(*f, kNonNegative);
    }
    const bool tensorflow = o.variant == HB_RMSPROP_TENSORFLOW;
    o.alpha = alpha.value_or(tensorflow ? 0.9f : 0.99f);
    o.eps = eps.value_or(tensorflow ? 1e-10f : 1e-8f);
    o.initial_square_average = tensorflow ? 1.0f : 0.0f;
    return o;
}

hb_placement read_placement(const Field& f) {
    return read_choice(f, {"device", "host"}) == 0 ? HB_PLACEMENT_DEVICE : HB_PLACEMENT_HOST;
}

void read_data(const Field& field, RunConfig& c) {
    const Section s(field, {"seed", "batches", "placement", "input_block"});
    if (auto f = s.get("seed")) c.seed = read_uint64(*f);
    if (auto f = s.get("batches")) c.batches = read_int(*f, 1, 64);
    if (auto f = s.get("placement")) {
        c.placement = read_placement(*f);
        c.placement_place = {f->key, f->mark.line, f->mark.column};
    }
    if (auto f = s.get("input_block")) {
        c.input_block = read_int(*f, 1, 4096);
        if (c.model.input_size % c.input_block != 0)
            f->fail("expected a divisor of model.input_size (" +
                    std::to_string(c.model.input_size) + "), got " + f->describe());
    }
}

constexpr int kMaxRounds = 1000;
// run.interleave: the first is paired steps.
const std::vector<std::string> kInterleave = {"steps", "workers"};

// Returns where `baseline` is, which can only be checked once the backends are known.
std::optional<Field> read_run(const Field& field, RunConfig& c) {
    const Section s(field, {"warmup", "iterations", "timeout", "rounds", "max_rounds", "target",
                            "budget", "order_seed", "interleave", "baseline"});
    if (auto f = s.get("warmup")) c.warmup = read_int(*f, 0, kMaxWarmup);
    if (auto f = s.get("iterations")) c.iterations = read_int(*f, 1, kMaxIterations);
    if (auto f = s.get("timeout")) c.timeout_s = read_double(*f, kTimeout);
    if (auto f = s.get("rounds")) c.rounds = read_int(*f, 1, kMaxRounds);
    if (auto f = s.get("max_rounds")) {
        c.max_rounds = read_int(*f, 1, kMaxRounds);
        if (c.max_rounds < c.rounds)
            f->fail("expected at least run.rounds (" + std::to_string(c.rounds) + "), got " +
                    f->describe());
    }
    if (auto f = s.get("target")) c.target = read_double(*f, kUnitOpen);
    if (auto f = s.get("budget")) c.budget_s = read_double(*f, kTimeout);
    if (auto f = s.get("order_seed")) c.order_seed = read_uint64(*f);
    if (auto f = s.get("interleave")) c.paired_steps = read_choice(*f, kInterleave) == 0;
    auto baseline = s.get("baseline");
    if (baseline) c.baseline = read_string(*baseline);
    return baseline;
}

void check_baseline(const Field& field, const RunConfig& c) {
    std::string names;
    for (const BackendEntry& b : c.backends) {
        if (b.name == c.baseline) return;
        names += (names.empty() ? "" : ", ") + b.name;
    }
    field.fail("expected the name of a backend entry (" + names + "), got " + field.describe());
}

constexpr int kMaxRanks = 4096;

void read_parallel(const Field& field, RunConfig& c) {
    const Section s(field,
                    {"ranks", "communicator", "bucket_mb", "overlap", "hostfile", "same_batch"});
    ParallelConfig& p = c.parallel;
    p.line = field.mark.line + 1;
    const Field ranks = s.require("ranks");
    if (ranks.node.IsSequence()) {
        if (ranks.node.size() == 0) ranks.fail("expected at least one rank count, got []");
        for (size_t i = 0; i < ranks.node.size(); ++i) {
            const Field r = ranks.element(i);
            p.ranks.push_back(read_int(r, 1, kMaxRanks));
            if (i > 0 && p.ranks[i] <= p.ranks[i - 1])
                r.fail("expected rank counts in ascending order without repeats, got " +
                       r.describe() + " after " + std::to_string(p.ranks[i - 1]));
        }
    } else {
        p.ranks.push_back(read_int(ranks, 1, kMaxRanks));
    }
    if (auto f = s.get("same_batch")) p.same_batch = read_bool(*f);
    if (c.batches < p.ranks.back() && !p.same_batch)
        ranks.fail("each rank of a round needs its own batch: data.batches (" +
                   std::to_string(c.batches) + ") must be at least the largest rank count (" +
                   std::to_string(p.ranks.back()) + ")");
    if (auto f = s.get("communicator"))
        p.communicator = static_cast<CommunicatorKind>(read_choice(*f, {"auto", "mpi", "nccl"}));
    if (auto f = s.get("bucket_mb")) p.bucket_mb = read_double(*f, Range{0, 1024, true, false});
    if (auto f = s.get("overlap")) p.overlap = read_bool(*f);
    if (auto f = s.get("hostfile")) {
        std::filesystem::path file = read_string(*f);
        if (file.is_relative()) file = std::filesystem::path(c.path).parent_path() / file;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) f->fail("no hostfile at " + file.string());
        p.hostfile = std::filesystem::absolute(file).lexically_normal().string();
    }
}

std::string read_pattern(const Field& f, bool uppercase, const char* punctuation,
                         const std::string& expected) {
    const std::string text = read_string(f);
    if (!in_charset(text, uppercase, punctuation)) {
        f.fail("expected " + expected + ", got " + f.describe());
    }
    return text;
}

// `cpu` or `cuda:N`: a name that no plugin could offer is a typo, not hardware that is absent.
std::string read_device(const Field& f) {
    const std::string text = read_string(f);
    const std::string cuda = "cuda:";
    bool ok = text == "cpu";
    if (!ok && text.compare(0, cuda.size(), cuda) == 0) {
        const std::string index = text.substr(cuda.size());
        ok = !index.empty() && index.size() <= 4 &&
             index.find_first_not_of("0123456789") == std::string::npos &&
             (index.size() == 1 || index[0] != '0');
    }
    if (!ok) f.fail("expected a device, cpu or cuda:N (N = 0, 1, ...), got " + f.describe());
    return text;
}

// A mapping of names to scalars: a backend's `options` or its `environment`. `valid_name`, when
// given, says what is wrong with a name, or "" when nothing is.
std::map<std::string, std::string> read_scalars(
    const Field& field, const char* what, std::string (*valid_name)(const std::string&) = nullptr,
    std::map<std::string, Place>* places = nullptr) {
    std::map<std::string, std::string> values;
    size_t cell_text = 0;
    const Section section = Section::any_keys(field);
    for (const Field& value : section.fields()) {
        const std::string name = value.key.substr(field.key.size() + 1);
        if (valid_name) {
            const std::string problem = valid_name(name);
            if (!problem.empty()) value.fail(problem);
        }
        if (!value.node.IsScalar()) {
            value.fail(std::string("expected a scalar ") + what + ", got " + value.describe());
        }
        cell_text += name.size() + value.node.Scalar().size() + 2;
        if (cell_text > kMaxCellText)
            value.fail(field.key + " would put " + std::to_string(cell_text) +
                       " characters into its CSV cell, where at most " +
                       std::to_string(kMaxCellText) +
                       " fit, names and values together (CSV readers refuse long fields)");
        values[name] = value.node.Scalar();
        if (places) (*places)[name] = {value.key, value.mark.line, value.mark.column};
    }
    return values;
}

// Variables an entry may not set, by prefix: the harness's own, which would change what the
// worker loads, and those read when the worker starts, before the entry's environment is set.
struct ReservedVariables {
    const char* prefix;
    const char* why;
};
constexpr ReservedVariables kReservedVariables[] = {
    {"HARNESS_", "the harness's own variables are set where harness runs, not per entry"},
    {"LD_",
     "the dynamic loader reads it when the worker starts, before an entry's environment is "
     "set: it cannot take effect"},
    {"GLIBC_TUNABLES",
     "the C library reads it when the worker starts, before an entry's "
     "environment is set: it cannot take effect"},
    {"MALLOC_",
     "the C library reads it when the worker starts, before an entry's environment is "
     "set: it cannot take effect"},
    {"OMPI_", "mpirun sets it for each rank of a data-parallel run"},
    {"PMIX_", "mpirun sets it for each rank of a data-parallel run"},
};

std::string environment_name_problem(const std::string& name) {
    const bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                    name.find_first_not_of(
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789_") == std::string::npos;
    if (!ok)
        return "'" + name + "' is not the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*)";
    for (const auto& reserved : kReservedVariables)
        if (name.rfind(reserved.prefix, 0) == 0)
            return "'" + name + "' may not be set by an entry: " + reserved.why;
    return "";
}

// `name_field` is where the entry's name comes from: `name`, or else `plugin`.
BackendEntry read_backend(const Field& field, hb_placement placement, const Place& placement_place,
                          Field& name_field) {
    if (!field.node.IsMap()) {
        field.fail("expected a backend (a mapping with at least 'plugin'), got " +
                   field.describe());
    }
    const Section s(field, {"plugin", "name", "device", "placement", "options", "environment",
                            "warmup", "iterations", "timeout"});
    BackendEntry b;
    b.line = field.mark.line + 1;
    b.placement = placement;
    b.placement_place = placement_place;
    name_field = s.require("plugin");
    b.plugin = read_pattern(name_field, false, "_", "a plugin name matching [a-z0-9_]+");
    b.name = b.plugin;
    if (auto f = s.get("name")) {
        name_field = *f;
        b.name = read_pattern(*f, true, "_.-", "a name matching [A-Za-z0-9_.-]+");
    }
    if (auto f = s.get("device")) b.device = read_device(*f);
    if (auto f = s.get("placement")) {
        b.placement = read_placement(*f);
        b.placement_place = {f->key, f->mark.line, f->mark.column};
    }
    if (auto f = s.get("options"))
        b.options = read_scalars(*f, "option value", nullptr, &b.option_places);
    if (auto f = s.get("environment"))
        b.environment = read_scalars(*f, "value", environment_name_problem);
    if (auto f = s.get("warmup")) b.warmup = read_int(*f, 0, kMaxWarmup);
    if (auto f = s.get("iterations")) b.iterations = read_int(*f, 1, kMaxIterations);
    if (auto f = s.get("timeout")) b.timeout_s = read_double(*f, kTimeout);
    return b;
}

std::vector<BackendEntry> read_backends(const Field& field, hb_placement placement,
                                        const Place& placement_place) {
    if (!field.node.IsSequence() || field.node.size() == 0) {
        field.fail("expected a non-empty list of backends, got " +
                   (field.node.IsSequence() ? "an empty list" : field.describe()));
    }
    std::vector<BackendEntry> backends;
    std::vector<int> name_lines;
    for (size_t i = 0; i < field.node.size(); ++i) {
        Field name_field;
        BackendEntry b = read_backend(field.element(i), placement, placement_place, name_field);
        for (size_t j = 0; j < backends.size(); ++j) {
            if (backends[j].name == b.name) {
                name_field.fail("duplicate backend name '" + b.name + "' (first at line " +
                                std::to_string(name_lines[j]) + ")");
            }
        }
        name_lines.push_back(name_field.mark.line + 1);
        backends.push_back(std::move(b));
    }
    return backends;
}

}  // namespace

void fail_at(const std::string& path, const Place& place, const std::string& message) {
    YAML::Mark mark;
    mark.line = place.line;
    mark.column = place.column;
    fail_at(path, mark, place.key, message);
}

RunConfig load_config(const std::string& path) {
    const std::string bytes = read_config_bytes(path);
    const YAML::Node root = parse_document(path, bytes);

    RunConfig c;
    c.path = path;
    c.sha256 = hb::sha256_hex(bytes);
    c.name = std::filesystem::path(path).stem().string();

    const Section s(
        Field{path, "", root, root.Mark()},
        {"name", "description", "model", "optimizer", "data", "run", "parallel", "backends"});
    // The name goes into the default output's file name and into every row: a file name's
    // characters only, so that it stays inside the output folder and is valid UTF-8.
    if (auto f = s.get("name")) {
        c.name = read_pattern(*f, true, "_.-", "a name matching [A-Za-z0-9_.-]+");
        if (c.name.front() == '.' || c.name.size() > kMaxNameLength)
            f->fail("expected a name that does not start with '.' and has at most " +
                    std::to_string(kMaxNameLength) + " characters, got " + f->describe());
    }
    if (auto f = s.get("description")) c.description = read_string(*f);
    if (auto f = s.get("model")) c.model = read_model(*f);
    c.optimizer = read_optimizer(s.get("optimizer"));
    if (auto f = s.get("data")) read_data(*f, c);
    std::optional<Field> baseline;
    if (auto f = s.get("run")) baseline = read_run(*f, c);
    if (auto f = s.get("parallel")) read_parallel(*f, c);
    c.backends = read_backends(s.require("backends"), c.placement, c.placement_place);
    if (baseline) check_baseline(*baseline, c);
    return c;
}

const char* to_string(hb_placement p) {
    switch (p) {
        case HB_PLACEMENT_DEVICE:
            return "device";
        case HB_PLACEMENT_HOST:
            return "host";
    }
    return "unknown";
}

const char* to_string(CommunicatorKind c) {
    switch (c) {
        case CommunicatorKind::automatic:
            return "auto";
        case CommunicatorKind::mpi:
            return "mpi";
        case CommunicatorKind::nccl:
            return "nccl";
    }
    return "unknown";
}

const char* to_string(hb_rmsprop_variant v) {
    switch (v) {
        case HB_RMSPROP_TORCH:
            return "torch";
        case HB_RMSPROP_TENSORFLOW:
            return "tensorflow";
    }
    return "unknown";
}

}  // namespace harness::config
