"""NumPy references for the indexing ops (tests/autograd/test_index.c):
tg_index_select, tg_index (x[idx]), tg_gather and tg_one_hot, forward
and backward.

NumPy's own indexing is the reference, written independently of the C
loops:
  - index_select(x, dim, idx) = np.take(x, idx, axis=dim);
  - index(x, idx)             = x[idx] (NumPy, like PyTorch, counts a
                                 negative index from the end);
  - gather(x, dim, idx)       = x[i0, ..., idx, ..., ik] with the other
                                 coordinates from np.indices(idx.shape)
                                 (np.take_along_axis needs idx as large as
                                 x in the other dims; gather does not);
  - one_hot(idx, C)           = idx[..., None] == np.arange(C).
Each gradient is np.add.at into zeros (unbuffered, so a repeated index
adds every time) of the upstream gradient g at the same coordinates: the
index_add and scatter_add of the C backwards. Sums are taken in float64
and rounded once to float32 for the float32 cases; the test allows a few
float32 ulps where an element received several additions.

Names written, for each case <c> of CASES:
  index_<c>_x    the input (float32 or float64)
  index_<c>_idx  int64 indices
  index_<c>_g    the upstream gradient, out's shape, x's dtype
  index_<c>_out  the forward
  index_<c>_dx   the gradient of sum(out * g) with respect to x
and for one_hot: index_onehot_<c>_idx, index_onehot_<c>_out.
"""
import numpy as np


def take_coords(idx, dim):
    """The coordinates in x of every element of gather's output."""
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    return tuple(coords)


def index_select(x, dim, idx):
    return np.take(x, idx, axis=dim)


def index_select_grad(x, dim, idx, g):
    dx = np.zeros(x.shape, np.float64)
    lead = (slice(None),) * dim
    np.add.at(dx, lead + (idx,), g.astype(np.float64))
    return dx


def index(x, idx):
    return x[idx]


def index_grad(x, idx, g):
    dx = np.zeros(x.shape, np.float64)
    np.add.at(dx, idx, g.astype(np.float64))
    return dx


def gather(x, dim, idx):
    return x[take_coords(idx, dim)]


def gather_grad(x, dim, idx, g):
    dx = np.zeros(x.shape, np.float64)
    np.add.at(dx, take_coords(idx, dim), g.astype(np.float64))
    return dx


def generate(save):
    rng = np.random.default_rng(2718)

    def case(name, x, idx, out, grad_fn):
        g = rng.standard_normal(out.shape).astype(x.dtype)
        save(f"index_{name}_x", x)
        save(f"index_{name}_idx", idx.astype(np.int64))
        save(f"index_{name}_g", g)
        save(f"index_{name}_out", out)
        save(f"index_{name}_dx", grad_fn(g).astype(x.dtype))

    # index_select: repeated, out-of-order rows; a middle dim; dim -1
    x = rng.standard_normal((6, 4))
    idx = np.array([5, 0, 5, 2, 5, 3])
    case("select0_f64", x, idx, index_select(x, 0, idx),
         lambda g: index_select_grad(x, 0, idx, g))
    x1 = rng.standard_normal((3, 5, 2)).astype(np.float32)
    idx1 = np.array([4, 4, 1, 0, 4])
    case("select1_f32", x1, idx1, index_select(x1, 1, idx1),
         lambda g: index_select_grad(x1, 1, idx1, g))
    x2 = rng.standard_normal((4, 3))
    idx2 = np.array([2, 0])
    case("select_last_f64", x2, idx2, index_select(x2, 1, idx2),
         lambda g: index_select_grad(x2, 1, idx2, g))

    # x[idx]: makemore's C[Xb], a (27, 10) table and (32, 3) contexts, and
    # negative indices
    table = rng.standard_normal((27, 10)).astype(np.float32)
    xb = rng.integers(0, 27, (32, 3))
    case("emb_f32", table, xb, index(table, xb),
         lambda g: index_grad(table, xb, g))
    x3 = rng.standard_normal((5, 3))
    idx3 = np.array([[-1, 0], [4, -5], [-1, -1]])
    case("negative_f64", x3, idx3, index(x3, idx3),
         lambda g: index_grad(x3, idx3, g))

    # gather: logprobs[range(n), Yb] as gather(logprobs, 1, Yb[:, None]);
    # along dim 0 with idx smaller than x; a 3-D x with idx longer than x
    # in dim 1 and narrower in dim 2
    # (values below 0 like log-probabilities; which ones does not matter)
    logprobs = -np.abs(rng.standard_normal((32, 27))).astype(np.float32)
    yb = rng.integers(0, 27, (32, 1))
    case("logprobs_f32", logprobs, yb, gather(logprobs, 1, yb),
         lambda g: gather_grad(logprobs, 1, yb, g))
    x4 = rng.standard_normal((4, 5))
    idx4 = rng.integers(0, 4, (3, 5))
    case("gather0_f64", x4, idx4, gather(x4, 0, idx4),
         lambda g: gather_grad(x4, 0, idx4, g))
    x5 = rng.standard_normal((2, 3, 4))
    idx5 = rng.integers(0, 3, (2, 5, 3))
    case("gather3d_f64", x5, idx5, gather(x5, 1, idx5),
         lambda g: gather_grad(x5, 1, idx5, g))

    # one_hot: 27 classes for a (4, 3) batch of contexts, and num_classes
    # -1 (max + 1) on a 1-D idx
    for name, idx, classes in [
        ("ctx", rng.integers(0, 27, (4, 3)), 27),
        ("infer", np.array([3, 0, 5, 3]), None),
    ]:
        c = idx.max() + 1 if classes is None else classes
        save(f"index_onehot_{name}_idx", idx.astype(np.int64))
        save(f"index_onehot_{name}_out",
             (idx[..., None] == np.arange(c)).astype(np.int64))
