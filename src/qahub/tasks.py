"""Where qahub finds its corpora, their metrics and their tasks: one scanner, one rule.

A corpus ``NAME`` is registered when all three of its declarations are there: a dataset builder class in
``loaders/NAME.py``, a metric directory ``metrics/METRIC/METRIC.py``, and in it ``task_api.py`` declaring
``CORPUS = "NAME"`` (and its ``TASKS``). Any other module there (a backup copy, a corpus whose metric is not
written yet, a metric whose corpus is gone) is not registered: ``left_out()`` says why, one line per file, and
``qahub list`` prints those lines. The scan reads the files with ``ast`` and imports none of them (a builder
class is a top-level class with a base named ``...Builder``; a declaration is a top-level ``NAME = ...`` or
``NAME: type = ...``; ``registry`` takes the class the scan named and reads training declarations here); a corpus's
``task_api`` is imported only when its tasks are asked for, and one that does not import leaves out that corpus
alone (``importable`` warns once, naming the file). Each ``TASKS`` entry is a ``TaskSpec`` (the type is
``metrics/_shared/task_spec.py``, linked into each metric directory; re-exported here).

A task name is one corpus's. When two corpora declare the same name (a corpus copied from another, its ``TASKS``
keys not renamed yet), the corpus the name is made from keeps it (``qahub_jemhopqa_x`` is ``jemhopqa``'s), else
the first in alphabetical order; every task of the other corpus is refused (``task_api`` raises, ``clashes()``
gives the one line ``qahub list`` prints), so that every harness, the report and lighteval read the same task and
never the later copy silently.
"""

from __future__ import annotations

import ast
import functools
import importlib
import logging
import pkgutil
from dataclasses import dataclass
from pathlib import Path

from qahub import loaders, metrics
from qahub.metrics._shared.task_spec import Grader, Metric, TaskSpec, is_task_spec

# the task declaration's type, re-exported: `from qahub.tasks import TaskSpec`
__all__ = ["Grader", "Metric", "TaskSpec", "TaskError", "all_tasks", "builder_classes", "clashes", "clear",
           "corpora", "corpus_names", "declared", "declared_tasks", "importable", "is_task_spec", "left_out",
           "metric_dirs", "scan", "task_api", "task_corpora"]

logger = logging.getLogger(__name__)


class TaskError(ValueError):
    """A corpus that is not registered, or whose ``task_api`` cannot be used."""


@dataclass(frozen=True)
class Found:
    metric_of: dict  # {corpus: metric} of every registered corpus
    metric_dirs: dict  # {metric: directory} of every registered corpus's metric
    builders: dict  # {corpus: [builder class names]} of every loader module with one
    left_out: tuple  # one line per module that is not part of a registered corpus
    names: dict  # {corpus: frozenset of the top-level names its task_api declares} (registry's training configs)


@functools.lru_cache(maxsize=None)
def scan() -> Found:
    builders, left_out = _loaders()
    claimed, names = {}, {}
    dirs = _metric_dirs()
    for metric, folder in dirs.items():
        found = declared(folder / "task_api.py")
        corpus = _corpus_of(found)
        names[metric] = frozenset(found)
        if corpus is None:
            left_out.append(f'{folder}: not registered: no task_api.py declaring CORPUS = "<corpus>" beside it')
        else:
            claimed.setdefault(corpus, []).append(metric)
    metric_of = {}
    for corpus, metric_names in claimed.items():
        apis = [str(dirs[m] / "task_api.py") for m in metric_names]
        if len(apis) > 1:
            left_out.append(f"{' and '.join(apis)}: each declares CORPUS = {corpus!r}; neither is registered "
                            "(remove the stray copy)")
        elif corpus not in builders:
            left_out.append(f"{apis[0]}: not registered: it declares CORPUS = {corpus!r}, and loaders/ has no "
                            f"{corpus}.py with a dataset builder class")
        else:
            metric_of[corpus] = metric_names[0]
    for corpus, (path, _) in builders.items():
        if corpus not in claimed:
            left_out.append(f"{path}: not registered: no metric's task_api.py declares CORPUS = {corpus!r} "
                            "(a corpus is its loader, its metric and its tasks)")
    return Found(dict(sorted(metric_of.items())), {metric_of[c]: dirs[metric_of[c]] for c in sorted(metric_of)},
                 {corpus: classes for corpus, (_, classes) in builders.items()}, tuple(left_out),
                 {corpus: names[metric] for corpus, metric in sorted(metric_of.items())})


