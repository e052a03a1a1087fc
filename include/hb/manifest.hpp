// The manifest's vocabulary (hb::Session::manifest_json): the keys the harness reads from every
// session's manifest, declared as types. A plugin starts its manifest with hb::manifest(math,
// threads) and adds what else it ran, in words of its own; the harness reads "math" and
// "threads" back with the same declarations, and a manifest without them is a plugin defect
// that fails the row, named, never taken as float32. Header-only, standard library only.
#pragma once

#include "hb/json.hpp"
#include "hb/plugin.h"

#include <optional>
#include <string>

namespace hb {

// The arithmetic a session's step runs in. `harness check` takes its tolerance from it
// (docs/conformance.md): fp32 and fp64 the strict one, the others a reduced-precision one.
enum class Math {
    fp32,  // float32 throughout
    fp64,  // float64 throughout (the check's oracle; read back through the ABI as float32)
    tf32,  // float32 storage, TensorFloat-32 products in the convolutions
    fp16,  // float16 activations, float32 accumulation and optimizer (mixed precision)
    bf16,  // bfloat16 activations, float32 accumulation and optimizer (mixed precision)
};
inline constexpr Math kMathModes[] = {Math::fp32, Math::fp64, Math::tf32, Math::fp16, Math::bf16};

inline const char* to_string(Math math) {
    switch (math) {
        case Math::fp32:
            return "fp32";
        case Math::fp64:
            return "fp64";
        case Math::tf32:
            return "tf32";
        case Math::fp16:
            return "fp16";
        case Math::bf16:
            return "bf16";
    }
    return "fp32";
}

// The mode a manifest's word names; none for a word outside the vocabulary.
inline std::optional<Math> math_from_string(const std::string& word) {
    for (Math m : kMathModes)
        if (word == to_string(m)) return m;
    return std::nullopt;
}

// "fp32, fp64, tf32, fp16, bf16": the words, for messages.
inline std::string math_words() {
    std::string words;
    for (Math m : kMathModes) words += (words.empty() ? "" : ", ") + std::string(to_string(m));
    return words;
}

// A manifest's first members: "math", and "threads", the host threads the step's work ran on
// (a GPU backend's host side: 1).
inline JsonObject manifest(Math math, int threads) {
    JsonObject m;
    m.add_string("math", to_string(math)).add("threads", threads);
    return m;
}

// The manifest's "placement": where the batches are when a step starts.
inline const char* placement_word(hb_placement placement) {
    return placement == HB_PLACEMENT_HOST ? "host" : "device";
}

// The manifest's "cuda_graph" of a step captured once and replayed (the `cuda_graphs` option):
// when it is captured, then how each step's batch reaches it.
inline std::string captured_step_note(const std::string& batches) {
    return "first step eager, the whole step captured at the second and replayed from then on" +
           batches;
}

}  // namespace hb
