// The verdicts of `harness check`, kept so that `harness run` can say in every row whether that
// backend passed a check of the same config (same bytes) in the same math mode, with the same
// build of its plugin and the same library versions.
#pragma once

#include "config/config.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace harness::check {

// What a verdict holds for: the plugin file the harness loads for a backend (its SHA-256), the
// version the plugin reports and the versions of the libraries it uses. A rebuilt plugin, or one
// linked against other library versions, no longer carries the verdict of the one checked.
struct BuildIdentity {
    std::string plugin_sha256;  // "" when no plugin file was found
    std::string plugin_version;
    std::map<std::string, std::string> libraries;  // name -> version
};
bool operator==(const BuildIdentity& a, const BuildIdentity& b);
inline bool operator!=(const BuildIdentity& a, const BuildIdentity& b) {
    return !(a == b);
}

// The identity of the plugin `plugin` as found on the plugin search path now (run/plugin_search),
// with the versions a worker reported for it.
BuildIdentity build_identity(const std::string& plugin, const std::string& plugin_version,
                             const std::map<std::string, std::string>& libraries);

// What changed between the build a verdict was recorded for and `now`, for a person: "the plugin
// file hb_x.so (SHA-256 ab12... then, cd34... now)", "the plugin version (1.0 then, 1.1 now)", "the
// library dnnl (3.2 then, 3.5 now)", joined by "; " ("" when nothing did).
std::string identity_change(const std::string& plugin, const BuildIdentity& then,
                            const BuildIdentity& now);

struct Verdict {
    std::string backend;    // the config entry's name
    std::string math_mode;  // as the backend declared it
    std::string verdict;    // "pass" or "mismatch"
    std::string baseline;
    std::string utc_time;
    BuildIdentity build;  // of the backend checked
};

// Where verdicts are kept, an absolute folder so that a run from any working folder finds them:
// $XDG_CACHE_HOME/harness/checks, or ~/.cache/harness/checks when XDG_CACHE_HOME is unset or not
// absolute (the XDG base directory rules).
std::string verdicts_dir();
// verdicts_dir()/<config name>-<first 16 hex digits of its SHA-256>.json: one file per config
// content, wherever the config lies.
std::string verdicts_path(const config::RunConfig& config);

// Adds or replaces the verdicts (keyed by backend and math mode: a new build's verdict replaces
// the old one's); written atomically, its folder created.
void record_verdicts(const std::string& path, const std::vector<Verdict>& verdicts);
std::vector<Verdict> read_verdicts(const std::string& path);  // empty when there is no file
std::optional<Verdict> find_verdict(const std::vector<Verdict>& verdicts,
                                    const std::string& backend, const std::string& math_mode);

// The `check` column of a run whose build is `now`: the verdict when it was recorded for that very
// build, "stale" when for another (or by a harness that recorded no build).
std::string verdict_for(const Verdict& verdict, const BuildIdentity& now);

}  // namespace harness::check
