#include "check/check_reporter.hpp"

namespace harness::check {

namespace {

std::string verdict_for(results::Status status) {
    switch (status) {
        case results::Status::ok:
            return "PASS";
        case results::Status::mismatch:
            return "MISMATCH";
        case results::Status::skipped:
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
    return check.run.status == results::Status::ok || check.run.status == results::Status::mismatch;
}

}  // namespace harness::check
