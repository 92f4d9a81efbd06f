"""inspect-ai tasks (issue 21 item 2): ``qahub/<task>`` built from the same declarations and documents as the
lm-eval tasks, run offline through inspect's own ``eval`` with a scripted model (``inspect_models.py``)."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")

import inspect_models  # noqa: E402
from guides import commands  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import get_model  # noqa: E402
from test_harness import GARBAGE, TOP, Oracle, _evaluate  # noqa: E402  (lm-eval's run, the same tables)
from test_limur_judge import MERA_REPLIES  # noqa: E402

from qahub import harness, inspect_tasks, planning, registry  # noqa: E402
from qahub.signature import scorer_text  # noqa: E402
from qahub.tasks import document_id  # noqa: E402

TESTS = Path(__file__).parent


@pytest.fixture(scope="module")
def locations(sample_exports):
    return {corpus: str(folder) for corpus, folder in sample_exports.items()}


def build(short, locations, **params):
    corpus, _ = inspect_tasks.task_names()[short]
    return inspect_tasks.TASKS[short](dataset=locations[corpus], **params)


def run(tasks, reply, tmp_path, **kwargs):
    """inspect's eval of ``tasks`` with a model replying ``reply(prompt)``; the logs, in task order."""
    model = get_model("qahub_script/scripted", reply=reply, memoize=False)
    logs = inspect_eval(tasks, model=model, log_dir=str(tmp_path / "logs"), display="none", **kwargs)
    for log in logs:
        assert log.status == "success", (log.eval.task, log.error and log.error.traceback)
    return logs


def aggregates(log) -> dict:
    """``{metric: value over all documents}``: each score's first metric (the others are breakdowns)."""
    return {score.name: next(iter(score.metrics.values())).value for score in log.results.scores}


def per_document(log) -> dict:
    """``{prompt: per-document values}``, the JSON-carried ones (a corpus-BLEU pair) decoded."""
    out = {}
    for sample in log.samples:
        (score,) = sample.scores.values()
        out[sample.input] = inspect_tasks.document_values(score)
    return out


def lm_eval_task(short):
    return inspect_tasks.task_names()[short][1]


def test_one_inspect_task_per_lm_eval_task():
    assert {lm_eval_task(short) for short in inspect_tasks.TASKS} == set(TOP)
    assert set(inspect_tasks.TASKS) == {name.removeprefix("qahub_") for name in TOP}


def test_oracle_gets_the_top_of_every_gold_metric_with_ids_and_categories(locations, tmp_path):
    tasks = [build(short, locations, fewshot=1) for short in sorted(inspect_tasks.TASKS)]
    targets = {}
    for task in tasks:
        for sample in task.dataset:
            assert targets.setdefault(sample.input, sample.target) == sample.target
    logs = run(tasks, targets.__getitem__, tmp_path)
    for short, log in zip(sorted(inspect_tasks.TASKS), logs, strict=True):
        corpus, name = inspect_tasks.task_names()[short]
        spec = planning.task_api(corpus).TASKS[name]
        scores = aggregates(log)
        assert set(scores) == set(spec.metrics), short
        assert all(math.isfinite(v) for v in scores.values()), (short, scores)
        for metric, top in TOP[name].items():
            assert scores[metric] == pytest.approx(top), (short, metric, scores)
        docs = {document_id(spec, doc, i): doc for i, doc in enumerate(_documents(locations, short))}
        assert sorted(map(str, (s.id for s in log.samples))) == sorted(map(str, docs))  # each document once, by id
        logged = log.eval.metadata["qahub"]["signature"]  # issue 37: what `qahub report` builds its signature from
        assert logged["scorer"] == scorer_text(spec.configuration()), short
        assert (logged["dataset"], logged["revision"]) == (corpus, planning.revision(locations[corpus])), short
        for sample in log.samples:
            expected = {field: category(docs[sample.id]) for field, category in spec.categories.items()}
            if spec.cluster:  # what a report of the log resamples by (a tuple is a list once logged)
                cluster = spec.cluster(docs[sample.id])
                expected[inspect_tasks.CLUSTER] = list(cluster) if isinstance(cluster, tuple) else cluster
            assert sample.metadata == expected, short
        fields = spec.categories
        for score in log.results.scores:  # each declared breakdown, one group per category value
            for field in fields:
                groups = {str(v[field]) for v in (s.metadata for s in log.samples)}
                names = {k.rsplit("/", 1)[-1] for k in score.metrics}  # "qahub/" once installed, as in the CLI
                assert {k for k in names if k.startswith(f"{field}_")} == \
                    {f"{field}_{g}" for g in groups}, (short, score.name)


