"""Issue 42, "Comparing" (items 7-11) and issue 44 items 2-3: a run given twice is refused; like with like is
decided for every pair ranked together; a run missing a task cannot head the leaderboard; a NaN aggregate is
refused; intervals hold their point and stay in range; one rule decides "does not vary" for the test and the
interval alike; the pairing is one frozen ``Pairing``."""

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from test_report_stats import JEMHOPQA, LIMUR, reported, scripted

from qahub.report import ReportError, write_report
from qahub.report.render import leaderboard_order
from qahub.report.runs import qahub_tasks
from qahub.signature import Signature

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_report  # noqa: E402 - the benchmark's synthetic lm-eval runs

CHAT = "qahub_topical_chat_freq"


@pytest.fixture(scope="module")
def specs():
    return qahub_tasks()


def _results(folder) -> Path:
    return next(Path(folder).glob("results_*.json"))


def _edit_results(folder, change):
    path = _results(folder)
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


# --- 7. one run given twice


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("twice")
    bench_report.write_run(root / "run", "run", 0, 40, skill=0.4)
    _edit_results(root / "run", lambda data: data.update(date=1765000000.25))  # lm-eval's own time of the run
    return root / "run"


def test_one_folder_under_two_names_is_refused_in_one_line_naming_both(one_run, tmp_path):
    with pytest.raises(ReportError) as caught:
        write_report([f"a={one_run}", f"b={one_run}"], tmp_path / "out", resamples=200, progress=False, jobs=1)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"b ({one_run}) and a ({one_run}) are the same run given twice")
    assert not (tmp_path / "out").exists()


def test_a_published_copy_of_a_run_is_the_same_run(one_run, tmp_path):
    """The copy a details dataset holds: its files scrubbed and rewritten (other bytes), the eval's own time kept."""
    copy = Path(shutil.copytree(one_run, tmp_path / "published"))
    for samples in copy.glob("samples_*.jsonl"):  # other bytes, the same samples
        samples.write_text("".join(line.rstrip("\n") + " \n" for line in samples.read_text(encoding="utf-8")
                                   .splitlines()), encoding="utf-8")
    _edit_results(copy, lambda data: data.update(model_name="run", config={"model_args": "token=<redacted>"}))
    with pytest.raises(ReportError, match=r"^copy \(.*published\) and local \(.*run\) are the same run given twice "
                                          r"\(the same qahub_\w+ eval as its harness recorded it: lm-eval, "
                                          r"1765000000.25\); give it once$"):
        write_report([f"local={one_run}", f"copy={copy}"], tmp_path / "out", resamples=200, progress=False, jobs=1)


def test_a_copy_of_every_file_without_a_recorded_time_is_the_same_run(tmp_path):
    bench_report.write_run(tmp_path / "run", "run", 0, 40, skill=0.4)  # no "date" in its results
    copy = shutil.copytree(tmp_path / "run", tmp_path / "copy")
    with pytest.raises(ReportError, match=r"^b \(.*copy\) and a \(.*run\) are the same run given twice \(the same "
                                          r"files, by SHA-256\); give it once$"):
        write_report([f"a={tmp_path / 'run'}", f"b={copy}"], tmp_path / "out", resamples=200, progress=False, jobs=1)


def test_two_runs_that_replied_alike_on_one_task_are_two_runs(tmp_path):
    """A --limit above a task's documents gives two runs the same samples of that task: not one run."""
    bench_report.write_run(tmp_path / "a", "a", 0, 40, skill=0.4)
    bench_report.write_run(tmp_path / "b", "b", 1, 40, skill=0.6)
    for samples in (tmp_path / "a").glob(f"samples_{LIMUR}_*.jsonl"):
        shutil.copy(samples, tmp_path / "b" / samples.name)
    limur = json.loads(_results(tmp_path / "a").read_text(encoding="utf-8"))["results"][LIMUR]
    _edit_results(tmp_path / "b", lambda data: data["results"].update({LIMUR: limur}))  # as its samples say
    data = write_report([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}"], tmp_path / "out", resamples=200,
                        progress=False, jobs=1)
    assert set(data["runs"]) == {"a", "b"}


# --- 8. like with like for every pair ranked together


def _signed_runs(specs, scorers):
    rng = np.random.default_rng(8)
    runs = []
    for name, scorer in scorers.items():
        run = scripted(specs, JEMHOPQA, name, {"exact_match": list((rng.random(60) < 0.5).astype(float))})
        signature = None if scorer is None else Signature(task=JEMHOPQA, scorer=scorer)
        run.tasks[JEMHOPQA] = dataclasses.replace(run.tasks[JEMHOPQA], signature=signature)
        runs.append(run)
    return runs


