"""``qahub report`` on real lm-eval output: every qahub task run through lm-eval's ``simple_evaluate`` with model
doubles, saved by lm-eval's own ``EvaluationTracker`` as ``lm_eval --output_path X --log_samples`` saves it."""

import base64
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import hypothesis
import numpy as np
import pytest
from qahub_batch import Batch

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.loggers import EvaluationTracker  # noqa: E402
from scipy.stats import binomtest  # noqa: E402
from test_harness import Oracle, locations, manager, plan, task_dir  # noqa: E402, F401

from qahub.report import runs as report_runs  # noqa: E402

WRONG = ["", "no idea", "Ответ: Пас", "NO ANSWER", "回答: いいえ", "agent_2: hello there friend", "Ответ: Б"]


class Half(Oracle):
    """The target for every other request of a task, a wrong or unreadable reply for the rest."""

    def generate_until(self, requests):
        seen, replies = {}, []
        for request in requests:
            count = seen[request.task_name] = seen.get(request.task_name, -1) + 1
            replies.append(self.target(request) if count % 2 else WRONG[count // 2 % len(WRONG)])
        return replies


def lm_eval_run(model, tasks_from, tasks, out, **kwargs):
    """``lm_eval --output_path out --log_samples`` (lm_eval/_cli/run.py: the same tracker calls)."""
    tracker = EvaluationTracker(output_path=str(out))
    result = simple_evaluate(model=model, tasks=tasks, task_manager=tasks_from, bootstrap_iters=0, log_samples=True,
                             evaluation_tracker=tracker, **kwargs)
    samples = result.pop("samples")
    tracker.save_results_aggregated(results=result, samples=samples)
    for task in result["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return next(Path(out).rglob("results_*.json"))


@pytest.fixture(scope="module")
def runs(plan, manager, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("runs")
    tasks = sorted(plan)
    found = {"oracle": lm_eval_run(Oracle(manager), manager, tasks, root / "oracle"),
             "half": lm_eval_run(Half(manager), manager, tasks, root / "half"),
             "limited": lm_eval_run(Half(manager), manager, tasks, root / "limited", limit=2)}
    # the run "half" as the --output_path itself, the others as the model folder lm-eval writes inside it
    return {name: path.parent.parent if name == "half" else path.parent for name, path in found.items()}


BATCH = Batch(MPLBACKEND="Agg")


@pytest.fixture(autouse=True, scope="module")
def _stop_batch():
    yield
    BATCH.stop()


def qahub(*argv):
    """``qahub *argv`` run in this file's one ``Batch`` process (imports paid once, not by each of ~25 reports)."""
    code, out, err = BATCH.run(list(argv))
    return subprocess.CompletedProcess(["qahub", *argv], code, out, err)


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "out"
    done = qahub("report", f"half={runs['half']}", f"oracle={runs['oracle']}", "--out", str(out),
                 "--resamples", "300")
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "report.json").read_text(encoding="utf-8")), done


def _samples(folder, task):
    path = next(Path(folder).rglob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _results(folder):
    return json.loads(next(Path(folder).rglob("results_*.json")).read_text(encoding="utf-8"))["results"]


def test_every_qahub_task_is_reported_with_lm_eval_s_own_numbers(report, runs, plan):  # noqa: F811
    _, data, _ = report
    assert set(data["tasks"]) == set(plan)
    for name in ("half", "oracle"):
        results = _results(runs[name])
        for task, entry in data["tasks"].items():
            assert not entry["warnings"], entry["warnings"]  # the samples recompute to lm-eval's numbers
            scores = entry["scores"][name]
            assert "unparseable" in scores
            for metric, cell in scores.items():
                assert cell["value"] == results[task][f"{metric},none"], (task, metric)
                lo, hi = cell["ci"]
                assert cell["n"] > 0 and (lo <= hi if lo is not None else cell["no_interval"])
    # the half-right run's intervals are not a point where its documents differ
    assert data["tasks"]["qahub_limur"]["scores"]["half"]["exact_match"]["ci"][0] < \
        data["tasks"]["qahub_limur"]["scores"]["half"]["exact_match"]["ci"][1]


def test_a_bleu_whose_resamples_cannot_vary_has_no_interval_not_a_point(report):
    """The oracle's doc2dial BLEU is 100 on every resample of its dialogues: [100, 100] would be a false
    certainty; a cell with documents that differ keeps its interval."""
    _, data, _ = report
    entry = data["tasks"]["qahub_doc2dial_response"]
    oracle, half = entry["scores"]["oracle"]["bleu"], entry["scores"]["half"]["bleu"]
    assert oracle["value"] == pytest.approx(100) and oracle["ci"] == [None, None]
    assert oracle["no_interval"] == "every resample gives 100 (no variance): no interval"
    assert "no interval where every resample gives the same value" in entry["intervals"]["bleu"]
    dialogues = entry["cluster"]["runs"]["half"]["clusters"]
    if dialogues < 4:  # issue 42 item 13: a percentile bootstrap over 2-3 dialogues gives none, and says why
        assert half["ci"] == [None, None] and half["no_interval"].startswith(f"{dialogues} dialogues: a percentile")
    else:
        assert half["ci"][0] < half["ci"][1]


def test_a_comparison_on_too_few_units_for_a_star_says_it_is_underpowered(report):
    """Issue 42 item 14: 3 doc2dial dialogues can never earn a star, whatever p: the Δ of BLEU on them is marked
    underpowered with that reason, never a bare Δ that reads as "tested, and no difference"."""
    _, data, _ = report
    for entry in data["tasks"].values():
        for per_metric in entry["comparisons"].values():
            for c in per_metric.values():
                if c["no_star"] is None and c["p"] is not None and c["units"] < 10 and not c["star"]:
                    assert c["underpowered"], c
    bleu = data["tasks"]["qahub_doc2dial_response"]["comparisons"]["oracle"]["bleu"]
    if bleu["units"] < 10:
        assert "too few for a star" in bleu["underpowered"], bleu


def test_breakdowns_are_the_mean_over_the_logged_documents_of_each_category(report, runs):
    _, data, _ = report
    expected_fields = {"qahub_limur": {"task_type", "context_type"}, "qahub_jemhopqa": {"type"},
                       "qahub_doc2dial_grounding": {"domain"}}
    for task, fields in expected_fields.items():
        assert fields <= set(data["tasks"][task]["breakdown"]), task
    samples = _samples(runs["half"], "qahub_limur")
    for kind, cell in data["tasks"]["qahub_limur"]["breakdown"]["task_type"].items():
        values = [s["exact_match"] for s in samples if s["doc"]["meta"]["task_type"] == kind]
        assert cell["half"]["exact_match"]["value"] == pytest.approx(math.fsum(values) / len(values))
        assert cell["half"]["exact_match"]["n"] == len(values)
    jeopardy = data["tasks"]["qahub_jeopardy"]["breakdown"]["question_number"]
    samples = _samples(runs["half"], "qahub_jeopardy")
    for value, cell in jeopardy.items():
        total = sum(s["game_score"] for s in samples if str(s["doc"]["question_number"]) == value)
        assert cell["half"]["game_score"]["value"] == pytest.approx(total)


def test_mcnemar_p_is_binomtest_on_the_discordant_pairs(report, runs):
    _, data, _ = report
    # Jeopardy's questions are clustered by theme: McNemar's test assumes independent pairs; the sample's few
    # themes get the exact sign-flip test over themes (a bootstrap of few clusters cannot reach small p honestly)
    assert data["tasks"]["qahub_jeopardy"]["comparisons"]["oracle"]["accuracy"]["test"] == \
        "sign-flip permutation test over themes (exact)"
    for task, metric in (("qahub_limur", "exact_match"),):
        base = {s["doc_id"]: s[metric] for s in _samples(runs["half"], task)}
        other = {s["doc_id"]: s[metric] for s in _samples(runs["oracle"], task)}
        b = sum(1 for d in base if base[d] > 0 and not other[d] > 0)
        c = sum(1 for d in base if not base[d] > 0 and other[d] > 0)
        cell = data["tasks"][task]["comparisons"]["oracle"][metric]
        assert cell["test"] == "McNemar exact"
        assert cell["p"] == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue if b + c else 1.0)
        assert cell["delta"] == pytest.approx(np.mean([other[d] - base[d] for d in base]))
        assert 0 < cell["p"] <= cell["p_holm"] <= 1


def test_bleu_p_is_sacrebleu_paired_bootstrap(report, runs, monkeypatch):
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    _, data, _ = report
    monkeypatch.setenv("SACREBLEU_SEED", str(data["settings"]["seed"]))
    base, other = (_samples(runs[name], "qahub_topical_chat_freq") for name in ("half", "oracle"))
    # no qahub BLEU task has independent documents (its turns are clustered by conversation): sacrebleu's own
    # test over documents, through the report's functions, with no clusters
    pairs = [(b["bleu"], o["bleu"]) for b, o in zip(base, other)]
    from qahub.report.build import compare
    from qahub.report.stats import Bleu, bleu_statistics, bootstrap

    eb, er = Bleu(bleu_statistics([p[0] for p in pairs])), Bleu(bleu_statistics([p[1] for p in pairs]))
    resamples, seed = data["settings"]["resamples"], data["settings"]["seed"]
    draws = bootstrap({("vs", "r", "bleu", "b"): (eb, None), ("vs", "r", "bleu", "r"): (er, None)}, len(pairs),
                      seed, resamples)
    cell = compare("r", {"bleu": _metric("bleu")}, {"bleu": (eb, er, None)}, len(pairs), draws,
                   {"confidence": 0.95})["bleu"]
    test = PairedTest([("half", [p[0][0] for p in pairs]), ("oracle", [p[1][0] for p in pairs])], {"BLEU": BLEU()},
                      [[p[0][1] for p in pairs]], test_type="bs", n_samples=resamples)
    _, scores = test()
    assert cell["test"] == "sacrebleu paired bootstrap"
    assert cell["p"] == scores["BLEU"][1].p_value
    assert cell["delta"] == pytest.approx(scores["BLEU"][1].score - scores["BLEU"][0].score)


def test_clustered_bleu_p_is_sacrebleu_s_p_over_resampled_clusters(report, runs):
    """The clustered BLEU test: sacrebleu's p formula over BLEU of whole conversations / dialogues drawn with
    replacement (default_rng(seed), the clusters numbered in order of first appearance)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import _compute_p_value

    _, data, _ = report
    resamples, seed = data["settings"]["resamples"], data["settings"]["seed"]
    for task, field in (("qahub_doc2dial_response", "dial_id"), ("qahub_topical_chat_freq", "conversation_id")):
        base, other = _samples(runs["half"], task), _samples(runs["oracle"], task)
        ids = list(dict.fromkeys(s["doc"][field] for s in base))
        members = [[i for i, s in enumerate(base) if s["doc"][field] == key] for key in ids]
        bleu = BLEU()
        stats = [np.array(bleu._extract_corpus_statistics([s["bleu"][0] for s in side], [[s["bleu"][1] for s in base]]))
                 for side in (base, other)]
        drawn = np.random.default_rng(seed).integers(0, len(ids), size=(resamples, len(ids)))
        scores = [[bleu._compute_score_from_stats(list(stat[[d for c in row for d in members[c]]].sum(0))).score
                   for row in drawn] for stat in stats]
        diffs = np.abs(np.array(scores[1]) - np.array(scores[0]))
        point = [bleu.corpus_score([s["bleu"][0] for s in side], [[s["bleu"][1] for s in base]]).score
                 for side in (base, other)]
        cell = data["tasks"][task]["comparisons"]["oracle"]["bleu"]
        assert cell["test"] == f"sacrebleu paired bootstrap over {data['tasks'][task]['cluster']['field']}s"
        assert cell["p"] == pytest.approx(_compute_p_value(diffs - diffs.mean(), abs(point[1] - point[0])))
        assert data["tasks"][task]["cluster"]["runs"]["half"]["clusters"] == len(ids) < len(base)


def test_identical_runs_compare_at_delta_0_and_p_1(runs, tmp_path):
    out = tmp_path / "same"
    again = _copy(runs["half"], tmp_path / "again")  # a deterministic model run again: the same replies
    done = qahub("report", f"a={runs['half']}", f"b={again}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cells = [c for e in data["tasks"].values() for c in e["comparisons"]["b"].values()]
    assert cells and all(c["delta"] == 0 and c["p"] == 1 and c["p_holm"] == 1 for c in cells)
    assert all(c["ci"] == [0.0, 0.0] for c in cells)


def test_same_seed_same_report_json_and_the_outputs_are_whole(report, runs, tmp_path):
    out, data, done = report
    again = tmp_path / "again"
    assert qahub("report", f"half={runs['half']}", f"oracle={runs['oracle']}", "--out", str(again),
                 "--resamples", "300").returncode == 0
    assert (again / "report.json").read_bytes() == (out / "report.json").read_bytes()
    page = (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"(src|href)=\"(?!data:)", page) and "<script" not in page and "http" not in page
    pngs = sorted((out / "figures").glob("*.png"))
    assert {p.name for p in pngs} >= {"qahub_limur.png", "qahub_limur_task_type.png"}
    inline = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert inline and all(base64.b64decode(x).startswith(b"\x89PNG\r\n\x1a\n") for x in inline)
    assert all(p.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") for p in pngs)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| half |" in markdown and "McNemar exact" in markdown and "unparseable" in markdown
    assert "## qahub_topical_chat_rare" in markdown and markdown in done.stdout


def test_any_number_of_workers_writes_the_same_report_byte_for_byte(report, runs, tmp_path):
    out = report[0]
    for jobs in ("1", "3"):
        again = tmp_path / f"jobs{jobs}"
        done = qahub("report", f"half={runs['half']}", f"oracle={runs['oracle']}", "--out", str(again),
                     "--resamples", "300", "--jobs", jobs)
        assert done.returncode == 0, done.stderr
        written = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
        assert written == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
        assert all((again / p).read_bytes() == (out / p).read_bytes() for p in written), jobs


def test_jobs_below_1_is_one_line(runs, tmp_path):
    done = qahub("report", str(runs["half"]), "--out", str(tmp_path / "out"), "--jobs", "0")
    assert done.returncode == 1 and "--jobs 0: must be at least 1" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def _dies(task):
    os._exit(3)


def test_a_worker_that_dies_is_a_report_error_naming_jobs_1():
    from qahub.report.workers import each

    class Bar:
        def update(self, n):
            pass

    with pytest.raises(report_runs.ReportError, match="rerun with --jobs 1"):
        each(_dies, ["a", "b"], {}, 2, Bar())


def test_a_different_limit_pairs_the_common_documents_and_says_so(runs, tmp_path):
    out = tmp_path / "limited"
    done = qahub("report", f"full={runs['half']}", f"two={runs['limited']}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    entry = json.loads((out / "report.json").read_text(encoding="utf-8"))["tasks"]["qahub_limur"]
    assert entry["comparisons"]["two"]["exact_match"]["n"] == 2
    assert any("paired on the 2 documents both scored" in note for note in entry["notes"])


def test_a_limited_run_of_one_conversation_has_no_interval_test_mde_or_star(runs, tmp_path):
    """``lm_eval --limit`` takes a clustered task's first turns, all of one conversation (issue 36): main gave
    zero-width intervals, the cluster bootstrap's p = 1/(resamples+1), MDE 0 and a star."""
    out = tmp_path / "out"
    done = qahub("report", f"two={runs['limited']}", f"full={runs['half']}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    tasks = json.loads((out / "report.json").read_text(encoding="utf-8"))["tasks"]
    for task in ("qahub_topical_chat_freq", "qahub_doc2dial_response"):
        entry, field = tasks[task], tasks[task]["cluster"]["field"]
        assert entry["cluster"]["runs"]["two"]["clusters"] == 1, task  # the first two turns: one cluster
        assert any(note.startswith(f"two: resampled by {field}: 1 {field} of 2 documents") for note in entry["notes"])
        for metric, cell in entry["scores"]["two"].items():
            assert cell["ci"] == [None, None] and cell["no_interval"] == f"1 {field}: no interval", (task, metric)
        for metric, cell in entry["comparisons"]["full"].items():
            assert cell["p"] is None and cell["ci"] == [None, None] and cell["mde"] is None, (task, metric)
            assert cell["units"] == 1 and cell["star"] is False and cell["test"].startswith(f"1 {field}: no interval")
        assert entry["best"] is None


_LATER = itertools.count(1)


def _copy(src, dst):
    """Another run of ``src``'s model: its files, at lm-eval's next second (one run given twice is refused:
    test_report_compare)."""
    shutil.copytree(src, dst)
    later = next(_LATER)
    for path in Path(dst).rglob("results_*.json"):
        results = json.loads(path.read_text(encoding="utf-8"))
        results["date"] = (results.get("date") or 0) + later
        path.write_text(json.dumps(results), encoding="utf-8")
    return dst


def _broken_line(folder):
    path = next(folder.rglob("samples_qahub_limur_*.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return f"{path}: line 3: not JSON"


def _no_samples(folder):
    for path in folder.rglob("samples_*.jsonl"):
        path.unlink()
    return "rerun lm_eval with --log_samples"


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("damage", [_broken_line, _no_samples])
def test_bad_input_is_one_line_naming_the_file_and_nothing_is_written(runs, tmp_path, damage, jobs):
    run = _copy(runs["half"], tmp_path / "run")
    message = damage(run)
    out = tmp_path / "out"
    done = qahub("report", str(run), "--out", str(out), "--jobs", jobs)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["run"]


def test_two_runs_of_one_name_and_a_foreign_folder_are_refused(runs, tmp_path):
    done = qahub("report", str(runs["half"]), str(runs["oracle"]), "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and "use NAME=PATH" in done.stderr and "Traceback" not in done.stderr
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    done = qahub("report", str(runs["half"]), "--out", str(foreign), "--resamples", "200")
    assert done.returncode == 1 and "--overwrite" in done.stderr
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"


HOSTILE = ["a", "\x00", "\x01x", "b", "the", ",", ".", ",x", ".5", "5.", "3.5", "-", "5-", "-5", "Hello", "&quot;",
           "&AMP;", "&amp;", "&lt;", "é", "İstanbul", "it's", "<skipped>", "-\n", "\n", "\t", "  ", "{", "~", "`", "[",
           "@", "/", "+", "(", "日本語", "?!"]


def _hostile_lines(rng, count):
    def line():
        words = "".join(rng.choice(HOSTILE) + rng.choice(["", " "]) for _ in range(rng.randint(0, 12)))
        return rng.choice(["", " ", ".", "-"]) + words + rng.choice(["", " ", "\n", ".", "-"])
    return [line() for _ in range(count)]


def test_bleu_statistics_and_distinct_n_are_sacrebleu_s_and_the_metric_s_own():
    import random

    from qahub.metrics.topical_chat.responses import distinct
    from sacrebleu.metrics import BLEU

    from qahub.report.stats import Distinct, bleu_statistics

    rng = random.Random(7)
    for size in (1, 300):
        hyps, refs = _hostile_lines(rng, size), _hostile_lines(rng, size)
        ours = bleu_statistics(list(zip(hyps, refs)))
        assert ours.tolist() == BLEU()._extract_corpus_statistics(hyps, [refs])
        draw = np.random.default_rng(size).integers(0, size, size)
        w = np.bincount(draw, minlength=size)[None, :].astype(float)
        for order in (1, 2):
            est = Distinct.of(hyps, order)
            assert est.point() == distinct(hyps, order)
            assert est(w)[0] == distinct([hyps[i] for i in draw], order)  # a resample with repeated documents
    joined = [s + "\x01" for s in hyps]  # a segment holding the separator: tokenized one by one
    assert bleu_statistics(list(zip(joined, refs))).tolist() == BLEU()._extract_corpus_statistics(joined, [refs])


def _signatures(folder, change):
    """The run's results file with each task's logged signature ``change(signature)`` (None: left out, as an
    older run's)."""
    path = next(Path(folder).rglob("results_*.json"))
    results = json.loads(path.read_text(encoding="utf-8"))
    for config in results["configs"].values():
        metadata = config.get("metadata") or {}
        changed = change(metadata.pop("signature"))
        if changed is not None:
            metadata["signature"] = changed
    path.write_text(json.dumps(results), encoding="utf-8")


def test_a_pair_whose_logged_scorer_or_revision_differs_is_marked_and_never_starred(runs, tmp_path):
    """Issue 37: two copies of the oracle run, one logging another scorer and revision, one logging no signature
    (a run from before signatures): the first is compared with a mark naming both fields, the second gets None
    for what it did not record and no caveat; every score cell has its signature."""
    from qahub.report import write_report

    other, old = _copy(runs["oracle"], tmp_path / "other"), _copy(runs["oracle"], tmp_path / "old")
    _signatures(other, lambda signature: {**signature, "scorer": "changed=1", "revision": "sha256:other"})
    _signatures(old, lambda signature: None)
    data = write_report([f"half={runs['half']}", f"other={other}", f"old={old}"], tmp_path / "out", resamples=200,
                        progress=False, jobs=1)
    for task, entry in data["tasks"].items():
        main = entry["main_metric"]
        mine, theirs = (entry["scores"][run][main]["signature"] for run in ("half", "other"))
        assert (mine["task"], mine["metric"], mine["harness"], mine["n_shot"]) == (task, main, "lm-eval", 0)
        assert mine["revision"].startswith("sha256:") and mine["scorer"] and mine["qahub"]
        assert entry["caveats"]["other"] == [f"different scorer {mine['scorer']}/changed=1",
                                             f"different revision {mine['revision']}/sha256:other"], task
        assert "old" not in entry["caveats"], task
        signature = entry["scores"]["old"][main]["signature"]
        assert (signature["scorer"], signature["revision"], signature["qahub"]) == (None, None, None), task
        assert signature["task_version"] == "1.0"  # lm-eval's own record of the task version
        assert not any(cell["star"] for cell in entry["comparisons"]["other"].values()), task
    # a significant pair's star withheld: tests/test_signature.py (these samples are too small for a star)


def test_a_different_task_version_is_a_warning(runs, tmp_path):
    run = _copy(runs["oracle"], tmp_path / "run")
    path = next(run.glob("results_*.json"))
    results = json.loads(path.read_text(encoding="utf-8"))
    results["versions"]["qahub_limur"] = 2.0
    path.write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "out"
    done = qahub("report", f"a={runs['oracle']}", f"b={run}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert any("task version 2.0 differs" in w for w in data["tasks"]["qahub_limur"]["warnings"])
    assert not data["tasks"]["qahub_jeopardy"]["warnings"]



def json_values(text):
    st = hypothesis.strategies
    scalars = st.none() | st.booleans() | st.floats() | st.integers(-2**63, 2**63 - 1) | text
    return st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4),
                        max_leaves=12)


ANY_TEXT = hypothesis.strategies.text(hypothesis.strategies.characters(exclude_categories=()))


@hypothesis.given(json_values(ANY_TEXT), json_values(hypothesis.strategies.text()))
def test_a_samples_line_reads_as_json_reads_it(escaped, raw):
    """Lone surrogates and NaN escaped as json.dumps writes them; any other text written raw (UTF-8)."""
    for line in (json.dumps({"doc": escaped}), json.dumps({"doc": raw}, ensure_ascii=False)):
        assert repr(report_runs.load_line(line.encode("utf-8") + b"\n")) == repr(json.loads(line))


# the characters and strings 13a's rules look at, joined in any order
THIRTEEN_A = hypothesis.strategies.lists(hypothesis.strategies.sampled_from(
    list("aZ9 .,-'&;<>\n\t\x01é?!/") + ["&quot;", "&amp;", "&lt;", "<skipped>", "-\n", "5.", ".5"])).map("".join)


@hypothesis.given(hypothesis.strategies.one_of(THIRTEEN_A, ANY_TEXT))
def test_the_report_s_13a_rules_tokenize_as_sacrebleu_s(line):
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from qahub.report.ngrams import _13a

    tokenizer = Tokenizer13a()
    assert _13a(tokenizer)(line) == tokenizer(line)


# --- issue 27: --out, counts, duplicates, datasets, paired p without spread, malformed input, names, BLEU


def _fails_in_one_line(done, message):
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes() if p.is_file() else None) for p in folder.rglob("*"))


@pytest.mark.parametrize("schema", ["qahub-report/2", "qahub-report/1"])
def test_an_earlier_complete_report_is_replaced_without_overwrite(report, runs, tmp_path, schema):
    out = _copy(report[0], tmp_path / "earlier")
    (out / "report.md").write_text("old", encoding="utf-8")
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    (out / "report.json").write_text(json.dumps({**data, "schema": schema}), encoding="utf-8")  # /1: the first
    done = qahub("report", f"half={runs['half']}", f"oracle={runs['oracle']}", "--out", str(out), "--resamples", "300")
    assert done.returncode == 0, done.stderr
    assert (out / "report.md").read_text(encoding="utf-8") == (report[0] / "report.md").read_text(encoding="utf-8")
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["schema"] == "qahub-report/2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier"]  # no temporary folder left beside it


def _any_report_json(out, report):
    (out / "report.json").write_text("{}", encoding="utf-8")
    (out / "notes.txt").write_text("keep me", encoding="utf-8")


def _a_report_and_one_more_file(out, report):
    shutil.copytree(report, out, dirs_exist_ok=True)
    (out / "figures" / "mine.py").write_text("keep me", encoding="utf-8")


def _a_report_of_no_schema(out, report):
    shutil.copytree(report, out, dirs_exist_ok=True)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    del data["schema"]
    (out / "report.json").write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("make", [_any_report_json, _a_report_and_one_more_file, _a_report_of_no_schema])
def test_out_that_is_not_a_complete_report_is_kept_without_overwrite(report, runs, tmp_path, make):
    out = tmp_path / "myproject"
    out.mkdir()
    make(out, report[0])
    before = _tree(out)
    done = qahub("report", str(runs["half"]), "--out", str(out), "--resamples", "200")
    _fails_in_one_line(done, "exists and is not a qahub report; pass --overwrite")
    assert _tree(out) == before


def test_out_is_never_the_current_folder_nor_a_run_s_folder_even_with_overwrite(runs, tmp_path):
    experiment = tmp_path / "experiment"
    run = _copy(runs["half"], experiment / "half")
    (experiment / "notes.txt").write_text("keep me", encoding="utf-8")
    before = _tree(experiment)
    for out, cwd, says in ((".", experiment, "is the current folder or holds it"),
                           ("..", run, "is the current folder or holds it"),
                           (str(experiment), tmp_path, f"is, holds or is inside the run {run}"),
                           (str(run), tmp_path, "is, holds or is inside the run"),
                           (str(run / "report"), tmp_path, "is, holds or is inside the run")):
        done = subprocess.run([sys.executable, "-m", "qahub.cli", "report", str(run), "--out", out, "--overwrite"],
                              capture_output=True, text=True, cwd=cwd, env={**os.environ, "MPLBACKEND": "Agg"})
        _fails_in_one_line(done, says)
        assert _tree(experiment) == before, out


def test_a_symlinked_out_is_refused_before_any_run_is_read(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    done = qahub("report", str(tmp_path / "no-such-run"), "--out", str(tmp_path / "link"))
    _fails_in_one_line(done, f"--out {tmp_path / 'link'}: is a symbolic link")


def _samples_path(folder, task="qahub_limur"):
    return next(folder.rglob(f"samples_{task}_*.jsonl"))


def _cut(folder):
    path = _samples_path(folder)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:6]), encoding="utf-8")
    return f"{path}: 6 samples, but the results file scored {len(lines)} (n-samples)"