def _documents(locations, short, entry=None):
    corpus, name = inspect_tasks.task_names()[short]
    entry = entry or planning.plan_tasks(corpus, locations[corpus])[name]
    functions = planning.task_functions(corpus, name, entry["location"], config=entry["config"],
                                       splits=(entry["split"],))
    return planning.task_docs(planning.task_api(corpus).TASKS[name], functions, functions.dataset()[entry["split"]])


def test_hostile_replies_finish_with_finite_aggregates(locations, tmp_path):
    tasks = [build(short, locations) for short in sorted(inspect_tasks.TASKS)]
    script = {}
    for task in tasks:
        for index, sample in enumerate(task.dataset):
            script[sample.input] = GARBAGE[index % len(GARBAGE)]
    logs = run(tasks, script.__getitem__, tmp_path)
    for short, log in zip(sorted(inspect_tasks.TASKS), logs, strict=True):
        scores = aggregates(log)
        assert scores and all(math.isfinite(v) for v in scores.values()), (short, scores)
        assert scores["unparseable"] > 0, (short, scores)
        for metric, top in TOP[lm_eval_task(short)].items():
            if metric not in ("unparseable", "abstained"):
                assert scores[metric] < top, (short, metric, scores)


def _normal(values: dict) -> dict:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}


def test_the_same_replies_score_the_same_in_lm_eval_inspect_and_the_evaluate_metric(locations, tmp_path):
    """Replies alternating the target and hostile text, two demonstrations each: lm-eval and inspect build the
    same prompt for every document and give it the same per-document values; the jeopardy_meteor metric's
    compute gives the same per-question values too."""
    tasks = [build(short, locations, fewshot=2) for short in sorted(inspect_tasks.TASKS)]
    script = {}
    for short, task in zip(sorted(inspect_tasks.TASKS), tasks, strict=True):
        corpus, name = inspect_tasks.task_names()[short]
        until = planning.task_api(corpus).TASKS[name].until
        for index, sample in enumerate(task.dataset):
            reply = sample.target if index % 3 == 0 else GARBAGE[index % len(GARBAGE)]
            # as a model stopping at the task's stop sequences replies (the solver cuts a completion there)
            script[sample.input] = planning.before_stop(reply, until)
    logs = run(tasks, script.__getitem__, tmp_path)
    inspect_values = {short: per_document(log) for short, log in zip(sorted(inspect_tasks.TASKS), logs, strict=True)}

    out = tmp_path / "lm-eval-tasks"
    harness.write_task_folder(out, locations)
    from lm_eval.tasks import TaskManager

    class Scripted(Oracle):
        def generate_until(self, requests):
            return [script[request.args[0]] for request in requests]  # KeyError: a prompt inspect did not build

    manager = TaskManager(include_path=str(out))
    result = _evaluate(Scripted(manager), manager, sorted(TOP), num_fewshot=2, log_samples=True)
    for short in sorted(inspect_tasks.TASKS):
        corpus, name = inspect_tasks.task_names()[short]
        metrics = planning.task_api(corpus).TASKS[name].metrics
        lm_eval_values = {s["arguments"][0][0]: _normal({m: s[m] for m in metrics}) for s in result["samples"][name]}
        assert lm_eval_values == inspect_values[short], short

    rows = list(_documents(locations, "jeopardy"))
    prompts = [sample.input for sample in tasks[sorted(inspect_tasks.TASKS).index("jeopardy")].dataset]
    computed = registry.load_metric("jeopardy_meteor").compute(predictions=[script[p] for p in prompts],
                                                                references=rows)
    by_metric = [{"meteor": m, "accuracy": float(c), "abstained": float(a), "unparseable": float(s == "unparseable")}
                 for m, c, a, s in zip(computed["meteor_per_example"], computed["correct"], computed["abstained"],
                                       computed["status"], strict=True)]
    assert by_metric == [{k: inspect_values["jeopardy"][p][k] for k in by_metric[0]} for p in prompts]


