// What the backend's CUDA sources share: launch sizes and checks, element coordinates in either
// layout, and the choice of the element type for kernels written for float and bf16 storage.
#pragma once

#include "check.hpp"
#include "hb/plugin.hpp"
#include "kernel_math.hpp"
#include "options.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace hb_cudnn {
namespace kernels {

constexpr int threads = 256;

inline int blocks_for(int64_t work) {
    return static_cast<int>(std::min<int64_t>((work + threads - 1) / threads, 1 << 16));
}

inline int checked_count(int64_t count) {
    if (count < 0 || count > INT_MAX)
        throw hb::Error("a tensor of " + std::to_string(count) +
                        " elements is too large for the cudnn backend's kernels");
    return static_cast<int>(count);
}

inline void check_launch() {
    HB_CHECK(cudaGetLastError());
}

// Calls f with a value of the element type of `storage` (float or math::bf16).
template <class F>
void dispatch(Storage storage, F&& f) {
    if (storage == Storage::bf16)
        f(math::bf16{});
    else
        f(0.0f);
}

inline bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// W elements of type T loaded and stored in one access: elementwise kernels are written once
// over packs and run with 16-byte packs (4 floats, 8 bf16) where the data allows, else with
// single elements.
template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
    using type = T;
    static constexpr int width = W;
    T v[W];
};

// Calls f with std::integral_constant<int, width>: 16 / sizeof(T) when `count` is a multiple of
// it, every non-null pointer is 16-byte aligned and `also` holds; 1 otherwise.
template <class T, class F>
void with_pack_width(int64_t count, std::initializer_list<const void*> pointers, bool also, F&& f) {
    constexpr int wide = 16 / sizeof(T);
    bool packed = also && count % wide == 0;
    for (const void* p : pointers) packed = packed && (!p || aligned16(p));
    if (packed)
        f(std::integral_constant<int, wide>{});
    else
        f(std::integral_constant<int, 1>{});
}

// Element (n, c, h, w) at flat index i in either layout.
struct Coordinates {
    int n, c, h, w;
};
__device__ inline Coordinates coordinates(int i, int C, int H, int W, bool nhwc) {
    Coordinates k;
    if (nhwc) {
        k.c = i % C;
        i /= C;
        k.w = i % W;
        i /= W;
        k.h = i % H;
        k.n = i / H;
    } else {
        k.w = i % W;
        i /= W;
        k.h = i % H;
        i /= H;
        k.c = i % C;
        k.n = i / C;
    }
    return k;
}
__device__ inline int flat(int n, int c, int h, int w, int C, int H, int W, bool nhwc) {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}
// The channel of flat index i.
__device__ inline int channel_of(int i, int C, int plane, bool nhwc) {
    return nhwc ? i % C : (i / plane) % C;
}

}  // namespace kernels
}  // namespace hb_cudnn
