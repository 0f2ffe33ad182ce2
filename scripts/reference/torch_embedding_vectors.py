"""Writes tests/reference/torch-embedding-vectors.txt: the initial weights
of torch.nn.Embedding after torch.manual_seed, bit for bit, for
tests/nn/test_embedding.c.

nn.Embedding's reset_parameters calls init.normal_(self.weight): N(0, 1)
drawn from the default generator into the (num_embeddings, embedding_dim)
weight, row by row. Fewer than 16 elements take PyTorch's scalar
Box-Muller path (which caches the second value of a pair on the
generator), 16 or more its 16-wide fill path (SEMANTICS.md section 5), so
the cases cover both, a tail that is redrawn, and the generator's state
after the layer (a randn drawn next). Run with a Python that has PyTorch
1.13 (Debian's python3-torch):

    /usr/bin/python3 scripts/reference/torch_embedding_vectors.py [out_file]

Not part of scripts/gen-reference.sh, which needs only NumPy.

File format: a line "## <title>", then one line per float32 value (C
order): its decimal repr and its bits as 0x%08x.
"""
import pathlib
import struct
import sys

import torch


def cases():
    torch.manual_seed(42)
    yield "manual_seed(42); nn.Embedding(3, 3).weight", torch.nn.Embedding(3, 3).weight
    yield "... then randn(1)  [the cached sample of the odd count]", torch.randn(1)
    torch.manual_seed(0)
    yield "manual_seed(0); nn.Embedding(5, 4).weight", torch.nn.Embedding(5, 4).weight
    torch.manual_seed(2147483647)
    yield "manual_seed(2147483647); nn.Embedding(27, 10).weight", torch.nn.Embedding(27, 10).weight
    yield "... then randn(2)", torch.randn(2)


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        here.parent.parent / "tests" / "reference" / "torch-embedding-vectors.txt"
    lines = [f"# Written by scripts/reference/torch_embedding_vectors.py with torch {torch.__version__}"]
    for title, t in cases():
        lines.append(f"## {title}")
        for v in t.detach().reshape(-1).tolist():
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            lines.append(f"{v!r:>24} 0x{bits:08x}")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
