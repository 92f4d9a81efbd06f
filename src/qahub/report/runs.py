"""Reading what ``lm_eval --output_path X --log_samples`` wrote: ``results_<date>.json`` and
``samples_<task>_<date>.jsonl`` in X or in its model folder (lm_eval/loggers/evaluation_tracker.py)."""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from qahub import tasks

try:  # the report extra's JSON parser: the samples files are most of a report's time
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - without the extra, json alone
    _fast_loads = None

RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")


class ReportError(ValueError):
    pass


@dataclass
class Metric:
    """How a metric aggregates (``mean``, ``sum``, ``bleu``, ``distinct``) and whether it is 0/1 per doc."""

    name: str
    kind: str
    binary: bool = False
    order: int = 0  # distinct-n's n
    score: object = None  # BLEU: the task's function of summed sacreBLEU statistics (None: sacrebleu's BLEU())
    scale: float = 1.0  # a binary metric's value of a right document (doc2dial's exact: 100)


@dataclass
class TaskRun:
    """One task of one run: lm-eval's point values and the logged per-document items."""

    task: str
    file: str
    values: dict  # metric -> lm-eval's aggregate
    keys: list  # (doc_id, doc_hash) per doc
    items: dict  # metric -> list of per-doc items (float or None; [hyp, ref] for bleu; text for distinct)
    categories: dict  # field -> list of category per doc
    version: object = None
    n_shot: object = None
    limit: object = None
    dataset: tuple = ()  # (dataset_path, dataset_name, split) of the results file's task config
    ids: list = field(default_factory=list)  # the task's document id per doc (tasks.document_id): inspect's Sample.id
    notes: list = field(default_factory=list)  # what the report says of how this run was read
    clusters: list = None  # the declared cluster of each doc (None: the doc alone), None when none is declared
    cluster_name: str = None  # what a cluster is ("conversation"), None when the task declares none


@dataclass
class Run:
    name: str
    path: str
    model: str
    results_file: str
    results: dict = field(default_factory=dict, repr=False)  # the results file's contents
    samples: dict = field(default_factory=dict)  # task -> its samples file
    tasks: dict = field(default_factory=dict)  # task -> TaskRun, read when that task is reported (``with_task``)
    harness: ClassVar[str] = "lm-eval"  # what wrote the run: each harness's Run subclass says its own

    def with_task(self, task: str, spec) -> Run:
        """This run with ``task``'s samples read."""
        return replace(self, tasks={task: self.read(task, spec)})

    def read(self, task: str, spec) -> TaskRun:
        """``task``'s samples, read with this harness's reader."""
        return read_task(task, self.samples[task], self.results, spec, self.results_file)


# aggregation (lm-eval's name or the task_api function's name) -> how a report resamples it
KINDS = {"mean": "mean", "mean_or_zero": "mean", "total": "sum", "bleu_of_pairs": "bleu", "corpus_bleu": "bleu",
         "distinct_1": "distinct", "distinct_2": "distinct"}


def cluster_name(cluster) -> str | None:
    """What a declared cluster function groups by, from its name: ``conversation``, ``grounding_dialogue`` ->
    ``dialogue``, ``theme``."""
    return None if cluster is None else getattr(cluster, "__name__", "cluster").rsplit("_", 1)[-1]


def qahub_tasks() -> dict:
    """``{task: spec}`` of every qahub lm-eval task (a corpus whose task_api does not import is left out, with a
    warning naming the file)."""
    return tasks.all_tasks()


def task_metrics(spec) -> dict:
    """``{name: Metric}`` of a task's ``TaskSpec``: its metrics and judge metrics, with how a report resamples each."""
    metrics = {}
    for name, (aggregation, _) in {**spec.metrics, **spec.judge_metrics}.items():
        how = aggregation if isinstance(aggregation, str) else getattr(aggregation, "__name__", "")
        if how not in KINDS:
            raise ReportError(f"metric {name}: no resampling known for its aggregation {how!r}")
        kind = KINDS[how]
        # a metric the task declares 0/1 per document (0/100 for doc2dial's exact): McNemar's test compares them
        oracle = spec.oracle.get(name)
        scale = oracle if isinstance(oracle, int | float) and oracle > 0 else 1.0
        metrics[name] = Metric(name, kind, name in spec.binary, int(how[-1]) if kind == "distinct" else 0,
                               spec.bleu_of_statistics if kind == "bleu" else None, float(scale))
    return metrics


def parse_run_argument(text: str) -> tuple[str | None, Path]:
    name, sep, path = text.partition("=")
    if sep and name and not Path(text).exists():
        return name, Path(path)
    return None, Path(text)