def test_fewshot_demonstrations_come_from_the_fewshot_split_never_the_document(locations):
    for short in sorted(inspect_tasks.TASKS):
        corpus, name = inspect_tasks.task_names()[short]
        spec = planning.task_api(corpus).TASKS[name]
        for sample, doc in zip(build(short, locations, fewshot=2).dataset, _documents(locations, short), strict=True):
            own = spec.prompt(doc) + spec.target_delimiter + spec.target(doc)
            assert sample.input.endswith(spec.prompt(doc)) and sample.input != spec.prompt(doc), short
            assert own not in sample.input, short


def test_task_parameters_choose_config_and_split_and_refuse_what_the_export_lacks(locations):
    task = build("limur", locations, config="rwsd", split="validation")
    assert task.metadata["qahub"]["config"] == "rwsd" and task.metadata["qahub"]["split"] == "validation"
    assert task.metadata["qahub"]["fewshot_split"] == "shots"
    assert {s.metadata["task_type"] for s in task.dataset} == {"rwsd"}
    with pytest.raises(planning.HarnessError, match="has no split 'nosuch'"):
        build("limur", locations, split="nosuch")
    with pytest.raises(planning.HarnessError, match="has no config 'nosuch'"):
        build("limur", locations, config="nosuch")
    with pytest.raises(planning.HarnessError, match="neither a folder nor a Hub dataset id"):
        inspect_tasks.TASKS["limur"](dataset="/definitely/not/here")


def test_generation_settings_are_the_lm_eval_tasks(locations):
    for short in sorted(inspect_tasks.TASKS):
        corpus, name = inspect_tasks.task_names()[short]
        spec = planning.task_api(corpus).TASKS[name]
        config = build(short, locations).config
        assert (config.stop_seqs, config.max_tokens, config.temperature) == \
            (list(spec.until), spec.max_gen_toks, 0.0), short


# --- LIMUR's judge: inspect's grader role, MERA's prompt and reading


# the judge's replies to a reply's two candidates, as MERA_REPLIES rows: no grade in either, 0.5 over 0, 0.25 over 0,
# 1.0 over 0.25, 0 over 0.5 («Score: 2 ... 0 errors» reads 0), and a grade for one of them only
PAIRS = [(7, 8), (1, 2), (2, 13), (13, 3), (19, 17), (8, 0)]


def test_limur_judge_is_the_grader_role_with_meras_prompt_and_reading(locations, tmp_path):
    """Each reply has two candidates (the whole reply and the text after «Ответ:»); the grader answers each in
    prose from MERA_REPLIES; judge_score is the better of MERA's two grades."""
    task = build("limur", locations)
    docs = {document_id(planning.task_api("limur").TASKS["qahub_limur"], d, i): d
            for i, d in enumerate(_documents(locations, "limur"))}
    replies = {s.input: f"Рассуждение {i}. Ответ: {s.target}" for i, s in enumerate(task.dataset)}
    prose = {}  # the judge's reply to each candidate, by the text that identifies it in the prompt
    expected = {}
    for i, sample in enumerate(task.dataset):
        (whole, a, _), (tail, b, _) = (MERA_REPLIES[k] for k in PAIRS[i % len(PAIRS)])
        prose[f"Рассуждение {i}. Ответ:"], prose[None, i] = whole, tail
        graded = [g for g in (a, b) if g is not None]
        if (docs[sample.id]["outputs"] or "").strip():
            expected[sample.id] = {"judge_score": max(graded, default=0.0), "judge_coverage": int(bool(graded))}
        else:  # a closed answer is not judged
            expected[sample.id] = {"judge_score": 0.0, "judge_coverage": 0}
    order = [s.id for s in task.dataset]
    asked = []

    def grade(prompt):
        asked.append(prompt)
        for i in range(len(order)):
            if f"Рассуждение {i}. Ответ:" in prompt:
                return prose[f"Рассуждение {i}. Ответ:"]
        # the tail candidate: the gold letter alone; which document it is, the prompt's task text says
        i = next(i for i, key in enumerate(order) if planning.task_api("limur").prompt(docs[key]) in prompt)
        return prose[None, i]

    grader = get_model("qahub_script/grader", reply=grade, memoize=False)
    (log,) = run([task], replies.__getitem__, tmp_path, model_roles={"grader": grader})
    for sample in log.samples:
        (score,) = sample.scores.values()
        assert {k: score.value[k] for k in ("judge_score", "judge_coverage")} == expected[sample.id], sample.id
    scores = aggregates(log)
    values = list(expected.values())
    assert scores["judge_score"] == pytest.approx(sum(v["judge_score"] for v in values) / len(values))
    assert any(0 < v["judge_score"] < 1 for v in values) and any(v["judge_coverage"] == 0 for v in values)
    (judge,) = grader.api.requests[:1]
    assert judge[1].max_tokens == 256 and judge[1].temperature == 0
    assert all("### Задание для оценки:" in prompt for prompt in asked)