def _loaders() -> tuple[dict, list]:
    """``{name: (path, [builder class names])}`` of every module of ``loaders`` that declares a dataset builder
    class, and one line for each one that does not."""
    found, left_out = {}, []
    for module in pkgutil.iter_modules(loaders.__path__):
        if module.name.startswith("_"):
            continue
        folder = Path(module.module_finder.path)
        path = folder / module.name / "__init__.py" if module.ispkg else folder / f"{module.name}.py"
        names = builder_classes(path)
        if names:
            found[module.name] = (path, names)
        else:
            left_out.append(f"{path}: not registered: no dataset builder class (class NAME(RowsBuilder))")
    return dict(sorted(found.items())), left_out


def _metric_dirs() -> dict:
    """``{name: directory}`` of every ``<name>/<name>.py`` on ``qahub.metrics``'s path (the first of a name)."""
    dirs = {}
    for root in map(Path, metrics.__path__):
        for path in sorted(root.iterdir()):
            if (path / f"{path.name}.py").is_file():
                dirs.setdefault(path.name, path)
    return dirs


def _corpus_of(found: dict) -> str | None:
    """The ``CORPUS = "..."`` (or ``CORPUS: str = "..."``) of a task_api's ``declared`` names."""
    value = found.get("CORPUS")
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def builder_classes(path: Path) -> list[str]:
    """The names of the module's top-level dataset builder classes: those with a base named ``...Builder``
    (``RowsBuilder``, ``datasets.GeneratorBasedBuilder``)."""
    return [node.name for node in _statements(path) if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).split("[")[0].split(".")[-1].endswith("Builder") for base in node.bases)]


