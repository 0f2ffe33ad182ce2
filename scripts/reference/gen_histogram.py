"""NumPy references for tg_histogram (tests/autograd/test_histogram.c):
np.histogram(x, bins=n, density=...) with the range taken from the data,
which is what torch.histogram(x, bins=n, density=...) computes too.

NumPy's rules, which the C code follows:
  - the range is [x.min(), x.max()]; a constant x spans [x - 0.5, x + 0.5]
    (computed in float64); an empty x spans [0, 1];
  - edges = np.linspace(lo, hi, n + 1): i * ((hi - lo) / n) + lo in
    float64, rounded to x's dtype, the last edge exactly hi;
  - a value v is in bin i when edges[i] <= v < edges[i + 1], except that
    the last bin also takes v == edges[n];
  - density = count / width / numel, width = np.diff(edges) computed in
    x's dtype, so that sum(density * width) == 1.

Names written, for each case <c> of CASES:
  hist_<c>_x       the input, float32 or float64
  hist_<c>_counts  (n,) float64: counts, or the density (density cases)
  hist_<c>_edges   (n + 1,) float64: the edges (float32-valued for float32 x)
"""
import numpy as np


def on_edges(rng, lo, hi, bins, dtype):
    """Values that sit exactly on the edges NumPy computes for the range
    [lo, hi] in dtype, and one ulp either side of each: where an index
    computed as (v - lo) * bins / (hi - lo) can be one bin off."""
    edges = np.histogram(np.array([lo, hi], dtype), bins=bins)[1]
    inner = edges[1:-1]
    vals = np.concatenate([
        edges,
        np.nextafter(inner, dtype(np.inf)),
        np.nextafter(inner, dtype(-np.inf)),
    ]).astype(dtype)
    return rng.permutation(vals)


def generate(save):
    rng = np.random.default_rng(5150)
    # The histograms of makemore part 3: 100 bins with density, of float32
    # activations (tanh of a wide normal, so many values near +-1) and of
    # small float32 gradients.
    tanh_act = np.tanh(2.5 * rng.standard_normal((32, 40))).astype(np.float32)
    grads = (1e-3 * rng.standard_normal(600)).astype(np.float32)
    cases = [
        ("tanh_f32", tanh_act, 100, True),
        ("grad_f32", grads, 100, True),
        ("normal_f64", rng.standard_normal(500), 100, True),
        ("counts_f64", rng.uniform(-3.0, 5.0, 300), 17, False),
        # integers 0..10 in 5 bins: every value on an edge; 10 is the
        # right edge of the last bin, which includes it
        ("integers_f64", np.arange(11, dtype=np.float64), 5, False),
        ("on_edges_f32", on_edges(rng, -1.3, 2.7, 7, np.float32), 7, False),
        ("on_edges_density_f32",
         on_edges(rng, -0.37, 0.91, 13, np.float32), 13, True),
        ("on_edges_f64", on_edges(rng, -0.7, 2.9, 31, np.float64), 31, False),
        ("const_f32", np.full(6, 3.0, np.float32), 4, False),
        ("const_density_f64", np.full(5, -2.25), 10, True),
        ("single_f32", np.array([0.1], np.float32), 3, True),
        ("empty_f32", np.zeros(0, np.float32), 4, False),
    ]
    for name, x, bins, density in cases:
        with np.errstate(invalid="ignore"):  # the empty density is 0 / 0
            counts, edges = np.histogram(x, bins=bins, density=density)
        save(f"hist_{name}_x", x)
        save(f"hist_{name}_counts", counts.astype(np.float64))
        save(f"hist_{name}_edges", edges.astype(np.float64))
