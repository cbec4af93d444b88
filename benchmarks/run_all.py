"""Every derivo benchmark in one process, in one table, against the targets of issue 4.

    python benchmarks/run_all.py            # the full suite (a few minutes)
    python benchmarks/run_all.py --quick    # a smoke test: few, short rounds

For each workload it times the forward function, derivo's gradient, a hand-written adjoint
(a stack in a list, no helper calls), and autograd and JAX (jax.grad op by op, and
jax.jit(jax.grad) with its compile time reported apart) when they can be imported, side by
side; with numba installed, the scalar workloads also time the forward compiled by
numba.njit and derivo's gradient with backend="numba" (its compile time apart), and a
pendulum of 1e5 steps: every round times every candidate once (min and median over the rounds).  Before
anything is timed, every gradient must agree with the hand-written one, and the hand-written
one with central differences.  Then: derivo's transformation time on first use (a cache
miss, on a fresh copy of each example's source file), the per-call overhead of a cached
`Derivative` over its generated function, and `python -X importtime -c "import derivo"`.
"""
import os

# One thread each, before NumPy (or JAX) is imported: on a 2-core machine a multi-threaded BLAS
# made a 200x100x64 matmul take 8 ms instead of 0.09 ms.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse  # noqa: E402
import ast  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:0] = [_HERE, _ROOT]

import derivo  # noqa: E402
from _timing import call_timer  # noqa: E402  (benchmarks/_timing.py)
import bessel as bench_bessel  # noqa: E402  (benchmarks/bessel.py: the hand adjoint and its checks)
import gp as bench_gp  # noqa: E402  (benchmarks/gp.py)
import loops as bench_loops  # noqa: E402  (benchmarks/loops.py: the checkpoint rows)
import mlp as bench_mlp  # noqa: E402  (benchmarks/mlp.py)
import pendulum as bench_pendulum  # noqa: E402  (benchmarks/pendulum.py)
import softmax as bench_softmax  # noqa: E402  (benchmarks/softmax.py: needs SciPy)
from examples import bessel as ex_bessel  # noqa: E402
from examples import gaussian_process as ex_gp  # noqa: E402
from examples import horner as ex_horner  # noqa: E402
from examples import mlp as ex_mlp  # noqa: E402
from examples import pendulum as ex_pendulum  # noqa: E402
from examples import rnn as ex_rnn  # noqa: E402
from examples import seed004 as ex_seed004  # noqa: E402

SLOW_CALL = 0.25      # seconds: a candidate slower than this per call is timed in fewer rounds
SLOW_ROUNDS = 3


# --------------------------------------------------------------------------------------------
# Hand-written adjoints missing from the other benchmark files (Bessel, pendulum and MLP ones are
# imported from benchmarks/bessel.py, pendulum.py and mlp.py).

def f_grad_hand(x1, x2):
    """(df/dx1, df/dx2) of examples.seed004.f = log(x1) + x1*x2 - sin(x2)."""
    return 1.0 / x1 + x2, x1 - math.cos(x2)


def horner_grad_hand(coefficients, x):
    """(d p / d coefficients, d p / d x) of examples.horner.horner: keep each trip's value in a
    list, then walk the coefficients backwards."""
    n = len(coefficients)
    before = [0.0] * n
    value = 0.0
    for k in range(n):
        before[k] = value
        value = value * x + coefficients[k]
    bcoefficients = [0.0] * n
    bx = 0.0
    bvalue = 1.0
    for k in range(n - 1, -1, -1):
        bcoefficients[k] = bvalue
        bx += bvalue * before[k]
        bvalue = bvalue * x
    return bcoefficients, bx


def rnn_grad_hand(W, U, b, V, c, h0, xs, target):
    """Backpropagation through time for examples.rnn.rnn_loss: push h before each step overwrites it."""
    steps = xs.shape[0]
    stack = []
    push = stack.append
    h = h0
    for t in range(steps):
        push(h)
        h = np.tanh(W @ h + U @ xs[t] + b)
    r = V @ h + c - target
    # loss = 0.5 * sum(r * r): d loss / d y = r
    gV = np.outer(r, h)
    gc = r
    gh = r @ V
    gW = np.zeros_like(W)
    gU = np.zeros_like(U)
    gb = np.zeros_like(b)
    pop = stack.pop
    for t in range(steps - 1, -1, -1):
        ga = gh * (1.0 - h * h)  # h is this step's output, tanh' = 1 - tanh^2
        h = pop()                # the step's input h_{t-1}
        gW += np.outer(ga, h)
        gU += np.outer(ga, xs[t])
        gb += ga
        gh = ga @ W
    return gW, gU, gb, gV, gc, gh


# --------------------------------------------------------------------------------------------
# The workloads written against autograd.numpy / jax.numpy (same arithmetic as the examples).

def make_f(xp):
    def f(x1, x2):
        return xp.log(x1) + x1 * x2 - xp.sin(x2)
    return f


def make_simulate(xp):
    def accel(theta, omega, damping):
        return -xp.sin(theta) - damping * omega

    def simulate(damping, theta0, steps=1000, dt=0.01):
        theta = theta0
        omega = 0.0
        for _ in range(steps):
            omega += dt * accel(theta, omega, damping)
            theta += dt * omega
        return theta * theta + 0.1 * omega * omega
    return simulate


def make_rnn_loss(xp):
    def rnn_loss(W, U, b, V, c, h0, xs, target):
        h = h0
        for t in range(xs.shape[0]):
            h = xp.tanh(W @ h + U @ xs[t] + b)
        y = V @ h + c
        r = y - target
        return 0.5 * xp.sum(r * r)
    return rnn_loss


