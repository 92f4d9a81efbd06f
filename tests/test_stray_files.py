"""A stray or broken file breaks only itself: a module in loaders/ or metrics/ that is not a complete corpus (a
backup copy, a corpus whose metric is not written yet) is not registered and ``qahub list`` says so; a corpus whose
task_api does not import is left out of the other corpora's commands with one warning naming the file."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_one_declaration import LOADER, TASK_API

from qahub import cli, evaluate_cli, inspect_tasks, loaders, metrics, planning, registry, tasks
from qahub.report import runs

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).parent
FIVE = registry.corpus_names()


@pytest.fixture
def extra(tmp_path, monkeypatch):
    """Folders ``tmp_path/loaders`` and ``tmp_path/metrics`` put on the path their kind is found on."""
    for package, folder in ((loaders, "loaders"), (metrics, "metrics")):
        (tmp_path / folder).mkdir()
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path / folder)])
    tasks.clear()
    yield tmp_path
    tasks.clear()


def _listed(capsys) -> tuple[list[str], str]:
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    corpora = [line.split()[0] for line in out.split("\n\n")[0].splitlines()[2:]]
    return sorted(set(corpora)), out


def test_a_backup_copy_of_a_loader_is_not_a_corpus_and_list_says_so_once(extra, capsys):
    stray = extra / "loaders" / "jeopardy_old.py"
    shutil.copy(ROOT / "loaders" / "jeopardy.py", stray)
    assert registry.corpus_names() == FIVE and "jeopardy_old" not in registry.catalog()
    corpora, out = _listed(capsys)
    assert corpora == sorted(FIVE)
    assert out.count(str(stray)) == 1
    assert f"{stray}: not registered: no metric's task_api.py declares CORPUS = 'jeopardy_old'" in out
    assert sorted(inspect_tasks.task_names()) == sorted(t.removeprefix("qahub_") for t in planning.all_tasks())
    assert set(planning.corpora()) == set(FIVE)


def test_a_new_loader_before_its_metric_exists_is_not_registered(extra, capsys):
    (extra / "loaders" / "quiz.py").write_text(LOADER, encoding="utf-8")
    assert "quiz" not in registry.corpus_names()
    with pytest.raises(registry.UnknownNameError, match="unknown corpus 'quiz'"):
        registry.builder_module("quiz")
    _, out = _listed(capsys)
    assert f"{extra / 'loaders' / 'quiz.py'}: not registered: no metric's task_api.py declares CORPUS = 'quiz'" in out


def test_a_loader_module_without_a_builder_class_is_not_registered(extra, capsys):
    helper = extra / "loaders" / "helpers.py"
    helper.write_text("def clean(text):\n    return text.strip()\n", encoding="utf-8")
    assert registry.corpus_names() == FIVE
    _, out = _listed(capsys)
    assert f"{helper}: not registered: no dataset builder class" in out


def test_a_metric_whose_corpus_has_no_loader_is_not_registered(extra, capsys):
    (extra / "metrics" / "quiz").mkdir()
    (extra / "metrics" / "quiz" / "quiz.py").write_text("", encoding="utf-8")
    (extra / "metrics" / "quiz" / "task_api.py").write_text(TASK_API, encoding="utf-8")
    assert "quiz" not in registry.metric_names() and "qahub_quiz" not in planning.all_tasks()
    _, out = _listed(capsys)
    assert (f"{extra / 'metrics' / 'quiz' / 'task_api.py'}: not registered: it declares CORPUS = 'quiz', and "
            "loaders/ has no quiz.py with a dataset builder class") in out


def test_a_metric_without_a_task_declaration_is_not_registered(extra, capsys):
    (extra / "metrics" / "scratch").mkdir()
    (extra / "metrics" / "scratch" / "scratch.py").write_text("", encoding="utf-8")
    assert "scratch" not in registry.metric_names()
    _, out = _listed(capsys)
    assert f"{extra / 'metrics' / 'scratch'}: not registered: no task_api.py declaring CORPUS" in out


def test_two_metrics_declaring_one_corpus_are_named_and_neither_is_registered(extra, capsys):
    copy = extra / "metrics" / "jemhopqa_old"
    shutil.copytree(ROOT / "metrics" / "jemhopqa", copy, symlinks=True)
    (copy / "jemhopqa.py").rename(copy / "jemhopqa_old.py")
    assert "jemhopqa" not in registry.corpus_names() and "jemhopqa_old" not in registry.metric_names()
    assert set(registry.corpus_names()) == set(FIVE) - {"jemhopqa"}
    _, out = _listed(capsys)
    assert (f"{ROOT / 'metrics' / 'jemhopqa' / 'task_api.py'} and {copy / 'task_api.py'}: each declares "
            "CORPUS = 'jemhopqa'; neither is registered") in out


def _quiz_metric(extra, task_api):
    (extra / "metrics" / "quiz").mkdir()
    (extra / "metrics" / "quiz" / "quiz.py").write_text("", encoding="utf-8")
    (extra / "metrics" / "quiz" / "task_api.py").write_text(task_api, encoding="utf-8")


def test_declarations_are_read_as_python_reads_them_annotated_or_not(extra):
    """``CORPUS: str = "quiz"`` declares the corpus as ``CORPUS = "quiz"`` does (a regex on the text missed it),
    an annotated ``TRAINING_TEXTS`` its training config, and a builder's base may be spelled ``datasets.X``."""
    loader = LOADER.replace("class Quiz(RowsBuilder):", "class Quiz(\n    datasets.ArrowBasedBuilder,\n):")
    (extra / "loaders" / "quiz.py").write_text(loader, encoding="utf-8")
    _quiz_metric(extra, TASK_API.replace('CORPUS = "quiz"', 'CORPUS: str = "quiz"')
                 + "TRAINING_TEXTS: dict = {}\n")
    assert "quiz" in registry.corpus_names() and tasks.left_out() == ()
    assert registry.training_configs("quiz") == ["sft"]
    assert tasks.scan().builders["quiz"] == ["Quiz"]


