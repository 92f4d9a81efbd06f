"""``qahub report``: read lm-eval runs (``--log_samples``), report every qahub task's scores with bootstrap
intervals, its corpus's breakdowns and paired comparisons with a baseline run, in ``DIR`` (report.json,
report.md, report.html, figures/)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from qahub.files import Guard, check_folder, staged

from .runs import ReportError, qahub_tasks

__all__ = ["ReportError", "write_report"]
MARKER = "report.json"
MIN_RESAMPLES = 200  # fewer bootstrap resamples: intervals and p of a handful of draws (p never below 1/201)


SCHEMA = "qahub-report/2"  # report.json's "schema": what marks a folder as a report --out may replace
SCHEMAS = {SCHEMA, "qahub-report/1"}  # an earlier version's report is a report too
REPORT_FILES = {"report.json", "report.md", "report.html"}
HUB_FOLDERS = {"eval_results": {".yaml"}, "eee": {".json", ".jsonl"}}  # report.hub_files's: folder -> file kinds


def write_report(arguments, out, baseline=None, resamples=1000, seed=12345, confidence=0.95, overwrite=False,
                 progress=True, jobs=None, hub_datasets=None) -> dict:
    """``hub_datasets``: None, or ``{corpus: hub_files.HubDataset}`` (may be empty) to also write each
    run's ``eval_results/`` and ``eee/`` files (``qahub.report.hub_files``)."""
    from qahub.gc_pause import gc_paused

    if resamples < MIN_RESAMPLES:
        raise ReportError(f"--resamples {resamples}: must be at least {MIN_RESAMPLES} (fewer give intervals and p "
                          "values of a handful of resamples: --resamples 1 made a 95 % interval [0.333, 0.333])")
    if seed < 0:
        raise ReportError(f"--seed {seed}: must be 0 or more (numpy's seeds are)")
    if not 0 < confidence < 1:
        raise ReportError(f"--confidence {confidence}: must be between 0 and 1")
    check_out(Path(out), local_paths(arguments), overwrite)
    out = Path(out).absolute()
    specs = qahub_tasks()
    with gc_paused():  # the samples' items are kept: the collector would walk them again and again
        return _write(arguments, out, specs, baseline, resamples, seed, confidence, progress, jobs, hub_datasets)


def _write(arguments, out, specs, baseline, resamples, seed, confidence, progress, jobs, hub_datasets) -> dict:
    from tqdm import tqdm

    from .build import report_data, task_names
    from .model import report_json
    from .sources import read_runs
    from .stats import POWER
    from .workers import jobs as workers

    runs, skipped = read_runs(arguments, specs)
    baseline = baseline or runs[0].name
    if baseline not in {run.name for run in runs}:
        raise ReportError(f"--baseline {baseline}: no run of that name ({', '.join(run.name for run in runs)})")
    settings = {"resamples": resamples, "seed": seed, "confidence": confidence, "baseline": baseline,
                "intervals": "per metric (each task's intervals): Wilson for 0/1 metrics of unclustered documents, "
                             "half-samples for distinct-n, else the percentile bootstrap over documents or clusters; "
                             "Clopper-Pearson over the effective sample size where every value is 0 or the scale; "
                             "no percentile interval from fewer than 4 clusters or documents, none from fewer than 2",
                "power": POWER}
    tasks = task_names(runs)
    count = workers(jobs, len(tasks))
    if count > 1:
        import matplotlib.pyplot  # noqa: F401 - once here, inherited by every worker, not imported by each
    with tqdm(total=len(tasks), desc="resampling", unit="task", file=sys.stderr,
              disable=None if progress else True) as bar:
        data, images, read = report_data(runs, skipped, specs, settings, bar, count, keep=hub_datasets is not None)
    for run in runs:  # every results file a task was read from (two lm_eval calls into one --output_path: two)
        data["runs"][run.name]["results_files"] = run.results_files or [run.results_file]
        data["runs"][run.name]["files"] = run.files  # hashed once, as runs were read (sources.refuse_twice)
    extra = {}
    if hub_datasets is not None:
        from .hub_files import hub_files

        extra = hub_files(data, runs, specs, hub_datasets, read)
    data = report_json(data)  # the typed tasks as report.json holds them: written, rendered and returned so
    write_folder(out, {"schema": SCHEMA, **data}, images, extra)
    return data


def check_out(out: Path, runs: list, overwrite: bool):
    """A missing or empty folder, or a complete earlier report, is written; any other folder needs --overwrite;
    never a symbolic link, the current folder or one holding it, nor a folder that is, holds or is inside a run."""
    check_folder(out, overwrite, _guard(out), runs)


def _guard(out: Path) -> Guard:
    return Guard(symlink=f"--out {out}: is a symbolic link; name the folder itself",
                 is_cwd=f"--out {out}: is the current folder or holds it; name a new folder for the report",
                 near_input=lambda run: f"--out {out}: is, holds or is inside the run {run}; name a folder apart "
                                        "from the runs",
                 not_folder=f"--out {out}: is a file; name a folder",
                 not_empty=f"--out {out}: exists and is not a qahub report; pass --overwrite to replace it",
                 is_ours=is_report, ours_without_overwrite=True, error=ReportError)


def is_report(folder: Path) -> bool:
    """Whether ``folder`` holds a qahub report and nothing else: its report.json (of this schema), report.md,
    report.html and figures/*.png."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    if not isinstance(marker, dict) or marker.get("schema") not in SCHEMAS:
        return False
    for path in folder.rglob("*"):
        name = path.relative_to(folder)
        if path.is_symlink() or not (str(name) in REPORT_FILES or str(name) == "figures" and path.is_dir()
                                     or name.parent == Path("figures") and path.suffix == ".png" and path.is_file()
                                     or _hub_file(name, path)):
            return False
    return True


def _hub_file(name: Path, path: Path) -> bool:
    """A folder or file of ``eval_results/`` or ``eee/`` (what ``--hub-dataset`` adds)."""
    kinds = HUB_FOLDERS.get(name.parts[0])
    return kinds is not None and (path.is_dir() or path.is_file() and path.suffix in kinds)


def write_folder(out: Path, data: dict, figures: dict, extra=None):
    """Everything into a work folder beside ``out`` (removed on any error), swapped into place when complete
    (``out`` was checked by ``check_out`` before the runs were read); ``figures``: ``{task: {file name: PNG
    bytes}}``; ``extra``: ``{relative path: bytes}`` (the Hub files)."""
    from .render import blocks, markdown, page

    with staged(out) as work:
        (work / "figures").mkdir()
        images = {name: png for per_task in figures.values() for name, png in per_task.items()}
        for name, png in images.items():
            (work / "figures" / name).write_bytes(png)
        report = blocks(data, {task: list(per_task) for task, per_task in figures.items()})
        (work / "report.md").write_text(markdown(report), encoding="utf-8")
        (work / "report.html").write_text(page(report, images), encoding="utf-8")
        for name, body in (extra or {}).items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(body)
        (work / MARKER).write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                   encoding="utf-8")


def local_paths(arguments) -> list:
    """The runs named by a local path (``sources.local_paths``), read only when a report is written: importing the
    package, as rendering a saved report.json does, imports no run reader and no task."""
    from .sources import local_paths as paths

    return paths(arguments)
