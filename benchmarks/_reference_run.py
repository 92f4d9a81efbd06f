"""One model through one harness on every task of the reference plan (run by ``benchmarks/reference.py`` in a
process of its own): the model loaded once (lighteval: its command line per task), each task's seconds added to
the run's seconds file as soon as the task is done (a run stopped half-way keeps what it did)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def lm_eval(job: dict):
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    args = f"pretrained={job['folder']},dtype=float32"
    model = HFLM(pretrained=job["folder"], dtype="float32", batch_size=job["batch_size"], device="cpu")
    manager = TaskManager(include_path=job["tasks_dir"])
    for task, (_corpus, _location, indexes, _ids) in job["plan"].items():
        tracker = EvaluationTracker(output_path=job["out"])
        started = time.monotonic()
        results = simple_evaluate(model=model, model_args=args, tasks=[task], samples={task: indexes},
                                  log_samples=True, apply_chat_template=job["chat"], task_manager=manager,
                                  evaluation_tracker=tracker, batch_size=job["batch_size"])
        spent = time.monotonic() - started
        samples = results.pop("samples")
        tracker.save_results_aggregated(results=results, samples=samples)
        tracker.save_results_samples(task_name=task, samples=samples[task])
        yield task, spent


def inspect(job: dict):
    from inspect_ai import eval
    from inspect_ai.model import get_model

    from qahub import inspect_tasks

    model = get_model(f"hf/{job['folder']}", batch_size=job["batch_size"])
    for task, (_corpus, location, _indexes, ids) in job["plan"].items():
        started = time.monotonic()
        [log] = eval(inspect_tasks.TASKS[task.removeprefix("qahub_")](dataset=location), model=model,
                     sample_id=ids, log_dir=job["out"], display="none", max_connections=job["batch_size"])
        if log.status != "success":
            raise SystemExit(f"{task}: {log.error}")
        yield task, time.monotonic() - started


def lighteval(job: dict):
    """lighteval's command line per task: its seconds include the start-up and the model's load."""
    from qahub import lighteval_tasks

    data = ",".join(sorted({f"{corpus}={location}" for corpus, location, _, _ in job["plan"].values()}))
    chat = "true" if job["chat"] else "false"
    for task, (_corpus, _location, indexes, _ids) in job["plan"].items():
        env = {**os.environ, lighteval_tasks.ENV: data, lighteval_tasks.SAMPLES_ENV: json.dumps({task: indexes})}
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "qahub.lighteval_tasks", "accelerate",
                        f"model_name={job['folder']},batch_size={job['batch_size']},dtype=float32,"
                        f"override_chat_template={chat}", f"{task}|0", "--custom-tasks", "qahub.lighteval_tasks",
                        "--output-dir", job["out"], "--save-details"], env=env, check=True)
        yield task, time.monotonic() - started


def main() -> int:
    job = json.loads(sys.argv[1])
    import torch

    torch.set_num_threads(job["threads"])
    Path(job["out"]).mkdir(parents=True, exist_ok=True)
    run = {"lm-eval": lm_eval, "inspect": inspect, "lighteval": lighteval}[job["harness"]]
    times = Path(job["times"])
    for task, spent in run(job):
        seconds = json.loads(times.read_text(encoding="utf-8")) if times.is_file() else {}
        times.write_text(json.dumps({**seconds, task: spent}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