def test_the_builder_class_is_the_one_the_scan_named(extra):
    """registry takes the class the scan found, by name: one scanner decides what a builder is."""
    (extra / "loaders" / "quiz.py").write_text(LOADER + "\n\nclass Second(RowsBuilder):\n    pass\n",
                                               encoding="utf-8")
    _quiz_metric(extra, TASK_API)
    with pytest.raises(RuntimeError, match=r"quiz.py: expected one dataset builder class, found 2 \(Quiz, Second\)"):
        registry.builder_class("quiz")


def test_a_task_api_broken_below_its_declaration_still_names_its_corpus(tmp_path):
    api = tmp_path / "task_api.py"
    api.write_text('CORPUS: str = "quiz"\nTRAINING_TEXTS = {}\n\ndef broken(:\n    pass\nCONVERSATION = 1\n',
                   encoding="utf-8")
    assert tasks._corpus_of(tasks.declared(api)) == "quiz" and list(tasks.declared(api)) == ["CORPUS", "TRAINING_TEXTS"]
    api.write_text("def broken(:\n", encoding="utf-8")
    assert tasks._corpus_of(tasks.declared(api)) is None and tasks.declared(api) == {}


def test_a_complete_tree_lists_no_footer(capsys):
    tasks.clear()
    _, out = _listed(capsys)
    assert "not registered" not in out and tasks.left_out() == ()


# --- a task_api that does not import: its corpus alone is left out


@pytest.fixture
def broken_limur(tmp_path, monkeypatch):
    """The metrics folder with a syntax error in limur's task_api.py (a copy on ``qahub.metrics``'s path)."""
    copy = tmp_path / "metrics"
    shutil.copytree(ROOT / "metrics", copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "limur" / "task_api.py", "a", encoding="utf-8") as file:
        file.write("\ndef broken(:\n")
    monkeypatch.setattr(metrics, "__path__", [str(copy)])
    for name in [m for m in sys.modules if m.startswith("qahub.metrics.")]:
        monkeypatch.delitem(sys.modules, name)
    tasks.clear()
    yield copy / "limur" / "task_api.py"
    tasks.clear()


def _left_out_warnings(caplog, path) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and str(path) in r.getMessage()]


def test_a_broken_task_api_leaves_out_its_corpus_with_one_warning(broken_limur, caplog):
    caplog.set_level(logging.WARNING)
    others = [c for c in FIVE if c != "limur"]
    found = runs.qahub_tasks()
    assert sorted({spec_corpus for spec_corpus in tasks.task_corpora().values()}) == others
    assert sorted(found) == sorted(name for c in others for name in tasks.task_api(c).TASKS)
    assert sorted(inspect_tasks.task_names()) == sorted(name.removeprefix("qahub_") for name in found)
    planning.all_tasks()
    (warning,) = _left_out_warnings(caplog, broken_limur)
    assert warning == (f"{broken_limur}: does not import: SyntaxError: invalid syntax (task_api.py, line "
                       f"{len(broken_limur.read_text(encoding='utf-8').splitlines())}); the limur tasks are left out")
    with pytest.raises(planning.HarnessError, match=f"^{broken_limur}: does not import: SyntaxError"):
        planning.task_api("limur")