def _a_line_twice(folder):
    path = _samples_path(folder)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines + [lines[1]]), encoding="utf-8")
    doc_id = json.loads(lines[1])["doc_id"]
    return f"{path}: line {len(lines) + 1}: doc_id {doc_id} again (first on line 2)"


def _a_line_in_place_of_another(folder):
    path = _samples_path(folder)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[0]
    path.write_text("".join(lines), encoding="utf-8")
    return f"{path}: line 5: doc_id {json.loads(lines[0])['doc_id']} again (first on line 1)"


def _not_utf8(folder):
    path = _samples_path(folder)
    path.write_bytes(path.read_bytes().replace(b'"doc_id"', b'"doc\xff_id"', 1))
    return f"{path}: line 1: not UTF-8"


def _results_edit(edit):
    def damage(folder):
        path = next(folder.rglob("results_*.json"))
        results = json.loads(path.read_text(encoding="utf-8"))
        message = edit(results)
        path.write_text(json.dumps(results), encoding="utf-8")
        return f"{path}: {message}"
    damage.__name__ = edit.__name__
    return damage


def _task_entry_null(results):
    results["results"]["qahub_limur"] = None
    return "results.qahub_limur is not an object; the results file is damaged (rerun lm_eval)"


def _versions_a_list(results):
    results["versions"] = [1]
    return "'versions' is not an object"


