"""lighteval tasks (issue 30): ``qahub.lighteval_tasks`` run through lighteval's own ``Pipeline`` with a scripted
model, offline, give the lm-eval task's prompts, per-document values and aggregates."""

import json
import math
import os
import shlex
import shutil
import subprocess

import pytest

pytest.importorskip("lighteval", reason="lighteval is the [lighteval] extra")

from guides import commands  # noqa: E402
from lighteval.logging.evaluation_tracker import EvaluationTracker  # noqa: E402
from lighteval.models.dummy.dummy_model import DummyModel, DummyModelConfig  # noqa: E402
from lighteval.models.model_output import ModelResponse  # noqa: E402
from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters  # noqa: E402
from lighteval.tasks.prompt_manager import PromptManager  # noqa: E402
from test_harness import GARBAGE, TOP, Oracle, _evaluate, _scores  # noqa: E402  (lm-eval's run, the same tables)
from test_harness_hf_model import _command  # noqa: E402  (tiny_model: conftest.py)
from test_limur_judge import MERA_REPLIES, _mera_env, prose_judge  # noqa: E402, F401  (the fixture is used)

from qahub import harness, lighteval_tasks, planning, registry  # noqa: E402
from qahub.report import ReportError, write_report  # noqa: E402

FEWSHOT = 2


@pytest.fixture(scope="module")
def data(sample_exports):
    """``QAHUB_LIGHTEVAL_DATA`` naming every corpus's exported sample."""
    return ",".join(f"{corpus}={folder}" for corpus, folder in sample_exports.items())


@pytest.fixture(autouse=True)
def qahub_tasks_only(no_judge_env):
    """The registry holds the custom tasks alone (``custom_tasks_only``: two of lighteval 0.13's own task modules
    fail to import here); the rest of the pipeline (task selection, ``|N``, documents, generation requests,
    metrics, aggregation) is lighteval's. No judge unless a test configures one."""
    lighteval_tasks._tasks_table.cache_clear()
    with lighteval_tasks.custom_tasks_only():
        yield


class Scripted(DummyModel):
    """Replies ``script[prompt]`` to the plain-text prompt lighteval's backends send (no chat template)."""

    def __init__(self, script, tmp_path):
        super().__init__(DummyModelConfig(model_name="scripted", cache_dir=str(tmp_path / "cache")))
        self.script, self.prompts = script, []

    def greedy_until(self, docs):
        prompts = [PromptManager().prepare_prompt(doc) for doc in docs]
        self.prompts += prompts
        return [ModelResponse(text=[self.script[p]], input=p) for p in prompts]  # KeyError: a prompt not scripted


def run(names, model, data, monkeypatch, tmp_path, fewshot=FEWSHOT, save=False):
    """lighteval's pipeline; with ``save``, its results and details in ``tmp_path/lighteval`` (``--output-dir``,
    ``--save-details``)."""
    monkeypatch.setenv(lighteval_tasks.ENV, data)
    tracker = EvaluationTracker(output_dir=str(tmp_path / "lighteval"), save_details=save)
    pipeline = Pipeline(tasks=",".join(f"{n}|{fewshot}" for n in names),
                        pipeline_parameters=PipelineParameters(launcher_type=ParallelismManager.NONE,
                                                               custom_tasks_directory="qahub.lighteval_tasks",
                                                               bootstrap_iters=0),
                        evaluation_tracker=tracker, model=model)
    pipeline.evaluate()
    if save:
        pipeline.save_and_push_results()
    return pipeline


def _normal(values: dict) -> dict:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}


def test_one_lighteval_task_per_lm_eval_task(data):
    assert [config.name for config in lighteval_tasks.tasks_table(data)] == list(planning.all_tasks())
    assert set(planning.all_tasks()) == set(TOP)


