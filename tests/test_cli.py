"""The command line: ``python -m derivo FILE FUNC --wrt NAME [-o OUT]``.

Errors (missing file, missing function, unsupported construct, bad --wrt) exit
with status 2 and exactly one line on stderr, never a traceback.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from checks import assert_close

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(REPO, "src")

BESSEL_SOURCE = textwrap.dedent(
    """\
    import math


    def besselj(v, z, atol=1e-8):
        k = 0
        s = (z / 2) ** v / math.factorial(v)
        out = s
        while abs(s) > atol:
            k += 1
            s *= (-1) / k / (k + v) * (z / 2) ** 2
            out += s
        return out
    """
)

GENERATOR_SOURCE = textwrap.dedent(
    """\
    def gen(x):
        y = x * 2.0
        yield y
    """
)
GENERATOR_YIELD_LINE = 3


def run_cli(*args, cwd, command=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = command or [sys.executable, "-m", "derivo"]
    return subprocess.run(
        command + [str(a) for a in args],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def assert_one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def load_gradient(path):
    """Exec a written module; return the one ``*_grad`` function it defines itself."""
    module_name = "derivo_cli_out"
    namespace = {"__name__": module_name}
    with open(path) as fh:
        exec(compile(fh.read(), str(path), "exec"), namespace)
    candidates = [
        value
        for key, value in namespace.items()
        if key.endswith("_grad")
        and callable(value)
        and getattr(value, "__module__", None) == module_name
    ]
    assert len(candidates) == 1, sorted(namespace)
    return candidates[0]


@pytest.fixture
def bessel_file(tmp_path):
    path = tmp_path / "bessel.py"
    path.write_text(BESSEL_SOURCE)
    return path


def test_prints_the_gradient_source(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "def " in proc.stdout
    compile(proc.stdout, "<cli stdout>", "exec")


def test_relative_path(bessel_file, tmp_path):
    proc = run_cli("bessel.py", "besselj", "--wrt", "z", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "def " in proc.stdout


def test_output_file_can_be_executed(bessel_file, tmp_path):
    out = tmp_path / "out.py"
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    assert "def " in out.read_text()
    grad = load_gradient(out)
    assert_close(grad(2, 1.0), 0.2102436158518, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("loops", [["--loops", "checkpoint", "--checkpoints", "3"],
                                   ["--loops", "reversible"]])
def test_saved_module_with_another_loop_strategy_runs(bessel_file, tmp_path, loops):
    out = tmp_path / "out.py"
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", *loops, "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert ("checkpointed_while" in text) == ("checkpoint" in loops)
    grad = load_gradient(out)
    assert_close(grad(2, 1.0), 0.2102436158518, rtol=0.0, atol=1e-12)


def test_bad_checkpoints_option(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", "--loops", "checkpoint",
                   "--checkpoints", "0", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "checkpoints=0" in proc.stderr


def test_output_matches_stdout(bessel_file, tmp_path):
    out = tmp_path / "out2.py"
    printed = run_cli(bessel_file, "besselj", "--wrt", "z", cwd=tmp_path)
    written = run_cli(bessel_file, "besselj", "--wrt", "z", "-o", out, cwd=tmp_path)
    assert printed.returncode == 0 and written.returncode == 0
    # the printed gradient and the saved module contain the same gradient function
    saved = out.read_text()
    body = [line for line in printed.stdout.splitlines() if line.strip().startswith("def ")]
    assert body and all(line in saved for line in body)


def test_missing_file(tmp_path):
    proc = run_cli("no_such_file.py", "besselj", "--wrt", "z", cwd=tmp_path)
    assert_one_line_error(proc, "no_such_file.py")


def test_missing_function(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "no_such_function", "--wrt", "z", cwd=tmp_path)
    assert_one_line_error(proc, "no_such_function")


def test_unsupported_construct(tmp_path):
    path = tmp_path / "gen.py"
    path.write_text(GENERATOR_SOURCE)
    proc = run_cli(path, "gen", "--wrt", "x", cwd=tmp_path)
    line = assert_one_line_error(proc, "yield")
    assert f"gen.py:{GENERATOR_YIELD_LINE}:" in line


def test_wrt_names_no_argument(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "besselj", "--wrt", "nope", cwd=tmp_path)
    assert_one_line_error(proc, "nope")


@pytest.mark.skipif(shutil.which("derivo") is None, reason="console script not installed")
def test_console_script(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", cwd=tmp_path, command=["derivo"])
    assert proc.returncode == 0, proc.stderr
    assert "def " in proc.stdout


SIDE_EFFECTS_SOURCE = BESSEL_SOURCE + textwrap.dedent(
    """\

    class Spring:
        def energy(self, x):
            return 0.5 * x * x

    print("the program ran")
    open("created_by_the_program.txt", "w").close()

    if __name__ == "__main__":
        open("main_ran.txt", "w").close()
    """
)


@pytest.fixture
def program_file(tmp_path):
    path = tmp_path / "program.py"
    path.write_text(SIDE_EFFECTS_SOURCE)
    return path


def test_the_file_is_read_not_run(program_file, tmp_path):
    proc = run_cli(program_file, "besselj", "--wrt", "z", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "the program ran" not in proc.stdout
    assert not (tmp_path / "created_by_the_program.txt").exists()
    assert not (tmp_path / "main_ran.txt").exists()


def test_a_method_is_addressed_as_class_dot_method(program_file, tmp_path):
    out = tmp_path / "energy.py"
    proc = run_cli(program_file, "Spring.energy", "--wrt", "x", "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert load_gradient(out)(None, 3.0) == 3.0


def test_several_functions_go_to_an_output_directory(program_file, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(program_file, "besselj", "Spring.energy", "--wrt", "1", "--output-dir", out,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["Spring_energy_grad.py", "besselj_grad.py"]
    assert_close(load_gradient(out / "besselj_grad.py")(2, 1.0), 0.2102436158518, rtol=1e-12)


def test_several_functions_and_one_output_file_make_one_module(program_file, tmp_path):
    out = tmp_path / "both.py"
    proc = run_cli(program_file, "besselj", "Spring.energy", "--wrt", "1", "-o", out,
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    namespace = {"__name__": "derivo_cli_both"}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    assert_close(namespace["besselj_grad"](2, 1.0), 0.2102436158518, rtol=1e-12)
    assert namespace["energy_grad"](None, 3.0) == 3.0
    assert out.read_text().count("\nimport math\n") <= 1


def test_an_input_that_is_not_python_is_one_line(tmp_path):
    path = tmp_path / "bessel.txt"
    path.write_text(BESSEL_SOURCE)
    proc = run_cli(path, "besselj", "--wrt", "z", cwd=tmp_path)
    assert_one_line_error(proc, "bessel.txt", "not a Python source file")


def test_a_directory_as_output_is_one_line(bessel_file, tmp_path):
    (tmp_path / "somewhere").mkdir()
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", "-o", tmp_path / "somewhere",
                   cwd=tmp_path)
    assert_one_line_error(proc, "is a directory")


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder the test process cannot create files in: a read-only one, or /proc
    for root (who writes into read-only folders)."""
    if getattr(os, "geteuid", lambda: 1)() == 0:
        if not os.path.isdir("/proc/self"):
            pytest.skip("root writes into read-only folders, and there is no /proc")
        yield "/proc"
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    yield str(locked)
    locked.chmod(0o700)


