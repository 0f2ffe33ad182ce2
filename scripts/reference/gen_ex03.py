"""NumPy references for exercise 03, the backward of mul, div and pow
(tests/exercises/grade_ex03_mul_div_pow_backward.c).

For out = f(a, b) elementwise and a gradient g = dL/dout,
dL/da = g * df/da and dL/db = g * df/db. The partial derivatives are not
written out here: they are measured with the complex step,

    df/da = Im f(a + i h, b) / h    (h = 1e-20)

which, unlike a finite difference, has no cancellation: for a function
that is analytic near a, f(a + ih) = f(a) + ih f'(a) - h^2 f''(a)/2 + ...,
so the imaginary part divided by h is f'(a) to within h^2, far below one
rounding error. NumPy's complex *, / and ** are analytic for the inputs
used (pow needs a > 0).

Names written (float64, (3, 4)), for op in mul, div, pow:
  ex03_<op>_a, ex03_<op>_b  the operands
  ex03_<op>_g               dL/dout
  ex03_<op>_grad_a          dL/da
  ex03_<op>_grad_b          dL/db
"""
import numpy as np

H = 1e-20
SHAPE = (3, 4)

OPS = {
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
}


def operands(op, rng):
    if op == "mul":
        return rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)
    if op == "div":
        # b kept away from 0, where a / b and its gradient blow up
        b = rng.choice([-1.0, 1.0], size=SHAPE) * (0.5 + rng.random(SHAPE))
        return rng.standard_normal(SHAPE), b
    # pow: a > 0, so that ln a exists; a few exponents with a known answer
    a = rng.uniform(0.5, 2.0, size=SHAPE)
    b = rng.uniform(-2.0, 2.0, size=SHAPE)
    b[0, :] = [0.0, 1.0, 2.0, 0.5]
    return a, b


def generate(save):
    rng = np.random.default_rng(303)
    for op, f in OPS.items():
        a, b = operands(op, rng)
        g = rng.standard_normal(SHAPE)
        dfda = f(a + 1j * H, b.astype(complex)).imag / H
        dfdb = f(a.astype(complex), b + 1j * H).imag / H
        save(f"ex03_{op}_a", a)
        save(f"ex03_{op}_b", b)
        save(f"ex03_{op}_g", g)
        save(f"ex03_{op}_grad_a", g * dfda)
        save(f"ex03_{op}_grad_b", g * dfdb)