def test_limur_without_a_grader_role_reports_no_judge_metric(locations, tmp_path):
    (log,) = run([build("limur", locations)], lambda prompt: "Ответ: А", tmp_path)
    assert "judge_score" not in aggregates(log)
    assert all("judge_score" not in next(iter(s.scores.values())).value for s in log.samples)


# --- the installed package: inspect's own command line finds qahub/<task> through the entry point


CLI = "import sys, inspect_models; from inspect_ai._cli.main import main; sys.argv[0] = 'inspect'; main()"


def inspect_cli(*args, cwd):
    """inspect's own command line in a fresh process, run from a folder outside the checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_inspect_eval_command_refuses_a_bad_split_in_one_message(locations, tmp_path):
    done = inspect_cli("eval", "qahub/limur", "-T", f"dataset={locations['limur']}", "-T", "split=nosuch",
                       "--model", "qahub_script/x", "--log-dir", str(tmp_path / "logs"), cwd=tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "Traceback" not in output
    assert "qahub/limur:" in output and "has no split 'nosuch'" in output, output[-2000:]


def test_inspect_eval_command_finds_the_task_through_the_entry_point(locations, tmp_path):
    """``inspect eval qahub/jeopardy -T dataset=... -T fewshot=1`` run by inspect's CLI in a fresh process, from a
    folder outside the checkout, with the scripted model registered by inspect_models (mockllm/model cannot run
    offline: it counts tokens with a tiktoken file it downloads)."""
    done = inspect_cli("eval", "qahub/jeopardy", "-T", f"dataset={locations['jeopardy']}", "-T", "fewshot=1",
                       "--model", "qahub_script/Рим", "--log-dir", str(tmp_path / "logs"), "--log-format", "json",
                       "--display", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "logs").glob("*.json")
    log = json.loads(path.read_text(encoding="utf-8"))
    assert log["status"] == "success" and log["eval"]["task"] == "qahub/jeopardy"
    assert log["eval"]["task_args"]["fewshot"] == 1
    assert sorted(s["id"] for s in log["samples"]) == sorted(d["question_id"] for d in _documents(locations, "jeopardy"))
    assert {s["name"] for s in log["results"]["scores"]} == set(TOP["qahub_jeopardy"]) | {"meteor", "game_score"}


assert inspect_models.Scripted  # registered with inspect when imported


def test_several_epochs_keep_the_texts_and_pairs_corpus_metrics_read(locations, tmp_path):
    """inspect's default reducer would turn distinct-n's texts and corpus BLEU's pairs into floats."""
    task = build("topical_chat_freq", locations)
    targets = {sample.input: sample.target for sample in task.dataset}
    (once,) = run([task], targets.__getitem__, tmp_path / "once")
    (twice,) = run([task], targets.__getitem__, tmp_path / "twice", epochs=2)
    assert aggregates(twice) == aggregates(once) and aggregates(once)["bleu"] == 100.0


# --- issue 27: few-shot outside the document's conversation, parameters, epochs, closed answers, offline runs


def _on_fewshot_split(locations):
    """``{task: plan entry}`` of every task evaluated on its own few-shot split (the pool is the evaluated split,
    as on the real Topical-Chat, which has no train split)."""
    plan = {}
    for corpus, location in locations.items():
        for name, entry in planning.plan_tasks(corpus, location).items():
            plan[name] = {**entry, "split": entry["fewshot_split"]}
    return plan


