#include "check/check_reporter.hpp"

namespace harness::check {

std::string verdict_of(const BackendCheck& check) {
    switch (check.run.status) {
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

bool compared(const BackendCheck& check) {
    return check.run.status == results::Status::ok || check.run.status == results::Status::mismatch;
}

}  // namespace harness::check
