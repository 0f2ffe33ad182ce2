#!/usr/bin/env python3
"""PyTorch's and NumPy's side of the benchmarks, and the correctness check.

    torch_bench.py --backend torch|numpy

One persistent process speaking the line protocol of bench/tg_bench.c on
stdin/stdout (setup WORKLOAD THREADS SIZE MIN_SECONDS, run, mem, quit), so
that bench/run.py can alternate it with tapegrad sample by sample. The
workloads are the same computations on the same sizes; NumPy answers
"unsupported" for those it cannot express (it has no autograd: its
LayerNorm/BatchNorm backward is written by hand, as in llm.c).

    verify WORKLOAD DIR -> "ok WORST" | "fail MESSAGE" | "skip REASON"

loads the inputs and results tapegrad wrote with `check DIR` and recomputes
them here (with PyTorch when it imports, else NumPy), within the tolerances
of TOLERANCES. WORST is the largest |got - want| / (atol + rtol * |want|)
(<= 1 passes).

Threads: torch.set_num_threads; NumPy's OpenBLAS reads OPENBLAS_NUM_THREADS
when the process starts, so run.py starts one process per thread count.
This file is a benchmark, not part of the library.
"""
import argparse
import math
import os
import re
import resource
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the NumPy backend and the verifier work without it
    torch = None

EPS = 1e-5
# (rtol, atol) per workload for the check against tapegrad. float32 results
# of O(1) values computed in a different order differ by a few ulps times
# the length of the sums (768 to 65536 terms): 1e-4 leaves room for that and
# still catches any wrong formula. matmul sums 1024 products of N(0, 1)
# values (results ~32), MLP losses and parameters are O(1).
TOLERANCES = {
    "ln": (1e-4, 1e-4), "bn": (1e-4, 1e-4), "matmul": (1e-4, 1e-3),
    "mlp": (1e-4, 1e-5), "tape": (1e-6, 1e-6),
    # conv: sums of 144 (y, dx) and 4096 (dw, db) products of N(0, 1)
    # values in float32, against float64
    "conv": (1e-4, 1e-3),
}


def split_scale(workload):
    """NAME@PARAM (bench/run.py --scaling): (NAME, the sizes in PARAM), or
    (workload, None). ln_fwd_bwd@MxN and bn1d_fwd_bwd@MxN are (M, N);
    mlp_medium_step@B is (B,).
    Raises NotImplementedError for any other NAME@PARAM."""
    if "@" not in workload:
        return workload, None
    base, param = workload.split("@", 1)
    # ASCII digits only, each size at most 2^24 and a product of at most
    # 2^26, as tg_bench's parser (Python's int() would take "1_0" and
    # other scripts' digits)
    if not re.fullmatch(r"[0-9]+(x[0-9]+)*", param):
        raise NotImplementedError(workload)
    dims = tuple(int(v) for v in param.split("x"))
    if max(dims) > 1 << 24 or math.prod(dims) > 1 << 26:
        raise NotImplementedError(workload)
    # the least of each size: BatchNorm in training needs two rows (the
    # MLP step's batch is a BatchNorm's rows)
    least = {"ln_fwd_bwd": (1, 1), "bn1d_fwd_bwd": (2, 1),
             "mlp_medium_step": (2,)}.get(base)
    if least is None or len(dims) != len(least) or \
            any(d < m for d, m in zip(dims, least)):
        raise NotImplementedError(workload)
    return base, dims


def sizes(workload, small):
    workload, dims = split_scale(workload)
    if dims and workload.startswith(("ln", "bn1d")):
        return dims
    if workload.startswith("bn2d"):
        return (3, 5, 4, 3) if small else (32, 64, 32, 32)
    if workload.startswith("matmul"):
        return (33, 33) if small else (1024, 1024)
    if workload == "copy":
        return (1000,) if small else (4096 * 768,)
    if workload == "ln_small_fwd_bwd":
        return (5, 19) if small else (64, 768)
    return (37, 19) if small else (4096, 768)


# ----------------------------------------------------------------- NumPy

def np_layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    xc = x - mean
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + EPS)
    xhat = xc * rstd
    return xhat * w + b, xhat, rstd


def np_layer_norm_backward(dy, xhat, rstd, w):
    # dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dxhat = dy * w
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