def _leaks(spec, pool, doc, context):
    """The demonstrations shown before ``doc``'s prompt in ``context`` that share its cluster (or are it), and
    those whose prompt holds its gold reply (a gold that every prompt holds, e.g. NO ANSWER, aside); asserts that
    exactly two demonstrations are shown."""
    head = context[:-len(spec.prompt(doc))]
    between, after = spec.target_delimiter, spec.fewshot_delimiter
    shown = [d for d in pool if spec.prompt(d) + between + spec.target(d) + after in head]
    assert len(shown) == 2, context[:500]
    cluster = spec.cluster or (lambda d: None)
    same = [d for d in shown if d == doc or (cluster(doc) is not None and cluster(d) == cluster(doc))]
    gold = spec.target(doc)
    told = [] if all(gold in spec.prompt(d) for d in pool) else [d for d in shown if gold in spec.prompt(d)]
    return same, told


def test_fewshot_never_from_the_documents_own_conversation_in_lm_eval_and_inspect(locations, tmp_path):
    """Every task, 2-shot, evaluated on its own few-shot split: no demonstration is a turn of the document's
    conversation (Topical-Chat), dialogue (doc2dial) or theme (Jeopardy), or the document itself, and the
    document's gold reply shows in no demonstration; lm-eval (its generated sampler) builds the same prompts."""
    plan = _on_fewshot_split(locations)
    out = tmp_path / "tasks"
    for name, entry in plan.items():
        harness._write_task(out / name, name, entry, judge=False)
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(out))
    contexts = {}

    class Recorder(Oracle):
        def generate_until(self, requests):
            for request in requests:
                contexts.setdefault(request.task_name, {})[request.args[0]] = request.doc
            return ["" for _ in requests]

    _evaluate(Recorder(manager), manager, sorted(plan), num_fewshot=2)
    for name, entry in sorted(plan.items()):
        corpus = entry["corpus"]
        spec = planning.task_api(corpus).TASKS[name]
        short = name.removeprefix("qahub_")
        task = build(short, locations, config=entry["config"], split=entry["split"], fewshot=2)
        docs = _documents(locations, short, entry)
        assert [s.input for s in task.dataset] == list(contexts[name]), name  # the same prompts, in order
        for sample, doc in zip(task.dataset, docs, strict=True):
            assert _leaks(spec, docs, doc, sample.input) == ([], []), (name, sample.id)
        assert bool(spec.cluster) == (corpus in ("topical_chat", "doc2dial", "jeopardy")), name


def test_fewshot_more_demonstrations_than_outside_the_conversation_is_refused(locations):
    # train of the sample: 3 conversations of 3, 2 and 2 turn docs; 5 demonstrations leave a 3-turn one short
    with pytest.raises(planning.HarnessError, match=r"fewshot=5: document 0: the few-shot split has only 4 "
                                                   r"document\(s\) besides the document's cluster 't_"):
        build("topical_chat_freq", locations, split="train", fewshot=5)


BAD_PARAMETERS = [
    ({"fewshot": -1}, "-T fewshot=-1: must be a whole number of demonstrations, 0 or more"),
    ({"fewshot": "abc"}, "-T fewshot='abc': must be a whole number of demonstrations, 0 or more"),
    ({"fewshot": [1]}, "-T fewshot=[1]: must be a whole number of demonstrations, 0 or more"),
    ({"fewshot": 1.5}, "-T fewshot=1.5: must be a whole number of demonstrations, 0 or more"),
    ({"fewshot": True}, "-T fewshot=True: must be a whole number of demonstrations, 0 or more"),
    ({"fewshot_seed": "x"}, "-T fewshot_seed='x': must be a whole number"),
    ({"config": 1.1}, "-T config=1.1: must be text, not a float"),
    ({"split": ["a", "b"]}, "-T split=['a', 'b']: must be text, not a list"),
    ({"dataset": None}, "-T dataset=LOCATION is required: an export folder or a Hub dataset id"),
]


