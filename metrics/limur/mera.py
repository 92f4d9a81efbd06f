"""MERA's LIMUR exact match, reproduced without transformers.

MERA-Evaluation/MERA at commit 62309eb: ``benchmark_tasks/limur/utils.py`` (``process_results``) scores
``best_score(lambda c: compute_exact(gold, c), answer_candidates(reply))`` with ``gold = doc["outputs"] or ""``
and 0 when the gold is empty; ``benchmark_tasks/answer_norm.py`` (``compute_exact``) removes typographic
punctuation and then calls transformers' SQuAD ``compute_exact``; ``answer_candidates`` and ``best_score`` come
from MERA's lm-eval fork (``lm_eval/api/answer_extraction.py``). The filters before it
(``remove_whitespace_and_nones``, ``take_first``) only strip whitespace and turn None into "".
"""

import re
import string

TYPOGRAPHIC_PUNCTUATION = "«»‹›„“”‟‘’‚‛—–‒―‐‑−…"
MARKER = "Ответ:"

# character classes deleted with re.sub: str.translate with a dict is slow on Cyrillic text
_TYPOGRAPHIC = re.compile(f"[{re.escape(TYPOGRAPHIC_PUNCTUATION)}]")
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def strip_typographic(text):
    return _TYPOGRAPHIC.sub("", str(text or ""))


def normalize_answer(text):
    """SQuAD's ``normalize_answer``: lower case, ASCII punctuation removed, English articles replaced by a
    space, whitespace collapsed. The Latin letter "a" on its own is an article and vanishes."""
    text = _PUNCTUATION.sub("", text.lower())
    if "a" in text or "the" in text:  # else no article can match ("an" holds "a")
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def compute_exact(gold, prediction):
    """``answer_norm.compute_exact``: SQuAD exact match after removing MERA's typographic punctuation."""
    return int(normalize_answer(strip_typographic(gold)) == normalize_answer(strip_typographic(prediction)))


def answer_candidates(response, marker=MARKER):
    """The whole reply, and the text after its last ``marker`` when that is a different, non-empty text."""
    full = (response or "").strip()
    if not full or marker not in full:
        return [full]
    tail = full.rsplit(marker, 1)[-1].strip()
    if not tail or tail == full:
        return [full]
    return [full, tail]


def best_score(score, candidates):
    return max((score(candidate) for candidate in candidates), default=0.0)


def exact_match_mera(reply, gold):
    """MERA's per-example ``exact_match`` for a reply (already a string) and the raw ``outputs`` string."""
    if not gold:
        return 0
    return best_score(lambda candidate: compute_exact(gold, candidate), answer_candidates(reply))