def besselj_fixed_trips(v, z, trips):
    """J_v(z) with the trip count given (static under jax.jit): JAX cannot reverse a while_loop
    with a data-dependent exit."""
    s = (z / 2) ** v / math.factorial(v)
    out = s
    for k in range(1, trips + 1):
        s *= (-1) / k / (k + v) * (z / 2) ** 2
        out += s
    return out


def simulate_fori(jnp, lax):
    def simulate(damping, theta0, steps, dt):
        def body(_, state):
            theta, omega = state
            omega = omega + dt * (-jnp.sin(theta) - damping * omega)
            return theta + dt * omega, omega
        theta, omega = lax.fori_loop(0, steps, body, (theta0, jnp.zeros_like(theta0)))
        return theta * theta + 0.1 * omega * omega
    return simulate


# --------------------------------------------------------------------------------------------
# Optional competitors.

class Competitors:
    """autograd and jax if they import (and are not excluded); the reason otherwise."""

    def __init__(self, without):
        self.autograd = self.anp = self.jax = self.jnp = self.lax = self.numba = None
        self.why = {}
        if "numba" in without:
            self.why["numba"] = "excluded by --without"
        else:
            try:
                import numba
                self.numba = numba
            except ImportError as err:
                self.why["numba"] = str(err)
        if "autograd" in without:
            self.why["autograd"] = "excluded by --without"
        else:
            try:
                import autograd
                import autograd.numpy as anp
                self.autograd, self.anp = autograd, anp
            except ImportError as err:
                self.why["autograd"] = str(err)
        if "jax" in without:
            self.why["jax"] = "excluded by --without"
        else:
            try:
                import jax
                jax.config.update("jax_enable_x64", True)
                import jax.numpy as jnp
                from jax import lax
                self.jax, self.jnp, self.lax = jax, jnp, lax
            except ImportError as err:
                self.why["jax"] = str(err)

    def versions(self):
        out = []
        for name in ("autograd", "jax", "numba"):
            module = getattr(self, name)
            if module is None:
                out.append(f"{name} n/a")
            else:
                version = getattr(module, "__version__", None)
                if version is None:
                    try:
                        from importlib.metadata import version as dist_version
                        version = dist_version(name)
                    except Exception:
                        version = "?"
                out.append(f"{name} {version}")
        return out


class Candidate:
    """One timed callable: fn(a0, a1, ...) per call (see _timing.call_timer); `scale`
    multiplies its time (extrapolation)."""

    def __init__(self, fn, args, scale=1.0, reference=None):
        self.fn = fn
        self.args = tuple(args)
        self.scale = scale
        # reference() is the gradient fn(*args) must give; None: the workload's hand adjoint.
        self.reference = reference


class Workload:
    def __init__(self, key, label, forward, args, hand, derivo_grad, fd_check, rtol=1e-9):
        self.key = key
        self.label = label
        self.args = tuple(args)
        self.hand = hand
        self.candidates = {"forward": Candidate(forward, args),
                           "derivo": Candidate(derivo_grad, args),
                           # derivo's generated function called directly: the code without the
                           # Derivative wrapper's call overhead
                           "generated": Candidate(derivo_grad.derivo_function, args),
                           "hand": Candidate(hand, args)}
        self.fd_check = fd_check
        self.rtol = rtol
        self.notes = {}      # candidate -> text for the note column (compile times, ...)
        self.missing = {}    # candidate -> why it is n/a


# --------------------------------------------------------------------------------------------
# Checks.

def as_arrays(result):
    if isinstance(result, (tuple, list)):
        return [np.asarray(r, dtype=float) for r in result]
    return [np.asarray(result, dtype=float)]


def agree(got, expected, rtol):
    got, expected = as_arrays(got), as_arrays(expected)
    if len(got) != len(expected):
        return f"{len(got)} gradients, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if g.shape != e.shape:
            return f"gradient {i} has shape {g.shape}, expected {e.shape}"
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        if not np.allclose(g, e, rtol=rtol, atol=rtol * scale):
            worst = float(np.max(np.abs(g - e))) / max(scale, 1e-300)
            return f"gradient {i} differs by {worst:.1e} (relative to its largest entry)"
    return None


def five_point(f, args, index, position=None, h=1e-3):
    """d f / d args[index] (at `position` if it is an array) by the five-point central stencil."""
    def at(offset):
        shifted = list(args)
        if position is None:
            shifted[index] = args[index] + offset
        else:
            x = np.array(args[index], dtype=float)
            x[position] += offset
            shifted[index] = x
        return f(*shifted)
    return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)


def fd_check_sampled(f, wrt_indices, h, rtol, count=8, seed=0):
    """A checker: the hand gradient against five-point differences at a few positions of each array."""
    def check(args, hand):
        rng = np.random.default_rng(seed)
        for index, g in zip(wrt_indices, as_arrays(hand)):
            x = args[index]
            if np.ndim(x) == 0:
                pairs = [(None, float(g))]
            else:
                positions = {tuple(int(rng.integers(n)) for n in np.shape(x)) for _ in range(count)}
                pairs = [(p, float(g[p])) for p in sorted(positions)]
            for position, expected in pairs:
                fd = five_point(f, args, index, position, h)
                if abs(fd - expected) > rtol * max(abs(fd), 1e-3 * float(np.max(np.abs(g)))):
                    return (f"hand gradient of argument {index} at {position}: {expected!r}, "
                            f"central difference {fd!r}")
        return None
    return check


