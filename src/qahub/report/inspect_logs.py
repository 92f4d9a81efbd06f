"""Reading what ``inspect eval qahub/<task> --log-dir DIR`` wrote (``.eval`` or ``.json`` logs) as report runs,
through inspect's public log API: each log's header (status, task, model, results) with ``read_eval_log(...,
header_only=True)``, its samples streamed with ``read_eval_log_samples``.

A run is one log file, or a log folder holding one log per qahub task (a folder with two logs of one task is
refused: name the file). Each sample's values are the qahub scorer's (``inspect_tasks.document_values``); with
several epochs a document's numbers are averaged over its epochs, and a value that is not a number (a corpus-BLEU
pair, a distinct-n text, None) is its first epoch's, as inspect's own reducers keep it. The documents are in the
dataset's order (the log's sample ids), each keyed by its id, the task's document id an lm-eval run pairs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .runs import RESULTS, ReportError, Run, TaskRun, cluster_name, task_metrics

SUFFIXES = (".eval", ".json")
PREFIX = "qahub_"  # lm-eval's task qahub_limur is inspect's qahub/limur
SKIPPED_FIELDS = {"messages", "events", "store", "attachments", "output", "model_usage", "role_usage"}


@dataclass
class InspectRun(Run):
    """A run read from inspect logs: ``samples`` maps each task to its log file."""

    harness = "inspect"

    def read(self, task: str, spec) -> TaskRun:
        return read_task(task, self.samples[task], spec)


def is_log(path: Path) -> bool:
    """An inspect log file, or a folder holding inspect logs and no lm-eval results."""
    if path.is_file():
        return path.suffix in SUFFIXES
    if not path.is_dir() or any(RESULTS.match(p.name) for p in (*path.glob("results_*.json"),
                                                                  *path.glob("*/results_*.json"))):
        return False
    return any(p.suffix in SUFFIXES for p in path.iterdir())


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list[str]]:
    files = [path] if path.is_file() else _log_files(path)
    found, skipped = {}, []
    for file in files:
        header = _header(file)
        task = qahub_task(header, file)
        if task not in specs:
            if path.is_file():
                raise ReportError(f"{file}: task {header.eval.task} is not a qahub task (qahub/<name>)")
            skipped.append(header.eval.task)
            continue
        _check_finished(header, file)
        found.setdefault(task, []).append((file, header))
    if not found:
        raise ReportError(f"{path}: holds no log of a qahub task (it has {', '.join(sorted(skipped)) or 'none'})")
    for task, logs in found.items():
        if len(logs) > 1:
            raise ReportError(f"{path}: holds {len(logs)} logs of {task} ({', '.join(f.name for f, _ in logs)}); "
                              "which one? pass that file (one log per task in a folder)")
    models = sorted({header.eval.model for logs in found.values() for _, header in logs})
    if len(models) > 1:
        raise ReportError(f"{path}: holds the logs of several models ({', '.join(models)}); give one model's "
                          "logs per run")
    run = InspectRun(name or models[0], str(path), models[0], str(path), {},
                     {task: logs[0][0] for task, logs in sorted(found.items())})
    return run, skipped


def _log_files(folder: Path) -> list[Path]:
    from inspect_ai.log import list_eval_logs

    return sorted(Path(info.name.removeprefix("file://")) for info in list_eval_logs(str(folder), recursive=False))


def _header(file: Path):
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(file), header_only=True)
    except Exception as err:  # inspect raises what its zip or JSON reader raises on a file that is not a log
        raise ReportError(f"{file}: not an inspect log ({type(err).__name__}: {' '.join(str(err).split())}); "
                          "give an inspect log or an lm_eval --output_path folder") from None


def qahub_task(header, file) -> str | None:
    """lm-eval's name of the log's qahub task (``qahub/limur`` -> ``qahub_limur``), None for another task."""
    declared = (header.eval.metadata or {}).get("qahub")
    task = PREFIX + header.eval.task.rsplit("/", 1)[-1]
    if not isinstance(declared, dict) or declared.get("lm_eval_task") != task:
        return None
    return task


def _check_finished(header, file):
    if header.status != "success":
        raise ReportError(f"{file}: the eval's status is {header.status!r}, not 'success' (an unfinished, failed "
                          "or cancelled eval); finish it (inspect eval-retry) or give another log")
    if header.results is None:
        raise ReportError(f"{file}: the eval has no results (no sample was scored)")


def read_task(task: str, file: Path, spec) -> TaskRun:
    from inspect_ai.log import read_eval_log_samples

    from qahub.inspect_tasks import CLUSTER, document_values

    header = _header(file)
    metrics, fields = task_metrics(spec), list(spec.categories)
    epochs, failed = {}, 0  # sample id -> [(epoch, values, metadata)]
    try:
        for sample in read_eval_log_samples(str(file), all_samples_required=False, exclude_fields=SKIPPED_FIELDS):
            score = (sample.scores or {}).get(task)
            if score is None and sample.error:  # --no-fail-on-error: inspect leaves it out of every metric
                failed += 1
                continue
            if score is None:
                raise ReportError(f"{file}: sample {sample.id} epoch {sample.epoch} has no {task} score")
            epochs.setdefault(sample.id, []).append((sample.epoch, document_values(score), sample.metadata))
    except ReportError:
        raise
    except Exception as err:  # a damaged log: whatever inspect's reader raises
        raise ReportError(f"{file}: its samples cannot be read ({type(err).__name__}: {err})") from None
    order = [i for i in (header.eval.dataset.sample_ids or []) if i in epochs] or list(epochs)
    if not order:
        raise ReportError(f"{file}: no samples")
    first = sorted(epochs[order[0]], key=lambda e: e[0])[0][1]
    present = [m for m in metrics if m in first]
    if not present:
        raise ReportError(f"{file}: no score of {task} in its samples")
    per_doc = [_averaged(epochs[i], present, file, i) for i in order]
    items = {m: [values[m] for values, _ in per_doc] for m in present}
    categories = {f: [str(_category(meta, f, file)) for _, meta in per_doc] for f in fields}
    clusters = [(meta or {}).get(CLUSTER) for _, meta in per_doc] if spec.cluster else None
    qahub = header.eval.metadata["qahub"]
    most = max(len(e) for e in epochs.values())
    notes = [f"{most} epochs: each document's numbers are the mean over its epochs, any other value (a BLEU pair, "
             "a distinct-n reply) its first epoch's, as inspect reduces them"] if most > 1 else []
    if failed:
        notes.append(f"{failed} sample(s) failed (an eval run with --no-fail-on-error): left out, as inspect's "
                     "metrics leave them out")
    return TaskRun(task, str(file), _values(header, present, file, task), [(i, None) for i in order], items,
                   categories, None, qahub.get("fewshot"), header.eval.config.limit,
                   (qahub.get("location"), qahub.get("config"), qahub.get("split")), list(order), notes,
                   clusters, cluster_name(spec.cluster))


def _averaged(epochs: list, present: list, file, sample_id) -> tuple[dict, dict]:
    """One document's values: each number averaged over its epochs, any other value its first epoch's."""
    epochs = sorted(epochs, key=lambda e: e[0])
    values = {}
    for m in present:
        seen = [e[1].get(m) for e in epochs]
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in seen)
        values[m] = sum(seen) / len(seen) if numbers else seen[0]
    return values, epochs[0][2] or {}


def _category(metadata: dict, field: str, file):
    if field not in metadata:
        raise ReportError(f"{file}: a sample's metadata has no {field!r} (not a log of qahub's task?)")
    return metadata[field]


def _values(header, present: list, file, task) -> dict:
    """Each metric's value over all documents, as inspect's results give it (the scorer's first metric of each
    score; the others are the category breakdowns)."""
    found = {score.name: next(iter(score.metrics.values())).value
             for score in header.results.scores if score.metrics}
    missing = [m for m in present if not isinstance(found.get(m), int | float)]
    if missing:
        raise ReportError(f"{file}: the results of {task} have no number for {', '.join(missing)}")
    return {m: float(found[m]) for m in present}
