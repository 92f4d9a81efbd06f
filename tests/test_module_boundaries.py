"""Which module may import which (issue 28, item 2), read from the code's imports with ``ast``:

- the ``qahub evaluate`` command package, ``qahub.evaluate_cli``, is imported only by itself and by the command
  line that dispatches to it (``cli.py``): the library (the export reader, the harness, publishing, the report, ...)
  never climbs back into a command;
- the loaders' private source helper, ``loaders/_sources.py`` (``qahub.loaders._sources``), is imported only by the
  loaders beside it: what others read with is the public ``qahub.readers``;
- the export reader ``qahub.exports`` and the strict readers ``qahub.readers`` import nothing of the command line.

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
    assert "qahub.readers" in imported(LOADERS / "limur.py")
    assert "qahub.evaluate_cli" in imported(SRC / "cli.py")  # from qahub import evaluate_cli
    assert "qahub.exports" in imported(EVALUATE_CLI / "limur.py")
    assert {"qahub.evaluate_cli.predictions", "qahub.evaluate_cli.adapter"} <= imported(EVALUATE_CLI / "limur.py")
    assert len(FILES) > 50 and SRC / "exports.py" in FILES and SRC / "readers.py" in FILES


def test_only_the_command_line_imports_the_evaluate_commands():
    outside = [path for path in FILES if not path.is_relative_to(EVALUATE_CLI) and path != SRC / "cli.py"
               and not path.is_relative_to(ROOT / "benchmarks")]  # bench_limur reads its inputs as the command does
    assert importers("qahub.evaluate_cli", outside) == {}


def test_only_the_loaders_import_their_source_helper():
    outside = [path for path in FILES if not path.is_relative_to(LOADERS)]
    assert importers("qahub.loaders._sources", outside) == {}


@pytest.mark.parametrize("module", ["exports.py", "readers.py"])
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
