#!/usr/bin/env python3
"""PyTorch itself as a peer of the harness's backends: the training step of a `harness run --dump`
directory (same graph, weights, batches and optimizer), in eager PyTorch or under torch.compile,
timed the way the harness times a step.

    pytorch-peer.py DUMP_DIR [--mode eager|compile] [--device cpu|cuda] [--bf16] [--threads N]
                    [--warmup N] [--iterations N] [--expect-loss LOSS] [--json FILE]

On CUDA the batches live on the device (the harness's `device` placement), cuDNN picks its
algorithms by measurement (torch.backends.cudnn.benchmark, as the libtorch backend does by
default) and TF32 is off: the float32 step that `libtorch-cuda` and `cudnn` run. --bf16 is
PyTorch's own mixed precision, as its users train in it: the forward pass under
torch.autocast(bfloat16) on channels_last tensors, float32 master weights (the peer of
`cudnn-bf16`); its first loss is then checked to 2e-2.

Prints one line: mode, PyTorch version, median and IQR in ms, first and last loss. With
--expect-loss (the first-step loss a backend reported for the same config), exits 1 when the first
loss differs from it by more than 1e-4 relative (2e-2 with --bf16): a timing counts only for the
same problem.
Needs only torch (the wheel that scripts/setup.sh installs); the harness does not need Python.
"""
import argparse
import ast
import json
import statistics
import struct
import sys
import time
import warnings
from pathlib import Path

# torch warns that numpy is missing, which this script does not use.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def read_npy(path):
    """A float32 C-order .npy as the harness writes it (format 1.0), without numpy."""
    data = Path(path).read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    (header_len,) = struct.unpack("<H", data[8:10])
    header = ast.literal_eval(data[10 : 10 + header_len].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise ValueError(f"{path}: float32 C order expected, found {header}")
    body = bytearray(data[10 + header_len :])
    return torch.frombuffer(body, dtype=torch.float32).reshape(header["shape"]).clone()


class Hourglass(torch.nn.Module):
    """The dumped layer graph, layer by layer, with the functional operations that torch.nn's
    modules call; parameters and running statistics are registered under their dumped names."""

    def __init__(self, index, folder):
        super().__init__()
        self.layers = index["layers"]
        self.input_name = index["input"]["name"]
        self.slots = {}
        for i, t in enumerate(index["tensors"]):
            if t["kind"] not in ("parameter", "running_stat"):
                continue
            value = read_npy(folder / t["file"])
            slot = f"t{i}"
            self.slots[t["name"]] = slot
            if t["kind"] == "parameter":
                self.register_parameter(slot, torch.nn.Parameter(value))
            else:
                self.register_buffer(slot, value)
        uses = {}
        for layer in self.layers:
            for v in layer["inputs"]:
                uses[v] = uses.get(v, 0) + 1
        # As nn.ReLU(inplace=True) in hourglass code: where nothing else reads the ReLU's input.
        self.inplace = {l["name"] for l in self.layers if l["kind"] == "relu" and uses[l["inputs"][0]] == 1}

    def tensor(self, name):
        return None if name is None else getattr(self, self.slots[name])

    def forward(self, image, target):
        values = {self.input_name: image}
        loss = None
        for layer in self.layers:
            kind, x = layer["kind"], values[layer["inputs"][0]]
            if kind == "conv2d":
                y = F.conv2d(x, self.tensor(layer["weight"]), self.tensor(layer["bias"]),
                             layer["stride"], layer["padding"])
            elif kind == "batchnorm":
                y = F.batch_norm(x, self.tensor(layer["running_mean"]), self.tensor(layer["running_var"]),
                                 self.tensor(layer["weight"]), self.tensor(layer["bias"]),
                                 training=True, momentum=layer["momentum"], eps=layer["eps"])
            elif kind == "relu":
                y = F.relu(x, inplace=layer["name"] in self.inplace)
            elif kind == "maxpool2d":
                y = F.max_pool2d(x, 2, 2)
            elif kind == "upsample":
                y = F.interpolate(x, scale_factor=2, mode="nearest")
            elif kind == "add":
                y = x
                for v in layer["inputs"][1:]:
                    y = y + values[v]
            elif kind == "mse_loss":
                term = layer["loss_weight"] * F.mse_loss(x, target)
                loss = term if loss is None else loss + term
                continue
            else:
                raise ValueError(f"layer {layer['name']}: unknown kind {kind}")
            values[layer["name"]] = y
        return loss


class RmsPropTensorflow(torch.optim.Optimizer):
    """RMSProp as TensorFlow defines it (eps inside the square root, a starting square average);
    the torch variant is torch.optim.RMSprop itself."""

    def __init__(self, params, lr, alpha, eps, momentum, weight_decay, initial):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, momentum=momentum,
                                      weight_decay=weight_decay, initial=initial))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if group["weight_decay"]:
                    g = g.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["v"] = torch.full_like(p, group["initial"])
                    state["buffer"] = torch.zeros_like(p)
                v = state["v"]
                v.mul_(group["alpha"]).addcmul_(g, g, value=1 - group["alpha"])
                denominator = v.add(group["eps"]).sqrt_()
                if group["momentum"]:
                    buffer = state["buffer"]
                    buffer.mul_(group["momentum"]).addcdiv_(g, denominator, value=group["lr"])
                    p.sub_(buffer)
                else:
                    p.addcdiv_(g, denominator, value=-group["lr"])