def read_runs(arguments: list[str], specs: dict) -> tuple[list[Run], list[str]]:
    runs, skipped = [], []
    for argument in arguments:
        name, path = parse_run_argument(argument)
        run, skipped_here = read_run(name, path, specs)
        if any(other.name == run.name for other in runs):
            raise ReportError(f"{path}: a second run named {run.name!r}; use NAME=PATH to name each run")
        runs.append(run)
        skipped += [f"{run.name}: {task}" for task in skipped_here]
    return runs, skipped


def results_file(path: Path) -> Path:
    """The newest ``results_*.json`` in ``path`` or in its one model folder."""
    if not path.is_dir():
        raise ReportError(f"{path}: no such folder (give the --output_path of an lm_eval run)")
    found = sorted(p for p in path.glob("results_*.json") if RESULTS.match(p.name))
    if not found:
        folders = sorted({p.parent for p in path.glob("*/results_*.json") if RESULTS.match(p.name)})
        if len(folders) > 1:
            raise ReportError(f"{path}: holds the results of several models ({', '.join(f.name for f in folders)}); "
                              "give one model folder per run")
        found = sorted(folders[0].glob("results_*.json")) if folders else []
    if not found:
        raise ReportError(f"{path}: no results_*.json (is it the --output_path of an lm_eval run?)")
    return max(found, key=lambda p: RESULTS.match(p.name)["date"])


