"""A corpus is declared once, in its own files: no shared module keeps a table of corpora, and a sixth corpus
dropped beside the five is found by everything that reads them (registry, harness, report, benchmarks, CLI)."""

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qahub import evaluate_cli, harness, lighteval_tasks, loaders, metrics, registry, tasks
from qahub.report import runs

ROOT = Path(__file__).resolve().parents[1]
NAMES = set(registry.corpus_names()) | set(registry.metric_names())


def _shared_files():
    """The project's Python files that belong to no corpus or metric (none of their names in the file's)."""
    for folder in ("src/qahub", "benchmarks", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not any(name in path.stem for name in NAMES):
                yield path


def _tables(path):
    """``(line, names)`` of every literal in ``path`` that maps two corpora or metrics or more (a dict keyed by
    them; outside the tests also a list, tuple or set of them: the tests may pick corpora for a scenario)."""
    kinds = (ast.Dict,) if path.parent.name == "tests" else (ast.Dict, ast.List, ast.Tuple, ast.Set)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, kinds):
            continue
        items = node.keys if isinstance(node, ast.Dict) else node.elts
        named = {item.value for item in items if isinstance(item, ast.Constant) and item.value in NAMES}
        if len(named) >= 2:
            yield node.lineno, sorted(named)


def test_no_shared_module_keeps_a_table_of_corpora():
    found = [f"{path.relative_to(ROOT)}:{line}: {', '.join(names)}"
             for path in _shared_files() for line, names in _tables(path)]
    assert found == [], "per-corpus tables outside the corpus's own files:\n" + "\n".join(found)


def test_the_scan_sees_a_table(tmp_path):
    table = tmp_path / "table.py"
    table.write_text('X = 1\nMETRIC_OF = {"limur": "limur", "jeopardy": "jeopardy_meteor"}\nCASES = ("jemhopqa", "limur")\n',
                     encoding="utf-8")
    assert list(_tables(table)) == [(2, ["jeopardy", "limur"]), (3, ["jemhopqa", "limur"])]


LOADER = '''
import datasets

from ._rows import RowsBuilder


class Quiz(RowsBuilder):
    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIGS = [datasets.BuilderConfig(name="plain", version=VERSION)]
    DEFAULT_CONFIG_NAME = "plain"
    SPLITS = {"plain": ["test"]}

    def _info(self):
        return datasets.DatasetInfo(features=datasets.Features({"q": datasets.Value("string"),
                                                                "a": datasets.Value("string")}))

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name="test")]

    def _generate_examples(self):
        yield 0, {"q": "2 + 2?", "a": "4"}
'''

TASK_API = '''
from .task_spec import TaskSpec

CORPUS = "quiz"


def score(reply, doc):
    return {"exact_match": float(reply.strip() == doc["a"]), "unparseable": int(not reply.strip())}


TASKS = {"qahub_quiz": TaskSpec(configs=["plain"], splits=["test"], prompt=lambda doc: doc["q"],
                                target=lambda doc: doc["a"], until=["\\n"], max_gen_toks=8, score=score,
                                metrics={"exact_match": ("mean", True), "unparseable": ("mean", False)},
                                oracle={"exact_match": 1.0, "unparseable": 0.0})}
'''

BENCH = '''
BUILD = {"config": "plain", "options": {}}


def make_source(folder, megabytes):
    folder.mkdir(parents=True)
    (folder / "quiz.txt").write_text("2 + 2?\\t4\\n" * (int(megabytes * 1e6 / 9) + 1), encoding="utf-8")
'''


