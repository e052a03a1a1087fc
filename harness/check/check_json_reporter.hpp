// `harness check --json`: the baseline and every backend with its verdict, tolerance and every
// compared quantity, as one JSON document on a stream (with --layers, one per configuration, and
// the worst by layer kind).
#pragma once

#include "check/check_reporter.hpp"

#include <ostream>

namespace harness::check {

class CheckJsonReporter final : public CheckReporter {
public:
    explicit CheckJsonReporter(std::ostream& out) : out_(out) {}
    void report(const CheckRequest& request, const CheckOutcome& outcome) override;
    void report_layers(const CheckRequest& request, const LayerCheckOutcome& outcome) override;

private:
    std::ostream& out_;
};

}  // namespace harness::check
