"""Reference values for the elementwise ops (tests/autograd/test_elementwise.c):
arithmetic with broadcasting, the unary maths functions, the activations,
comparisons, where and clamp.

Binary ops run over PAIRS of shapes. To keep the fixture count small, every
pair's arrays are flattened (C order) and concatenated in pair order into one
file per op and dtype; elementwise_bcast_shapes (npairs, 3, 1 + MAX_DIMS) gives
[ndim, sizes...] of a, b and the broadcast result for each pair, from which
the test finds each pair's slice. (It also sidesteps a 0-d array being saved
as shape (1,).)

Exactness: +, -, *, /, maximum and minimum are correctly rounded in IEEE 754,
so NumPy's float32/float64 results are the exact answers the C code must
reproduce bit for bit. Transcendental functions (exp, log, tanh, pow, ...)
are evaluated in float64 from the float32 inputs and rounded once, which is
within half an ulp of the true float32 value; the tests then allow a few ulp.
"""
import math

import numpy as np

SEED = 20240611
MAX_DIMS = 4

# (a shape, b shape): every kind of broadcast the binary ops must handle.
PAIRS = [
    ((3, 4), (3, 4)),              # equal shapes
    ((4,), (3, 4)),                # a gets a prepended dim
    ((2, 3, 4), (4,)),             # b gets two prepended dims
    ((3, 1), (1, 4)),              # size-1 dims on both sides
    ((3, 1), (3, 4)),              # size-1 dim on a's side
    ((3, 4), (1, 4)),              # size-1 dim on b's side
    ((), (2, 3)),                  # 0-d with n-d
    ((2, 3), ()),
    ((), ()),                      # two 0-d tensors give a 0-d tensor
    ((0,), (0,)),                  # empty
    ((0,), (1,)),                  # empty with a size-1 dim
    ((2, 0), (2, 1)),
    ((5, 1, 4), (3, 1)),           # (5, 3, 4)
    ((2, 1, 4), (2, 3, 1)),        # (2, 3, 4)
    ((2, 3, 1, 4), (3, 5, 1)),     # 4-d: (2, 3, 5, 4)
    ((2, 1, 3, 1), (1, 4, 1, 5)),  # 4-d, alternating: (2, 4, 3, 5)
    ((1,), (2, 3, 4)),
    ((4, 1, 1), (1,)),
]

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": np.maximum,
    "minimum": np.minimum,
}

COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_exact(v):
    # x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(z) written as
    # erfc(-z): math.erf itself would cancel for x < -3 (1 + erf(-3.5) is
    # 1 - 0.9999993) and leave the float64 reference wrong by up to 100% at
    # x = -8, where the answer is -5e-15.
    return 0.5 * v * math.erfc(-v / math.sqrt(2.0))


def gelu_tanh(v):
    # 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), literally for
    # u >= 0; for u < 0, 1 + tanh(u) = 2 e^(2u) / (1 + e^(2u)) avoids the
    # cancellation (the C code uses a third form, x / (1 + e^(-2u))).
    u = SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)
    if u >= 0:
        return 0.5 * v * (1.0 + math.tanh(u))
    e = math.exp(2.0 * u)
    return 0.5 * v * (2.0 * e / (1.0 + e))


UNARY_F64 = {  # each takes and returns float64
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),  # fine in float64 at +-100
    "gelu": np.vectorize(gelu_exact, otypes=[np.float64]),
    "gelu_tanh": np.vectorize(gelu_tanh, otypes=[np.float64]),
}


def silu(x):
    # x sigmoid(x) = x / (1 + e^-x) (the C code multiplies x by sigmoid's
    # stable form instead). At x = -inf this is -inf / inf = NaN; the limit
    # is -0, which the C code returns (PyTorch gives NaN).
    with np.errstate(over="ignore", invalid="ignore"):
        out = x / (1.0 + np.exp(-x))
    return np.where(x == -np.inf, -0.0, out)


# Float-only ops: float32 and float64 references, no int64 one (tg_silu
# refuses int64, as torch.nn.functional.silu does).
UNARY_FLOAT_ONLY = {
    "silu": silu,
}

UNARY_EXACT = {  # the same in any dtype, no rounding at all
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda x: np.where(x < 0, np.zeros_like(x), x),  # keeps NaN, -0
}

# Large magnitudes (+-100 saturate tanh and sigmoid, 88 is near float32 exp's
# overflow at 88.7), signed zeros, infinities and NaN, then random values.
UNARY_VALUES = [-math.inf, -100.0, -88.0, -20.0, -8.0, -5.0, -3.0, -1.0,
                -0.5, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1.0, 3.0, 5.0, 8.0, 20.0,
                88.0, 100.0, math.inf, math.nan]
UNARY_INTS = [-2**63, -100, -20, -3, -1, 0, 1, 2, 3, 7, 20, 100, 2**62,
              2**63 - 1]

CLAMP_LO, CLAMP_HI = -1.0, 2.0


def shape_row(shape):
    return [len(shape)] + list(shape) + [0] * (MAX_DIMS - len(shape))


def cat(arrays, dtype):
    return np.concatenate([np.asarray(r, dtype=dtype).ravel() for r in arrays])


