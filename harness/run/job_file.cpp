#include "run/job_file.hpp"

#include "data/spec_json.hpp"
#include "output/atomic_file.hpp"

#include <fstream>
#include <stdexcept>

namespace harness::run {

namespace {

using nlohmann::json;

json entry_json(const config::BackendEntry& e) {
    return {{"name", e.name},
            {"plugin", e.plugin},
            {"device", e.device},
            {"placement", e.placement == HB_PLACEMENT_HOST ? "host" : "device"},
            {"options", e.options},
            {"options_in_force", e.options_in_force},
            {"environment", e.environment},
            {"line", e.line},
            {"warmup", e.warmup},
            {"iterations", e.iterations},
            {"timeout_s", e.timeout_s}};
}

config::BackendEntry entry_from(const json& j) {
    config::BackendEntry e;
    e.name = j.at("name").get<std::string>();
    e.plugin = j.at("plugin").get<std::string>();
    e.device = j.at("device").get<std::string>();
    e.placement = j.at("placement") == "host" ? HB_PLACEMENT_HOST : HB_PLACEMENT_DEVICE;
    e.options = j.at("options").get<std::map<std::string, std::string>>();
    e.options_in_force = j.at("options_in_force").get<std::map<std::string, std::string>>();
    e.environment = j.at("environment").get<std::map<std::string, std::string>>();
    e.line = j.at("line").get<int>();
    e.warmup = j.at("warmup").get<int>();
    e.iterations = j.at("iterations").get<int>();
    e.timeout_s = j.at("timeout_s").get<double>();
    return e;
}

const char* communicator_word(config::CommunicatorKind c) {
    return c == config::CommunicatorKind::mpi    ? "mpi"
           : c == config::CommunicatorKind::nccl ? "nccl"
                                                 : "automatic";
}

config::CommunicatorKind communicator_from(const std::string& word) {
    return word == "mpi"    ? config::CommunicatorKind::mpi
           : word == "nccl" ? config::CommunicatorKind::nccl
                            : config::CommunicatorKind::automatic;
}

}  // namespace

nlohmann::json job_json(const config::RunConfig& config, const WorkerJob& job) {
    json out;
    out["config"] = {{"path", config.path},
                     {"name", config.name},
                     {"sha256", config.sha256},
                     {"description", config.description},
                     {"model", data::model_json(config.model)},
                     {"optimizer", data::optimizer_json(config.optimizer)},
                     {"seed", config.seed},
                     {"batches", config.batches},
                     {"input_block", config.input_block},
                     {"warmup", config.warmup},
                     {"iterations", config.iterations},
                     {"timeout_s", config.timeout_s},
                     {"parallel",
                      {{"ranks", config.parallel.ranks},
                       {"communicator", communicator_word(config.parallel.communicator)},
                       {"bucket_mb", config.parallel.bucket_mb},
                       {"overlap", config.parallel.overlap},
                       {"hostfile", config.parallel.hostfile},
                       {"same_batch", config.parallel.same_batch}}}};
    out["entry"] = entry_json(entry_for(config, job));
    json j = {{"warmup", job.overrides.warmup},
              {"iterations", job.overrides.iterations},
              {"result", job.result_path},
              {"unit", job.unit},
              {"ranks", job.ranks},
              {"same_batch", job.same_batch},
              {"progress_fd", job.progress_fd},
              {"gate_fd", job.gate_fd},
              {"profile_steps", job.profiling.steps},
              {"trace_dir", job.profiling.trace_dir}};
    if (const auto& c = job.capture)
        j["capture"] = {{"dir", c->dir}, {"anchor", c->anchor}, {"anchored", c->anchored}};
    if (const auto& t = job.layer_timing)
        j["layer_timing"] = {{"units", t->units},
                             {"repetitions", t->repetitions},
                             {"iterations", t->iterations},
                             {"gbench_out", t->gbench_out},
                             {"units_out", t->units_out}};
    out["job"] = j;
    return out;
}

std::pair<config::RunConfig, WorkerJob> job_from_json(const nlohmann::json& in) {
    try {
        config::RunConfig config;
        const json& c = in.at("config");
        config.path = c.at("path").get<std::string>();
        config.name = c.at("name").get<std::string>();
        config.sha256 = c.at("sha256").get<std::string>();
        config.description = c.at("description").get<std::string>();
        config.model = data::model_from_json(c.at("model"));
        config.optimizer = data::optimizer_from_json(c.at("optimizer"));
        config.seed = c.at("seed").get<uint64_t>();
        config.batches = c.at("batches").get<int>();
        config.input_block = c.at("input_block").get<int>();
        config.warmup = c.at("warmup").get<int>();
        config.iterations = c.at("iterations").get<int>();
        config.timeout_s = c.at("timeout_s").get<double>();
        const json& p = c.at("parallel");
        config.parallel.ranks = p.at("ranks").get<std::vector<int>>();
        config.parallel.communicator = communicator_from(p.at("communicator").get<std::string>());
        config.parallel.bucket_mb = p.at("bucket_mb").get<double>();
        config.parallel.overlap = p.at("overlap").get<bool>();
        config.parallel.hostfile = p.at("hostfile").get<std::string>();
        config.parallel.same_batch = p.at("same_batch").get<bool>();
        config.backends = {entry_from(in.at("entry"))};
        config.placement = config.backends[0].placement;

        WorkerJob job;
        const json& j = in.at("job");
        job.backend = 0;
        job.overrides.warmup = j.at("warmup").get<int>();
        job.overrides.iterations = j.at("iterations").get<int>();
        job.result_path = j.at("result").get<std::string>();
        job.unit = j.at("unit").get<int>();
        job.ranks = j.at("ranks").get<int>();
        job.same_batch = j.at("same_batch").get<bool>();
        job.progress_fd = j.at("progress_fd").get<int>();
        job.gate_fd = j.at("gate_fd").get<int>();
        job.profiling.steps = j.at("profile_steps").get<int>();
        job.profiling.trace_dir = j.at("trace_dir").get<std::string>();
        if (j.contains("capture")) {
            const json& capture = j.at("capture");
            job.capture =
                Capture{capture.at("dir").get<std::string>(),
                        capture.at("anchor").get<std::string>(), capture.at("anchored").get<int>()};
        }
        if (j.contains("layer_timing")) {
            const json& t = j.at("layer_timing");
            job.layer_timing =
                LayerTiming{t.at("units").get<std::string>(), t.at("repetitions").get<int>(),
                            t.at("iterations").get<int>(), t.at("gbench_out").get<std::string>(),
                            t.at("units_out").get<std::string>()};
        }
        return {std::move(config), std::move(job)};
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("not a worker's job: ") + e.what());
    }
}

void write_job_file(const std::string& path, const config::RunConfig& config,
                    const WorkerJob& job) {
    output::write_file_atomically(path, job_json(config, job).dump(2) + "\n");
}

std::pair<config::RunConfig, WorkerJob> read_job_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the worker's job " + path);
    try {
        return job_from_json(json::parse(in));
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

std::string job_path_of(const std::string& result_path) {
    return result_path + ".job.json";
}

}  // namespace harness::run
