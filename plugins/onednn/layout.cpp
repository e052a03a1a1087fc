#include "layout.hpp"

#include "api.hpp"
#include "hb/plugin.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace hb_onednn {

dnnl::memory::desc plain_desc(const std::vector<int64_t>& shape) {
    using tag = dnnl::memory::format_tag;
    static const tag tags[] = {tag::a, tag::ab, tag::abc, tag::abcd};
    if (shape.empty() || shape.size() > 4)
        throw hb::Error("a tensor of rank " + std::to_string(shape.size()) +
                        " has no plain layout here");
    return dnnl::memory::desc(dnnl::memory::dims(shape.begin(), shape.end()),
                              dnnl::memory::data_type::f32, tags[shape.size() - 1]);
}

int64_t floats_of(const dnnl::memory::desc& md) {
    return static_cast<int64_t>(md.get_size() / sizeof(float));
}

bool has_padding(const dnnl::memory::desc& md) {
    const dnnl::memory::dims dims = api::logical_dims(md);
    const int64_t elements =
        std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
    return md.get_size() != static_cast<size_t>(elements) * sizeof(float);
}

std::string layout_name(const dnnl::memory::desc& md, const char* letters) {
    const api::Blocking b = api::blocking(md);
    if (!b.blocked) return "opaque";
    std::vector<int> order(static_cast<size_t>(b.ndims));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return b.strides[x] > b.strides[y]; });
    std::vector<bool> blocked(static_cast<size_t>(b.ndims), false);
    for (int64_t dim : b.inner_idxs) blocked[static_cast<size_t>(dim)] = true;
    std::string name;
    for (int dim : order) {
        const char letter = letters[dim];
        name += blocked[dim] ? static_cast<char>(std::toupper(letter)) : letter;
    }
    for (size_t j = 0; j < b.inner_blks.size(); ++j)
        name += std::to_string(b.inner_blks[j]) + letters[b.inner_idxs[j]];
    return name;
}

namespace {

int64_t offset_in(const api::Blocking& b, const int64_t* index) {
    int64_t rest[DNNL_MAX_NDIMS];
    for (int k = 0; k < b.ndims; ++k) rest[k] = index[k];
    int64_t offset = 0, inner_stride = 1;
    for (size_t j = b.inner_blks.size(); j-- > 0;) {
        const auto dim = static_cast<size_t>(b.inner_idxs[j]);
        offset += (rest[dim] % b.inner_blks[j]) * inner_stride;
        rest[dim] /= b.inner_blks[j];
        inner_stride *= b.inner_blks[j];
    }
    for (int k = 0; k < b.ndims; ++k) offset += rest[k] * b.strides[k];
    return offset + b.offset0;
}

}  // namespace

int64_t physical_offset(const dnnl::memory::desc& md, const int64_t* index) {
    return offset_in(api::blocking(md), index);
}

int channel_block(const dnnl::memory::desc& md) {
    const api::Blocking b = api::blocking(md);
    if (!b.blocked || b.ndims != 4 || b.offset0 != 0) return 0;
    int64_t block = 1;
    if (b.inner_blks.size() == 1 && b.inner_idxs[0] == 1)
        block = b.inner_blks[0];
    else if (!b.inner_blks.empty())
        return 0;
    const int64_t c = b.padded_dims[1], h = b.padded_dims[2], w = b.padded_dims[3];
    const bool dense = b.strides[3] == block && b.strides[2] == w * block &&
                       b.strides[1] == h * w * block && b.strides[0] == c * h * w;
    return dense ? static_cast<int>(block) : 0;
}

std::vector<uint8_t> element_mask(const dnnl::memory::desc& md) {
    std::vector<uint8_t> mask(md.get_size() / sizeof(float), 0);
    const api::Blocking b = api::blocking(md);
    const dnnl::memory::dims dims = api::logical_dims(md);
    const int rank = static_cast<int>(dims.size());
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    const int64_t elements =
        std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
    for (int64_t e = 0; e < elements; ++e) {
        mask[static_cast<size_t>(offset_in(b, index.data()))] = 1;
        for (int k = rank - 1; k >= 0; --k) {
            if (++index[k] < dims[k]) break;
            index[k] = 0;
        }
    }
    return mask;
}

}  // namespace hb_onednn