def check_workload(w):
    """Raise SystemExit unless the hand gradient matches finite differences and every candidate
    matches the hand gradient."""
    hand = w.hand(*w.args)
    problem = w.fd_check(w.args, hand)
    if problem:
        raise SystemExit(f"{w.label}: {problem}")
    for name, c in w.candidates.items():
        got = c.fn(*c.args)
        if name in ("forward", "numba fwd"):
            continue
        reference = c.reference() if c.reference is not None else hand
        problem = agree(got, reference, w.rtol)
        if problem:
            raise SystemExit(f"{w.label}: {name} disagrees with the hand-written adjoint: {problem}")


# --------------------------------------------------------------------------------------------
# Timing.

def calibrate(timer, target):
    """(calls per sample so that a sample takes about `target` s, seconds of one call)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target / 10 or elapsed >= SLOW_CALL:
            return max(1, round(number * target / elapsed)), elapsed / number
        number *= 10


def interleaved(candidates, rounds, target):
    """{name: (min, median, samples)} per-call seconds; each round times every candidate once.

    A candidate slower than SLOW_CALL per call is timed one call at a time, in SLOW_ROUNDS
    rounds spread over the run (its calibration call is its first sample)."""
    timers, numbers, plans, samples = {}, {}, {}, {}
    for name, c in candidates.items():
        timers[name] = call_timer(c.fn, c.args)
        samples[name] = []
        numbers[name], one_call = calibrate(timers[name], target)
        if one_call >= SLOW_CALL:
            numbers[name] = 1
            samples[name].append(one_call * c.scale)
            extra = min(rounds, SLOW_ROUNDS) - 1
            plans[name] = {round(i * (rounds - 1) / max(extra, 1)) for i in range(1, extra + 1)} if extra else set()
        else:
            plans[name] = set(range(rounds))
    names = list(candidates)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            if r in plans[name]:
                n = numbers[name]
                samples[name].append(timers[name].timeit(n) / n * candidates[name].scale)
    return {name: (min(s), statistics.median(s), len(s)) for name, s in samples.items()}


def fmt_time(seconds):
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= factor or unit == "ns":
            v = seconds / factor
            digits = 0 if v >= 100 else 1 if v >= 10 else 2
            return f"{sign}{v:.{digits}f} {unit}"


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.0f}" if r >= 100 else f"{r:.1f}" if r >= 10 else f"{r:.2f}"


# --------------------------------------------------------------------------------------------
# The workloads.

def add_autograd(w, opt, f, argnum, args=None, note="", scale=1.0):
    if opt.autograd is None:
        w.missing["autograd"] = opt.why["autograd"]
        return
    grad = opt.autograd.grad(f, argnum)
    reference = None if args is None else (lambda: w.hand(*args))
    args = w.args if args is None else args
    w.candidates["autograd"] = Candidate(grad, args, scale=scale, reference=reference)
    if note:
        w.notes["autograd"] = note


def add_jax(w, opt, eager_f, jit_f, argnums, static=(), eager_args=None, jit_args=None,
            eager_scale=1.0, eager_note="", jit_note=""):
    """jax.grad (eager, op by op) of eager_f and jax.jit(jax.grad) of jit_f, on device arrays;
    the jitted function's first call (trace + compile + run) is its compile time."""
    if opt.jax is None:
        w.missing["jax.grad"] = w.missing["jax.jit"] = opt.why["jax"]
        return
    jax = opt.jax

    def on_device(args):
        return tuple(a if i in static else jax.device_put(np.asarray(a, dtype=float) if isinstance(a, float) else a)
                     for i, a in enumerate(args))

    eager_reference = None if eager_args is None else (lambda host=eager_args: w.hand(*host))
    eager_args = on_device(w.args if eager_args is None else eager_args)
    jit_args = on_device(w.args if jit_args is None else jit_args)
    eager = jax.grad(eager_f, argnums=argnums)
    jitted = jax.jit(jax.grad(jit_f, argnums=argnums), static_argnums=static)

    def run_eager(*args):
        return jax.block_until_ready(eager(*args))

    def run_jit(*args):
        return jax.block_until_ready(jitted(*args))

    start = time.perf_counter()
    run_jit(*jit_args)
    compile_seconds = time.perf_counter() - start
    w.candidates["jax.grad"] = Candidate(run_eager, eager_args, scale=eager_scale,
                                         reference=eager_reference)
    w.candidates["jax.jit"] = Candidate(run_jit, jit_args)
    if eager_note:
        w.notes["jax.grad"] = eager_note
    w.notes["jax.jit"] = f"compile {fmt_time(compile_seconds)}" + (f"; {jit_note}" if jit_note else "")


def numba_forward(numba, f):
    """``f`` compiled by numba.njit, with the user functions it calls compiled too (and
    math.factorial, which numba does not have, given derivo's implementation)."""
    derivo.numba_backend.require()
    scope = dict(f.__globals__)
    for name in f.__code__.co_names:
        if isinstance(scope.get(name), types.FunctionType):
            scope[name] = numba.njit(scope[name])
    return numba.njit(types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__))


