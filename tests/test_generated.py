"""The saved derivative of every example matches its golden file in generated/.

A golden file changes only on purpose: after changing the generator, read the
new output, then regenerate with

    DERIVO_REGENERATE=1 python -m pytest -q tests/test_generated.py

and review the diff like any other change.
"""

import importlib
import importlib.util
import os
import pathlib

import numpy as np
import pytest

import derivo
from checks import example_runs_here

REPO = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.py")
                  if p.stem != "__init__" and example_runs_here(p.stem))


def derivatives():
    for example in EXAMPLES:
        module = importlib.import_module("examples." + example)
        for name, value in sorted(vars(module).items()):
            # (a derivative of a function taking *args is one per call's arguments)
            if isinstance(value, derivo.Derivative) or hasattr(value, "derivo_spread"):
                yield example, name, value


CASES = list(derivatives())


def test_every_example_has_a_derivative():
    assert {example for example, _, _ in CASES} == set(EXAMPLES)


@pytest.mark.parametrize("example,name,derivative", CASES, ids=[c[1] for c in CASES])
def test_saved_source_matches_golden_file(example, name, derivative, tmp_path):
    golden = REPO / "generated" / "{}.py".format(name)
    # saved as used: its arguments' kinds are known
    derivative(*EXAMPLE_ARGUMENTS[name], **EXAMPLE_KEYWORDS.get(name, {}))
    saved = pathlib.Path(derivative.save(tmp_path / golden.name)).read_text()
    if os.environ.get("DERIVO_REGENERATE"):
        golden.write_text(saved)
    assert golden.exists(), "run with DERIVO_REGENERATE=1 to create " + str(golden)
    assert saved == golden.read_text(), "generated code changed: " + name


@pytest.mark.parametrize("example,name,derivative", CASES, ids=[c[1] for c in CASES])
def test_golden_file_runs_standalone(example, name, derivative):
    golden = REPO / "generated" / "{}.py".format(name)
    spec = importlib.util.spec_from_file_location("golden_" + name, golden)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args, keywords = EXAMPLE_ARGUMENTS[name], EXAMPLE_KEYWORDS.get(name, {})
    made = derivative(*args, **keywords)
    called = getattr(derivative, "last", derivative)
    standalone = getattr(module, called.__name__)
    # a saved derivative of a bound function takes what it was bound to first (self)
    _, bound, bound_keywords = getattr(called, "derivo_bound", (None, (), {}))
    assert _same(standalone(*bound, *args, **bound_keywords, **keywords), made)


def _same(a, b):
    """A saved module's result is the derivative's, of the same structure and types."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if derivo.trees.is_container(a):  # a dict, a dataclass: parts by name
        pa, pb = derivo.trees.parts(a), derivo.trees.parts(b)
        return type(a) is type(b) and list(pa) == list(pb) and \
            all(_same(pa[key], pb[key]) for key in pa)
    return a is b if a is None else np.array_equal(a, b)


EXAMPLE_ARGUMENTS = {
    "mlp_loss_grad": (importlib.import_module("examples.mlp_dict").init(),
                      *importlib.import_module("examples.mlp_dict").data()),
    "model_loss_grad": importlib.import_module("examples.linear_dataclass").example_args(),
    "mean_squared_error_grad": (np.ones((3, 2)), np.ones(2), np.arange(12.0).reshape(4, 3) / 10,
                                np.ones(4)),
    "besselj_grad": (2, 1.0),
    "besselj_jvp": (1.0, 2, 1.0),  # the tangent of z first
    "f_grad": (2.0, 5.0),
    "shaped_grad": (0.7, 0.4),
    "simulate_grad": (0.3, 1.0, 200),
    "simulate_jvp": (0.6, -0.8, 0.3, 1.0, 200),
    "energy_grad": (2.0, 1.0, 300),
    "energy_grad_stack": (2.0, 1.0, 300),
    "predator_prey_grad": (1.1, 0.4, 0.1, 0.4, 300),
    "slope": (0.7, 0.3),
    "curvature": (0.7, 0.3),
    "penalized_grad": (0.7, 0.3),
    "nll_slope": (1.5, *importlib.import_module("examples.temperature").overconfident_problem(20)),
    "nll_curvature": (1.5,
                      *importlib.import_module("examples.temperature").overconfident_problem(20)),
    "predator_prey_grad_stack": (1.1, 0.4, 0.1, 0.4, 300),
    "loss_grad": importlib.import_module("examples.mlp").problem(3, 4, 2, batch=5),
    "activations_loss_grad": (importlib.import_module("examples.mlp_activations")
                              .init_params([1, 3, 1]), ("tanh", "linear"),
                              np.array([[0.5], [-1.0]]), np.array([0.2, 0.3])),
    "logistic_grad": importlib.import_module("examples.logistic").binary_problem(n=6, d=3),
    "softmax_grad": importlib.import_module("examples.logistic").multiclass_problem(n=6, d=3, k=4),
    "length_grad": (importlib.import_module("examples.path").zigzag(5),),
    "segments_grad": (importlib.import_module("examples.path").zigzag(5),),
    "horner_grad": ([2.0, -3.0, 0.5, 1.0], 1.5),
    "pair_force": (1.3,),
    "cluster_gradient": (np.array([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.5, 1.2, 0.0]]),),
    "trimmed_loss_grad": ((1.5, 2.0), *importlib.import_module("examples.robust_line").points()),
    "squared_error_grad": ([0.3, -1.0, 2.0], [-1.0, 0.25, 2.0], [1.0, 0.0, 0.5]),
    "dask_loss_grad": (np.zeros(3), 0.1, *importlib.import_module("examples.logistic")
                       .binary_problem(n=6, d=3)[2:]),
    "tanh_jvp": (np.ones(3), np.linspace(-1.0, 1.0, 3)),
    "acquisition_value_and_grad": (np.array([0.45]), np.array([0.0, -3.0, 0.0, -2.0]),
                                   np.array([[0.2], [0.7]]), np.array([0.1, -0.4])),
    "gp_nll_grad": (0.1, -0.3, -2.0, *importlib.import_module("examples.gaussian_process").problem(8)),
    "log_likelihood_grad": (np.zeros(3), np.array([-1.0, 0.0, 1.0]), np.zeros(3),
                            importlib.import_module("examples.mixture_model").sample(20)),
    "trajectory_loss_grad": (importlib.import_module("examples.neural_ode").init(hidden=3),
                             *importlib.import_module("examples.neural_ode").data(n=4)),
    "expected_counts": ([np.log(p) for p in importlib.import_module("examples.hmm_em")
                         .initial_parameters(2, 3, np.random.RandomState(0))],
                        [np.array([0, 2, 1]), np.array([1, 1])]),
    "saliency": (np.array([0.5, -1.0, 2.0, 0.1]), 3.0),
    "rnn_grad": (*importlib.import_module("examples.rnn").initial(3, 2, 1),
                 *next(importlib.import_module("examples.rnn").sequences(1, steps=4, n_in=2))),
    "decorated_loss_grad": (0.4, -0.3),
}
#: the keywords a derivative is called with, where it takes some
EXAMPLE_KEYWORDS = {
    "decorated_loss_grad": dict(zip(("inputs", "targets"),
                                    importlib.import_module("examples.decorated_loss").data()),
                                ridge=1e-3),
}
