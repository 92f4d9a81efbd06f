"""Topical-Chat response metrics: unigram F1, BLEU-4, distinct-1/2 and knowledge F1."""

import contextlib
import json
import os

import datasets
import evaluate

from .replies import score_reply
from .responses import corpus_bleu, distinct, mean, sentence_bleus
from .task_api import TASKS
from .turns import check_conversation, check_reading_set, turn_examples

_CITATION = """\
@inproceedings{gopalakrishnan2019topical,
  author={Karthik Gopalakrishnan and Behnam Hedayatnia and Qinlang Chen and Anna Gottardi and Sanjeev Kwatra \
and Anu Venkatesh and Raefer Gabriel and Dilek Hakkani-T{\\"u}r},
  title={{Topical-Chat: Towards Knowledge-Grounded Open-Domain Conversations}},
  year={2019},
  booktitle={Proc. Interspeech 2019},
  pages={1891--1895}
}
@inproceedings{post-2018-call,
  title = "A Call for Clarity in Reporting {BLEU} Scores",
  author = "Post, Matt",
  booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
  year = "2018",
  pages = "186--191"
}
@inproceedings{li-etal-2016-diversity,
  title = "A Diversity-Promoting Objective Function for Neural Conversation Models",
  author = "Li, Jiwei and Galley, Michel and Brockett, Chris and Gao, Jianfeng and Dolan, Bill",
  booktitle = "Proceedings of NAACL-HLT 2016",
  year = "2016",
  pages = "110--119"
}
"""

_DESCRIPTION = """\
Metrics for responses generated for Topical-Chat turns. Unigram F1 between the response and the human turn,
with SQuAD's normalisation (lowercase, ASCII punctuation and the articles a/an/the removed); BLEU-4 of the
corpus with sacrebleu's defaults; distinct-1 and distinct-2 (Li et al., 2016), the distinct unigrams and
bigrams of all responses divided by all their unigrams and bigrams, on the lowercased responses split by
sacrebleu's 13a tokenizer; knowledge F1, the unigram F1 between the response and the knowledge the human turn
was grounded on, averaged over the examples that have knowledge. The references may be the conversation rows
of the corpus as load_dataset yields them (predictions are then records naming a conversation and a turn).
A response is any object: what is not a readable string is counted as unparseable and scored as empty.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated responses. With conversation rows as references: records
        {"conversation_id": str, "turn_index": int (1 or more), "response": the generated text}, in any number
        and order. Otherwise one response per reference. A response (reply) may be any object: None, a
        non-string or a string with lone surrogates is unparseable and scored as an empty response (0).
        Replies are read on one line (whitespace collapsed) without a leading speaker label ("agent_2:").
    references: one of (all of the same kind)
        - conversation rows of the `conversations` or `asr` config, as load_dataset yields them (a Dataset
          or a list of dicts): every turn from turn 1 on is an example (turn 0 opens the conversation);
        - turn examples as turns.turn_examples makes them ({"history", "response", "knowledge", ...}), one
          per prediction;
        - the human turns as strings, one per prediction.
    reading_sets: optional keyword of compute() with conversation rows: the rows of the `reading_sets` config
        of the same split (Dataset or list of dicts), for knowledge F1.
    knowledge: optional keyword of compute() with string references: a list (or tuple), one per prediction,
        of the text of the knowledge the turn was grounded on, or None when there is none. A text with no
        token after the normalisation ("", "  ", "...") counts as none. Examples without knowledge are left
        out of knowledge F1.
    per_example: True to also return "per_example", one {"f1", "bleu", "knowledge_f1", "unparseable"} per
        prediction (plus "conversation_id" and "turn_index" when the references say them) (default False).
Returns:
    f1: mean unigram F1, 0 to 1.
    bleu: sacrebleu corpus BLEU-4, 0 to 100 (capped: sacrebleu can give 100.00000000000004); bleu_signature: sacrebleu's signature of the settings.
    distinct_1, distinct_2: distinct unigrams / bigrams over all predictions (13a tokens of the lowercased
        text), 0 to 1.
    knowledge_f1: mean unigram F1 against the knowledge over the examples with knowledge, 0 to 1;
        None when no example has knowledge.
    num_examples, num_with_knowledge: how many predictions, and how many of them had knowledge.
    unparseable: how many replies could not be read (scored as empty responses).
    reference_turns, turns_without_prediction: the example turns of the references, and how many of them
        have no prediction (not scored; 0 unless the references are conversation rows).
    per_example (on request): f1, sentence BLEU (sacrebleu, effective order), knowledge_f1 (None without
        knowledge) and unparseable (0/1) of each prediction.
Raises:
    ValueError: no predictions; a reference of the wrong shape (naming it and the problem); a prediction
        record that is not {"conversation_id", "turn_index", "response"} or names a turn the references do not
        have (all such records are named); numbers of predictions and references that differ (strings or turn
        examples); knowledge or reading_sets of the wrong shape or for the wrong kind of references;
        per_example that is not True or False.
Examples:
    >>> metric = evaluate.load("topical_chat")
    >>> results = metric.compute(predictions=["The cat sat on the mat."],
    ...                          references=["A cat was sitting on the mat!"],
    ...                          knowledge=["A cat sat on a rug."])
    >>> round(results["f1"], 4), round(results["distinct_1"], 4), results["knowledge_f1"]
    (0.6667, 0.8571, 0.75)
"""