def test_the_same_replies_score_the_same_in_lm_eval_and_lighteval(data, sample_exports, monkeypatch, tmp_path):
    """Replies alternating the target and hostile text, two demonstrations each: lighteval's pipeline sends the
    lm-eval task's prompt for every document, and gives it the lm-eval task's per-document values and
    aggregates."""
    names = sorted(TOP)
    lighteval_tasks.tasks_table(data)
    script, script_of = {}, {}
    for name in names:
        for index, sample in enumerate(lighteval_tasks._LOADED[name].samples(FEWSHOT)):
            reply = sample.target if index % 3 == 0 else GARBAGE[index % len(GARBAGE)]
            # as a model stopping at the task's stop sequences replies (lm-eval's hf model, an endpoint honouring
            # `stop`): lighteval's reader cuts a reply there, as lm-eval does, since a chat model is not stopped
            script[sample.input] = planning.before_stop(reply, lighteval_tasks._LOADED[name].declared["until"])
            script_of.setdefault(name, []).append(sample.input)
    model = Scripted(script, tmp_path)
    pipeline = run(names, model, data, monkeypatch, tmp_path, save=True)
    assert sorted(model.prompts) == sorted(script)  # every document once, each with its scripted prompt
    details, results = pipeline.get_details(), pipeline.get_results()["results"]

    lm_eval_values, lm_eval_aggregates = _lm_eval_values(sample_exports, names, script, tmp_path, save=True)
    for name in names:
        lighteval_values = {d.model_response.input: _normal(d.metric) for d in details[f"{name}|{FEWSHOT}"]}
        assert lighteval_values == lm_eval_values[name], name
        keys = {d.model_response.input: (d.doc.specific["qahub_doc_id"], d.doc.specific["qahub_doc_hash"])
                for d in details[f"{name}|{FEWSHOT}"]}
        assert keys == lm_eval_values[name, "keys"], name  # qahub report pairs the two runs' documents by them

    # qahub report reads both runs: the same numbers, every document paired, no difference
    data = write_report([f"lm_eval={tmp_path / 'lm-eval'}", f"lighteval={tmp_path / 'lighteval'}"],
                        tmp_path / "report", resamples=200, progress=False, jobs=1)
    assert set(data["tasks"]) == set(names) and not data["skipped"]
    assert {name: run["harness"] for name, run in data["runs"].items()} == {"lm_eval": "lm-eval", "lighteval": "lighteval"}
    for name, entry in data["tasks"].items():
        signatures = {run: {m: cell.pop("signature") for m, cell in cells.items()}
                      for run, cells in entry["scores"].items()}
        assert entry["scores"]["lighteval"] == entry["scores"]["lm_eval"], name
        # issue 37: the details rows carry the task's signature, the same as lm-eval's results file but for the
        # harness; the prompts are the same texts
        for metric, mine in signatures["lighteval"].items():
            theirs = signatures["lm_eval"][metric]
            assert mine["scorer"] and mine["revision"] and mine["prompts"], (name, mine)
            assert {k: v for k, v in mine.items() if not k.startswith("harness")} == \
                {k: v for k, v in theirs.items() if not k.startswith("harness")}, (name, mine, theirs)
            assert (mine["harness"], theirs["harness"]) == ("lighteval", "lm-eval") and mine["harness_version"]
        assert not entry["warnings"] and not any("paired on" in n for n in entry["notes"]), (name, entry)
        assert not entry.get("caveats") and not entry.get("not_compared"), (name, entry)  # the same prompts
        compared = entry["comparisons"]["lighteval"]
        assert compared and all(c["delta"] == pytest.approx(0, abs=1e-9) and c["n"] == len(script_of[name])
                                for c in compared.values()), (name, compared)
        lighteval_aggregates = {k: v for k, v in results[f"{name}:{FEWSHOT}"].items() if not k.endswith("_stderr")}
        assert lighteval_aggregates == pytest.approx(lm_eval_aggregates[name], rel=1e-12), name  # another order
    # their Every Eval Ever records have the same rows: score and reply per task, metric and document
    write_report([f"lm_eval={tmp_path / 'lm-eval'}", f"lighteval={tmp_path / 'lighteval'}"], tmp_path / "hub",
                 resamples=200, progress=False, jobs=1, hub_datasets={})
    rows = {}
    for name in ("lm_eval", "lighteval"):
        (samples,) = (tmp_path / "hub" / "eee" / name).glob("*_samples.jsonl")
        rows[name] = {(r["evaluation_result_id"], r["sample_id"]): (r["evaluation"]["score"], r["output"]["raw"])
                     for r in map(json.loads, samples.read_text(encoding="utf-8").splitlines())}
    assert rows["lighteval"] == rows["lm_eval"] and rows["lm_eval"]


