// `harness check`'s table: per backend its verdict, its worst relative and absolute differences
// with where they are, and the tolerance; under a backend that failed, every quantity outside it.
// With --layers: a row per layer configuration, a column per backend, then the worst by kind.
#pragma once

#include "check/check_reporter.hpp"

#include <ostream>

namespace harness::check {

class CheckTableReporter final : public CheckReporter {
public:
    explicit CheckTableReporter(std::ostream& out) : out_(out) {}
    void report(const CheckRequest& request, const CheckOutcome& outcome) override;
    void report_layers(const CheckRequest& request, const LayerCheckOutcome& outcome) override;

private:
    std::ostream& out_;
};

}  // namespace harness::check
