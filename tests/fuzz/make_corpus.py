#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into tests/fuzz/corpus/.

Standard library only: the .npy files are written byte by byte as
numpy.save writes them (tensor/npy.c's header comment describes the
format), plus variants a reader must also accept and damaged files it must
refuse. Re-running the script rewrites the same bytes.

    python3 tests/fuzz/make_corpus.py [--out DIR]

corpus/npy/         whole .npy files for fuzz_npy
corpus/checkpoint/  records that rewrite files of the checkpoint that
                    fuzz_checkpoint saves (format: fuzz_checkpoint.c)
corpus/shapes/      programs for fuzz_shapes (format: fuzz_shapes.c)

Only the seeds made here are rewritten: inputs merged into corpus/ from a
fuzzing run (README.md) stay. This is not the regression set: inputs that
found bugs live in regressions/.
"""
import argparse
import os
import struct

# ------------------------------------------------------------------- .npy

FMT = {"<f4": "<f", "<f8": "<d", "<i8": "<q"}


def shape_repr(shape):
    if len(shape) == 1:
        return "(%d,)" % shape[0]
    return "(" + ", ".join(str(s) for s in shape) + ")"


def npy(descr, shape, values, version=1, fortran=False, growth=True,
        dict_text=None, data=None):
    """A .npy file as numpy.save writes it (version 1: u16 header length;
    2 and 3: u32), with the dict padded so the data starts at a multiple
    of 64. dict_text replaces the dict; data replaces the elements."""
    if dict_text is None:
        dict_text = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, "True" if fortran else "False", shape_repr(shape))
        if growth and shape:
            dict_text += " " * (21 - len(str(shape[0])))
    pre = 10 if version == 1 else 12
    header = dict_text.encode("latin-1")
    pad = 64 - (pre + len(header) + 1) % 64
    if pad == 64:
        pad = 0
    header += b" " * pad + b"\n"
    if version == 1:
        out = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header))
    else:
        out = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(header))
    out += header
    if data is None:
        data = b"".join(struct.pack(FMT[descr], v) for v in values)
    return out + data


def npy_seeds():
    inf, nan = float("inf"), float("nan")
    good = {
        "f4-2x3": npy("<f4", (2, 3), [0, 1.5, -2, 3.25, 1e-3, 7]),
        "f8-3": npy("<f8", (3,), [0.1, -0.2, 1e300]),
        "i8-scalar": npy("<i8", (), [42]),
        "f4-empty": npy("<f4", (0,), []),
        "f8-2x0x3": npy("<f8", (2, 0, 3), []),
        "i8-8dims": npy("<i8", (1,) * 8, [-7]),
        "f4-specials": npy("<f4", (5,), [inf, -inf, nan, -0.0, 1e-45]),
        "i8-extremes": npy("<i8", (2,), [-2**63, 2**63 - 1]),
        "f8-v2": npy("<f8", (2, 2), [1, 2, 3, 4], version=2),
        "f4-v3": npy("<f4", (1,), [9], version=3),
        "f8-numpy2-padding": npy("<f8", (2,), [1, 2], growth=False),
        "i8-keys-reordered": npy("<i8", (3,), [1, 2, 3], dict_text=(
            "{\"shape\": (3,), \"descr\": \"<i8\", \"fortran_order\": False}")),
        "f4-whitespace": npy("<f4", (1, 2), [1, 2], dict_text=(
            "{ 'descr' :'<f4',\t'fortran_order':False ,'shape':( 1 ,2 ,) }")),
        "f4-no-trailing-comma": npy("<f4", (2, 1), [1, 2], dict_text=(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1)}")),
    }
    ok = good["f4-2x3"]
    bad = {
        "bad-empty": b"",
        "bad-magic": b"\x93NUMPZ" + ok[6:],
        "bad-cut-in-magic": ok[:4],
        "bad-version": b"\x93NUMPY\x04\x00" + ok[8:],
        "bad-header-length": ok[:8] + b"\xff\xff" + ok[10:],
        "bad-truncated-data": ok[:-1],
        "bad-extra-data": ok + b"\x00" * 4,
        "bad-big-endian": npy("<f4", (1,), [1]).replace(b"<f4", b">f4"),
        "bad-bool-dtype": npy("<f4", (4,), [], data=b"\x01" * 4,
                              dict_text="{'descr': '|b1', 'fortran_order': "
                                        "False, 'shape': (4,), }"),
        "bad-fortran": npy("<f8", (2, 2), [1, 2, 3, 4], fortran=True),
        "bad-negative-size": npy("<f4", (), [], data=b"", dict_text=(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }")),
        "bad-nine-dims": npy("<f4", (1,) * 9, [1]),
        "bad-huge-size": npy("<f4", (), [], data=b"", dict_text=(
            "{'descr': '<f4', 'fortran_order': False, "
            "'shape': (0, 99999999999999999999), }")),
        "bad-overflowing-product": npy("<f4", (), [], data=b"", dict_text=(
            "{'descr': '<f4', 'fortran_order': False, "
            "'shape': (0, 4294967296, 4294967296), }")),
        "bad-missing-key": npy("<f4", (1,), [1], dict_text=(
            "{'descr': '<f4', 'shape': (1,), }")),
        "bad-extra-key": npy("<f4", (1,), [1], dict_text=(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
            "'x': 1, }")),
        "bad-duplicate-key": npy("<f4", (1,), [1], dict_text=(
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
            "'shape': (1,), }")),
        "bad-structured": npy("<f4", (1,), [1], dict_text=(
            "{'descr': [('a', '<f4')], 'fortran_order': False, "
            "'shape': (1,), }")),
        "bad-shape-not-tuple": npy("<f4", (3,), [1, 2, 3], dict_text=(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }")),
        "bad-unclosed-string": npy("<f4", (1,), [1], dict_text=(
            "{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }")),
    }
    return {**good, **bad}


# ------------------------------------------------------------- checkpoint

# fuzz_checkpoint's model, in the order of its files: parameters, then
# buffers (tg_module_named_parameters / named_buffers).
CKPT = [
    ("0.weight", "<f4", (4, 3)), ("0.bias", "<f4", (4,)),
    ("1.weight", "<f4", (4,)), ("1.bias", "<f4", (4,)),
    ("2.weight", "<f4", (2, 4)), ("2.bias", "<f4", (2,)),
    ("1.running_mean", "<f4", (4,)), ("1.running_var", "<f4", (4,)),
    ("1.num_batches_tracked", "<i8", ()),
]


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def valid_file(i, scale=1.0):
    _, descr, shape = CKPT[i]
    vals = [(k + 1) * scale for k in range(numel(shape))]
    if descr == "<i8":
        vals = [int(v) for v in vals]
    return npy(descr, shape, vals)


def write(i, payload):
    return bytes([i]) + struct.pack("<H", len(payload)) + payload


def checkpoint_seeds():
    every = b"".join(write(i, valid_file(i, 0.5)) for i in range(len(CKPT)))
    return {
        "unchanged": b"",
        "weight-new-values": write(0, valid_file(0, -2.0)),
        "counter-new-value": write(8, npy("<i8", (), [7])),
        "all-new-values": every,
        "bias-wrong-shape": write(1, npy("<f4", (5,), [1] * 5)),
        "weight-wrong-dtype": write(4, npy("<f8", (2, 4), [1] * 8)),
        "counter-as-float": write(8, npy("<f4", (), [3])),
        "last-file-truncated": write(7, valid_file(7)[:-3]),
        "remove-file": bytes([0x80 | 2]),
        "file-is-folder": bytes([0xc0 | 3]),
        "file-links-to-itself": bytes([0xe0 | 5]),
        "file-links-to-dev-zero": bytes([0xa0 | 6]),
        "file-is-fifo": bytes([0xd0 | 1]),
        "file-is-device": bytes([0xf0 | 8]),
        "good-then-fifo": write(0, valid_file(0, 3.0)) + bytes([0xd0 | 4]),
        "good-then-bad": write(0, valid_file(0, 3.0)) +
                         write(6, b"\x93NUMPY\x01\x00"),
        "written-twice": write(2, npy("<f4", (3,), [1, 2, 3])) +
                         write(2, valid_file(2, 4.0)),
    }


# ---------------------------------------------------------------- shapes

# Opcodes of fuzz_shapes.c (enum opcode).
(CREATE, RESHAPE, VIEW, PERMUTE, TRANSPOSE, SQUEEZE, SQUEEZE_ALL, UNSQUEEZE,
 EXPAND, BROADCAST_TO, NARROW, SLICE, SELECT, CONTIGUOUS, CLONE, TO_DTYPE,
 ADD, SUB, MUL, SUM, MEAN, MATMUL, DETACH, NO_GRAD, COPY_SLOT,
 RELEASE_SLOT) = range(26)
ZEROS, ONES, ARANGE, FROM_BYTES = range(4)
F32, F64, I64 = range(3)
GRAD = 0x10


def create(dst, kind, dtype, shape, grad=False, start=0, values=()):
    out = bytes([CREATE, kind | dtype << 2 | (GRAD if grad else 0), dst,
                 len(shape)]) + bytes(shape)
    if kind == ARANGE:
        out += bytes([start & 0xff])
    if kind == FROM_BYTES:
        out += bytes(v & 0xff for v in values)
    return out


def ops(op, dst, a=0, b=0):
    return bytes([op, dst | a << 2 | b << 4])


def size(s):
    """A size byte for reshape, view, expand: s in [-1, 6]."""
    return (s + 1) & 0xff


def shape_arg(*sizes):
    return bytes([len(sizes)] + [size(s) for s in sizes])


def dim(d, n):
    """A dim byte that means d for a tensor with n dims (n >= 1)."""
    return (d + n + 1) % (2 * n + 2)


def idx(v, size):
    """An index byte for narrow, slice, select that means v in a dim of
    the given size."""
    m = min(size, 6)
    return v + m + 2


def backward(slot):
    """The flags byte: end with a backward from the sum of slot."""
    return bytes([1 | slot << 1])


def shapes_seeds():
    plain = b"\x00"
    return {
        "broadcast-add-backward": backward(2) +
            create(0, ARANGE, F32, (2, 3), grad=True) +
            create(1, ARANGE, F32, (3,), grad=True, start=1) +
            ops(ADD, 2, 0, 1) + ops(MUL, 2, 2, 0),
        "matmul-transpose-backward": backward(3) +
            create(0, FROM_BYTES, F64, (3, 2), grad=True,
                   values=[1, -2, 3, 4, -5, 6]) +
            create(1, ARANGE, F64, (3, 4), grad=True) +
            ops(TRANSPOSE, 2, 0) + bytes([dim(0, 2), dim(1, 2)]) +
            ops(MATMUL, 3, 2, 1),
        "batched-matmul": backward(2) +
            create(0, ARANGE, F32, (2, 1, 3, 4), grad=True) +
            create(1, ARANGE, F32, (3, 4, 2), grad=True) +
            ops(MATMUL, 2, 0, 1),
        "reshape-view-of-transpose": plain +
            create(0, ARANGE, I64, (2, 3)) +
            ops(TRANSPOSE, 1, 0) + bytes([dim(0, 2), dim(1, 2)]) +
            ops(VIEW, 2, 1) + shape_arg(6) +
            ops(RESHAPE, 2, 1) + shape_arg(-1) +
            ops(VIEW, 3, 1) + shape_arg(3, 1, 2),
        "permute-contiguous": backward(3) +
            create(0, ARANGE, F32, (2, 3, 4), grad=True) +
            ops(PERMUTE, 1, 0) + bytes([0, dim(2, 3), dim(0, 3), dim(1, 3)]) +
            ops(CONTIGUOUS, 2, 1) + ops(SUM, 3, 2) + bytes([1, dim(1, 3)]),
        "expand-broadcast_to": backward(3) +
            create(0, ARANGE, F64, (3, 1), grad=True) +
            ops(EXPAND, 1, 0) + shape_arg(2, -1, 4) +
            ops(BROADCAST_TO, 2, 0) + shape_arg(3, 5) +
            ops(MUL, 3, 1, 0),
        "narrow-slice-select": backward(3) +
            create(0, ARANGE, F32, (5, 4), grad=True) +
            ops(NARROW, 1, 0) + bytes([dim(0, 2), idx(1, 5), idx(3, 5)]) +
            ops(SLICE, 2, 1) + bytes([dim(1, 2), idx(0, 4), idx(4, 4), 2]) +
            ops(SELECT, 3, 2) + bytes([dim(0, 2), idx(1, 3)]) +
            ops(ADD, 3, 3, 2),
        "squeeze-unsqueeze": plain +
            create(0, ONES, F64, (1, 3, 1)) +
            ops(SQUEEZE, 1, 0) + bytes([dim(0, 3)]) +
            ops(SQUEEZE_ALL, 2, 0) +
            ops(UNSQUEEZE, 3, 2) + bytes([dim(-1, 2)]),
        "sum-mean-keepdim": backward(3) +
            create(0, FROM_BYTES, F32, (2, 2), grad=True,
                   values=[1, 2, 3, -4]) +
            ops(MEAN, 1, 0) + bytes([1 | 4, dim(0, 2)]) +
            ops(SUM, 2, 0) + bytes([2, dim(0, 2), dim(1, 2)]) +
            ops(SUB, 3, 1, 2),
        "promotion-int-float": backward(3) +
            create(0, ARANGE, I64, (3,)) +
            create(1, FROM_BYTES, F32, (), grad=True, values=[6]) +
            create(2, ARANGE, F64, (2, 1)) +
            ops(MUL, 3, 0, 1) + ops(ADD, 3, 3, 2),
        "to_dtype-detach-no_grad": backward(1) +
            create(0, ARANGE, F32, (4,), grad=True) +
            ops(TO_DTYPE, 1, 0) + bytes([F64]) +
            ops(TO_DTYPE, 2, 0) + bytes([I64]) +
            ops(DETACH, 3, 0) +
            ops(NO_GRAD, 0) + ops(CLONE, 3, 1) + ops(NO_GRAD, 0x80) +
            ops(ADD, 1, 1, 3),
        "errors": plain +
            create(0, ARANGE, F32, (2, 3)) +
            create(1, ZEROS, I64, (4,)) +
            ops(ADD, 2, 0, 1) + ops(MATMUL, 2, 0, 0) +
            ops(MEAN, 2, 1) + bytes([0]) +
            ops(PERMUTE, 2, 0) + bytes([0, dim(0, 2), dim(0, 2)]) +
            ops(RESHAPE, 2, 0) + shape_arg(4, -1) +
            ops(SELECT, 2, 0) + bytes([dim(0, 2), idx(2, 2)]) +
            ops(SLICE, 2, 0) + bytes([dim(1, 2), idx(0, 3), idx(3, 3), 0]) +
            ops(UNSQUEEZE, 2, 0) + bytes([dim(3, 3)]),
        "null-arguments": plain + ops(ADD, 0, 1, 2) +
            ops(RESHAPE, 0, 1) + shape_arg(2) + ops(SUM, 0, 3) + bytes([0]),
        "empty-tensors": backward(2) +
            create(0, ZEROS, F32, (2, 0, 3), grad=True) +
            ops(SUM, 1, 0) + bytes([1, dim(2, 3)]) +
            ops(MEAN, 2, 0) + bytes([1, dim(1, 3)]) +
            ops(RESHAPE, 3, 0) + shape_arg(0, -1),
    }


# ----------------------------------------------------------------- main

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    args = ap.parse_args()
    for target, seeds in (("npy", npy_seeds()),
                          ("checkpoint", checkpoint_seeds()),
                          ("shapes", shapes_seeds())):
        folder = os.path.join(args.out, target)
        os.makedirs(folder, exist_ok=True) # merged inputs stay
        for name, data in sorted(seeds.items()):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print("%s: %d seeds" % (folder, len(seeds)))


if __name__ == "__main__":
    main()