@pytest.mark.parametrize(("params", "message"), BAD_PARAMETERS)
def test_task_parameters_are_checked_before_anything_is_read(locations, params, message):
    corpus, _ = inspect_tasks.task_names()["jeopardy"]
    arguments = {"dataset": locations[corpus], **params}
    with pytest.raises(inspect_tasks.TaskInputError) as raised:
        inspect_tasks.TASKS["jeopardy"](**arguments)
    assert str(raised.value).startswith(f"qahub/jeopardy: {message}"), str(raised.value)


@pytest.mark.parametrize("args", [["-T", "fewshot=-1"], ["-T", "fewshot=abc"], ["-T", "fewshot=[1]"],
                                  ["-T", "fewshot=1.5"], ["-T", "fewshot=true"], ["-T", "config=1.1"], []])
def test_inspect_command_refuses_bad_parameters_in_one_line(locations, tmp_path, args):
    dataset = [] if not args else ["-T", f"dataset={locations['jeopardy']}"]
    done = inspect_cli("eval", "qahub/jeopardy", *dataset, *args, "--model", "qahub_script/x",
                       "--log-dir", str(tmp_path / "logs"), cwd=tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "Traceback" not in output and "ExceptionGroup" not in output, output[-2000:]
    key = args[1].split("=")[0] if args else "dataset"
    assert f"qahub/jeopardy: -T {key}" in output, output[-2000:]
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").iterdir())  # nothing generated


REDUCERS = ["mean", "median", "mode", "max", "at_least_2", "pass_at_2", "majority"]


def test_every_epochs_reducer_works_on_every_task(locations, tmp_path):
    """``--epochs 2 --epochs-reducer R`` for each reducer inspect offers: the corpus metrics (BLEU pairs,
    distinct-n texts) come from the first epoch, the numeric ones are reduced; with the same reply in both
    epochs, mean, median, mode, max and majority give the one-epoch aggregates."""
    from inspect_ai import Epochs

    tasks = [build(short, locations) for short in sorted(inspect_tasks.TASKS)]
    script = {}
    for task in tasks:
        for index, sample in enumerate(task.dataset):
            script[sample.input] = sample.target if index % 2 == 0 else GARBAGE[index % len(GARBAGE)]
    once = run(tasks, script.__getitem__, tmp_path / "once")
    twice = run(tasks, script.__getitem__, tmp_path / "twice", epochs=Epochs(2, REDUCERS))
    for short, one, two in zip(sorted(inspect_tasks.TASKS), once, twice, strict=True):
        expected = aggregates(one)
        by_reducer = {}
        for score in two.results.scores:
            by_reducer.setdefault(score.reducer, {})[score.name] = next(iter(score.metrics.values())).value
        assert set(by_reducer) == set(REDUCERS), short
        for reducer, scores in by_reducer.items():
            assert set(scores) == set(expected) and all(math.isfinite(v) for v in scores.values()), (short, reducer)
            if not reducer.startswith(("at_least", "pass_at")):
                assert scores == pytest.approx(expected), (short, reducer, scores, expected)
        for metric in {"bleu", "distinct_1", "distinct_2"} & set(expected):
            assert by_reducer["pass_at_2"][metric] == pytest.approx(expected[metric]), (short, metric)


def test_epochs_reducer_on_the_command_line(locations, tmp_path):
    done = inspect_cli("eval", "qahub/doc2dial_response", "-T", f"dataset={locations['doc2dial']}",
                       "--epochs", "2", "--epochs-reducer", "mean", "--model", "qahub_script/Yes",
                       "--log-dir", str(tmp_path / "logs"), "--log-format", "json", "--display", "none",
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "logs").glob("*.json")
    log = json.loads(path.read_text(encoding="utf-8"))
    assert log["status"] == "success", log.get("error")
    scores = {s["name"]: {k.rsplit("/", 1)[-1]: m["value"] for k, m in s["metrics"].items()}
              for s in log["results"]["scores"]}
    assert {s["reducer"] for s in log["results"]["scores"]} == {"mean"}
    assert set(scores) == {"bleu", "unparseable"} and scores["unparseable"]["mean"] == 0.0
    assert scores["bleu"]["corpus_bleu"] == 0.0  # "Yes" shares no word with any gold turn


def _closed_limur(tmp_path):
    """The LIMUR sample exported with its test answers closed (``outputs`` "", as in MERA's public files)."""
    from qahub.export.writer import export

    data = tmp_path / "limur-data"
    shutil.copytree(registry.samples_dir("limur"), data)
    rows = [json.loads(line) for line in (data / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    (data / "test.jsonl").write_text("".join(json.dumps({**r, "outputs": ""}, ensure_ascii=False) + "\n"
                                             for r in rows), encoding="utf-8")
    export("limur", tmp_path / "limur", data_dir=data, cache_dir=tmp_path / "cache")
    return tmp_path / "limur"


def test_limur_split_with_closed_answers_is_refused_before_generating(tmp_path):
    folder = _closed_limur(tmp_path)
    with pytest.raises(inspect_tasks.TaskInputError) as raised:
        inspect_tasks.TASKS["limur"](dataset=str(folder), split="test")
    assert str(raised.value) == ("qahub/limur: nothing to score: the test answers are closed in this file; "
                                 "score validation, or pass the open answers")
    task = inspect_tasks.TASKS["limur"](dataset=str(folder))  # the default: the split with open answers
    assert task.metadata["qahub"]["split"] == "validation"
    done = inspect_cli("eval", "qahub/limur", "-T", f"dataset={folder}", "-T", "split=test", "--model",
                       "qahub_script/x", "--log-dir", str(tmp_path / "logs"), cwd=tmp_path)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "Traceback" not in output
    assert "nothing to score: the test answers are closed in this file" in output, output[-2000:]


def test_a_task_whose_samples_all_failed_is_an_error_naming_the_cause(locations, tmp_path):
    def down(prompt):
        raise RuntimeError("the model server is down")

    model = get_model("qahub_script/down", reply=down, memoize=False)
    (log,) = inspect_eval([build("jeopardy", locations)], model=model, log_dir=str(tmp_path / "logs"),
                          display="none")
    assert log.status == "error" and "the model server is down" in log.error.message
    assert log.results is None  # no score at all, never a 0.0


def test_a_normal_inspect_run_logs_no_warning(locations, tmp_path):
    """inspect computes every metric on no sample before the first is scored (its display): a qahub aggregate
    gives NaN there instead of raising ("WARNING Metric qahub/mean raised on an empty sample set" began every
    run). LIMUR has two category breakdowns and judge metrics that no sample holds without a grader role."""
    done = inspect_cli("eval", "qahub/limur", "-T", f"dataset={locations['limur']}", "--model", "qahub_script/x",
                       "--log-dir", str(tmp_path / "logs"), "--display", "plain", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "WARNING" not in output and "empty sample set" not in output, output[-3000:]


def test_the_oracle_model_smoke_tests_a_task_offline(locations, tmp_path):
    """The harnesses guide's smoke test (`test: inspect-oracle`: ``HF_HUB_OFFLINE=1 inspect eval qahub/jemhopqa
    --model qahub/oracle -T dataset=...``) by inspect's own ``inspect`` command, offline, with nothing of the tests
    on the path, on one sample: the model qahub registers replies each sample's target, so each metric with an
    ``oracle`` value reads it."""
    [line] = commands("inspect-oracle")
    words = [f"dataset={locations['jemhopqa']}" if w == "dataset=exports/jemhopqa" else w for w in line.split()]
    assert words[:3] == ["HF_HUB_OFFLINE=1", "inspect", "eval"] and words[-2:] == ["--log-dir", "logs"]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"HF_HUB_OFFLINE": "1"}
    done = subprocess.run([str(Path(sys.executable).with_name("inspect")), *words[2:], "--limit", "1",
                           "--log-format", "json", "--display", "none"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "logs").glob("*.json")
    log = json.loads(path.read_text(encoding="utf-8"))
    assert log["status"] == "success" and log["eval"]["model"] == "qahub/oracle" and len(log["samples"]) == 1
    (sample,) = log["samples"]
    assert sample["output"]["completion"] == sample["target"] != ""
    values = {s["name"]: next(iter(s["metrics"].values()))["value"] for s in log["results"]["scores"]}
    assert values == {**values, **TOP["qahub_jemhopqa"]}


def test_an_unknown_qahub_model_is_one_line():
    with pytest.raises(ValueError, match="qahub/nosuch: no such model; qahub/oracle replies each"):
        get_model("qahub/nosuch", memoize=False)
