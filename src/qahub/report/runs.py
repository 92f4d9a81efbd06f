"""What every reader of runs shares: the ``TaskRun`` and ``Run`` types, the task's metrics and how a report
resamples them, and small helpers of the lm-eval and lighteval readers. The readers themselves are
``lm_eval_runs``, ``inspect_logs`` and ``lighteval_runs``; ``sources`` picks one for each run."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from qahub.signature import Signature

try:  # the report extra's JSON parser: the samples files are most of a report's time
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - without the extra, json alone
    _fast_loads = None

RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
# how a run sent each prompt (TaskRun.prompt_format)
RAW, CHAT, TEMPLATE = "raw text", "chat messages", "chat template applied"


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
    bounded: bool = False  # every per-document value lies in [0, scale] (0/1, or the task declares its range)
    range: tuple = None  # (low, high) the metric lies in (``TaskSpec.range_of``), None where nothing bounds it


@dataclass(frozen=True)
class Texts:
    """What each document was sent and what came back, as the harness logged it, a list per field in the
    ``TaskRun``'s document order: read with the numbers, in the same one pass over the samples file."""

    prompts: list  # the prompt as sent, as text ("" when not logged)
    targets: list  # the reference(s) of each document: a list of texts
    replies: list  # the model's reply (inspect: its first epoch's)
    answers: list  # the answer that was scored: lm-eval's filtered reply, inspect's scorer answer, lighteval's
    # post-processed text (the reply where none was extracted)


@dataclass(frozen=True)
class Document:
    """One document of a ``TaskRun`` (``TaskRun.documents``): its ids, texts, cluster and per-document values."""

    id: object  # the task's document id (``tasks.document_id``)
    key: tuple  # (doc_id, doc_hash): lm-eval's; inspect's (id, None)
    prompt: str
    targets: list
    reply: str
    answer: str
    cluster: object  # None when the task declares none
    scores: dict  # metric -> the document's item (a number, None, a BLEU pair, a distinct-n text)


@dataclass(frozen=True)
class TaskRun:
    """One task of one run as its harness logged it, read once (one pass over its samples, log or details):
    the harness's point values, each document's ids, categories, cluster, per-metric items, prompt hash and
    texts (``documents``), and how the run was made. The report, its ranking, the Hub files and the Every Eval
    Ever rows all read this one object."""

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
    prompts: list = None  # a hash of the prompt sent for each doc (``prompt_hash``), None when not recorded
    prompt_format: str = None  # how the prompts were sent: RAW, CHAT or TEMPLATE; None when not recorded
    prompt_hashed: str = None  # what ``prompts`` hash: "text" (the prompt as sent) or "messages" (role + content)
    epochs: int = 1  # inspect: the epochs each document ran
    reducer: str = None  # inspect: the epochs reducer that made each document's numbers (inspect's log name)
    signature: Signature = None  # the task's signature as the run recorded it (``Signature.of_metric``: a metric's)
    texts: Texts = None  # each document's prompt, targets, reply and scored answer; None when not read
    prompts_unknown: str = None  # why the reader could not know the prompts sent ("not recorded by lighteval"):
    # the pairing then says the prompts were not compared, never that they differ (None: known, or not read)

    def documents(self) -> list[Document]:
        """Each document as one record, in the run's order (``texts`` empty where they were not read)."""
        texts = self.texts or Texts([""] * len(self.keys), [[]] * len(self.keys), [""] * len(self.keys),
                                    [""] * len(self.keys))
        clusters = self.clusters or [None] * len(self.keys)
        return [Document(self.ids[i] if self.ids else key[0], key, texts.prompts[i], texts.targets[i],
                         texts.replies[i], texts.answers[i], clusters[i], {m: v[i] for m, v in self.items.items()})
                for i, key in enumerate(self.keys)]


@dataclass
class Run:
    name: str
    path: str
    model: str
    results_file: str  # the newest results file read (the log, for inspect)
    results: dict = field(default_factory=dict, repr=False)  # the results file's contents
    samples: dict = field(default_factory=dict)  # task -> its samples file
    tasks: dict = field(default_factory=dict)  # task -> TaskRun, read when that task is reported (``with_task``)
    results_files: list = field(default_factory=list)  # every results file a task was read from
    run_ids: dict = field(default_factory=dict)  # task -> the id the harness recorded for its eval (inspect's)
    files: dict = field(default_factory=dict, repr=False)  # path -> {"bytes", "sha256"} of each file read
    harness: ClassVar[str] = ""  # what wrote the run: each harness's Run subclass says its own

    def recorded_ids(self) -> dict:
        """``{task: what identifies the eval that made it}`` as the harness recorded it (a copy of the run, e.g. its
        published details, records the same)."""
        return dict(self.run_ids)

    def with_task(self, task: str, spec, texts: bool = True) -> Run:
        """This run with ``task``'s samples read (without ``texts``, not its documents' texts: only the Hub files
        use them)."""
        return replace(self, tasks={task: self.read(task, spec, texts)})

    def read(self, task: str, spec, texts: bool = True) -> TaskRun:
        """``task``'s samples, read with this harness's reader."""
        raise NotImplementedError