def _lm_eval_values(locations, names, script, tmp_path, judge=False, save=False):
    """``{task: {prompt: per-document values}}`` and the aggregates of lm-eval's run of the same replies; with
    ``save``, the run in ``tmp_path/lm-eval`` as ``lm_eval --output_path --log_samples`` saves it."""
    from lm_eval.loggers import EvaluationTracker as LmEvalTracker
    from lm_eval.tasks import TaskManager

    class LmEvalScripted(Oracle):
        def generate_until(self, requests):
            return [script[request.args[0]] for request in requests]  # KeyError: a prompt lighteval did not send

    out = tmp_path / "lm-eval-tasks"
    harness.write_task_folder(out, locations, judge=judge)
    manager = TaskManager(include_path=str(out))
    tracker = LmEvalTracker(output_path=str(tmp_path / "lm-eval")) if save else None
    result = _evaluate(LmEvalScripted(manager), manager, names, num_fewshot=FEWSHOT, log_samples=True,
                       evaluation_tracker=tracker)
    values = {}
    for name in names:
        metrics = planning.task_metrics(planning.all_tasks()[name], judge)
        values[name] = {s["arguments"][0][0]: _normal({m: s[m] for m in metrics}) for s in result["samples"][name]}
        values[name, "keys"] = {s["arguments"][0][0]: (s["doc_id"], s["doc_hash"]) for s in result["samples"][name]}
    if save:  # as lm_eval/_cli/run.py saves a run (which rewrites the samples' arguments)
        tracker.save_results_aggregated(results={k: v for k, v in result.items() if k != "samples"},
                                        samples=result["samples"])
        for task in result["configs"]:
            tracker.save_results_samples(task_name=task, samples=result["samples"][task])
    return values, {name: _scores(result, name) for name in names}


def test_limurs_judge_grades_as_in_lm_eval(sample_exports, prose_judge, monkeypatch, tmp_path):  # noqa: F811
    """With qahub's judge configured (MERA's variables, an OpenAI-compatible judge on 127.0.0.1), qahub_limur
    reports judge_score and judge_coverage: MERA's grade of each reply, as lm-eval's judge task gives it; the
    replies are judged concurrently (the judge answers in 50 ms), not one document at a time."""
    judge = prose_judge(delay=0.05)
    _mera_env(monkeypatch, judge)
    data = f"limur={sample_exports['limur']}"
    lighteval_tasks.tasks_table(data)
    samples = lighteval_tasks._LOADED["qahub_limur"].samples(FEWSHOT)
    script = {sample.input: f"R{index % len(MERA_REPLIES)}" for index, sample in enumerate(samples)}
    pipeline = run(["qahub_limur"], Scripted(script, tmp_path), data, monkeypatch, tmp_path)
    values = {d.model_response.input: _normal(d.metric) for d in pipeline.get_details()[f"qahub_limur|{FEWSHOT}"]}
    for prompt, reply in script.items():
        grade = MERA_REPLIES[int(reply[1:])][1]
        assert (values[prompt]["judge_score"], values[prompt]["judge_coverage"]) == (grade or 0.0, int(grade is not None))
    assert {v["judge_coverage"] for v in values.values()} == {0, 1}
    assert judge.max_inflight > 1, "lighteval judged one reply at a time"
    lm_eval_values, lm_eval_aggregates = _lm_eval_values({"limur": sample_exports["limur"]}, ["qahub_limur"], script,
                                                         tmp_path, judge=True)
    assert values == lm_eval_values["qahub_limur"]
    aggregates = pipeline.get_results()["results"][f"qahub_limur:{FEWSHOT}"]
    assert {k: v for k, v in aggregates.items() if not k.endswith("_stderr")} == \
        pytest.approx(lm_eval_aggregates["qahub_limur"], rel=1e-12)


def test_a_bad_task_name_or_a_damaged_export_is_one_line(data, sample_exports, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="Cannot find task qahub_nosuch") as err:
        run(["qahub_nosuch"], Scripted({}, tmp_path), data, monkeypatch, tmp_path)
    assert "\n" not in str(err.value)

    damaged = tmp_path / "limur"
    shutil.copytree(sample_exports["limur"], damaged)
    for shard in (damaged / "all").glob("*.parquet"):
        shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(planning.HarnessError, match=str(damaged)) as err:
        run(["qahub_limur"], Scripted({}, tmp_path), f"limur={damaged}", monkeypatch, tmp_path)
    assert "\n" not in str(err.value)

    empty = tmp_path / "empty-run"
    for folder in ("results", "details"):
        (empty / folder).mkdir(parents=True)
    with pytest.raises(ReportError, match="no results/.*results_.*json.*lighteval") as err:
        write_report([str(empty)], tmp_path / "report", progress=False, jobs=1)
    assert "\n" not in str(err.value)

    for value, message in (("", "QAHUB_LIGHTEVAL_DATA is not set"), ("limur", "'limur' is not CORPUS=LOCATION"),
                           ("nosuch=/x", "unknown corpus 'nosuch'")):
        with pytest.raises(planning.HarnessError, match=message) as err:
            lighteval_tasks.tasks_table(value)
        assert "\n" not in str(err.value)


