"""The command line: print or save the derivative source of functions in a file.

    derivo FILE FUNCTION [FUNCTION ...] [--wrt NAME_OR_POSITION ...]
           [--kind grad|value_and_grad] [--mode reverse|forward]
           [-o OUT.py | --output-dir DIR] [--force]

FUNCTION is a top-level function of FILE or ``Class.method``.  FILE is read,
not run: only the definitions the functions need are evaluated (see
:mod:`derivo.script`).  ``--mode forward`` writes the Jacobian-vector product
(``derivo.tangent``): tangents first, then the function's arguments; it returns
(value, tangent).  Several functions print one after another, or with
``--output-dir`` go to one module each, ``DIR/FUNCTION_KIND.py``; ``-o`` writes them
all into one module.

    derivo check FILE FUNCTION --args VALUE ... [--wrt ...]

compares derivo's gradient at the given arguments (Python literals) with
central finite differences and prints the worst error; exit status 1 if they
disagree.

Errors are one line on stderr (``file:line:col: message``) and exit status 2.
"""

import argparse
import ast
import os
import sys
import traceback

import numpy as np

from . import api, script
from .check import check_grad
from .checkpoints import SCHEDULES
from .errors import DerivoError
from .numba_backend import BACKENDS

USAGE_ERROR = 2


def _wrt(values):
    parsed = tuple(int(v) if v.lstrip("-").isdigit() else v for v in values or ["0"])
    return parsed[0] if len(parsed) == 1 else parsed


def check(argv):
    parser = argparse.ArgumentParser(
        prog="derivo check", description="Compare derivo's gradient with finite differences.")
    parser.add_argument("file")
    parser.add_argument("function")
    parser.add_argument("--args", nargs="+", required=True, metavar="VALUE",
                        help="the arguments, as Python literals (2, 1.0, [0.5, 1.5])")
    parser.add_argument("--wrt", nargs="+", metavar="ARG")
    args = parser.parse_args(argv)
    try:
        func, = _functions(args.file, [args.function])
        values = []
        for text in args.args:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise DerivoError("--args: {!r} is not a Python literal".format(text))
            values.append(np.array(value, dtype=float) if isinstance(value, list) else value)
        wrt = _wrt(args.wrt)
        result = check_grad(func, *values, wrt=wrt if isinstance(wrt, tuple) else (wrt,))
    except DerivoError as exc:
        print("derivo: error: {}".format(exc), file=sys.stderr)
        return USAGE_ERROR
    except Exception as exc:  # the function failed at the point or a step away from it
        frame = _innermost_frame_in(exc, args.file)
        print("{}:{}: {} raised {}: {} (at the arguments, or at a finite-difference step "
              "from them)".format(frame.filename, frame.lineno, args.function,
                                  type(exc).__name__, exc), file=sys.stderr)
        return USAGE_ERROR
    print("derivo:             {}".format(_show(result.derivo)))
    print("finite differences: {}".format(_show(result.numeric)))
    print(result)
    return 0 if result.ok else 1


def _innermost_frame_in(exc, path):
    """The innermost frame of ``exc``'s traceback in the file ``path``, else the
    innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    return (mine or frames)[-1]


def _show(values):
    return ", ".join(np.array2string(np.asarray(v), precision=10) for v in values)


def _functions(path, names):
    """The functions ``names`` (``f`` or ``Class.method``) of the file ``path``."""
    module = script.load(path, {name.split(".")[0] for name in names})
    found = []
    for name in names:
        value = module
        for part in name.split("."):
            value = getattr(value, part, None)
        if value is None or not callable(value):
            raise DerivoError("{}: no function named {!r}".format(path, name))
        found.append(value)
    return found


_EXAMPLES = """\
commands:
  derivo FILE FUNCTION ...   print or save derivative source (this help)
  derivo check FILE FUNCTION --args VALUE ...
                             compare derivo's gradient with finite differences

examples:
  derivo examples/bessel.py besselj --wrt z
  derivo examples/bessel.py besselj --wrt z -o generated/besselj_grad.py
  derivo model.py loss energy -o generated/model_grads.py
  derivo examples/bessel.py besselj --wrt z --mode forward
  derivo examples/bessel.py besselj --wrt z --backend numba -o besselj_grad_numba.py
  derivo examples/integrator.py predator_prey --wrt alpha --loops checkpoint --checkpoints 10
  derivo model.py Model.loss --wrt w --output-dir generated/
  derivo check examples/bessel.py besselj --args 2 1.0 --wrt z