def _n_shot_a_string(results):
    results["n-shot"] = "0"
    return "'n-shot' is not an object"


def _config_a_number(results):
    results["config"] = 5
    return "'config' is not an object"


def _configs_entry_a_list(results):
    results["configs"]["qahub_limur"] = []
    return "configs.qahub_limur is not an object"


def _no_n_samples(results):
    del results["n-samples"]
    return "no n-samples effective count for samples_qahub_"


@pytest.mark.parametrize("damage", [_cut, _a_line_twice, _a_line_in_place_of_another, _not_utf8,
                                    *map(_results_edit, [_task_entry_null, _versions_a_list, _n_shot_a_string,
                                                         _config_a_number, _configs_entry_a_list, _no_n_samples])])
def test_samples_and_results_that_do_not_agree_are_one_line(runs, tmp_path, damage):
    run = _copy(runs["half"], tmp_path / "run")
    message = damage(run)
    out = tmp_path / "out"
    done = qahub("report", str(run), "--out", str(out), "--jobs", "1", "--resamples", "200")
    _fails_in_one_line(done, message)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_predict_only_run_is_one_line(manager, tmp_path):  # noqa: F811
    lm_eval_run(Oracle(manager), manager, ["qahub_limur"], tmp_path / "run", predict_only=True)
    done = qahub("report", str(tmp_path / "run"), "--out", str(tmp_path / "out"))
    _fails_in_one_line(done, "an lm_eval --predict_only run?); rerun lm_eval without --predict_only")
    assert not (tmp_path / "out").exists()


