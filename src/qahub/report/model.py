"""The report's typed model: a ``TaskReport`` per task, its scores and breakdowns as ``Cell``s, its comparisons
(with the baseline, and the leader's) as ``Comparison``s. ``build`` makes each ``TaskReport`` once, when every
decision about it is made (the multiple-test adjustment and the best run included); report.json is its
``to_json`` and nothing else, and ``from_json`` reads a saved one back to the same objects (``to_json`` of what
``from_json`` read is the JSON it read, key for key and in the same order)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

REPORT_KEYS = ("main_metric", "scores", "breakdown", "comparisons", "notes", "warnings", "best", "caveats",
               "not_compared", "ranges", "cluster", "intervals", "run_facts", "ranking", "leader")


@dataclass(frozen=True)
class Cell:
    """A score: its value, interval (``[None, None]``: none, and ``no_interval`` says why) and count; a flat
    cell's effective sample size and interval method; a run's score (not a breakdown's) its metric's signature."""

    value: float | None
    ci: tuple
    n: int
    n_effective: float | None = None  # a cell every value of which is the same: Clopper-Pearson's n
    method: str | None = None  # that cell's interval method (the others': their metric's, ``TaskReport.intervals``)
    no_interval: str | None = None
    signed: bool = False  # a run's score: ``signature`` is written (None where the run recorded none)
    signature: dict | None = None

    def to_json(self) -> dict:
        found = {"value": self.value, "ci": list(self.ci), "n": self.n}
        found.update(_set(self, "n_effective", "method", "no_interval"))
        if self.signed:
            found["signature"] = self.signature
        return found

    @classmethod
    def from_json(cls, data: dict) -> Cell:
        return cls(data["value"], tuple(data["ci"]), data["n"], data.get("n_effective"), data.get("method"),
                   data.get("no_interval"), "signature" in data, data.get("signature"))


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of one metric: the difference (run minus reference), its interval, the test, its p and
    adjusted p, the units it stands on, the minimum detectable difference, and the star and why it is withheld;
    a comparison with the baseline also the documents each run scored (``paired_of``)."""

    delta: float | None
    ci: tuple
    p: float | None
    p_holm: float | None
    p_bh: float | None
    test: str | None
    n: int
    units: int
    mde: float | None
    mde_note: str | None
    underpowered: str | None
    star: bool
    no_star: str | None
    no_interval: str | None = None
    paired_of: dict | None = None

    def to_json(self) -> dict:
        found = {f.name: getattr(self, f.name) for f in fields(self)[:13]}
        found["ci"] = list(self.ci)
        found.update(_set(self, "no_interval", "paired_of"))
        return found

    @classmethod
    def from_json(cls, data: dict) -> Comparison:
        return cls(**{**data, "ci": tuple(data["ci"])})


@dataclass(frozen=True)
class TaskReport:
    """One task's report: every run's ``Cell``s and their breakdowns by category, the ``Comparison``s with the
    baseline and the leader's, and what the pages say beside them (notes, warnings, caveats, each metric's range
    and interval method, the clusters, each run's facts, the ranking)."""

    main_metric: str
    scores: dict  # run -> metric -> Cell
    breakdown: dict  # field -> category -> run -> metric -> Cell
    comparisons: dict  # run -> metric -> Comparison (the run against the baseline)
    notes: list
    warnings: list
    best: str | None
    caveats: dict  # run -> why it is not like with like the baseline
    not_compared: dict  # run -> why it is not compared
    ranges: dict  # metric -> [low, high], None where nothing bounds it
    cluster: dict  # the cluster field and each run's clusters, documents and design effects
    intervals: dict  # metric -> how its intervals are made
    run_facts: dict  # run -> what it read and how
    ranking: dict | None
    leader: dict | None = field(default=None)  # {"run", "against": {run: Comparison}} (the run minus the leader)

    def to_json(self) -> dict:
        found = {key: getattr(self, key) for key in REPORT_KEYS}
        found["scores"] = _cells(self.scores, 1, Cell.to_json)
        found["breakdown"] = _cells(self.breakdown, 3, Cell.to_json)
        found["comparisons"] = _cells(self.comparisons, 1, Comparison.to_json)
        if self.leader is not None:
            found["leader"] = {**self.leader, "against": _cells(self.leader["against"], 0, Comparison.to_json)}
        return found

    @classmethod
    def from_json(cls, data: dict) -> TaskReport:
        if list(data) != list(REPORT_KEYS):
            raise ValueError(f"not a task of a qahub report: its keys are {', '.join(data)}")
        found = dict(data)
        found["scores"] = _cells(data["scores"], 1, Cell.from_json)
        found["breakdown"] = _cells(data["breakdown"], 3, Cell.from_json)
        found["comparisons"] = _cells(data["comparisons"], 1, Comparison.from_json)
        if data["leader"] is not None:
            found["leader"] = {**data["leader"], "against": _cells(data["leader"]["against"], 0,
                                                                   Comparison.from_json)}
        return cls(**found)

    def with_notes(self, notes: list) -> TaskReport:
        """This report with ``notes`` added (what the Hub files left out, said where the task is)."""
        from dataclasses import replace

        return replace(self, notes=[*self.notes, *notes])


def _set(item, *names) -> dict:
    """``{name: value}`` of the optional fields that are set (None: not written)."""
    return {name: getattr(item, name) for name in names if getattr(item, name) is not None}


def _cells(tree: dict, depth: int, make) -> dict:
    """``tree`` (nested ``depth`` + 1 levels of dicts, cells at the bottom) with ``make`` applied to each cell."""
    if depth == 0:
        return {key: make(value) for key, value in tree.items()}
    return {key: _cells(value, depth - 1, make) for key, value in tree.items()}


def report_json(data: dict) -> dict:
    """The report as report.json holds it: ``data`` with each ``TaskReport`` written as its ``to_json``."""
    return {**data, "tasks": {task: report.to_json() for task, report in data["tasks"].items()}}