def add_numba(w, opt, forward, wrt):
    """The forward function compiled by numba ("numba fwd") and derivo's gradient with
    backend="numba" ("numba"); each first call (derivo's: transform and compile) is its
    compile time."""
    if opt.numba is None:
        w.missing["numba fwd"] = w.missing["numba"] = opt.why["numba"]
        return
    compiled = numba_forward(opt.numba, forward)
    start = time.perf_counter()
    compiled(*w.args)
    forward_seconds = time.perf_counter() - start
    start = time.perf_counter()
    gradient = derivo.grad(forward, wrt=wrt, backend="numba")
    gradient(*w.args)
    gradient_seconds = time.perf_counter() - start
    w.candidates["numba fwd"] = Candidate(compiled, w.args)
    w.candidates["numba"] = Candidate(gradient, w.args)
    w.notes["numba fwd"] = f"compile {fmt_time(forward_seconds)}"
    w.notes["numba"] = f"transform + compile {fmt_time(gradient_seconds)}"


def bessel_workloads(opt):
    out = []
    v = 2
    for z in (1.0, 10.0):
        trips = bench_bessel.trip_count(v, z)

        def fd_check(args, hand):
            expected = bench_bessel.central_difference(*args)
            if abs(hand - expected) > 1e-7 * abs(expected):
                return f"hand adjoint {hand!r}, central difference {expected!r}"
            return None

        w = Workload(f"bessel{z:g}", f"Bessel J_2'(z), z={z:g} ({trips} iterations)",
                     ex_bessel.besselj, (v, z), bench_bessel.besselj_grad_hand,
                     ex_bessel.besselj_grad, fd_check)
        add_autograd(w, opt, ex_bessel.besselj, 1)
        add_jax(w, opt, ex_bessel.besselj, besselj_fixed_trips, 1, static=(0, 2),
                jit_args=(v, z, trips), jit_note=f"trip count {trips} fixed at trace time")
        add_numba(w, opt, ex_bessel.besselj, "z")
        out.append(w)
    return out


def seed004_workload(opt):
    args = (2.0, 5.0)
    w = Workload("seed004", "seed-004 f(x1, x2) at (2, 5)", ex_seed004.f, args, f_grad_hand,
                 ex_seed004.f_grad, fd_check_sampled(ex_seed004.f, (0, 1), 1e-3, 1e-8))
    if opt.anp is not None:
        add_autograd(w, opt, make_f(opt.anp), (0, 1))
    else:
        w.missing["autograd"] = opt.why["autograd"]
    if opt.jnp is not None:
        f = make_f(opt.jnp)
        add_jax(w, opt, f, f, (0, 1))
    else:
        w.missing["jax.grad"] = w.missing["jax.jit"] = opt.why["jax"]
    return w


def horner_workload(opt):
    coefficients = [math.cos(k) / (k + 1) for k in range(1000)]
    args = (coefficients, 0.9)

    def fd_check(a, hand):
        for index, position in ((0, 0), (0, 500), (0, 999), (1, None)):
            fd = five_point(ex_horner.horner, a, index, position, h=1e-4)
            got = hand[0][position] if index == 0 else hand[1]
            if abs(got - fd) > 1e-7 * max(abs(fd), 1.0):
                return f"hand adjoint {got!r}, central difference {fd} for argument {index}"
        return None

    w = Workload("horner", "Horner, a list of 1000 coefficients", ex_horner.horner, args,
                 horner_grad_hand, ex_horner.horner_grad, fd_check)
    if opt.anp is not None:
        add_autograd(w, opt, ex_horner.horner, (0, 1))
    else:
        w.missing["autograd"] = opt.why["autograd"]
    w.missing["jax.grad"] = w.missing["jax.jit"] = "a list of 1000 floats is 1000 pytree leaves"
    return w


def pendulum_workload(opt, quick, steps=10_000):
    args = (0.3, 1.0, steps, 10.0 / steps)

    def fd_check(a, hand):
        for i in (0, 1):
            fd = bench_pendulum.central_difference(a, i)
            if abs(hand[i] - fd) > 1e-6 * abs(fd):
                return f"hand adjoint {hand!r}, central difference {fd} for argument {i}"
        return None

    w = Workload("pendulum" if steps == 10_000 else f"pendulum{steps:.0e}",
                 f"pendulum, {steps:.0e} steps".replace("e+0", "e"), ex_pendulum.simulate, args,
                 bench_pendulum.simulate_grad_hand, ex_pendulum.simulate_grad, fd_check, rtol=1e-8)
    add_numba(w, opt, ex_pendulum.simulate, ("damping", "theta0"))
    if steps != 10_000:  # the numba rows' long run: no other competitor
        return w

    def reduced(n):
        """Same ten seconds of motion in n steps: args, the check reference, the time factor."""
        return (0.3, 1.0, n, 10.0 / n), steps / n

    # autograd tapes ~10 KB per step and takes ~10 s at 1e4 steps: timed in full, except in --quick.
    if opt.anp is not None:
        if quick:
            small, factor = reduced(500)
            add_autograd(w, opt, make_simulate(opt.anp), (0, 1), args=small, scale=factor,
                         note=f"~ from 500 steps x {factor:g}")
        else:
            add_autograd(w, opt, make_simulate(opt.anp), (0, 1))
    else:
        w.missing["autograd"] = opt.why["autograd"]
    # JAX op by op takes ~8 ms a step (~80 s a call at 1e4 steps): timed on fewer steps.
    if opt.jnp is not None:
        n = 50 if quick else 500
        small, factor = reduced(n)
        add_jax(w, opt, make_simulate(opt.jnp), simulate_fori(opt.jnp, opt.lax), (0, 1), static=(2,),
                eager_args=small, eager_scale=factor, eager_note=f"~ from {n} steps x {factor:g}",
                jit_note="lax.fori_loop")
    else:
        w.missing["jax.grad"] = w.missing["jax.jit"] = opt.why["jax"]
    return w


