"""jeopardy_meteor: ``evaluate.load(...).compute`` against a plain loop of the metric's own scoring functions, and
the metric's cached scorer against a plain per-call NLTK path, on the real validation answers.

Predictions are the 3,376 gold answers of ``Russian_QA_Jeopardy_dataset_extended_validation.csv`` made noisy
(exact, reordered, shortened, lowercased, or another question's answer). Each side runs in a fresh process
and loads its pymorphy3 dictionary and its tokenizer (spaCy's Russian tokenizer when spaCy is installed, else
the metric's regex imitation) before the timed part; the caches start empty. The NLTK baseline tokenizes
every text of every pair afresh with the same tokenizer.
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

from _common import SHARED_DATA, measure, met, row

ROOT = Path(__file__).resolve().parents[1]
METRIC_DIR = ROOT / "metrics" / "jeopardy_meteor"
VALIDATION = SHARED_DATA / "jeopardy" / "Russian_QA_Jeopardy_dataset_extended_validation.csv"
TARGET = 2.0  # compute at most this many times the plain loop
COUNT = 100_000


def _rows():
    with open(VALIDATION, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def pairs(count=None, seed=0):
    """``(predictions, answers)``: the validation answers (cycled to ``count``), each against a noisy copy."""
    answers = [r["Answer"] for r in _rows()]
    if count:
        answers = [answers[index % len(answers)] for index in range(count)]
    rng = random.Random(seed)
    predictions = []
    for gold in answers:
        words, kind = gold.split(), rng.randrange(4)
        if kind == 1:
            words = words[::-1]
        elif kind == 2:
            words = words[1:] or words
        elif kind == 3:
            words = rng.choice(answers).split()
        text = " ".join(words)
        predictions.append(text.lower() if rng.random() < 0.5 else text)
    return predictions, answers


def _helpers():
    sys.path.insert(0, str(ROOT / "metrics"))
    from jeopardy_meteor import examples, russian_meteor

    return examples, russian_meteor


# --- evaluate's compute against a plain loop of score_example, 100,000 examples ------------------------------

def prepare_compute():
    import evaluate

    metric = evaluate.load(str(METRIC_DIR))
    metric.compute(predictions=["Рим"], references=["Рим"])  # loads the dictionary and the tokenizer
    return (metric, *pairs(COUNT))


def compute(metric, predictions, answers):
    result = metric.compute(predictions=predictions, references=answers)
    return result["num_correct"], round(result["meteor"], 12)


def prepare_loop():
    examples, russian_meteor = _helpers()
    meteor = russian_meteor.shared()
    meteor.score("Рим", "Рим")
    return (examples.score_example, meteor, *pairs(COUNT))


def loop(score_example, meteor, predictions, answers):
    scored = [score_example(reply, gold, None, meteor) for reply, gold in zip(predictions, answers, strict=True)]
    return sum(e["correct"] for e in scored), round(sum(e["meteor"] for e in scored) / len(scored), 12)


# --- the cached scorer against plain NLTK, the 3,376 validation pairs -----------------------------------------

def prepare_ours():
    examples, russian_meteor = _helpers()
    meteor = russian_meteor.shared()
    meteor.tokenize("Рим")
    return (meteor, *pairs())


def ours(meteor, predictions, answers):
    scores = [meteor.score(p, g) for p, g in zip(predictions, answers, strict=True)]
    return sum(s > 0.227743 for s in scores), round(sum(scores), 9), meteor.tokenizer


def prepare_baseline():
    import pymorphy3

    sys.path.insert(0, str(ROOT / "metrics"))
    from jeopardy_meteor.spacy_like import tokenizer_for

    return (pymorphy3.MorphAnalyzer(), tokenizer_for("auto"), *pairs())


class NoWordNet:
    """No synonyms, as in the metric."""

    def synsets(self, word):
        return []


def plain_meteor(morph, tokenize, prediction, gold):
    """NLTK's meteor_score of one pair: fresh tokenization, uncached pymorphy3 lemmas, fresh NLTK objects.
    tests/test_jeopardy_meteor_metric.py holds the metric's per-example scores to this too."""
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    def lemmas(text):
        out = []
        for word in tokenize(text):
            known = [p.normal_form for p in morph.parse(word.lower()) if p.is_known]
            out.append(known[0] if known else word.lower())
        return out

    return meteor_score([lemmas(prediction)], lemmas(gold), stemmer=PorterStemmer(), wordnet=NoWordNet())


def baseline(morph, tokenizer, predictions, answers):
    """``plain_meteor`` per pair."""
    tokenize, name = tokenizer
    scores = [plain_meteor(morph, tokenize, p, g) for p, g in zip(predictions, answers, strict=True)]
    return sum(s > 0.227743 for s in scores), round(sum(scores), 9), name


def run() -> list[dict]:
    if not VALIDATION.is_file():
        print(f"bench_jeopardy_meteor: {VALIDATION} absent, skipped")
        return []
    metric = measure("bench_jeopardy_meteor:compute")
    plain = measure("bench_jeopardy_meteor:loop")
    if metric[2] != plain[2]:
        raise AssertionError(f"compute and the plain loop disagree: {metric[2]} vs {plain[2]}")
    times = metric[0] / plain[0]
    verdict = met(times <= TARGET)
    rows = [row(f"jeopardy_meteor compute, {COUNT:,} examples vs plain loop", metric, plain,
                f"compute {times:.2f}x the loop (target <= {TARGET:g}x: {verdict}); same results {metric[2]}")]
    mine = measure("bench_jeopardy_meteor:ours")
    nltk_path = measure("bench_jeopardy_meteor:baseline")
    if mine[2] != nltk_path[2]:
        raise AssertionError(f"the two paths disagree: ours {mine[2]} vs baseline {nltk_path[2]}")
    rows.append(row("jeopardy_meteor scorer, 3,376 validation pairs vs plain NLTK", mine, nltk_path,
                    f"same results {mine[2]} (no target: the caches' gain)"))
    return rows


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