# evaluate copies only the helpers this file imports: task_api is imported for that, and is exported
__all__ = ["TASKS", "TopicalChat"]

_FORMS = "a gold string, a conversation row (with 'turns') or a turn example (with 'history' and 'response')"


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TopicalChat(evaluate.Metric):
    """Each add/add_batch call is stored as one row of JSON (ASCII, so lone surrogates survive): predictions
    and references may then differ in number (conversation rows) and keep replies that are not strings out."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            codebase_urls=["https://github.com/alexa/Topical-Chat", "https://github.com/mjpost/sacrebleu"],
            reference_urls=["https://arxiv.org/abs/2308.11995"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Check everything first, so that bad input fails before evaluate writes its cache file; a failure
        after that (inputs added earlier with add_batch) removes the cache file."""
        if predictions is not None and references is not None and self.writer is None:
            kind, preds, refs = _encode(predictions, references)
            _examples(kind, preds, refs, **_options(kwargs))
        try:
            return super().compute(predictions=predictions, references=references, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is the one to report
                self._discard_cache()
            raise

    def _discard_cache(self):
        """What evaluate does after a successful compute: close the writer, delete the cache files, unlock."""
        self.data = None
        if self.writer is not None:
            self.writer.finalize()
            self.writer = None
        for path in [*(getattr(self, "file_paths", None) or []), self.cache_file_name]:
            if path and os.path.exists(path):
                os.remove(path)
        for lock in [*(getattr(self, "filelocks", None) or []), self.filelock]:
            if lock is not None:
                lock.release()
        self.file_paths = self.filelocks = self.cache_file_name = self.filelock = None

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Check and add a batch of predictions and references (their numbers may differ for conversation rows)."""
        kind, preds, refs = _encode(predictions, references)
        super().add_batch(predictions=[json.dumps(preds, default=str)],
                          references=[json.dumps({"kind": kind, "items": refs}, default=str)], **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Check and add one prediction and one reference."""
        self.add_batch(predictions=[prediction], references=[reference], **kwargs)

    def _compute(self, predictions, references, knowledge=None, reading_sets=None, per_example=False):
        batches = [json.loads(batch) for batch in references]
        kinds = {batch["kind"] for batch in batches}
        if len(kinds) > 1:
            raise ValueError(f"topical_chat: references of different kinds in one evaluation: {sorted(kinds)}")
        preds = [p for batch in predictions for p in json.loads(batch)]
        refs = [r for batch in batches for r in batch["items"]]
        options = _options({"knowledge": knowledge, "reading_sets": reading_sets, "per_example": per_example})
        examples, replies, reference_turns = _examples(kinds.pop(), preds, refs, **options)
        return _summary(examples, replies, reference_turns, per_example)


def _options(kwargs):
    """The keyword arguments of compute, checked; those _examples takes."""
    unknown = sorted(set(kwargs) - {"knowledge", "reading_sets", "per_example"})
    if unknown:
        raise ValueError(f"topical_chat: unknown keyword arguments {unknown}")
    per_example = kwargs.get("per_example", False)
    if not isinstance(per_example, bool):
        raise ValueError(f"topical_chat: per_example must be True or False, got {per_example!r}")
    knowledge, reading = kwargs.get("knowledge"), kwargs.get("reading_sets")
    if knowledge is not None and not isinstance(knowledge, (list, tuple)):
        raise ValueError(f"topical_chat: knowledge must be a list with one text (or None) per prediction, "
                         f"got {type(knowledge).__name__}")
    if knowledge is not None:
        bad = next((i for i, k in enumerate(knowledge) if k is not None and not isinstance(k, str)), None)
        if bad is not None:
            raise ValueError(f"topical_chat: knowledge[{bad}] must be a string or None, got {knowledge[bad]!r}")
    return {"knowledge": knowledge, "reading_sets": _reading_index(reading)}


def _reading_index(rows):
    """``{conversation_id: reading-set row}`` of the reading_sets keyword, or None."""
    if rows is None:
        return None
    rows = _as_list(rows, "reading_sets")
    index = {}
    for i, row in enumerate(rows):
        check_reading_set(row, f"topical_chat: reading_sets[{i}]")
        index[row["conversation_id"]] = row
    return index


def _as_list(values, name):
    if isinstance(values, (datasets.Dataset, datasets.IterableDataset)):
        return list(values)
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"topical_chat: {name} must be a list (or a Dataset), got {type(values).__name__}")
    return list(values)