def test_the_guides_block_runs_lightevals_command_line_on_a_tiny_local_model(tiny_model, tmp_path):
    """The harnesses guide's block (`test: lighteval-accelerate`) as written (the model: the tiny one, one request at a time rather than lighteval's
    search for a batch size), offline: results and details hold every per-document value and document id."""
    import pandas

    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    samples = f"{registry.samples_dir()}/"
    lines = commands("lighteval-accelerate")
    assert lines[0].startswith('pip install -e ".[lighteval]"')
    for line in lines[1:]:  # the first line is the install, which made this environment
        words = [w.replace("src/qahub/samples/", samples).replace("model_name=MODEL,", f"model_name={tiny_model},"
                                                                   "batch_size=1,")
                 for w in shlex.split(line, comments=True)]
        settings = dict(w.split("=", 1) for w in words[:next(i for i, w in enumerate(words) if "=" not in w)])
        done = subprocess.run(_command(words[len(settings):]), cwd=tmp_path, env={**env, **settings},
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (line, done.stderr[-3000:])
    [results] = list((tmp_path / "results" / "results").rglob("results_*.json"))
    scores = json.loads(results.read_text(encoding="utf-8"))["results"]["qahub_jeopardy|1"]
    metrics = planning.all_tasks()["qahub_jeopardy"].metrics
    assert set(metrics) <= set(scores) and all(math.isfinite(scores[m]) for m in metrics), scores
    [details] = list((tmp_path / "results" / "details").rglob("details_qahub_jeopardy|1_*.parquet"))
    rows = pandas.read_parquet(details)
    assert len(rows) == 2 and all(set(metrics) == set(row) for row in rows["metric"])
    spec = planning.all_tasks()["qahub_jeopardy"]
    for doc in rows["doc"]:  # the document's id, and the document it was scored against
        assert doc["specific"]["qahub_id"] == spec.doc_id(doc["specific"]["qahub_doc"])
        assert doc["query"].endswith(spec.prompt(doc["specific"]["qahub_doc"]))


def test_lighteval_runs_the_documents_qahub_lighteval_samples_names(data, monkeypatch, tmp_path):
    """lighteval 0.13's --max-samples draws documents at random: ``QAHUB_LIGHTEVAL_SAMPLES`` (lm-eval's --samples
    JSON, as ``qahub pick-docs`` prints it) makes a task hold those documents alone, in order; a task it does not
    name holds every document; a bad index is one line naming the variable."""
    name = "qahub_jeopardy"
    lighteval_tasks.tasks_table(data)
    every = lighteval_tasks._LOADED[name].samples(0)
    limur = lighteval_tasks._LOADED["qahub_limur"].samples(0)
    monkeypatch.setenv(lighteval_tasks.SAMPLES_ENV, json.dumps({name: [3, 1]}))
    lighteval_tasks._tasks_table.cache_clear()
    model = Scripted({sample.input: sample.target for sample in every + limur}, tmp_path)
    run([name, "qahub_limur"], model, data, monkeypatch, tmp_path, fewshot=0)
    jeopardy = {sample.input for sample in every}
    assert sorted(p for p in model.prompts if p in jeopardy) == sorted([every[1].input, every[3].input])
    assert sorted(p for p in model.prompts if p not in jeopardy) == sorted(sample.input for sample in limur)
    monkeypatch.setenv(lighteval_tasks.SAMPLES_ENV, json.dumps({name: [10_000]}))
    lighteval_tasks._tasks_table.cache_clear()
    with pytest.raises(lighteval_tasks.LightevalTaskError, match=f"QAHUB_LIGHTEVAL_SAMPLES: {name}: \\[10000\\]"):
        lighteval_tasks.tasks_table(data)


def test_lighteval_takes_a_plain_means_stderr_only_for_lm_evals_mean(sample_exports):
    """lighteval picks its stderr by the aggregation's name ("mean" in it: the plain formula over the raw values).
    Topical-Chat's knowledge_f1 (None on a turn without knowledge, ``mean_or_zero``) took it and failed a real
    run of SmolLM2 on 30 turns; any aggregation but a plain mean (lm-eval's, JEMHopQA's ``mean``) is bootstrapped
    through qahub's own."""
    from lighteval.metrics.utils.stderr import get_stderr_function, mean_stderr

    for corpus in registry.corpus_names():
        for name in planning.task_api(corpus).TASKS:
            for metric, (how, _) in lighteval_tasks.declaration(corpus, name)["metrics"].items():
                aggregate = lighteval_tasks.Aggregate(corpus, name, metric)
                plain = how == "mean" or getattr(how, "__name__", None) == "mean"
                assert (get_stderr_function(aggregate) is mean_stderr) == plain, (name, metric)
    knowledge = lighteval_tasks.Aggregate("topical_chat", "qahub_topical_chat_freq", "knowledge_f1")
    assert knowledge([0.5, None, 1.0]) == 0.75