def np_axes(x):
    return (0,) if x.ndim == 2 else (0,) + tuple(range(2, x.ndim))


def np_cshape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def np_batch_norm(x, w, b, rm, rv):
    axes, cs = np_axes(x), np_cshape(x)
    n = x.size // x.shape[1]
    mean = x.mean(axes, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + EPS)
    xhat = xc * invstd
    rm *= 0.9
    rm += 0.1 * mean.reshape(-1)
    rv *= 0.9
    rv += 0.1 * var.reshape(-1) * (n / (n - 1))
    return xhat * w.reshape(cs) + b.reshape(cs), xhat, invstd


def np_batch_norm_backward(dy, xhat, invstd, w):
    axes, cs = np_axes(dy), np_cshape(dy)
    dxhat = dy * w.reshape(cs)
    dx = invstd * (dxhat - dxhat.mean(axes, keepdims=True)
                   - xhat * (dxhat * xhat).mean(axes, keepdims=True))
    return dx, (dy * xhat).sum(axes), dy.sum(axes)


class NumpyWorkload:
    SUPPORTED = {"ln_fwd", "ln_fwd_bwd", "ln_small_fwd_bwd", "bn1d_fwd_bwd",
                 "bn2d_fwd_bwd",
                 "matmul", "matmul_portable", "copy"}

    def __init__(self, name, small):
        shape = sizes(name, small)
        name = split_scale(name)[0]
        if name not in self.SUPPORTED:
            raise NotImplementedError(name)
        self.name = name
        rng = np.random.default_rng(0)
        f32 = np.float32
        if name == "copy":
            self.src = np.arange(shape[0], dtype=f32) % 1000
            self.dst = np.zeros_like(self.src)
        elif name.startswith("matmul"):
            self.a = rng.standard_normal(shape, dtype=f32)
            self.b = rng.standard_normal(shape, dtype=f32)
        else:
            c = shape[-1] if name.startswith("ln") else shape[1]
            self.x = rng.standard_normal(shape, dtype=f32)
            self.dy = rng.standard_normal(shape, dtype=f32)
            self.w = rng.standard_normal(c, dtype=f32)
            self.b = rng.standard_normal(c, dtype=f32)
            self.rm = np.zeros(c, f32)
            self.rv = np.ones(c, f32)
        self.units = 1

    def iter(self):
        n = self.name
        if n == "copy":
            np.copyto(self.dst, self.src)
        elif n.startswith("matmul"):
            np.matmul(self.a, self.b)
        elif n == "ln_fwd":
            np_layer_norm(self.x, self.w, self.b)
        elif n in ("ln_fwd_bwd", "ln_small_fwd_bwd"):
            _, xhat, rstd = np_layer_norm(self.x, self.w, self.b)
            np_layer_norm_backward(self.dy, xhat, rstd, self.w)
        else:
            _, xhat, invstd = np_batch_norm(self.x, self.w, self.b, self.rm,
                                            self.rv)
            np_batch_norm_backward(self.dy, xhat, invstd, self.w)

    def mem(self):
        return -1, -1


# --------------------------------------------------------------- PyTorch

def torch_ln_composed(x, w, b):
    mean = x.mean(-1, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + EPS) * w + b


def torch_bn_composed(x, w, b, rm, rv):
    # makemore part 4's steps: bnmeani, bndiff, bndiff2, bnvar, bnvar_inv,
    # bnraw; the running statistics as F.batch_norm updates them.
    n = x.shape[0]
    mean = x.mean(0, keepdim=True)
    diff = x - mean
    diff2 = diff * diff
    var = diff2.mean(0, keepdim=True)
    var_inv = (var + EPS) ** -0.5
    raw = diff * var_inv
    with torch.no_grad():
        rm.mul_(0.9).add_(0.1 * mean.reshape(-1))
        rv.mul_(0.9).add_(0.1 * var.reshape(-1) * (n / (n - 1)))
    return w * raw + b


def torch_mlp(tiny):
    width = 32 if tiny else 128
    norm = (lambda: torch.nn.LayerNorm(width)) if tiny else \
        (lambda: torch.nn.BatchNorm1d(width))
    return torch.nn.Sequential(
        torch.nn.Linear(2, width), norm(), torch.nn.ReLU(),
        torch.nn.Linear(width, width), norm(), torch.nn.ReLU(),
        torch.nn.Linear(width, 3))