def _encode(predictions, references):
    """``(kind, predictions, references)`` ready for JSON: references checked, replies that are not strings
    replaced by None (they are unparseable), prediction records checked."""
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
    ok = (isinstance(prediction, dict) and isinstance(prediction.get("conversation_id"), str)
          and isinstance(prediction.get("turn_index"), int) and not isinstance(prediction.get("turn_index"), bool)
          and "response" in prediction)
    if not ok:
        raise ValueError(f"topical_chat: predictions[{i}] must be a record {{\"conversation_id\": str, "
                         f"\"turn_index\": int, \"response\": str}} (the references are conversation rows), "
                         f"got {prediction!r:.200}")
    return {"conversation_id": prediction["conversation_id"], "turn_index": prediction["turn_index"],
            "response": _storable(prediction["response"])}


def _examples(kind, preds, refs, knowledge=None, reading_sets=None):
    """``(examples, replies, reference_turns)``: the turn example each reply answers."""
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
        turns.update({(cid, ex["turn_index"]): ex for ex in turn_examples(row, reading)})
    examples, seen, unknown = [], set(), []
    for i, record in enumerate(records):
        key = (record["conversation_id"], record["turn_index"])
        if key in seen:
            raise ValueError(f"topical_chat: predictions[{i}]: a second prediction for turn {key[1]} of {key[0]!r}")
        seen.add(key)
        if key not in turns:
            unknown.append(f"predictions[{i}] (conversation {key[0]!r}, turn {key[1]})")
        else:
            examples.append(turns[key])
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ValueError(f"topical_chat: {len(unknown)} predictions name turns the references do not have: {shown} "
                         f"(examples are turns 1 and later of the given conversations)")
    return examples, [record["response"] for record in records], len(turns)


def _summary(examples, replies, reference_turns, per_example):
    rows = [score_reply(reply, ex["response"], ex.get("knowledge")) for reply, ex in zip(replies, examples,
                                                                                            strict=True)]
    texts = [row["distinct_1"] for row in rows]
    golds = [row["bleu"][1] for row in rows]
    grounded = [row["knowledge_f1"] for row in rows if row["knowledge_f1"] is not None]
    bleu, signature = corpus_bleu(texts, golds)
    result = {
        "f1": mean([row["f1"] for row in rows]),
        "bleu": bleu,
        "bleu_signature": signature,
        "distinct_1": distinct(texts, 1),
        "distinct_2": distinct(texts, 2),
        "knowledge_f1": mean(grounded) if grounded else None,
        "num_examples": len(rows),
        "num_with_knowledge": len(grounded),
        "unparseable": sum(row["unparseable"] for row in rows),
        "reference_turns": reference_turns,
        "turns_without_prediction": reference_turns - len(rows),
    }
    if per_example:
        bleus = sentence_bleus(texts, golds)
        result["per_example"] = [
            {**{k: ex[k] for k in ("conversation_id", "turn_index") if k in ex},
             "f1": row["f1"], "bleu": b, "knowledge_f1": row["knowledge_f1"], "unparseable": row["unparseable"]}
            for ex, row, b in zip(examples, rows, bleus, strict=True)
        ]
    return result
