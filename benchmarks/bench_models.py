"""Real models (issue 43 item 6): SmolLM2-135M-Instruct as ``qahub models fetch smollm2`` makes it (fetched and
converted first, untimed, when it is not cached yet).

- a second ``qahub models fetch`` (the folder is cached): target <= 2 s;
- loading the converted folder (model and tokenizer, transformers imported beforehand): target <= 15 s;
- qahub's lm-eval task (``qahub_jeopardy``, its first ``DOCS`` documents, lm-eval's ``hf`` model at batch size 1,
  greedy, 0-shot, raw prompts) against plain ``model.generate`` on the same prompts, token cap and stop
  sequences (transformers' ``stop_strings``), the model loaded beforehand on both sides: target <= 1.2x;
- each harness's seconds per document: the whole command (start-up, model load, ``DOCS`` documents of
  ``qahub_jeopardy``, scoring) divided by ``DOCS``, so it is what a user waits, not generation alone.

The machine is shared: the figures move with its load. Measured, never asserted.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from pathlib import Path

from _common import QAHUB, best_in_turn, measure, met, qahub, row, run_fresh

DOCS = 4
TASK = "qahub_jeopardy"
BIN = Path(sys.executable).parent


def _folder() -> str:
    return qahub("models", "fetch", "smollm2").strip()


def prepare_load(folder):
    import transformers  # noqa: F401 - imported untimed

    return (folder,)


def load(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(folder)
    return type(AutoModelForCausalLM.from_pretrained(folder)).__name__


def _export(root: Path) -> str:
    from qahub import registry
    from qahub.export.writer import export

    folder = root / "jeopardy"
    if not folder.exists():
        export("jeopardy", folder, data_dir=registry.samples_dir("jeopardy"), cache_dir=root / "cache", sample=True)
    return str(folder)


def prepare_lm_eval(folder, location, tasks_dir):
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model = HFLM(pretrained=folder, batch_size=1, dtype="float32", device="cpu")
    return model, TaskManager(include_path=tasks_dir)


def lm_eval(model, manager):
    import lm_eval as harness

    results = harness.simple_evaluate(model=model, tasks=[TASK], task_manager=manager, limit=DOCS,
                                      num_fewshot=0, log_samples=False)
    return results["results"][TASK]["accuracy,none"]


def prepare_generate(folder, location, tasks_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from qahub import planning

    spec = planning.all_tasks()[TASK]
    entry = planning.plan_tasks("jeopardy", location)[TASK]
    functions = planning.task_functions("jeopardy", TASK, entry["location"], config=entry["config"],
                                        splits=(entry["split"],))
    docs = planning.task_docs(spec, functions, functions.dataset()[entry["split"]])[:DOCS]
    prompts = [p.input for p in planning.prompts(spec, docs, [], 0, random.Random(1234), False)]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return model, tokenizer, prompts, spec


def generate(model, tokenizer, prompts, spec):
    import torch

    from qahub import planning

    replies = []
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt")
            out = model.generate(**ids, max_new_tokens=spec.max_gen_toks, do_sample=False,
                                 stop_strings=list(spec.until), tokenizer=tokenizer)
            text = tokenizer.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)
            replies.append(planning.before_stop(text, spec.until))
    return replies


def _harness_rows(folder: str, location: str, tasks_dir: str, root: Path) -> list:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    commands = {
        "lm-eval": [str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={folder}",
                    "--batch_size", "1", "--include_path", tasks_dir, "--tasks", TASK, "--limit", str(DOCS),
                    "--output_path", str(root / "lm")],
        "inspect": [str(BIN / "inspect"), "eval", f"qahub/{TASK.removeprefix('qahub_')}", "-T",
                    f"dataset={location}", "--model", f"hf/{folder}", "--limit", str(DOCS), "--max-connections",
                    "1", "--log-dir", str(root / "inspect"), "--display", "none"],
        "lighteval": [sys.executable, "-m", "qahub.lighteval_tasks", "accelerate",
                      f"model_name={folder},batch_size=1,override_chat_template=false", f"{TASK}|0",
                      "--custom-tasks", "qahub.lighteval_tasks", "--max-samples", str(DOCS), "--output-dir",
                      str(root / "lighteval")],
    }
    os.environ.update({"QAHUB_LIGHTEVAL_DATA": f"jeopardy={location}", **env})
    rows = []
    for harness, argv in commands.items():
        seconds, peak = run_fresh(argv)
        rows.append(row(f"models: {harness}, s per document", (seconds / DOCS, peak), None,
                        f"whole command on {DOCS} {TASK} documents (start-up, model load, generation, "
                        f"scoring): {seconds:.0f} s"))
    return rows


def run() -> list[dict]:
    folder = _folder()
    root = Path(tempfile.mkdtemp(prefix="qahub-bench-models-"))
    location = _export(root)
    tasks_dir = str(root / "tasks")
    qahub("harness-tasks", "--out", tasks_dir, "--dataset", f"jeopardy={location}")
    fetched = run_fresh([QAHUB, "models", "fetch", "smollm2"])
    rows = [row("models: second fetch (cached)", fetched, None, f"target <= 2 s: {met(fetched[0] <= 2)}")]
    loaded = measure("bench_models:load", folder)
    rows.append(row("models: load converted SmolLM2", loaded[:2], None, f"target <= 15 s: {met(loaded[0] <= 15)}"))
    ours, base, _ = best_in_turn(("bench_models:lm_eval", folder, location, tasks_dir),
                                 ("bench_models:generate", folder, location, tasks_dir), runs=1, seconds=0)
    slower = ours[0] / base[0]
    rows.append(row(f"models: lm-eval {TASK} vs model.generate", ours[:2], base[:2],
                    f"{DOCS} documents, same prompts, cap and stops; ours {slower:.2f}x the baseline "
                    f"(target <= 1.2x: {met(slower <= 1.2)}); one run of each side"))
    rows += _harness_rows(folder, location, tasks_dir, root)
    print(json.dumps({"lm_eval": ours[2], "generate": base[2]}))  # to the log: what each side produced
    return rows
