"""NumPy references for the layers of nn/layers.c (tests/nn/test_layers.c):
Linear's initial weights as PyTorch draws them, Linear's forward and
backward, and one training step of a tiny model with SGD.

PyTorch's initial weights, reproduced without PyTorch (SEMANTICS.md
section 5). torch.manual_seed(s) seeds a standard MT19937 with the low 32
bits of s by the usual 1812433253 recurrence; NumPy's MT19937 with
`_legacy_seeding(s)` is that generator, and `random_raw(n)` gives its raw
32-bit draws. nn.Linear(in, out) fills weight (out, in) row by row, then
bias (out,), each element from one draw:

    u = (draw & 0xFFFFFF) * 2^-24             # float32 uniform in [0, 1)
    k = float32(1 / sqrt(in))                 # the bound, rounded to float32
    w = fmaf(u, k - (-k), -k)                 # one rounding to float32

fmaf rounds the exact u * 2k - k once. Here it is computed in float64 and
then rounded to float32, which is the same because the float64 result is
exact: u has 24 significant bits and 2k (exactly twice a float32) 24 more,
so u * 2k has at most 48 bits and is exact in float64; k is a multiple of
2^(e-23) where 2^e <= k < 2^(e+1), and u * 2k a multiple of 2^(e-46), so the
sum is a multiple of 2^(e-46) below 2^(e+1) in magnitude: 47 bits, exact in
float64's 53. One rounding of an exact value to float32 is fmaf's result.
(PyTorch computes the weight bound as sqrt(3) * sqrt(2 / (1 + 5)) /
sqrt(in) in double, which rounds to the same float32 k.) The generator
checks itself against two vectors PyTorch printed
(shared/reference/torch-rng-vectors.txt).

The tiny model is nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
made after torch.manual_seed(0), with cross_entropy (mean) on a fixed batch.
Its forward, backward and updates are written out by hand below in float64
from the float32 parameters; the parameters are rounded to float32 after
each update and the momentum buffers kept in float32, as the C model stores
them. Checked once by hand against PyTorch 1.13 (the same model, batch and
optimisers, torch.optim.SGD): the initial weights of every case were
bit-exact; the largest difference of the tiny model's values (loss,
gradients, parameters after each step) was 1.5e-8, and of Linear(5, 7)'s
output and gradients 4.8e-7 (one float32 ulp of values up to 8: PyTorch
sums in float32).

Names written:
  nn_layers_init_<case>_weight / _bias    float32, for each case of INIT
      (the chain case: Linear(4, 3, bias=False) then Linear(3, 2) from one
      seed, saved as chain0_weight, chain1_weight, chain1_bias)
  nn_layers_fwd_x (2, 3, 5), _g (2, 3, 7)  float32 input and upstream grad
  nn_layers_fwd_y, _dx, _dweight, _dbias   Linear(5, 7) of INIT "l5x7":
      y = x W^T + b and the gradients of sum(g * y)
  nn_layers_sgd_x (6, 3) float32, nn_layers_sgd_labels (6,) int64
  nn_layers_sgd_<p>_<stage>  for p in 0w, 0b, 2w, 2b (the parameters
      0.weight, 0.bias, 2.weight, 2.bias) and stage:
        init   the initial values (bit-exact PyTorch init)
        grad   the gradient of the loss at init
        sgd1   after one SGD step, lr 0.1
        mom1, mom2  after one and two steps of SGD with lr 0.1,
               momentum 0.9, weight_decay 1e-2 (a new forward and backward
               before the second step)
  nn_layers_sgd_loss   0-d float32: the loss at init
  nn_layers_sgd_loss2  0-d float32: the loss before the second momentum step
"""
import math

import numpy as np

# name, seed, in_features, out_features
INIT = [
    ("l5x7", 123, 5, 7),
    ("l1x4", 7, 1, 4),      # k = 1: u spread over [-1, 1)
    ("l64x3", 2024, 64, 3),  # k = 1/8: a power of two
    ("l10x6", 99, 10, 6),
]


def mt_draws(seed):
    """The MT19937 of torch.manual_seed(seed)."""
    bg = np.random.MT19937()
    bg._legacy_seeding(seed)
    return bg


def uniform_f32(bg, n, k):
    """n float32 samples of U(-k, k) as PyTorch's uniform_ (see above)."""
    d = bg.random_raw(n).astype(np.uint64)
    u = (d & 0xFFFFFF).astype(np.float64) * 2.0 ** -24
    k = np.float64(k)
    return (u * (2 * k) - k).astype(np.float32)  # exact in float64, then fmaf's rounding


def linear_init(bg, fan_in, fan_out, bias=True):
    """nn.Linear(fan_in, fan_out)'s weight and bias (None without)."""
    k = np.float32(1 / math.sqrt(fan_in))
    w = uniform_f32(bg, fan_out * fan_in, k).reshape(fan_out, fan_in)
    b = uniform_f32(bg, fan_out, k) if bias else None
    return w, b