def load_json(path: Path):
    """The value of a JSON file; a file that is not JSON is one line naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"{path}: not a JSON file: {err}") from None


def read_json(path: Path) -> dict:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ReportError(f"{path}: not an lm-eval results file (no \"results\" object)")
    for key in ("versions", "n-shot", "config", "configs", "n-samples"):
        if key in data and not isinstance(data[key], dict | None):
            raise ReportError(f"{path}: {key!r} is not an object; the results file is damaged (rerun lm_eval)")
    return data


def task_entry(results: dict, key: str, task: str, path) -> dict:
    """``results[key][task]``, an object ({} when the file has no such entry)."""
    entry = (results.get(key) or {}).get(task, {})
    if not isinstance(entry, dict):
        raise ReportError(f"{path}: {key}.{task} is not an object; the results file is damaged (rerun lm_eval)")
    return entry


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list[str]]:
    from . import inspect_logs, lighteval_runs

    if inspect_logs.is_log(path):
        return inspect_logs.read_run(name, path, specs)
    if lighteval_runs.is_lighteval(path):
        return lighteval_runs.read_run(name, path, specs)
    chosen = results_file(path)
    results = read_json(chosen)
    date = RESULTS.match(chosen.name)["date"]
    model = str(results.get("model_name") or results.get("model_name_sanitized") or chosen.parent.name)
    run = Run(name or model, str(path), model, str(chosen), results)
    found = [(task, task, chosen.parent / f"samples_{task}_{date}.jsonl") for task in results["results"]]
    skipped = add_samples(run, chosen, found, specs, "samples", "rerun lm_eval with --log_samples",
                          check=lambda task: task_entry(results, "results", task, chosen))
    return run, skipped


def add_samples(run: Run, chosen: Path, found: list, specs: dict, kind: str, rerun: str, check=None) -> list[str]:
    """``run.samples[task] = file`` for each ``(key, task, file)`` of ``found`` whose task is a qahub task (``key``:
    the task as the results file ``chosen`` names it; ``file``: its samples, an error saying ``rerun`` when missing),
    after ``check(task)``. Returns the keys of the other tasks. Shared by the lm-eval and lighteval readers."""
    skipped = []
    for key, task, samples in sorted(found):
        if task not in specs:
            skipped.append(key)
            continue
        if task in run.samples:
            raise ReportError(f"{chosen}: task {task} ran with two numbers of shots; report one of them per run")
        if check:
            check(task)
        if not samples.is_file():
            raise ReportError(f"{chosen}: task {key} has no {kind} file {samples.name}; {rerun}")
        run.samples[task] = samples
    if not run.samples:
        raise ReportError(f"{chosen}: holds no qahub task (it has {', '.join(sorted(run.results['results'])) or 'none'})")
    return skipped


def read_task(task: str, samples: Path, results: dict, spec, results_name: str) -> TaskRun:
    metrics = task_metrics(spec)
    categories, cluster = spec.categories, spec.cluster
    present = _metrics_logged(samples, task, metrics)
    rows, ids, cats, clusters = [], [], {f: [] for f in categories}, [] if cluster else None
    fields = [(categories[f], column) for f, column in cats.items()]
    number, get = 0, operator.itemgetter("doc_id", "doc_hash", *present)
    with open(samples, "rb") as handle:
        try:
            for number, line in enumerate(handle, 1):  # noqa: B007 - the line an error names
                sample = _sample(samples, number, line)
                rows.append(get(sample))
                doc = sample["doc"]
                ids.append(tasks.document_id(spec, doc, sample["doc_id"]))
                for category, column in fields:
                    column.append(str(category(doc)))
                if cluster:
                    clusters.append(cluster(doc))
        except ReportError:
            raise
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as err:
            raise ReportError(f"{samples}: line {number}: not a logged sample of {task} "
                              f"({type(err).__name__}: {err})") from None
    columns = [list(column) for column in zip(*rows)]
    keys = list(zip(columns[0], columns[1]))
    items = dict(zip(present, columns[2:]))
    _check_keys(samples, keys)
    _check_count(samples, len(rows), task_entry(results, "n-samples", task, results_name), results_name)
    values = aggregates(task_entry(results, "results", task, results_name), present, f"{results_name}: task {task}",
                        key="{},none".format)
    config = task_entry(results, "configs", task, results_name)
    dataset = (config.get("dataset_path"), config.get("dataset_name"),
               config.get("test_split") or config.get("validation_split"))
    return TaskRun(task, str(samples), values, keys, items, cats, (results.get("versions") or {}).get(task),
                   (results.get("n-shot") or {}).get(task), (results.get("config") or {}).get("limit"), dataset, ids,
                   [], clusters, cluster_name(cluster))


def aggregates(scores: dict, present: list, where: str, key=str) -> dict:
    """Each metric's value over all documents, from a results file's ``scores`` (``key(metric)`` its name there):
    a missing one, or one that is not a number, is an error naming ``where``."""
    values = {}
    for metric in present:
        value = scores.get(key(metric))
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ReportError(f"{where} has no number {key(metric)!r}")
        values[metric] = float(value)
    return values


def _check_count(samples: Path, count: int, n_samples: dict, results_name: str):
    """As many samples as the results file scored (its ``n-samples`` effective count)."""
    effective = n_samples.get("effective")
    if not isinstance(effective, int) or isinstance(effective, bool):
        raise ReportError(f"{results_name}: no n-samples effective count for {samples.name}; the results file is "
                          "damaged (rerun lm_eval)")
    if count != effective:
        raise ReportError(f"{samples}: {count} samples, but the results file scored {effective} (n-samples); the "
                          "samples file is cut or from another run")


def load_line(line: bytes):
    """One samples line, as ``json.loads`` reads it: orjson (about twice as fast), json for what orjson refuses
    (NaN, which lm-eval's json.dumps can write). orjson reads an integer beyond 64 bits as a float: no doc_id or
    category lm-eval logs for a qahub task is one."""
    if _fast_loads is not None:
        try:
            return _fast_loads(line)
        except ValueError:
            pass
    return json.loads(line.decode("utf-8"))


def _sample(samples: Path, number: int, line: bytes):
    try:
        return load_line(line)
    except UnicodeDecodeError as err:
        raise ReportError(f"{samples}: line {number}: not UTF-8 ({err.reason}); the samples file is damaged") from None
    except json.JSONDecodeError as err:
        raise ReportError(f"{samples}: line {number}: not JSON ({err.msg}); the samples file is damaged") from None


def _metrics_logged(samples: Path, task: str, metrics: dict) -> list:
    """The task's metrics the first sample has (a judge score only when the run had a judge)."""
    with open(samples, "rb") as handle:
        first = handle.readline()
    if not first.strip():
        raise ReportError(f"{samples}: no samples")
    sample = _sample(samples, 1, first)
    if not isinstance(sample, dict):
        raise ReportError(f"{samples}: line 1: not a JSON object")
    present = [m for m in metrics if m in sample]
    if not present:
        raise ReportError(f"{samples}: no score of {task} logged (an lm_eval --predict_only run?); rerun lm_eval "
                          "without --predict_only")
    return present


def _check_keys(samples: Path, keys: list):
    first = {}
    for number, (doc_id, doc_hash) in enumerate(keys, 1):
        if not isinstance(doc_id, int) or not isinstance(doc_hash, str):
            raise ReportError(f"{samples}: line {number}: doc_id / doc_hash are not an integer and a hash")
        if first.setdefault(doc_id, number) != number:
            raise ReportError(f"{samples}: line {number}: doc_id {doc_id} again (first on line {first[doc_id]}); "
                              "each document is logged once: the samples file is damaged")


def numbers(items: list, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-doc values as floats and the mask of those that are set (None: the doc has none, e.g. no knowledge)."""
    mask = np.array([item is not None for item in items], dtype=bool)
    try:
        values = np.array([0.0 if item is None else float(item) for item in items], dtype=float)
    except (TypeError, ValueError):
        raise ReportError(f"{where}: a per-document value is not a number") from None
    if not np.isfinite(values).all():
        raise ReportError(f"{where}: a per-document value is not finite")
    return values, mask
