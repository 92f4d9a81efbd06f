"""The one place where the metric's inputs are checked: predictions, references and the keyword arguments of
compute. What passes is ready to score (``examples``) or to store as JSON in evaluate's cache (``encode``)."""

import sys

from .turns import check_conversation, check_reading_set, examples_of

_FORMS = "a gold string, a conversation row (with 'turns') or a turn example (with 'history' and 'response')"
OPTIONS = ("knowledge", "reading_sets", "per_example")


def check_options(kwargs):
    """The keyword arguments of compute, checked: ``{"knowledge", "reading_sets" (an index), "per_example"}``."""
    unknown = sorted(set(kwargs) - set(OPTIONS))
    if unknown:
        raise ValueError(f"topical_chat: unknown keyword arguments {unknown}")
    per_example = kwargs.get("per_example", False)
    if not isinstance(per_example, bool):
        raise ValueError(f"topical_chat: per_example must be True or False, got {per_example!r}")
    knowledge = kwargs.get("knowledge")
    if knowledge is not None and not isinstance(knowledge, (list, tuple)):
        raise ValueError(f"topical_chat: knowledge must be a list with one text (or None) per prediction, "
                         f"got {type(knowledge).__name__}")
    bad = next((i for i, k in enumerate(knowledge or ()) if k is not None and not isinstance(k, str)), None)
    if bad is not None:
        raise ValueError(f"topical_chat: knowledge[{bad}] must be a string or None, got {knowledge[bad]!r}")
    return {"knowledge": knowledge, "reading_sets": _reading_index(kwargs.get("reading_sets")),
            "per_example": per_example}


def _reading_index(rows):
    """``{conversation_id: reading-set row}`` of the reading_sets keyword, or None."""
    if rows is None:
        return None
    index = {}
    for i, row in enumerate(_as_list(rows, "reading_sets")):
        check_reading_set(row, f"topical_chat: reading_sets[{i}]")
        index[row["conversation_id"]] = row
    return index


def _as_list(values, name):
    # a Dataset comes from an imported `datasets`: a caller handing lists (qahub evaluate) never imports it (~1 s)
    datasets = sys.modules.get("datasets")
    if datasets is not None and isinstance(values, datasets.Dataset):
        return values.to_list()
    if datasets is not None and isinstance(values, datasets.IterableDataset):
        return list(values)
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"topical_chat: {name} must be a list (or a Dataset), got {type(values).__name__}")
    return list(values)


def encode(predictions, references):
    """``(kind, predictions, references)``, checked: replies that are not strings replaced by None (they are
    unparseable), prediction records checked; plain data, ready for JSON."""
    refs = _as_list(references, "references")
    preds = _as_list(predictions, "predictions")
    kind = _kind(refs)
    for i, ref in enumerate(refs):
        _check_reference(kind, ref, i)
    if kind == "conversation":
        return kind, [_record(p, i) for i, p in enumerate(preds)], refs
    if len(preds) != len(refs):
        raise ValueError(f"topical_chat: {len(preds)} predictions for {len(refs)} references "
                         f"(one per reference unless the references are conversation rows)")
    return kind, [_storable(p) for p in preds], refs


def _kind(refs):
    kinds = [_kind_of(ref, i) for i, ref in enumerate(refs)]
    for i, kind in enumerate(kinds):
        if kind != kinds[0]:
            raise ValueError(f"topical_chat: references[{i}] is a {kind} but references[0] is a {kinds[0]}: give "
                             f"references of one kind")
    return kinds[0] if kinds else "text"


def _kind_of(ref, i):
    if isinstance(ref, str):
        return "text"
    if isinstance(ref, dict) and "turns" in ref:
        return "conversation"
    if isinstance(ref, dict) and "history" in ref and "response" in ref:
        return "example"
    raise ValueError(f"topical_chat: references[{i}] must be {_FORMS}, got {ref!r:.200}")