@pytest.fixture
def quiz(tmp_path, monkeypatch):
    """A sixth corpus, ``quiz``, in its own files only: loader, metric directory (metric, task_api), command-line
    adapter and benchmark, each in a folder of tmp_path put on the path its kind is found on."""
    (tmp_path / "loaders").mkdir()
    (tmp_path / "loaders" / "quiz.py").write_text(LOADER, encoding="utf-8")
    (tmp_path / "metrics" / "quiz").mkdir(parents=True)
    (tmp_path / "metrics" / "quiz" / "quiz.py").write_text("", encoding="utf-8")
    (tmp_path / "metrics" / "quiz" / "task_api.py").write_text(TASK_API, encoding="utf-8")
    (tmp_path / "metrics" / "quiz" / "task_spec.py").symlink_to(ROOT / "metrics" / "_shared" / "task_spec.py")
    (tmp_path / "evaluate_cli").mkdir()
    (tmp_path / "evaluate_cli" / "quiz.py").write_text('HELP = "quiz"\n', encoding="utf-8")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_quiz.py").write_text(BENCH, encoding="utf-8")
    for package, folder in ((loaders, "loaders"), (metrics, "metrics"), (evaluate_cli, "evaluate_cli")):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path / folder)])
    monkeypatch.syspath_prepend(str(tmp_path / "benchmarks"))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    caches = (registry.corpus_names,)
    for cache in caches:
        cache.cache_clear()
    yield tmp_path
    for cache in caches:
        cache.cache_clear()
    for name in [m for m in sys.modules if m.endswith(".quiz") or ".quiz." in m or m == "bench_quiz"]:
        del sys.modules[name]


def test_a_sixth_corpus_in_its_own_files_is_found_everywhere(quiz):
    import bench_builds

    assert "quiz" in registry.corpus_names() and "quiz" in registry.metric_names()
    assert registry.catalog()["quiz"] == {"default": "plain", "configs": {"plain": ["test"]}}
    assert "quiz" in harness.corpora()
    assert harness.all_tasks()["qahub_quiz"].oracle == {"exact_match": 1.0, "unparseable": 0.0}
    assert "qahub_quiz" in runs.qahub_tasks()
    assert set(lighteval_tasks.declaration("quiz", "qahub_quiz")["metrics"]) == {"exact_match", "unparseable"}
    assert "quiz" in evaluate_cli.scoring_names()
    declared = bench_builds.case("quiz")
    assert declared["config"] == "plain"
    declared["make"](quiz / "big", 0.01)
    assert (quiz / "big" / "quiz.txt").stat().st_size >= 0.01e6


@pytest.mark.parametrize("task", sorted(harness.all_tasks()))
def test_each_task_declares_its_oracle_scores_and_its_binary_metrics_among_its_metrics(task):
    spec = harness.all_tasks()[task]
    assert spec.oracle and set(spec.oracle) <= set(spec.metrics), task
    assert set(spec.binary) <= set(spec.metrics), task
    for metric, value in spec.oracle.items():  # the oracle sits at the top, or at 0 for what is lower-better
        assert spec.metrics[metric].higher_is_better or value == 0.0, (task, metric)


@pytest.mark.parametrize("metric", ["doc2dial", "topical_chat"])
def test_a_doc_s_columns_are_its_features(metric):
    """DOC_COLUMNS (read without importing datasets) names the columns of doc_features(), in order."""
    api = importlib.import_module(f"qahub.metrics.{metric}.task_api")
    assert api.DOC_COLUMNS == tuple(api.doc_features())


