"""NumPy references for the optimisers (tests/nn/test_optim.c): SGD (plain,
momentum, dampening, Nesterov, weight decay), Adam (with and without
L2 weight decay, with a learning rate changed between steps) and AdamW,
as torch.optim 1.13 computes them (its single-tensor code paths), run for
S = 5 steps on four parameters with gradients given per step.

The parameters:
  p0 (3, 4) float64   p1 (5,) float64   p2 (2, 3) float32   p3 () float32
p3's gradients are tiny (about 3e-8, the size of Adam's eps), so where eps
is added (after the square root and after the bias correction) changes its
updates by tens of percents. p1 has no gradient at step 2 (index 1): it is
skipped then, and its own step count (Adam's state['step']) lags behind the
others', which changes its bias corrections.

Every rule computes in the parameter's dtype, one NumPy operation per
PyTorch tensor operation and in the same order, with each Python-float
hyper-parameter rounded to that dtype as PyTorch's kernels do; the scalars
PyTorch computes in Python (1 - beta^t, lr / bias_correction1,
sqrt(bias_correction2), 1 - lr * weight_decay) are computed here in double
too. Checked by hand against torch.optim.SGD / Adam / AdamW 1.13.1 on the
same data: the float64 results agree within 1.1e-15 relative (7 ulp), the
float32 ones within 7.5e-7 relative (11 ulp, after five SGD steps with
Nesterov momentum; Adam within 1 ulp). They are not identical because
PyTorch's AVX2 kernels fuse `a + alpha * b` (add with alpha, addcmul)
into one fused multiply-add, where this rule (and tapegrad) rounds the
product first: with the fused form emulated, the float32 SGD results
equal PyTorch's bit for bit.

Names written:
  optim_p<i>_init         the initial value of parameter i
  optim_p<i>_grad         (S, *shape_i) its gradient at each step
  optim_has_grad          (S, 4) int64: 1 where parameter i has a gradient
  optim_<case>_lr         (S,) float64: the learning rate of each step
  optim_<case>_p<i>       (S, *shape_i) parameter i after each step
"""
import math

import numpy as np

STEPS = 5
SHAPES = [((3, 4), np.float64), ((5,), np.float64), ((2, 3), np.float32),
          ((), np.float32)]
GRAD_SCALE = [1.0, 0.5, 2.0, 3e-8]

# name, rule, settings, learning rate per step. The C test lists the same
# cases with the same settings.
CASES = [
    ("sgd_plain", "sgd", dict(momentum=0.0), [0.1] * STEPS),
    ("sgd_momentum", "sgd", dict(momentum=0.9), [0.1] * STEPS),
    ("sgd_dampening", "sgd", dict(momentum=0.9, dampening=0.3), [0.1] * STEPS),
    ("sgd_nesterov", "sgd", dict(momentum=0.8, nesterov=True), [0.05] * STEPS),
    ("sgd_wd", "sgd", dict(momentum=0.5, weight_decay=0.05), [0.1] * STEPS),
    ("adam", "adam", dict(), [0.01] * STEPS),
    ("adam_wd", "adam", dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
     [0.01] * STEPS),
    ("adam_sched", "adam", dict(), [0.01, 0.01, 0.005, 0.005, 0.0025]),
    ("adamw", "adamw", dict(weight_decay=0.1), [0.01] * STEPS),
]


def sgd_step(p, g, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
             nesterov=False):
    """torch/optim/sgd.py, _single_tensor_sgd."""
    t = p.dtype.type
    d_p = g
    if weight_decay != 0:
        d_p = d_p + t(weight_decay) * p  # d_p.add(param, alpha=wd)
    if momentum != 0:
        if "buf" not in state:
            state["buf"] = d_p.copy()  # the first buffer is the gradient
        else:  # buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
            state["buf"] = state["buf"] * t(momentum) + t(1 - dampening) * d_p
        if nesterov:
            d_p = d_p + t(momentum) * state["buf"]
        else:
            d_p = state["buf"]
    return p + t(-lr) * d_p  # param.add_(d_p, alpha=-lr)


def adam_step(p, g, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              decoupled=False):
    """torch/optim/adam.py and adamw.py, _single_tensor_adam(w)."""
    t = p.dtype.type
    beta1, beta2 = betas
    if "step" not in state:
        state["step"] = 0
        state["exp_avg"] = np.zeros_like(p)
        state["exp_avg_sq"] = np.zeros_like(p)
    state["step"] += 1
    step = state["step"]
    if decoupled:
        p = p * t(1 - lr * weight_decay)  # param.mul_(1 - lr * wd)
    elif weight_decay != 0:
        g = g + t(weight_decay) * p  # grad.add(param, alpha=wd)
    # exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    m = state["exp_avg"] * t(beta1) + t(1 - beta1) * g
    # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    v = state["exp_avg_sq"] * t(beta2) + (t(1 - beta2) * g) * g
    state["exp_avg"], state["exp_avg_sq"] = m, v
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = math.sqrt(bias_correction2)
    # denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    denom = np.sqrt(v) / t(bias_correction2_sqrt) + t(eps)
    # param.addcdiv_(exp_avg, denom, value=-step_size)
    return p + (t(-step_size) * m) / denom


def run(rule, settings, lrs, inits, grads, has_grad):
    """The parameters after each step: a list (per parameter) of (S, ...)."""
    params = [x.copy() for x in inits]
    states = [{} for _ in inits]
    out = [[] for _ in inits]
    for s in range(STEPS):
        for i, p in enumerate(params):
            if has_grad[s, i]:
                g = grads[i][s]
                if rule == "sgd":
                    params[i] = sgd_step(p, g, states[i], lrs[s], **settings)
                else:
                    params[i] = adam_step(p, g, states[i], lrs[s],
                                          decoupled=rule == "adamw",
                                          **settings)
            out[i].append(np.asarray(params[i]).copy())
    return [np.stack(o) for o in out]


def data():
    """Initial parameters, per-step gradients and the has_grad mask."""
    rng = np.random.default_rng(20240517)
    inits, grads = [], []
    for (shape, dtype), scale in zip(SHAPES, GRAD_SCALE):
        inits.append(rng.standard_normal(shape).astype(dtype))
        grads.append((scale * rng.standard_normal((STEPS,) + shape))
                     .astype(dtype))
    has_grad = np.ones((STEPS, len(SHAPES)), dtype=np.int64)
    has_grad[1, 1] = 0
    return inits, grads, has_grad


def generate(save):
    inits, grads, has_grad = data()
    for i in range(len(SHAPES)):
        save(f"optim_p{i}_init", inits[i])
        save(f"optim_p{i}_grad", grads[i])
    save("optim_has_grad", has_grad)
    for name, rule, settings, lrs in CASES:
        save(f"optim_{name}_lr", np.array(lrs, dtype=np.float64))
        for i, traj in enumerate(run(rule, settings, lrs, inits, grads,
                                     has_grad)):
            assert traj.dtype == SHAPES[i][1], (name, i, traj.dtype)
            save(f"optim_{name}_p{i}", traj)
