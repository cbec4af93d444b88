"""Every public function of derivo has type hints and a docstring with an example,
and the package ships py.typed for type checkers."""

import inspect
import pathlib

import derivo

FUNCTIONS = [getattr(derivo, name) for name in derivo.__all__
             if inspect.isfunction(getattr(derivo, name))]


def test_the_public_functions_are_many():
    assert len(FUNCTIONS) >= 18, [f.__name__ for f in FUNCTIONS]


def test_every_public_function_has_type_hints():
    missing = []
    for function in FUNCTIONS:
        signature = inspect.signature(function)
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(function.__name__ + " -> ?")
        missing += ["{}({})".format(function.__name__, p.name)
                    for p in signature.parameters.values()
                    if p.annotation is inspect.Parameter.empty]
    assert not missing, missing


def test_every_public_function_shows_an_example():
    bare = [f.__name__ for f in FUNCTIONS
            if not f.__doc__ or not any(mark in f.__doc__ for mark in ("::", ">>>", "``derivo."))]
    assert not bare, bare


def test_the_package_is_typed():
    assert (pathlib.Path(derivo.__file__).parent / "py.typed").exists()
