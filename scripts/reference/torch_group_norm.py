"""Writes tests/reference/torch-group-norm-vectors.txt: what PyTorch 1.13
computes for GroupNorm and InstanceNorm on the inputs of
scripts/reference/gen_group_norm.py (read from the committed
tests/reference/gn_*.npy and in_*.npy), for tests/autograd/
test_group_norm.c and tests/nn/test_group_norm_modules.c.

What is written:
  - for each GroupNorm case of gen_group_norm.py: F.group_norm's output
    and, after y.backward(dy), the gradients of x, weight and bias;
  - for each InstanceNorm set and dtype: F.instance_norm with running
    statistics (momentum 0.1, eps 1e-5) on two training batches and one
    eval batch (use_input_stats false): the output, the three gradients,
    and the running statistics after each training batch;
  - the same three batches through nn.InstanceNorm1d/2d(C, affine=True,
    track_running_stats=True), train() then eval(): output, running
    statistics, num_batches_tracked;
  - the repr of a few modules.

Run with a Python that has PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 scripts/reference/torch_group_norm.py [out_file]

Not part of scripts/gen-reference.sh, which writes the .npy files with
NumPy only and must reproduce them byte for byte on any machine; PyTorch's
vectorised kernels sum in an order that depends on the CPU, so these
vectors are compared with tolerances (explained in the tests) and kept as
text.

File format: a line "## <name>", then "shape d0 d1 ..." and one value per
line (C order, Python's repr of the float64, or of the float32 value
widened exactly), or "text <string>" for a repr.
"""
import pathlib
import sys

import numpy as np
import torch
import torch.nn.functional as F

here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(here))
import gen_group_norm as gen  # noqa: E402  (the cases and settings)

REF = here.parent.parent / "tests" / "reference"
TORCH_DTYPES = {"f64": torch.float64, "f32": torch.float32}


def load(name):
    return torch.from_numpy(np.load(REF / f"{name}.npy"))


def section(lines, name, t):
    t = t.detach()
    lines.append(f"## {name}")
    lines.append("shape " + " ".join(str(d) for d in t.shape))
    for v in t.reshape(-1).tolist():
        lines.append(repr(float(v)))


def group_norm_cases(lines):
    for case, sname, G, affine, eps, dtypes in gen.GN_CASES:
        for tag in dtypes:
            x = load(f"gn_{sname}_x_{tag}").requires_grad_()
            w = load(f"gn_{sname}_w_{tag}").requires_grad_() if affine else None
            b = load(f"gn_{sname}_b_{tag}").requires_grad_() if affine else None
            dy = load(f"gn_{sname}_dy_{tag}")
            y = F.group_norm(x, G, w, b, eps)
            y.backward(dy)
            section(lines, f"gn_{case}_{tag} y", y)
            section(lines, f"gn_{case}_{tag} dx", x.grad)
            if affine:
                section(lines, f"gn_{case}_{tag} dw", w.grad)
                section(lines, f"gn_{case}_{tag} db", b.grad)


def instance_norm_cases(lines):
    for sname, shape in gen.IN_SETS.items():
        C = shape[1]
        for tag, dt in TORCH_DTYPES.items():
            xs = load(f"in_{sname}_x_{tag}")
            dys = load(f"in_{sname}_dy_{tag}")
            rm = torch.zeros(C, dtype=dt)
            rv = torch.ones(C, dtype=dt)
            for k in range(gen.IN_TRAIN_STEPS + 1):
                train = k < gen.IN_TRAIN_STEPS
                x = xs[k].clone().requires_grad_()
                w = load(f"in_{sname}_w_{tag}").requires_grad_()
                b = load(f"in_{sname}_b_{tag}").requires_grad_()
                y = F.instance_norm(x, rm, rv, w, b, use_input_stats=train,
                                    momentum=gen.IN_MOMENTUM, eps=gen.IN_EPS)
                y.backward(dys[k])
                name = f"in_{sname}_{tag} batch {k}"
                section(lines, f"{name} y", y)
                section(lines, f"{name} dx", x.grad)
                section(lines, f"{name} dw", w.grad)
                section(lines, f"{name} db", b.grad)
                if train:
                    section(lines, f"{name} running_mean", rm)
                    section(lines, f"{name} running_var", rv)
            # the module, float32 as made
            if tag != "f32":
                continue
            layer = (torch.nn.InstanceNorm1d if len(shape) == 3
                     else torch.nn.InstanceNorm2d)(
                C, affine=True, track_running_stats=True)
            with torch.no_grad():
                layer.weight.copy_(load(f"in_{sname}_w_{tag}"))
                layer.bias.copy_(load(f"in_{sname}_b_{tag}"))
            layer.train()
            for k in range(gen.IN_TRAIN_STEPS + 1):
                if k == gen.IN_TRAIN_STEPS:
                    layer.eval()
                y = layer(xs[k])
                name = f"module in_{sname} batch {k}"
                section(lines, f"{name} y", y)
                section(lines, f"{name} running_mean", layer.running_mean)
                section(lines, f"{name} running_var", layer.running_var)
                section(lines, f"{name} num_batches_tracked",
                        layer.num_batches_tracked.double())


def reprs(lines):
    layers = [
        torch.nn.GroupNorm(4, 16),
        torch.nn.GroupNorm(3, 6, eps=1e-3, affine=False),
        torch.nn.InstanceNorm1d(4),
        torch.nn.InstanceNorm2d(16),
        torch.nn.InstanceNorm2d(3, eps=1e-3, momentum=0.25, affine=True,
                                track_running_stats=True),
    ]
    for i, layer in enumerate(layers):
        lines.append(f"## repr {i}")
        lines.append(f"text {layer!r}")


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        REF / "torch-group-norm-vectors.txt"
    lines = [f"# Written by scripts/reference/torch_group_norm.py with torch {torch.__version__}"]
    group_norm_cases(lines)
    instance_norm_cases(lines)
    reprs(lines)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