def declared(path: Path) -> dict:
    """``{name: value}`` of the module's top-level ``NAME = value`` and ``NAME: type = value`` (value None when
    only annotated), as ``ast`` nodes."""
    found = {}
    for node in _statements(path):
        if isinstance(node, ast.Assign):
            found.update((target.id, node.value) for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node.value
    return found


def _statements(path: Path) -> list:
    """The module's top-level statements; of a file that does not parse, those before its syntax error (a
    task_api broken further down still names its corpus, so that only that corpus is left out, saying why)."""
    lines = _text(path).splitlines()
    while True:
        try:
            return ast.parse("\n".join(lines)).body
        except (SyntaxError, ValueError) as err:
            if not lines:
                return []
            lines = lines[:min(len(lines), getattr(err, "lineno", None) or len(lines)) - 1]


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def clear():
    """Forget the scan (and the warnings given), e.g. after a test puts another folder on a package's path."""
    scan.cache_clear()
    _names_of.cache_clear()
    _warn_once.cache_clear()


def corpus_names() -> tuple[str, ...]:
    return tuple(scan().metric_of)


def metric_dirs() -> dict:
    return scan().metric_dirs


def left_out() -> tuple[str, ...]:
    return scan().left_out


def task_api(corpus: str):
    """The ``task_api`` module of the metric that declares ``CORPUS = corpus``; refused when another corpus has
    one of its task names (``clashes``). No other corpus's is imported, unless its ``TASKS`` is computed (its
    names are then had by importing it)."""
    module = _loaded(corpus)
    clash = clashes().get(corpus)
    if clash:
        raise TaskError(clash)
    return module


def _loaded(corpus: str):
    """The corpus's ``task_api`` module, imported and its ``TASKS`` checked."""
    metric_of = scan().metric_of
    if corpus not in metric_of:
        raise TaskError(f"unknown corpus {corpus!r}; tasks exist for: {', '.join(metric_of) or 'none'}")
    path = _task_api_path(corpus)
    try:
        module = importlib.import_module(f"qahub.metrics.{metric_of[corpus]}.task_api")
    except Exception as err:  # whatever a broken file raises, it stops its own corpus only
        raise TaskError(f"{path}: does not import: {type(err).__name__}: {' '.join(str(err).split())}") from None
    if not isinstance(getattr(module, "TASKS", None), dict):
        raise TaskError(f"{path}: declares no TASKS table")
    for name, spec in module.TASKS.items():
        # by its fields, not isinstance: the module imported its own copy of the type (see is_task_spec)
        if not is_task_spec(spec):
            raise TaskError(f"{path}: TASKS[{name!r}] is a {type(spec).__name__}, not a TaskSpec "
                            "(from .task_spec import TaskSpec)")
    return module


def importable() -> dict:
    """``{corpus: task_api module}`` of every registered corpus whose ``task_api`` imports; each other one is
    left out with one warning naming its file (once per process)."""
    return {corpus: module for corpus in corpus_names() if (module := _imported(corpus))}


def _imported(corpus: str):
    """The corpus's ``task_api``, or None with one warning naming its file."""
    try:
        return task_api(corpus)
    except TaskError as err:
        _warn_once(f"{err}; the {corpus} tasks are left out")
        return None


def _task_api_path(corpus: str) -> Path:
    return metric_dirs()[scan().metric_of[corpus]] / "task_api.py"


@functools.lru_cache(maxsize=None)
def _warn_once(message: str):
    logger.warning(message)


def corpora() -> tuple[str, ...]:
    """The corpora whose tasks can be run."""
    return tuple(importable())


def all_tasks() -> dict:
    """``{task: TaskSpec}`` of every corpus whose tasks can be run."""
    return {name: spec for module in importable().values() for name, spec in module.TASKS.items()}


def task_corpora() -> dict:
    """``{task: corpus}`` of every corpus whose tasks can be run."""
    return {name: corpus for corpus, module in importable().items() for name in module.TASKS}


def declared_tasks() -> dict:
    """``{task: corpus}`` as the task_api files declare them, read without importing them (what inspect's entry
    point registers: a corpus's task_api is imported when its task is built). A file whose ``TASKS`` is not a
    top-level dict with literal names (or that does not parse) is imported instead, by ``importable``'s rules.
    A corpus refused for a task name another corpus has (``clashes``) declares none."""
    refused = clashes()
    return {name: corpus for corpus, names in _names_of().items() if corpus not in refused for name in names}


@functools.lru_cache(maxsize=None)
def _names_of() -> dict:
    """``{corpus: [task names]}`` of every registered corpus, as ``declared_tasks`` reads them."""
    found = {}
    for corpus in corpus_names():
        names = _literal_names(_task_api_path(corpus))
        if names is None:  # only this corpus's task_api is imported
            try:
                names = list(_loaded(corpus).TASKS)
            except TaskError as err:
                _warn_once(f"{err}; the {corpus} tasks are left out")  # as importable says it
                names = []
        found[corpus] = names
    return found


def clashes() -> dict:
    """``{corpus: the one line saying why}`` of every corpus refused for declaring a task name that another
    corpus keeps: the corpus the name is made from (``qahub_<corpus>`` or ``qahub_<corpus>_...``, the longest
    such), else the first in alphabetical order."""
    declaring = {}
    for corpus, names in _names_of().items():
        for name in names:
            declaring.setdefault(name, []).append(corpus)
    refused = {}
    for name, corpora in declaring.items():
        if len(corpora) < 2:
            continue
        keeper = _keeper(name, corpora)
        for corpus in corpora:
            if corpus != keeper and corpus not in refused:
                refused[corpus] = (f"{_task_api_path(corpus)} and {_task_api_path(keeper)} both declare the "
                                   f"task {name}: corpus {keeper} keeps it, and the {corpus} tasks are refused "
                                   f"until {corpus}'s is renamed (its TASKS key)")
    return refused


def _keeper(name: str, corpora: list) -> str:
    named = [c for c in corpora if name == f"qahub_{c}" or name.startswith(f"qahub_{c}_")]
    return max(named, key=len) if named else min(corpora)


def _literal_names(path: Path) -> list[str] | None:
    """The string keys of ``path``'s ``TASKS = {...}``, when that literal assignment is the only place the file
    names ``TASKS`` (a later ``TASKS.update(...)`` or reassignment could change them); else None."""
    try:
        tree = ast.parse(_text(path))
    except (SyntaxError, ValueError):
        return None
    mentions = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "TASKS"]
    literal = [node.value for node in tree.body if isinstance(node, ast.Assign) and len(node.targets) == 1
               and node.targets[0] in mentions and isinstance(node.value, ast.Dict)]
    if len(mentions) != 1 or len(literal) != 1:
        return None
    keys = literal[0].keys
    if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
        return None
    return [k.value for k in keys]


def document_id(spec: TaskSpec, doc: dict, position: int):
    """The document's id: the one its task declares (``doc_id``), or its position when it declares none (or the
    document has none). inspect's Sample.id, and what a report pairs an lm-eval and an inspect run of it on."""
    value = spec.doc_id(doc) if spec.doc_id else None
    return position if value is None else value
