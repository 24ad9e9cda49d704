/**
 * The strict verifier's tests run without a pytest session (issue #20: the host gates started 29
 * pytest sessions per task, and pytest's own set-up — plugin registration, config, fixture parsing,
 * collection, reporting — cost ~0.3 s of each, a third of what the gates had left).
 *
 * The gate server runs this program (a fresh process forked from the warm interpreter, like every
 * other gate program) with the verifier's file: it imports the module the way pytest's default
 * `prepend` import mode does, calls the module's test functions in pytest's order with what pytest
 * gives a test here (stdin on /dev/null, fds 1-2 captured, PYTEST_VERSION and PYTEST_CURRENT_TEST
 * set), and reports each test as passed or failed. It imports no task program besides the verifier
 * itself, so the three programs stay separate (noshare.ts).
 *
 * It decides only where pytest's result is certain: anything pytest would treat specially (a
 * fixture argument, a mark, a Test class, an xunit set-up function, a generator or coroutine test,
 * pytest.skip/xfail/fail/exit raised, PYTEST_ADDOPTS or PYTEST_PLUGINS set) makes it answer
 * "undecided" (exit 3), and the gates run the real pytest instead. What it cannot see from inside
 * — the tests directory, the ini file, installed pytest plugins — the gates check before using it
 * (gates.ts `directVerifierFits`). `test/unit/synth-gate-server.test.ts` compares its per-test
 * verdicts with real pytest's on every probe of a task of every domain.
 */
export const VERIFIER_UNDECIDED = 3;

export const VERIFIER_RUNNER_PY = String.raw`"""Runs a pytest test file's module-level test functions as pytest would, or exits 3 (undecided).

Usage: python3 verifier_runner.py TEST_FILE RESULT_JSON [--stop-at-first-failure]
Writes {"tests": {name: "passed"|"failed"}, "undecided": reason|null} to RESULT_JSON; exit 0 when every
test passed, 1 when one failed, 3 when only real pytest can say. With --stop-at-first-failure the
tests after the first failure are not run (the caller knows the verdict cannot change: see gates.ts).
"""
import importlib.util
import inspect
import json
import os
import sys
import tempfile

UNDECIDED = 3
XUNIT = ("setup_module", "teardown_module", "setUpModule", "tearDownModule", "setup_function", "teardown_function", "setup", "teardown")


class Undecided(Exception):
    pass


def collect(module):
    """Module-level functions whose name starts with "test", in definition order (pytest's defaults)."""
    if hasattr(module, "pytestmark") or any(hasattr(module, name) for name in XUNIT) or getattr(module, "__test__", True) is not True:
        raise Undecided("module-level marks, xunit set-up or __test__")
    items = []
    for name, obj in list(module.__dict__.items()):
        if name.startswith("Test") and inspect.isclass(obj):
            raise Undecided("a Test class: " + name)
        if not name.startswith("test"):
            continue
        if not callable(obj):
            continue
        if not inspect.isfunction(obj):
            raise Undecided("a callable test that is not a plain function: " + name)
        if hasattr(obj, "pytestmark") or getattr(obj, "__test__", True) is not True:
            raise Undecided("a marked test: " + name)
        if inspect.isgeneratorfunction(obj) or inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj):
            raise Undecided("a generator or coroutine test: " + name)
        if inspect.signature(obj).parameters:
            raise Undecided("a test with fixture arguments: " + name)
        items.append((name, obj))
    if not items:
        raise Undecided("no tests collected")
    return items


def precompiled(test_file):
    """The code the import system would compile from test_file, if the gate server has it cached; else None.

    The loader compiles the source with compile(source, path, "exec", dont_inherit=True) unless a
    valid __pycache__ .pyc is there: then it is left to the loader.
    """
    server = sys.modules.get("_tbrl_gate_server")
    if server is None or not hasattr(server, "cached_code"):
        return None
    try:
        if os.path.exists(importlib.util.cache_from_source(test_file)):
            return None
    except Exception:
        return None
    return server.cached_code(test_file)


def main(test_file, result_path, stop_early=False):
    result = {"tests": {}, "undecided": None}
    code = 0
    try:
        for variable in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
            if os.environ.get(variable):
                raise Undecided(variable + " is set")
        # pytest's own package (its version) and outcomes, without importing pytest: the gate server
        # that forks this runner has not (gate-server.ts), and pytest.__version__ is _pytest's.
        import _pytest
        from _pytest.outcomes import Exit, OutcomeException
        test_file = os.path.abspath(test_file)
        folder = os.path.dirname(test_file)
        if os.path.exists(os.path.join(folder, "__init__.py")):
            raise Undecided("the tests directory is a package")
        name = os.path.splitext(os.path.basename(test_file))[0]
        sys.path.insert(0, folder)
        sys.dont_write_bytecode = True
        # What pytest's fd capture gives a test: stdin on /dev/null, fds 1 and 2 into a file.
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        capture = tempfile.TemporaryFile()
        saved = os.dup(1), os.dup(2)
        os.environ["PYTEST_VERSION"] = _pytest.__version__
        try:
            os.dup2(capture.fileno(), 1)
            os.dup2(capture.fileno(), 2)
            try:
                spec = importlib.util.spec_from_file_location(name, test_file)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                compiled = precompiled(test_file)
                if compiled is None:
                    spec.loader.exec_module(module)
                else:
                    exec(compiled, module.__dict__)
            except Exception as problem:
                raise Undecided("importing the test module failed: " + type(problem).__name__)
            for test_name, function in collect(module):
                os.environ["PYTEST_CURRENT_TEST"] = os.path.basename(test_file) + "::" + test_name + " (call)"
                try:
                    function()
                    result["tests"][test_name] = "passed"
                except (OutcomeException, Exit) as outcome:
                    raise Undecided("pytest outcome " + type(outcome).__name__ + " in " + test_name)
                except KeyboardInterrupt:
                    raise Undecided("KeyboardInterrupt in " + test_name)
                except BaseException:
                    result["tests"][test_name] = "failed"
                    code = 1
                finally:
                    os.environ.pop("PYTEST_CURRENT_TEST", None)
                if code == 1 and stop_early:
                    break
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            # Closed, as a process reused for the next run must not hold them (gate-server.ts reusable).
            os.close(saved[0])
            os.close(saved[1])
            capture.close()
    except Undecided as why:
        result = {"tests": result["tests"], "undecided": str(why)}
        code = UNDECIDED
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--stop-at-first-failure" in sys.argv[3:]))
`;