class TorchWorkload:
    def __init__(self, name, small):
        full = name
        name, dims = split_scale(name)
        self.name = name
        self.units = 1
        torch.manual_seed(0)
        if name.startswith(("ln", "bn")):
            self.setup_norm(full, small)
        elif name.startswith("matmul"):
            shape = sizes(name, small)
            self.a, self.b = torch.randn(shape), torch.randn(shape)
        elif name.startswith("mlp"):
            tiny = name == "mlp_tiny_step"
            self.model = torch_mlp(tiny)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
            batch = dims[0] if dims else 32 if tiny else 256
            self.x = torch.randn(batch, 2)
            self.labels = torch.randint(0, 3, (batch,))
        elif name.startswith("tape"):
            self.a = torch.randn(4, requires_grad=True)
            self.b = torch.randn(4, requires_grad=True)
            if name == "tape_op_bwd":
                self.units = 100
        elif name == "copy":
            n = sizes(name, small)[0]
            self.src = torch.arange(n, dtype=torch.float32) % 1000
            self.dst = torch.zeros(n)
        elif name == "conv_fwd_bwd":
            n, c = (2, 3) if small else (64, 16)
            self.x = torch.randn(n, c, 8, 8, requires_grad=True)
            self.w = torch.randn(c, c, 3, 3, requires_grad=True)
            self.b = torch.randn(c, requires_grad=True)
            self.dy = torch.randn(n, c, 8, 8)
        else:
            raise NotImplementedError(name)

    def setup_norm(self, name, small):
        shape = sizes(name, small)
        grad = "bwd" in name
        c = shape[-1] if name.startswith("ln") else shape[1]
        self.x = torch.randn(shape, requires_grad=grad)
        self.dy = torch.randn(shape)
        self.w = torch.randn(c, requires_grad=grad)
        self.b = torch.randn(c, requires_grad=grad)
        self.rm, self.rv = torch.zeros(c), torch.ones(c)

    def forward(self):
        n = self.name
        if n.startswith("ln_composed"):
            return torch_ln_composed(self.x, self.w, self.b)
        if n.startswith("ln"):
            return F.layer_norm(self.x, self.x.shape[-1:], self.w, self.b,
                                EPS)
        if n.startswith("bn1d_composed"):
            return torch_bn_composed(self.x, self.w, self.b, self.rm,
                                     self.rv)
        return F.batch_norm(self.x, self.rm, self.rv, self.w, self.b, True,
                            0.1, EPS)

    def step(self):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(self.x), self.labels)
        loss.backward()
        self.opt.step()
        return loss

    def chain(self):
        h = self.a
        for _ in range(100):
            h = h + self.b
        return h.sum()

    def iter(self):
        n = self.name
        if n.startswith(("ln", "bn")):
            # As tapegrad's side: gradients set to none, so no iteration
            # accumulates into the previous one's.
            self.x.grad = self.w.grad = self.b.grad = None
            y = self.forward()
            if "bwd" in n:
                y.backward(self.dy)
        elif n.startswith("matmul"):
            torch.matmul(self.a, self.b)
        elif n.startswith("mlp"):
            self.step()
        elif n == "tape_op_fwd":
            self.a + self.b
        elif n == "tape_op_bwd":
            self.a.grad = self.b.grad = None
            self.chain().backward()
        elif n == "conv_fwd_bwd":
            self.x.grad = self.w.grad = self.b.grad = None
            F.conv2d(self.x, self.w, self.b, padding=1).backward(self.dy)
        else:
            self.dst.copy_(self.src)

    def mem(self):
        n = self.name
        if n.startswith(("ln", "bn")) and "bwd" in n:
            return self.saved_bytes(), -1
        if n.startswith("mlp"):
            return -1, self.peak_bytes()
        return -1, -1

    def saved_bytes(self):
        """Distinct storages the graph saves for backward, other than the
        input's, the parameters' and the output's (tapegrad's measure)."""
        saved = {}

        def pack(t):
            s = t.storage()
            saved[s.data_ptr()] = s.nbytes()
            return t

        self.x.grad = self.w.grad = self.b.grad = None
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = self.forward()
        for t in (self.x, self.w, self.b, y):
            saved.pop(t.storage().data_ptr(), None)
        y.backward(self.dy)
        return sum(saved.values())

    def peak_bytes(self):
        """Peak CPU allocation during one step above what was allocated
        before it, from the profiler's memory events (PyTorch 1.13 has no
        CPU counterpart of torch.cuda.max_memory_allocated)."""
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU],
                     profile_memory=True) as prof:
            self.step()
        cur = peak = 0
        for e in prof.profiler.kineto_results.events():
            if e.name() == "[memory]":
                cur += e.nbytes()
                peak = max(peak, cur)
        return peak


