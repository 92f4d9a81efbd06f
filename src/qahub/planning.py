"""What every harness runs a qahub task on: the plan of a task at a location, its documents and prompts.

A task's prompt, gold target, per-example scores and aggregations are its metric's own: the ``TASKS`` table
(``TaskSpec``s) of ``qahub.metrics.<metric>.task_api``, the code the ``evaluate`` metric scores with. This module
chooses the dataset config and splits a location has (``plan_tasks``), reads the documents fresh from the
export's files (``task_functions``), draws each document's few-shot demonstrations (``Demonstrations``) and makes
lm-eval's plain-text context of it (``prompts``). The three harness writers sit side by side on it: lm-eval's task
folders (``qahub.harness``), inspect's tasks (``qahub.inspect_tasks``) and lighteval's (``qahub.lighteval_tasks``),
so that one seed gives one prompt for a document in the three.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from qahub import tasks
from qahub.tasks import TaskSpec

logger = logging.getLogger(__name__)


class HarnessError(ValueError):
    """A task cannot be planned or run at a location (one line, whichever harness runs it)."""


def task_api(corpus: str):
    """The ``task_api`` module of the metric that declares ``CORPUS = corpus`` (``qahub.tasks``)."""
    try:
        return tasks.task_api(corpus)
    except tasks.TaskError as err:
        raise HarnessError(str(err)) from None


corpora, all_tasks = tasks.corpora, tasks.all_tasks  # what the harnesses have: every corpus whose tasks import


def plan_tasks(corpus: str, location) -> dict:
    """``{task: entry}``: the config, evaluation split and few-shot split each task of ``corpus`` uses there."""
    declared = task_api(corpus).TASKS
    location = resolve_location(location)
    available = configs(location)
    plan = {}
    for name, spec in declared.items():
        config = next((c for c in spec.configs if c in available), None)
        if config is None:
            raise HarnessError(f"{location}: has none of the configs task {name} runs on "
                               f"({', '.join(spec.configs)}); it has {', '.join(available) or 'none'}")
        present = splits(location, config)
        split = _eval_split(location, config, present, spec, name, corpus)
        fewshot = fewshot_split(spec, present, split)
        if fewshot != split:
            reference_rows(location, config, fewshot, corpus)  # a damaged few-shot shard stops here, not inside lm-eval
        if spec.docs:  # the configs its docs join (e.g. Topical-Chat's reading_sets) are read now too
            _reading(spec.docs, reference_rows(location, config, split, corpus), location, load=reference_rows)
        plan[name] = {"corpus": corpus, "location": location, "config": config, "split": split,
                      "fewshot_split": fewshot}
    return plan


def fewshot_split(spec: TaskSpec, present: list[str], split: str) -> str:
    """The task's own few-shot split where the export has it, else the evaluated split itself: lm-eval 0.4 leaves
    the document out of its own demonstrations only when ``fewshot_split`` equals ``test_split`` (without a
    ``fewshot_split`` it samples the test docs with no exclusion)."""
    return spec.fewshot_split if spec.fewshot_split in present else split


def resolve_location(location) -> str:
    """An existing folder as an absolute path; anything else must look like a Hub dataset id ``ORG/NAME``."""
    path = Path(str(location)).expanduser()
    if path.is_dir():
        if not (path / "README.md").is_file():
            raise HarnessError(f"{path}: not an exported corpus (no README.md); build one with `qahub build`")
        return str(path.absolute())
    if str(location).count("/") != 1 or str(location).startswith((".", "/")):
        raise HarnessError(f"{location}: neither a folder nor a Hub dataset id ORG/NAME")
    return str(location)


def configs(location: str) -> list[str]:
    from qahub.export import reader

    return _reading(reader.export_configs, location)


def splits(location: str, config: str) -> list[str]:
    from qahub.export import reader

    return _reading(reader.export_splits, location, config)


def reference_rows(location: str, config: str, split: str, corpus: str | None = None):
    """The rows of one split as a ``datasets.Dataset``, read as ``qahub evaluate`` reads them (from a folder:
    fresh from its shards, checked against its README, and against ``corpus``'s builder when given)."""
    from qahub.export import reader

    return _reading(reader.export_dataset, location, config, split, what="an exported corpus", corpus=corpus)


def _reading(read, *args, **kwargs):
    """``read(...)``, its one-line errors as HarnessErrors."""
    try:
        return read(*args, **kwargs)
    except (ValueError, OSError) as err:
        raise HarnessError(str(err)) from None


def _eval_split(location: str, config: str, present: list[str], spec: TaskSpec, name: str, corpus: str) -> str:
    """The first preferred split present whose rows have gold (``usable``), e.g. LIMUR's test only when open."""
    candidates = [s for s in spec.splits if s in present]
    for split in candidates:
        rows = reference_rows(location, config, split, corpus)  # read even when not needed: a damaged shard stops here
        if spec.usable is None or any(spec.usable(row) for row in rows):
            return split
    raise HarnessError(f"{location}: config {config} has no split with gold answers for task {name} "
                       f"(tried {', '.join(candidates) or 'none'} of {', '.join(present)})")


def task_metrics(spec: TaskSpec, judge: bool) -> dict:
    return {**spec.metrics, **spec.judge_metrics} if judge else dict(spec.metrics)


TASK_VERSION = 1.0  # the version of every qahub task (lm-eval's YAML metadata.version, the signature's task_version)


def logged_signature(spec: TaskSpec, location: str, config: str | None, split: str | None,
                     harness_version: str | None = None) -> dict:
    """The signature fields a harness logs with a task when it is made (``qahub.signature.LOGGED``): qahub's and
    the task's versions, the scorer's settings (``TaskSpec.configuration``), the dataset, config, split and
    revision read, and the harness's version where the harness's own files do not keep it."""
    from qahub import __version__, signature

    found = {"qahub": __version__, "task_version": str(TASK_VERSION),
             "scorer": signature.scorer_text(spec.configuration() if spec.configuration else None),
             "dataset": dataset_name(location), "config": config, "split": split, "revision": revision(location),
             "harness_version": harness_version}
    return {key: value for key, value in found.items() if value is not None}


def dataset_name(location: str) -> str:
    """A Hub id as it is; a local export folder by its name (its path is the machine's, not the data's)."""
    path = Path(str(location))
    return path.name if path.is_dir() else str(location)


def revision(location: str) -> str | None:
    """A local export's revision: ``sha256:`` of its README and data files (each one's path and bytes), so that
    a rebuilt export with other rows has another; None for a Hub id (the commit read is not known here)."""
    import hashlib

    from qahub.export.reader import DATA_FILES

    folder = Path(str(location))
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and (p.name == "README.md" or
                                                                        p.suffix in DATA_FILES)):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()[:16]


