"""Scores of generated responses: unigram F1, distinct-n, BLEU-4 (sacrebleu)."""

import functools
import math
import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize(text):
    """SQuAD's normalisation: lowercase, drop ASCII punctuation and the articles a/an/the, collapse spaces."""
    text = text.lower().translate(_DROP_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def tokens(text):
    return normalize(text).split()


def unigram_f1(prediction, reference):
    """SQuAD's token F1: 1.0 when both are empty after normalisation, 0.0 when only one is."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def mean(values):
    """The mean with an exactly rounded sum, so that the order of the examples cannot change it."""
    return math.fsum(values) / len(values)


def distinct(predictions, n):
    """Distinct n-grams of all predictions / all their n-grams (n-grams stay inside one prediction); 0.0 if none.

    Tokens: each prediction lowercased and split by sacrebleu's 13a tokenizer, as BLEU splits it (punctuation
    marks are tokens; nothing is removed).
    """
    split = _tokenizer_13a()
    grams = [tuple(toks[i:i + n]) for toks in (split(p.lower()).split() for p in predictions)
             for i in range(len(toks) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


@functools.cache
def _tokenizer_13a():
    """One tokenizer for every call: its own cache (sacrebleu's lru_cache, per instance) then serves distinct-2
    the tokens distinct-1 made."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def _capped(score):
    # sacrebleu's floating point gives 100.00000000000004 for a perfect match; BLEU is at most 100
    return min(score, 100.0)


def corpus_bleu(predictions, references):
    """sacrebleu's corpus BLEU-4 with its defaults (13a tokenizer, exp smoothing), one reference each."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU()
    score = bleu.corpus_score(list(predictions), [list(references)])
    return _capped(score.score), str(bleu.get_signature())


def sentence_bleus(predictions, references):
    """sacrebleu's sentence BLEU of each pair (effective order, exp smoothing), for per-example scores."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU(effective_order=True)
    return [_capped(bleu.sentence_score(p, [r]).score) for p, r in zip(predictions, references, strict=True)]
