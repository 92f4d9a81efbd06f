"""The benchmarks tell the truth (issue 36, item 11): a fresh process's peak memory is its own, whatever the size
of the process that started it; ``python benchmarks/run.py`` prints the machine line and the table alone, the rest
of what the benchmarks write going to a log file it names."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_cli  # noqa: E402
from _common import measure  # noqa: E402


@pytest.fixture(scope="module")
def large_parent():
    """This process grown by 600 MiB, every page touched (so resident), for this module's tests."""
    ballast = b"x" * (600 * 2**20)
    yield
    del ballast


def test_a_fresh_process_row_after_a_large_parent_reads_the_childs_own_peak(large_parent, monkeypatch):
    monkeypatch.setattr(bench_cli, "RUNS", 1)
    seconds, peak_mib = bench_cli._best([sys.executable, "-c", "pass"])
    assert 0 < peak_mib < 100  # python -c pass: ~10 MiB; it read the parent's 600+ MiB before
    seconds, peak_mib = bench_cli._best([sys.executable, "-c", "b = b'y' * (150 * 2**20)"])
    assert 150 < peak_mib < 250  # its own 150 MiB counted


def test_a_measured_function_after_a_large_parent_reads_its_own_peak(large_parent):
    seconds, peak_mib, result = measure("_common:copies_for", 1, 1)
    assert result == repr(1050001) and 0 < peak_mib < 100


NOISY = '''
import subprocess
import sys
import warnings

from _common import measure, row


def child():
    print("a measured child's output")
    print("a measured child's warning", file=sys.stderr)
    return 1


def run():
    print("the benchmark's own output")
    warnings.warn("the benchmark's warning")
    subprocess.run([sys.executable, "-c", "import sys; print('a subprocess writes'); sys.stderr.write('and warns')"])
    return [row("noisy side by side", measure("bench_noisy:child"), measure("bench_noisy:child"), "a note")]
'''

RUN = '''
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import run

run.HERE = Path(sys.argv[2])
sys.path.insert(0, sys.argv[2])
raise SystemExit(run.main(sys.argv[3:]))
'''


