"""NumPy references for the gradients of the view and copy ops
(tests/autograd/test_grad_view.c).

Each case saves the input(s) x, an upstream gradient g of the output's
shape, and the expected input gradient(s), computed by the closed forms:
a view's backward re-indexes g the other way (the NumPy equivalent of the
C backward is written next to each case), expand sums g over the repeated
dims, a copy passes g through in the input's dtype.

Re-indexing does no arithmetic, so those references are exact in float32
too. The expand-then-multiply case does arithmetic: its float32 references
multiply in float32 (as tg_mul does) and sum the products in float64 before
rounding once to float32 (as tg_sum does), so the C result differs only in
the order of the float64 additions.

Names written (suffix _f64 or _f32 where both dtypes are covered):
  grad_view_chain_{x,g,dx}_<dt>    permute -> slice step 2 -> reshape (copy)
  grad_view_expand_mul_{x,w,g,dx,dw}_<dt>
                                   expand (3,1) to (2,3,4), times w (4,)
  grad_view_select_{x,g,dx}        select(dim 1, index -2)
  grad_view_select_last_dx         the same g into index -1 (a wrong answer
                                   for the select case)
  grad_view_slice_{x,g,dx}         rows -100:100:3, then cols -5:-1:3
  grad_view_narrow_{x,g,dx}        narrow(dim 1, start -4, length 3)
  grad_view_squeeze_{x,g,dx}       squeeze(dim 1) of (3, 1, 4)
  grad_view_reshape_copy_{x,g,dx}  a transposed (4, 3) reshaped to (12,)
  grad_view_chain2_{x,g,dx}        unsqueeze -> broadcast_to -> transpose ->
                                   contiguous -> view
  grad_view_to_f32_{x,g,dx}        float64 -> float32: g float32, dx float64
  grad_view_to_f64_{x,g,dx}        float32 -> float64: g float64, dx float32
"""
import numpy as np


def generate(save):
    rng = np.random.default_rng(20240712)

    def normal(*shape):
        return rng.standard_normal(shape)

    # permute (2, 0, 1) -> slice dim 0 from 1 with step 2 -> reshape to
    # (2, 12). On the C side x is laid out transposed in memory, so the
    # reshape cannot be a view and copies.
    x = normal(3, 4, 5)
    g = normal(2, 12)
    for dt, name in ((np.float64, "f64"), (np.float32, "f32")):
        xd, gd = x.astype(dt), g.astype(dt)
        dx = np.zeros_like(xd)
        dx.transpose(2, 0, 1)[1::2] = gd.reshape(2, 3, 4)
        save(f"grad_view_chain_x_{name}", xd)
        save(f"grad_view_chain_g_{name}", gd)
        save(f"grad_view_chain_dx_{name}", dx)

    # out = expand(x, (2, 3, 4)) * w, w of shape (4,) broadcast:
    #   dx = sum over dims 0, 2 of g * w (kept as (3, 1)),
    #   dw = sum over dims 0, 1 of g * x.
    x = normal(3, 1)
    w = normal(4)
    g = normal(2, 3, 4)
    for dt, name in ((np.float64, "f64"), (np.float32, "f32")):
        xd, wd, gd = x.astype(dt), w.astype(dt), g.astype(dt)
        gw = (gd * wd).astype(np.float64)  # products in dt, sums in float64
        gx = (gd * xd).astype(np.float64)
        save(f"grad_view_expand_mul_x_{name}", xd)
        save(f"grad_view_expand_mul_w_{name}", wd)
        save(f"grad_view_expand_mul_g_{name}", gd)
        save(f"grad_view_expand_mul_dx_{name}",
             gw.sum(axis=(0, 2)).reshape(3, 1).astype(dt))
        save(f"grad_view_expand_mul_dw_{name}", gx.sum(axis=(0, 1)).astype(dt))

    # select(x, 1, -2): dx[:, -2, :] = g, zero elsewhere.
    x = normal(3, 4, 5)
    g = normal(3, 5)
    dx = np.zeros_like(x)
    dx[:, -2, :] = g
    save("grad_view_select_x", x)
    save("grad_view_select_g", g)
    save("grad_view_select_dx", dx)
    wrong = np.zeros_like(x)
    wrong[:, -1, :] = g
    save("grad_view_select_last_dx", wrong)

    # x[-100:100:3][:, -5:-1:3]: rows 0, 3, 6, 9 (both bounds clamped),
    # then columns 2 and 5 (negative bounds).
    x = normal(10, 7)
    g = normal(4, 2)
    dx = np.zeros_like(x)
    dx[-100:100:3][:, -5:-1:3] = g
    save("grad_view_slice_x", x)
    save("grad_view_slice_g", g)
    save("grad_view_slice_dx", dx)

    # narrow(x, 1, -4, 3) = x[:, 2:5] of a (4, 6).
    x = normal(4, 6)
    g = normal(4, 3)
    dx = np.zeros_like(x)
    dx[:, -4:-1] = g
    save("grad_view_narrow_x", x)
    save("grad_view_narrow_g", g)
    save("grad_view_narrow_dx", dx)

    # squeeze(x, 1) of (3, 1, 4): dx = g with the dim put back.
    x = normal(3, 1, 4)
    g = normal(3, 4)
    save("grad_view_squeeze_x", x)
    save("grad_view_squeeze_g", g)
    save("grad_view_squeeze_dx", g.reshape(3, 1, 4))

    # reshape of a transposed (4, 3) to (12,): a copy, still dx = g cut back
    # to (4, 3) in C order.
    x = normal(4, 3)
    g = normal(12)
    save("grad_view_reshape_copy_x", x)
    save("grad_view_reshape_copy_g", g)
    save("grad_view_reshape_copy_dx", g.reshape(4, 3))

    # unsqueeze(x, 0) (1, 2, 3) -> broadcast_to (4, 2, 3) -> transpose(0, 2)
    # (3, 2, 4) -> contiguous -> view (6, 4): dx is g cut back to (3, 2, 4),
    # transposed back to (4, 2, 3), summed over the broadcast dim 0.
    x = normal(2, 3)
    g = normal(6, 4)
    save("grad_view_chain2_x", x)
    save("grad_view_chain2_g", g)
    save("grad_view_chain2_dx", g.reshape(3, 2, 4).transpose(2, 1, 0).sum(0))

    # to_dtype: the gradient comes back in the input's dtype.
    x = normal(2, 3)
    g = normal(2, 3)
    save("grad_view_to_f32_x", x)
    save("grad_view_to_f32_g", g.astype(np.float32))
    save("grad_view_to_f32_dx", g.astype(np.float32).astype(np.float64))
    save("grad_view_to_f64_x", x.astype(np.float32))
    save("grad_view_to_f64_g", g)
    save("grad_view_to_f64_dx", g.astype(np.float32))
