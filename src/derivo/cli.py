"""The command line: print or save the derivative source of a function in a file.

    derivo FILE FUNCTION [--wrt NAME_OR_POSITION ...] [--kind grad|value_and_grad]
           [--mode reverse|forward] [-o OUT.py] [--force]

``--mode forward`` writes the Jacobian-vector product (``derivo.tangent``):
tangents first, then the function's arguments; it returns (value, tangent).

Errors are one line on stderr (``file:line:col: message``) and exit status 2.
"""

import argparse
import importlib.util
import os
import sys

from . import api
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


def main(argv=None):
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
    parser.add_argument("-o", "--output", help="write a standalone module here instead of "
                        "printing the source")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    args = parser.parse_args(argv)
    try:
        module = _load_module(args.file)
        func = getattr(module, args.function, None)
        if func is None or not callable(func):
            raise DerivoError("{}: no function named {!r}".format(args.file, args.function))
        func = getattr(func, "__wrapped__", func)
        if args.mode == "forward" and args.kind is not None:
            raise DerivoError("--kind is for reverse mode; forward mode always returns "
                              "(value, tangent)")
        kind = "jvp" if args.mode == "forward" else args.kind or "grad"
        derivative = api._transform(kind, func, _wrt(args.wrt))
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
