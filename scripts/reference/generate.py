"""Writes the NumPy reference fixtures that the C tests compare against.

Each module next to this file named gen_<area>.py defines
`generate(save)`, where save(name, array) writes tests/reference/<name>.npy.
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

    for path in sorted(here.glob("gen_*.py")):
        module = importlib.import_module(path.stem)
        module.generate(save)
    print(f"wrote {len(written)} reference arrays to {os.path.relpath(out)}")


if __name__ == "__main__":
    main()
