// The exit codes of `harness` and of its worker processes.
#pragma once

namespace harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBackendFailed = 1;  // a backend failed, crashed, or mismatched
inline constexpr int kExitUsage = 2;          // bad usage or config; nothing was written
inline constexpr int kExitOutputFailed = 3;   // results that could not be written or drawn
inline constexpr int kExitNothingRan = 4;     // no backend ran: every one was skipped
inline constexpr int kExitInterrupted = 130;  // SIGINT or SIGTERM; finished rows are kept

}  // namespace harness
