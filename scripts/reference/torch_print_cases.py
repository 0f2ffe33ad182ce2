"""Writes tests/reference/print_cases.txt: tensors and PyTorch's repr of them.

tests/tensor/test_print.c rebuilds each tensor, sets the same print options
and expects tg_format to give exactly the text PyTorch printed. Run with a
Python that has PyTorch 1.13 (Debian's python3-torch) and NumPy:

    /usr/bin/python3 scripts/reference/torch_print_cases.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy. Values are
drawn from a seeded NumPy generator, so the output is deterministic.

File format, one case after another:

    case <name>
    options <precision> <sci_mode: -1 auto, 0 off, 1 on> <threshold> <edgeitems> <linewidth>
    tensor <float32|float64|int64> <requires_grad 0|1> <transpose 0|1> <shape...>
    values list <v...>             C-order values; floats as float.hex, nan, inf, -inf
    values arange <start> <step>   value i is float(start + i * step) in the dtype
    expect <n>
    <n lines of the repr>

With transpose 1 the tensor is built with the given shape and printed after
transposing its first two dims (a non-contiguous view).
"""
import pathlib
import sys

import numpy as np
import torch

DTYPES = {"float32": (np.float32, torch.float32),
          "float64": (np.float64, torch.float64),
          "int64": (np.int64, torch.int64)}
DEFAULT = dict(precision=4, sci_mode=-1, threshold=1000, edgeitems=3, linewidth=80)

rng = np.random.default_rng(1913)
cases = []


def case(name, values, dtype="float32", shape=None, requires_grad=False,
         transpose=False, arange=None, **options):
    """values: a nested list / array, or None with arange=(start, step)."""
    opts = dict(DEFAULT, **options)
    np_dtype, torch_dtype = DTYPES[dtype]
    if arange is not None:
        start, step = arange
        n = int(np.prod(shape))
        array = (np.arange(n, dtype=np.float64) * step + start).astype(np_dtype).reshape(shape)
    else:
        array = np.array(values, dtype=np_dtype)
        if shape is not None:
            array = array.reshape(shape)
    t = torch.from_numpy(array.copy())
    if transpose:
        t = t.transpose(0, 1)
    if requires_grad:
        t.requires_grad_(True)
    torch.set_printoptions(
        precision=opts["precision"], threshold=opts["threshold"],
        edgeitems=opts["edgeitems"], linewidth=opts["linewidth"],
        sci_mode=None if opts["sci_mode"] < 0 else bool(opts["sci_mode"]))
    text = repr(t)
    torch.set_printoptions(profile="default")

    def show(v):
        if dtype == "int64":
            return str(int(v))
        v = float(v)
        if np.isnan(v):
            return "nan"
        if np.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v.hex()

    lines = [f"case {name}",
             "options {precision} {sci_mode} {threshold} {edgeitems} {linewidth}".format(**opts),
             " ".join(["tensor", dtype, str(int(requires_grad)), str(int(transpose))]
                      + [str(s) for s in array.shape])]
    if arange is not None:
        lines.append(f"values arange {float(arange[0]).hex()} {float(arange[1]).hex()}")
    else:
        lines.append(" ".join(["values list"] + [show(v) for v in array.reshape(-1)]))
    out = text.split("\n")
    lines.append(f"expect {len(out)}")
    lines.extend(out)
    cases.append("\n".join(lines))


def normal(*shape, scale=1.0):
    return rng.standard_normal(shape) * scale


nan, inf = float("nan"), float("inf")

# 0-d tensors of every dtype.
case("scalar_f32", 1.5)
case("scalar_f32_integer", 3.0)
case("scalar_f32_negative_small", -0.000123)
case("scalar_f64", 2.718281828459045, dtype="float64")
case("scalar_i64", -7, dtype="int64")
case("scalar_nan", nan)
case("scalar_requires_grad", 0.25, requires_grad=True)

# Shapes 1-d to 4-d, random normal values.
case("vec_f32", normal(5))
case("mat_f32", normal(3, 4))
case("cube_f32", normal(2, 3, 4))
case("hyper_f32", normal(2, 2, 2, 3))
case("mat_f64", normal(3, 3), dtype="float64")
case("cube_f64_mixed_magnitude", normal(2, 2, 3, scale=50), dtype="float64")
case("mat_i64", rng.integers(-1000, 1000, (3, 5)), dtype="int64")
case("vec_i64_extremes", [-2**63, -1, 0, 1, 2**63 - 1], dtype="int64")
case("hyper_i64", rng.integers(-5, 50, (2, 1, 2, 3)), dtype="int64")

# int_mode: every finite value is an integer.
case("int_mode_small", [1.0, 2.0, -3.0])
case("int_mode_with_zero_and_nonfinite", [[0.0, 12.0], [nan, -inf]])
case("int_mode_sci_by_ratio", [1.0, 10000.0, -5.0])
case("int_mode_sci_by_size", [2.0e8, 3.0e8], dtype="float64")
case("int_mode_at_1e8", [1.0e8, 2.0e7], dtype="float64")

