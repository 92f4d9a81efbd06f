"""The reference table (issue 43 item 4): Gemma 3 270M and SmolLM2-135M-Instruct on the 8 qahub tasks, in
lm-eval, inspect and lighteval, on one fixed set of documents, then ``qahub report`` on the runs.

    python benchmarks/reference.py --out reference --docs 30

- models: ``qahub models fetch`` (cached after the first call); SmolLM2 with its chat template in every harness
  (lm-eval ``--apply_chat_template``), Gemma (base, no template) on raw prompts in lm-eval and lighteval; inspect's
  ``hf/`` provider sends chat messages to both;
- data: each corpus built from ``--data-root/<corpus>`` (``../shared/data``: JEMHopQA, Jeopardy's validation
  file, Topical-Chat's test and valid splits), else from qahub's bundled sample (doc2dial and LIMUR here, so
  their tasks have their few sample documents);
- documents: ``qahub pick-docs`` (``--docs`` of each task, one per conversation first; every document when a task
  has fewer), the same in every harness (lm-eval ``--samples``, inspect ``sample_id``,
  ``QAHUB_LIGHTEVAL_SAMPLES``);
- each harness runs in its own process per model, loads the model once (lighteval: once per task, its
  command line), runs the tasks one by one and records each task's seconds; greedy, 0-shot, the tasks' own caps
  and stop sequences, batch size ``--batch-size``, ``--threads`` torch threads per process.

Writes ``OUT/runs/<model>-<harness>/`` (each harness's own output layout), ``OUT/seconds.json`` (the
seconds of each task in each run; two commands with different ``--harnesses`` may run side by side),
``OUT/report/`` (``qahub report`` of every run, lm-eval's Gemma run the baseline) and ``OUT/reference.md``.
A task with seconds in its run's ``OUT/<model>-<harness>.seconds.json`` is not run again (a run stopped half-way
goes on from the first task it lacks): delete the file and the run's folder to redo a run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import qahub

BIN = Path(sys.executable).parent
MODELS = {"gemma": False, "smollm2": True}  # name -> chat template
HARNESSES = ("lm-eval", "inspect", "lighteval")


def exports(out: Path, data_root: Path) -> dict:
    """Every corpus built into ``OUT/exports``: from ``data_root/<corpus>`` where that folder is there (its
    configs and splits whose files are there, when the builder has that option), else from qahub's bundled
    sample."""
    from qahub import registry
    from qahub.export.options import option_kinds

    found = {}
    for corpus in registry.corpus_names():
        folder = out / "exports" / corpus
        if not (folder / "README.md").is_file():
            real = (data_root / corpus).is_dir()
            present = real and "present_splits_only" in option_kinds(corpus)
            qahub("build", corpus, "--data-dir", str(data_root / corpus if real else registry.samples_dir(corpus)),
                  "--out", str(folder), "--overwrite", *(["--option", "present_splits_only=true"] if present else []))
        found[corpus] = str(folder)
    return found


def picked_docs(folders: dict, docs: int) -> dict:
    """``{task: (corpus, [index], [id])}``: ``docs`` documents of each task, or all it has."""
    from qahub import pick_docs, tasks

    found = {}
    for task, corpus in tasks.task_corpora().items():
        chosen, _, _ = pick_docs.pick(task, docs, folders[corpus], at_most=True)
        found[task] = (corpus, [i for i, _, _ in chosen], [d for _, d, _ in chosen])
    return found


def run_harness(harness: str, model: str, folder: str, out: Path, plan: dict, args) -> None:
    """Run ``model`` through ``harness`` on every task of ``plan``, each task's seconds added to
    ``OUT/<model>-<harness>.seconds.json`` as it is done."""
    times = out / f"{model}-{harness}.seconds.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": str(args.threads)}
    job = {"harness": harness, "model": model, "folder": folder, "chat": MODELS[model], "plan": plan,
           "out": str(out / "runs" / f"{model}-{harness}"), "tasks_dir": str(out / "tasks"), "times": str(times),
           "batch_size": args.batch_size, "threads": args.threads}
    log = out / "logs" / f"{model}-{harness}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as f:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "_reference_run.py"),
                               json.dumps(job)], stdout=f, stderr=subprocess.STDOUT, env=env)
    if done.returncode:
        raise SystemExit(f"{model} in {harness} failed: see {log} (the tasks done are kept: run again for the rest)")
    seconds = json.loads(times.read_text())
    print(f"{time.strftime('%H:%M:%S')} {model} in {harness}: {sum(seconds[task] for task in plan):.0f} s",
          file=sys.stderr, flush=True)


def to_run(harness: str, times: Path, plan: dict, again: str | None) -> dict:
    """The tasks of ``plan`` to run: those named by ``--tasks`` (lm-eval and lighteval; the report reads each
    task's newest results), else those with no seconds yet in ``times``."""
    done = json.loads(times.read_text()) if times.is_file() else {}
    if again:
        if harness == "inspect" and any(task in done for task in again.split(",")):
            raise SystemExit(f"{times.name}: a folder holds one inspect log per task; delete the run to redo one")
        return {task: plan[task] for task in again.split(",")}
    return {task: entry for task, entry in plan.items() if task not in done}


def report(out: Path, runs: list[str]) -> dict:
    """``qahub report`` of ``runs`` (lm-eval's Gemma run the baseline) into ``OUT/report``; its report.json."""
    argv = [f"{key}={out / 'runs' / key}" for key in runs]
    qahub("report", *argv, "--out", str(out / "report"), "--baseline", runs[0], "--overwrite")
    return json.loads((out / "report" / "report.json").read_text(encoding="utf-8"))


def cell(entry: dict, run: str, seconds: float | None) -> str:
    """``score [low, high] · n · unparseable % · s/doc`` of ``run`` in a task's report entry."""
    scores = entry["scores"].get(run)
    if not scores:
        return "not run"
    main = scores[entry["main_metric"]]
    low, high = main["ci"] if main.get("ci") else (None, None)
    digits = 1 if max(abs(main["value"]), abs(high or 0)) > 1 else 2  # doc2dial's 0-100 scores
    interval = f" [{low:.{digits}f}, {high:.{digits}f}]" if low is not None else " (no interval)"
    share = "".join(f" · {scores[name]['value']:.0%} {name}" for name in ("unparseable", "abstained")
                    if name in scores)
    timing = f" · {seconds / main['n']:.1f} s/doc" if seconds is not None else ""
    return f"{main['value']:.{digits}f}{interval} · n {main['n']}{share}{timing}"


def table(data: dict, seconds: dict, runs: list[str]) -> str:
    lines = ["| task (metric) | " + " | ".join(runs) + " |", "| --- |" + " --- |" * len(runs)]
    for task, entry in data["tasks"].items():
        cells = [cell(entry, run, seconds.get(run, {}).get(task)) for run in runs]
        lines.append(f"| `{task}` ({entry['main_metric']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_tasks(tasks: Path, folders: dict) -> None:
    """lm-eval's task folder for these exports, written again when it names other ones: a task names its export
    by path, and in an --out copied from elsewhere lm-eval would read the old folder's exports, which the report
    then refuses to compare with the other harnesses' runs."""
    from qahub.harness import MARKER

    marker = tasks / MARKER
    wanted = {str(folder) for folder in folders.values()}
    if marker.is_file() and {e["location"] for e in json.loads(marker.read_text()).values()} == wanted:
        return
    qahub("harness-tasks", "--overwrite", "--out", str(tasks),
          *[a for c, f in folders.items() for a in ("--dataset", f"{c}={f}")])


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="reference", help="output folder (default: reference)")
    parser.add_argument("--docs", type=int, default=30, help="documents per task (default: 30)")
    parser.add_argument("--other-docs", type=int,
                        help="fewer documents per task in inspect and lighteval, the first of lm-eval's (default: "
                             "--docs, the same in every harness)")
    parser.add_argument("--data-root", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--harnesses", default=",".join(HARNESSES))
    parser.add_argument("--tasks", help="run only these tasks again (comma-separated), in lm-eval and lighteval "
                                         "runs that are already there (the report reads each task's newest results)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default: 1)")
    args = parser.parse_args(argv)
    args.other_docs = args.other_docs or args.docs
    return args


def run_all(out: Path, plans: dict, args: argparse.Namespace) -> None:
    """Each model in each harness, skipping a run another command holds and the tasks a run already has."""
    models = {model: qahub("models", "fetch", model).strip() for model in args.models.split(",")}
    for harness in args.harnesses.split(","):
        for model, folder in models.items():
            running = out / f"{model}-{harness}.running"  # another command runs it now
            plan = to_run(harness, out / f"{model}-{harness}.seconds.json",
                          plans[args.docs if harness == "lm-eval" else args.other_docs], args.tasks)
            if running.exists() or not plan:
                continue
            running.touch()
            try:
                run_harness(harness, model, folder, out, plan, args)
            finally:
                running.unlink()


def main(argv=None) -> int:
    args = arguments(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    folders = exports(out, Path(args.data_root))
    write_tasks(out / "tasks", folders)
    plans = {n: {task: [corpus, folders[corpus], indexes, ids]
                 for task, (corpus, indexes, ids) in picked_docs(folders, n).items()}
             for n in {args.docs, args.other_docs}}
    (out / "plan.json").write_text(json.dumps(plans, indent=1), encoding="utf-8")
    run_all(out, plans, args)
    seconds = {path.name.removesuffix(".seconds.json"): json.loads(path.read_text())
               for path in out.glob("*.seconds.json")}
    (out / "seconds.json").write_text(json.dumps(seconds, indent=1), encoding="utf-8")
    runs = [key for harness in HARNESSES for model in MODELS if (key := f"{model}-{harness}") in seconds]
    text = table(report(out, runs), seconds, runs)
    (out / "reference.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
