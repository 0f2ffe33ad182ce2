"""NumPy references for the gradients of the elementwise ops
(tests/autograd/test_grad_elementwise.c).

Each group saves its inputs, an upstream gradient g of the output's shape
and the expected input gradients, from the closed forms written next to
each op below (PyTorch's formulas, including its conventions where they
matter: ties of maximum/minimum split g in half, pow's da is 0 where b == 0).
A broadcast operand's gradient is g's contribution summed over the dims it
was stretched along (unbroadcast below).

Float32 references are computed in float64 from the float32 inputs and
rounded once; the C code computes in float32 (a few roundings per
gradient), so the test compares them with a tolerance.

Inputs stay away from kinks and domain edges except where a tie is the
point (the ext group); the values AT kinks (relu(0), abs(0), pow at 0, NaN)
are pinned in the C test with numbers checked against PyTorch by hand.

Names written (every name ends in _f32 or _f64, except where_cond):
  grad_elementwise_unary_{x,xpos,g}_<dt>  (4, 6): x = +-[0.1, 3),
                                          xpos in [0.25, 4), g normal
  grad_elementwise_<op>_dx_<dt>           op of UNARY below
  grad_elementwise_binary_{a,b,g}_<dt>    a (3, 1, 4), b (2, 4) = +-[0.5, 2),
                                          g (3, 2, 4)
  grad_elementwise_<op>_{da,db}_<dt>      op in add, sub, mul, div
  grad_elementwise_pow_{a,b}_<dt>         a (3, 1, 4) in [0.25, 4),
                                          b (2, 4) in [-2, 2); g: binary_g
  grad_elementwise_pow_{da,db}_<dt>
  grad_elementwise_ext_{a,b}_<dt>         a (3, 1, 4), b (2, 4) of -0.5, 0,
                                          0.5: many ties
  grad_elementwise_{maximum,minimum}_{da,db}_<dt>   (g: binary_g)
  grad_elementwise_where_cond             (2, 1, 4) int64, nonzero = true
  grad_elementwise_where_{a,b,g,da,db}_<dt>   a (3, 1), b (4,), g (2, 3, 4)
"""
import math

import numpy as np

SEED = 20240801
CLAMP_LO, CLAMP_HI = -1.0, 2.0
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715
DTYPES = (("f64", np.float64), ("f32", np.float32))

erfc = np.vectorize(math.erfc, otypes=[np.float64])


def gelu_slope(x):
    # d/dx x Phi(x) = Phi(x) + x phi(x); Phi through erfc (exact for x < 0)
    return 0.5 * erfc(-x / math.sqrt(2.0)) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def gelu_tanh_slope(x):
    # PyTorch's GeluBackward0 for approximate='tanh', literally
    inner = SQRT_2_OVER_PI * (x + KAPPA * x ** 3)
    t = np.tanh(inner)
    left_derivative = 0.5 * (1.0 + t)
    right_derivative = 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * KAPPA * x * x)
    return left_derivative + right_derivative


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu_slope(x):
    # d/dx x / (1 + e^-x) by the quotient rule, (1 + e^-x (1 + x)) /
    # (1 + e^-x)^2: the same slope as the C code's s (1 + x (1 - s)),
    # arranged differently
    e = np.exp(-x)
    return (1.0 + e * (1.0 + x)) / (1.0 + e) ** 2


# name -> (input, d out / d x as a function of x). "x" inputs are +-[0.1, 3),
# "xpos" inputs [0.25, 4) (log, sqrt and fractional powers need x > 0).
UNARY = {
    "neg": ("x", lambda x: -np.ones_like(x)),
    "exp": ("x", np.exp),
    "log": ("xpos", lambda x: 1.0 / x),
    "sqrt": ("xpos", lambda x: 0.5 / np.sqrt(x)),
    "rsqrt": ("xpos", lambda x: -0.5 * x ** -1.5),
    "abs": ("x", np.sign),
    "tanh": ("x", lambda x: 1.0 - np.tanh(x) ** 2),
    "sigmoid": ("x", lambda x: sigmoid(x) * (1.0 - sigmoid(x))),
    "relu": ("x", lambda x: (x > 0).astype(np.float64)),
    "gelu": ("x", gelu_slope),
    "gelu_tanh": ("x", gelu_tanh_slope),
    "silu": ("x", silu_slope),
    "clamp": ("x", lambda x: ((x >= CLAMP_LO) & (x <= CLAMP_HI)).astype(np.float64)),
    "sub_scalar": ("x", lambda x: np.ones_like(x)),      # x - 1.5
    "rsub_scalar": ("x", lambda x: -np.ones_like(x)),    # 1.5 - x
    "div_scalar": ("x", lambda x: np.full_like(x, 1.0 / -0.75)),  # x / -0.75
    "rdiv_scalar": ("x", lambda x: -2.5 / (x * x)),      # 2.5 / x
    "pow2": ("x", lambda x: 2.0 * x),                    # x ** 2
    "pow05": ("xpos", lambda x: 0.5 * x ** -0.5),        # x ** 0.5
    "powm1": ("x", lambda x: -1.0 * x ** -2.0),          # x ** -1
    "pow3": ("x", lambda x: 3.0 * x ** 2),               # x ** 3
}


