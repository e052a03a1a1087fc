#include "check/check_reporter.hpp"

namespace harness::check {

namespace {

std::string verdict_for(output::Status status) {
    switch (status) {
        case output::Status::ok:
            return "PASS";
        case output::Status::mismatch:
            return "MISMATCH";
        case output::Status::skipped:
            return "SKIPPED";
        default:
            return "FAILED";
    }
}

}  // namespace

std::string verdict_of(const BackendCheck& check) {
    return verdict_for(check.run.status);
}

std::string rank_verdict_of(const RankCheck& check) {
    return verdict_for(check.run.status);
}

bool compared(const BackendCheck& check) {
    return check.run.status == output::Status::ok || check.run.status == output::Status::mismatch;
}

}  // namespace harness::check
