"""Topical-Chat metric: ``evaluate.load(metrics/topical_chat).compute`` against a plain per-example loop of the
metric's own scoring functions (``replies.score_reply``, then corpus BLEU, distinct-n and the means), on 10,000
synthetic turns (sacreBLEU makes 100,000 impractical). Two reference forms: gold strings with knowledge texts,
and conversation rows (1,000 conversations of 11 turns). Loading the metric and making the inputs are untimed."""

from __future__ import annotations

import hashlib
import json
import random
import warnings

from _common import measure, met, row

EXAMPLES = 10_000
TURNS = 11  # turns per conversation: 10 examples each (turn 0 opens the conversation)
TARGET = 2.0


def _words():
    from qahub import registry

    sample = json.loads((registry.samples_dir("topical_chat") / "conversations/test_freq.json").read_text("utf-8"))
    return sorted({w for c in sample.values() for t in c["content"] for w in t["message"].split()})


def _text(rng, words, low=5, high=25):
    return " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))


def _strings():
    """``(replies, golds, knowledge)``: one in four turns without knowledge."""
    rng, words = random.Random(0), _words()
    golds = [_text(rng, words) for _ in range(EXAMPLES)]
    replies = [_text(rng, words) for _ in range(EXAMPLES)]
    knowledge = [None if i % 4 == 0 else _text(rng, words, 20, 60) for i in range(EXAMPLES)]
    return replies, golds, knowledge


def _conversations():
    """``(prediction records, conversation rows)``."""
    rng, words = random.Random(1), _words()
    rows = [{"conversation_id": f"t_{c}", "turns": [{"agent": t % 2, "message": _text(rng, words),
                                                     "knowledge_source": ["FS1"]} for t in range(TURNS)]}
            for c in range(EXAMPLES // (TURNS - 1))]
    records = [{"conversation_id": r["conversation_id"], "turn_index": t, "response": _text(rng, words)}
               for r in rows for t in range(1, TURNS)]
    return records, rows


def _digest(result) -> str:
    """The corpus scores, rounded, as a short fingerprint: both sides must print the same."""
    keys = ("f1", "bleu", "distinct_1", "distinct_2", "knowledge_f1", "num_examples")
    scores = {k: None if result[k] is None else round(result[k], 9) for k in keys}
    return f"f1 {scores['f1']}, bleu {scores['bleu']}, " + hashlib.sha256(
        json.dumps(scores, sort_keys=True).encode()).hexdigest()[:12]


def _loop(replies, golds, knowledge):
    """The plain recipe: score each reply, then the corpus measures."""
    from qahub.metrics.topical_chat.replies import score_reply
    from qahub.metrics.topical_chat.responses import corpus_bleu, distinct, mean

    rows = [score_reply(r, g, k) for r, g, k in zip(replies, golds, knowledge, strict=True)]
    texts = [r["distinct_1"] for r in rows]
    grounded = [r["knowledge_f1"] for r in rows if r["knowledge_f1"] is not None]
    return {"f1": mean([r["f1"] for r in rows]), "bleu": corpus_bleu(texts, [r["bleu"][1] for r in rows])[0],
            "distinct_1": distinct(texts, 1), "distinct_2": distinct(texts, 2),
            "knowledge_f1": mean(grounded) if grounded else None, "num_examples": len(rows)}


def _metric():
    from qahub import registry

    warnings.simplefilter("ignore")
    metric = registry.load_metric("topical_chat")
    metric.compute(predictions=["warm up"], references=["warm up"])  # sacrebleu imported outside the clock
    return metric


def prepare_metric_strings():
    return (_metric(), *_strings())


def metric_strings(metric, replies, golds, knowledge):
    return _digest(metric.compute(predictions=replies, references=golds, knowledge=knowledge))


def prepare_add_batch_strings():
    return prepare_metric_strings()


def add_batch_strings(metric, replies, golds, knowledge):
    """evaluate's own path (add_batch, then compute): the Arrow round trip the direct compute skips."""
    for start in range(0, EXAMPLES, 1_000):
        metric.add_batch(predictions=replies[start:start + 1_000], references=golds[start:start + 1_000])
    return _digest(metric.compute(knowledge=knowledge))


def prepare_loop_strings():
    _metric()
    return _strings()


def loop_strings(replies, golds, knowledge):
    return _digest(_loop(replies, golds, knowledge))


def prepare_metric_rows():
    return (_metric(), *_conversations())


def metric_rows(metric, records, rows):
    return _digest(metric.compute(predictions=records, references=rows))


def prepare_loop_rows():
    _metric()
    return _conversations()


def loop_rows(records, rows):
    from qahub.metrics.topical_chat.turns import turn_examples

    turns = {(e["conversation_id"], e["turn_index"]): e for r in rows for e in turn_examples(r)}
    gold = [turns[(p["conversation_id"], p["turn_index"])] for p in records]
    return _digest(_loop([p["response"] for p in records], [e["response"] for e in gold], [None] * len(gold)))


def _compared(name, ours, base):
    assert ours[2] == base[2], f"{name}: scores differ:\n{ours[2]}\n{base[2]}"
    slowdown = ours[0] / base[0]
    verdict = met(slowdown <= TARGET)
    return row(name, ours, base, f"{slowdown:.2f}x the plain loop (target <= {TARGET:g}x: {verdict}); same scores")


def run() -> list[dict]:
    strings_loop = measure("bench_topical_chat_metric:loop_strings")
    rows = [
        _compared(f"topical_chat metric, {EXAMPLES:,} strings + knowledge (compute / loop)",
                  measure("bench_topical_chat_metric:metric_strings"), strings_loop),
        _compared(f"topical_chat metric, {EXAMPLES:,} turns of conversation rows (compute / loop)",
                  measure("bench_topical_chat_metric:metric_rows"), measure("bench_topical_chat_metric:loop_rows")),
    ]
    batched = measure("bench_topical_chat_metric:add_batch_strings")
    assert batched[2] == strings_loop[2], f"add_batch: scores differ:\n{batched[2]}\n{strings_loop[2]}"
    rows.append(row(f"topical_chat metric, {EXAMPLES:,} strings via add_batch (evaluate's cache; for information)",
                    batched, strings_loop, f"{batched[0] / strings_loop[0]:.2f}x the plain loop (no target)"))
    return rows
