"""One scorer for a model's reply to one turn, used by the evaluate metric and by the harness tasks (task_api)."""

import math
import re

from .checks import is_text
from .responses import corpus_bleu, distinct, mean, sentence_bleus, tokens, unigram_f1

# a speaker label a model may repeat from the prompt's "agent_2:" line ("agent_2:", "Agent 2 :", "**agent_1:**")
_LABEL = re.compile(r"^[*_]{0,2}agent[ _-]?[12][*_ ]{0,3}:[*_]{0,2}\s*", re.IGNORECASE)


def one_line(text):
    """Whitespace (newlines included) collapsed to single spaces: the form both sides are scored in."""
    return " ".join(text.split())


def read_reply(reply):
    """``(text, unparseable)``: the reply on one line without a leading speaker label. Never raises: None,
    a non-string or a string that is not valid Unicode (lone surrogates) gives ``("", True)``."""
    if not is_text(reply):
        return "", True
    return _LABEL.sub("", one_line(reply), count=1), False


def score_reply(reply, gold, knowledge=None):
    """Per-example values of one reply to a turn whose human message is ``gold`` (and whose knowledge text is
    ``knowledge``, or None): f1, knowledge_f1 (None without knowledge), the (reply, gold) pair for corpus BLEU,
    the reply text for distinct-n, and unparseable 0/1. An unparseable reply is scored as an empty one, and 0
    even where the gold has no token."""
    text, unparseable = read_reply(reply)
    gold = one_line(gold)
    if knowledge is not None and not tokens(knowledge):
        knowledge = None  # no token after the normalisation: no knowledge
    f1 = 0.0 if unparseable else unigram_f1(text, gold)
    kf1 = None if knowledge is None else (0.0 if unparseable else unigram_f1(text, knowledge))
    return {"f1": f1, "knowledge_f1": kf1, "bleu": (text, gold), "distinct_1": text, "distinct_2": text,
            "unparseable": int(unparseable)}


def mean_or_zero(values):
    """The mean of the values that are not None (exactly rounded sum); 0.0 when there are none."""
    values = [v for v in values if v is not None]
    return math.fsum(values) / len(values) if values else 0.0


def bleu_of_pairs(pairs):
    """sacrebleu corpus BLEU-4 of (reply, gold) pairs; 0.0 for none."""
    pairs = list(pairs)
    if not pairs:
        return 0.0
    return corpus_bleu([p for p, _ in pairs], [g for _, g in pairs])[0]


def distinct_1(texts):
    return distinct(list(texts), 1)


def distinct_2(texts):
    return distinct(list(texts), 2)


def summary(examples, replies, reference_turns, per_example=False):
    """The metric's result for the replies to these turn examples (dicts with "response", "knowledge", and
    "conversation_id" / "turn_index" when known)."""
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
