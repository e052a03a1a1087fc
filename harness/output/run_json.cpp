#include "output/run_json.hpp"

#include <cmath>
#include <limits>

namespace harness::output {

using nlohmann::json;

namespace {

// JSON has no NaN or infinity: those travel as the strings "nan", "inf" and "-inf".
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

double number_from(const json& j) {
    if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    return j.get<double>();  // throws type_error for anything else
}

json numbers(const std::vector<double>& xs) {
    json a = json::array();
    for (double x : xs) a.push_back(number(x));
    return a;
}

std::vector<double> numbers_from(const json& j) {
    std::vector<double> xs;
    xs.reserve(j.size());
    for (const json& x : j) xs.push_back(number_from(x));
    return xs;
}

// A manifest that is a JSON object or array is embedded as such; anything else (including a
// JSON string literal, which would not survive the round trip) is kept as its raw text.
json manifest(const std::string& text) {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() || parsed.is_array()) return parsed;
    return text;
}

std::string manifest_from(const json& j) {
    return j.is_string() ? j.get<std::string>() : j.dump();
}

json stats_json(const Stats& s) {
    return {{"median_ms", number(s.median_ms)},
            {"mean_ms", number(s.mean_ms)},
            {"stddev_ms", number(s.stddev_ms)},
            {"min_ms", number(s.min_ms)},
            {"max_ms", number(s.max_ms)},
            {"p10_ms", number(s.p10_ms)},
            {"p90_ms", number(s.p90_ms)},
            {"iqr_ms", number(s.iqr_ms)},
            {"cv", number(s.cv)},
            {"images_per_s", number(s.images_per_s)},
            {"gflops", number(s.gflops)},
            {"noisy", s.noisy}};
}

Stats stats_from(const json& j) {
    Stats s;
    s.median_ms = number_from(j.at("median_ms"));
    s.mean_ms = number_from(j.at("mean_ms"));
    s.stddev_ms = number_from(j.at("stddev_ms"));
    s.min_ms = number_from(j.at("min_ms"));
    s.max_ms = number_from(j.at("max_ms"));
    s.p10_ms = number_from(j.at("p10_ms"));
    s.p90_ms = number_from(j.at("p90_ms"));
    s.iqr_ms = number_from(j.at("iqr_ms"));
    s.cv = number_from(j.at("cv"));
    s.images_per_s = number_from(j.at("images_per_s"));
    s.gflops = number_from(j.at("gflops"));
    s.noisy = j.at("noisy").get<bool>();
    return s;
}

Status status_from(const json& j) {
    const std::string name = j.get<std::string>();
    if (auto s = status_from_string(name)) return *s;
    throw json::other_error::create(501, "unknown status \"" + name + "\"", &j);
}

json profile_json(const Profile& p) {
    json kinds = json::object(), layers = json::object(), operations = json::object();
    for (const auto& [kind, ms] : p.kinds_ms) kinds[kind] = number(ms);
    for (const auto& [layer, ms] : p.layers_ms) layers[layer] = number(ms);
    for (const auto& [phase, n] : p.phase_operations) operations[phase] = number(n);
    return {{"steps", p.steps},
            {"step_ms", number(p.step_ms)},
            {"kinds_ms", kinds},
            {"layers_ms", layers},
            {"operations_by_phase", operations},
            {"unaccounted_ms", number(p.unaccounted_ms())},
            {"error", p.error}};
}

Profile profile_from(const json& j) {
    Profile p;
    p.steps = j.at("steps").get<int>();
    p.step_ms = number_from(j.at("step_ms"));
    for (const auto& [kind, ms] : j.at("kinds_ms").items()) p.kinds_ms[kind] = number_from(ms);
    for (const auto& [layer, ms] : j.at("layers_ms").items()) p.layers_ms[layer] = number_from(ms);
    if (j.contains("operations_by_phase"))  // absent in files from before it was counted
        for (const auto& [phase, n] : j.at("operations_by_phase").items())
            p.phase_operations[phase] = number_from(n);
    p.error = j.at("error").get<std::string>();
    return p;
}

json parallel_json(const ParallelRun& p) {
    return {{"ranks", p.ranks},
            {"communicator", p.communicator},
            {"algorithm", p.algorithm},
            {"oversubscribed", p.oversubscribed},
            {"overlap", p.overlap},
            {"buckets", p.buckets},
            {"gradient_bytes", p.gradient_bytes},
            {"communication_ms", numbers(p.communication_ms)},
            {"allreduce_ms", number(p.allreduce_ms)},
            {"algbw_gbps", number(p.algbw_gbps)},
            {"busbw_gbps", number(p.busbw_gbps)},
            {"scaling_efficiency", number(p.scaling_efficiency)}};
}

ParallelRun parallel_from(const json& j) {
    ParallelRun p;
    p.ranks = j.at("ranks").get<int>();
    p.communicator = j.at("communicator").get<std::string>();
    p.algorithm = j.at("algorithm").get<std::string>();
    p.oversubscribed = j.at("oversubscribed").get<bool>();
    p.overlap = j.at("overlap").get<bool>();
    p.buckets = j.at("buckets").get<int>();
    p.gradient_bytes = j.at("gradient_bytes").get<int64_t>();
    p.communication_ms = numbers_from(j.at("communication_ms"));
    p.allreduce_ms = number_from(j.at("allreduce_ms"));
    p.algbw_gbps = number_from(j.at("algbw_gbps"));
    p.busbw_gbps = number_from(j.at("busbw_gbps"));
    p.scaling_efficiency = number_from(j.at("scaling_efficiency"));
    return p;
}

json measured_json(const Measured& m) {
    return {{"best", number(m.best)},
            {"median", number(m.median)},
            {"worst", number(m.worst)},
            {"repetitions", m.repetitions},
            {"how", m.how}};
}

Measured measured_from(const json& j) {
    return {number_from(j.at("best")), number_from(j.at("median")), number_from(j.at("worst")),
            j.at("repetitions").get<int>(), j.at("how").get<std::string>()};
}

}  // namespace

