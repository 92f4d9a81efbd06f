"""Rows of the ``dialogue_domain`` config as subtask 2 examples: one per agent turn.

The one place where a dialogue becomes agent turns, for the metric's references and the harness task's docs.
An agent turn's id is ``{dial_id}_{turn_id - 1}`` (the DialDoc21 convention: the id of the turn before it,
whatever that turn's role).
"""

from .checks import record_id


def is_dialogue(record):
    """A ``dialogue_domain`` row (turns, or a dial_id without an id), not a per-turn ``{id, utterance}`` record."""
    return isinstance(record, dict) and ("turns" in record or ("dial_id" in record and "id" not in record))


def agent_turns(dialogue, where="dialogue"):
    """Each agent turn of ``dialogue`` as ``{id, dial_id, turn_id, history, utterance}``; ``history`` is the list
    of earlier turns ``{role, utterance}``, oldest first. A malformed row raises ``ValueError`` starting with
    ``where`` and naming the dialogue, the turn and the field."""
    turns = _checked_turns(dialogue, where)
    examples = []
    for index, turn in enumerate(turns):
        if turn["role"] == "agent":
            examples.append({
                "id": _reference_id(dialogue, turn),
                "dial_id": dialogue["dial_id"],
                "turn_id": turn["turn_id"],
                "history": [{"role": t["role"], "utterance": t["utterance"]} for t in turns[:index]],
                "utterance": turn["utterance"],
            })
    return examples


def agent_turn_references(dialogue, where="dialogue"):
    """Each agent turn of ``dialogue`` as a subtask 2 reference ``{id, utterance}``."""
    return [{"id": _reference_id(dialogue, turn), "utterance": turn["utterance"]}
            for turn in _checked_turns(dialogue, where) if turn["role"] == "agent"]


def _reference_id(dialogue, turn):
    return f"{dialogue['dial_id']}_{turn['turn_id'] - 1}"


def _checked_turns(dialogue, where):
    dial_id = record_id(dialogue, "dial_id", where, "a dialogue_domain row (a dict)")
    where = f"{where} (dialogue {dial_id!r})"
    turns = dialogue.get("turns")
    if not isinstance(turns, list):
        raise ValueError(f"{where}: 'turns' must be a list of turns, got {turns!r}"[:300])
    for index, turn in enumerate(turns):
        _check_turn(turn, f"{where}: turn {index}")
    return turns


def _check_turn(turn, where):
    if not isinstance(turn, dict):
        raise ValueError(f"{where}: expected a dict with turn_id, role, utterance, got {type(turn).__name__}")
    missing = [key for key in ("turn_id", "role", "utterance") if key not in turn]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    value = turn["turn_id"]
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{where}: 'turn_id' must be an integer, got {value!r}")
    for key in ("role", "utterance"):
        if not isinstance(turn[key], str):
            raise ValueError(f"{where} (turn_id {value}): {key!r} must be a string, got {turn[key]!r}"[:300])