def broadcasting(save, rng):
    save("elementwise_bcast_shapes", np.array(
        [[shape_row(a), shape_row(b), shape_row(np.broadcast_shapes(a, b))]
         for a, b in PAIRS], dtype=np.int64))

    def draw(kind, shape):
        n = int(np.prod(shape, dtype=np.int64))
        if kind == "a_f32":  # positive (pow's bases), multiples of 1/8 so
            v = rng.integers(2, 21, n) / 8.0  # comparisons see ties
        elif kind == "b_f32":
            v = rng.integers(-16, 17, n) / 8.0
        elif kind == "a_f64":
            v = rng.uniform(0.25, 2.5, n)
        elif kind == "b_f64":
            v = rng.uniform(-2.0, 2.0, n)
        elif kind == "a_i64":
            v = rng.integers(-9, 10, n)
        else:  # b_i64: non-negative, as int64 pow requires
            v = rng.integers(0, 5, n)
        dtype = {"f32": np.float32, "f64": np.float64, "i64": np.int64}[kind[2:]]
        return np.asarray(v, dtype=dtype).reshape(shape)

    for dt, dtype in (("f32", np.float32), ("f64", np.float64),
                      ("i64", np.int64)):
        a_list = [draw("a_" + dt, a) for a, _ in PAIRS]
        b_list = [draw("b_" + dt, b) for _, b in PAIRS]
        save(f"elementwise_bcast_a_{dt}", cat(a_list, dtype))
        save(f"elementwise_bcast_b_{dt}", cat(b_list, dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            for name, f in BINARY.items():
                if dt == "i64" and name == "div":
                    # true division of int64 happens in float32, as PyTorch
                    out = [f(a.astype(np.float32), b.astype(np.float32))
                           for a, b in zip(a_list, b_list)]
                    save("elementwise_bcast_div_i64", cat(out, np.float32))
                    continue
                out = [f(a, b) for a, b in zip(a_list, b_list)]
                save(f"elementwise_bcast_{name}_{dt}", cat(out, dtype))
            if dt == "i64":
                out = [a ** b for a, b in zip(a_list, b_list)]
            else:  # in float64, rounded once
                out = [np.power(a.astype(np.float64), b.astype(np.float64))
                       for a, b in zip(a_list, b_list)]
            save(f"elementwise_bcast_pow_{dt}", cat(out, dtype))
        if dt != "f64":  # f64 values are continuous: no ties to compare
            for name, f in COMPARE.items():
                out = [f(a, b) for a, b in zip(a_list, b_list)]
                save(f"elementwise_bcast_{name}_{dt}", cat(out, np.int64))


def unary(save, rng):
    values = np.concatenate([UNARY_VALUES, rng.uniform(-6.0, 6.0, 25)])
    x32 = values.astype(np.float32)
    x64 = values.astype(np.float64)
    ints = np.concatenate([np.array(UNARY_INTS, dtype=np.int64),
                           rng.integers(-10, 11, 10)])
    save("elementwise_unary_x_f32", x32)
    save("elementwise_unary_x_f64", x64)
    save("elementwise_unary_x_i64", ints)
    with np.errstate(all="ignore"):
        for name, f in UNARY_EXACT.items():
            save(f"elementwise_{name}_f32", f(x32))
            save(f"elementwise_{name}_f64", f(x64))
            save(f"elementwise_{name}_i64", f(ints))  # -INT64_MIN wraps
        for name, f in UNARY_F64.items():
            save(f"elementwise_{name}_f32", f(x32.astype(np.float64)).astype(np.float32))
            save(f"elementwise_{name}_f64", f(x64))
            # int64 inputs are converted to float32 first (as PyTorch)
            as_f32 = ints.astype(np.float32).astype(np.float64)
            save(f"elementwise_{name}_i64", f(as_f32).astype(np.float32))
        for name, f in UNARY_FLOAT_ONLY.items():
            save(f"elementwise_{name}_f32", f(x32.astype(np.float64)).astype(np.float32))
            save(f"elementwise_{name}_f64", f(x64))
        # min(max(x, lo), hi) with NaN kept (np.maximum propagates NaN)
        for dt, x in (("f32", x32), ("f64", x64)):
            save(f"elementwise_clamp_{dt}",
                 np.minimum(np.maximum(x, x.dtype.type(CLAMP_LO)),
                            x.dtype.type(CLAMP_HI)))


def where(save, rng):
    # Three-way broadcast: cond (2, 1, 4), a (3, 1), b (4,) -> (2, 3, 4). cond
    # has nonzero values other than 1; float32 a and float64 b give float64.
    cond = rng.choice(np.array([-1, 0, 0, 2], dtype=np.int64), (2, 1, 4))
    a = rng.uniform(-1.0, 1.0, (3, 1)).astype(np.float32)
    b = rng.uniform(10.0, 11.0, (4,))
    save("elementwise_where_cond", cond)
    save("elementwise_where_a", a)
    save("elementwise_where_b", b)
    save("elementwise_where_out", np.where(cond != 0, a.astype(np.float64), b))


def generate(save):
    rng = np.random.default_rng(SEED)
    broadcasting(save, rng)
    unary(save, rng)
    where(save, rng)