json to_json(const Ceilings& c) {
    return {{"threads", c.threads},
            {"flops_per_s", measured_json(c.flops)},
            {"bytes_per_s", measured_json(c.bytes)}};
}

Ceilings ceilings_from_json(const json& j) {
    return {j.at("threads").get<int>(), measured_from(j.at("flops_per_s")),
            measured_from(j.at("bytes_per_s"))};
}

json to_json(const KindCost& k) {
    return {{"kind", k.kind},
            {"layers", k.layers},
            {"flops", k.flops},
            {"bytes", k.bytes},
            {"operation_kinds", k.operation_kinds}};
}

KindCost kind_cost_from_json(const json& j) {
    return {j.at("kind").get<std::string>(), j.at("layers").get<int>(),
            j.at("flops").get<int64_t>(), j.at("bytes").get<int64_t>(),
            j.at("operation_kinds").get<std::vector<std::string>>()};
}

json to_json(const BackendRun& r) {
    json j = {{"backend", r.backend},
              {"round", r.round},
              {"plugin", r.plugin},
              {"plugin_version", r.plugin_version},
              {"device", r.device},
              {"placement", r.placement},
              {"options", r.options},
              {"options_in_force", r.options_in_force},
              {"environment", r.environment},
              {"libraries", r.libraries},
              {"math_mode", r.math_word()},
              {"threads", r.threads},
              {"check", r.check},
              {"status", to_string(r.status)},
              {"message", r.message},
              {"unsupported", r.unsupported},
              {"nonfinite_loss", r.nonfinite_loss},
              {"warmup", r.warmup},
              {"iterations", r.iterations},
              {"batch", r.batch},
              {"flops_per_step", r.flops_per_step},
              {"bound_ms", number(r.bound_ms)},
              {"setup_ms", number(r.setup_ms)},
              {"warmup_ms", numbers(r.warmup_ms)},
              {"samples_ms", numbers(r.samples_ms)},
              {"warmup_losses", numbers(r.warmup_losses)},
              {"losses", numbers(r.losses)},
              {"forward_ms", numbers(r.forward_ms)},
              {"backward_ms", numbers(r.backward_ms)},
              {"optimizer_ms", numbers(r.optimizer_ms)},
              {"cpu_ms", numbers(r.cpu_ms)},
              {"step_sequence", r.step_sequence},
              {"peak_memory_bytes", r.peak_memory_bytes},
              {"manifest", manifest(r.manifest_json)},
              {"stats", stats_json(r.stats)},
              {"first_loss", number(r.first_loss())},
              {"last_loss", number(r.last_loss())},
              {"loss_agreement", r.loss_agreement},
              {"loss_agreement_detail", r.loss_agreement_detail}};
    if (r.profile) j["profile"] = profile_json(*r.profile);
    if (r.parallel) j["parallel"] = parallel_json(*r.parallel);
    if (!r.log.empty()) j["log"] = r.log;
    return j;
}

