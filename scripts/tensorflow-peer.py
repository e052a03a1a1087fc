#!/usr/bin/env python3
"""TensorFlow itself as a peer of the tensorflow backend: the training step of a `harness run
--dump` directory (same graph, weights, batches and optimizer) written the way TensorFlow's users
write it, in one of two styles, timed the way the harness times a step.

    tensorflow-peer.py DUMP_DIR [--style tf2|tf1] [--threads N] [--onednn on|off]
                       [--warmup N] [--iterations N] [--expect-loss LOSS] [--json FILE]

--style tf2: a tf.function around a GradientTape step; the update is TensorFlow's own RMSProp op
(ResourceApplyRMSProp, v starting at the dump's initial square average) for the tensorflow
variant, or Torch's variant written in TensorFlow ops. --style tf1: a tf.compat.v1 graph run by a
tf.compat.v1.Session (the seed's style), the gradients from tf.compat.v1.gradients and the same
update ops; the batches live in variables and a step feeds its index, as the plugin's `device`
placement does. Both in NHWC, batch norm with FusedBatchNormV3 in training mode, the running
statistics updated as the IR says (docs/design.md §4). --onednn sets TF_ENABLE_ONEDNN_OPTS before
TensorFlow loads.

Prints one line: style, TensorFlow version, median and IQR in ms, first and last loss. With
--expect-loss (the first-step loss a backend reported for the same config), exits 1 when the first
loss differs from it by more than 1e-4 relative: a timing counts only for the same problem.
Needs the tensorflow-cpu wheel that scripts/setup.sh installs.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--style", choices=("tf2", "tf1"), default="tf2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--onednn", choices=("on", "off"), default="off")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--expect-loss", type=float)
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


args = parse_args()
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if args.onednn == "on" else "0"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def load(folder, name):
    return np.load(folder / name)


class Model:
    """The dumped layer graph as TensorFlow ops in NHWC; every parameter and running statistic a
    tf.Variable under its dumped name, convolution weights in HWIO."""

    def __init__(self, index, folder):
        self.layers = index["layers"]
        self.input_name = index["input"]["name"]
        self.vars, self.trainable = {}, []
        for t in index["tensors"]:
            if t["kind"] not in ("parameter", "running_stat"):
                continue
            value = load(folder, t["file"])
            if value.ndim == 4:
                value = value.transpose(2, 3, 1, 0)  # OIHW -> HWIO
            v = tf.Variable(value, name=t["name"].replace(".", "_"), trainable=t["kind"] == "parameter")
            self.vars[t["name"]] = v
            if t["kind"] == "parameter":
                self.trainable.append(v)

    def loss(self, image, target, updates):
        """The loss; `updates` collects the running statistics' assignments."""
        values = {self.input_name: image}
        total = None
        for layer in self.layers:
            kind, x = layer["kind"], values[layer["inputs"][0]]
            if kind == "conv2d":
                k, s, p = layer["kernel"], layer["stride"], layer["padding"]
                if p == 0:
                    padding = "VALID"
                elif s == 1 and k == 2 * p + 1:
                    padding = "SAME"
                else:
                    x, padding = tf.pad(x, [[0, 0], [p, p], [p, p], [0, 0]]), "VALID"
                y = tf.nn.conv2d(x, self.vars[layer["weight"]], s, padding)
                if layer.get("bias"):
                    y = tf.nn.bias_add(y, self.vars[layer["bias"]])
            elif kind == "batchnorm":
                y, mean, variance, *_ = tf.raw_ops.FusedBatchNormV3(
                    x=x, scale=self.vars[layer["weight"]], offset=self.vars[layer["bias"]],
                    mean=tf.constant([], tf.float32), variance=tf.constant([], tf.float32),
                    epsilon=layer["eps"], is_training=True)
                m = layer["momentum"]
                for name, stat in ((layer["running_mean"], mean), (layer["running_var"], variance)):
                    r = self.vars[name]
                    updates.append(r.assign(r * (1 - m) + stat * m))  # the batch's unbiased variance
            elif kind == "relu":
                y = tf.nn.relu(x)
            elif kind == "maxpool2d":
                y = tf.nn.max_pool2d(x, 2, 2, "VALID")
            elif kind == "upsample":
                h, w = x.shape[1], x.shape[2]
                y = tf.image.resize(x, [2 * h, 2 * w], method="nearest")
            elif kind == "add":
                y = tf.add_n([values[v] for v in layer["inputs"]])
            elif kind == "mse_loss":
                term = layer["loss_weight"] * tf.reduce_mean(tf.square(x - target))
                total = term if total is None else total + term
                continue
            else:
                raise ValueError(f"layer {layer['name']}: unknown kind {kind}")
            values[layer["name"]] = y
        return total