def task_functions(corpus: str, name: str, location: str, judge: bool = False, config: str | None = None,
                   splits: tuple = ()) -> SimpleNamespace:
    """The functions of one task bound to one dataset location, which each harness hands its documents and
    replies to (lm-eval's generated ``utils.py``, inspect's and lighteval's tasks); ``dataset()`` reads ``splits``
    of ``config`` there."""
    spec = task_api(corpus).TASKS[name]
    metrics = task_metrics(spec, judge)
    if judge and spec.judge and spec.judge_configured and not spec.judge_configured():
        logger.warning("%s: the task reports judge_score but no judge is set (QAHUB_JUDGE_URL and _MODEL, or "
                       "LM_EVAL_JUDGE_API_BASE and LM_EVAL_JUDGE_MODEL): every judge_score will be 0", name)
    scorers = [spec.score] + ([spec.judge] if judge and spec.judge else [])

    def process_results(doc, results):
        reply = results[0] if results else ""
        values = {}
        for score in scorers:
            values.update(score(reply, doc))
        return {metric: values[metric] for metric in metrics}

    def process_docs(dataset):
        return spec.docs(dataset, location, load=reference_rows)  # joined configs read fresh too

    def dataset(**_metadata):  # lm-eval's custom_dataset hook; it passes the task's metadata, unused here
        return {split: reference_rows(location, config, split, corpus) for split in dict.fromkeys(splits)}

    aggregate = {m: finite(a) for m, (a, _) in metrics.items() if not isinstance(a, str)}
    return SimpleNamespace(doc_to_text=spec.prompt, doc_to_target=spec.target, process_docs=process_docs,
                           process_results=process_results, aggregate=aggregate, dataset=dataset,
                           judge_filter=spec.judge_filter,
                           judge_record=spec.judge_record if judge else None,
                           cluster=spec.cluster,
                           signature=lambda harness_version=None: logged_signature(
                               spec, location, config, splits[0] if splits else None, harness_version))


def finite(aggregation):
    """An aggregation whose result is checked: a NaN or infinite aggregate is a bug in qahub, not a score."""
    def aggregate(items):
        value = float(aggregation(items))
        if not math.isfinite(value):
            raise RuntimeError(f"{getattr(aggregation, '__name__', aggregation)} aggregated to {value}")
        return value

    aggregate.__name__ = getattr(aggregation, "__name__", "aggregate")
    return aggregate
def before_stop(text: str, until) -> str:
    """The reply as lm-eval keeps it: cut at each of the task's stop sequences in turn (lm-eval's
    ``postprocess_generated_text``). inspect's ``hf/`` provider stops generating at a stop sequence but keeps it
    and the rest of its token in the completion; lighteval keeps no stop sequence from a chat model's reply."""
    for term in until:
        if term:
            text = text.split(term)[0]
    return text


def finite_mean(values) -> float:
    """lm-eval's ``mean`` aggregation."""
    values = list(values)
    return sum(values) / len(values)