def optimizer_for(settings, parameters):
    s = settings
    if s["variant"] == "torch" and s["initial_square_average"] == 0:
        return torch.optim.RMSprop(parameters, lr=s["learning_rate"], alpha=s["alpha"], eps=s["eps"],
                                   momentum=s["momentum"], weight_decay=s["weight_decay"])
    if s["variant"] == "torch":
        raise ValueError("torch RMSProp with a non-zero starting square average is not torch.optim's")
    return RmsPropTensorflow(parameters, s["learning_rate"], s["alpha"], s["eps"], s["momentum"],
                             s["weight_decay"], s["initial_square_average"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--mode", choices=("eager", "compile"), default="eager")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--expect-loss", type=float)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    index = json.loads((args.dump / "index.json").read_text())
    if "optimizer" not in index:
        sys.exit(f"{args.dump}: index.json has no optimizer; dump it again with this harness")
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    memory_format = torch.channels_last if args.bf16 else torch.contiguous_format
    model = Hourglass(index, args.dump).to(args.device, memory_format=memory_format)
    optimizer = optimizer_for(index["optimizer"], list(model.parameters()))
    batches = [(read_npy(args.dump / f"input.{b}.npy").to(args.device, memory_format=memory_format),
                read_npy(args.dump / f"target.{b}.npy").to(args.device, memory_format=memory_format))
               for b in range(index["batches"])]
    forward = torch.compile(model) if args.mode == "compile" else model

    def step(b):
        image, target = batches[b % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.bf16):
            loss = forward(image, target)
        loss.backward()
        optimizer.step()
        return loss.item()

    losses, samples = [], []
    for s in range(args.warmup + args.iterations):
        start = time.perf_counter()
        losses.append(step(s))
        elapsed = (time.perf_counter() - start) * 1e3
        if s >= args.warmup:
            samples.append(elapsed)

    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    result = {
        "mode": args.mode, "device": args.device, "bf16": args.bf16, "torch": torch.__version__,
        "threads": args.threads,
        "warmup": args.warmup, "samples_ms": samples, "median_ms": statistics.median(samples),
        "iqr_ms": quartiles[2] - quartiles[0], "losses": losses,
    }
    name = f"pytorch-{args.mode}{' bf16' if args.bf16 else ''} on {args.device}"
    print(f"{name}, torch {torch.__version__}: median {result['median_ms']:.1f} ms, "
          f"IQR {result['iqr_ms']:.1f} ms, first loss {losses[0]:.6g}, last loss {losses[-1]:.6g}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.expect_loss is not None:
        difference = abs(losses[0] - args.expect_loss) / abs(args.expect_loss)
        if difference > (2e-2 if args.bf16 else 1e-4):
            print(f"{name}: first loss {losses[0]:.8g} differs from the backend's "
                  f"{args.expect_loss:.8g} by {difference:.2g} relative", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
