"""NumPy references for tg_conv2d, tg_max_pool2d and tg_avg_pool2d
(tests/autograd/test_conv.c).

For each convolution case the inputs x, w, b (when the case has a bias)
and an upstream gradient dy are saved with the results: y, and the
gradients dx, dw, db of sum(y * dy), as conv_<case>_<name>. Pooling cases
save pool_<case>_x, pool_<case>_dy and, for op in max and avg,
pool_<case>_<op>_y and pool_<case>_<op>_dx.

The arrangement differs from the C code on purpose: x is padded with
np.pad, each output is the sum over a window sliced out of the padded
image, and the backward scatters into a padded gradient that is cropped at
the end (the C code skips the padding instead). Every sum is exact
(Fractions) and rounded once to the case's dtype, so no BLAS and no
summation order enters: the files are the same bytes on every machine.
"""
from fractions import Fraction

import numpy as np

# name, x shape, w shape, bias, stride, padding, dilation, groups, dtype
CONV = [
    ("s2p1", (2, 3, 7, 6), (4, 3, 3, 3), True, (2, 2), (1, 1), (1, 1), 1, np.float64),
    ("dil_groups", (1, 4, 8, 7), (4, 2, 3, 2), False, (1, 2), (2, 1), (2, 2), 2, np.float64),
    ("s2p1_f32", (2, 3, 7, 6), (4, 3, 3, 3), True, (2, 2), (1, 1), (1, 1), 1, np.float32),
]

# name, x shape, kernel, stride, padding, dtype
POOL = [
    ("k3s2p1", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1), np.float64),
    ("k2x3s1", (1, 2, 5, 7), (2, 3), (1, 2), (1, 0), np.float64),
    ("k3s2p1_f32", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1), np.float32),
]


def frac_array(a):
    out = np.empty(a.shape, dtype=object)
    for i, v in np.ndenumerate(a):
        out[i] = Fraction(float(v))
    return out


def rounded(a, dtype):
    return np.vectorize(float, otypes=[np.float64])(a).astype(dtype)


def conv(x, w, b, stride, padding, dilation, groups):
    """y and the function that maps dy to (dx, dw, db), all exact."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    ph, pw = padding
    xp = np.pad(frac_array(x), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=Fraction(0))
    wf = frac_array(w)
    ho = (h + 2 * ph - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + 2 * pw - dilation[1] * (kw - 1) - 1) // stride[1] + 1

    def window(img, p, q):
        # the (cg, kh, kw) taps of output (p, q) in a padded (cg, H, W) image
        r0, c0 = p * stride[0], q * stride[1]
        return img[:, r0:r0 + dilation[0] * (kh - 1) + 1:dilation[0],
                   c0:c0 + dilation[1] * (kw - 1) + 1:dilation[1]]

    y = np.empty((n, o, ho, wo), dtype=object)
    for ni in range(n):
        for oi in range(o):
            g = oi // og
            img = xp[ni, g * cg:(g + 1) * cg]
            for p in range(ho):
                for q in range(wo):
                    s = sum((window(img, p, q) * wf[oi]).ravel(), Fraction(0))
                    y[ni, oi, p, q] = s + (Fraction(float(b[oi])) if b is not None else 0)

    def backward(dy):
        dyf = frac_array(dy)
        dxp = np.full(xp.shape, Fraction(0), dtype=object)
        dw = np.full(w.shape, Fraction(0), dtype=object)
        db = np.full((o,), Fraction(0), dtype=object)
        for ni in range(n):
            for oi in range(o):
                g = oi // og
                img = xp[ni, g * cg:(g + 1) * cg]
                grad = dxp[ni, g * cg:(g + 1) * cg]
                for p in range(ho):
                    for q in range(wo):
                        d = dyf[ni, oi, p, q]
                        db[oi] += d
                        dw[oi] += d * window(img, p, q)
                        window(grad, p, q)[...] += d * wf[oi]
        dx = dxp[:, :, ph:ph + h, pw:pw + wd]
        return dx, dw, db

    return y, backward


def pool(x, kernel, stride, padding, op):
    """y and dx for dy, exact; max pads with -inf and keeps the first
    maximum in row-major order."""
    n, c, h, w = x.shape
    ph, pw = padding
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=fill)
    ho = (h + 2 * ph - kernel[0]) // stride[0] + 1
    wo = (w + 2 * pw - kernel[1]) // stride[1] + 1
    y = np.empty((n, c, ho, wo), dtype=object)
    where = {}
    for i in np.ndindex(n, c, ho, wo):
        ni, ci, p, q = i
        r0, c0 = p * stride[0], q * stride[1]
        win = xp[ni, ci, r0:r0 + kernel[0], c0:c0 + kernel[1]]
        if op == "max":
            k = int(np.argmax(win))  # the first maximum, row-major
            y[i] = Fraction(float(win.ravel()[k]))
            where[i] = (r0 + k // kernel[1], c0 + k % kernel[1])
        else:
            y[i] = sum((Fraction(float(v)) for v in win.ravel()), Fraction(0)) \
                / (kernel[0] * kernel[1])

    def backward(dy):
        dxp = np.full(xp.shape, Fraction(0), dtype=object)
        for i in np.ndindex(n, c, ho, wo):
            ni, ci, p, q = i
            d = Fraction(float(dy[i]))
            if op == "max":
                dxp[ni, ci][where[i]] += d
            else:
                r0, c0 = p * stride[0], q * stride[1]
                dxp[ni, ci, r0:r0 + kernel[0], c0:c0 + kernel[1]] += \
                    d / (kernel[0] * kernel[1])
        return dxp[:, :, ph:ph + h, pw:pw + w]

    return y, backward


def generate(save):
    rng = np.random.default_rng(20241126)
    for name, xs, ws, has_b, stride, padding, dilation, groups, dt in CONV:
        x = rng.uniform(-1, 1, xs).astype(dt)
        w = rng.uniform(-1, 1, ws).astype(dt)
        b = rng.uniform(-1, 1, ws[0]).astype(dt) if has_b else None
        y, backward = conv(x, w, b, stride, padding, dilation, groups)
        dy = rng.uniform(-1, 1, y.shape).astype(dt)
        dx, dw, db = backward(dy)
        save(f"conv_{name}_x", x)
        save(f"conv_{name}_w", w)
        if has_b:
            save(f"conv_{name}_b", b)
        save(f"conv_{name}_dy", dy)
        save(f"conv_{name}_y", rounded(y, dt))
        save(f"conv_{name}_dx", rounded(dx, dt))
        save(f"conv_{name}_dw", rounded(dw, dt))
        if has_b:
            save(f"conv_{name}_db", rounded(db, dt))
    for name, xs, k, s, p, dt in POOL:
        x = rng.uniform(-1, 1, xs).astype(dt)
        save(f"pool_{name}_x", x)
        for op in ("max", "avg"):
            y, backward = pool(x, k, s, p, op)
            dy = rng.uniform(-1, 1, y.shape).astype(dt)
            save(f"pool_{name}_{op}_dy", dy)
            save(f"pool_{name}_{op}_y", rounded(y, dt))
            save(f"pool_{name}_{op}_dx", rounded(backward(dy), dt))