json to_json(const std::vector<BackendRun>& runs) {
    json a = json::array();
    for (const BackendRun& run : runs) a.push_back(to_json(run));
    return a;
}

BackendRun backend_run_from_json(const json& j) {
    BackendRun r;
    r.backend = j.at("backend").get<std::string>();
    r.round = j.value("round", 1);  // files from before rounds: one round
    r.plugin = j.at("plugin").get<std::string>();
    r.plugin_version = j.at("plugin_version").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.placement = j.value("placement", std::string());
    r.options = j.at("options").get<std::map<std::string, std::string>>();
    r.options_in_force =  // added in schema 1
        j.value("options_in_force", std::map<std::string, std::string>());
    if (j.contains("bound_ms")) r.bound_ms = number_from(j.at("bound_ms"));  // added in schema 1
    r.environment =
        j.value("environment", std::map<std::string, std::string>());  // added in schema 1
    r.libraries = j.at("libraries").get<std::map<std::string, std::string>>();
    r.math = hb::math_from_string(j.at("math_mode").get<std::string>());
    r.threads = j.at("threads").get<int>();
    r.check = j.at("check").get<std::string>();
    r.status = status_from(j.at("status"));
    r.message = j.at("message").get<std::string>();
    r.unsupported = j.value("unsupported", false);
    r.nonfinite_loss = j.at("nonfinite_loss").get<bool>();
    r.warmup = j.at("warmup").get<int>();
    r.iterations = j.at("iterations").get<int>();
    r.batch = j.at("batch").get<int64_t>();
    r.flops_per_step = j.at("flops_per_step").get<int64_t>();
    r.setup_ms = number_from(j.at("setup_ms"));
    r.warmup_ms = numbers_from(j.at("warmup_ms"));
    r.samples_ms = numbers_from(j.at("samples_ms"));
    r.warmup_losses = numbers_from(j.at("warmup_losses"));
    r.losses = numbers_from(j.at("losses"));
    r.forward_ms = numbers_from(j.at("forward_ms"));
    r.backward_ms = numbers_from(j.at("backward_ms"));
    r.optimizer_ms = numbers_from(j.at("optimizer_ms"));
    r.peak_memory_bytes = j.at("peak_memory_bytes").get<uint64_t>();
    r.manifest_json = manifest_from(j.at("manifest"));
    r.stats = stats_from(j.at("stats"));
    if (j.contains("profile")) r.profile = profile_from(j.at("profile"));
    if (j.contains("parallel")) r.parallel = parallel_from(j.at("parallel"));
    // Added with schema_version 1 kept: files from before have neither.
    r.loss_agreement = j.value("loss_agreement", std::string());
    r.loss_agreement_detail = j.value("loss_agreement_detail", std::string());
    r.log = j.value("log", std::string());
    if (j.contains("cpu_ms")) r.cpu_ms = numbers_from(j.at("cpu_ms"));
    // Places in a round's sequence: whole numbers from 0; a file with any other is read without.
    if (j.contains("step_sequence") && j.at("step_sequence").is_array()) {
        for (const json& place : j.at("step_sequence")) {
            if (!place.is_number_integer() || place.get<int64_t>() < 0 ||
                place.get<int64_t>() > std::numeric_limits<int>::max()) {
                r.step_sequence.clear();
                break;
            }
            r.step_sequence.push_back(static_cast<int>(place.get<int64_t>()));
        }
    }
    return r;
}