def mlp_workloads(opt):
    out = []
    for n_in, n_hidden, n_out, batch in bench_mlp.SIZES:
        args = ex_mlp.problem(n_in, n_hidden, n_out, batch)
        w = Workload(f"mlp{n_hidden}", f"MLP {n_in}-{n_hidden}-{n_out}, batch {batch}", ex_mlp.loss, args,
                     bench_mlp.loss_grad_hand, ex_mlp.loss_grad,
                     fd_check_sampled(ex_mlp.loss, (0, 1, 2, 3), 1e-4, 1e-6))
        if opt.anp is not None:
            add_autograd(w, opt, bench_mlp.make_loss(opt.anp), (0, 1, 2, 3))
        else:
            w.missing["autograd"] = opt.why["autograd"]
        if opt.jnp is not None:
            f = bench_mlp.make_loss(opt.jnp)
            add_jax(w, opt, f, f, (0, 1, 2, 3))
        else:
            w.missing["jax.grad"] = w.missing["jax.jit"] = opt.why["jax"]
        out.append(w)
    return out


def softmax_workload(opt):
    features, classes, batch = bench_softmax.SIZES[0]
    args = bench_softmax.problem(features, classes, batch)
    w = Workload("softmax", f"softmax classifier {features}-{classes}, batch {batch}",
                 bench_softmax.loss, args, bench_softmax.loss_grad_hand, bench_softmax.loss_grad,
                 fd_check_sampled(bench_softmax.loss, (0, 1), 1e-4, 1e-6))
    for name in ("autograd", "jax.grad", "jax.jit"):
        w.missing[name] = "not compared (scipy.special.logsumexp)"
    return w


def rnn_args():
    params = ex_rnn.initial()
    xs, target = next(ex_rnn.sequences(1, seed=9))
    return tuple([p + 0.1 for p in params] + [xs, target])


def rnn_workload(opt):
    args = rnn_args()
    wrt = tuple(range(6))
    w = Workload("rnn", f"RNN {args[0].shape[0]} hidden, {args[6].shape[0]} steps", ex_rnn.rnn_loss, args,
                 rnn_grad_hand, ex_rnn.rnn_grad, fd_check_sampled(ex_rnn.rnn_loss, wrt, 1e-4, 1e-6))
    if opt.anp is not None:
        add_autograd(w, opt, make_rnn_loss(opt.anp), wrt)
    else:
        w.missing["autograd"] = opt.why["autograd"]
    if opt.jnp is not None:
        f = make_rnn_loss(opt.jnp)
        add_jax(w, opt, f, f, wrt)
    else:
        w.missing["jax.grad"] = w.missing["jax.jit"] = opt.why["jax"]
    return w


def gp_workload(opt):
    """The GP negative log-likelihood of benchmarks/gp.py, n = 400 (no autograd or JAX version:
    neither differentiates scipy.linalg.cho_factor)."""
    args = bench_gp.POINT + ex_gp.problem(400)
    w = Workload("gp", "GP neg. log-likelihood, n = 400", ex_gp.negative_log_likelihood, args,
                 bench_gp.nll_grad_hand, bench_gp.gp_grad,
                 fd_check_sampled(ex_gp.negative_log_likelihood, (0, 1, 2), 1e-4, 1e-6))
    w.missing["autograd"] = w.missing["jax.grad"] = w.missing["jax.jit"] = "no cho_factor rule"
    return w


# --------------------------------------------------------------------------------------------
# First use, call overhead, import time.

FIRST_USE = [
    # (workload label, example file, function, wrt, arguments of the first call)
    ("Bessel J_2'", "bessel.py", "besselj", "z", lambda: (2, 1.0)),
    ("seed-004 f", "seed004.py", "f", (0, 1), lambda: (2.0, 5.0)),
    ("pendulum", "pendulum.py", "simulate", ("damping", "theta0"), lambda: (0.3, 1.0, 100, 0.1)),
    ("Horner", "horner.py", "horner", (0, 1), lambda: ([0.5, -1.0, 2.0], 0.9)),
    ("MLP", "mlp.py", "loss", ex_mlp.PARAMETERS, lambda: ex_mlp.problem()),
    ("RNN", "rnn.py", "rnn_loss", ex_rnn.PARAMETERS, rnn_args),
]


def without_derivo_calls(source):
    """The module source with its top-level statements that call derivo blanked (same line
    numbers), so that executing it defines the functions without transforming them."""
    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        calls_derivo = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                           and n.value.id == "derivo" for n in ast.walk(node))
        if calls_derivo and not isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            for i in range(node.lineno - 1, node.end_lineno):
                lines[i] = "\n"
    return "".join(lines)


def fresh_function(tmp, example, name, serial):
    """`name` from a fresh copy of examples/<example> (a new file, so new code objects and new
    globals): derivo's cache cannot have seen it."""
    with open(os.path.join(_ROOT, "examples", example)) as f:
        source = without_derivo_calls(f.read())
    path = os.path.join(tmp, f"fresh_{serial}_{example}")
    with open(path, "w") as f:
        f.write(source)
    namespace = {"__name__": f"bench_fresh_{serial}", "__file__": path}
    exec(compile(source, path, "exec"), namespace)
    return namespace[name]


