"""``qahub report`` on real lm-eval output: every qahub task run through lm-eval's ``simple_evaluate`` with model
doubles, saved by lm-eval's own ``EvaluationTracker`` as ``lm_eval --output_path X --log_samples`` saves it."""

import base64
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


def qahub(*argv):
    return subprocess.run([sys.executable, "-m", "qahub.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"})


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
                assert lo <= hi and cell["n"] > 0
    # the half-right run's intervals are not a point where its documents differ
    assert data["tasks"]["qahub_limur"]["scores"]["half"]["exact_match"]["ci"][0] < \
        data["tasks"]["qahub_limur"]["scores"]["half"]["exact_match"]["ci"][1]


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
    for task, metric in (("qahub_limur", "exact_match"), ("qahub_jeopardy", "accuracy")):
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
    for task in ("qahub_doc2dial_response", "qahub_topical_chat_freq"):
        base, other = _samples(runs["half"], task), _samples(runs["oracle"], task)
        refs = [s["bleu"][1] for s in base]
        test = PairedTest([("half", [s["bleu"][0] for s in base]), ("oracle", [s["bleu"][0] for s in other])],
                          {"BLEU": BLEU()}, [refs], test_type="bs", n_samples=data["settings"]["resamples"])
        _, scores = test()
        cell = data["tasks"][task]["comparisons"]["oracle"]["bleu"]
        assert cell["test"] == "sacrebleu paired bootstrap"
        assert cell["p"] == scores["BLEU"][1].p_value
        assert cell["delta"] == pytest.approx(scores["BLEU"][1].score - scores["BLEU"][0].score)


def test_identical_runs_compare_at_delta_0_and_p_1(runs, tmp_path):
    out = tmp_path / "same"
    done = qahub("report", f"a={runs['half']}", f"b={runs['half']}", "--out", str(out), "--resamples", "50")
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
    done = qahub("report", f"full={runs['half']}", f"two={runs['limited']}", "--out", str(out), "--resamples", "50")
    assert done.returncode == 0, done.stderr
    entry = json.loads((out / "report.json").read_text(encoding="utf-8"))["tasks"]["qahub_limur"]
    assert entry["comparisons"]["two"]["exact_match"]["n"] == 2
    assert any("paired on the 2 documents both scored" in note for note in entry["notes"])


def _copy(src, dst):
    shutil.copytree(src, dst)
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
    done = qahub("report", str(runs["half"]), "--out", str(foreign), "--resamples", "20")
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


def test_a_different_task_version_is_a_warning(runs, tmp_path):
    run = _copy(runs["oracle"], tmp_path / "run")
    path = next(run.glob("results_*.json"))
    results = json.loads(path.read_text(encoding="utf-8"))
    results["versions"]["qahub_limur"] = 2.0
    path.write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "out"
    done = qahub("report", f"a={runs['oracle']}", f"b={run}", "--out", str(out), "--resamples", "20")
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