def unbroadcast(full, shape):
    """Sums a gradient of the broadcast shape back to `shape`."""
    lead = full.ndim - len(shape)
    full = full.sum(axis=tuple(range(lead)))
    dims = tuple(d for d, n in enumerate(shape) if n == 1 and full.shape[d] != 1)
    return full.sum(axis=dims, keepdims=True).reshape(shape)


def signed(rng, lo, hi, shape):
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def unary(save, rng):
    x = signed(rng, 0.1, 3.0, (4, 6))
    xpos = rng.uniform(0.25, 4.0, (4, 6))
    g = rng.standard_normal((4, 6))
    for dt, dtype in DTYPES:
        inputs = {"x": x.astype(dtype), "xpos": xpos.astype(dtype)}
        gd = g.astype(dtype)
        save(f"grad_elementwise_unary_x_{dt}", inputs["x"])
        save(f"grad_elementwise_unary_xpos_{dt}", inputs["xpos"])
        save(f"grad_elementwise_unary_g_{dt}", gd)
        g64 = gd.astype(np.float64)
        for name, (which, slope) in UNARY.items():
            dx = g64 * slope(inputs[which].astype(np.float64))
            save(f"grad_elementwise_{name}_dx_{dt}", dx.astype(dtype))


def binary(save, rng):
    a = rng.standard_normal((3, 1, 4))
    b = signed(rng, 0.5, 2.0, (2, 4))
    g = rng.standard_normal((3, 2, 4))
    pa = rng.uniform(0.25, 4.0, (3, 1, 4))
    pb = rng.uniform(-2.0, 2.0, (2, 4))
    ea = rng.integers(-1, 2, (3, 1, 4)) / 2.0  # -0.5, 0, 0.5: a third of
    eb = rng.integers(-1, 2, (2, 4)) / 2.0     # the pairs tie by chance,
    eb[0] = ea[1, 0]                           # and these four for sure

    # out = f(a, b): (da, db) before unbroadcasting, from float64 a, b, g
    grads = {
        "add": lambda a, b, g: (g, g),
        "sub": lambda a, b, g: (g, -g),
        "mul": lambda a, b, g: (g * b, g * a),
        "div": lambda a, b, g: (g / b, -g * a / (b * b)),
    }

    def pow_grads(a, b, g):
        out = a ** b
        da = np.where(b == 0, 0.0, g * b * a ** (b - 1))
        return da, g * out * np.log(a)

    def extremum_grads(a, b, g, wins):
        # the winner gets g, a tie splits it, the loser gets 0
        share = lambda mine, other: np.where(
            wins(mine, other), g, np.where(mine == other, 0.5 * g, 0.0))
        return share(a, b), share(b, a)

    for dt, dtype in DTYPES:
        gd = g.astype(dtype)
        g64 = gd.astype(np.float64)
        save(f"grad_elementwise_binary_g_{dt}", gd)
        for prefix, x, y in (("binary", a, b), ("pow", pa, pb), ("ext", ea, eb)):
            save(f"grad_elementwise_{prefix}_a_{dt}", x.astype(dtype))
            save(f"grad_elementwise_{prefix}_b_{dt}", y.astype(dtype))

        def emit(name, x, y, f):
            # in float64 from the dtype's inputs, rounded once at the end
            x64, y64 = (v.astype(dtype).astype(np.float64) for v in (x, y))
            xb, yb = np.broadcast_arrays(x64, y64)
            dx, dy = f(xb, yb, np.broadcast_to(g64, xb.shape))
            save(f"grad_elementwise_{name}_da_{dt}", unbroadcast(dx, x.shape).astype(dtype))
            save(f"grad_elementwise_{name}_db_{dt}", unbroadcast(dy, y.shape).astype(dtype))

        for name, f in grads.items():
            emit(name, a, b, f)
        emit("pow", pa, pb, pow_grads)
        emit("maximum", ea, eb, lambda x, y, g: extremum_grads(x, y, g, np.greater))
        emit("minimum", ea, eb, lambda x, y, g: extremum_grads(x, y, g, np.less))


def where(save, rng):
    # cond (2, 1, 4), a (3, 1), b (4,) -> (2, 3, 4); nonzero cond means a:
    #   da = g where cond, db = g where not, each summed to its shape
    cond = rng.choice(np.array([-1, 0, 0, 2], dtype=np.int64), (2, 1, 4))
    a = rng.standard_normal((3, 1))
    b = rng.standard_normal((4,))
    g = rng.standard_normal((2, 3, 4))
    save("grad_elementwise_where_cond", cond)
    take_a = np.broadcast_to(cond != 0, g.shape)
    for dt, dtype in DTYPES:
        gd = g.astype(dtype)
        g64 = gd.astype(np.float64)
        save(f"grad_elementwise_where_a_{dt}", a.astype(dtype))
        save(f"grad_elementwise_where_b_{dt}", b.astype(dtype))
        save(f"grad_elementwise_where_g_{dt}", gd)
        save(f"grad_elementwise_where_da_{dt}",
             unbroadcast(np.where(take_a, g64, 0.0), a.shape).astype(dtype))
        save(f"grad_elementwise_where_db_{dt}",
             unbroadcast(np.where(take_a, 0.0, g64), b.shape).astype(dtype))


def generate(save):
    rng = np.random.default_rng(SEED)
    unary(save, rng)
    binary(save, rng)
    where(save, rng)