@dataclass
class ResultsRun(Run):
    """A run whose tasks come from results files (lm-eval, lighteval): ``sources`` maps each task to the newest
    results file holding it and that file's contents; ``reader`` is the harness's reader of one task,
    ``reader(task, samples, results, spec, results_name, texts)``."""

    sources: dict = None  # task -> (results file, its contents)
    reader: ClassVar = None

    def recorded_ids(self) -> dict:
        """lm-eval's ``date`` (and start and end times) of the results file each task came from; lighteval's
        ``config_general`` start and end times."""
        found = {}
        for task, (_, results) in (self.sources or {}).items():
            general = results.get("config_general") if isinstance(results.get("config_general"), dict) else {}
            when = tuple(place.get(key) for place in (results, general) for key in ("date", "start_time", "end_time"))
            if any(isinstance(value, int | float) and not isinstance(value, bool) for value in when):
                found[task] = (self.harness, *when)
        return found

    def read(self, task: str, spec, texts: bool = True) -> TaskRun:
        file, results = self.sources[task]
        task_run = type(self).reader(task, self.samples[task], results, spec, str(file), texts)
        if len(self.results_files) > 1:
            note = f"read from {file.name}, the newest of its results files holding {task}"
            task_run = replace(task_run, notes=[*task_run.notes, note])
        return task_run


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
    from qahub import tasks  # here: render, reading report.json alone, needs no task

    return tasks.all_tasks()


def task_metrics(spec) -> dict:
    """``{name: Metric}`` of a task's ``TaskSpec``: its metrics and judge metrics, with how a report resamples each."""
    metrics = {}
    for name, (aggregation, _) in {**spec.metrics, **spec.judge_metrics}.items():
        how = aggregation if isinstance(aggregation, str) else getattr(aggregation, "__name__", "")
        if how not in KINDS:
            raise ReportError(f"metric {name}: no resampling known for its aggregation {how!r}")
        kind = KINDS[how]
        # a metric the task declares 0/1 per document (0/100 for doc2dial's exact): McNemar's test compares them;
        # a sum of bounded values is not bounded
        bounds = spec.range_of(name) if kind != "sum" else None
        scale = bounds[1] if bounds and bounds[0] == 0 else 1.0
        metrics[name] = Metric(name, kind, name in spec.binary, int(how[-1]) if kind == "distinct" else 0,
                               spec.bleu_of_statistics if kind == "bleu" else None, float(scale),
                               bounds is not None and bounds[0] == 0, bounds)
    return metrics


def parse_run_argument(text: str) -> tuple[str | None, Path]:
    name, sep, path = text.partition("=")
    if sep and name and not Path(text).exists():
        return name, Path(path)
    return None, Path(text)


def load_json(path: Path):
    """The value of a JSON file; a file that is not JSON is one line naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"{path}: not a JSON file: {err}") from None


def aggregates(scores: dict, present: list, where: str, key=str) -> dict:
    """Each metric's value over all documents, from a results file's ``scores`` (``key(metric)`` its name there):
    a missing one, or one that is not a number, is an error naming ``where``."""
    values = {}
    for metric in present:
        value = scores.get(key(metric))
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ReportError(f"{where} has no number {key(metric)!r}")
        values[metric] = finite(float(value), where, key(metric))
    return values


def finite(value: float, where: str, metric: str) -> float:
    """``value``, or the one-line refusal of a NaN or infinite aggregate (a score never ranked or starred)."""
    if not math.isfinite(value):
        raise ReportError(f"{where}: {metric} is {value}, not a finite number; a report ranks and compares no such "
                          "score: run the task again, or correct the results file")
    return value


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


def skipped(run: str, task: str, reason: str) -> dict:
    """One entry of a report's ``skipped``: a task of a run that is not reported, and why."""
    return {"run": run, "task": task, "reason": reason}


def add_samples(run: Run, found: list, specs: dict, kind: str, rerun: str, check=None) -> list:
    """``run.samples[task] = file`` for each ``(key, task, file, results file)`` of ``found`` whose task is a
    qahub task (``key``: the task as the results file names it; ``file``: its samples, an error saying ``rerun``
    when missing), after ``check(task)``. Returns ``(key, reason)`` of the other tasks. Shared by the lm-eval and
    lighteval readers."""
    left = []
    for key, task, samples, source in sorted(found):
        if task not in specs:
            left.append((key, "not a qahub task"))
            continue
        if task in run.samples:
            raise ReportError(f"{source}: task {task} ran with two numbers of shots; report one of them per run")
        if check:
            check(task)
        if not samples.is_file():
            raise ReportError(f"{source}: task {key} has no {kind} file {samples.name}; {rerun}")
        run.samples[task] = samples
    if not run.samples:
        names = sorted({key for key, *_ in found})
        raise ReportError(f"{run.results_file}: holds no qahub task (it has {', '.join(names) or 'none'})")
    return left


def newest_holding(files: list, tasks_of) -> dict:
    """``{task: file}``: each task of the results ``files`` from the newest file that holds it (``tasks_of(file)``:
    the tasks a file holds; file names ``results_<date>.json`` sort by date)."""
    chosen = {}
    for file in sorted(files, key=lambda p: RESULTS.match(p.name)["date"]):
        chosen.update(dict.fromkeys(tasks_of(file), file))
    return chosen


def first_text(value) -> str:
    """The first text of a logged reply (a list, or a list of lists, of texts): "" for none."""
    while isinstance(value, list):
        value = value[0] if value else ""
    return "" if value is None else str(value)


def prompt_hash(prompt) -> str:
    """A short hash of one prompt: a text, or chat messages as ``[(role, content), ...]``; None for no prompt."""
    if prompt is None:
        return None
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
