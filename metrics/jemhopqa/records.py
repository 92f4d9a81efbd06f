"""Checking and pairing the inputs of the JEMHopQA metric.

A prediction is either a record ``{"qid", "answer", "derivations"}`` (either key may be left out: that part is
missing), paired with the reference of its qid and checked strictly, or a model's reply (a string, None or any
other object), paired with the reference at its position and read by ``replies.parse_reply``, which never
fails. References are dataset rows ``{"qid", "answer", "derivations", ...}``. Derivations are in the
upstream nested form ``[[subject, relation, [object, ...]], ...]``; the record form of the qahub builder
(``[{"subject", "relation", "objects"}, ...]``, or its dict-of-lists variant) is accepted too.

Every input is checked here, once (``checked``), and paired here (``pair``); the scoring modules trust them.
"""

from __future__ import annotations

import re
from collections import Counter

from .checks import record_id
from .replies import parse_reply

_SURROGATE = re.compile("[\ud800-\udfff]")


class JemhopqaInputError(ValueError):
    """Predictions or references that the official scorer could not score."""


def _shorten(values, limit=10) -> str:
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def upstream_derivations(derivations, where: str) -> list:
    """``derivations`` as ``[[subject, relation, [object, ...]], ...]``, or a JemhopqaInputError."""
    if isinstance(derivations, dict) and set(derivations) >= {"subject", "relation", "objects"}:
        columns = [derivations["subject"], derivations["relation"], derivations["objects"]]
        if not all(isinstance(column, list) for column in columns) or len({len(c) for c in columns}) != 1:
            raise JemhopqaInputError(f"{where}: derivations {derivations!r} must have lists of equal length")
        derivations = [list(step) for step in zip(*columns, strict=True)]
    if isinstance(derivations, tuple):
        derivations = list(derivations)
    if not isinstance(derivations, list):
        raise JemhopqaInputError(f"{where}: derivations must be a list of [subject, relation, [objects...]], "
                                 f"got {derivations!r}")
    if not all(_is_upstream_step(step) for step in derivations):  # else they are kept as they are: no copy
        derivations = [_step(step, where) for step in derivations]
    texts = [text for subject, relation, objects in derivations for text in (subject, relation, *objects)]
    if _SURROGATE.search("".join(texts)):  # one search per question; the loop below names the text
        for text in texts:
            check_text(text, where, "derivation element")
    return derivations


def _is_upstream_step(step) -> bool:
    return (type(step) is list and len(step) == 3 and type(step[0]) is str and type(step[1]) is str
            and type(step[2]) is list and all(type(obj) is str for obj in step[2]))


def _step(step, where: str) -> list:
    if isinstance(step, dict) and set(step) == {"subject", "relation", "objects"}:
        step = [step["subject"], step["relation"], step["objects"]]
    if _is_upstream_step(step):  # the builder's records, as datasets gives them, are checked here at once
        return step
    if isinstance(step, tuple):
        step = list(step)
    if not (isinstance(step, list) and len(step) == 3 and isinstance(step[0], str) and isinstance(step[1], str)):
        raise JemhopqaInputError(f"{where}: derivation step {step!r} must be [subject, relation, [objects...]] "
                                 "with string subject and relation")
    objects = step[2]
    if isinstance(objects, tuple):
        objects = list(objects)
    if not (isinstance(objects, list) and all(isinstance(obj, str) for obj in objects)):
        raise JemhopqaInputError(f"{where}: objects of derivation step {step!r} must be a list of strings")
    return [step[0], step[1], objects]


def check_text(text: str, where: str, what: str):
    """Lone surrogates (valid in JSON "\\ud800", not in UTF-8) cannot be stored or tokenized: name them."""
    found = _SURROGATE.search(text)
    if found:
        raise JemhopqaInputError(f"{where}: {what} {_clip(text)!r} holds a lone surrogate {found.group()!r} "
                                 "(not valid Unicode text)")


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


SOLVERS = ("assignment", "ilp")


def check_solver(solver):
    if solver not in SOLVERS:
        raise ValueError(f"solver must be 'assignment' or 'ilp', got {solver!r}")


def as_list(values, name: str) -> list:
    """``values`` (a list, a datasets.Dataset or any iterable) as a list; a string, bytes or a mapping is refused."""
    if values is None:
        return []
    if isinstance(values, (str, bytes, dict)):
        hint = " (convert the official {answer: {qid: ...}, derivations: {qid: ...}} format to records)"
        raise JemhopqaInputError(f"{name} must be a list (of records or replies), got {type(values).__name__}"
                                 + (hint if isinstance(values, dict) else ""))
    if hasattr(values, "to_list"):  # a datasets.Dataset: its rows at once
        return values.to_list()
    try:
        return list(values)
    except TypeError:
        raise JemhopqaInputError(f"{name} must be a list (of records or replies), "
                                 f"got {type(values).__name__}") from None


def checked(predictions, references) -> tuple[list, list]:
    """The checked predictions (records or ``{"reply": ...}``) and references (see the module)."""
    preds = [check_prediction(p, i) for i, p in enumerate(as_list(predictions, "predictions"))]
    refs = [check_reference(r, i) for i, r in enumerate(as_list(references, "references"))]
    return preds, refs