# ---------------------------------------------------------------- verify

def load(d, name):
    return np.load(os.path.join(d, name + ".npy"))


def compare(results, tol):
    """results: [(name, got, want)]. Returns (worst, message or None)."""
    rtol, atol = tol
    worst, bad = 0.0, None
    for name, got, want in results:
        got = np.atleast_1d(np.asarray(got, np.float64))
        want = np.atleast_1d(np.asarray(want, np.float64))
        if got.shape != want.shape:
            return float("inf"), "%s: shape %s, expected %s" % (
                name, got.shape, want.shape)
        if got.size == 0:
            continue
        ratio = np.abs(got - want) / (atol + rtol * np.abs(want))
        ratio[np.isnan(got) | np.isnan(want)] = np.inf
        i = int(np.argmax(ratio))
        if ratio.flat[i] > worst:
            worst = float(ratio.flat[i])
            if worst > 1:
                bad = "%s[%s]: %r, expected %r (rtol %g, atol %g)" % (
                    name, np.unravel_index(i, got.shape), got.flat[i],
                    want.flat[i], rtol, atol)
    return worst, bad


def reference_norm(workload, d):
    x, w, b = load(d, "x"), load(d, "weight"), load(d, "bias")
    ln = workload.startswith("ln")
    bwd = "bwd" in workload
    rm = None if ln else load(d, "running_mean0").copy()
    rv = None if ln else load(d, "running_var0").copy()
    out = {}
    if torch is not None:
        # in float64: the sums over the rows (dweight, dbias) of the larger
        # sizes of --scaling (16384 rows) drift in float32 by more than the
        # tolerance, PyTorch's as much as anyone's
        f64 = torch.float64
        tx = torch.tensor(x, dtype=f64, requires_grad=True)
        tw = torch.tensor(w, dtype=f64, requires_grad=True)
        tb = torch.tensor(b, dtype=f64, requires_grad=True)
        if ln:
            y = F.layer_norm(tx, tx.shape[-1:], tw, tb, EPS)
        else:
            trm = torch.tensor(rm, dtype=f64)
            trv = torch.tensor(rv, dtype=f64)
            y = F.batch_norm(tx, trm, trv, tw, tb, True, 0.1, EPS)
            out["running_mean1"], out["running_var1"] = trm, trv
        out["y"] = y.detach()
        if bwd:
            y.backward(torch.tensor(load(d, "dy"), dtype=f64))
            out["dx"], out["dweight"], out["dbias"] = tx.grad, tw.grad, tb.grad
        return {k: v.numpy() for k, v in out.items()}
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), \
        b.astype(np.float64)
    if ln:
        y, xhat, rstd = np_layer_norm(x64, w64, b64)
        back = np_layer_norm_backward
    else:
        rm, rv = rm.astype(np.float64), rv.astype(np.float64)
        y, xhat, rstd = np_batch_norm(x64, w64, b64, rm, rv)
        out["running_mean1"], out["running_var1"] = rm, rv
        back = np_batch_norm_backward
    out["y"] = y
    if bwd:
        out["dx"], out["dweight"], out["dbias"] = back(
            load(d, "dy").astype(np.float64), xhat, rstd, w64)
    return out


def reference_mlp(workload, d):
    if torch is None:
        return None
    model = torch_mlp(workload == "mlp_tiny_step")
    state = {k: torch.tensor(load(d, "before." + k))
             for k in model.state_dict()}
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    loss = F.cross_entropy(model(torch.tensor(load(d, "x"))),
                           torch.tensor(load(d, "labels")))
    loss.backward()
    opt.step()
    out = {"loss": loss.detach().numpy()}
    for k, v in model.state_dict().items():
        out["after." + k] = v.numpy()
    return out