class RmsProp:
    """RMSProp as the dump's optimizer says, in TensorFlow ops: ResourceApplyRMSProp for the
    tensorflow variant; Torch's variant (eps outside the square root) written out."""

    def __init__(self, settings, variables):
        self.s = settings
        self.v = [tf.Variable(tf.fill(p.shape, settings["initial_square_average"]), trainable=False)
                  for p in variables]
        keeps = settings["variant"] == "tensorflow" or settings["momentum"] > 0
        self.b = [tf.Variable(tf.zeros(p.shape), trainable=False) if keeps else None for p in variables]

    def apply(self, grads, variables):
        s, ops = self.s, []
        for g, p, v, b in zip(grads, variables, self.v, self.b):
            if s["weight_decay"]:
                g = g + s["weight_decay"] * p
            if s["variant"] == "tensorflow":
                ops.append(tf.raw_ops.ResourceApplyRMSProp(
                    var=p.handle, ms=v.handle, mom=b.handle, lr=s["learning_rate"], rho=s["alpha"],
                    momentum=s["momentum"], epsilon=s["eps"], grad=g))
                continue
            new_v = s["alpha"] * v + (1 - s["alpha"]) * tf.square(g)
            ops.append(v.assign(new_v))
            step = g / (tf.sqrt(new_v) + s["eps"])
            if b is not None:
                step = s["momentum"] * b + step
                ops.append(b.assign(step))
            ops.append(p.assign_sub(s["learning_rate"] * step))
        return ops


def nhwc_batches(index, folder):
    return [(load(folder, f"input.{b}.npy").transpose(0, 2, 3, 1).copy(),
             load(folder, f"target.{b}.npy").transpose(0, 2, 3, 1).copy())
            for b in range(index["batches"])]


def tf2_step(index, folder):
    model = Model(index, folder)
    optimizer = RmsProp(index["optimizer"], model.trainable)
    batches = [(tf.constant(x), tf.constant(t)) for x, t in nhwc_batches(index, folder)]

    @tf.function
    def step(image, target):
        updates = []
        with tf.GradientTape() as tape:
            loss = model.loss(image, target, updates)
        grads = tape.gradient(loss, model.trainable)
        with tf.control_dependencies(updates):
            optimizer.apply(grads, model.trainable)
        return loss

    return lambda k: float(step(*batches[k % len(batches)]).numpy())


def tf1_step(index, folder):
    tf.compat.v1.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        model = Model(index, folder)
        optimizer = RmsProp(index["optimizer"], model.trainable)
        data = nhwc_batches(index, folder)
        inputs = tf.Variable(np.stack([x for x, _ in data]), trainable=False)
        targets = tf.Variable(np.stack([t for _, t in data]), trainable=False)
        k = tf.compat.v1.placeholder(tf.int32, [])
        updates = []
        loss = model.loss(tf.gather(inputs, k), tf.gather(targets, k), updates)
        grads = tf.compat.v1.gradients(loss, model.trainable)
        with tf.control_dependencies([loss]):
            train = tf.group(*optimizer.apply(grads, model.trainable), *updates)
        session = tf.compat.v1.Session(graph=graph, config=tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=1))
        session.run(tf.compat.v1.global_variables_initializer())
    count = len(data)
    return lambda s: float(session.run([loss, train], {k: s % count})[0])


def main():
    index = json.loads((args.dump / "index.json").read_text())
    if "optimizer" not in index:
        sys.exit(f"{args.dump}: index.json has no optimizer; dump it again with this harness")
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    step = (tf2_step if args.style == "tf2" else tf1_step)(index, args.dump)
    losses, samples = [], []
    for s in range(args.warmup + args.iterations):
        start = time.perf_counter()
        losses.append(step(s))
        if s >= args.warmup:
            samples.append((time.perf_counter() - start) * 1e3)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    result = {
        "style": args.style,
        "tensorflow": tf.__version__,
        "onednn": args.onednn,
        "threads": args.threads,
        "median_ms": statistics.median(samples),
        "iqr_ms": quartiles[2] - quartiles[0],
        "samples_ms": samples,
        "losses": losses,
    }
    print(f"tensorflow {args.style} {tf.__version__} (oneDNN {args.onednn}): median "
          f"{result['median_ms']:.2f} ms, IQR {result['iqr_ms']:.2f} ms, first loss "
          f"{losses[0]:.6f}, last loss {losses[-1]:.6f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.expect_loss is not None and abs(losses[0] - args.expect_loss) > 1e-4 * abs(args.expect_loss):
        print(f"first loss {losses[0]:.8f} differs from the backend's {args.expect_loss:.8f}: "
              "not the same problem", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