def test_a_negative_seed_names_the_option(runs, tmp_path):
    done = qahub("report", str(runs["half"]), "--out", str(tmp_path / "out"), "--seed", "-1")
    _fails_in_one_line(done, "--seed -1: must be 0 or more")
    assert not (tmp_path / "out").exists()


def test_runs_of_another_dataset_config_are_reported_but_not_compared(runs, tmp_path):
    run = _copy(runs["oracle"], tmp_path / "run")
    path = next(run.rglob("results_*.json"))
    results = json.loads(path.read_text(encoding="utf-8"))
    config = results["configs"]["qahub_limur"]
    config["dataset_name"] = "v1.1"
    path.write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "out"
    done = qahub("report", f"a={runs['oracle']}", f"b={run}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    limur = data["tasks"]["qahub_limur"]
    assert set(limur["scores"]) == {"a", "b"} and limur["comparisons"] == {}
    assert limur["warnings"] == [f"b: not compared with a: a different dataset, config or split "
                                 f"({config['dataset_path']}/v1.1/{config['test_split']} against "
                                 f"{config['dataset_path']}/all/{config['test_split']})"]
    assert data["tasks"]["qahub_jeopardy"]["comparisons"]["b"]  # the other tasks are still compared
    assert "not compared with a: a different dataset" in (out / "report.md").read_text(encoding="utf-8")


def _metric(kind, binary=False, order=0):
    return report_runs.Metric("m", kind, binary, order)


def _compared(metric, base, other, resamples=200):
    from qahub.report.build import compare, estimator
    from qahub.report.stats import bootstrap

    eb, er = estimator(metric, base, "b"), estimator(metric, other, "r")
    draws = bootstrap({("vs", "r", "m", "b"): (eb, None), ("vs", "r", "m", "r"): (er, None)}, len(base), 12345,
                      resamples)
    return compare("r", {"m": metric}, {"m": (eb, er, None)}, len(base), draws, {"confidence": 0.95})["m"]


@pytest.mark.parametrize("n", [2, 3, 8])
def test_a_paired_p_from_differences_that_do_not_vary_is_the_exact_sign_test(n):
    cell = _compared(_metric("mean"), [0.2] * n, [0.7] * n)
    assert cell["test"].startswith("sign test") and cell["p"] == pytest.approx(binomtest(n, n, 0.5).pvalue)
    assert cell["p"] == min(1.0, 2 * 0.5 ** n)
    cell = _compared(_metric("sum"), [float(i) for i in range(n)], [i - 0.5 for i in range(n)])
    assert cell["test"].startswith("sign test") and cell["p"] == pytest.approx(binomtest(0, n, 0.5).pvalue)
    # differences that vary, of 30 documents or more: the bootstrap (fewer: test_report_stats' sign-flip test)
    cell = _compared(_metric("mean"), [0.2, 0.1] * 15, [0.7, 0.3] * 15)
    assert cell["test"] == "paired bootstrap"


def test_one_paired_document_of_bleu_or_distinct_is_too_few_documents():
    from qahub.report.build import adjust
    from qahub.report.render import task_blocks

    for metric, base, other in ((_metric("bleu"), [["a b c d", "a b c d"]], [["x y", "a b c d"]]),
                                (_metric("distinct", order=1), ["a a a"], ["a b c"])):
        cell = _compared(metric, base, other)
        assert cell["p"] is None and cell["test"] == "1 document: no interval, test or MDE" and cell["n"] == 1
    entry = {"scores": {}, "breakdown": {}, "comparisons": {"r": {"m": cell}}, "warnings": [], "notes": [],
             "main_metric": "m"}
    adjust({"t": entry})
    assert cell["p_holm"] is None
    table = task_blocks("t", entry, {"baseline": "b", "confidence": 0.95}, {})[-1]
    assert table[2][0][3:5] == ["–", "–"] and "*" not in table[2][0][4]


def test_run_names_are_shown_as_given(runs, tmp_path):
    out = tmp_path / "out"
    done = qahub("report", f"$\\foo$={runs['half']}", f"_x={runs['oracle']}", "--out", str(out),
                 "--resamples", "200")
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| $\\foo$ |" in markdown and "| _x |" in markdown
    assert "<td>$\\foo$</td>" in (out / "report.html").read_text(encoding="utf-8")


def test_figure_legends_show_every_run_name_as_given(monkeypatch):
    import matplotlib.figure

    from qahub.report.render import task_figures

    legends, save = [], matplotlib.figure.Figure.savefig

    def saving(figure, *args, **kwargs):
        save(figure, *args, **kwargs)  # draws: "$\foo$" parsed as TeX would raise here
        legends.append([text.get_text() for text in figure.axes[0].get_legend().get_texts()])

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", saving)
    cell = {"value": 0.5, "ci": [0.25, 0.75], "n": 4}
    names = ["$\\foo$", "_x", "a_b$"]
    entry = {"main_metric": "m", "scores": {name: {"m": cell} for name in names},
             "breakdown": {"f": {"$200": {name: {"m": cell} for name in names}, "_y": {}}}}
    assert set(task_figures("t", entry)) == {"t.png", "t_f.png"}
    assert legends == [names, names]


class NoMatch(Oracle):
    """A reply that shares no word with any reference."""

    def generate_until(self, requests):
        return ["qqqq zzzz xxxx wwww vvvv" for _ in requests]


@pytest.fixture(scope="module")
def no_match(manager, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("nomatch") / "run"
    lm_eval_run(NoMatch(manager), manager, ["qahub_doc2dial_response"], folder)
    return folder


def test_the_report_s_doc2dial_bleu_is_the_task_s_own_with_zero_match_replies(runs, no_match, tmp_path):
    out = tmp_path / "out"
    done = qahub("report", f"none={no_match}", f"half={runs['half']}", "--out", str(out), "--resamples", "200")
    assert done.returncode == 0, done.stderr
    entry = json.loads((out / "report.json").read_text(encoding="utf-8"))["tasks"]["qahub_doc2dial_response"]
    shown = {}
    for name, folder in (("none", no_match), ("half", runs["half"])):
        cell, value = entry["scores"][name]["bleu"], _results(folder)["qahub_doc2dial_response"]["bleu,none"]
        assert cell["value"] == value, (name, cell)
        assert cell["ci"][0] <= value <= cell["ci"][1] if cell["ci"][0] is not None else \
            "a percentile bootstrap over fewer than 4" in cell["no_interval"], (name, cell)
        shown[name] = value
    assert 0 < shown["none"] < shown["half"]  # sacreBLEU 1.4.3's zero-match smoothing: not 0
    assert not entry["warnings"], entry["warnings"]
    assert entry["comparisons"]["half"]["bleu"]["delta"] == pytest.approx(shown["half"] - shown["none"], abs=1e-12)
    assert any("task's own BLEU, bleu_of_statistics" in note and "zero-match:sacrebleu-1.4.3-exp-smoothing" in note
               for note in entry["notes"])


def test_a_resample_s_bleu_is_the_task_s_aggregation_of_its_documents():
    import random

    from qahub.report.build import estimator

    spec = report_runs.qahub_tasks()["qahub_doc2dial_response"]
    aggregation = spec.metrics["bleu"].aggregation
    metric = report_runs.task_metrics(spec)["bleu"]
    rng = random.Random(3)
    golds = _hostile_lines(rng, 12)
    for replies in (["qqqq zzzz xxxx wwww vvvv"] * 12, _hostile_lines(rng, 12)):
        pairs = [[reply, gold] for reply, gold in zip(replies, golds)]
        est = estimator(metric, pairs, "here")
        assert est.point() == pytest.approx(aggregation(pairs), abs=1e-9)
        drawn = np.random.default_rng(5).integers(0, 12, 12)
        w = np.bincount(drawn, minlength=12)[None, :].astype(float)
        assert est(w)[0] == pytest.approx(aggregation([pairs[i] for i in drawn]), rel=1e-6)


def _cells(data):
    """(where, value, interval) of every score, breakdown cell and comparison of a report."""
    for task, entry in data["tasks"].items():
        for run, scores in entry["scores"].items():
            yield from (((task, run, m), c["value"], c["ci"]) for m, c in scores.items())
        for field, cats in entry["breakdown"].items():
            for cat, per_run in cats.items():
                for run, scores in per_run.items():
                    yield from (((task, field, cat, run, m), c["value"], c["ci"]) for m, c in scores.items())
        for run, per in entry["comparisons"].items():
            yield from (((task, "vs", run, m), c["delta"], c["ci"]) for m, c in per.items())


def test_every_interval_holds_its_point_value(report, runs, tmp_path):
    limited = tmp_path / "limited"  # a few documents: half-samples of one or two
    done = qahub("report", f"half={runs['half']}", f"limited={runs['limited']}", "--out", str(limited),
                 "--resamples", "200")
    assert done.returncode == 0, done.stderr
    seen = set()
    for data in (report[1], json.loads((limited / "report.json").read_text(encoding="utf-8"))):
        for where, value, (low, high) in _cells(data):
            if value is not None and low is not None:
                # 1e-6: sacrebleu's resamples sum BLEU statistics in float32, the point value in integers
                slack = 1e-6 * max(1.0, abs(value))
                assert low - slack <= value <= high + slack, (where, value, low, high)
                seen.add(where[-1])
    # game_score, a sum over 2-3 themes here, has no percentile interval (issue 42 item 13)
    assert {"distinct_1", "distinct_2", "bleu", "exact_match"} <= seen
    methods = report[1]["tasks"]["qahub_topical_chat_freq"]["intervals"]
    assert methods["distinct_1"].startswith("half-samples of the conversations without replacement")


def test_distinct_n_half_samples_are_centred_on_the_point_and_as_wide_as_the_spread_of_documents():
    """Half-samples without replacement: the deviations of the statistic, rescaled by sqrt(m / (n - m)), centred
    on the point value; for a mean that is the bootstrap's spread (checked on distinct-1 of one-token replies,
    whose distinct-1 over a half-sample is a mean when every reply is a different word)."""
    from qahub.report.stats import Distinct, Mean, bootstrap, interval

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(2000)]
    replies = [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(401)]
    est = Distinct.of(replies, 1)
    draws = bootstrap({"d": (est, None)}, len(replies), 7, 1000)["d"]
    low, high = interval(draws, 0.95)
    assert low < est.point() < high and draws.mean() == pytest.approx(est.point())
    # one word a reply, all different: distinct-1 is 1 on any sample; the half-samples keep it there
    same = Distinct.of([f"x{i}" for i in range(50)], 1)
    assert interval(bootstrap({"d": (same, None)}, 50, 7, 200)["d"], 0.95) == pytest.approx([1.0, 1.0])
    # a linear statistic: its half-sample spread is the bootstrap's (the rescaling)
    values = rng.random(401)
    mean = Mean.of(values, np.ones(401, dtype=bool))
    mean.halved = True
    spread = np.std(bootstrap({"m": (mean, None)}, 401, 7, 4000)["m"])
    assert spread == pytest.approx(np.std(values, ddof=1) / np.sqrt(401), rel=0.06)


def test_wilson_intervals_are_statsmodels_and_0_of_7_is_not_a_point(report, runs):
    from statsmodels.stats.proportion import proportion_confint

    from qahub.report.build import cell
    from qahub.report.stats import Mean

    zeros = Mean.of(np.zeros(7), np.ones(7, dtype=bool))
    c = cell(0.0, None, 7, 0.95, (zeros, 1.0))
    assert c["ci"] == pytest.approx(list(proportion_confint(0, 7, alpha=0.05, method="wilson")), abs=1e-15)
    assert c["ci"][1] > 0.3
    hundreds = Mean.of(np.array([100.0, 0, 0, 100]), np.ones(4, dtype=bool))  # doc2dial's exact: 0 / 100
    assert cell(50.0, None, 4, 0.9, (hundreds, 100.0))["ci"] == pytest.approx(
        [100 * b for b in proportion_confint(2, 4, alpha=0.1, method="wilson")])
    _, data, _ = report
    entry = data["tasks"]["qahub_limur"]
    assert entry["intervals"]["exact_match"] == "Wilson score interval"
    samples = _samples(runs["half"], "qahub_limur")
    right = sum(1 for s in samples if s["exact_match"] > 0)
    assert entry["scores"]["half"]["exact_match"]["ci"] == pytest.approx(list(
        proportion_confint(right, len(samples), alpha=0.05, method="wilson")), abs=1e-15)
    # clustered 0/1 metrics keep the cluster bootstrap, flagged approximate with fewer than 30 clusters
    method = data["tasks"]["qahub_doc2dial_grounding"]["intervals"]["exact"]
    assert method.startswith("percentile bootstrap over dialogues") and "approximate" in method


def test_clustered_stderr_is_inspect_ai_s():
    from inspect_ai.scorer import SampleScore, Score, stderr

    from qahub.report.stats import Clusters, clustered_stderr

    rng = np.random.default_rng(1)
    keys = [f"c{k}" for k in rng.integers(0, 23, size=300)]
    values = rng.random(300) + np.array([hash(k) % 7 for k in keys]) / 7
    scores = [SampleScore(score=Score(value=float(v)), sample_id=i, sample_metadata={"conversation": k})
              for i, (v, k) in enumerate(zip(values, keys))]
    assert clustered_stderr(values, Clusters.of(keys)) == pytest.approx(stderr(cluster="conversation")(scores),
                                                                       rel=1e-12)
    assert clustered_stderr(values) == pytest.approx(stderr()(scores), rel=1e-12)


def _conversations(rng, shared, clusters=60, turns=20):
    """Per-turn F1-like values of Topical-Chat-shaped replies: ``shared`` of the error is the conversation's."""
    effect = np.repeat(rng.normal(0, 1, clusters), turns)
    values = 0.5 + 0.2 * (shared * effect + (1 - shared) * rng.normal(0, 1, clusters * turns))
    return values, np.repeat(np.arange(clusters), turns)


def test_clustered_intervals_are_wider_where_errors_are_shared_within_conversations():
    from qahub.report.stats import Clusters, Mean, bootstrap, interval

    rng = np.random.default_rng(2)
    for shared, low, high in ((0.7, 2.0, None), (0.0, 0.85, 1.15)):
        values, ids = _conversations(rng, shared)
        est = Mean.of(values, np.ones(len(values), dtype=bool))
        width = [np.diff(interval(bootstrap({"m": (est, None)}, len(values), 3, 2000, clusters)["m"], 0.95))[0]
                 for clusters in (Clusters.of(ids.tolist()), None)]
        ratio = width[0] / width[1]
        assert ratio > low and (high is None or ratio < high), (shared, ratio)


def test_paired_tests_on_clustered_errors_reject_a_true_null_at_most_6_percent():
    """The same model twice: each run's state of mind shared over a conversation's turns (a per-run, per-
    conversation shift of the chance of a right reply). McNemar's test, which takes the turns as independent,
    rejects far too often; the report's paired cluster bootstrap does not."""
    from scipy.special import expit

    from qahub.report.build import compare
    from qahub.report.stats import Clusters, Mean, bootstrap

    rng, clusters, turns, sims = np.random.default_rng(4), 100, 4, 1000
    ids = np.repeat(np.arange(clusters), turns)
    design, metric = Clusters(ids), report_runs.Metric("m", "mean", binary=True)
    rejected = mcnemar = 0
    for sim in range(sims):
        difficulty = np.repeat(rng.normal(0, 1, clusters), turns)
        a, b = (rng.random(len(ids)) < expit(difficulty + np.repeat(rng.normal(0, 1.2, clusters), turns))
                for _ in range(2))
        eb, er = (Mean.of(x.astype(float), np.ones(len(ids), dtype=bool)) for x in (a, b))
        keyed = {("vs", "r", "m", "b"): (eb, None), ("vs", "r", "m", "r"): (er, None)}
        draws = bootstrap(keyed, len(ids), 1000 + sim, 300, design)
        cell = compare("r", {"m": metric}, {"m": (eb, er, None)}, len(ids), draws, {"confidence": 0.95}, design,
                       "conversation")["m"]
        assert cell["test"] == "paired bootstrap over conversations"
        rejected += cell["p"] < 0.05
        plain = compare("r", {"m": metric}, {"m": (eb, er, None)}, len(ids), draws, {"confidence": 0.95})
        mcnemar += plain["m"]["p"] < 0.05
    assert rejected / sims <= 0.06 and mcnemar / sims > 0.1, (rejected / sims, mcnemar / sims)


def test_the_minimum_detectable_difference_is_the_paired_z_test_s():
    from scipy.stats import norm
    from statsmodels.stats.power import NormalIndPower

    from qahub.report.build import compare
    from qahub.report.stats import Clusters, Mean, bootstrap

    rng = np.random.default_rng(6)
    base, other = rng.random(80), rng.random(80) + 0.02
    eb, er = (Mean.of(x, np.ones(80, dtype=bool)) for x in (base, other))
    draws = bootstrap({("vs", "r", "m", "b"): (eb, None), ("vs", "r", "m", "r"): (er, None)}, 80, 1, 200)
    cell = compare("r", {"m": _metric("mean")}, {"m": (eb, er, None)}, 80, draws, {"confidence": 0.9})["m"]
    sd = np.std(other - base, ddof=1)
    assert cell["mde"] == pytest.approx((norm.ppf(0.95) + norm.ppf(0.8)) * sd / np.sqrt(80), rel=1e-12)
    # statsmodels' power of a one-sample (paired) z-test: the effect size it can detect, in standard deviations
    assert cell["mde"] == pytest.approx(sd * NormalIndPower().solve_power(nobs1=80, alpha=0.1, power=0.8, ratio=0),
                                        rel=1e-3)
    assert cell["underpowered"] == f"underpowered: a difference below {cell['mde']:.3g} cannot be seen with 80 documents"
    ids = np.repeat(np.arange(16), 5)  # clustered: the clustered standard error of the differences
    design = Clusters(ids)
    draws = bootstrap({("vs", "r", "m", "b"): (eb, None), ("vs", "r", "m", "r"): (er, None)}, 80, 1, 200, design)
    cell = compare("r", {"m": _metric("mean")}, {"m": (eb, er, None)}, 80, draws, {"confidence": 0.9}, design,
                   "dialogue")["m"]
    d = other - base
    clustered = np.sqrt(16 / 15 * sum((d[ids == k] - d.mean()).sum() ** 2 for k in range(16))) / 80
    assert cell["mde"] == pytest.approx((norm.ppf(0.95) + norm.ppf(0.8)) * clustered, rel=1e-12)
    assert cell["underpowered"].endswith("with 80 documents (16 dialogues)")


def test_report_json_holds_clusters_interval_methods_power_and_both_adjusted_ps(report, runs):
    from statsmodels.stats.multitest import multipletests

    out, data, _ = report
    assert data["schema"] == "qahub-report/2"
    for name in ("half", "oracle"):
        run = data["runs"][name]
        assert run["harness"] == "lm-eval" and run["source"] == run["results_file"] and Path(run["source"]).is_file()
    fields = {task: entry["cluster"]["field"] for task, entry in data["tasks"].items()}
    assert fields == {**{task: None for task in fields}, "qahub_topical_chat_freq": "conversation",
                      "qahub_topical_chat_rare": "conversation", "qahub_doc2dial_grounding": "dialogue",
                      "qahub_doc2dial_response": "dialogue", "qahub_jeopardy": "theme"}
    chat = data["tasks"]["qahub_topical_chat_freq"]
    count = chat["cluster"]["runs"]["half"]
    conversations = {s["doc"]["conversation_id"] for s in _samples(runs["half"], "qahub_topical_chat_freq")}
    assert count["clusters"] == len(conversations) and count["documents"] > len(conversations)
    assert count["design_effect"]["f1"] > 0
    assert f"resampled by conversation: {count['clusters']} conversations of {count['documents']} documents" in \
        " ".join(chat["notes"])
    cells = [c for e in data["tasks"].values() for per in e["comparisons"].values() for c in per.values()
             if c["p"] is not None]
    assert [c["p_bh"] for c in cells] == pytest.approx(list(multipletests([c["p"] for c in cells],
                                                                          method="fdr_bh")[1]))
    # an MDE, or none and why (an exact test of few units that cannot reach p < alpha, differences that do not vary)
    assert all(c["mde"] >= 0 if c["mde"] is not None else c["mde_note"].startswith("not estimable") for c in cells)
    assert any(c["mde"] is not None for c in cells)
    assert all(set(e["intervals"]) == {m for s in e["scores"].values() for m in s} for e in data["tasks"].values())
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "p_bh" in text and "MDE" in text and "resampled by dialogue" in text


def test_the_first_screen_is_a_summary_of_every_run_and_task_main_metric(report):
    from qahub.report.render import short_label

    out, data, _ = report
    text = (out / "report.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# qahub report" and lines[2].startswith("| run | ")  # the table comes first
    header = lines[2]
    assert all(f"{short_label(task)}; {entry['main_metric']}" in header for task, entry in data["tasks"].items())
    oracle = next(line for line in lines if line.startswith("| oracle; lm-eval · "))
    limur = data["tasks"]["qahub_limur"]
    cell = limur["comparisons"]["oracle"][limur["main_metric"]]
    mains = [c["comparisons"]["oracle"][c["main_metric"]] for c in data["tasks"].values()
             if c["main_metric"] in c["comparisons"].get("oracle", {})]
    assert (" *" in oracle) == any(c.get("star", c["p_holm"] is not None and c["p_holm"] < 0.05) for c in mains)
    assert cell["p_holm"] is not None
    assert next(line for line in lines if line.startswith("| half (baseline); lm-eval · "))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.index("<table") < html.index("<h2>")  # the summary before any task


GUIDE = Path(__file__).parent.parent / "docs" / "report.md"  # the report guide's example
EXAMPLE = ("<!-- report example (tests/test_report.py) -->\n", "<!-- end of the report example -->\n")


def example(out, data):
    """The report guide's example, from this module's report of the scripted runs: the Markdown summary, and the HTML
    page (the scripted runs' model names, which lm-eval draws at random for a model object, read "scripted", and
    their results files are named from the runs' folder)."""
    from qahub.report.render import blocks, markdown, page

    data = json.loads(json.dumps(data))
    root = os.path.commonpath([run["results_file"] for run in data["runs"].values()])
    for run in data["runs"].values():  # and no temporary folder's name
        run["model"], run["results_file"] = "scripted", str(Path("runs", os.path.relpath(run["results_file"], root)))
    figures = {task: [f"{task}.png"] + [f"{task}_{field}.png" for field in entry["breakdown"]]
               for task, entry in data["tasks"].items()}
    report = blocks(data, figures)
    text = markdown(report)
    images = {name: (out / "figures" / name).read_bytes() for names in figures.values() for name in names}
    return text[text.index("\n") + 2:text.index("## Runs")], page(report, images)


def write_example(out, summary, html):
    """QAHUB_WRITE_EXAMPLE=1: the report guide's example table, docs/report-first-screen.png (Chromium at 1,400 x 900),
    docs/report-marks.png (the same of test_report_render's report with every mark) and
    docs/report-jeopardy-by-value.png, made again."""
    from test_report_render import hostile_data

    from qahub.report.render import blocks, page

    docs = GUIDE.parent
    text = GUIDE.read_text(encoding="utf-8")
    start, end = text.index(EXAMPLE[0]) + len(EXAMPLE[0]), text.index(EXAMPLE[1])
    GUIDE.write_text(text[:start] + summary.rstrip("\n") + "\n\n" + text[end:], encoding="utf-8")
    shutil.copyfile(out / "figures" / "qahub_jeopardy_question_number.png", docs / "report-jeopardy-by-value.png")
    screenshot(html, docs / "report-first-screen.png", out.parent)
    screenshot(page(blocks(hostile_data(), {}), {}), docs / "report-marks.png", out.parent)


def screenshot(html, png, work):
    """Chromium's picture of the page ``html`` in a 1,400 x 900 window."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert chromium, "QAHUB_WRITE_EXAMPLE needs a Chromium (apt-get install chromium) for the screenshots"
    (work / "example.html").write_text(html, encoding="utf-8")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={work / 'chromium'}", "--window-size=1400,900", f"--screenshot={png}",
                    (work / "example.html").as_uri()], check=True, capture_output=True, timeout=120)


def test_the_report_guide_s_example_is_this_report_s_first_screen(report):
    out, data, _ = report
    summary, html = example(out, data)
    if os.environ.get("QAHUB_WRITE_EXAMPLE"):
        write_example(out, summary, html)
    text = GUIDE.read_text(encoding="utf-8")
    assert text[text.index(EXAMPLE[0]) + len(EXAMPLE[0]):text.index(EXAMPLE[1])] == summary.rstrip("\n") + "\n\n", \
        "the report guide's example is not this report's: QAHUB_WRITE_EXAMPLE=1 pytest tests/test_report.py -k report_guide"


def test_each_run_s_weakest_categories_against_the_baseline_are_named():
    from qahub.report.render import weakest

    def scores(value):  # an interval from enough documents (issue 42: a category of n = 2 says nothing)
        return {"m": {"value": value, "ci": [value - 0.05, value + 0.05], "n": 40}}

    cats = {"a": {"b": scores(0.9), "r": scores(0.1)}, "b": {"b": scores(0.5), "r": scores(0.45)},
            "c": {"b": scores(0.2), "r": scores(0.6)}, "d": {"b": scores(0.8), "r": scores(0.4)}}
    data = {"settings": {"baseline": "b"},
            "tasks": {"t": {"main_metric": "m", "breakdown": {"kind": cats}}}}
    assert weakest(data, "r") == ["t kind=a: m 0.10 [0.05, 0.15] against 0.90 [0.85, 0.95] (n=40)",
                                  "t kind=d: m 0.40 [0.35, 0.45] against 0.80 [0.75, 0.85] (n=40)"]
