"""Reference values for tensor creation (tests/tensor/test_create.c)."""
import numpy as np


def generate(save):
    save("create_arange_f32", np.arange(-1.5, 2.0, 0.25, dtype=np.float64).astype(np.float32))
    save("create_arange_i64", np.arange(3, 20, 4, dtype=np.int64))
    save("create_linspace_f64", np.linspace(-2.0, 3.0, 11, dtype=np.float64))
    save("create_linspace_f32", np.linspace(0.0, 1.0, 7, dtype=np.float64).astype(np.float32))
    save("create_eye_f64", np.eye(3, 5, dtype=np.float64))