def test_run_prints_the_machine_line_and_the_table_alone(tmp_path):
    """Everything the benchmark, its measured children and its subprocesses write goes to the log."""
    (tmp_path / "bench_noisy.py").write_text(NOISY, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUN, str(BENCHMARKS), str(tmp_path), "noisy"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5, done.stdout
    assert lines[0].startswith("machine: ") and lines[1].startswith("ratio = baseline time / our time")
    assert lines[2].startswith("benchmark ") and set(lines[3]) == {"-"}
    assert lines[4].startswith("noisy side by side ") and lines[4].endswith("a note")
    told = done.stderr.splitlines()
    assert len(told) == 1 and told[0].startswith("benchmarks/run.py: the benchmarks' own output goes to ")
    log = Path(told[0].rsplit(" ", 1)[1])
    try:
        written = log.read_text(encoding="utf-8")
    finally:
        log.unlink()
    for text in ("--- bench_noisy.py", "the benchmark's own output", "the benchmark's warning", "a measured child's output",
                 "a measured child's warning", "a subprocess writes", "and warns"):
        assert text in written


def test_the_reference_table_cell_reads_score_interval_documents_unparseable_and_seconds():
    import reference

    entry = {"main_metric": "exact_match", "scores": {
        "a": {"exact_match": {"value": 0.1, "ci": [0.03, 0.25], "n": 30}, "unparseable": {"value": 0.2}},
        "b": {"exact_match": {"value": 41.5, "ci": [20.0, 60.25], "n": 8}},
        "c": {"exact_match": {"value": 0.0, "ci": [None, None], "n": 1}}}}
    assert reference.cell(entry, "a", 60.0) == "0.10 [0.03, 0.25] · n 30 · 20% unparseable · 2.0 s/doc"
    assert reference.cell(entry, "b", None) == "41.5 [20.0, 60.2] · n 8"  # a 0-100 metric, no timing
    assert reference.cell(entry, "c", 3.0) == "0.00 (no interval) · n 1 · 3.0 s/doc"
    assert reference.cell(entry, "d", 3.0) == "not run"
    text = reference.table({"tasks": {"qahub_x": entry}}, {"a": {"qahub_x": 60.0}}, ["a", "d"])
    assert text.splitlines()[2] == "| `qahub_x` (exact_match) | 0.10 [0.03, 0.25] · n 30 · 20% unparseable · 2.0 s/doc | not run |"


def test_the_reference_run_picks_up_to_its_documents_of_each_task_and_all_of_a_smaller_one(sample_exports):
    """``reference.picked_docs``: ``--docs`` of each task (``pick_docs.pick(..., at_most=True)``), every document
    of a task that has fewer (the bundled samples: a few each), never an error."""
    import reference

    from qahub import pick_docs, tasks

    folders = {corpus: str(folder) for corpus, folder in sample_exports.items()}
    picked = reference.picked_docs(folders, 3)
    assert set(picked) == set(tasks.task_corpora())
    for task, (corpus, indexes, ids) in picked.items():
        total = pick_docs.pick(task, 1, folders[corpus])[1]
        assert len(indexes) == len(ids) == min(3, total), task
    everything = reference.picked_docs(folders, 10**6)["qahub_limur"][1]
    assert everything == list(range(pick_docs.pick("qahub_limur", 1, folders["limur"])[1]))


def test_the_reference_run_writes_lm_evals_tasks_again_when_they_name_other_exports(sample_exports, tmp_path):
    """An --out copied from another run keeps that run's task folder, whose tasks read the other run's exports:
    the report then refused to compare its lm-eval runs with inspect's and lighteval's (real runs, 2026-12-07)."""
    import reference

    from qahub.harness import write_task_folder

    tasks = tmp_path / "tasks"
    elsewhere = {"limur": str(shutil.copytree(sample_exports["limur"], tmp_path / "old" / "limur"))}
    write_task_folder(tasks, elsewhere)
    here = {"limur": str(sample_exports["limur"])}
    reference.write_tasks(tasks, here)
    yaml = (tasks / "qahub_limur" / "qahub_limur.yaml").read_text(encoding="utf-8")
    assert f"dataset_path: {here['limur']}" in yaml and elsewhere["limur"] not in yaml
    before = (tasks / "qahub_tasks.json").stat().st_mtime_ns
    reference.write_tasks(tasks, here)  # already this run's: left as it is
    assert (tasks / "qahub_tasks.json").stat().st_mtime_ns == before


def test_the_benchmarks_one_qahub_helper_returns_stdout_and_fails_with_the_command_s_stderr():
    from _common import qahub

    assert "pick-docs" in qahub("--help")
    with pytest.raises(SystemExit) as failed:
        qahub("pick-docs", "qahub_nosuchtask", "--n", "1", "--location", "-")
    message = str(failed.value)
    assert message.startswith("qahub pick-docs qahub_nosuchtask --n 1 --location - failed (exit 1): ")
    assert "qahub_nosuchtask: no such task" in message


def _fake_measure(made, seconds_of):
    def measure(target, *args):
        made.append(target)
        pair = (len(made) - 1) // 2
        return (seconds_of(pair), 1.0, f"{target}{pair}")
    return measure


@pytest.mark.parametrize("side_seconds, runs, seconds, tries", [
    (0.1, 3, 20.0, 10),  # short sides: more tries while under 20 s, at most 10
    (4.0, 3, 20.0, 3),  # 3 pairs of 8 s: at least 3, no more past 20 s
    (2.0, 3, 20.0, 5),  # 5 pairs of 4 s reach 20 s
    (0.1, 2, 0, 2),  # seconds=0: exactly runs
])
def test_sides_in_turn_are_tried_at_least_runs_times_and_more_while_short(monkeypatch, side_seconds, runs, seconds,
                                                                          tries):
    import _common

    made = []
    monkeypatch.setattr(_common, "measure", _fake_measure(made, lambda pair: side_seconds))
    *_, tried = _common.best_in_turn(("a",), ("b",), runs=runs, seconds=seconds)
    assert tried == tries and made == ["a", "b"] * tries  # in turn


def test_sides_in_turn_keep_each_side_s_best_run(monkeypatch):
    import _common

    monkeypatch.setattr(_common, "measure", _fake_measure([], lambda pair: [3.0, 1.0, 2.0][pair]))
    assert _common.best_in_turn(("a",), ("b",), seconds=0) == ((1.0, 1.0, "a1"), (1.0, 1.0, "b1"), 3)
