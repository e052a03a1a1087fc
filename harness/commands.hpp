// The `harness` commands. Each returns the process exit code: 0 success, 1 a backend failed,
// 2 bad usage or config (130 when a run was interrupted).
#pragma once

#include <string>
#include <vector>

namespace harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBackendFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

struct RunArgs {
    std::string config;
    std::string backends;  // comma-separated entry names; empty = all
    int iterations = -1, warmup = -1;
    std::string output;
    std::string dump_dir;
    bool json = false;
};
int run_command(const RunArgs& args);

int list_command(bool json);

int info_command(const std::string& config, bool json);

// Hidden commands the harness runs in its own child processes.
int worker_command(const std::string& config, int index, int warmup, int iterations,
                   const std::string& result);
int describe_command(const std::string& plugin_file, const std::string& result);

}  // namespace harness
