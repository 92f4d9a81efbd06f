"""lm-evaluation-harness tasks: ``qahub harness-tasks`` on the bundled samples' exports, run through lm-eval's own
``simple_evaluate`` with an oracle model (replies ``doc_to_target``) and a garbage model (replies nothing useful)."""

import http.server
import json
import math
import subprocess
import sys

import datasets
import pytest

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from qahub import cli, harness, planning, registry  # noqa: E402

# the lone surrogate first: every task's first request gets it, and it must be counted unparseable everywhere
GARBAGE = ["\ud800", "", "   \n\t ", "x" * 10_000, "**Ответ:** _?_\n\n```json\n{}\n```", '{"answer": ["broken', "\udfff\ud800",
           "Ответ: Ответ: Ответ:", "None", "回答: \n導出: [[", "agent_2:"]

# what a reply equal to the target must score: every gold-matching metric of every task at its top, as the
# task declares it
TOP = {task: spec.oracle for task, spec in planning.all_tasks().items()}


@pytest.fixture(scope="module")
def locations(sample_exports):
    return {corpus: str(folder) for corpus, folder in sample_exports.items()}


@pytest.fixture(scope="module")
def task_dir(locations, tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks") / "qahub-tasks"
    argv = ["--quiet", "harness-tasks", "--out", str(out)]
    for corpus, location in locations.items():
        argv += ["--dataset", f"{corpus}={location}"]
    assert cli.main(argv) == 0
    return out


@pytest.fixture(scope="module")
def manager(task_dir):
    return TaskManager(include_path=str(task_dir))


@pytest.fixture(scope="module")
def plan(task_dir):
    return json.loads((task_dir / harness.MARKER).read_text(encoding="utf-8"))


class Oracle(LM):
    """Replies to every request with its document's ``doc_to_target``: the reply format the prompt asks for."""

    def __init__(self, manager):
        super().__init__()
        self.tasks = {}
        self.manager = manager

    def target(self, request):
        if request.task_name not in self.tasks:
            self.tasks[request.task_name] = _load(self.manager, request.task_name)
        return self.tasks[request.task_name].doc_to_target(request.doc)

    def generate_until(self, requests):
        return [self.target(request) for request in requests]

    def loglikelihood(self, requests):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError


class Garbage(Oracle):
    """Replies with the garbage list in turn, counting per task."""

    def generate_until(self, requests):
        seen = {}
        replies = []
        for request in requests:
            count = seen[request.task_name] = seen.get(request.task_name, -1) + 1
            replies.append(GARBAGE[count % len(GARBAGE)])
        return replies


def _load(manager, task):
    return manager.load_task_or_group([task])[task]


def _evaluate(model, manager, tasks, **kwargs):
    return simple_evaluate(model=model, tasks=tasks, task_manager=manager, bootstrap_iters=0, **kwargs)


def _scores(result, task):
    return {key.split(",")[0]: value for key, value in result["results"][task].items()
            if key.endswith(",none") and "_stderr" not in key}


def test_every_corpus_has_its_task_or_group(plan, manager):
    assert set(plan) == set(TOP)
    for corpus in planning.corpora():
        assert f"qahub_{corpus}" in manager.all_tasks + manager.all_groups


def test_oracle_scores_the_top_on_every_gold_matching_metric(plan, manager):
    result = _evaluate(Oracle(manager), manager, sorted(plan))
    for task, expected in TOP.items():
        scores = _scores(result, task)
        assert all(math.isfinite(v) for v in scores.values()), (task, scores)
        for metric, top in expected.items():
            assert scores[metric] == pytest.approx(top), (task, metric, scores)


def test_garbage_model_finishes_every_task_with_finite_low_scores(plan, manager):
    result = _evaluate(Garbage(manager), manager, sorted(plan))
    for task in plan:
        scores = _scores(result, task)
        assert scores and all(isinstance(v, float | int) and math.isfinite(v) for v in scores.values()), (task, scores)
        assert scores["unparseable"] > 0, (task, scores)
        for metric, top in TOP[task].items():
            if metric not in ("unparseable", "abstained"):
                assert scores[metric] < top, (task, metric, scores)


def test_fewshot_demonstrations_show_the_target(plan, manager):
    tasks = [task for task, entry in plan.items() if entry["fewshot_split"]]
    assert tasks
    result = _evaluate(Oracle(manager), manager, tasks, num_fewshot=1, log_samples=True)
    for task in tasks:
        loaded = _load(manager, task)
        shots = [loaded.doc_to_target(doc) for doc in loaded.fewshot_docs()]
        for sample in result["samples"][task]:
            context = sample["arguments"][0][0]
            prompt = loaded.doc_to_text(sample["doc"])
            assert context.endswith(prompt) and context != prompt, task
            assert any(f"{shot}\n\n" in context for shot in shots), (task, context[:300])


def test_targets_never_hold_a_stop_sequence(plan, manager):
    for task, entry in plan.items():
        loaded = _load(manager, task)
        until = loaded.config.generation_kwargs["until"]
        docs = list(loaded.eval_docs) + (list(loaded.fewshot_docs()) if entry["fewshot_split"] else [])
        for doc in docs:
            target = loaded.doc_to_target(doc)
            assert target and not any(stop in target for stop in until), (task, target, until)


def test_mera_limur_task_shape_runs_on_the_export(locations, tmp_path):
    """MERA's limur.yaml, dataset_path changed, with stock lm-eval: ``{{ outputs.strip() }}`` needs a string."""
    folder = tmp_path / "mera"
    folder.mkdir()
    (folder / "utils.py").write_text(
        "def doc_to_text(doc):\n    return doc['instruction'].format(**doc['inputs'])\n\n\n"
        "def process_results(doc, results):\n"
        "    from qahub.metrics.limur.task_api import TASKS\n"
        "    return {'exact_match': TASKS['qahub_limur'].score(results[0] if results else '', doc)['exact_match_mera']}\n",
        encoding="utf-8")
    (folder / "limur_mera.yaml").write_text(
        f"dataset_path: {json.dumps(locations['limur'])}\ndataset_name: all\ntask: limur_mera\ntest_split: validation\n"
        "fewshot_split: shots\noutput_type: generate_until\ndoc_to_text: !function utils.doc_to_text\n"
        'doc_to_target: "{{ outputs.strip() }}"\nprocess_results: !function utils.process_results\n'
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
        "num_fewshot: 0\nmetadata:\n  version: 1.0\n", encoding="utf-8")
    mera = TaskManager(include_path=str(folder))
    oracle = _evaluate(Oracle(mera), mera, ["limur_mera"], num_fewshot=1)
    assert _scores(oracle, "limur_mera")["exact_match"] == 1.0
    rows = datasets.load_dataset(locations["limur"], "all", split="shots")
    assert all(isinstance(row["outputs"], str) and row["outputs"] for row in rows)


def test_task_folder_refuses_to_overwrite_what_it_did_not_write(locations, tmp_path, capsys):
    out = tmp_path / "tasks"
    out.mkdir()
    (out / "mine.txt").write_text("keep", encoding="utf-8")
    argv = ["harness-tasks", "--out", str(out), "--dataset", f"limur={locations['limur']}"]
    assert cli.main(argv) == 1
    assert "exists and is not empty" in capsys.readouterr().err
    assert cli.main([*argv, "--overwrite"]) == 1
    assert "not a folder written by qahub harness-tasks" in capsys.readouterr().err
    assert (out / "mine.txt").read_text(encoding="utf-8") == "keep"


@pytest.mark.parametrize("pair, message", [
    ("limur", "expected CORPUS=LOCATION"),
    ("nosuch=./x", "unknown corpus 'nosuch'"),
    ("limur=/definitely/not/here", "neither a folder nor a Hub dataset id"),
])
def test_bad_dataset_arguments_are_named(pair, message, tmp_path, capsys):
    assert cli.main(["harness-tasks", "--out", str(tmp_path / "t"), "--dataset", pair]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


class _Judge(http.server.BaseHTTPRequestHandler):
    """A fake OpenAI-compatible judge: answers every chat completion with the class's ``reply`` (or an error)."""

    reply = "2"
    status = 200
    asked = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).asked.append(body["messages"][-1]["content"])
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": self.reply}}]}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def judge_url(handler_server):
    return handler_server(_Judge) + "/v1"


@pytest.mark.parametrize("reply, status, expected", [("2", 200, 1.0), ("1", 200, 0.5), ("отлично", 200, 0.0),
                                                     ("2", 500, 0.0)])
def test_limur_judge_inside_the_harness(locations, tmp_path, monkeypatch, judge_url, reply, status, expected):
    """--judge adds judge_score, read from MERA-style environment variables at run time; a failing or
    unreadable judge scores 0 and the run finishes."""
    monkeypatch.setattr(_Judge, "reply", reply)
    monkeypatch.setattr(_Judge, "status", status)
    monkeypatch.setattr(_Judge, "asked", [])
    for name, value in {"QAHUB_JUDGE_URL": judge_url, "QAHUB_JUDGE_MODEL": "fake", "QAHUB_JUDGE_RETRIES": "0",
                        "QAHUB_JUDGE_PROMPT": "mera"}.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "tasks"
    assert cli.main(["--quiet", "harness-tasks", "--out", str(out), "--dataset", f"limur={locations['limur']}",
                     "--judge"]) == 0
    mera = TaskManager(include_path=str(out))
    scores = _scores(_evaluate(Oracle(mera), mera, ["qahub_limur"]), "qahub_limur")
    assert scores["judge_score"] == expected and scores["exact_match"] == 1.0
    assert _Judge.asked and all("### Эталонный ответ:" in text for text in _Judge.asked)


class _Chat(http.server.BaseHTTPRequestHandler):
    """A fake OpenAI-compatible chat model that always answers «Ответ: Б»."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "Ответ: Б"}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_the_readme_lm_eval_command_runs_against_a_local_chat_server(task_dir, handler_server, tmp_path):
    """The README's command line: lm_eval --model local-chat-completions --include_path <qahub tasks>."""
    url = handler_server(_Chat) + "/v1/chat/completions"
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions", "--apply_chat_template",
         "--model_args", f"model=fake,base_url={url},num_concurrent=1,max_retries=1,tokenized_requests=False",
         "--include_path", str(task_dir), "--tasks", "qahub_limur", "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    [results] = list((tmp_path / "out").rglob("results_*.json"))
    scores = json.loads(results.read_text(encoding="utf-8"))["results"]["qahub_limur"]
    # «Ответ: Б» is right on the validation rows whose answer is Б, and always readable
    assert 0 < scores["exact_match,none"] < 1 and scores["unparseable,none"] == 0
    assert scores["exact_match,none"] == scores["exact_match_mera,none"]


# --- `qahub evaluate METRIC --predictions samples_<task>_<date>.jsonl`: lm-eval's own samples file as predictions

SAMPLES = registry.samples_dir()
# each task's `qahub evaluate` line on the bundled sample the export was built from (its config and split)
EVALUATE = {
    "qahub_doc2dial_grounding": ["doc2dial", "--task", "subtask1", "--no-answer-text", "NO ANSWER",
                                 "--data-dir", "doc2dial", "--split", "validation"],
    "qahub_doc2dial_response": ["doc2dial", "--task", "subtask2", "--data-dir", "doc2dial", "--split", "validation"],
    "qahub_jemhopqa": ["jemhopqa", "--data-dir", "jemhopqa", "--config", "v1.2", "--split", "validation"],
    "qahub_jemhopqa_derivations": ["jemhopqa", "--data-dir", "jemhopqa", "--config", "v1.2", "--split", "validation"],
    "qahub_jeopardy": ["jeopardy_meteor", "--data-dir", "jeopardy", "--config", "extended", "--split", "train"],
    "qahub_limur": ["limur", "--data-dir", "limur", "--split", "test"],
    "qahub_topical_chat_freq": ["topical_chat", "--data-dir", "topical_chat", "--split", "test_freq"],
    "qahub_topical_chat_rare": ["topical_chat", "--data-dir", "topical_chat", "--split", "test_rare"],
}
# what a reply equal to each document's target scores there (the top of the metric's main figure)
ORACLE = {"qahub_doc2dial_grounding": ("exact", 100.0), "qahub_doc2dial_response": ("score", 100.0),
          "qahub_jemhopqa": ("a", {"em": 1.0, "score": 1.0}), "qahub_jemhopqa_derivations": ("e", 1.0),
          "qahub_jeopardy": ("accuracy", 1.0), "qahub_limur": ("exact_match", 1.0),
          "qahub_topical_chat_freq": ("f1", 1.0), "qahub_topical_chat_rare": ("f1", 1.0)}


@pytest.fixture(scope="module")
def samples_files(plan, manager, tmp_path_factory):
    """``{task: path}``: an oracle's run of every task, saved as ``lm_eval --output_path --log_samples`` saves it
    (lm_eval/_cli/run.py: the tracker's results file, then one samples file per task)."""
    from lm_eval.loggers import EvaluationTracker

    out = tmp_path_factory.mktemp("lm-eval-run")
    tracker = EvaluationTracker(output_path=str(out))
    result = _evaluate(Oracle(manager), manager, sorted(plan), log_samples=True, evaluation_tracker=tracker)
    tracker.save_results_aggregated(results={k: v for k, v in result.items() if k != "samples"},
                                    samples=result["samples"])
    for task in result["configs"]:
        tracker.save_results_samples(task_name=task, samples=result["samples"][task])
    return {task: next(out.rglob(f"samples_{task}_2*.jsonl")) for task in plan}


def _evaluate_cli(argv, capsys):
    code = cli.main(["--quiet", "evaluate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _on_sample(task):
    argv = list(EVALUATE[task])
    at = argv.index("--data-dir") + 1
    argv[at] = str(SAMPLES / argv[at])
    return argv


def test_evaluate_reads_lm_evals_samples_file_as_predictions(plan, samples_files, capsys):
    """Each line's document gives the id, its filtered reply the reply: the oracle's replies score the top."""
    assert set(EVALUATE) == set(plan)
    for task, path in samples_files.items():
        code, out, err = _evaluate_cli([*_on_sample(task), "--predictions", str(path)], capsys)
        assert code == 0, (task, err)
        key, top = ORACLE[task]
        value = json.loads(out)[key]
        signature = json.loads(out)["qahub_signature"]  # issue 37: the signature of the command's scores
        assert signature["harness"] == "qahub evaluate" and signature["scorer"], (task, signature)
        assert signature["documents"] > 0 and signature["metric"] == EVALUATE[task][0], (task, signature)
        if task == "qahub_jemhopqa_derivations":
            value = value["f1"]
        assert value == pytest.approx(top), (task, out[:1000])


def test_the_results_file_keeps_each_tasks_signature(plan, samples_files, locations):
    """Issue 37: lm-eval keeps the task's metadata in its results file (configs[task].metadata): the signature's
    logged fields, computed when lm-eval loaded the task."""
    from qahub import __version__
    from qahub.signature import LOGGED, scorer_text

    (results,) = {next(path.parent.glob("results_*.json")) for path in samples_files.values()}
    configs = json.loads(results.read_text(encoding="utf-8"))["configs"]
    for task, entry in plan.items():
        logged = configs[task]["metadata"]["signature"]
        assert set(logged) <= set(LOGGED), task
        spec = planning.all_tasks()[task]
        assert logged["scorer"] == scorer_text(spec.configuration()) and logged["qahub"] == __version__, task
        assert (logged["dataset"], logged["config"], logged["split"]) == (
            entry["corpus"], entry["config"], entry["split"]), task  # the export folder's name
        assert logged["revision"] == planning.revision(locations[entry["corpus"]]), task


def test_evaluate_refuses_a_samples_file_it_cannot_score_in_one_line(samples_files, tmp_path, capsys):
    limur = _on_sample("qahub_limur")
    code, _, err = _evaluate_cli([*limur, "--predictions", str(samples_files["qahub_jemhopqa"])], capsys)
    assert code == 1 and "lm-eval's samples of the task qahub_jemhopqa, a jemhopqa task; this command scores limur" in err
    code, _, err = _evaluate_cli([*limur, "--predictions", str(samples_files["qahub_limur"]), "--reply-field", "x"],
                                 capsys)
    assert code == 1 and "an lm-eval samples file gives each reply in filtered_resps" in err
    lines = samples_files["qahub_limur"].read_text(encoding="utf-8").splitlines()
    other = json.loads(lines[0]) | {"filter": "strict-match"}
    two = tmp_path / "samples_qahub_limur_2026-01-01T00-00-00.jsonl"
    two.write_text("\n".join([*lines, json.dumps(other, ensure_ascii=False)]) + "\n", encoding="utf-8")
    code, _, err = _evaluate_cli([*limur, "--predictions", str(two)], capsys)
    assert code == 1 and "holds the replies of 2 lm-eval filters (none, strict-match)" in err
    assert err.count("\n") == 1, err
