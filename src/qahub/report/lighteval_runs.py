"""Reading what ``lighteval ... --custom-tasks qahub.lighteval_tasks --output-dir X --save-details`` wrote:
``X/results/<model>/results_<date>.json`` and ``X/details/<model>/<date>/details_<task>|<shots>_<date>.parquet``
(lighteval/logging/evaluation_tracker.py). Each details row's ``doc.specific`` holds lm-eval's ``doc_id`` and
``doc_hash`` of the document (``qahub.lighteval_tasks``), so a lighteval run pairs with an lm-eval run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qahub import tasks

from .runs import (
    RESULTS,
    ReportError,
    Run,
    TaskRun,
    add_samples,
    aggregates,
    cluster_name,
    load_json,
    task_metrics,
)


@dataclass
class LightevalRun(Run):
    """A run read from a lighteval ``--output-dir``: ``samples`` maps each task to its details file."""

    harness = "lighteval"

    def read(self, task: str, spec) -> TaskRun:
        return read_task(task, self.samples[task], self.results, spec, self.results_file)


def is_lighteval(path: Path) -> bool:
    """``path`` is a lighteval ``--output-dir``: its ``results`` and ``details`` folders."""
    return (path / "results").is_dir() and (path / "details").is_dir()


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list[str]]:
    found = [p for p in (path / "results").rglob("results_*.json") if RESULTS.match(p.name)]
    if not found:
        raise ReportError(f"{path}: no results/**/results_*.json (is it the --output-dir of a lighteval run?)")
    models = sorted({str(p.parent.relative_to(path / "results")) for p in found})
    if len(models) > 1:
        raise ReportError(f"{path}: holds the lighteval results of several models ({', '.join(models)}); "
                          "give one --output-dir per run")
    chosen = max(found, key=lambda p: RESULTS.match(p.name)["date"])
    results = _read_json(chosen)
    date = RESULTS.match(chosen.name)["date"]
    model = str((results["config_general"].get("model_config") or {}).get("model_name") or models[0])
    run = LightevalRun(name or model, str(path), model, str(chosen), results)
    found = [(key, key.rpartition("|")[0], path / "details" / models[0] / date / f"details_{key}_{date}.parquet")
             for key in results["results"] if key != "all"]
    return run, add_samples(run, chosen, found, specs, "details", "rerun lighteval with --save-details")


def _read_json(path: Path) -> dict:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or \
            not isinstance(data.get("config_general"), dict):
        raise ReportError(f"{path}: not a lighteval results file (no \"results\" and \"config_general\" objects)")
    return data


def read_task(task: str, details: Path, results: dict, spec, results_name: str) -> TaskRun:
    import pyarrow.parquet as pq

    key = details.name.removeprefix("details_").rsplit("_", 1)[0]  # TASK|SHOTS
    try:
        table = pq.read_table(details, columns=["doc", "metric"])
        # lighteval shuffles the documents; in lm-eval's order (doc_id) the bootstrap draws the same resamples
        rows = sorted(zip(table.column("doc").to_pylist(), table.column("metric").to_pylist(), strict=True),
                      key=lambda row: row[0]["specific"]["qahub_doc_id"])
        specific, logged = [doc["specific"] for doc, _ in rows], [metric for _, metric in rows]
        keys = [(s["qahub_doc_id"], s["qahub_doc_hash"]) for s in specific]
    except Exception as err:  # whatever pyarrow raises on a damaged or foreign file
        raise ReportError(f"{details}: not the details of a qahub task ({type(err).__name__}: "
                          f"{' '.join(str(err).split())})") from None
    if not logged:
        raise ReportError(f"{details}: no documents")
    if any(not isinstance(i, int) or not isinstance(h, str) for i, h in keys) or len(set(keys)) != len(keys):
        raise ReportError(f"{details}: qahub_doc_id / qahub_doc_hash missing or repeated; the details are damaged")
    present = [m for m in task_metrics(spec) if logged[0].get(m) is not None]
    values = aggregates(results["results"].get(key, {}), present, f"{results_name}: task {key}")
    categories = {field: [str(category(s["qahub_doc"])) for s in specific]
                  for field, category in spec.categories.items()}
    items = {metric: [row[metric] for row in logged] for metric in present}
    version = ((results.get("config_tasks") or {}).get(key) or {}).get("version")
    limit = results["config_general"].get("max_samples")
    ids = [tasks.document_id(spec, s["qahub_doc"], s["qahub_doc_id"]) for s in specific]
    clusters = [spec.cluster(s["qahub_doc"]) for s in specific] if spec.cluster else None
    return TaskRun(task, str(details), values, keys, items, categories, version, int(key.rpartition("|")[2]),
                   limit, tuple(specific[0]["qahub_dataset"]), ids, [], clusters, cluster_name(spec.cluster))
