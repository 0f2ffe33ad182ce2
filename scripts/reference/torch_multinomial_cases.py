"""Writes tests/reference/multinomial_cases.txt: torch.multinomial results.

tests/tensor/test_multinomial.c rebuilds each probs tensor, seeds a
generator the same way, calls tg_multinomial and expects exactly the
indices PyTorch returned, then expects the next tg_rand numbers to be the
torch.rand numbers drawn after the multinomial (the generator state must
match too). Run with a Python that has PyTorch 1.13 (Debian's
python3-torch) and NumPy:

    /usr/bin/python3 scripts/reference/torch_multinomial_cases.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy (and the name
does not start with gen_, so generate.py does not import it). Weights are
drawn from seeded NumPy generators, and softmax rows are computed with
Python's math.exp and a sum in a fixed order, so the file depends only on
PyTorch's multinomial.

File format: a header of '#' lines, then one case after another:

    case <name>
    seed <seed>
    probs <float32|float64> <layout> <ndim> <shape...>
    values <n> <v...>              the BASE tensor in C order, as float.hex
    draw <num_samples> <replacement 0|1>
    expect <n> <i...>              the result in C order
    compare <m>                    compare the first m samples of each row
    after <n> <bits...>            torch.rand(n) drawn next, float32 bits
    end

layout: 'contiguous' passes the base as it is; 'transpose' passes
base.t() (a dense view with swapped strides); 'every_other' passes
base[:, ::2] (not dense). The shape is the base's.

One case is the sampling loop of the makemore lectures:

    loop <name>
    seed <seed>
    table float32 <K> <K>
    values <K*K> <v...>            row i: the probabilities after character i
    names <count>
    expect <n> <i...>              every index drawn, names ending in 0
    after <n> <bits...>
    end

Each name starts at index 0 and draws ix = multinomial(table[ix] as a
(1, K) row, num_samples=1, replacement=True, generator=g) until ix == 0.
"""
import math
import pathlib
import struct
import sys

import numpy as np
import torch

AFTER = 4  # torch.rand numbers checked after each call
lines = []


def hexes(array):
    return " ".join(float(v).hex() for v in np.asarray(array).ravel())


def f32_bits(values):
    return " ".join("0x%08x" % struct.unpack("<I", struct.pack("<f", v))[0]
                    for v in values)


def case(name, seed, base, dtype, num_samples, replacement,
         layout="contiguous", compare=None):
    base = np.asarray(base, dtype={"float32": np.float32,
                                   "float64": np.float64}[dtype])
    probs = torch.from_numpy(base.copy())
    if layout == "transpose":
        probs = probs.t()
    elif layout == "every_other":
        probs = probs[:, ::2]
    g = torch.Generator().manual_seed(seed)
    out = torch.multinomial(probs, num_samples, replacement, generator=g)
    after = torch.rand(AFTER, generator=g).tolist()
    lines.append(f"case {name}")
    lines.append(f"seed {seed}")
    lines.append(f"probs {dtype} {layout} {base.ndim} "
                 + " ".join(str(s) for s in base.shape))
    lines.append(f"values {base.size} {hexes(base)}")
    lines.append(f"draw {num_samples} {int(replacement)}")
    flat = out.reshape(-1).tolist()
    lines.append(f"expect {len(flat)} " + " ".join(str(i) for i in flat))
    lines.append(f"compare {num_samples if compare is None else compare}")
    lines.append(f"after {AFTER} {f32_bits(after)}")
    lines.append("end")


def softmax_f32(logits):
    """softmax in double (math.exp, sum left to right), rounded to float32."""
    e = [math.exp(float(v) - max(logits)) for v in logits]
    total = 0.0
    for v in e:
        total += v
    return np.array([v / total for v in e], dtype=np.float32)


def sampling_loop(name, seed, count):
    """The makemore sampling loop on a made-up bigram table."""
    K = 27
    rng = np.random.default_rng(27)
    logits = rng.normal(0.0, 1.5, (K, K))
    logits[:, 0] += 1.0  # names of a readable length
    table = np.stack([softmax_f32(row) for row in logits])
    P = torch.from_numpy(table.copy())
    g = torch.Generator().manual_seed(seed)
    drawn = []
    for _ in range(count):
        ix = 0
        while True:
            probs = P[ix].view(1, K)
            ix = torch.multinomial(probs, num_samples=1, replacement=True,
                                   generator=g).item()
            drawn.append(ix)
            if ix == 0:
                break
    after = torch.rand(AFTER, generator=g).tolist()
    lines.append(f"loop {name}")
    lines.append(f"seed {seed}")
    lines.append(f"table float32 {K} {K}")
    lines.append(f"values {table.size} {hexes(table)}")
    lines.append(f"names {count}")
    lines.append(f"expect {len(drawn)} " + " ".join(str(i) for i in drawn))
    lines.append(f"after {AFTER} {f32_bits(after)}")
    lines.append("end")