def test_runs_recording_other_scorers_are_not_ranked_together_though_the_baseline_records_none(specs):
    """A baseline from before signatures is like anything; b and c are not like each other."""
    entry = reported(specs, JEMHOPQA, _signed_runs(specs, {"a": None, "b": "nfkc=1", "c": "nfkc=0"}))
    ranking = entry["ranking"]
    assert set(ranking["runs"]) <= {"a", "b"} and "c" not in ranking["runs"]
    assert ranking["not_ranked"]["c"] == "not like with like with b: different scorer nfkc=1/nfkc=0"


def test_runs_recording_the_same_scorer_are_ranked_together(specs):
    entry = reported(specs, JEMHOPQA, _signed_runs(specs, {"a": None, "b": "nfkc=1", "c": "nfkc=1"}))
    assert set(entry["ranking"]["runs"]) == {"a", "b", "c"} and entry["ranking"]["not_ranked"] == {}


def test_a_pairing_is_one_frozen_record_of_its_fields(specs):
    from qahub.report.alike import Pairing, pairing

    a, b = _signed_runs(specs, {"a": "nfkc=1", "b": "nfkc=0"})
    pair = pairing(JEMHOPQA, a, b)
    assert isinstance(pair, Pairing) and pair.same_order and pair.same_design and pair.compared
    assert pair.caveats == ("different scorer nfkc=1/nfkc=0",) and not pair.alike
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.caveats = ()
    entry = {"notes": [], "warnings": []}
    pair.record(entry)
    assert entry["caveats"] == {"b": ["different scorer nfkc=1/nfkc=0"]}


def test_pairings_find_lists_equal_by_interning_them_as_a_plain_comparison_does(specs):
    """``Pairings`` interns each run's keys and prompts (``Same``): its verdicts are ``pairing``'s with ``==``, for
    equal prompts, a prompt that differs, and documents in another order."""
    from qahub.report.alike import Pairings, Same, pairing

    a, b, c, d = _signed_runs(specs, {"a": None, "b": None, "c": None, "d": None})
    prompts = [f"prompt {i}" for i in range(60)]
    edits = {"b": list(prompts), "c": prompts[:7] + ["another"] + prompts[8:], "d": list(prompts)}
    for run in (a, b, c, d):
        task = run.tasks[JEMHOPQA]
        mine = edits.get(run.name, prompts)
        keys, mine = (task.keys[::-1], mine[::-1]) if run.name == "d" else (task.keys, mine)
        run.tasks[JEMHOPQA] = dataclasses.replace(task, keys=list(keys), prompts=mine, prompt_hashed="text")
    pairings, same = Pairings(JEMHOPQA), Same()
    for run in (b, c, d):
        plain = pairing(JEMHOPQA, a, run)
        for found in (pairings(a, run), pairing(JEMHOPQA, a, run, same=same)):
            assert (found.same_order, found.caveats, found.notes) == (plain.same_order, plain.caveats, plain.notes)
            assert [list(side) for side in found.pairs] == [list(side) for side in plain.pairs]
    assert pairings(a, b).caveats == () and pairings(a, c).caveats == ("different prompts (template)",)
    assert not pairings(a, d).same_order and pairings(a, d).caveats == ()
    assert same([1, 2], [1, 2]) and not same([1, 2], [2, 1])


# --- 9. a run missing a task, or with fewer documents there, does not head the leaderboard


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """Four runs of 200 documents; "lifted", the best everywhere else, scored 120 Topical-Chat documents (where
    it is the worst)."""
    root = tmp_path_factory.mktemp("board")
    for i, name in enumerate(("base", "low", "mid", "lifted")):
        bench_report.write_run(root / name, name, i, 200, skill=0.1 + 0.25 * i)
    samples = next((root / "lifted").glob(f"samples_{CHAT}_*.jsonl"))
    kept = [{**json.loads(line), "f1": 0.0} for line in samples.read_text(encoding="utf-8").splitlines()[:120]]
    samples.write_text("".join(json.dumps(sample) + "\n" for sample in kept), encoding="utf-8")

    def fewer(data):
        data["n-samples"][CHAT] = {"original": 200, "effective": 120}
        data["results"][CHAT]["f1,none"] = 0.0  # as its samples say: the worst f1

    _edit_results(root / "lifted", fewer)
    arguments = [f"{name}={root / name}" for name in ("base", "low", "mid", "lifted")]
    return write_report(arguments, root / "out", resamples=200, progress=False, jobs=1)


