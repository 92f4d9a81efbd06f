"""``TaskSpec``: one lm-evaluation-harness / inspect task of a corpus, as its metric's ``task_api.TASKS`` declares it.

Kept once here and linked into each metric directory as ``task_spec.py`` (as ``direct_metric.py`` is), so that a
metric directory loads with ``evaluate.load(dir)`` without qahub installed; ``qahub.tasks`` re-exports it. Field
names follow lm-eval's task YAML (``test_split``/``fewshot_split``, ``until``, ``max_gen_toks``, ``metric_list``
with ``aggregation`` and ``higher_is_better``, ``target_delimiter``) and inspect's ``Task``. A wrong field name or
value is a ``TypeError``/``ValueError`` naming the field when the declaration is made, not when a run reads it.

A "doc" below is one document as lm-eval hands it to ``doc_to_text``: a row of the export's config (or of
``docs``' output).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

MAX_GEN_TOKS = 256  # lm-eval's default for generate_until (a task that sets no generation_kwargs gets it)
NOT_HEADLINE = ("unparseable", "abstained")  # shares of replies, never the metric a summary shows first


class Metric(NamedTuple):
    """One entry of lm-eval's ``metric_list``: how per-document values aggregate, and which way is better."""

    aggregation: str | Callable  # lm-eval's name ("mean") or a function of the list of per-document values
    higher_is_better: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class Grader:
    """How a harness's own grader model judges a reply (inspect's grader role): the task's judge prompts, sent
    one by one as a user message at temperature 0."""

    prompts: Callable  # (reply, doc) -> [prompt, ...]: the prompts one reply needs (none: nothing to judge)
    max_tokens: int  # the grader's generation limit per prompt
    grade: Callable  # (grader's completion) -> grade in [0, 1], or None when it holds none
    reduce: Callable  # ([grade or None, ...]) -> {judge metric: value} of the reply
    record: Callable  # (grader model) -> a JSON-able record of which judge graded (no credentials)

    def __post_init__(self):
        _callables(self, "prompts", "grade", "reduce", "record")
        _positive(self, "max_tokens")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """One task: what lm-eval's YAML and inspect's Task are written from, and how ``qahub report`` reads its runs.

    Sequences are kept as tuples and ``metrics``/``judge_metrics`` values as ``Metric``; a
    ``(aggregation, higher_is_better)`` pair is taken for a ``Metric``.
    """

    # --- data
    configs: tuple[str, ...]  # the export configs it runs on, in preference (the first the location has)
    splits: tuple[str, ...]  # evaluation splits, in preference (the first present with usable docs)
    fewshot_split: str | None = None  # where demonstrations come from (the evaluated split when it is absent)
    # (dataset, location, load=None, config_names=None, split_names=None) -> the docs of a split (lm-eval's
    # process_docs); a joined config is read with load(location, config, split), found with config_names(location)
    # and split_names(location, config): datasets' own functions when not given
    docs: Callable | None = None
    usable: Callable | None = None  # (doc) -> whether it holds its gold; a split with none is not scored
    doc_id: Callable | None = None  # (doc) -> its id, unique within a split; None (or it returns None): its position
    cluster: Callable | None = None  # (doc) -> its cluster (e.g. conversation): demonstrations come from others
    # breakdowns `qahub report` shows: field -> (doc) -> the doc's category
    categories: Mapping[str, Callable] = dataclasses.field(default_factory=dict)

    # --- prompt and generation
    prompt: Callable  # (doc) -> the prompt text (lm-eval's doc_to_text)
    target: Callable  # (doc) -> the gold reply (doc_to_target); a reply equal to it scores the oracle
    target_delimiter: str = " "  # between a demonstration's prompt and its target (lm-eval's default " ")
    fewshot_delimiter: str = "\n\n"  # after each demonstration (lm-eval's default)
    until: tuple[str, ...]  # stop sequences (lm-eval's generation_kwargs.until, inspect's stop_seqs)
    max_gen_toks: int = MAX_GEN_TOKS  # generated tokens at most (inspect's max_tokens)

    # --- scores
    score: Callable  # (reply, doc) -> {metric: per-document value} (lm-eval's process_results)
    metrics: Mapping[str, Metric]  # metric -> Metric(aggregation, higher_is_better), in the order reported
    headline: str = ""  # the metric a summary shows first; "" -> the first metric that is not in NOT_HEADLINE
    oracle: Mapping[str, float]  # metric -> its aggregate when every reply is the target (tests/test_harness.py)
    binary: tuple[str, ...] = ()  # metrics that are 0/1 per document (0/100 too): `qahub report` pairs them by McNemar
    # metric -> (low, high) its per-document values (so its aggregate) lie in, where neither its oracle (0 to the
    # oracle's value) nor `binary` says it: METEOR's (0, 1), distinct-n's (0, 1). ``range_of`` reads all three.
    ranges: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    bleu_of_statistics: Callable | None = None  # (summed BLEU statistics) -> BLEU: a report resamples corpus BLEU with it
    configuration: Callable | None = None  # () -> what the scorer runs with here (JSON-able; the YAML's metadata)

    # --- an LLM judge (LIMUR): lm-eval through an endpoint the environment names, inspect through its grader role
    # added to the metrics when a judge is used (judge / grader); same form as metrics
    judge_metrics: Mapping[str, Metric] = dataclasses.field(default_factory=dict)
    judge: Callable | None = None  # (reply, doc) -> {judge metric: value}, through the configured endpoint
    judge_filter: Callable | None = None  # (resps, docs) -> resps: lm-eval custom filter judging a run at once
    judge_record: Callable | None = None  # () -> which judge an lm-eval run uses (the YAML's metadata)
    judge_configured: Callable | None = None  # () -> whether the environment names a judge
    grader: Grader | None = None  # how a harness's own grader model judges (inspect)

    def __post_init__(self):
        for name in ("configs", "splits", "until", "binary"):
            _set(self, name, _strings(self, name, empty=name == "binary"))
        for name in ("metrics", "judge_metrics"):
            _set(self, name, _metrics(self, name, empty=name == "judge_metrics"))
        _callables(self, "prompt", "target", "score")
        _callables(self, "docs", "usable", "doc_id", "cluster", "bleu_of_statistics", "configuration", "judge",
                   "judge_filter", "judge_record", "judge_configured", optional=True)
        for field, category in self.categories.items():
            if not callable(category):
                raise TypeError(f"TaskSpec.categories[{field!r}]: not callable: {category!r}")
        _positive(self, "max_gen_toks")
        _str_fields(self, "target_delimiter", "fewshot_delimiter")
        if self.fewshot_split is not None:
            _str_fields(self, "fewshot_split")
        if self.grader is not None and not isinstance(self.grader, Grader):
            raise TypeError(f"TaskSpec.grader: not a Grader: {self.grader!r}")
        if (self.judge or self.grader) and not self.judge_metrics:
            raise ValueError("TaskSpec.judge_metrics: empty, though the task declares a judge or grader")
        self._check_names()

    def _check_names(self):
        """The metrics named by headline (set to its default here), oracle and binary are the task's."""
        if not self.headline:
            _set(self, "headline", next((m for m in self.metrics if m not in NOT_HEADLINE), ""))
            if not self.headline:
                raise ValueError(f"TaskSpec.headline: every metric is one of {', '.join(NOT_HEADLINE)}; name one")
        _known(self, "headline", [self.headline], self.metrics)
        if not self.oracle:
            raise ValueError("TaskSpec.oracle: empty; name what a reply equal to the target scores")
        _known(self, "oracle", self.oracle, self.metrics)
        _known(self, "binary", self.binary, {**self.metrics, **self.judge_metrics})
        _known(self, "ranges", self.ranges, {**self.metrics, **self.judge_metrics})
        for metric, bounds in self.ranges.items():
            if not (isinstance(bounds, tuple | list) and len(bounds) == 2
                    and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
                    and bounds[0] < bounds[1]):
                raise TypeError(f"TaskSpec.ranges[{metric!r}]: not a (low, high) pair of numbers, low < high: "
                                f"{bounds!r}")

    def range_of(self, metric: str) -> tuple[float, float] | None:
        """(low, high) of a metric's per-document values and so of its mean or BLEU, None where nothing bounds it
        (a sum, a score of no known range): the declared ``ranges``, else 0 to its oracle value where that is
        above 0 (the score of replies equal to the gold is the best), else 0 to 1 for a 0/1 metric."""
        if metric in self.ranges:
            low, high = self.ranges[metric]
            return float(low), float(high)
        oracle = self.oracle.get(metric)
        top = float(oracle) if isinstance(oracle, int | float) and oracle > 0 else None
        if metric in self.binary:
            return 0.0, top or 1.0
        return (0.0, top) if top else None


