"""Writes tests/reference/torch-conv-vectors.txt: what PyTorch 1.13 computes
for Conv2d, MaxPool2d and AvgPool2d, for tests/autograd/test_conv.c and
tests/nn/test_conv_modules.c.

- The initial weights of nn.Conv2d after torch.manual_seed, bit for bit
  (float32), and a draw made after the layer (the generator's state).
- F.conv2d forward and backward in float64 for combinations of stride,
  padding, dilation and groups: the inputs, the output, and the gradients
  of sum(y * dy) for a given dy.
- max_pool2d and avg_pool2d forward and backward in float64, with ties
  inside the windows (small integers), so the index PyTorch picks is seen.

Run with a Python that has PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 scripts/reference/torch_conv_vectors.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy.

File format: a line "## <title>", then one line per value (C order). A
float32 value is written as its repr and its bits as 0x%08x; a float64
value as its repr alone (17 significant digits read back exactly).
"""
import pathlib
import struct
import sys

import torch
import torch.nn.functional as F


def f32(title, t):
    yield title, [f"{v!r:>24} 0x{struct.unpack('<I', struct.pack('<f', v))[0]:08x}"
                  for v in t.detach().reshape(-1).tolist()]


def f64(title, t):
    yield title, [repr(v) for v in t.detach().reshape(-1).tolist()]


def init_cases():
    torch.manual_seed(0)
    m = torch.nn.Conv2d(1, 8, 3, padding=1)
    yield from f32("manual_seed(0); nn.Conv2d(1, 8, 3, padding=1).weight", m.weight)
    yield from f32("manual_seed(0); nn.Conv2d(1, 8, 3, padding=1).bias", m.bias)
    torch.manual_seed(42)
    m = torch.nn.Conv2d(4, 6, (3, 2), groups=2)
    yield from f32("manual_seed(42); nn.Conv2d(4, 6, (3, 2), groups=2).weight", m.weight)
    yield from f32("manual_seed(42); nn.Conv2d(4, 6, (3, 2), groups=2).bias", m.bias)
    torch.manual_seed(7)
    m = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
    yield from f32("manual_seed(7); nn.Conv2d(16, 16, 3, padding=1, bias=False).weight", m.weight)
    yield from f32("... then rand(3)", torch.rand(3))


# name, x shape, weight shape, bias, stride, padding, dilation, groups
CONV = [
    ("plain", (2, 3, 6, 5), (4, 3, 3, 3), True, (1, 1), (0, 0), (1, 1), 1),
    ("stride_pad", (2, 2, 7, 6), (3, 2, 3, 2), True, (2, 1), (1, 2), (1, 1), 1),
    ("dilation", (1, 2, 8, 7), (2, 2, 3, 2), True, (1, 2), (1, 0), (2, 3), 1),
    ("groups", (2, 4, 5, 6), (6, 2, 2, 3), False, (1, 2), (1, 1), (1, 1), 2),
    ("depthwise", (1, 3, 5, 5), (3, 1, 3, 3), True, (2, 2), (1, 1), (1, 1), 3),
]


def conv_cases():
    g = torch.Generator().manual_seed(1234)
    for name, xs, ws, has_b, stride, padding, dilation, groups in CONV:
        x = (torch.rand(xs, generator=g, dtype=torch.float64) * 2 - 1).requires_grad_()
        w = (torch.rand(ws, generator=g, dtype=torch.float64) * 2 - 1).requires_grad_()
        b = (torch.rand(ws[0], generator=g, dtype=torch.float64) * 2 - 1).requires_grad_() \
            if has_b else None
        y = F.conv2d(x, w, b, stride, padding, dilation, groups)
        dy = torch.rand(y.shape, generator=g, dtype=torch.float64) * 2 - 1
        (y * dy).sum().backward()
        yield from f64(f"conv {name} x", x)
        yield from f64(f"conv {name} w", w)
        if has_b:
            yield from f64(f"conv {name} b", b)
        yield from f64(f"conv {name} dy", dy)
        yield from f64(f"conv {name} y", y)
        yield from f64(f"conv {name} dx", x.grad)
        yield from f64(f"conv {name} dw", w.grad)
        if has_b:
            yield from f64(f"conv {name} db", b.grad)


# name, x shape, kernel, stride, padding
POOL = [
    ("k3s2p1", (2, 2, 7, 6), (3, 3), (2, 2), (1, 1)),
    ("k2", (1, 3, 6, 4), (2, 2), (2, 2), (0, 0)),
    ("k3x2s1p1x0", (3, 5, 5), (3, 2), (1, 1), (1, 0)),
]


def pool_cases():
    g = torch.Generator().manual_seed(99)
    for name, xs, k, s, p in POOL:
        # small integers: many ties inside a window
        x = torch.randint(-2, 3, xs, generator=g).to(torch.float64)
        for op, fn in (("max", F.max_pool2d), ("avg", F.avg_pool2d)):
            xi = x.clone().requires_grad_()
            y = fn(xi, k, s, p)
            dy = torch.rand(y.shape, generator=g, dtype=torch.float64) * 2 - 1
            (y * dy).sum().backward()
            if op == "max":
                yield from f64(f"pool {name} x", x)
            yield from f64(f"pool {op} {name} dy", dy)
            yield from f64(f"pool {op} {name} y", y)
            yield from f64(f"pool {op} {name} dx", xi.grad)


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        here.parent.parent / "tests" / "reference" / "torch-conv-vectors.txt"
    torch.set_num_threads(1)
    lines = [f"# Written by scripts/reference/torch_conv_vectors.py with torch {torch.__version__}"]
    for cases in (init_cases, conv_cases, pool_cases):
        for title, values in cases():
            lines.append(f"## {title}")
            lines.extend(values)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
