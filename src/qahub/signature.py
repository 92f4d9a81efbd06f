"""The signature of a qahub score, in the spirit of sacreBLEU's ``Signature``: every setting behind a number.

A ``Signature`` names what a score was made of and with: qahub's version, the task and its version, the metric and
its scorer's settings (``TaskSpec.configuration``, declared by each corpus's ``task_api``), the dataset, config,
split and revision, the number of shots, a hash of the prompts sent, the harness and its version, the judge (of a
judge metric), and the documents scored (their count and a hash of their ids). A field is None when the run did
not record it: never guessed.

The harnesses log the fields known when a task is made (``LOGGED``: ``planning.logged_signature``) in their task
metadata (lm-eval's task YAML ``metadata.signature``, inspect's ``Task.metadata["qahub"]["signature"]``, every
lighteval details row's ``doc.specific["qahub_signature"]``); a report reader adds what the run's own files say
(shots, prompts, documents, harness version). ``COMPARED`` are the fields two runs must share for a starred
comparison: ``differences`` names those on which two signatures, both recorded, differ.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

# what must be equal for a starred comparison; the others are recorded only (pairing already handles documents)
COMPARED = ("task_version", "scorer", "dataset", "config", "split", "revision", "n_shot", "prompts", "judge")
# what a harness logs with its task, known when the task is made (the rest is read from the run's own files)
LOGGED = ("qahub", "task_version", "scorer", "dataset", "config", "split", "revision", "harness_version")
INTEGERS = ("n_shot", "documents")


@dataclass(frozen=True)
class Signature:
    """One score's settings; None: not recorded."""

    qahub: str | None = None  # qahub's version
    task: str | None = None
    task_version: str | None = None
    metric: str | None = None
    scorer: str | None = None  # the scorer's settings, ``scorer_text`` of the task's configuration()
    dataset: str | None = None  # a Hub id, or a local export folder's name
    config: str | None = None
    split: str | None = None
    revision: str | None = None  # a Hub commit, or ``sha256:...`` of a local export's files of the splits read
    n_shot: int | None = None
    prompts: str | None = None  # ``digest`` of the prompts sent, in document-id order
    harness: str | None = None  # lm-eval, inspect, lighteval, qahub evaluate
    harness_version: str | None = None
    judge: str | None = None  # ``judge_text`` of the judge's record, on a judge metric's signature
    documents: int | None = None
    documents_hash: str | None = None  # ``digest`` of the scored documents' ids, sorted

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            kind = int if field.name in INTEGERS else str
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise TypeError(f"Signature.{field.name}: not a {kind.__name__} or None: {value!r}")

    def format(self) -> str:
        """One line, sacreBLEU's way: ``qahub:0.1.0|task:qahub_limur|...``, the fields not recorded left out."""
        return "|".join(f"{key}:{value}" for key, value in self.to_dict().items() if value is not None)

    def to_dict(self) -> dict:
        """The JSON form: every field, None where not recorded."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Signature:
        """The signature of ``to_dict``'s form; an unknown field or a value of the wrong type is a ValueError."""
        unknown = set(data) - set(FIELDS)
        if unknown:
            raise ValueError(f"not a signature field: {', '.join(sorted(unknown))}")
        try:
            return cls(**data)
        except TypeError as err:
            raise ValueError(str(err)) from None

    def of_metric(self, metric: str, judged: bool = False) -> Signature:
        """This task signature for one of its metrics: the judge only on a metric the judge gave."""
        return dataclasses.replace(self, metric=metric, judge=self.judge if judged else None)


FIELDS = tuple(field.name for field in dataclasses.fields(Signature))


def differences(a: Signature | None, b: Signature | None, fields=COMPARED) -> list[str]:
    """The fields of ``fields`` both signatures record, with different values."""
    if a is None or b is None:
        return []
    return [name for name in fields
            if getattr(a, name) is not None and getattr(b, name) is not None and getattr(a, name) != getattr(b, name)]


def scorer_text(settings) -> str | None:
    """A scorer's settings as one short canonical string, ``key=value`` sorted by key and joined with ``,`` (a
    nested mapping's keys joined with ``.``, a list's items with ``+``); None for no settings."""
    if not settings:
        return None
    return ",".join(f"{key}={value}" for key, value in sorted(_flat(settings)))


def _flat(settings: dict, prefix: str = ""):
    for key, value in settings.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        elif isinstance(value, list | tuple):
            yield f"{prefix}{key}", "+".join(map(str, value))
        else:
            yield f"{prefix}{key}", "none" if value is None else str(value)


def judge_text(record) -> str | None:
    """The judge's record (URL without credentials, model, prompt, max tokens; or why none was usable) as one
    canonical string; None when there was no judge or it was not recorded."""
    return scorer_text(record) if isinstance(record, dict) else None


def digest(values) -> str:
    """A short sha256 of a JSON-able value (a list of prompt hashes, of document ids)."""
    text = json.dumps(values, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def documents_hash(ids) -> str:
    """The scored documents' ids, as a set: the same documents give the same hash in any order or harness."""
    return digest(sorted(map(str, ids)))


def prompts_hash(ids, prompts, kind) -> str | None:
    """The prompts sent (``kind``: what each per-document hash is of, e.g. ``text`` or ``messages``), in
    document-id order; None when any document's prompt was not recorded."""
    if prompts is None or any(p is None for p in prompts):
        return None
    return f"{kind}:{digest([p for _, p in sorted(zip(map(str, ids), prompts))])}"


def logged_fields(value) -> dict:
    """The ``LOGGED`` fields a run's metadata records (``planning.logged_signature``'s dict), each of the right
    type; anything else (an older run's metadata, a foreign value) records nothing."""
    if not isinstance(value, dict):
        return {}
    return {key: value[key] for key in LOGGED if isinstance(value.get(key), str)}


def run_signature(task: str, logged, *, harness: str, harness_version=None, n_shot=None, ids=(), prompts=None,
                  prompt_kind: str = "text", judge=None, task_version=None) -> Signature:
    """A task run's signature (``metric`` unset: ``of_metric`` gives each metric's) from what the run logged
    (``logged``: the harness's metadata) and read (its shots, prompts and documents)."""
    fields = logged_fields(logged)
    if task_version is not None:
        fields.setdefault("task_version", str(task_version))
    if harness_version is not None:
        fields["harness_version"] = str(harness_version)
    return Signature(task=task, harness=harness, n_shot=n_shot if isinstance(n_shot, int) else None,
                     prompts=prompts_hash(ids, prompts, prompt_kind), judge=judge_text(judge),
                     documents=len(ids), documents_hash=documents_hash(ids), **fields)
