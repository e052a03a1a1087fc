// The JSON sidecar of a results CSV (docs/results-schema.md): the provenance and every run whole,
// with its raw samples, every step's loss and the plugin's manifest.
#pragma once

#include "output/reporter.hpp"

namespace harness::output {

class JsonSidecarReporter final : public FileReporter {
public:
    using FileReporter::FileReporter;

private:
    std::string contents(const Provenance& provenance,
                         const std::vector<BackendRun>& runs) const override;
};

}  // namespace harness::output
