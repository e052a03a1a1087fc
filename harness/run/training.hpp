// What a worker trains with (docs/design.md §6): a graph, its initial state and batches, and the
// plugin's session made from them.
#pragma once

#include "config/config.hpp"
#include "data/initial_state.hpp"
#include "model/graph.hpp"
#include "output/record.hpp"
#include "plugin_host/plugin_library.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace harness::run {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start);

// A step's two clocks from its start: wall time, and the process's CPU time (user + system, every
// thread: what Python 2's time.clock() returned on Linux, and where spinning threads show).
class StepClock {
public:
    StepClock();
    double wall_ms() const;
    double cpu_ms() const;

private:
    Clock::time_point wall_start_;
    double cpu_start_ms_;
};

// The graph, its C view, the initial state, the batches and the plugin's session, set up in that
// order (the session's part is timed as `run.setup_ms`).
struct Training {
    model::Graph graph;
    model::AbiGraph abi_graph;
    std::vector<data::HostTensor> state;
    data::Batches batches;
    std::unique_ptr<plugin_host::PluginSession> session;
    int batch_count;
    // Whether the plugin gives the parameters' gradients (HB_CAP_GRADIENTS: write_tensors).
    bool gradients = false;
    // Whether each step computes the gradient of its input batch too (write_input_gradient).
    bool input_gradient = false;

    // `read_back`: the gradients will be read after steps (hb_session_desc.read_back);
    // `want_input_gradient`: ask for the input's gradient, where the plugin can give it.
    Training(model::Graph graph, const config::RunConfig& config, const config::BackendEntry& entry,
             const plugin_host::PluginLibrary& library, output::BackendRun& run,
             bool read_back = false, bool want_input_gradient = false);

    // Step k of the run (counting from 0) on its batch; records time, loss and phases.
    void step(int k, bool timed, output::BackendRun& run);
    // Records a step timed by `clock` and what the plugin said of it.
    static void record(const hb_step_result& result, const StepClock& clock, bool timed,
                       output::BackendRun& run);
    // The session's peak memory and manifest into `run`, whose status becomes ok.
    void finish(output::BackendRun& run);
    // Writes `which` ("gradient" or "state") of every tensor as DIR/<folder>/<name>.npy (folder:
    // `which` unless given).
    void write_tensors(const std::string& dir, const std::string& which,
                       const std::string& folder_name = "");
    // Loads every tensor from FOLDER/<name>.npy (as write_tensors wrote them) into the session.
    void load_tensors(const std::string& folder);
    // Writes the last step's input gradient as DIR/input-gradient.npy (only where
    // `input_gradient`).
    void write_input_gradient(const std::string& dir);
};

// The run's warm-up and timed steps, `step(k, timed)` each, until they are done or `stop(timed)`
// says so before one (`timed`: whether that step is timed); then the session's figures and the
// statistics. True when it stopped early: the row is `interrupted`, with the timed steps it
// completed and statistics from them.
bool time_steps(Training& training, output::BackendRun& run,
                const std::function<void(int, bool)>& step, const std::function<bool(bool)>& stop);

}  // namespace harness::run