S = 2147483647  # the makemore lectures' seed
rng = np.random.default_rng(1313)
w5 = [1.0, 2.0, 3.0, 4.0, 0.5]  # unnormalised weights
for dtype in ("float32", "float64"):
    t = "_f64" if dtype == "float64" else ""
    case(f"w5{t}_one", S, w5, dtype, 1, False)
    case(f"w5{t}_one_replacement", S, w5, dtype, 1, True)
    case(f"w5{t}_three", S, w5, dtype, 3, False)
    case(f"w5{t}_all_five", S + 10, w5, dtype, 5, False)
    case(f"w5{t}_many_replacement", S + 10, w5, dtype, 50, True)
    case(f"w5{t}_two_replacement_seed0", 0, w5, dtype, 2, True)

    r27 = rng.uniform(0.0, 1.0, 27)
    case(f"rand27{t}_permutation", 0, r27, dtype, 27, False)
    case(f"rand27{t}_1000_replacement", 42, r27, dtype, 1000, True)
    case(f"rand27{t}_five", 42, r27, dtype, 5, False)

    # Rows with zeros (each with enough positive weights for the samples).
    z = rng.uniform(0.0, 1.0, (3, 6))
    z[0, [1, 4]] = 0.0
    z[1, 0] = 0.0
    z[2, [0, 2, 5]] = 0.0
    case(f"zeros_2d{t}_one", S, z, dtype, 1, False)
    case(f"zeros_2d{t}_three", S, z, dtype, 3, False)
    case(f"zeros_2d{t}_twelve_replacement", S + 10, z, dtype, 12, True)
    case(f"zero_first{t}_replacement", 7, [0.0, 0.0, 1.0, 0.0, 2.0, 0.0],
         dtype, 20, True)
    # More samples than positive weights: the positive ones come first;
    # the order of the zero-weight rest is PyTorch's sort's (not compared).
    case(f"zeros_fill_the_end{t}", 3, [0.0, 1.0, 0.0, 0.0, 2.0, 0.0],
         dtype, 6, False, compare=2)

    # Unnormalised: large and tiny weights.
    case(f"large_weights{t}_replacement", 5, [100.0, 250.0, 3000.0, 7.0],
         dtype, 6, True)
    case(f"large_weights{t}_two", 5, [100.0, 250.0, 3000.0, 7.0], dtype, 2,
         False)
    case(f"tiny_weights{t}_replacement", 9, [1e-30, 3e-30, 2e-30], dtype, 10,
         True)
    case(f"tiny_weights{t}_three", 9, [1e-30, 3e-30, 2e-30], dtype, 3, False)

    # 2-D, several rows; non-contiguous layouts.
    m = rng.uniform(0.0, 2.0, (4, 5))
    case(f"rows_4x5{t}_two", 11, m, dtype, 2, False)
    case(f"rows_4x5{t}_seven_replacement", 11, m, dtype, 7, True)
    b = rng.uniform(0.0, 1.0, (6, 4))
    case(f"transposed_6x4{t}_one", S, b, dtype, 1, False, "transpose")
    case(f"transposed_6x4{t}_three", S, b, dtype, 3, False, "transpose")
    case(f"transposed_6x4{t}_five_replacement", S, b, dtype, 5, True,
         "transpose")
    e = rng.uniform(0.0, 1.0, (3, 10))
    case(f"every_other_3x10{t}_two", S + 10, e, dtype, 2, False,
         "every_other")
    case(f"every_other_3x10{t}_one", S + 10, e, dtype, 1, True, "every_other")
    case(f"every_other_3x10{t}_four_replacement", S + 10, e, dtype, 4, True,
         "every_other")

    # Many categories; one category.
    big = rng.uniform(0.0, 1.0, 1000)
    case(f"k1000{t}_four", 1, big, dtype, 4, False)
    case(f"k1000{t}_one", 1, big, dtype, 1, True)
    case(f"k1000{t}_thirty_replacement", 1, big, dtype, 30, True)
    case(f"one_category{t}", 2, [2.5], dtype, 1, False)
    case(f"one_category{t}_replacement", 2, [2.5], dtype, 3, True)

# The makemore pattern: a (1, 27) softmax row, one sample, replacement,
# generator g; then a batch of such rows at once.
logits = rng.normal(0.0, 1.0, 27)
row = softmax_f32(logits)
case("softmax_row_1x27", S, row.reshape(1, 27), "float32", 1, True)
rows = np.stack([softmax_f32(rng.normal(0.0, 1.0, 27)) for _ in range(5)])
case("softmax_rows_5x27", S, rows, "float32", 1, True)
sampling_loop("makemore_20_names", S, 20)

out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
    pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "multinomial_cases.txt"
n_cases = sum(1 for line in lines if line.startswith(("case ", "loop ")))
with open(out, "w") as f:
    f.write("# Written by scripts/reference/torch_multinomial_cases.py with "
            f"torch {torch.__version__}\n")
    f.write(f"# {n_cases} cases\n")
    for line in lines:
        f.write(line + "\n")
print(f"wrote {n_cases} cases to {out}")
