"""The command line: print or save the derivative source of a function in a file.

    derivo FILE FUNCTION [--wrt NAME_OR_POSITION ...] [--kind grad|value_and_grad]
           [--mode reverse|forward] [-o OUT.py] [--force]

``--mode forward`` writes the Jacobian-vector product (``derivo.tangent``):
tangents first, then the function's arguments; it returns (value, tangent).

    derivo check FILE FUNCTION --args VALUE ... [--wrt ...]

compares derivo's gradient at the given arguments (Python literals) with
central finite differences and prints the worst error; exit status 1 if they
disagree.

Errors are one line on stderr (``file:line:col: message``) and exit status 2.
"""

import argparse
import ast
import importlib.util
import os
import sys
import traceback

import numpy as np

from . import api
from .check import check_grad
from .checkpoints import SCHEDULES
from .errors import DerivoError

USAGE_ERROR = 2


def _load_module(path):
    if not os.path.isfile(path):
        raise DerivoError("{}: no such file".format(path))
    name = "_derivo_cli_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise DerivoError("invalid syntax: {}".format(exc.msg), path, exc.lineno, exc.offset)
    except Exception as exc:
        raise DerivoError("importing the file failed: {}: {}".format(
            type(exc).__name__, exc), path)
    return module


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
        func = _function(args.file, args.function)
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
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        print("{}:{}: {} raised {}: {} (at the arguments, or at a finite-difference step "
              "from them)".format(frame.filename, frame.lineno, args.function,
                                  type(exc).__name__, exc), file=sys.stderr)
        return USAGE_ERROR
    print("derivo:             {}".format(_show(result.derivo)))
    print("finite differences: {}".format(_show(result.numeric)))
    print(result)
    return 0 if result.ok else 1


def _show(values):
    return ", ".join(np.array2string(np.asarray(v), precision=10) for v in values)


def _function(path, name):
    module = _load_module(path)
    func = getattr(module, name, None)
    if func is None or not callable(func):
        raise DerivoError("{}: no function named {!r}".format(path, name))
    return func  # what runs, a decorator's wrapper too (never its __wrapped__)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["check"]:
        return check(argv[1:])
    parser = argparse.ArgumentParser(
        prog="derivo", description="Print or save the derivative source of a Python function.")
    parser.add_argument("file", help="the .py file defining the function")
    parser.add_argument("function", help="the function's name in that file")
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
    parser.add_argument("--schedule", choices=SCHEDULES, default="revolve",
                        help="with --loops checkpoint: the schedule of counted loops")
    parser.add_argument("-o", "--output", help="write a standalone module here instead of "
                        "printing the source")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    args = parser.parse_args(argv)
    try:
        func = _function(args.file, args.function)
        if args.mode == "forward" and args.kind is not None:
            raise DerivoError("--kind is for reverse mode; forward mode always returns "
                              "(value, tangent)")
        kind = "jvp" if args.mode == "forward" else args.kind or "grad"
        derivative = api._transform(kind, func, _wrt(args.wrt), args.loops, args.checkpoints,
                                    args.schedule) if kind != "jvp" else \
            api._transform(kind, func, _wrt(args.wrt))
        if args.output is None:
            sys.stdout.write(derivative.module_source())
            return 0
        output = os.path.abspath(args.output)
        if output == os.path.abspath(args.file):
            raise DerivoError("{}: refusing to overwrite the input file".format(args.output))
        if os.path.exists(output) and not args.force:
            raise DerivoError("{}: file exists (use --force to overwrite)".format(args.output))
        derivative.save(output)
        return 0
    except DerivoError as exc:
        print("derivo: error: {}".format(exc), file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