def _set(spec, name, value):
    object.__setattr__(spec, name, value)  # a frozen dataclass, normalised once as it is made


def _strings(spec, name, empty=False) -> tuple:
    value = getattr(spec, name)
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"TaskSpec.{name}: not a list of str: {value!r}")
    if not (value or empty):
        raise ValueError(f"TaskSpec.{name}: empty")
    return tuple(value)


def _str_fields(spec, *names):
    for name in names:
        if not isinstance(getattr(spec, name), str):
            raise TypeError(f"TaskSpec.{name}: not a str: {getattr(spec, name)!r}")


def _metrics(spec, name, empty=False) -> dict:
    if not (getattr(spec, name) or empty):
        raise ValueError(f"TaskSpec.{name}: empty")
    found = {}
    for metric, entry in getattr(spec, name).items():
        try:
            aggregation, higher = entry
        except (TypeError, ValueError):
            raise TypeError(f"TaskSpec.{name}[{metric!r}]: not an (aggregation, higher_is_better) pair: "
                            f"{entry!r}") from None
        if not (isinstance(aggregation, str) or callable(aggregation)) or not isinstance(higher, bool):
            raise TypeError(f"TaskSpec.{name}[{metric!r}]: aggregation must be a name or a function, "
                            f"higher_is_better a bool: {entry!r}")
        found[metric] = Metric(aggregation, higher)
    return found


def _callables(spec, *names, optional=False):
    for name in names:
        value = getattr(spec, name)
        if not (callable(value) or optional and value is None):
            raise TypeError(f"{type(spec).__name__}.{name}: not callable: {value!r}")


def _positive(spec, name):
    value = getattr(spec, name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{type(spec).__name__}.{name}: not a positive int: {value!r}")


def _known(spec, name, used, metrics):
    unknown = [m for m in used if m not in metrics]
    if unknown:
        raise ValueError(f"TaskSpec.{name}: unknown metric(s) {', '.join(map(repr, unknown))}; the task's metrics "
                         f"are {', '.join(metrics)}")


def is_task_spec(value: Any) -> bool:
    """Whether ``value`` is a ``TaskSpec``, from any copy of this file: each metric directory imports its own
    (``qahub.metrics.<metric>.task_spec``), so each has a distinct class object, and an ``isinstance`` against one
    would refuse the others; a dataclass named TaskSpec with exactly these fields is one."""
    kind = type(value)
    return (dataclasses.is_dataclass(value) and not isinstance(value, type) and kind.__name__ == "TaskSpec"
            and [f.name for f in dataclasses.fields(kind)] == [f.name for f in dataclasses.fields(TaskSpec)])