FILE is read, not run: only the imports, definitions and assignments the
functions need are evaluated (never `if __name__ == "__main__":`, calls or loops).
"""


def _parser():
    parser = argparse.ArgumentParser(
        prog="derivo", description="Print or save the derivative source of Python functions.",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="the .py file defining the functions")
    parser.add_argument("functions", nargs="+", metavar="function",
                        help="a function's name in that file, or Class.method")
    parser.add_argument("--wrt", nargs="+", metavar="ARG",
                        help="parameters to differentiate by name or position (default: 0)")
    parser.add_argument("--kind", choices=["grad", "value_and_grad"],
                        help="what reverse mode returns (default: grad)")
    parser.add_argument("--mode", choices=["reverse", "forward"], default="reverse",
                        help="reverse mode (a gradient) or forward mode (a Jacobian-vector "
                        "product taking one tangent per --wrt parameter first)")
    parser.add_argument("--loops", choices=api.LOOP_STRATEGIES,
                        default="stack", help="how reverse mode gets back what loops "
                        "overwrote (see derivo.grad)")
    parser.add_argument("--checkpoints", type=int, help="with --loops checkpoint: loop "
                        "states to keep")
    parser.add_argument("--schedule", choices=SCHEDULES,
                        help="with --loops checkpoint: the schedule of counted loops "
                        "(default: revolve)")
    parser.add_argument("--backend", choices=BACKENDS, default="python",
                        help="what runs the derivative: numba compiles it (the module "
                        "written needs numba; see derivo.grad)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("-o", "--output", help="write a standalone module here instead of "
                        "printing the source (several functions: one module of them all)")
    output.add_argument("--output-dir", metavar="DIR", help="write one module per function "
                        "into DIR, named FUNCTION_KIND.py")
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    return parser


def _check_options(args):
    if args.loops != "checkpoint":
        for option in ("checkpoints", "schedule"):
            if getattr(args, option) is not None:
                raise DerivoError("--{} needs --loops checkpoint".format(option))
    if args.mode == "forward":
        if args.kind is not None:
            raise DerivoError("--kind is for reverse mode; forward mode always returns "
                              "(value, tangent)")
        if args.loops != "stack":
            raise DerivoError("--loops is for reverse mode; forward mode keeps no stack")


def _derivative(func, args):
    if args.mode == "forward":
        return api._transform("jvp", func, _wrt(args.wrt), backend=args.backend)
    return api._transform(args.kind or "grad", func, _wrt(args.wrt), args.loops,
                          args.checkpoints, args.schedule or "revolve", backend=args.backend)


def _write(derivatives, output, args):
    """Save ``derivatives`` as one module at ``output``, refusing the input file, a
    directory and, without --force, an existing file."""
    path = os.path.abspath(output)
    if path == os.path.abspath(args.file):
        raise DerivoError("{}: refusing to overwrite the input file".format(output))
    if os.path.isdir(path):
        raise DerivoError("{}: is a directory (to write into it, use --output-dir)"
                          .format(output))
    if os.path.exists(path) and not args.force:
        raise DerivoError("{}: file exists (use --force to overwrite)".format(output))
    try:
        api.save_module(path, *derivatives, overwrite=True)
    except OSError as exc:
        raise DerivoError("{}: cannot write: {}".format(output, exc.strerror or exc))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["check"]:
        return check(argv[1:])
    args = _parser().parse_args(argv)
    try:
        _check_options(args)
        functions = _functions(args.file, args.functions)
        derivatives = [_derivative(func, args) for func in functions]
        if args.output is not None:
            _write(derivatives, args.output, args)
        elif args.output_dir is not None:
            if os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
                raise DerivoError("{}: not a directory".format(args.output_dir))
            for name, derivative in zip(args.functions, derivatives):
                kind = "jvp" if args.mode == "forward" else args.kind or "grad"
                filename = "{}_{}.py".format(name.replace(".", "_"), kind)
                _write([derivative], os.path.join(args.output_dir, filename), args)
        else:
            sys.stdout.write("\n\n".join(d.module_source() for d in derivatives))
        return 0
    except DerivoError as exc:
        print("derivo: error: {}".format(exc), file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