def test_a_task_api_that_parses_but_does_not_import_is_said_when_its_inspect_task_is_built(tmp_path, monkeypatch):
    """inspect registers the tasks by the names the files declare, without importing them: a task_api that fails
    only when imported is still listed, and building its task says why in one line; the others build."""
    copy = tmp_path / "metrics"
    shutil.copytree(ROOT / "metrics", copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    broken = copy / "limur" / "task_api.py"
    broken.write_text("import qahub_no_such_module\n" + broken.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(metrics, "__path__", [str(copy)])
    for name in [m for m in sys.modules if m.startswith("qahub.metrics.")]:
        monkeypatch.delitem(sys.modules, name)
    tasks.clear()
    try:
        assert inspect_tasks.task_names()["limur"] == ("limur", "qahub_limur")
        registered = {short: inspect_tasks._register(short, *entry) for short, entry in inspect_tasks.task_names().items()}
        with pytest.raises(inspect_tasks.TaskInputError, match=f"^qahub/limur: {broken}: does not import: "
                                                               "ModuleNotFoundError: No module named"):
            registered["limur"](dataset=str(tmp_path))
        assert tasks.task_api("jeopardy").TASKS
    finally:
        tasks.clear()


def test_a_computed_tasks_table_is_imported_alone_for_its_names(tmp_path, monkeypatch):
    """A task_api whose TASKS is not a literal dict is imported to list its tasks; no other corpus's is."""
    copy = tmp_path / "metrics"
    shutil.copytree(ROOT / "metrics", copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    api = copy / "limur" / "task_api.py"
    api.write_text(api.read_text(encoding="utf-8") + "\nTASKS = dict(TASKS)\n", encoding="utf-8")
    monkeypatch.setattr(metrics, "__path__", [str(copy)])
    for name in [m for m in sys.modules if m.startswith("qahub.metrics.")]:
        monkeypatch.delitem(sys.modules, name)
    tasks.clear()
    try:
        assert tasks.declared_tasks()["qahub_limur"] == "limur"
        imported = [m for m in sys.modules if m.startswith("qahub.metrics.") and m.endswith(".task_api")]
        assert imported == ["qahub.metrics.limur.task_api"]
    finally:
        tasks.clear()


def test_harness_tasks_and_report_of_a_jemhopqa_run_work_beside_a_broken_limur(broken_limur, sample_exports,
                                                                                 tmp_path, caplog, capsys):
    pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
    from lm_eval.tasks import TaskManager
    from test_harness import Oracle
    from test_report import lm_eval_run

    caplog.set_level(logging.WARNING)
    folder = tmp_path / "tasks"
    assert cli.main(["harness-tasks", "--out", str(folder), "--dataset",
                     f"jemhopqa={sample_exports['jemhopqa']}"]) == 0
    manager = TaskManager(include_path=str(folder))
    lm_eval_run(Oracle(manager), manager, ["qahub_jemhopqa"], tmp_path / "run", limit=4)
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "report"), "--resamples", "200"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert len(_left_out_warnings(caplog, broken_limur)) == 1
    assert (tmp_path / "report" / "report.json").is_file()
    assert cli.main(["harness-tasks", "--out", str(tmp_path / "limur-tasks"), "--dataset",
                     f"limur={sample_exports['limur']}"]) == 1
    err = capsys.readouterr().err
    assert err == f"qahub harness-tasks: error: {broken_limur}: does not import: SyntaxError: invalid syntax " \
                  f"(task_api.py, line {len(broken_limur.read_text(encoding='utf-8').splitlines())})\n"


def test_a_broken_evaluate_adapter_leaves_out_its_own_command_only(tmp_path, monkeypatch, caplog, capsys):
    broken = tmp_path / "jemhopqa.py"
    broken.write_text("def broken(:\n", encoding="utf-8")
    monkeypatch.setattr(evaluate_cli, "__path__", [str(tmp_path), *evaluate_cli.__path__])
    monkeypatch.delitem(sys.modules, "qahub.evaluate_cli.jemhopqa", raising=False)
    caplog.set_level(logging.WARNING)
    assert cli.main(["list"]) == 0
    (warning,) = _left_out_warnings(caplog, broken)
    assert warning == (f"{broken}: does not import (SyntaxError: invalid syntax (jemhopqa.py, line 1)); "
                       "`qahub evaluate jemhopqa` is left out")
    with pytest.raises(SystemExit):
        cli.main(["evaluate", "jemhopqa", "--help"])
    assert "invalid choice: 'jemhopqa'" in capsys.readouterr().err


# --- inspect's own command line, through the entry point, with a stray loader on the path

CLI = ("import sys, inspect_models, qahub.loaders; qahub.loaders.__path__.append(sys.argv.pop(1)); "
       "from inspect_ai._cli.main import main; sys.argv[0] = 'inspect'; main()")


def test_inspect_eval_finds_the_healthy_tasks_with_a_stray_loader_present(sample_exports, tmp_path):
    (tmp_path / "stray").mkdir()
    shutil.copy(ROOT / "loaders" / "jeopardy.py", tmp_path / "stray" / "jeopardy_old.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CLI, str(tmp_path / "stray"), "eval", "qahub/jemhopqa",
                           "-T", f"dataset={sample_exports['jemhopqa']}", "--limit", "2", "--model", "qahub_script/x",
                           "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "No inspect tasks were found" not in output, output[-3000:]
    from inspect_ai.log import list_eval_logs, read_eval_log

    (log,) = [read_eval_log(info) for info in list_eval_logs(str(tmp_path / "logs"))]
    assert log.status == "success" and log.eval.task == "qahub/jemhopqa" and len(log.samples) == 2