json to_json(const Provenance& p) {
    json environment = json::array();
    for (const EnvironmentFinding& f : p.environment)
        environment.push_back({{"check", f.check},
                               {"state", f.state},
                               {"warning", f.warning},
                               {"message", f.message}});
    json j = {{"utc_time", p.utc_time},
              {"harness_version", p.harness_version},
              {"git_commit", p.git_commit},
              {"config_name", p.config_name},
              {"config_path", p.config_path},
              {"config_sha256", p.config_sha256},
              {"host", p.host},
              {"cpu_model", p.cpu_model},
              {"gpu_name", p.gpu_name},
              {"gpu_driver", p.gpu_driver},
              {"seed", p.seed},
              {"placement", p.placement},
              {"environment", environment},
              {"environment_warnings", environment_warnings(p)}};
    if (p.order_seed) j["order_seed"] = *p.order_seed;
    j["ceilings"] = json::array();
    for (const Ceilings& c : p.ceilings) j["ceilings"].push_back(to_json(c));
    j["step_cost"] = json::array();
    for (const KindCost& k : p.step_cost) j["step_cost"].push_back(to_json(k));
    j["rounds"] = {{"min", p.rounds.min_rounds},
                   {"max", p.rounds.max_rounds},
                   {"target", p.rounds.target},
                   {"budget_s", p.rounds.budget_s},
                   {"baseline", p.rounds.baseline},
                   {"stopped_by", p.rounds.stopped_by},
                   {"paired_steps", p.rounds.paired_steps}};
    return j;
}

Provenance provenance_from_json(const json& j) {
    Provenance p;
    p.utc_time = j.at("utc_time").get<std::string>();
    p.harness_version = j.at("harness_version").get<std::string>();
    p.git_commit = j.at("git_commit").get<std::string>();
    p.config_name = j.at("config_name").get<std::string>();
    p.config_path = j.at("config_path").get<std::string>();
    p.config_sha256 = j.at("config_sha256").get<std::string>();
    p.host = j.at("host").get<std::string>();
    p.cpu_model = j.at("cpu_model").get<std::string>();
    p.gpu_name = j.at("gpu_name").get<std::string>();
    p.gpu_driver = j.at("gpu_driver").get<std::string>();
    p.seed = j.at("seed").get<uint64_t>();
    p.placement = j.at("placement").get<std::string>();
    if (j.contains("order_seed")) p.order_seed = j.at("order_seed").get<uint64_t>();
    if (j.contains("ceilings"))  // added in schema 1
        for (const json& c : j.at("ceilings")) p.ceilings.push_back(ceilings_from_json(c));
    if (j.contains("step_cost"))  // added in schema 1
        for (const json& k : j.at("step_cost")) p.step_cost.push_back(kind_cost_from_json(k));
    if (j.contains("rounds")) {  // from before rounds: one
        const json& r = j.at("rounds");
        p.rounds = {r.at("min").get<int>(),
                    r.at("max").get<int>(),
                    r.at("target").get<double>(),
                    r.at("budget_s").get<double>(),
                    r.at("baseline").get<std::string>(),
                    r.at("stopped_by").get<std::string>(),
                    r.value("paired_steps", false)};  // added with paired steps
    }
    for (const json& f : j.at("environment"))
        p.environment.push_back({f.at("check").get<std::string>(), f.at("state").get<std::string>(),
                                 f.at("message").get<std::string>(), f.at("warning").get<bool>()});
    return p;
}

std::string json_text(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace harness::output
