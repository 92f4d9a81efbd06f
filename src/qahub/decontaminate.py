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
from typing import NamedTuple

N = 13  # lm-eval's decontamination n-gram size
CJK_N = 2 * N  # in characters, for a text written mostly in CJK characters (a Japanese word is ~2 characters)
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F))
_CJK = "".join(f"{chr(first)}-{chr(last)}" for first, last in _CJK_RANGES)
_WORD = re.compile(f"[{_CJK}]|[^\\W_]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_WORDS = frozenset(chr(c) for first, last in _CJK_RANGES for c in range(first, last + 1))  # one-character words


def words(text: str) -> list[str]:
    """``text`` case-folded, as words: runs of letters and digits, each CJK character one word."""
    return _WORD.findall(text.casefold())


def ngrams(text: str, n: int | None = None) -> set[int]:
    """The hashes of the ``n``-grams of ``text``'s words (none for a text of fewer than ``n`` words); by default
    ``N``, or ``CJK_N`` characters for a text whose words are mostly CJK characters."""
    return ngrams_of(words(text), n, text)


def ngrams_of(tokens: list[str], n: int | None = None, text: str | None = None) -> set[int]:
    """``ngrams`` of a text already cut into ``words``."""
    return set(ngram_hashes(tokens, n, text))


def ngram_hashes(tokens: list[str], n: int | None = None, text: str | None = None):
    """The hashes of ``ngrams_of``, one at a time (``text``, when given, spares the count of CJK words in a text
    without a CJK character)."""
    if n is None:
        if len(tokens) < N:  # too short for either n
            return iter(())
        mostly_cjk = (text is None or _CJK_CHAR.search(text)) and 2 * sum(map(_CJK_WORDS.__contains__, tokens)) > len(tokens)
        n = CJK_N if mostly_cjk else N
    return map(hash, zip(*(tokens[i:] for i in range(n))))  # none when there are fewer than n tokens


class Texts(NamedTuple):
    """The non-template text of one document: ``parts`` (its question, or a dialogue turn's turns so far), and
    ``reply`` (its target), whose n-grams are checked. Its question, checked by exact match, is its parts joined by
    newlines (for a dialogue turn, the reply too: the conversation so far and the reply). A context (a Topical-Chat
    knowledge text, a doc2dial document) is neither: a shared document is not a leaked answer."""

    parts: tuple[str, ...]
    reply: str
    dialogue: bool = False


class Pieces:
    """Each distinct piece of text cut into words once (a dialogue's turn recurs in every later turn's history),
    kept as ``(its normalised text, what measure(its words, it) says)``."""

    def __init__(self, measure):
        self.measure, self.known = measure, {}

    def add(self, piece: str) -> tuple:
        tokens = words(piece)
        known = self.known[piece] = (" ".join(tokens), self.measure(tokens, piece))
        return known

    def of(self, texts: Texts) -> tuple[str, list]:
        """``texts``' normalised question and the pieces it is made of, its reply last. The question normalised is
        its parts normalised and joined: a newline is no word, so the words of the whole are its parts' in turn."""
        known, add = self.known, self.add
        pieces = [known.get(piece) or add(piece) for piece in (*texts.parts, texts.reply)]
        question = pieces if texts.dialogue else pieces[:-1]
        return " ".join(filter(None, [normal for normal, _ in question])), pieces


@dataclass
class EvaluationIndex:
    exact: set = field(default_factory=set)
    grams: set = field(default_factory=set)
    documents: int = 0

    def __post_init__(self):
        self._pieces = Pieces(self._index)  # a piece's n-grams are indexed the first time it is seen

    def _index(self, tokens: list[str], text: str):
        self.grams |= ngrams_of(tokens, text=text)

    def add(self, texts: Texts):
        self.documents += 1
        question, _ = self._pieces.of(texts)
        if question:
            self.exact.add(question)


class Checker:
    """``why(texts)``: None for a clean training document, else ``"exact"`` or ``"ngram"``; each distinct piece
    is cut into words and n-grams once."""

    def __init__(self, index: EvaluationIndex):
        self.index = index
        self._pieces = Pieces(lambda tokens, text: not index.grams.isdisjoint(ngram_hashes(tokens, text=text)))

    def why(self, texts: Texts) -> str | None:
        question, pieces = self._pieces.of(texts)
        if question in self.index.exact:
            return "exact"
        if any(overlaps for _, overlaps in pieces):
            return "ngram"
        return None


RULE = (f"A training row is dropped when its question (for a dialogue turn: the conversation so far and the gold "
        f"reply) equals, once normalised as lm-eval's janitor does, that of a document some qahub task evaluates, "
        f"or when any {N}-gram of its non-template text (question or turns, and reply; not the context: a shared "
        f"document or knowledge text is not a leaked answer, a shared reply is) is one of an evaluated document's "
        f"(lm-eval's decontamination n; for a text mostly in CJK characters, {CJK_N} characters). Evaluated documents: every document of every "
        f"split a qahub task of the corpus declares for evaluation other than train (its test and validation "
        f"splits), in every config it runs on. Few-shot pools are training data and are allowed.")
