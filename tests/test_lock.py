"""requirements.lock (written by `bash lock.sh`, installed by install.sh without resolving) agrees with
pyproject.toml: every requirement of the core and of the `test` extra, with the extras it names, is pinned there
to a version its specifier admits, on Python 3.11 and 3.12; and nothing is pinned as pyproject's that pyproject no
longer asks for. Read offline: nothing is resolved here."""

import copy
import re
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# the extra lock.sh locks (--extra test) and install.sh installs
LOCKED_EXTRA = "test"
# the machines the lock is for: Linux x86_64, CPython 3.11 and 3.12
ENVIRONMENTS = [
    {"python_version": v, "python_full_version": f"{v}.0", "sys_platform": "linux", "platform_system": "Linux",
     "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
     "platform_python_implementation": "CPython"}
    for v in ("3.11", "3.12")
]
FROM_PYPROJECT = "qahub (pyproject.toml)"


def read_lock(text):
    """[(Requirement, via)] of a `uv pip compile` output: each pin with the text of its `# via` annotation."""
    pins = []
    for line in text.splitlines():
        if line and not line.startswith((" ", "#")):
            pins.append((Requirement(line), []))
        elif pins and line.startswith(" "):
            pins[-1][1].append(line)
    return [(req, "\n".join(via)) for req, via in pins]


def wanted(project, extra=LOCKED_EXTRA):
    """pyproject's requirements of the core and of `extra`, following its `qahub[...]` references."""
    extras = project["optional-dependencies"]
    todo, seen, reqs = [extra], set(), [Requirement(r) for r in project["dependencies"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in map(Requirement, extras[name]):
            if canonicalize_name(req.name) == "qahub":
                todo.extend(req.extras)
            else:
                reqs.append(req)
    return reqs


def pins_in(lock, env):
    return {canonicalize_name(req.name): req for req, _ in lock if req.marker is None or req.marker.evaluate(env)}


def disagreements(project, lock_text):
    """One line per requirement the lock does not satisfy, and per pin it holds for pyproject in vain."""
    lock, reqs, problems = read_lock(lock_text), wanted(project), []
    for env in ENVIRONMENTS:
        pins = pins_in(lock, env)
        for req in reqs:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            pin = pins.get(canonicalize_name(req.name))
            version = next(iter(pin.specifier)).version if pin else None
            if version is None or not req.specifier.contains(version, prereleases=True):
                problems.append(f"Python {env['python_version']}: pyproject.toml asks for {req}, "
                                f"requirements.lock pins {version}")
    names = {canonicalize_name(req.name) for req in reqs}
    problems += [f"requirements.lock pins {req} for pyproject.toml, which no longer asks for it"
                 for req, via in lock if FROM_PYPROJECT in via and canonicalize_name(req.name) not in names]
    return problems


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def lock_text():
    return (ROOT / "requirements.lock").read_text(encoding="utf-8")


def test_the_lock_satisfies_pyproject_on_python_311_and_312():
    problems = disagreements(project(), lock_text())
    assert not problems, "re-run `bash lock.sh`:\n" + "\n".join(problems)


def test_every_pin_is_exact():
    for req, _ in read_lock(lock_text()):
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", str(req)


def test_a_new_or_narrowed_requirement_or_a_dropped_one_is_a_disagreement():
    changed = copy.deepcopy(project())
    changed["dependencies"].append("a-package-nobody-locked>=1")
    changed["dependencies"] = [re.sub(r"^datasets.*", "datasets>=99", r) for r in changed["dependencies"]]
    changed["optional-dependencies"]["report"].remove(
        next(r for r in changed["optional-dependencies"]["report"] if r.startswith("statsmodels")))
    problems = "\n".join(disagreements(changed, lock_text()))
    assert "a-package-nobody-locked>=1, requirements.lock pins None" in problems
    assert "asks for datasets>=99" in problems
    assert "pins statsmodels==" in problems and "no longer asks for it" in problems


def test_torch_is_the_cpu_build_and_lighteval_the_patched_release():
    """torch-cpu.txt's pin (the CPU build, not PyPI's CUDA one) is the lock's; lighteval is 0.13.0, the release
    lighteval_tasks.py patches (tests/test_lighteval_tasks.py holds the patch to its Registry)."""
    pinned = next(line for line in (ROOT / "torch-cpu.txt").read_text().splitlines() if line.startswith("torch=="))
    for env in ENVIRONMENTS:
        pins = pins_in(read_lock(lock_text()), env)
        assert str(pins["torch"]).split(" ;")[0] == pinned
        assert str(pins["lighteval"]).split(" ;")[0] == "lighteval==0.13.0"