def self_check():
    """Two vectors printed by PyTorch 1.13 (torch-rng-vectors.txt)."""
    w, b = linear_init(mt_draws(42), 3, 2)
    assert list(w.ravel().view(np.uint32)) == [
        0x3ee20009, 0x3ef55a65, 0xbe0a80e2, 0x3f07c5b4, 0xbe018916,
        0x3dee999a], "nn.Linear(3, 2) after manual_seed(42)"
    assert list(b.view(np.uint32)) == [0xbe8fea7d, 0x3ead9a4b]
    w, b = linear_init(mt_draws(1), 4, 3)
    assert list(b.view(np.uint32)) == [0x3e3aff30, 0xbe4786e4, 0xbd155130], \
        "nn.Linear(4, 3).bias after manual_seed(1)"


def tiny_model(params, x, labels):
    """Loss and gradients of Linear(3, 4) -> Tanh -> Linear(4, 2) ->
    cross_entropy(mean), in float64. params: [W0, b0, W2, b2]."""
    w0, b0, w2, b2 = (p.astype(np.float64) for p in params)
    x = x.astype(np.float64)
    n = x.shape[0]
    a = x @ w0.T + b0                      # (N, 4)
    h = np.tanh(a)
    z = h @ w2.T + b2                      # (N, 2) logits
    zmax = z.max(axis=1, keepdims=True)
    logp = z - zmax - np.log(np.exp(z - zmax).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(n), labels].mean()
    # d loss / d z = (softmax(z) - onehot(labels)) / N
    dz = np.exp(logp)
    dz[np.arange(n), labels] -= 1
    dz /= n
    dw2 = dz.T @ h
    db2 = dz.sum(axis=0)
    dh = dz @ w2
    da = dh * (1 - h * h)                  # tanh' = 1 - tanh^2
    dw0 = da.T @ x
    db0 = da.sum(axis=0)
    return loss, [dw0, db0, dw2, db2]


def generate(save):
    self_check()
    f32 = np.float32
    for name, seed, fin, fout in INIT:
        w, b = linear_init(mt_draws(seed), fin, fout)
        save(f"nn_layers_init_{name}_weight", w)
        save(f"nn_layers_init_{name}_bias", b)
    bg = mt_draws(5)  # one seed, two layers: the first has no bias
    w0, _ = linear_init(bg, 4, 3, bias=False)
    w1, b1 = linear_init(bg, 3, 2)
    save("nn_layers_init_chain0_weight", w0)
    save("nn_layers_init_chain1_weight", w1)
    save("nn_layers_init_chain1_bias", b1)

    rng = np.random.default_rng(20250301)
    # Linear(5, 7) of case l5x7 on a (2, 3, 5) batch: y = x W^T + b, and for
    # L = sum(g * y): dx = g W, dW = sum over rows of g^T x, db = sum of g
    w, b = linear_init(mt_draws(123), 5, 7)
    x = rng.standard_normal((2, 3, 5)).astype(f32)
    g = rng.standard_normal((2, 3, 7)).astype(f32)
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    y = x64 @ w64.T + b64
    rows_x, rows_g = x64.reshape(-1, 5), g64.reshape(-1, 7)
    save("nn_layers_fwd_x", x)
    save("nn_layers_fwd_g", g)
    save("nn_layers_fwd_y", y.astype(f32))
    save("nn_layers_fwd_dx", (g64 @ w64).astype(f32))
    save("nn_layers_fwd_dweight", (rows_g.T @ rows_x).astype(f32))
    save("nn_layers_fwd_dbias", rows_g.sum(axis=0).astype(f32))

    # the tiny model, seed 0
    bg = mt_draws(0)
    params = [*linear_init(bg, 3, 4), *linear_init(bg, 4, 2)]
    x = rng.uniform(-2, 2, (6, 3)).astype(f32)
    labels = np.array([0, 1, 1, 0, 1, 0], dtype=np.int64)
    names = ["0w", "0b", "2w", "2b"]
    save("nn_layers_sgd_x", x)
    save("nn_layers_sgd_labels", labels)
    loss, grads = tiny_model(params, x, labels)
    save("nn_layers_sgd_loss", np.array(loss, dtype=f32))
    for nm, p, gr in zip(names, params, grads):
        save(f"nn_layers_sgd_{nm}_init", p)
        save(f"nn_layers_sgd_{nm}_grad", gr.astype(f32))
        # plain SGD: p -= lr * grad
        save(f"nn_layers_sgd_{nm}_sgd1", (p - 0.1 * gr).astype(f32))
    # SGD(lr=0.1, momentum=0.9, weight_decay=1e-2): g = grad + wd * p;
    # buf = g at the first step, then buf = momentum * buf + g; p -= lr * buf
    lr, mom, wd = 0.1, 0.9, 1e-2
    p = [q.copy() for q in params]
    bufs = [None] * 4
    for step in (1, 2):
        loss, grads = tiny_model(p, x, labels)
        if step == 2:
            save("nn_layers_sgd_loss2", np.array(loss, dtype=f32))
        for i in range(4):
            gi = grads[i] + wd * p[i].astype(np.float64)
            bufs[i] = (gi if step == 1
                       else mom * bufs[i].astype(np.float64) + gi).astype(f32)
            p[i] = (p[i] - lr * bufs[i].astype(np.float64)).astype(f32)
            save(f"nn_layers_sgd_{names[i]}_mom{step}", p[i])
