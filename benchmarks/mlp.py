"""The chapter-8 MLP (examples/mlp.py): forward loss vs derivo's gradient vs a hand-written backprop,
and autograd and JAX when they are installed.

    python benchmarks/mlp.py [rounds]     # 7 rounds by default

Two sizes: (in 100, hidden 200, out 10, batch 64), where the matrix products dominate, and
(3, 4, 2, batch 1), where per-call overhead dominates.  Every gradient is checked against the
hand-written one (and that one against central differences) before anything is timed.  Times are
per call, in microseconds, min / median over interleaved rounds in one process.
"""
import os

# One thread each, before NumPy (or JAX) is imported: on a 2-core machine a multi-threaded BLAS
# made a 200x100x64 matmul take 8 ms instead of 0.09 ms.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.join(_HERE, "..")]

from _timing import interleaved  # noqa: E402
from examples.mlp import loss, loss_grad, problem  # noqa: E402

SIZES = [(100, 200, 10, 64), (3, 4, 2, 1)]


def loss_grad_hand(A1, b1, A2, b2, X, Y):
    """Backpropagation written by hand: one forward sweep keeping what the backward sweep needs."""
    z1 = X @ A1.T
    z1 += b1
    e1 = np.exp(z1)
    s1 = np.log1p(e1)
    s2 = s1 @ A2.T
    s2 += b2
    r = s2 - Y
    # loss = 0.5 * sum(r * r) / n, so d loss / d s2 = r / n
    g2 = r * (1.0 / X.shape[0])
    gA2 = g2.T @ s1
    gb2 = g2.sum(axis=0)
    g1 = g2 @ A2
    g1 *= e1 / (1.0 + e1)  # softplus'(z) = e^z / (1 + e^z)
    gA1 = g1.T @ X
    gb1 = g1.sum(axis=0)
    return gA1, gb1, gA2, gb2


def make_loss(xp):
    """examples.mlp.loss written against another NumPy (autograd.numpy, jax.numpy)."""
    def loss_xp(A1, b1, A2, b2, X, Y):
        s1 = xp.log1p(xp.exp(X @ A1.T + b1))
        s2 = s1 @ A2.T + b2
        r = s2 - Y
        return 0.5 * xp.sum(r * r) / X.shape[0]
    return loss_xp


_REPORTED = set()


def unavailable(name, err):
    if name not in _REPORTED:
        _REPORTED.add(name)
        print(f"{name}: n/a ({err})")


def autograd_candidates(args):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError as err:
        unavailable("autograd", err)
        return {}, {}
    f = make_loss(anp)
    assert abs(f(*args) - loss(*args)) <= 1e-12 * abs(loss(*args))
    return {"autograd": autograd.grad(f, argnum=(0, 1, 2, 3))}, {}


def jax_candidates(args):
    """jax.grad (op by op) and jax.jit(jax.grad) on arrays already on the device; the first call of
    the jitted function (trace + compile + run) is reported apart as its compile time."""
    try:
        import jax
    except ImportError as err:
        unavailable("jax", err)
        return {}, {}
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    f = make_loss(jnp)
    device_args = [jax.device_put(a) for a in args]
    grad = jax.grad(f, argnums=(0, 1, 2, 3))
    jitted = jax.jit(grad)
    start = time.perf_counter()
    jax.block_until_ready(jitted(*device_args))
    compile_ms = (time.perf_counter() - start) * 1e3

    def run_grad(*_):
        return jax.block_until_ready(grad(*device_args))

    def run_jit(*_):
        return jax.block_until_ready(jitted(*device_args))

    return {"jax.grad": run_grad, "jax.jit": run_jit}, {"jax.jit compile": compile_ms}


def central_difference_sample(args, index, count=12, h=1e-6, seed=0):
    """(positions, d loss / d args[index] at those positions) for a few random positions."""
    rng = np.random.default_rng(seed + index)
    x = args[index]
    positions = [tuple(int(rng.integers(n)) for n in x.shape) for _ in range(count)]
    values = []
    for position in positions:
        step = np.zeros(x.shape)
        step[position] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + step, x - step
        values.append((loss(*up) - loss(*down)) / (2 * h))
    return positions, np.array(values)


def check(args, grads):
    hand = loss_grad_hand(*args)
    for index, g in enumerate(hand):
        positions, fd = central_difference_sample(args, index)
        got = np.array([g[p] for p in positions])
        if not np.allclose(got, fd, rtol=1e-5, atol=1e-9):
            raise SystemExit(f"the hand-written gradient {index} disagrees with central differences")
    for name, fn in grads.items():
        for index, (g, h) in enumerate(zip(fn(*args), hand)):
            if np.shape(g) != np.shape(h) or not np.allclose(np.asarray(g), h, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"{name}: gradient {index} disagrees with the hand-written backprop")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"per call, microseconds: min / median over {rounds} interleaved rounds of ~50 ms "
          f"(one process, one BLAS thread); ratios of minima")
    for sizes in SIZES:
        n_in, n_hidden, n_out, batch = sizes
        args = problem(n_in, n_hidden, n_out, batch)
        grads = {"derivo": loss_grad, "hand": loss_grad_hand}
        extra, notes = autograd_candidates(args)
        grads.update(extra)
        extra, more_notes = jax_candidates(args)
        grads.update(extra)
        notes.update(more_notes)
        check(args, grads)
        times = interleaved({"forward": loss, **grads}, args, rounds=rounds)
        fwd = times["forward"][0]
        print()
        print(f"in {n_in}, hidden {n_hidden}, out {n_out}, batch {batch} "
              f"(all gradients agree with the hand-written backprop to 1e-9; it agrees with "
              f"central differences)")
        print(f"  {'':16s} {'min us':>10s} {'median us':>10s} {'/forward':>9s}")
        for name in ("forward", "derivo", "hand", "autograd", "jax.grad", "jax.jit"):
            if name in times:
                best, median = times[name]
                print(f"  {name:16s} {best:10.1f} {median:10.1f} {best / fwd:9.2f}")
            else:
                print(f"  {name:16s} {'n/a':>10s} {'n/a':>10s} {'n/a':>9s}")
        for name, ms in notes.items():
            print(f"  {name:16s} {ms:10.1f} ms (trace + compile + first call, once)")
        derivo_t, hand_t = times["derivo"][0], times["hand"][0]
        ratios = [("derivo/forward", derivo_t / fwd), ("hand/forward", hand_t / fwd),
                  ("derivo/hand", derivo_t / hand_t)]
        ratios.append(("derivo/autograd", derivo_t / times["autograd"][0] if "autograd" in times
                       else None))
        print("  " + "   ".join(f"{k} {'n/a' if v is None else f'{v:.2f}'}" for k, v in ratios))


if __name__ == "__main__":
    main()