def first_use(trials):
    """{label: (transform min, median, first call min)} in seconds, each trial a cache miss."""
    results = {}
    serial = 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, example, name, wrt, make_args in FIRST_USE:
            transform, call = [], []
            for _ in range(trials):
                serial += 1
                fn = fresh_function(tmp, example, name, serial)
                args = make_args()
                misses = derivo.cache_info().misses
                start = time.perf_counter()
                d = derivo.grad(fn, wrt=wrt)
                built = time.perf_counter()
                d(*args)
                done = time.perf_counter()
                if derivo.cache_info().misses <= misses:
                    raise SystemExit(f"first use of {label}: derivo's cache did not miss on a fresh copy")
                transform.append(built - start)
                call.append(done - built)
            results[label] = (min(transform), statistics.median(transform), min(call))
    return results


COLD_SCRIPT = r"""
import os, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import derivo
t1 = time.perf_counter()
ns = {{"__name__": "cold"}}
exec(compile(open({path!r}).read(), {path!r}, "exec"), ns)
t2 = time.perf_counter()
d = derivo.grad(ns["besselj"], wrt="z")
t3 = time.perf_counter()
d(2, 1.0)
print(t1 - t0, t3 - t2)
"""


def cold_first_use(trials):
    """derivo.grad(besselj) as the first transformation of a fresh process (after import derivo)."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(_ROOT, "examples", "bessel.py")) as f:
            source = without_derivo_calls(f.read())
        path = os.path.join(tmp, "bessel_cold.py")
        with open(path, "w") as f:
            f.write(source)
        for _ in range(trials):
            out = subprocess.run([sys.executable, "-c", COLD_SCRIPT.format(root=_ROOT, path=path)],
                                 capture_output=True, text=True, check=True, env=os.environ.copy())
            times.append(float(out.stdout.split()[1]))
    return min(times), statistics.median(times)


def call_overhead(rounds, target):
    """{label: (overhead min, overhead median, generated call min)} of calling a derivative over its
    generated function (derivo_function), seconds per call, timed interleaved."""
    cases = [("seed-004 f_grad (2 floats)", ex_seed004.f_grad, (2.0, 5.0)),
             ("Bessel grad (int, float)", ex_bessel.besselj_grad, (2, 1.0)),
             ("MLP 3-4-2 grad (6 arrays)", ex_mlp.loss_grad, ex_mlp.problem(3, 4, 2, 1))]
    out = {}
    for label, d, args in cases:
        wrapped = call_timer(d, args)
        direct = call_timer(d.derivo_function, args)
        number, _ = calibrate(direct, target)
        pairs = []
        for r in range(rounds):
            # Paired samples, alternating which goes first.
            first, second = (wrapped, direct) if r % 2 else (direct, wrapped)
            a = first.timeit(number) / number
            b = second.timeit(number) / number
            pairs.append((a, b) if first is wrapped else (b, a))
        best_wrapped = min(p[0] for p in pairs)
        best_direct = min(p[1] for p in pairs)
        out[label] = (best_wrapped - best_direct, statistics.median(p[0] - p[1] for p in pairs), best_direct)
    hit = timeit.Timer("g(f, wrt='z')", globals={"g": derivo.grad, "f": ex_bessel.besselj})
    number, _ = calibrate(hit, target)
    cache_hit = min(hit.repeat(repeat=max(3, rounds // 3), number=number)) / number
    return out, cache_hit


def import_time(runs):
    """Cumulative import time of derivo (and of numpy inside it) from -X importtime, seconds.

    With compiled bytecode cached, as on a user's second import: a warm-up run writes it to a
    temporary PYTHONPYCACHEPREFIX (PYTHONDONTWRITEBYTECODE, which some machines set, would
    time Python compiling derivo's source instead)."""
    totals, numpys = [], []
    env = os.environ.copy()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        subprocess.run([sys.executable, "-c", "import derivo"], check=True, env=env)
        outputs = [subprocess.run([sys.executable, "-X", "importtime", "-c", "import derivo"],
                                  capture_output=True, text=True, check=True, env=env,
                                  cwd=tempfile.gettempdir()) for _ in range(runs)]
    for out in outputs:
        cumulative = {}
        for line in out.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)", line)
            if m:
                cumulative[m.group(4)] = int(m.group(2)) * 1e-6
        totals.append(cumulative["derivo"])
        numpys.append(cumulative.get("numpy", 0.0))
    return min(totals), statistics.median(totals), min(numpys)


