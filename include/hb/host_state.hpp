// A training session's state in host memory, as a CPU backend keeps it between the harness's
// calls: every tensor of the graph (parameters and running statistics, in the graph's order),
// each trainable tensor's gradient and RMSProp state, and the batches. Its calls of the same
// names as hb::Session's do what plugin.hpp asks of them, converting between the ABI's float and
// the type T the backend computes in; a session forwards them here. Header-only, standard library
// only.
#pragma once

#include "hb/graph.hpp"
#include "hb/rmsprop.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hb {

// Each tensor's position among the graph's trainable tensors, in the graph's order (-1 for a
// running statistic): where its entry is in the arrays of one per trainable tensor, such as
// load_optimizer_state's.
inline std::vector<int> trainable_slots(const Graph& graph) {
    std::vector<int> slots;
    int next = 0;
    for (const Tensor& t : graph.tensors) slots.push_back(t.trainable ? next++ : -1);
    return slots;
}

template <class T>
class HostState {
public:
    // Every tensor zero until load_state; the square averages at initial_square_average and the
    // momentum buffers (only with momentum) at 0, as RMSProp starts.
    HostState(const Graph& graph, const hb_optimizer& optimizer)
        : optimizer_(optimizer),
          slots_(trainable_slots(graph)),
          input_elements_(graph.values[static_cast<size_t>(graph.input)].elements()),
          target_elements_(graph.target.elements()) {
        for (const Tensor& t : graph.tensors) {
            const auto n = static_cast<size_t>(t.elements);
            const size_t trained = t.trainable ? n : 0;
            tensors_.emplace_back(n, T(0));
            gradients_.emplace_back(trained, T(0));
            square_averages_.emplace_back(trained,
                                          static_cast<T>(optimizer.initial_square_average));
            momentum_buffers_.emplace_back(optimizer.momentum != 0 ? trained : 0, T(0));
        }
    }

    int num_tensors() const { return static_cast<int>(tensors_.size()); }
    bool trainable(int t) const { return slots_[static_cast<size_t>(t)] >= 0; }
    std::vector<T>& tensor(int t) { return tensors_[static_cast<size_t>(t)]; }
    const std::vector<T>& tensor(int t) const { return tensors_[static_cast<size_t>(t)]; }
    // Empty for a running statistic.
    std::vector<T>& gradient(int t) { return gradients_[static_cast<size_t>(t)]; }
    const std::vector<T>& gradient(int t) const { return gradients_[static_cast<size_t>(t)]; }
    std::vector<T>& square_average(int t) { return square_averages_[static_cast<size_t>(t)]; }
    // Empty without momentum.
    std::vector<T>& momentum_buffer(int t) { return momentum_buffers_[static_cast<size_t>(t)]; }

    void load_state(const float* const* tensors) {
        for (size_t t = 0; t < tensors_.size(); ++t) convert(tensors[t], tensors_[t]);
    }
    // One square average per trainable tensor (trainable_slots); the momentum buffers stay.
    void load_optimizer_state(const float* const* square_averages) {
        for (size_t t = 0; t < tensors_.size(); ++t)
            if (slots_[t] >= 0) convert(square_averages[slots_[t]], square_averages_[t]);
    }
    void read_state(float* const* tensors) const {
        for (size_t t = 0; t < tensors_.size(); ++t) convert(tensors_[t], tensors[t]);
    }
    // The last step's gradients, of the trainable tensors whose pointer is not null.
    void read_gradients(float* const* gradients) const {
        for (size_t t = 0; t < tensors_.size(); ++t)
            if (slots_[t] >= 0 && gradients[t]) convert(gradients_[t], gradients[t]);
    }
    // Replaces the batches: each an input of the graph's input shape and a target of its target
    // shape.
    void set_batches(int32_t count, const float* const* inputs, const float* const* targets) {
        inputs_.assign(static_cast<size_t>(count),
                       std::vector<T>(static_cast<size_t>(input_elements_)));
        targets_.assign(static_cast<size_t>(count),
                        std::vector<T>(static_cast<size_t>(target_elements_)));
        for (size_t b = 0; b < inputs_.size(); ++b) {
            convert(inputs[b], inputs_[b]);
            convert(targets[b], targets_[b]);
        }
    }
    const std::vector<T>& input(int32_t batch) const { return inputs_[static_cast<size_t>(batch)]; }
    const std::vector<T>& target(int32_t batch) const {
        return targets_[static_cast<size_t>(batch)];
    }

    // RMSProp on elements [begin, end) of trainable tensor t from its gradient
    // (hb::rmsprop_update), from as many threads as the tensor is split across, each on its own
    // range.
    void update(int t, int64_t begin, int64_t end) {
        const auto i = static_cast<size_t>(t);
        rmsprop_update(optimizer_, begin, end, tensors_[i].data(), gradients_[i].data(),
                       square_averages_[i].data(), momentum_buffers_[i].data());
    }

    // Every element held, in bytes: the tensors, gradients, optimizer state and batches.
    uint64_t bytes() const {
        uint64_t elements = 0;
        for (const auto* list :
             {&tensors_, &gradients_, &square_averages_, &momentum_buffers_, &inputs_, &targets_})
            for (const auto& v : *list) elements += v.size();
        return elements * sizeof(T);
    }

private:
    static void convert(const float* from, std::vector<T>& to) {
        std::transform(from, from + to.size(), to.begin(),
                       [](float x) { return static_cast<T>(x); });
    }
    static void convert(const std::vector<T>& from, float* to) {
        std::transform(from.begin(), from.end(), to, [](T x) { return static_cast<float>(x); });
    }

    hb_optimizer optimizer_;
    std::vector<int> slots_;
    int64_t input_elements_, target_elements_;
    std::vector<std::vector<T>> tensors_, gradients_, square_averages_, momentum_buffers_;
    std::vector<std::vector<T>> inputs_, targets_;
};

}  // namespace hb