def test_an_unwritable_output_is_one_line(bessel_file, tmp_path, unwritable_folder):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", "-o",
                   os.path.join(unwritable_folder, "g.py"), cwd=tmp_path)
    assert_one_line_error(proc, "cannot write")


def test_an_output_under_a_file_is_one_line(bessel_file, tmp_path):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", "-o", bessel_file / "g.py",
                   cwd=tmp_path)
    assert_one_line_error(proc, "cannot write")


@pytest.mark.parametrize("option", [["--checkpoints", "4"], ["--schedule", "halving"]])
def test_a_checkpoint_option_needs_the_checkpoint_strategy(bessel_file, tmp_path, option):
    proc = run_cli(bessel_file, "besselj", "--wrt", "z", *option, cwd=tmp_path)
    assert_one_line_error(proc, option[0], "--loops checkpoint")


def test_help_lists_the_subcommands_with_examples(tmp_path):
    proc = run_cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "derivo check FILE FUNCTION" in proc.stdout
    assert "derivo examples/bessel.py besselj --wrt z" in proc.stdout


def test_check_names_the_users_line_when_the_function_fails(tmp_path):
    path = tmp_path / "failing.py"
    path.write_text("import math\n\n\ndef f(x):\n    return math.log(x - 1.0)\n")
    proc = run_cli("check", path, "f", "--args", "0.5", cwd=tmp_path)
    line = assert_one_line_error(proc, "ValueError")
    assert line.startswith(f"{path}:5:"), line