def verify(workload, d):
    workload = split_scale(workload)[0]  # the sizes are in the files
    if workload in ("copy", "copy_ws"):
        return "ok 0 (checked by the contender: memcmp)"
    if workload.startswith(("ln", "bn")):
        want, tol = reference_norm(workload, d), TOLERANCES[workload[:2]]
    elif workload.startswith("matmul"):
        want = {"c": load(d, "a").astype(np.float64)
                @ load(d, "b").astype(np.float64)}
        tol = TOLERANCES["matmul"]
    elif workload.startswith("mlp"):
        want, tol = reference_mlp(workload, d), TOLERANCES["mlp"]
        if want is None:
            return "skip needs PyTorch"
    elif workload == "conv_fwd_bwd":
        if torch is None:
            return "skip needs PyTorch"
        x, w, b = (torch.from_numpy(load(d, k)).double().requires_grad_()
                   for k in ("x", "weight", "bias"))
        y = F.conv2d(x, w, b, padding=1)
        y.backward(torch.from_numpy(load(d, "dy")).double())
        want = {"y": y.detach().numpy(), "dx": x.grad.numpy(),
                "dweight": w.grad.numpy(), "dbias": b.grad.numpy()}
        tol = TOLERANCES["conv"]
    elif workload.startswith("tape"):
        a, b = load(d, "a"), load(d, "b")
        if workload == "tape_op_fwd":
            want = {"y": a + b}
        else:
            want = {"y": np.sum(a.astype(np.float64) + 100.0 * b),
                    "da": np.ones_like(a), "db": np.full_like(b, 100.0)}
        tol = TOLERANCES["tape"] if workload == "tape_op_fwd" else (1e-5, 1e-4)
    else:
        return "skip unknown workload"
    worst, bad = compare([(k, load(d, k), v) for k, v in want.items()], tol)
    return "fail " + bad if bad else "ok %.3g" % worst


# ------------------------------------------------------------- protocol

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_iters(w, n):
    """(wall seconds, CPU seconds of the process, minor page faults) of n
    iterations."""
    f0, c0, t0 = faults(), time.process_time(), time.perf_counter()
    for _ in range(n):
        w.iter()
    t, c = time.perf_counter() - t0, time.process_time() - c0
    return t, c, faults() - f0


def serve(backend):
    if backend == "torch":
        torch.set_num_interop_threads(1)
    w, iters = None, 1
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        try:
            if cmd == "setup":
                name, threads = parts[1], int(parts[2])
                small = len(parts) > 3 and parts[3] == "small"
                min_s = float(parts[4]) if len(parts) > 4 else 0.02
                if backend == "torch":
                    torch.set_num_threads(threads)
                try:
                    w = (TorchWorkload if backend == "torch"
                         else NumpyWorkload)(name, small)
                except NotImplementedError:
                    w = None
                    reply = "unsupported"
                else:
                    # the first iteration alone: what a cold start faults
                    n, (t, _, cold) = 1, time_iters(w, 1)
                    while t < min_s / 8 and n < 1 << 30:
                        n *= 2
                        t = time_iters(w, n)[0]
                    iters = max(1, int(np.ceil(n * min_s / t))) if t > 0 else n
                    reply = "ok %d %d" % (iters, cold)
            elif cmd == "run":
                t, c, f = time_iters(w, iters)
                u = iters * w.units
                reply = "%.9g %.9g %.9g" % (t / u, c / u, f / iters)
            elif cmd == "mem":
                saved, peak = w.mem() if w else (-1, -1)
                reply = "saved=%d peak=%d" % (saved, peak)
            elif cmd == "verify":
                reply = verify(parts[1], parts[2])
            elif cmd == "quit":
                break
            else:
                reply = "error unknown command: " + line.strip()
        except Exception as e:  # one line back, so the driver can say it
            reply = "error %s: %s" % (type(e).__name__,
                                      str(e).replace("\n", " "))
        print(reply, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["torch", "numpy"], required=True)
    args = ap.parse_args()
    if args.backend == "torch" and torch is None:
        print("PyTorch not found: apt-get install python3-torch",
              file=sys.stderr)
        return 1
    serve(args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
