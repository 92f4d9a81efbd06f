"""``qahub report``: read lm-eval runs (``--log_samples``), report every qahub task's scores with bootstrap
intervals, its corpus's breakdowns and paired comparisons with a baseline run, in ``DIR`` (report.json,
report.md, report.html, figures/)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from .runs import ReportError, qahub_tasks, read_runs

__all__ = ["ReportError", "write_report"]
MARKER = "report.json"


def write_report(arguments, out, baseline=None, resamples=1000, seed=12345, confidence=0.95, overwrite=False,
                 progress=True, jobs=None) -> dict:
    from qahub.loaders._gc import gc_paused

    if resamples < 1:
        raise ReportError(f"--resamples {resamples}: must be at least 1")
    if not 0 < confidence < 1:
        raise ReportError(f"--confidence {confidence}: must be between 0 and 1")
    out = Path(out).absolute()
    check_out(out, overwrite)
    specs = qahub_tasks()
    with gc_paused():  # the samples' items are kept: the collector would walk them again and again
        return _write(arguments, out, specs, baseline, resamples, seed, confidence, progress, jobs)


def _write(arguments, out, specs, baseline, resamples, seed, confidence, progress, jobs) -> dict:
    from tqdm import tqdm

    from .build import report_data, task_names
    from .workers import jobs as workers

    runs, skipped = read_runs(arguments, specs)
    baseline = baseline or runs[0].name
    if baseline not in {run.name for run in runs}:
        raise ReportError(f"--baseline {baseline}: no run of that name ({', '.join(run.name for run in runs)})")
    settings = {"resamples": resamples, "seed": seed, "confidence": confidence, "baseline": baseline,
                "intervals": "percentile bootstrap over documents"}
    tasks = task_names(runs)
    count = workers(jobs, len(tasks))
    if count > 1:
        import matplotlib.pyplot  # noqa: F401 - once here, inherited by every worker, not imported by each
    with tqdm(total=len(tasks), desc="resampling", unit="task", file=sys.stderr,
              disable=None if progress else True) as bar:
        data, images = report_data(runs, skipped, specs, settings, bar, count)
    write_folder(out, data, images)
    return data


def check_out(out: Path, overwrite: bool):
    """A missing or empty folder, or an earlier report, is written; any other existing folder needs --overwrite."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())) or (out / MARKER).is_file():
        if out.exists() and not out.is_dir():
            raise ReportError(f"--out {out}: is a file; name a folder")
        return
    if not overwrite:
        raise ReportError(f"--out {out}: exists and is not a qahub report; pass --overwrite to replace it")
    if not out.is_dir():
        raise ReportError(f"--out {out}: is a file; name a folder")


def write_folder(out: Path, data: dict, figures: dict):
    """Everything into a temporary folder beside ``out`` (removed on any error), renamed into place when complete;
    ``figures``: ``{task: {file name: PNG bytes}}``."""
    from .render import blocks, markdown, page

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.partial-", dir=out.parent) as work:
        staging = Path(work) / out.name
        (staging / "figures").mkdir(parents=True)
        images = {name: png for per_task in figures.values() for name, png in per_task.items()}
        for name, png in images.items():
            (staging / "figures" / name).write_bytes(png)
        report = blocks(data, {task: list(per_task) for task, per_task in figures.items()})
        (staging / "report.md").write_text(markdown(report), encoding="utf-8")
        (staging / "report.html").write_text(page(report, images), encoding="utf-8")
        (staging / MARKER).write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                      encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
