// A loops session: hb::HostSession's fourteen kernels, one forward and one backward per layer
// kind, each a few plain loops; sums accumulate in double.
#pragma once

#include "hb/host_session.hpp"

namespace hb_loops {

class Session : public hb::HostSession {
public:
    explicit Session(const hb_session_desc& desc);

protected:
    void conv2d(const hb::LayerPass& p) override;
    void conv2d_backward(const hb::LayerPass& p) override;
    void batchnorm(const hb::LayerPass& p) override;
    void batchnorm_backward(const hb::LayerPass& p) override;
    void relu(const hb::LayerPass& p) override;
    void relu_backward(const hb::LayerPass& p) override;
    void maxpool2d(const hb::LayerPass& p) override;
    void maxpool2d_backward(const hb::LayerPass& p) override;
    void upsample(const hb::LayerPass& p) override;
    void upsample_backward(const hb::LayerPass& p) override;
    void add(const hb::LayerPass& p) override;
    void add_backward(const hb::LayerPass& p) override;
    void mse_loss(const hb::LayerPass& p) override;
    void mse_loss_backward(const hb::LayerPass& p) override;
};

}  // namespace hb_loops
