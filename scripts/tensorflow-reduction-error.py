#!/usr/bin/env python3
"""How far TensorFlow's float32 batch statistics are from the exact ones: tf.nn.moments' Mean over
N, H and W (the rows of an (n, 64) matrix), on normal data with a channel mean of 0, 1 and 3
standard deviations, for n from 96 to 393216 values per channel.

    $(bash scripts/setup.sh --pypi-prefix)/bin/python scripts/tensorflow-reduction-error.py

Prints, for each n, the largest and the median error over the 64 channels, of the mean in units
of u x rms(values) and of the variance in units of u x variance (u = 2^-23), next to sqrt(n):
the model `harness check`'s ensemble gives a batch norm's statistics (docs/conformance.md).
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

U = 2.0**-23


def main():
    tf.config.threading.set_intra_op_parallelism_threads(2)
    rng = np.random.default_rng(0)
    print(f"TensorFlow {tf.__version__}: error of tf.nn.moments over n values per channel")
    print("offset        n   mean/(u rms) max  median   var/(u var) max  median   sqrt(n)")
    for offset in (0.0, 1.0, 3.0):
        for n in (96, 1536, 6144, 24576, 98304, 393216):
            x = (rng.standard_normal((n, 64)) + offset).astype(np.float32)
            exact = x.astype(np.float64)
            mean = exact.mean(0)
            var = ((exact - mean) ** 2).mean(0)
            rms = np.sqrt((exact**2).mean(0))
            tf_mean, tf_var = tf.nn.moments(tf.constant(x), axes=[0])
            mean_error = np.abs(tf_mean.numpy() - mean) / (U * rms)
            var_error = np.abs(tf_var.numpy() - var) / (U * var)
            print(f"{offset:6.1f} {n:8d} {mean_error.max():17.2f} {np.median(mean_error):7.2f}"
                  f" {var_error.max():17.2f} {np.median(var_error):7.2f} {np.sqrt(n):9.0f}")


if __name__ == "__main__":
    main()
