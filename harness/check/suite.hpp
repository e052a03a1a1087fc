// `harness check --suite PLUGIN` (docs/conformance.md "The suite"): what it means for a plugin to
// be conformant. The suite is every check config in the harness's config folder (check*.yaml, but
// not the data-parallel ones) with its backends replaced by the one plugin, the layer checks of
// check.yaml, and a part for each value of the plugin's options that changes its step; a plugin
// is conformant when no part mismatches or fails.
#pragma once

#include "check/check_runner.hpp"
#include "check/layer_check.hpp"
#include "hb/options.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness::check {

// The check configs shipped with the harness: share/harness/configs beside an installed `bin/`
// harness, else the source tree's configs/ the harness was built from. Throws when neither exists.
std::filesystem::path check_config_folder();

struct SuitePart {
    // "check-tiny", "check --layers" for the layer checks, "check layout=plain" for an option's
    std::string label;
    std::filesystem::path config;  // the shipped config the part runs
    bool layers = false;           // every layer configuration alone, not the whole step
    // One of the plugin's options set to a value other than its default; none: its defaults.
    std::optional<std::pair<std::string, std::string>> option;
};

// The parts, in order: each check*.yaml of `folder` without a `parallel` section, by name, then
// the layer checks of check.yaml. Throws when the folder has no check.yaml.
std::vector<SuitePart> suite_parts(const std::filesystem::path& folder);

// The parts for the plugin's declared options, in their order: one for each value but the
// default (both, where unset is no value) of each boolean or choice option that changes the step,
// on the shipped config the option names (hb_option_spec.checked_on; check.yaml when none); and
// for every other option why it has none. Throws std::invalid_argument when an option names a
// config that `folder` does not hold.
struct OptionParts {
    std::vector<SuitePart> parts;
    std::vector<std::string> not_run;  // "threads (timing only)", "rounding_seed (an integer)"
};
OptionParts option_parts(const std::vector<hb::OptionSpec>& specs,
                         const std::filesystem::path& folder);

// The one backend the suite checks: an entry named after its plugin, with the plugin's defaults.
struct SuiteBackend {
    std::string plugin;
    std::string device = "cpu";
};

// `config` with `backend` as its only entry, named as its plugin, with the plugin's default
// options and the config's data placement: the suite's parts, and `harness check CONFIG --plugin
// NAME`. Throws std::invalid_argument for a name that is not a plugin's or a device's.
config::RunConfig with_backend(config::RunConfig config, const SuiteBackend& backend);

// One part's result for the suite's backend.
struct PartResult {
    // PASS, MISMATCH, FAILED, SKIPPED (also where the plugin answers HB_UNSUPPORTED: a model
    // feature or an option's value it does not implement here), or BASELINE FAILED
    std::string verdict;
    std::string detail;  // the worst quantity over its tolerance, or why it did not pass
};

PartResult part_result(const CheckOutcome& outcome);
PartResult part_result(const LayerCheckOutcome& outcome);

}  // namespace harness::check
