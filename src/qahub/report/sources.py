"""Which reader reads a run: an inspect log or log folder (``inspect_logs``), a lighteval ``--output-dir``
(``lighteval_runs``), a Hub details repo ``hf://datasets/...`` or a local snapshot of one (``hub_runs``: one run
per model folder), else an lm-eval ``--output_path`` (``lm_eval_runs``). Every task of every run is either read
or named in ``skipped`` with the reason."""

from __future__ import annotations

from pathlib import Path

from . import hub_runs, inspect_logs, lighteval_runs, lm_eval_runs
from .runs import ReportError, Run, parse_run_argument, skipped


def read_runs(arguments: list[str], specs: dict) -> tuple[list[Run], list[dict]]:
    """The runs and ``skipped``: ``{"run", "task", "reason"}`` of each task of a run that is not reported."""
    runs, left = [], []
    for argument in arguments:
        for run, left_here in read_argument(argument, specs):
            if any(other.name == run.name for other in runs):
                raise ReportError(f"{run.path}: a second run named {run.name!r}; use NAME=PATH to name each run")
            runs.append(run)
            left += [skipped(run.name, task, reason) for task, reason in left_here]
    refuse_twice(runs)
    return runs, left


def refuse_twice(runs: list):
    """One line naming both when a run is given twice: every file it was read from the same by content
    (SHA-256: one folder under two names, or a copy), or a task's eval the same as its harness recorded it
    (``Run.recorded_ids``: a local run folder and the details dataset published from it, whose copies of the
    files are scrubbed). Counted twice, it would be ranked beside itself at Δ 0 and counted twice among the
    tests. Two runs that replied alike on one task (a --limit above the task's documents) are not one run."""
    seen = {}
    for run in runs:
        run.files = read_from(run)
        marks = [(("files", frozenset(f["sha256"] for f in run.files.values())), "the same files, by SHA-256")]
        marks += [(("eval", task, recorded), f"the same {task} eval as its harness recorded it: "
                                             f"{', '.join(str(part) for part in recorded if part is not None)}")
                  for task, recorded in run.recorded_ids().items()]
        for mark, what in marks:
            other = seen.setdefault(mark, run)
            if other is not run:
                raise ReportError(f"{run.name} ({run.path}) and {other.name} ({other.path}) are the same run given "
                                  f"twice ({what}); give it once")


def read_from(run) -> dict:
    """``{path: {"bytes": size, "sha256": hex}}`` of every file the report read ``run`` from: its results files
    and each reported task's samples (lm-eval), details (lighteval) or log (inspect); ``qahub publish-results
    --details`` pushes them, after checking they are still these files."""
    import hashlib

    paths = [Path(p) for p in run.results_files or [run.results_file]] + [Path(p) for p in run.samples.values()]
    found = {}
    for path in dict.fromkeys(paths):
        if path.is_file():  # inspect's results_file is its log folder: the logs are its samples
            with open(path, "rb") as handle:
                found[str(path)] = {"bytes": path.stat().st_size,
                                    "sha256": hashlib.file_digest(handle, "sha256").hexdigest()}
    return found


def read_argument(argument: str, specs: dict) -> list[tuple[Run, list]]:
    """The runs of one ``[NAME=]PATH`` or ``[NAME=]hf://datasets/...`` argument (a details repo holding several
    models: one run each)."""
    name, target = hub_runs.split_name(argument)
    if hub_runs.is_hub(target):
        return hub_runs.read_hub(name, target, specs)
    name, path = parse_run_argument(argument)
    if hub_runs.is_snapshot(path):
        return hub_runs.read_local(name, path, specs)
    return [read_run(name, path, specs)]


def local_paths(arguments: list[str]) -> list[Path]:
    """The folders and files the run arguments name on this machine (not the ``hf://`` ones)."""
    return [parse_run_argument(a)[1] for a in arguments if not hub_runs.is_hub(hub_runs.split_name(a)[1])]


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list]:
    """The run at ``path`` and ``(task, reason)`` of each of its tasks that is not reported."""
    if inspect_logs.is_log(path):
        return inspect_logs.read_run(name, path, specs)
    if lighteval_runs.is_lighteval(path):
        return lighteval_runs.read_run(name, path, specs)
    return lm_eval_runs.read_run(name, path, specs)
