// Any bytes as a results CSV and as its JSON sidecar, read the way `harness report` reads them: a
// std::runtime_error naming the file or rows, never a crash, a hang or another exception.
#include "fuzz_input.hpp"
#include "output/csv_reader.hpp"
#include "report/attribution_report.hpp"
#include "report/charts.hpp"
#include "report/markdown_report.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

template <class F>
void expect_a_clear_error(const char* what, F&& read) {
    try {
        read();
    } catch (const std::runtime_error&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s threw something other than runtime_error: %s\n", what, e.what());
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace harness::report;
    const std::string csv = harness::fuzz::write_input("r.csv", data, size);
    harness::fuzz::write_input("r.json", data, size);
    expect_a_clear_error("read_csv", [&] {
        markdown_report(harness::output::read_csv(csv), {"onednn", 100});
    });
    expect_a_clear_error("read_run_results", [&] {
        const auto sidecar = harness::output::read_run_results(csv).sidecar_runs();
        step_samples(sidecar);
        const auto runs = profiles(sidecar);
        attribution_report(runs, Attribution::kind);
        attribution_report(runs, Attribution::layer);
    });
    return 0;
}
