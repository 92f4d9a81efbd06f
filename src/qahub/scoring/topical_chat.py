"""``qahub evaluate topical_chat``: responses generated for Topical-Chat turns against the human turns."""

from __future__ import annotations

import json

from qahub import registry
from qahub.loaders.topical_chat import read_conversations, read_reading_sets

HELP = "Topical-Chat responses: unigram F1, BLEU-4 (sacrebleu), distinct-1/2 and knowledge F1"

_AGENTS = ("agent_1", "agent_2")
_FACTUAL = ("FS1", "FS2", "FS3")
_ARTICLE = ("AS1", "AS2", "AS3", "AS4")


class PredictionsError(ValueError):
    pass


def add_arguments(parser):
    parser.add_argument("--predictions", required=True,
                        help='JSON list of {"conversation_id": str, "turn_index": int (0-based), "response": str}')
    parser.add_argument("--references", required=True,
                        help="upstream conversations file: conversations/<split>.json "
                             "(or TopicalChatASR/actual/<split>_audio.json)")
    parser.add_argument("--reading-sets", dest="reading_sets",
                        help="reading sets of the same split, for knowledge F1: reading_sets/post-build/<split>.json, "
                             "or reading_sets/pre-build/<split>.json with --wiki (lead sections only)")
    parser.add_argument("--wiki", help="src/wiki/wiki.json, to read a pre-build --reading-sets file")
    parser.add_argument("--per-example", dest="per_example", action="store_true",
                        help="also list the scores of each prediction")


def run(args) -> dict:
    predictions = read_predictions(args.predictions)
    turns = reference_turns(args.references)
    reading = None
    if getattr(args, "reading_sets", None):
        reading = {row["conversation_id"]: row for row in read_reading_sets(args.reading_sets, getattr(args, "wiki", None))}
    responses, references, knowledge = [], [], []
    conversations = {cid for cid, _ in turns}
    for index, (cid, turn_index, response) in enumerate(predictions):
        if cid not in conversations:
            raise PredictionsError(f"{args.predictions}: record {index}: conversation {cid!r} is not in {args.references}")
        if (cid, turn_index) not in turns:
            raise PredictionsError(f"{args.predictions}: record {index}: conversation {cid!r} has no turn {turn_index} "
                                   f"in {args.references}")
        agent, message, sources = turns[cid, turn_index]
        responses.append(response)
        references.append(message)
        if reading is not None:
            if cid not in reading:
                raise PredictionsError(f"{args.reading_sets}: record {cid}: no reading set for this conversation")
            knowledge.append(turn_knowledge(reading[cid], agent, sources))
    metric = registry.load_metric("topical_chat")
    result = metric.compute(predictions=responses, references=references,
                            knowledge=knowledge if reading is not None else None,
                            per_example=getattr(args, "per_example", False))
    if "per_example" in result:
        result["per_example"] = [{"conversation_id": cid, "turn_index": turn, **scores}
                                 for (cid, turn, _), scores in zip(predictions, result["per_example"], strict=True)]
    # predictions may cover some turns only (e.g. one agent's); say how many turns were not scored
    coverage = {"reference_turns": len(turns), "turns_without_prediction": len(turns) - len(predictions)}
    return {"predictions": str(args.predictions), "references": str(args.references), **coverage, **result}


def read_predictions(path):
    """``[(conversation_id, turn_index, response)]``; every problem names the record."""
    with open(path, encoding="utf-8") as f:
        try:
            records = json.load(f)
        except UnicodeDecodeError as err:
            raise PredictionsError(f"{path}: not valid UTF-8 (byte {err.object[err.start]:#04x} at offset "
                                   f"{err.start}: {err.reason})") from None
        except json.JSONDecodeError as err:
            raise PredictionsError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(records, list):
        raise PredictionsError(f"{path}: expected a JSON list of predictions, got {type(records).__name__}")
    predictions, seen = [], set()
    for index, record in enumerate(records):
        key = _check_prediction(path, index, record)
        if key in seen:
            raise PredictionsError(f"{path}: record {index}: a second prediction for turn {key[1]} of {key[0]!r}")
        seen.add(key)
        predictions.append((*key, record["response"]))
    return predictions


def _check_prediction(path, index, record):
    ok = (isinstance(record, dict) and isinstance(record.get("conversation_id"), str)
          and isinstance(record.get("turn_index"), int) and not isinstance(record.get("turn_index"), bool)
          and isinstance(record.get("response"), str))
    if not ok:
        raise PredictionsError(f"{path}: record {index}: expected {{\"conversation_id\": str, \"turn_index\": int, "
                               f"\"response\": str}}, got {record!r}")
    return record["conversation_id"], record["turn_index"]


def reference_turns(path):
    """``{(conversation_id, turn_index): (agent, message, knowledge sources)}`` of a conversations file or
    of an ASR file (its ASR hypotheses are not needed here)."""
    return {
        (row["conversation_id"], index): (_AGENTS[turn["agent"]], turn["message"], turn["knowledge_source"])
        for row in read_conversations(path, asr=None)
        for index, turn in enumerate(row["turns"])
    }


def turn_knowledge(reading_set, agent, sources):
    """The text of the sections a turn names as its knowledge source, from its agent's reading set: for FSn the
    Wikipedia lead section and the fun facts, for ASn the article section; None when there is none."""
    parts = []
    for source in sources:
        if source in _FACTUAL and reading_set[agent][source]:
            section = reading_set[agent][source]
            parts += [section["wiki_lead_section"], *(section["fun_facts"] or [])]
        elif source in _ARTICLE and reading_set["article"][source]:
            parts.append(reading_set["article"][source])
    return " ".join(parts) or None
