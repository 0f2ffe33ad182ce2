"""Writes tests/reference/makemore_part3_deep_torch.txt: the deeper network
of makemore part 3 (karpathy/nn-zero-to-hero, makemore_part3_bn.ipynb,
"SUMMARY + PYTORCHIFYING") run in PyTorch 1.13 for a short schedule, for
tests/examples/test_makemore_part3.c.

The lecture's classes (Linear, BatchNorm1d, Tanh) and cells, with STEPS
steps (the lecture breaks after 1001). Then, as the lecture: the
statistics of the last step's Tanh outputs and of their gradients, the
split losses in eval mode and 20 names from a generator seeded
2147483647 + 10. Run with a Python that has PyTorch 1.13 (Debian's
python3-torch), from anywhere:

    /usr/bin/python3 scripts/reference/torch_makemore_part3_deep.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy (and the name
does not start with gen_, so generate.py does not import it). One thread.
PyTorch's float32 matrix products go through the BLAS it was built with,
so on another machine or build the losses may differ from the committed
file in their last bits; the bounds in the test were measured against
the committed file, made with Debian 12's python3-torch on x86-64.

File format, one record per line (floats as their decimal repr and their
float32 bits):

    steps <n>
    params <n>
    loss <step> <repr> <bits>
    act <layer> <mean> <std> <saturation>   each as repr:bits
    grad <layer> <std>                      repr:bits
    split <name> <repr> <bits>
    sample <i> <name>
"""
import pathlib
import random
import struct
import sys

import torch
import torch.nn.functional as F

STEPS = 200


def bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def rb(v):
    return f"{v!r}:0x{bits(v):08x}"


class Linear:
    def __init__(self, fan_in, fan_out, g, bias=True):
        self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps = eps
        self.momentum = momentum
        self.training = True
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        if self.training:
            xmean = x.mean(0, keepdim=True)
            xvar = x.var(0, keepdim=True)
        else:
            xmean = self.running_mean
            xvar = self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


def main():
    torch.set_num_threads(1)
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    out_path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        root / "tests" / "reference" / "makemore_part3_deep_torch.txt"
    out = [f"steps {STEPS}"]

    words = open(root / "data" / "names.txt", "r").read().splitlines()
    chars = sorted(list(set(''.join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    vocab_size = len(itos)
    block_size = 3

    def build_dataset(words):
        X, Y = [], []
        for w in words:
            context = [0] * block_size
            for ch in w + '.':
                ix = stoi[ch]
                X.append(context)
                Y.append(ix)
                context = context[1:] + [ix]
        return torch.tensor(X), torch.tensor(Y)

    random.seed(42)
    random.shuffle(words)
    n1 = int(0.8 * len(words))
    n2 = int(0.9 * len(words))
    Xtr, Ytr = build_dataset(words[:n1])
    Xdev, Ydev = build_dataset(words[n1:n2])

    n_embd = 10
    n_hidden = 100
    g = torch.Generator().manual_seed(2147483647)
    C = torch.randn((vocab_size, n_embd), generator=g)
    layers = [
        Linear(n_embd * block_size, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, n_hidden, g, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, vocab_size, g, bias=False), BatchNorm1d(vocab_size),
    ]
    with torch.no_grad():
        layers[-1].gamma *= 0.1
        for layer in layers[:-1]:
            if isinstance(layer, Linear):
                layer.weight *= 1.0
    parameters = [C] + [p for layer in layers for p in layer.parameters()]
    out.append(f"params {sum(p.nelement() for p in parameters)}")
    for p in parameters:
        p.requires_grad = True

    batch_size = 32
    for i in range(STEPS):
        ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        emb = C[Xb]
        x = emb.view(emb.shape[0], -1)
        for layer in layers:
            x = layer(x)
        loss = F.cross_entropy(x, Yb)
        for layer in layers:
            layer.out.retain_grad()
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < 150000 else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        v = loss.item()
        out.append(f"loss {i} {v!r} 0x{bits(v):08x}")

    for i, layer in enumerate(layers[:-1]):
        if isinstance(layer, Tanh):
            t = layer.out
            out.append(f"act {i} {rb(t.mean().item())} {rb(t.std().item())} "
                       f"{rb((t.abs() > 0.97).float().mean().item())}")
    for i, layer in enumerate(layers[:-1]):
        if isinstance(layer, Tanh):
            out.append(f"grad {i} {rb(layer.out.grad.std().item())}")

    @torch.no_grad()
    def split_loss(x, y):
        emb = C[x]
        x = emb.view(emb.shape[0], -1)
        for layer in layers:
            x = layer(x)
        return F.cross_entropy(x, y).item()

    for layer in layers:
        layer.training = False
    for name, (x, y) in (("train", (Xtr, Ytr)), ("val", (Xdev, Ydev))):
        v = split_loss(x, y)
        out.append(f"split {name} {v!r} 0x{bits(v):08x}")

    g = torch.Generator().manual_seed(2147483647 + 10)
    for k in range(20):
        samples = []
        context = [0] * block_size
        while True:
            emb = C[torch.tensor([context])]
            x = emb.view(emb.shape[0], -1)
            for layer in layers:
                x = layer(x)
            probs = F.softmax(x, dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            samples.append(ix)
            if ix == 0:
                break
        out.append(f"sample {k} {''.join(itos[i] for i in samples)}")

    header = [f"# Written by scripts/reference/torch_makemore_part3_deep.py "
              f"with torch {torch.__version__}: {STEPS} steps"]
    out_path.write_text("\n".join(header + out) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
