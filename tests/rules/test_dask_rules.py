"""Every NumPy rule with Dask arrays as the data: derivo's gradient stays lazy
(nothing is computed while it is made) and equals the gradient with NumPy data.

The probes are test_numpy.py's.  Each float array argument becomes a chunked
Dask array, scaled by a NumPy weight ``w`` of shape (1,), and the gradient is
taken with respect to ``w``: every rule's adjoint then meets Dask arrays, as
it does when a model's parameters are NumPy arrays and its data is Dask's.  A
probe whose own expression Dask cannot evaluate lazily (``np.inner``, a reshape
across chunks) is skipped: that is the user's code, not derivo's.
"""

import importlib.util
import warnings

import numpy as np
import pytest

import derivo
from checks import dask_computations
from probing import random_like

da = pytest.importorskip("dask.array")

import test_numpy  # noqa: E402  (its PROBES and PRELUDE)

W = np.array([1.3])
#: probe expression -> why derivo's adjoint computes its Dask input
COMPUTES = {
    "np.repeat(x0, 2, axis=1)": "repeat_vjp adds the copies' adjoints with np.add.at",
}
# Selections scatter their adjoint with np.add.at (adjoints.gathered_vjp); ptp
# and the quantiles find the elements they pick with NumPy.
COMPUTES.update(dict.fromkeys([
    'np.append(x0, x1)',
    'np.append(x0, x1, 1)',
    'np.append(x0, x1, axis=0)',
    'np.compress(COND[0], x0, 1)',
    'np.compress(MASK.ravel(), x0)',
    'np.compress([True, False, True], x0, axis=0)',
    'np.diagonal(x0)',
    'np.diagonal(x0, 1)',
    'np.diagonal(x0, offset=-1, axis1=1, axis2=2)',
    'np.median(x0, axis=-1)',
    'np.median(x0, axis=0)',
    'np.median(x0, axis=1, keepdims=True)',
    'np.pad(x0, ((1, 2), (0, 3)))',
    "np.pad(x0, ((1, 2), (0, 3)), 'constant')",
    "np.pad(x0, ((1, 2), (0, 3)), 'reflect')",
    "np.pad(x0, ((1, 2), (0, 3)), 'wrap')",
    "np.pad(x0, ((1, 2), (0, 3)), mode='edge')",
    "np.pad(x0, ((1, 2), (0, 3)), mode='symmetric')",
    'np.pad(x0, (2, 1))',
    'np.pad(x0, 2)',
    "np.pad(x0, 2, 'constant')",
    "np.pad(x0, 2, 'reflect')",
    "np.pad(x0, 2, 'wrap')",
    "np.pad(x0, 2, mode='edge')",
    "np.pad(x0, 2, mode='symmetric')",
    'np.percentile(x0, 40)',
    'np.percentile(x0, 40, axis=-1)',
    'np.percentile(x0, 40, axis=0)',
    'np.percentile(x0, 40, axis=1, keepdims=True)',
    'np.percentile(x0, q=90.0)',
    'np.percentile(x0, q=90.0, axis=-1)',
    'np.percentile(x0, q=90.0, axis=0)',
    'np.percentile(x0, q=90.0, axis=1, keepdims=True)',
    'np.ptp(x0)',
    'np.ptp(x0, 1)',
    'np.ptp(x0, axis=(0, 2))',
    'np.ptp(x0, axis=0)',
    'np.quantile(x0, 0.3, axis=-1)',
    'np.quantile(x0, 0.3, axis=0)',
    'np.quantile(x0, 0.3, axis=1, keepdims=True)',
    'np.quantile(x0, q=0.75, axis=-1)',
    'np.quantile(x0, q=0.75, axis=0)',
    'np.quantile(x0, q=0.75, axis=1, keepdims=True)',
    'np.take(x0, 3)',
    'np.take(x0, IDX)',
    'np.take(x0, IDX, axis=1)',
    'np.take(x0, [2, 0, 2], 0)',
], "gathered_vjp scatters with np.add.at; ptp_weights and quantile_vjp compare with NumPy"))


def chunked(value):
    if isinstance(value, np.ndarray) and value.ndim and value.dtype == float:
        return da.from_array(value, chunks=tuple(max(1, (n + 1) // 2) for n in value.shape))
    return value


def weighted_loss(tmp_path, probe, arguments, index):
    """A module whose ``loss(w, x0, ...)`` is the probe's weighted sum with every
    float array argument scaled by ``w``."""
    names = ["x{}".format(i) for i in range(len(arguments))]
    scaled = [n + " * w" if isinstance(chunked(a), da.Array) else n
              for n, a in zip(names, arguments)]
    source = "{}\n\ndef probe({p}):\n    return {e}\n\n\ndef loss(w, {p}):\n" \
             "    return np.sum(probe({s}) * WEIGHTS)\n".format(
                 test_numpy.PRELUDE, p=", ".join(names), e=probe.expr, s=", ".join(scaled))
    path = tmp_path / "dask_probe_{}.py".format(index)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("dask_probe_{}".format(index), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WEIGHTS = random_like(np.random.default_rng(7), module.probe(*arguments))
    return module


def cases():
    for primitive_probes in test_numpy.PROBES.values():
        for p in primitive_probes:
            if p.xfail or not any(isinstance(chunked(a), da.Array) for a in p.arguments()):
                continue
            marks = [pytest.mark.xfail(strict=True, reason=COMPUTES[p.expr])] \
                if p.expr in COMPUTES else []
            yield pytest.param(p, id=p.id, marks=marks)


@pytest.mark.parametrize("probe", list(cases()))
def test_a_rule_keeps_dask_data_lazy(probe, tmp_path):
    arguments = probe.arguments()
    module = weighted_loss(tmp_path, probe, arguments, abs(hash(probe.expr)))
    data = [chunked(a) for a in arguments]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with dask_computations() as forward:
                module.loss(W, *data)
        except Exception as exc:  # noqa: BLE001 (Dask's own limits)
            pytest.skip("Dask cannot evaluate the probe itself: {}".format(exc))
        if forward.count:
            pytest.skip("Dask computes the probe itself")
        expected = derivo.grad(module.loss)(W, *arguments)
        with dask_computations() as made:
            gradient = derivo.grad(module.loss)(W, *data)
    assert made.count == 0
    # a gradient no data reaches (copysign's sign argument) is a NumPy zero
    assert isinstance(gradient, da.Array) or not np.any(expected)
    np.testing.assert_allclose(np.asarray(gradient), expected, rtol=1e-10, atol=1e-12)
