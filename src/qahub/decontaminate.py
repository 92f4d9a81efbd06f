"""Decontamination of training rows against every document a qahub task evaluates.

An index (``EvaluationIndex``) holds, for every evaluation document, the hashes of the 13-grams of its
non-template text (lm-eval's decontamination n: ``lm_eval/decontamination``) and the normalised text of its
question (``exact``). A training document is contaminated when its question equals one of them, or when any
13-gram of its own non-template text is in the index: one hash-set look-up per n-gram, never a pairwise scan.

Text is normalised as lm-eval's janitor does (case folded, punctuation dropped, whitespace runs one space) and cut
into words at whitespace; a CJK character (Japanese, Chinese) is a word of its own, since those scripts put no
space between words, and a text written mostly in them is cut into 26-grams of characters (two characters a word:
13 characters is a shared template phrase such as どちらが先に生まれましたか, not a shared question). A text shorter than n words gives no n-gram: a short reply ("YES", a MERA letter, a
Jeopardy answer) recurs across distinct questions and is checked with its question, by the exact rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

N = 13  # lm-eval's decontamination n-gram size
CJK_N = 2 * N  # in characters, for a text written mostly in CJK characters (a Japanese word is ~2 characters)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_WORD = re.compile(f"[{_CJK}]|[^\\W_]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")


def words(text: str) -> list[str]:
    """``text`` case-folded, as words: runs of letters and digits, each CJK character one word."""
    return _WORD.findall(text.casefold())


def normalised(text: str) -> str:
    return " ".join(words(text))


def ngrams(text: str, n: int | None = None) -> set[int]:
    """The hashes of the ``n``-grams of ``text``'s words (none for a text of fewer than ``n`` words); by default
    ``N``, or ``CJK_N`` characters for a text whose words are mostly CJK characters."""
    tokens = words(text)
    if n is None:
        n = CJK_N if 2 * sum(1 for t in tokens if _CJK_CHAR.fullmatch(t)) > len(tokens) else N
    return {hash(tuple(tokens[i:i + n])) for i in range(len(tokens) - n + 1)}


@dataclass(frozen=True)
class Texts:
    """The non-template text of one document: ``question`` (checked by exact match) and ``pieces`` (every text
    whose n-grams are checked: the question or turns and the reply). A context (a Topical-Chat knowledge text, a
    doc2dial document) is neither: a shared document is not a leaked answer."""

    question: str
    pieces: tuple[str, ...]


@dataclass
class EvaluationIndex:
    exact: set = field(default_factory=set)
    grams: set = field(default_factory=set)
    documents: int = 0
    _seen: set = field(default_factory=set)  # pieces already indexed (a turn recurs in every later history)

    def add(self, texts: Texts):
        self.documents += 1
        question = normalised(texts.question)
        if question:
            self.exact.add(question)
        for piece in texts.pieces:
            if piece not in self._seen:
                self._seen.add(piece)
                self.grams |= ngrams(piece)


class Checker:
    """``why(texts)``: None for a clean training document, else ``"exact"`` or ``"ngram"``; each distinct piece
    is cut into n-grams once."""

    def __init__(self, index: EvaluationIndex):
        self.index = index
        self._piece = {}

    def why(self, texts: Texts) -> str | None:
        if normalised(texts.question) in self.index.exact:
            return "exact"
        if any(self._overlaps(piece) for piece in texts.pieces):
            return "ngram"
        return None

    def _overlaps(self, piece: str) -> bool:
        if piece not in self._piece:
            self._piece[piece] = not self.index.grams.isdisjoint(ngrams(piece))
        return self._piece[piece]


RULE = (f"A training row is dropped when its question (for a dialogue turn: the conversation so far and the gold "
        f"reply) equals, once normalised as lm-eval's janitor does, that of a document some qahub task evaluates, "
        f"or when any {N}-gram of its non-template text (question or turns, and reply; not the context: a shared "
        f"document or knowledge text is not a leaked answer, a shared reply is) is one of an evaluated document's "
        f"(lm-eval's decontamination n; for a text mostly in CJK characters, {CJK_N} characters). Evaluated documents: every document of every "
        f"split a qahub task of the corpus declares for evaluation other than train (its test and validation "
        f"splits), in every config it runs on. Few-shot pools are training data and are allowed.")