def test_listing_the_inspect_tasks_imports_no_task_api():
    """inspect imports the entry point to list tasks: the names are read from the task_api files, none of which is
    imported for it (nor datasets, torch or transformers); they are the names the imported TASKS tables have."""
    code = ("import sys, qahub._registry; print(sorted(m for m in sys.modules if m.endswith('.task_api') or m in "
            "('datasets', 'torch', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert tasks.declared_tasks() == tasks.task_corpora()


def test_a_tasks_table_that_is_not_literal_is_imported_for_its_names(tmp_path):
    api = tmp_path / "task_api.py"
    api.write_text('CORPUS = "x"\nTASKS = {"qahub_x": 1}\n', encoding="utf-8")
    assert tasks._literal_names(api) == ["qahub_x"]
    for text in ('TASKS = {name: 1 for name in "ab"}\n', 'TASKS = {NAME: 1}\n', "TASKS = dict(a=1)\n", "def (:\n",
                 'TASKS = {"a": 1}\nTASKS.update(b=2)\n', 'TASKS = {"a": 1}\nTASKS = {"b": 2}\n',
                 'TASKS = {"a": 1, **OTHER}\n'):
        api.write_text(text, encoding="utf-8")
        assert tasks._literal_names(api) is None, text


@pytest.fixture(params=["quiz", "a_copy"])
def copied(request, tmp_path, monkeypatch):
    """A corpus copied from jemhopqa (loader and metric directory) whose task_api says ``CORPUS = "<copy>"`` but
    whose TASKS keys are not renamed yet: it declares ``qahub_jemhopqa`` too. ``a_copy`` sorts before jemhopqa."""
    name = request.param
    (tmp_path / "loaders").mkdir()
    shutil.copy(ROOT / "loaders" / "jemhopqa.py", tmp_path / "loaders" / f"{name}.py")
    folder = tmp_path / "metrics" / name
    shutil.copytree(ROOT / "metrics" / "jemhopqa", folder, symlinks=False)
    (folder / "jemhopqa.py").rename(folder / f"{name}.py")
    api = folder / "task_api.py"
    api.write_text(api.read_text(encoding="utf-8").replace('CORPUS = "jemhopqa"', f'CORPUS = "{name}"'),
                   encoding="utf-8")
    for package, where in ((loaders, "loaders"), (metrics, "metrics")):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path / where)])
    tasks.clear()
    yield name
    tasks.clear()
    for module in [m for m in sys.modules if m.endswith(f".{name}") or f".{name}." in m]:
        del sys.modules[module]


def test_a_copied_corpus_never_takes_over_the_task_it_did_not_rename(copied, sample_exports, tmp_path, capsys):
    from qahub import cli, inspect_tasks

    assert {"jemhopqa", copied} <= set(registry.corpus_names())
    assert cli.main(["list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "qahub_jemhopqa" in line]
    assert len(lines) == 1 and f"metrics/{copied}/task_api.py" in lines[0] and "jemhopqa keeps it" in lines[0]
    assert f"the {copied} tasks are refused" in lines[0]
    # one owner everywhere: the registry, inspect's entry point, the report, lm-eval's and lighteval's writers
    assert tasks.declared_tasks()["qahub_jemhopqa"] == tasks.task_corpora()["qahub_jemhopqa"] == "jemhopqa"
    assert copied not in tasks.declared_tasks().values() and copied not in harness.corpora()
    assert harness.all_tasks()["qahub_jemhopqa"].score.__module__ == "qahub.metrics.jemhopqa.task_api"
    assert runs.qahub_tasks()["qahub_jemhopqa"].score.__module__ == "qahub.metrics.jemhopqa.task_api"
    assert inspect_tasks.task_names()["jemhopqa"] == ("jemhopqa", "qahub_jemhopqa")
    location = str(sample_exports["jemhopqa"])
    assert set(harness.plan_tasks("jemhopqa", location)) == set(harness.task_api("jemhopqa").TASKS)
    with pytest.raises(harness.HarnessError, match="both declare the task qahub_jemhopqa: corpus jemhopqa keeps it"):
        harness.plan_tasks(copied, location)
    with pytest.raises(lighteval_tasks.LightevalTaskError, match=f"the {copied} tasks are refused"):
        lighteval_tasks.locations(f"jemhopqa={location},{copied}={location}")
    assert cli.main(["--quiet", "harness-tasks", "--out", str(tmp_path / "tasks"),
                     "--dataset", f"jemhopqa={location}", "--dataset", f"{copied}={location}"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "both declare the task qahub_jemhopqa" in err


def test_a_task_name_declared_twice_is_kept_by_the_corpus_it_is_named_after_else_the_first():
    assert tasks._keeper("qahub_jemhopqa", ["a_copy", "jemhopqa"]) == "jemhopqa"
    assert tasks._keeper("qahub_topical_chat_x", ["topical", "topical_chat"]) == "topical_chat"
    assert tasks._keeper("qahub_quiz", ["b", "a"]) == "a"
