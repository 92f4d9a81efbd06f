"""Every check that a metric directory works without qahub, run for one metric in ONE fresh process (importing
``evaluate`` there costs ~15 s of CPU: once per metric, not once per check). The process blocks ``import qahub``
and records each attempt, has no NLTK data, a fresh HOME and HF_HOME, no network, and ``cwd`` a folder holding
``qahub metric-copy``'s copy of the metric. Each check runs on its own, its output captured; a check that fails
is recorded and the next one still runs. A metric's own checks are ``WITHOUT_QAHUB`` in its test file. The tests
that own the checks read their results (``conftest``'s
``metric_alone`` fixture, shared by the test files and xdist workers through a file-locked file)."""

import importlib
import importlib.util
import json
import re
import subprocess
import sys
import textwrap

RUNNER = textwrap.dedent(
    """
    import contextlib, importlib.abc, io, json, sys, traceback

    ATTEMPTS = []

    class NoQahub(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "qahub" or name.startswith("qahub."):
                ATTEMPTS.append(name)
                raise ModuleNotFoundError(f"No module named {name!r} (qahub is not installed here)")
            return None

    sys.meta_path.insert(0, NoQahub())
    name, source, checks, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    results = {}
    for check, code in checks.items():
        printed, before = io.StringIO(), len(ATTEMPTS)
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, check, "exec"), {"__name__": "__main__", "name": name, "source": source})
            error = None
        except BaseException:
            error = traceback.format_exc()
        results[check] = {"ok": error is None, "error": error, "stdout": printed.getvalue(),
                          "qahub_imports": ATTEMPTS[before:]}
    results["qahub_in_sys_modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "qahub")
    with open(out, "w", encoding="utf-8") as file:
        json.dump(results, file)
    """
)

# the metric README's first python example that loads the metric, as a user pastes it (tests/test_suite_cli.py)
README = "{example}\nprint('EXAMPLE-OK')\n"

# the kwargs docstring's examples, as in the official metrics (tests/test_suite_cli.py)
DOCSTRINGS = textwrap.dedent(
    """
    import ast, doctest, warnings
    import evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(open(f"{name}/{name}.py", encoding="utf-8").read())
        text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                    and getattr(node.targets[0], "id", "") == "_KWARGS_DESCRIPTION")
        test = doctest.DocTestParser().get_doctest(text, {"evaluate": evaluate}, name, f"{name}.py", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
    print(f"DOCTEST {runner.failures} failed of {runner.tries}")
    """
)

# the repository's metric directory (its helpers linked) loaded by path: its TASKS are TaskSpecs of evaluate's
# copy of the linked task_spec.py (tests/test_metric_modules.py)
TASK_SPECS = textwrap.dedent(
    """
    import json, sys
    import evaluate

    metric = evaluate.load(source, cache_dir="task-specs-cache")
    tasks = sys.modules[type(metric).__module__].TASKS
    print(json.dumps([type(metric).__name__, {task: type(spec).__module__ for task, spec in tasks.items()}]))
    """
)

def _own_checks(metric: str) -> dict:
    """``WITHOUT_QAHUB`` of tests/test_<metric>_metric.py: the metric's own checks (code, run as the others)."""
    if importlib.util.find_spec(f"test_{metric}_metric") is None:
        return {}
    return getattr(importlib.import_module(f"test_{metric}_metric"), "WITHOUT_QAHUB", {})


def readme_example(readme_text: str, metric: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", readme_text, re.S)
    runnable = [b for b in blocks if "evaluate.load(" in b and ">>>" not in b]
    assert runnable, f"{metric}: README has no python example that loads the metric"
    return runnable[0]


def run(metric: str, folder, environ: dict) -> dict:
    """``{check: {ok, error, stdout, qahub_imports}}`` of every check of ``metric``, run in one fresh process in
    ``folder`` (a new, empty folder)."""
    from qahub import cli, registry

    assert cli.main(["--quiet", "metric-copy", metric, "--out", str(folder)]) == 0
    source = registry.metric_dir(metric)
    example = readme_example((source / "README.md").read_text(encoding="utf-8"), metric)
    checks = {"blocker": "import qahub\n", "readme": README.format(example=example), "docstrings": DOCSTRINGS,
              "task_specs": TASK_SPECS, **_own_checks(metric)}
    env = {**environ, "HOME": str(folder), "HF_HOME": str(folder / "hf"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "NLTK_DATA": str(folder / "no-nltk-data"), "PYTHONPATH": ""}
    out = folder / "results.json"
    done = subprocess.run([sys.executable, "-c", RUNNER, metric, str(source), json.dumps(checks), str(out)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and out.is_file(), done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))