def checkpoint_section(quick):
    """The checkpoint rows of issue 24 (see benchmarks/loops.py), each in well under 20 s on a
    quiet machine but the memory at 1e6 steps (tracemalloc slows the gradient about sixfold)."""
    k = 10_000 if quick else 100_000
    started = time.perf_counter()
    slots, stack_ratio, rows = bench_loops.pendulum_checkpoint_rows(k, 3 if quick else 5)
    print(f"checkpointed pendulum, {k:g} steps, S = ceil(log2 K) = {slots}, CPU time "
          f"(time.process_time), min of interleaved rounds; the stack gradient / forward "
          f"{stack_ratio:.2f}; bound: step calls / K + that ({time.perf_counter() - started:.0f} s)")
    print(f"{'schedule':10s} {'grad/fwd':>9s} {'calls/K':>8s} {'bound':>7s} {'/bound':>7s}")
    for schedule, ratio, per_trip, bound, over in rows:
        print(f"{schedule:10s} {ratio:9.2f} {per_trip:8.2f} {bound:7.2f} {over:7.2f}")
    small, large = (10_000, 100_000) if quick else (10_000, 1_000_000)
    started = time.perf_counter()
    peaks = bench_loops.checkpoint_memory((small, large), 20, "segments")
    print(f"checkpoint peak memory (tracemalloc), pendulum, segments schedule, S = 20: "
          f"{small:g} steps {peaks[small][0] / 1024:.1f} KB, {large:g} steps "
          f"{peaks[large][0] / 1024:.1f} KB ({time.perf_counter() - started:.0f} s)")
    trips = 10_000 if quick else 1_000_000
    online = {s: bench_loops.online_ratio(trips, s) for s in (3, 5, 10)}
    print(f"online checkpointing, {trips:g} trips: step calls / offline optimum "
          + ", ".join(f"S={s} {r:.3f}" for s, r in online.items()))
    by_schedule = {row[0]: row for row in rows}
    checks = [(f"checkpoint {k:g} revolve: (grad/fwd)/bound", by_schedule["revolve"][4], 1.25),
              (f"checkpoint {k:g} segments: (grad/fwd)/bound", by_schedule["segments"][4], 1.25),
              (f"checkpoint memory {large:g}/{small:g} steps", peaks[large][0] / peaks[small][0],
               1.1)]
    checks += [(f"online/offline, {trips:g} trips, S={s}", r, 1.3) for s, r in online.items()]
    print("issue 24 checkpoint targets")
    for label, value, limit in checks:
        print(f"  {label:40s} {value:8.2f}  {'<= ' + format(limit, 'g'):8s} "
              f"{'ok' if value <= limit else 'MISS'}")
    print()


def numba_checks(results, ratio):
    """Issue 24's targets for backend="numba" (and against jax.jit(jax.grad) when timed)."""
    checks = []
    for key, label in (("bessel1", "Bessel z=1"), ("bessel10", "Bessel z=10")):
        checks += [(f"{label}: numba derivo call (us)", results[key]["numba"][0] * 1e6, 1.0),
                   (f"{label}: numba derivo/numba forward", ratio(key, "numba", "numba fwd"), 2.0)]
        if "jax.jit" in results[key]:  # at least 10x faster than jax.jit(jax.grad)
            checks.append((f"{label}: numba derivo/jax.jit", ratio(key, "numba", "jax.jit"), 0.1))
    for key, label in (("pendulum", "pendulum 1e4"), ("pendulum1e+05", "pendulum 1e5")):
        checks.append((f"{label}: numba derivo/numba forward", ratio(key, "numba", "numba fwd"),
                       4.0))
        if "jax.jit" in results[key]:  # at least 2.5x faster than jax.jit with lax.fori_loop
            checks.append((f"{label}: numba derivo/jax.jit", ratio(key, "numba", "jax.jit"), 0.4))
    return checks


# --------------------------------------------------------------------------------------------

