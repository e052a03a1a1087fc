#include "output/reporter.hpp"

#include "output/atomic_file.hpp"

namespace harness::output {

void Reporters::add(std::unique_ptr<Reporter> reporter) {
    reporters_.push_back(std::move(reporter));
}

void Reporters::report_context(const Provenance& provenance) {
    for (const auto& r : reporters_) r->report_context(provenance);
}

void Reporters::report_runs(const std::vector<BackendRun>& runs) {
    for (const auto& r : reporters_) r->report_runs(runs);
}

void Reporters::finalize(const std::vector<BackendRun>& runs) {
    for (const auto& r : reporters_) r->finalize(runs);
}

void FileReporter::report_runs(const std::vector<BackendRun>& runs) {
    try {
        write_file_atomically(path_, contents(provenance_, runs));
    } catch (const std::exception& e) {
        throw OutputError(e.what());
    }
}

}  // namespace harness::output