def _check_reference(kind, ref, i):
    where = f"topical_chat: references[{i}]"
    if kind == "conversation":
        check_conversation(ref, where)
    elif kind == "example":
        if not isinstance(ref["response"], str):
            raise ValueError(f"{where}: 'response' must be a string, got {ref['response']!r}")
        if not isinstance(ref["history"], list):
            raise ValueError(f"{where}: 'history' must be a list, got {ref['history']!r:.200}")
        if ref.get("knowledge") is not None and not isinstance(ref["knowledge"], str):
            raise ValueError(f"{where}: 'knowledge' must be a string or None, got {ref['knowledge']!r:.200}")


def _storable(reply):
    return reply if isinstance(reply, str) else None


def _record(prediction, i):
    turn = prediction.get("turn_index") if isinstance(prediction, dict) else None
    ok = (isinstance(prediction, dict) and isinstance(prediction.get("conversation_id"), str)
          and isinstance(turn, int) and not isinstance(turn, bool) and "response" in prediction)
    if not ok:
        raise ValueError(f"topical_chat: predictions[{i}] must be a record {{\"conversation_id\": str, "
                         f"\"turn_index\": int, \"response\": str}} (the references are conversation rows), "
                         f"got {prediction!r:.200}")
    return {"conversation_id": prediction["conversation_id"], "turn_index": turn,
            "response": _storable(prediction["response"])}


def examples(kind, preds, refs, knowledge=None, reading_sets=None):
    """``(examples, replies, reference_turns)`` of encoded inputs and checked options: the turn example each
    reply answers."""
    if not preds:
        raise ValueError("topical_chat: no predictions to score")
    if kind != "text" and knowledge is not None:
        raise ValueError("topical_chat: knowledge= goes with gold strings as references; turn examples carry "
                         "their own, conversation rows take reading_sets=")
    if kind != "conversation" and reading_sets is not None:
        raise ValueError("topical_chat: reading_sets= goes with conversation rows as references")
    if kind == "conversation":
        return _pair(preds, refs, reading_sets)
    if kind == "text":
        if knowledge is not None and len(knowledge) != len(preds):
            raise ValueError(f"topical_chat: {len(knowledge)} knowledge texts for {len(preds)} predictions")
        knowledge = knowledge if knowledge is not None else [None] * len(preds)
        refs = [{"response": r, "knowledge": k} for r, k in zip(refs, knowledge, strict=True)]
    return refs, preds, len(refs)


def _pair(records, rows, reading_sets):
    """The turn example of each prediction record, by (conversation_id, turn_index)."""
    turns = _turns(rows, reading_sets)
    found, seen, unknown = [], set(), []
    for i, record in enumerate(records):
        key = (record["conversation_id"], record["turn_index"])
        if key in seen:
            raise ValueError(f"topical_chat: predictions[{i}]: a second prediction for turn {key[1]} of {key[0]!r}")
        seen.add(key)
        if key in turns:
            found.append(turns[key])
        else:
            unknown.append(f"predictions[{i}] (conversation {key[0]!r}, turn {key[1]})")
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ValueError(f"topical_chat: {len(unknown)} predictions name turns the references do not have: {shown} "
                         f"(examples are turns 1 and later of the given conversations)")
    return found, [record["response"] for record in records], len(turns)


def _turns(rows, reading_sets):
    """``{(conversation_id, turn_index): turn example}`` of checked conversation rows."""
    turns, conversations = {}, set()
    for i, row in enumerate(rows):
        cid = row["conversation_id"]
        if cid in conversations:
            raise ValueError(f"topical_chat: references[{i}]: conversation {cid!r} appears twice")
        conversations.add(cid)
        reading = None
        if reading_sets is not None:
            reading = reading_sets.get(cid)
            if reading is None:
                raise ValueError(f"topical_chat: reading_sets has no row for conversation {cid!r} "
                                 f"(references[{i}]): give the reading sets of the same split")
        turns.update({(cid, ex["turn_index"]): ex for ex in examples_of(row, reading)})
    return turns
