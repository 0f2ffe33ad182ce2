"""Writes the NumPy reference fixtures that the C tests compare against.

Each module next to this file named gen_<area>.py defines
`generate(save)`, where save(name, array) writes tests/reference/<name>.npy
and save.file(name, array, version) writes any array exactly as NumPy's
format writer does (for the files the reader must reject).
Arrays are written with their dtype as given (float32, float64 or int64),
C order, NumPy's .npy format 1.0. Every module seeds its own generator, so
the output is deterministic.
"""
import importlib
import os
import pathlib
import sys

import numpy as np


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    here = pathlib.Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    written = []

    def save(name, array):
        array = np.asarray(array, order="C")  # keeps 0-d arrays 0-d
        assert array.dtype in (np.float32, np.float64, np.int64), (name, array.dtype)
        assert name not in written, f"{name} written twice"
        np.save(out / f"{name}.npy", array, allow_pickle=False)
        written.append(name)

    def save_file(name, array, version=None):
        """Any array as NumPy writes it, with a chosen header version: for the
        files the .npy reader must read or reject (other dtypes, big-endian,
        Fortran order, format 2.0 and 3.0)."""
        assert name not in written, f"{name} written twice"
        with open(out / f"{name}.npy", "wb") as f:
            np.lib.format.write_array(f, array, version=version, allow_pickle=False)
        written.append(name)

    save.file = save_file

    for path in sorted(here.glob("gen_*.py")):
        module = importlib.import_module(path.stem)
        module.generate(save)
    print(f"wrote {len(written)} reference arrays to {os.path.relpath(out)}")


if __name__ == "__main__":
    main()
