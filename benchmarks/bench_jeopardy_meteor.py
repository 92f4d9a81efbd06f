"""jeopardy_meteor: the metric's cached path against a plain per-call NLTK path, on the real validation answers.

Predictions are the 3,376 gold answers of ``Russian_QA_Jeopardy_dataset_extended_validation.csv`` perturbed
(exact, reordered, shortened, lowercased, or another question's answer). Each side runs in a fresh process
and loads its pymorphy3 dictionary and its tokenizer (spaCy's Russian tokenizer when spaCy is installed, else
the metric's regex imitation) before the timed part; the caches of ``ours`` start empty. The baseline
tokenizes every text of every pair afresh with the same tokenizer.
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

from _common import SHARED_DATA, measure, row

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
VALIDATION = SHARED_DATA / "jeopardy" / "Russian_QA_Jeopardy_dataset_extended_validation.csv"


def _rows():
    with open(VALIDATION, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def pairs(seed=0):
    from jeopardy_predictions import perturb  # tests/, shared with the metric tests

    answers = [r["Answer"] for r in _rows()]
    return perturb(answers, seed), answers


def prepare_ours():
    sys.path.insert(0, str(ROOT / "metrics"))
    from jeopardy_meteor.jeopardy_meteor import score_answers
    from jeopardy_meteor.russian_meteor import shared

    shared()  # loads the dictionary and the tokenizer; caches stay empty
    return (score_answers, *pairs())


def ours(score_answers, predictions, answers):
    result = score_answers(predictions, answers)
    return result["num_correct"], round(sum(result["meteor_per_example"]), 9), result["tokenizer"]


def large_pairs(count=29375, seed=1):
    """As many pairs as the full corpus has questions, with a vocabulary near its size: the validation answers
    cycled, each against a 1-3 word span of some question text (most spans are new words)."""
    rows = _rows()
    rng = random.Random(seed)
    predictions, answers = [], []
    for index in range(count):
        words = rng.choice(rows)["QuestionText"].split()
        start = rng.randrange(len(words))
        predictions.append(" ".join(words[start:start + rng.randint(1, 3)]))
        answers.append(rows[index % len(rows)]["Answer"])
    return predictions, answers


def prepare_ours_large():
    score_answers, *_ = prepare_ours()
    return (score_answers, *large_pairs())


def ours_large(score_answers, predictions, answers):
    return ours(score_answers, predictions, answers)


def prepare_baseline():
    import pymorphy3

    sys.path.insert(0, str(ROOT / "metrics"))
    from jeopardy_meteor.spacy_like import tokenizer_for

    return (pymorphy3.MorphAnalyzer(), tokenizer_for("auto"), *pairs())


def baseline(morph, tokenizer, predictions, answers):
    """NLTK's meteor_score per pair with fresh tokenization and uncached pymorphy3 lemmas."""
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    class NoWordNet:
        def synsets(self, word):
            return []

    def lemmas(text):
        out = []
        for word in tokenize(text):
            known = [p.normal_form for p in morph.parse(word.lower()) if p.is_known]
            out.append(known[0] if known else word.lower())
        return out

    tokenize, name = tokenizer
    scores = [meteor_score([lemmas(p)], lemmas(g), stemmer=PorterStemmer(), wordnet=NoWordNet())
              for p, g in zip(predictions, answers, strict=True)]
    return sum(s > 0.227743 for s in scores), round(sum(scores), 9), name


def run() -> list[dict]:
    if not VALIDATION.is_file():
        print(f"bench_jeopardy_meteor: {VALIDATION} absent, skipped")
        return []
    mine = measure("bench_jeopardy_meteor:ours")
    plain = measure("bench_jeopardy_meteor:baseline")
    if mine[2] != plain[2]:
        raise AssertionError(f"the two paths disagree: ours {mine[2]} vs baseline {plain[2]}")
    large = measure("bench_jeopardy_meteor:ours_large")
    note = f"same results {mine[2]}; ours on 29,375 synthetic pairs: {large[0]:.2f} s"
    return [row("jeopardy_meteor 3,376 validation pairs", mine, plain, note)]


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