def task_entry(corpus: str, name: str, dataset: str, config: str | None, split: str | None) -> dict:
    """The task's plan at ``dataset`` (``plan_tasks``), with ``config`` / ``split`` when given: a config
    the location has, a split that config has; the few-shot split chosen for them as lm-eval's task would."""
    entry = plan_tasks(corpus, dataset)[name]
    if config is None and split is None:
        return entry
    spec = task_api(corpus).TASKS[name]
    location = entry["location"]
    config = config or entry["config"]
    available = configs(location)
    if config not in available:
        raise HarnessError(f"{location}: has no config {config!r} (it has {', '.join(available)})")
    present = splits(location, config)
    if split is None:
        split = entry["split"] if config == entry["config"] else next(
            (s for s in spec.splits if s in present), None)
    if split not in present:
        raise HarnessError(f"{location}: config {config} has no split {split!r} for task {name} "
                                   f"(it has {', '.join(present)})")
    return {**entry, "config": config, "split": split,
            "fewshot_split": fewshot_split(spec, present, split)}


def task_docs(spec: TaskSpec, functions, rows) -> list[dict]:
    return list(functions.process_docs(rows) if spec.docs else rows)


def refuse_closed(spec: TaskSpec, docs: list, entry: dict):
    """A split none of whose documents has its gold (``usable``; MERA's public LIMUR test) has nothing to score."""
    if spec.usable is None or any(spec.usable(doc) for doc in docs):
        return
    others = [s for s in spec.splits if s != entry["split"]]
    advice = f"score {others[0]}" if others else "score another split"
    raise HarnessError(f"nothing to score: the {entry['split']} answers are closed in this file; "
                               f"{advice}, or pass the open answers")


@dataclass(frozen=True)
class Prompt:
    """One document as every harness asks it: its id, lm-eval's plain-text context (``input``), the gold target."""

    id: str
    input: str
    target: str
    doc: dict


def prompts(spec: TaskSpec, docs: list, shots: list, fewshot: int, rnd, same_split: bool) -> list[Prompt]:
    """The Prompt of every document, in document order, with ``fewshot`` demonstrations drawn from ``shots``
    (``Demonstrations``; ``same_split``: the shots are the evaluated split) by ``rnd``; ids are unique."""
    if fewshot and len(shots) < fewshot:
        raise HarnessError(f"fewshot={fewshot}: the few-shot split has only {len(shots)} document(s)")
    demonstrations = Demonstrations(shots, spec.cluster)
    made, seen = [], {}
    for index, doc in enumerate(docs):
        try:
            shown = demonstrations.draw(rnd, fewshot, doc if same_split else None)
        except HarnessError as err:
            raise HarnessError(f"fewshot={fewshot}: document {index}: {err}") from None
        prompt_id = tasks.document_id(spec, doc, index)
        if prompt_id in seen:
            raise HarnessError(f"document {index}: id {prompt_id!r} is also document {seen[prompt_id]}'s")
        seen[prompt_id] = index
        made.append(Prompt(prompt_id, context(spec, shown, doc), spec.target(doc), doc))
    return made


def context(spec: TaskSpec, shots: list, doc: dict) -> str:
    """lm-eval's plain-text context: each demonstration's prompt, target delimiter, target and few-shot
    delimiter, then the document's prompt."""
    between, after = spec.target_delimiter, spec.fewshot_delimiter
    return "".join(spec.prompt(s) + between + spec.target(s) + after for s in shots) + spec.prompt(doc)


class Demonstrations:
    """The few-shot demonstrations of each document, drawn from ``pool`` as lm-eval's default ``ContextSampler``
    draws them (``rnd.sample`` of n; of n + 1 with the document left out when the pool is the evaluated split),
    except that with a ``cluster`` (a task's ``cluster``: the conversation a turn belongs to) every document of
    the document's cluster is left out: a later turn of the same conversation holds the document's gold reply in
    its history. lm-eval (``lm_eval_sampler``) and inspect draw with this one class, so one seed gives one draw."""

    def __init__(self, pool, cluster=None):
        self.pool = list(pool)
        self.cluster = cluster
        self.clusters = [cluster(doc) for doc in self.pool] if cluster else [None] * len(self.pool)
        self.sizes = Counter(self.clusters)

    def draw(self, rnd, n: int, doc=None) -> list:
        """``n`` demonstrations; ``doc``: the evaluated document when the pool is its own split, else None."""
        if n == 0:
            return []
        if doc is None:
            return rnd.sample(self.pool, n)
        own = self.cluster(doc) if self.cluster else None

        def allowed(index):
            return (own is None or self.clusters[index] != own) and self.pool[index] != doc

        extra = 1 + (self.sizes[own] if own is not None else 0)  # room for the document and its cluster
        picks = [i for i in rnd.sample(range(len(self.pool)), min(n + extra, len(self.pool))) if allowed(i)][:n]
        if len(picks) < n:  # copies of the document beyond its cluster: draw again without them (as lm-eval)
            rest = [i for i in range(len(self.pool)) if allowed(i)]
            if len(rest) < n:
                beside = "the document" if own is None else f"the document's cluster {own!r}"
                raise HarnessError(f"the few-shot split has only {len(rest)} document(s) besides {beside}")
            picks = rnd.sample(rest, n)
        return [self.pool[i] for i in picks]
