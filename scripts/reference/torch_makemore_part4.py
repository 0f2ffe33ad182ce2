"""Writes tests/reference/torch-makemore-part4.txt: makemore part 4
("becoming a backprop ninja", karpathy/nn-zero-to-hero) run with PyTorch
1.13, for tests/examples/test_makemore_part4.c.

The lecture's code, unchanged but for one thing: the lecture draws bngain
and bnbias with torch.randn and no generator, from the default generator
in whatever state the notebook left it (its printed first loss, 3.3377, is
not reproducible); here the default generator is put in the state a fresh
process starts in, torch.manual_seed(67280421310721), before each network
is made, as examples/makemore/part4_*.c do.

What is written:
  - the parameter count and the first batch's indices (n_hidden 64);
  - the first forward loss;
  - for each of the 26 variables the lecture's exercise 1 checks, the
    shape of loss.backward()'s gradient and three checksums of it, summed
    in double in C order: the sum, the sum of |g|, and sum of g_i * w_i
    with w_i = ((i * 7919) % 1000) / 1000 - 0.5 (a fixed weighting, so a
    gradient with its elements in the wrong places does not pass);
  - the losses of the first 200 steps of exercise 4 (n_hidden 200, the
    manual backward only, lr 0.1).

Run with a Python that has PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 scripts/reference/torch_makemore_part4.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy. Nothing here
depends on the BLAS beyond PyTorch's own float32 matmul, whose summation
order the C test allows for (the tolerances are explained there).

File format: "## <title>" lines, each followed by its values, one per
line; a float32 value is written as its repr and its bits (0x%08x).
"""
import pathlib
import random
import struct
import sys

import torch
import torch.nn.functional as F

TORCH_DEFAULT_SEED = 67280421310721
TRAIN_STEPS = 200


def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def f32_line(v):
    return f"{v!r:>24} 0x{bits(v):08x}"


def checksums(t):
    vals = t.detach().reshape(-1).tolist()
    s = a = w = 0.0
    for i, v in enumerate(vals):
        s += v
        a += abs(v)
        w += v * (((i * 7919) % 1000) / 1000.0 - 0.5)
    return s, a, w


def load():
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    words = (root / "data" / "names.txt").read_text().splitlines()
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    block_size = 3

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + ".":
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]
        return torch.tensor(X), torch.tensor(Y)

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    Xtr, Ytr = build_dataset(words[:n1])
    return Xtr, Ytr, len(stoi), block_size


def init(vocab_size, block_size, n_hidden):
    n_embd = 10
    torch.manual_seed(TORCH_DEFAULT_SEED)  # a fresh process's default generator
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((vocab_size, n_embd), generator=g)
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5/3)/((n_embd * block_size)**0.5)
    b1 = torch.randn(n_hidden, generator=g) * 0.1
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1
    b2 = torch.randn(vocab_size, generator=g) * 0.1
    bngain = torch.randn((1, n_hidden))*0.1 + 1.0
    bnbias = torch.randn((1, n_hidden))*0.1
    return g, [C, W1, b1, W2, b2, bngain, bnbias]


def exercise1(lines, Xtr, Ytr, vocab_size, block_size):
    g, parameters = init(vocab_size, block_size, 64)
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    lines.append("## parameters")
    lines.append(str(sum(p.nelement() for p in parameters)))
    for p in parameters:
        p.requires_grad = True
    batch_size = 32
    n = batch_size
    ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    lines.append("## batch indices")
    lines.extend(str(v) for v in ix.tolist())

    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = 1/n*hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5)**-0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    for t in [logprobs, probs, counts, counts_sum, counts_sum_inv,
              norm_logits, logit_maxes, logits, h, hpreact, bnraw,
              bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
              embcat, emb]:
        t.retain_grad()
    loss.backward()
    lines.append("## loss")
    lines.append(f32_line(loss.item()))
    named = [("logprobs", logprobs), ("probs", probs),
             ("counts_sum_inv", counts_sum_inv), ("counts_sum", counts_sum),
             ("counts", counts), ("norm_logits", norm_logits),
             ("logit_maxes", logit_maxes), ("logits", logits), ("h", h),
             ("W2", W2), ("b2", b2), ("hpreact", hpreact),
             ("bngain", bngain), ("bnbias", bnbias), ("bnraw", bnraw),
             ("bnvar_inv", bnvar_inv), ("bnvar", bnvar),
             ("bndiff2", bndiff2), ("bndiff", bndiff), ("bnmeani", bnmeani),
             ("hprebn", hprebn), ("embcat", embcat), ("W1", W1), ("b1", b1),
             ("emb", emb), ("C", C)]
    for name, t in named:
        shape = ",".join(str(s) for s in t.grad.shape)
        lines.append(f"## grad {name} {shape}")
        lines.extend(repr(v) for v in checksums(t.grad))


def exercise4(lines, Xtr, Ytr, vocab_size, block_size):
    g, parameters = init(vocab_size, block_size, 200)
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    lines.append("## exercise 4 parameters")
    lines.append(str(sum(p.nelement() for p in parameters)))
    batch_size = 32
    n = batch_size
    lines.append("## exercise 4 losses")
    with torch.no_grad():
        for i in range(TRAIN_STEPS):
            ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
            Xb, Yb = Xtr[ix], Ytr[ix]
            emb = C[Xb]
            embcat = emb.view(emb.shape[0], -1)
            hprebn = embcat @ W1 + b1
            bnmean = hprebn.mean(0, keepdim=True)
            bnvar = hprebn.var(0, keepdim=True, unbiased=True)
            bnvar_inv = (bnvar + 1e-5)**-0.5
            bnraw = (hprebn - bnmean) * bnvar_inv
            hpreact = bngain * bnraw + bnbias
            h = torch.tanh(hpreact)
            logits = h @ W2 + b2
            loss = F.cross_entropy(logits, Yb)
            dlogits = F.softmax(logits, 1)
            dlogits[range(n), Yb] -= 1
            dlogits /= n
            dh = dlogits @ W2.T
            dW2 = h.T @ dlogits
            db2 = dlogits.sum(0)
            dhpreact = (1.0 - h**2) * dh
            dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
            dbnbias = dhpreact.sum(0, keepdim=True)
            dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))
            dembcat = dhprebn @ W1.T
            dW1 = embcat.T @ dhprebn
            db1 = dhprebn.sum(0)
            demb = dembcat.view(emb.shape)
            dC = torch.zeros_like(C)
            for k in range(Xb.shape[0]):
                for j in range(Xb.shape[1]):
                    ix = Xb[k, j]
                    dC[ix] += demb[k, j]
            grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
            lr = 0.1 if i < 100000 else 0.01
            for p, grad in zip(parameters, grads):
                p.data += -lr * grad
            lines.append(f32_line(loss.item()))


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        here.parent.parent / "tests" / "reference" / "torch-makemore-part4.txt"
    torch.set_num_threads(1)  # one summation order for the float32 matmuls
    Xtr, Ytr, vocab_size, block_size = load()
    lines = [f"# Written by scripts/reference/torch_makemore_part4.py with torch {torch.__version__}"]
    exercise1(lines, Xtr, Ytr, vocab_size, block_size)
    exercise4(lines, Xtr, Ytr, vocab_size, block_size)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