# Automatic scientific notation.
case("sci_tiny", [1.0e-5, 2.5e-5, -3.0e-6])
case("sci_ratio", [0.5, 1234.5678, -0.001])
case("sci_large", [1.5e9, -2.25e10], dtype="float64")
case("sci_with_nonfinite", [1.0e-5, nan, inf, -inf, 0.0])
case("no_sci_ratio_1000", [0.5, 500.0])
case("no_sci_min_1e-4", [1.0e-4, 0.05], dtype="float64")

# Non-finite, zeros and negative zero.
case("nan_inf_mixed", [1.25, nan, -inf, inf, -2.5])
case("all_nonfinite", [nan, inf, -inf])
case("all_zeros", np.zeros((2, 3)))
case("negative_zero_int_mode", [-0.0, 1.0, 2.0])
case("negative_zero_fixed", [-0.0, 0.5, -1.25])
case("negative_zero_only", [-0.0, 0.0])

# Empty tensors.
case("empty_1d_f32", [], shape=(0,))
case("empty_1d_i64", [], dtype="int64", shape=(0,))
case("empty_2d_f32", [], shape=(0, 3))
case("empty_3d_f64", [], dtype="float64", shape=(2, 0, 3))
case("empty_requires_grad", [], shape=(0,), requires_grad=True)

# Options: sci_mode forced, precision.
case("sci_forced_on", normal(2, 3), sci_mode=1)
case("sci_forced_on_int_mode", [1.0, 2.0, 30.0], sci_mode=1)
case("sci_forced_on_zeros_ignored", [0.0, 0.0], sci_mode=1)
case("sci_forced_off_tiny", [1.0e-5, 2.5e-3, 0.5], sci_mode=0)
case("sci_forced_off_large", [1.5e9, -2.0], dtype="float64", sci_mode=0)
case("sci_forced_off_int_mode_wide", [1.0, 1.0e6, 3.0e9], dtype="float64", sci_mode=0)
case("precision_0", [0.5, 1.5, 2.5, -0.4], precision=0)
case("precision_2", normal(2, 4), precision=2)
case("precision_8_f64", normal(3) * 1e-3, dtype="float64", precision=8)
case("precision_10_f32", [0.1, 1.0 / 3.0, 2.0 / 3.0], precision=10)
case("precision_1_sci", [1.0e-7, 3.0e-7], precision=1)
case("rounding_ties", [0.00005, 0.00015, 0.00025, 1.00045], dtype="float64")
case("precision_100_longest_fixed", [1.0e308, -1.5e-300], dtype="float64", precision=100, sci_mode=0)
case("precision_100_sci", [-1.7976931348623157e308, 5e-324], dtype="float64", precision=100)

# Summarization: above threshold each long dim keeps edgeitems at each end.
case("summary_1d_default", None, shape=(2000,), arange=(0.0, 0.5))
case("summary_2d_default", None, shape=(40, 30), arange=(-3.0, 0.01))
case("summary_3d_edge2", None, shape=(12, 10, 11), arange=(0.0, 1.0), edgeitems=2)
case("summary_4d_blank_lines", None, dtype="float64", shape=(7, 2, 8, 9), arange=(1.0, 0.125))
case("summary_i64", None, dtype="int64", shape=(30, 50), arange=(-500.0, 1.0))
case("summary_threshold_5", None, dtype="int64", shape=(10,), arange=(0.0, 1.0), threshold=5)
case("threshold_exactly_numel", None, shape=(4, 5), arange=(0.0, 0.25), threshold=20)
case("threshold_one_below_numel", None, shape=(4, 5), arange=(0.0, 0.25), threshold=19)
case("summary_short_dim_kept", None, shape=(3, 400), arange=(0.0, 1.0e-3), threshold=100, edgeitems=3)
case("summary_edgeitems_1", None, shape=(5, 6), arange=(0.0, 2.0), threshold=10, edgeitems=1)
case("summary_formatter_sees_only_shown", [1.0] * 3 + [1.0e6] + [2.0] * 3, threshold=5)

# Rows that wrap at linewidth.
case("wrap_1d", normal(30))
case("wrap_2d", normal(3, 20))
case("wrap_3d_i64", rng.integers(-10**6, 10**6, (2, 2, 15)), dtype="int64")
case("linewidth_40", normal(2, 8), linewidth=40)
case("linewidth_10", normal(4), linewidth=10)
case("wrap_summary_item", None, shape=(100,), arange=(0.0, 1.0), threshold=10, edgeitems=20, linewidth=50)

# Suffixes that fit, and that move to their own line.
case("suffix_f64_requires_grad", normal(2, 2), dtype="float64", requires_grad=True)
case("suffix_wraps_after_long_line", normal(8), dtype="float64")
case("suffix_fits_short_line", normal(4), dtype="float64", precision=2)

# A non-contiguous view.
case("transposed_3x4", normal(3, 4), transpose=True)
case("transposed_i64", rng.integers(0, 100, (2, 5)), dtype="int64", transpose=True)

out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
    pathlib.Path(__file__).resolve().parents[2] / "tests" / "reference" / "print_cases.txt"
with open(out, "w") as f:
    f.write(f"# Written by scripts/reference/torch_print_cases.py with torch {torch.__version__}\n")
    f.write(f"# {len(cases)} cases\n")
    for c in cases:
        f.write(c + "\n")
print(f"wrote {len(cases)} cases to {out}")