def test_a_run_not_ranked_on_a_task_is_unranked_on_the_leaderboard_and_says_why(board):
    assert "lifted" in board["tasks"][CHAT]["ranking"]["not_ranked"]
    found = board["leaderboard"]
    assert found["unranked"]["lifted"].startswith(f"not ranked on {CHAT} (other documents than base")
    assert "lifted" not in found["order"] and found["order"][0] != "lifted"
    assert set(found["order"]) == {"base", "low", "mid"} and found["tasks"] == sorted(
        task for task, entry in board["tasks"].items() if entry["ranking"] and entry["ranking"]["runs"])
    assert leaderboard_order(board)[-1] == "lifted"  # the page's order: the unranked last


# --- 10. a NaN aggregate


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_nan_or_infinite_aggregate_is_refused_in_one_line_naming_file_and_metric(tmp_path, bad):
    bench_report.write_run(tmp_path / "run", "run", 0, 40, skill=0.4)
    bench_report.write_run(tmp_path / "other", "other", 1, 40, skill=0.6)
    _edit_results(tmp_path / "run", lambda data: data["results"][LIMUR].update({"exact_match,none": bad}))
    with pytest.raises(ReportError) as caught:
        write_report([f"run={tmp_path / 'run'}", f"other={tmp_path / 'other'}"], tmp_path / "out", resamples=200,
                     progress=False, jobs=1)
    line = str(caught.value)
    assert "\n" not in line and str(_results(tmp_path / "run")) in line and "exact_match" in line
    assert f"is {bad}, not a finite number" in line and not (tmp_path / "out").exists()


# --- 11. intervals that hold their point, resamples, one rule for "does not vary"


def test_0_of_7_has_an_interval_from_exactly_0(specs):
    entry = reported(specs, LIMUR, [scripted(specs, LIMUR, "a", {"exact_match": [0.0] * 7})])
    low, high = entry["scores"]["a"]["exact_match"]["ci"]
    assert low == 0.0 and high == pytest.approx(0.354, abs=5e-4)


def test_an_interval_is_clipped_to_the_range_and_widened_to_its_point():
    from qahub.report.build import fitted

    assert fitted([5.55e-17, 0.354], 0.0, (0.0, 1.0)) == [0.0, 0.354]
    assert fitted([-0.01, 1.02], 0.5, (0.0, 1.0)) == [0.0, 1.0]
    assert fitted([0.40, 0.45], 0.47, None) == [0.40, 0.47]  # a centred interval that missed its point


def test_a_zero_width_percentile_interval_is_no_interval_and_says_why():
    from qahub.report.build import cell

    found = cell(0.387, np.full(200, 0.333), 20, 0.95, units=(20, "document"), bounds=(0.0, 1.0))
    assert found["ci"] == [None, None] and found["no_interval"].startswith("the resamples give the zero-width")


@pytest.mark.parametrize("resamples", [1, 199])
def test_fewer_than_200_resamples_are_refused_in_one_line(one_run, tmp_path, resamples):
    with pytest.raises(ReportError, match=rf"^--resamples {resamples}: must be at least 200 "):
        write_report([str(one_run)], tmp_path / "out", resamples=resamples, progress=False, jobs=1)


def test_a_difference_constant_up_to_rounding_gets_the_sign_test_and_no_interval_alike(specs):
    """40 documents each 0.1 better up to float rounding: the p and the interval agree that it does not vary
    (main gave a paired-bootstrap p = 0.000999 and dropped the interval as "does not vary")."""
    a = np.random.default_rng(40).random(40) * 0.8
    b = a + 0.1  # 0.1 up to rounding: b - a is not exactly 0.1 everywhere
    assert np.ptp(b - a) > 0
    runs = [scripted(specs, JEMHOPQA, name, {"char_f1": list(values)}) for name, values in (("a", a), ("b", b))]
    c = reported(specs, JEMHOPQA, runs)["comparisons"]["b"]["char_f1"]
    assert c["ci"] == [None, None] and c["no_interval"] == "every resample gives the same difference: no interval"
    assert c["test"] == "sign test (exact: the per-document differences are all equal)"
    assert c["p"] == pytest.approx(2 * 0.5 ** 40) and c["star"]


def test_one_tolerance_decides_does_not_vary():
    from qahub.report.variance import constant, negligible

    assert negligible(1e-12, 0.5) and not negligible(1e-6, 0.5)
    assert constant([0.1, 0.1 + 1e-16]) and not constant([0.1, 0.1001]) and not constant([])