ORDER = ("forward", "derivo", "generated", "hand", "autograd", "jax.grad", "jax.jit",
         "numba fwd", "numba")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few short rounds: a smoke test")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 31, quick 3)")
    parser.add_argument("--without", default="", help="comma-separated: autograd,jax,numba")
    options = parser.parse_args(argv)
    # Many short samples rather than a few long ones: on a loaded machine each candidate then
    # has a better chance of some samples that nothing interrupted (the minimum).
    rounds = options.rounds or (3 if options.quick else 31)
    target = 0.01 if options.quick else 0.02
    trials = 2 if options.quick else 7
    began = time.perf_counter()

    opt = Competitors({s.strip() for s in options.without.split(",") if s.strip()})
    print(f"derivo {derivo.__version__} benchmarks: Python {platform.python_version()}, numpy {np.__version__}, "
          + ", ".join(opt.versions()) + f"; {os.cpu_count()} cores, one BLAS thread; "
          f"load average {os.getloadavg()[0]:.1f} at start")
    for name, why in opt.why.items():
        print(f"  {name}: n/a ({why})")

    workloads = [*bessel_workloads(opt), seed004_workload(opt), pendulum_workload(opt, options.quick),
                 horner_workload(opt), *mlp_workloads(opt), rnn_workload(opt), gp_workload(opt),
                 softmax_workload(opt)]
    if opt.numba is not None:
        workloads.append(pendulum_workload(opt, options.quick, steps=100_000))
    for w in workloads:
        check_workload(w)
    print("checked: the hand-written adjoints agree with central differences, and every gradient "
          "with the hand-written one (1e-9 relative; pendulum 1e-8)")
    print()

    # One interleaving over every candidate of every workload: each round times them all once, so
    # a burst of load on the machine hits every workload alike, and each candidate's minimum comes
    # from the quietest moments of the whole run.
    everything = {(w.key, name): c for w in workloads for name, c in w.candidates.items()}
    timed = interleaved(everything, rounds, target)
    results = {w.key: {name: timed[(w.key, name)] for name in w.candidates} for w in workloads}

    print(f"per call: min and median over {rounds} rounds of ~{target * 1e3:g} ms, each round timing every "
          f"candidate of every workload once, in one process; ratios of minima")
    header = (f"{'workload':36s} {'candidate':9s} {'min':>10s} {'median':>10s} {'/forward':>9s} "
              f"{'/hand':>7s}  note")
    print(header)
    print("-" * len(header))
    for w in workloads:
        t = results[w.key]
        fwd, hand = t["forward"][0], t["hand"][0]
        for i, name in enumerate(ORDER):
            label = w.label if i == 0 else ""
            if name not in t and name.startswith("numba") and name not in w.missing:
                continue  # the numba rows are the scalar workloads'
            if name not in t:
                why = w.missing.get(name, "")
                print(f"{label:36s} {name:9s} {'n/a':>10s} {'n/a':>10s} {'':9s} {'':7s}  {why}")
                continue
            best, median, count = t[name]
            per_fwd = fmt_ratio(best / fwd) if name != "forward" else ""
            per_hand = fmt_ratio(best / hand) if name not in ("forward", "hand") else ""
            note = w.notes.get(name, "")
            if count < rounds:
                note = (note + "; " if note else "") + f"{count} rounds"
            prefix = "~" if w.candidates[name].scale != 1.0 else ""
            print(f"{label:36s} {name:9s} {prefix + fmt_time(best):>10s} {prefix + fmt_time(median):>10s} "
                  f"{per_fwd:>9s} {per_hand:>7s}  {note}")
    print("~ extrapolated: timed on fewer steps, times scaled linearly to 1e4 steps. "
          "jax: float64, arguments already on the device.")
    print()

    first = first_use(trials)
    cold = cold_first_use(max(1, trials // 2))
    print(f"first use: derivo.grad(f) on a cache miss (fresh copy of the example's file; "
          f"derivo.cache_info().misses grew every time), {trials} trials")
    print(f"{'function':36s} {'transform min':>14s} {'median':>10s} {'first call':>11s}")
    for label, (best, median, call) in first.items():
        print(f"{label:36s} {fmt_time(best):>14s} {fmt_time(median):>10s} {fmt_time(call):>11s}")
    print(f"{'Bessel J_2, first in a fresh process':36s} {fmt_time(cold[0]):>14s} {fmt_time(cold[1]):>10s}")
    print()

    overhead_rounds = 5 if options.quick else 41
    overhead, cache_hit = call_overhead(overhead_rounds, target / 2)
    print(f"cached call overhead: derivative(a0, a1) minus its derivo_function(a0, a1), {overhead_rounds} paired rounds: "
          f"difference of the minima, median of the differences, the generated function's minimum")
    print(f"{'derivative':36s} {'overhead min':>13s} {'median':>10s} {'generated':>10s}")
    for label, (best, median, gen) in overhead.items():
        print(f"{label:36s} {fmt_time(best):>13s} {fmt_time(median):>10s} {fmt_time(gen):>10s}")
    print(f"derivo.grad(besselj, wrt='z') again (a cache hit): {fmt_time(cache_hit)}")
    print()

    total, total_median, numpy_part = import_time(2 if options.quick else 5)
    print(f'import time (python -X importtime -c "import derivo", cumulative, bytecode cached): min {fmt_time(total)}, '
          f"median {fmt_time(total_median)}; numpy's part {fmt_time(numpy_part)}")
    print()

    def ratio(key, a, b):
        t = results[key]
        return t[a][0] / t[b][0]

    checks = [
        ("Bessel z=1: derivo/forward", ratio("bessel1", "derivo", "forward"), 3.0),
        ("Bessel z=1: derivo/hand", ratio("bessel1", "derivo", "hand"), 1.1),
        ("  (generated function alone)/hand", ratio("bessel1", "generated", "hand"), None),
        ("Bessel z=10: derivo/forward", ratio("bessel10", "derivo", "forward"), 3.0),
        ("Bessel z=10: derivo/hand", ratio("bessel10", "derivo", "hand"), 1.1),
        ("  (generated function alone)/hand", ratio("bessel10", "generated", "hand"), None),
        ("seed-004: derivo/hand", ratio("seed004", "derivo", "hand"), 1.2),
        ("  (generated function alone)/hand", ratio("seed004", "generated", "hand"), None),
        ("pendulum 1e4: derivo/hand", ratio("pendulum", "derivo", "hand"), 1.2),
        ("  (generated function alone)/hand", ratio("pendulum", "generated", "hand"), None),
        ("Horner 1000: derivo/hand", ratio("horner", "derivo", "hand"), 1.2),
        ("  (generated function alone)/hand", ratio("horner", "generated", "hand"), None),
        ("MLP 100-200-10: derivo/hand", ratio("mlp200", "derivo", "hand"), 1.1),
        ("  (generated function alone)/hand", ratio("mlp200", "generated", "hand"), None),
        ("MLP 3-4-2 (no target): derivo/hand", ratio("mlp4", "derivo", "hand"), None),
        ("RNN (no target): derivo/hand", ratio("rnn", "derivo", "hand"), None),
        ("GP n=400: derivo/hand", ratio("gp", "derivo", "hand"), 1.2),
        ("softmax 50-10, batch 256: derivo/hand", ratio("softmax", "derivo", "hand"), 1.2),
        ("first use of Bessel (ms)", first["Bessel J_2'"][0] * 1e3, 30.0),
        # The scalar cases: there the wrapper does the most (a type check per argument) and the
        # generated call is cheap enough for the difference to be measured precisely.
        ("cached call overhead (us, scalar cases)", max(o[0] for label, o in overhead.items()
                                                        if "arrays" not in label) * 1e6, 1.0),
    ]
    if opt.numba is not None:
        checks += numba_checks(results, ratio)
    print("issue 4 targets (ratios of minima; the numba rows are issue 24's)")
    for label, value, limit in checks:
        if limit is None:
            verdict, bound = "", ""
        else:
            verdict, bound = ("ok" if value <= limit else "MISS"), f"<= {limit:g}"
        print(f"  {label:40s} {value:8.2f}  {bound:8s} {verdict}")
    print()
    checkpoint_section(options.quick)
    print(f"total {time.perf_counter() - began:.0f} s; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
