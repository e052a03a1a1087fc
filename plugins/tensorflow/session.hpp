// A training session of the tensorflow backend: one TensorFlow graph and session, one
// TF_SessionRun per step with the update as its targets (docs/backends.md "tensorflow").
#pragma once

#include "hb/graph.hpp"
#include "hb/plugin.hpp"
#include "hb/profile.hpp"
#include "options.hpp"
#include "tf.hpp"
#include "training_step.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hb_tensorflow {

class Session : public hb::Session {
public:
    explicit Session(const hb_session_desc& desc);

    void load_state(const float* const* tensors) override;
    void load_optimizer_state(const float* const* square_averages) override;
    void set_batches(int32_t count, const float* const* inputs,
                     const float* const* targets) override;
    hb::StepResult step(int32_t batch) override;
    void read_state(float* const* tensors) override;
    // The gradients and the input's gradient are fetched from each step's run in a session asked
    // for the input's gradient (a conformance session); a timed session fetches the loss alone.
    void read_gradients(float* const* gradients) override;
    void read_input_gradient(float* gradient) override;
    std::string manifest_json() override;
    void set_profiling(bool enabled) override;
    const std::vector<hb_event>& events() override;

private:
    // Runs the session; `what` names the run in an error.
    std::vector<TensorPtr> run(const std::string& what, const std::vector<TF_Output>& feeds,
                               const std::vector<TF_Tensor*>& feed_values,
                               const std::vector<TF_Output>& fetches,
                               const std::vector<TF_Operation*>& targets,
                               std::string* metadata = nullptr);
    // The feeds of a step on `batch`: the batch itself (host placement) or its index.
    struct Feeds {
        std::vector<TF_Output> feeds;
        std::vector<TensorPtr> values;
        std::vector<TF_Tensor*> raw;
    };
    Feeds batch_feeds(int32_t batch);
    // Values fed to variables' assignments, all given in one run.
    struct Assignments {
        std::vector<TF_Output> feeds;
        std::vector<TensorPtr> values;
        std::vector<TF_Operation*> targets;
        void add(const Variable& v, TensorPtr value);
    };
    void assign(Assignments& a, const std::string& what);
    // The optimizer's slots to their initial values, unless load_state has given them already.
    void reset_optimizer();
    // Once both the state and the batches are in: one traced forward pass, to see what
    // TensorFlow runs (oneDNN's kernels, XLA's clusters) before anything is timed.
    void inspect();
    void record_events(const std::string& metadata, int64_t step_start_ns);

    hb::Graph ir_;
    Settings settings_;
    TrainingStep step_;
    std::unique_ptr<SessionHandle> session_;
    bool optimizer_reset_ = false, state_loaded_ = false, batches_set_ = false, inspected_ = false;
    std::vector<std::vector<float>> host_inputs_, host_targets_;  // host placement, NHWC
    std::vector<std::vector<double>> wide_inputs_, wide_targets_;  // the same, feed_dtype float64
    std::vector<TensorPtr> last_gradients_;
    TensorPtr last_input_gradient_;
    hb::EventLog events_;
    std::string run_options_;
    // What the traced forward pass ran.
    std::map<std::string, int> executed_types_;
    int onednn_kernels_ = 0, xla_clusters_ = 0;
};

}  // namespace hb_tensorflow
