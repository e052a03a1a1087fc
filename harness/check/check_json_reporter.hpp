// `harness check --json`: the baseline and every backend with its verdict, tolerance and every
// compared quantity, as one JSON document on a stream.
#pragma once

#include "check/check_reporter.hpp"

#include <ostream>

namespace harness::check {

class CheckJsonReporter final : public CheckReporter {
public:
    explicit CheckJsonReporter(std::ostream& out) : out_(out) {}
    void report(const CheckRequest& request, const CheckOutcome& outcome) override;

private:
    std::ostream& out_;
};

}  // namespace harness::check
