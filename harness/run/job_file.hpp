// What a worker is given: its job resolved by the harness, in one JSON file. The harness parses and
// checks the config once; a worker reads this file and never the config (docs/design.md §6).
#pragma once

#include "config/config.hpp"
#include "run/worker_job.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

namespace harness::run {

// The job and the parts of `config` a worker uses: the model, data, optimizer and run settings,
// and the one backend entry it runs (the job's, with the job's options over its own), so that the
// worker's config has that entry alone, at index 0.
nlohmann::json job_json(const config::RunConfig& config, const WorkerJob& job);

// The config and job of job_json(). Throws std::runtime_error naming what is missing or wrong.
std::pair<config::RunConfig, WorkerJob> job_from_json(const nlohmann::json& j);

// job_json() written to `path`; read_job_file() reads it back. Both throw std::runtime_error
// naming the file.
void write_job_file(const std::string& path, const config::RunConfig& config, const WorkerJob& job);
std::pair<config::RunConfig, WorkerJob> read_job_file(const std::string& path);

// Where the job of result `result_path` is written: beside it.
std::string job_path_of(const std::string& result_path);

}  // namespace harness::run
