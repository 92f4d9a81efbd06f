"""Which module may import which (issue 28, item 2), read from the code's imports with ``ast``:

- the ``qahub evaluate`` command package, ``qahub.evaluate_cli``, is imported only by itself and by the command
  line that dispatches to it (``cli.py``): the library (the export reader, the harness, publishing, the report, ...)
  never climbs back into a command;
- the loaders' private source helper, ``loaders/_sources.py`` (``qahub.loaders._sources``), is imported only by the
  loaders beside it: what others read with is the public ``qahub.readers``;
- the export reader ``qahub.export.reader`` and the strict readers ``qahub.readers`` import nothing of the command line.
- no import circle among modules, nor among packages (``qahub.report``, ``qahub.loaders``, ...), and nothing in
  ``qahub.report`` reaches back up into its callers (issue 44, item 4).

Checked: the installed package (``src/qahub``, ``loaders/``, ``metrics/``) and the benchmarks. The tests are not:
they import what they test, private modules included.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "qahub"
EVALUATE_CLI = SRC / "evaluate_cli"
LOADERS = ROOT / "loaders"
CHECKED = [SRC, LOADERS, ROOT / "metrics", ROOT / "benchmarks"]


def python_files(folders):
    return sorted(path for folder in folders for path in folder.rglob("*.py") if ".venv" not in path.parts)


def package_of(path: Path) -> str:
    """The dotted package ``path`` is installed in (relative imports are resolved against it)."""
    for folder, package in ((SRC, "qahub"), (LOADERS, "qahub.loaders"), (ROOT / "metrics", "qahub.metrics")):
        if path.is_relative_to(folder):
            return ".".join([package, *path.relative_to(folder).parent.parts])
    return ""  # a benchmark: a script, no package


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, as dotted names: ``from a import b`` counts as ``a`` and ``a.b`` (``b`` may
    be a module), relative imports resolved; ``importlib.import_module("...")`` with a literal (or the literal
    start of an f-string) counts too."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = resolved(path, node)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            names.add(literal_start(node.args[0]) if node.args else "")
    return names


def resolved(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module
    parts = package_of(path).split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def literal_start(arg) -> str:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return arg.values[0].value.rstrip(".")
    return ""


def importers(module: str, files) -> dict[str, list[str]]:
    """``{file: [what of module it imports]}`` of the ``files`` that import ``module`` or something inside it."""
    found = {}
    for path in files:
        hits = sorted(name for name in imported(path) if name == module or name.startswith(module + "."))
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    return found


FILES = python_files(CHECKED)


def test_the_scan_reads_every_kind_of_import():
    """The reader of imports itself: absolute, relative, ``from package import module`` and import_module."""
    assert "qahub.loaders._sources" in imported(LOADERS / "limur.py")  # from ._sources import ...
    assert "qahub.readers" in imported(LOADERS / "_limur_files.py")
    assert "qahub.loaders._limur_files" in imported(LOADERS / "limur.py")  # from ._limur_files import ...
    assert "qahub.evaluate_cli" in imported(SRC / "cli.py")  # from qahub import evaluate_cli
    assert "qahub.export.reader" in imported(EVALUATE_CLI / "limur.py")
    assert {"qahub.evaluate_cli.predictions", "qahub.evaluate_cli.adapter"} <= imported(EVALUATE_CLI / "limur.py")
    assert len(FILES) > 50 and SRC / "export" / "reader.py" in FILES and SRC / "readers.py" in FILES


def test_only_the_command_line_imports_the_evaluate_commands():
    outside = [path for path in FILES if not path.is_relative_to(EVALUATE_CLI) and path != SRC / "cli.py"
               and not path.is_relative_to(ROOT / "benchmarks")]  # bench_limur reads its inputs as the command does
    assert importers("qahub.evaluate_cli", outside) == {}


def test_only_the_loaders_import_their_source_helper():
    outside = [path for path in FILES if not path.is_relative_to(LOADERS)]
    assert importers("qahub.loaders._sources", outside) == {}


@pytest.mark.parametrize("module", ["export/reader.py", "readers.py"])
def test_the_library_readers_import_nothing_of_the_command_line(module):
    path = SRC / module
    assert importers("qahub.evaluate_cli", [path]) == {}
    assert importers("qahub.cli", [path]) == {}


def test_the_readers_need_neither_qahub_nor_datasets_to_import():
    """``qahub.readers`` is imported by the builders and by ``qahub evaluate``: it imports nothing of qahub, and
    ``datasets`` only inside the function that opens a URL."""
    tree = ast.parse((SRC / "readers.py").read_text(encoding="utf-8"))
    top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert not {name for name in top if name.split(".")[0] in ("qahub", "datasets")}


# --- no import circle among qahub's modules, no private name used across them (issue 36, item 10)

PACKAGE_FILES = [path for path in FILES if package_of(path)]  # the installed package: src/qahub, loaders, metrics


def module_name(path: Path) -> str:
    package = package_of(path)
    return package if path.stem == "__init__" else f"{package}.{path.stem}"


MODULES = {module_name(path): path for path in PACKAGE_FILES}


def known(name: str) -> str | None:
    """The qahub module ``name`` is, or is inside (``qahub.harness.task_api`` -> ``qahub.harness``); else None."""
    parts = name.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in MODULES), None)


def qahub_imports(path: Path) -> set[str]:
    """The qahub modules ``path`` imports, at module level or inside a function: ``from a import b`` is the module
    ``a.b`` when ``b`` is one, else ``a``; a module's own package, imported with it, is not counted."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(known(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = resolved(path, node)
            found.update(known(f"{module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            found.add(known(literal_start(node.args[0])) if node.args else None)
    own = module_name(path)
    return {name for name in found if name and name != own and not own.startswith(name + ".")}


def circles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_import_scan_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert "qahub.tasks" in qahub_imports(SRC / "registry.py")  # from qahub import tasks
    assert "qahub" not in qahub_imports(SRC / "registry.py")  # ... which is not the package qahub's __init__
    assert "qahub.metrics._shared.task_spec" in qahub_imports(SRC / "tasks.py")
    assert "qahub.report.inspect_logs" in qahub_imports(SRC / "report" / "sources.py")  # from . import inspect_logs


def test_no_import_circle_among_qahub_modules():
    """``console`` and ``publish`` once imported each other (for ``scrub``), ``exports`` and ``harness`` (for
    ``task_api``): a module imports only what sits below it, at module level or inside a function."""
    graph = {name: qahub_imports(path) for name, path in MODULES.items()}
    found = circles(graph)
    assert found == [], "import circles: " + "; ".join(" <-> ".join(circle) for circle in found)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


BENCHMARKS = ROOT / "benchmarks"


def module_of(path: Path, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` reads: resolved in the package, or a benchmark script's sibling by name."""
    return resolved(path, node) if package_of(path) or node.level else node.module


def private_uses(path: Path) -> list[str]:
    """``from M import _name`` and ``M._name`` in ``path``, ``M`` another module of qahub or of the benchmarks
    (a private *module*, ``_sources``, ``_rows``, ``_shared``, ``_common``, is fine: it is a name of its package)."""
    siblings = {p.stem for p in BENCHMARKS.glob("*.py")}
    ours = set(MODULES) | siblings
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bound, uses = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update({alias.asname or alias.name: alias.name for alias in node.names if alias.name in ours})
        elif isinstance(node, ast.ImportFrom) and (module := module_of(path, node)):
            for alias in node.names:
                if f"{module}.{alias.name}" in ours:
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif is_private(alias.name) and (module in ours or known(module)) and module != module_name(path):
                    uses.append(f"from {module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr) and isinstance(node.value, ast.Name) \
                and node.value.id in bound:
            uses.append(f"{bound[node.value.id]}.{node.attr}")
    return uses


def test_the_private_name_scan_finds_each_kind_of_use(tmp_path):
    folder = SRC / "evaluate_cli"
    assert private_uses(folder / "adapter.py") == []
    sample = tmp_path / "bench_x.py"
    sample.write_text("import bench_cli\nfrom bench_limur import _x\nfrom _common import row\nbench_cli._y()\n",
                      encoding="utf-8")
    assert private_uses(sample) == ["from bench_limur import _x", "bench_cli._y"]


def test_no_private_name_is_used_across_modules():
    """``harness._configs``/``_splits`` in inspect_tasks, ``loaders.jemhopqa._FILES`` in a benchmark, a metric's
    ``direct_score._score`` in its module, ...: what another module needs is public."""
    found = {str(path.relative_to(ROOT)): uses for path in FILES if (uses := private_uses(path))}
    assert found == {}


# --- packages import one way; the report imports nothing of its callers (issue 44, item 4)

REPORT = "qahub.report"
# who calls the report: the command line that dispatches to it, and the commands beside it at the top. The report
# and its outputs (render, hub_files, publish) are imported by these, never the other way round.
CALLERS = ("qahub.cli", "qahub.demo", "qahub.evaluate_cli", "qahub.harness", "qahub.pick_docs", "qahub.builds")


# the packages that are one layer each; qahub.export is not: its reader sits below the harness planning (which
# reads exports) and its writer above the training configs (which plan with it), so its modules are nodes of their own
LAYERS = ("qahub.report", "qahub.evaluate_cli", "qahub.loaders", "qahub.metrics")


def package_name(module: str) -> str:
    """The node ``module`` is in the package graph: its sub-package of qahub (``qahub.report.runs`` ->
    ``qahub.report``, ``qahub.metrics.limur.judge`` -> ``qahub.metrics``), or the module itself when it sits in
    qahub's own folder (``qahub.tasks``): those are a flat set of modules, each its own node, not one layer."""
    top = ".".join(module.split(".")[:2])
    return top if top in LAYERS else module


def package_graph(graph: dict) -> dict:
    """The module graph folded onto packages: A -> B when a module of A imports one of B."""
    folded = {}
    for module, imports in graph.items():
        node = package_name(module)
        folded.setdefault(node, set()).update(package_name(name) for name in imports if package_name(name) != node)
    return folded


def reached(graph: dict, start) -> set:
    """Every module ``start``'s modules import, directly or through others."""
    seen, todo = set(), list(start)
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def callers_in(names) -> list:
    return sorted(name for name in names if any(name == c or name.startswith(c + ".") for c in CALLERS))


def in_report(name: str) -> bool:
    return name == REPORT or name.startswith(REPORT + ".")


MODULE_GRAPH = {name: qahub_imports(path) for name, path in MODULES.items()}


def test_the_package_scan_finds_the_loop_the_hub_files_made(tmp_path):
    """Main's loop, planted: ``qahub.hub_results`` imported ``report.runs`` (in a function), ``report/__init__``
    imported ``hub_results``. No module imports itself back, so only the package graph shows it; and a report
    module importing a caller, at module level or in a function, is found."""
    planted = {"qahub.hub_results": {"qahub.report.runs", "qahub.tasks"}, "qahub.report": {"qahub.hub_results"},
               "qahub.report.runs": {"qahub.tasks"}, "qahub.tasks": set()}
    assert circles(planted) == []
    assert circles(package_graph(planted)) == [["qahub.hub_results", "qahub.report"]]
    assert package_name("qahub.metrics.limur.judge") == "qahub.metrics" and package_name("qahub.cli") == "qahub.cli"
    inside = tmp_path / "inside.py"
    inside.write_text("def run():\n    from qahub.cli import main\n    return main\n", encoding="utf-8")
    top = tmp_path / "top.py"
    top.write_text("import qahub.evaluate_cli.adapter\nfrom qahub import harness\n", encoding="utf-8")
    assert callers_in(qahub_imports(inside)) == ["qahub.cli"]
    assert callers_in(qahub_imports(top)) == ["qahub.evaluate_cli.adapter", "qahub.harness"]
    assert callers_in(reached({"qahub.report.x": {"qahub.files"}, "qahub.files": {"qahub.cli"}}, ["qahub.report.x"])) \
        == ["qahub.cli"]


def test_no_import_circle_among_qahub_packages():
    """``qahub.report``, ``qahub.evaluate_cli``, ``qahub.loaders``, ``qahub.metrics`` and the modules in qahub's
    own folder: a package imports only what sits below it, at module level or inside a function."""
    found = circles(package_graph(MODULE_GRAPH))
    assert found == [], "package import circles: " + "; ".join(" <-> ".join(circle) for circle in found)


def test_every_module_that_imports_the_report_is_a_named_caller():
    """The list above stays true: a new module outside ``report/`` that imports it is named in CALLERS (or is
    moved into the report, as its Hub files and ``publish-results`` were)."""
    outside = {name for name, imports in MODULE_GRAPH.items() if not in_report(name) and any(map(in_report, imports))}
    assert outside and set(callers_in(outside)) == outside, f"import the report, not named in CALLERS: {outside}"


def test_nothing_in_the_report_imports_its_callers():
    """Neither a report module's own imports (module level or inside a function) nor what those import in turn
    reach the command line or a command beside the report."""
    report = [name for name in MODULE_GRAPH if in_report(name)]
    assert {"qahub.report.hub_files", "qahub.report.publish", "qahub.report.render"} <= set(report)
    direct = {name: found for name in report if (found := callers_in(MODULE_GRAPH[name]))}
    assert direct == {}
    assert callers_in(reached(MODULE_GRAPH, report)) == []


# --- functions stay short (issue 44, item 7)

LONGEST = 40  # lines, decorators excluded


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > LONGEST]


def test_the_length_scan_finds_a_long_function(tmp_path):
    sample = tmp_path / "sample.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    sample.write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n", encoding="utf-8")
    assert long_functions(sample) == [f"sample.py:5 long ({LONGEST + 1} lines)"]


def test_no_function_of_the_package_or_its_benchmarks_is_over_40_lines():
    folders = [SRC, LOADERS, ROOT / "metrics", ROOT / "benchmarks"]
    found = [line for path in python_files(folders) for line in long_functions(path)]
    assert found == []