def check_prediction(record, index: int) -> dict:
    """A prediction record with its derivations in upstream form (keys absent stay absent: missing), or
    ``{"reply": text}`` for a reply (``text`` None when the reply is not a string)."""
    if not isinstance(record, dict):
        return {"reply": record if isinstance(record, str) else None}
    qid = record_id(record, "qid", f"prediction {index}", error=JemhopqaInputError)
    check_text(qid, f"prediction {index}", "qid")
    out = {"qid": qid}
    if "answer" in record:
        answer = record["answer"]
        out["answer"] = answer if isinstance(answer, str) else None  # non-strings score 0, as official
        if out["answer"] is not None:
            check_text(answer, f"prediction for qid {qid!r}", "answer")
    if "derivations" in record:
        out["derivations"] = upstream_derivations(record["derivations"], f"prediction for qid {qid!r}")
    return out


def check_reference(record, index: int) -> dict:
    qid, answer = _qid_and_answer(record, index, ("answer", "derivations"))
    return {"qid": qid, "answer": answer,
            "derivations": upstream_derivations(record["derivations"], f"reference for qid {qid!r}")}


def reference_answer(record, index: int) -> str:
    """The gold answer of reference ``index`` (a dataset row), checked as ``check_reference`` checks it; its
    derivations are not read: the answer task's target and scores need none."""
    return _qid_and_answer(record, index, ("answer",))[1]


def _qid_and_answer(record, index: int, keys: tuple) -> tuple:
    qid = record_id(record, "qid", f"reference {index}", "a dataset row", JemhopqaInputError)
    check_text(qid, f"reference {index}", "qid")
    missing = [key for key in keys if key not in record]
    if missing:
        raise JemhopqaInputError(f"reference for qid {qid!r}: missing {', '.join(missing)}")
    if not isinstance(record["answer"], str):
        raise JemhopqaInputError(f"reference for qid {qid!r}: 'answer' must be a string, got {record['answer']!r}")
    check_text(record["answer"], f"reference for qid {qid!r}", "answer")
    return qid, record["answer"]


def pair(predictions: list[dict], references: list[dict], ignore_missing: bool) -> list[tuple]:
    """``(qid, reference, prediction)`` in reference order: records by qid, replies by position. Unknown or
    repeated record qids, and a question given both a reply and a record, are errors; so are questions
    without an answer or derivations unless ``ignore_missing`` (then that part is skipped), and so is nothing
    to score: no references, or no question with a reply, derivations or a string answer."""
    records = [p for p in predictions if "reply" not in p]
    by_position = {i: _from_reply(p, i, references) for i, p in enumerate(predictions) if "reply" in p}
    counts = Counter(p["qid"] for p in records)
    repeated = [qid for qid, n in counts.items() if n > 1]
    if repeated:
        raise JemhopqaInputError(f"{len(repeated)} qid(s) predicted more than once: {_shorten(repeated)}")
    known = {r["qid"] for r in references}
    unknown = [qid for qid in counts if qid not in known]
    if unknown:
        raise JemhopqaInputError(f"{len(unknown)} predicted qid(s) are not in the references: {_shorten(unknown)}")
    twice = [p["qid"] for p in by_position.values() if p["qid"] in counts]
    if twice:
        raise JemhopqaInputError(f"{len(twice)} qid(s) predicted by both a reply and a record: {_shorten(twice)}")
    by_qid = {p["qid"]: p for p in records}
    questions = [(r["qid"], r, by_position.get(i) or by_qid.get(r["qid"], {})) for i, r in enumerate(references)]
    if not questions:
        raise JemhopqaInputError("nothing to score: there are no references")
    if not ignore_missing:
        _check_complete(questions)
    if not any(_predicted(pred) for _, _, pred in questions):
        raise JemhopqaInputError(f"nothing to score: none of the {len(questions)} questions has a predicted answer "
                                 "(a string) or derivations")
    return questions


def _predicted(pred: dict) -> bool:
    """A reply (even an unreadable one), derivations, or an answer that is a string; a null answer is not."""
    return "reply" in pred or "derivations" in pred or isinstance(pred.get("answer"), str)


def _from_reply(prediction: dict, index: int, references: list[dict]) -> dict:
    """A reply as a prediction record for the reference at its position; what could not be read scores 0:
    an unread answer is None, unread derivations are empty."""
    if index >= len(references):
        raise JemhopqaInputError(f"prediction {index} is a reply (not a record with a qid), but there are only "
                                 f"{len(references)} references: replies are paired with references by position")
    read = parse_reply(prediction["reply"])
    return {"qid": references[index]["qid"], "answer": read.answer, "derivations": read.derivations,
            "reply": prediction["reply"], "unparseable": read.answer is None,
            "derivations_unreadable": not read.derivations_read}


def _check_complete(questions):
    for part in ("answer", "derivations"):
        missing = [qid for qid, _, pred in questions if part not in pred]
        if missing:
            raise JemhopqaInputError(f"{len(missing)} question(s) have no predicted {part}: {_shorten(missing)} "
                                     "(pass ignore_missing=True, or --ignore-missing, to score only the predicted ones)")
