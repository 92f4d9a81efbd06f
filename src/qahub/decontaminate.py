"""Decontamination of training rows against every document a qahub task evaluates.

An index (``EvaluationIndex``) holds, for every evaluation document, the hashes of the 13-grams of its
non-template text (lm-eval's decontamination n: ``lm_eval/decontamination``) and the normalised text of its
question (``exact``). A training document is contaminated when its question equals one of them, or when any
13-gram of its own non-template text is in the index: one hash-set look-up per n-gram, never a pairwise scan.

Text is normalised as lm-eval's janitor does (case folded, punctuation dropped, whitespace runs one space), after
Unicode NFKC (full-width ``２００１年にＣＤ`` is ``2001年にCD``, as JEMHopQA's own scorer reads it) and with Russian
``ё`` read as ``е`` (Russian text writes either), and cut into words at whitespace; a CJK character (Japanese,
Chinese) is a word of its own, since those scripts put no space between words, and a text written mostly in them is
cut into 26-grams of characters (two characters a word: 13 characters is a shared template phrase such as
どちらが先に生まれましたか, not a shared question). A dialogue turn's pieces (the turns so far and its
reply) are one run of words: an n-gram may span the boundary between two turns, so a test conversation copied after
a greeting, or a reply cut into two turns, still shares its n-grams (a question and its answer stay apart: see
``Grams.hit``). A text shorter than n words gives no
n-gram: a short reply ("YES", a MERA letter, a Jeopardy answer) recurs across distinct questions and is checked
with its question, by the exact rule.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import NamedTuple

N = 13  # lm-eval's decontamination n-gram size
CJK_N = 2 * N  # in characters, for a text written mostly in CJK characters (a Japanese word is ~2 characters)
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F))
_CJK = "".join(f"{chr(first)}-{chr(last)}" for first, last in _CJK_RANGES)
_WORD = re.compile(f"[{_CJK}]|[^\\W_]+")
_CJK_WORDS = frozenset(chr(c) for first, last in _CJK_RANGES for c in range(first, last + 1))  # one-character words


def normal(text: str) -> str:
    """``text`` NFKC-normalised, case-folded, ``ё`` read as ``е``."""
    return unicodedata.normalize("NFKC", text).casefold().replace("ё", "е")


def words(text: str) -> list[str]:
    """``text`` normalised (``normal``), as words: runs of letters and digits, each CJK character one word."""
    return _WORD.findall(normal(text))


def ngrams(text: str, n: int | None = None) -> set[int]:
    """The hashes of the ``n``-grams of ``text``'s words (none for a text of fewer than ``n`` words); by default
    ``N``, or ``CJK_N`` characters for a text whose words are mostly CJK characters."""
    tokens = tuple(words(text))
    return set(_hashes(tokens, n or size(len(tokens), _cjk(tokens))))


def size(count: int, cjk: int) -> int:
    """The n of a text of ``count`` words, ``cjk`` of them CJK characters: ``CJK_N`` when they are most."""
    return CJK_N if 2 * cjk > count else N


_HAS_CJK = re.compile(f"[{_CJK}]").search
_ASCII_WORD = re.compile(r"[^\W_]+")  # _WORD on ASCII text


def _cjk(tokens: list[str]) -> int:
    return sum(map(_CJK_WORDS.__contains__, tokens))


def _hashes(tokens: tuple, n: int) -> list[int]:
    return [hash(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]  # none when there are fewer than n tokens


class Texts(NamedTuple):
    """The non-template text of one document: ``parts`` (its question, or a dialogue turn's turns so far), and
    ``reply`` (its target), whose n-grams are checked. Its question, checked by exact match, is its parts joined by
    newlines (for a dialogue turn, the reply too: the conversation so far and the reply). A context (a Topical-Chat
    knowledge text, a doc2dial document) is neither: a shared document is not a leaked answer."""

    parts: tuple[str, ...]
    reply: str
    dialogue: bool = False


class Piece(NamedTuple):
    """One distinct piece of text, cut into words once: its words joined by spaces, its words, how many are CJK."""

    normal: str
    tokens: tuple
    cjk: int


class Run(NamedTuple):
    """The pieces of a dialogue document so far (its turns, then its reply) read as one: their normal forms
    joined (the empty ones left out), how many words, how many CJK ones, the run before the last piece and that
    piece, and ``ends``: ``{n: (tail, hit)}``, the last n - 1 words and whether any n-gram so far measured true."""

    normal: str
    count: int
    cjk: int
    before: Run | None
    piece: Piece | None
    ends: dict


class Grams:
    """The n-grams of documents made of pieces, each worked out once and handed to ``measure(hashes)``. A
    dialogue document's turns so far are the turn before's turns and reply: what they come to (``Run``) is kept for
    the documents that follow, so a turn costs its own piece (its n-grams with the n - 1 words before it), not its
    whole history; two runs of the same words (a reply, and the same turn in the next document's history written
    with other whitespace) are one. Any other document's pieces are measured on their own, each once."""

    RUNS = 4096  # the runs kept; the documents of a conversation come together, so only the latest are needed

    def __init__(self, measure):
        self.measure, self.pieces, self.own = measure, {}, {}
        empty = Run("", 0, 0, None, None, {})
        self.runs, self.by_words, self._last = {(): empty}, {"": empty}, (None, None)

    def piece(self, text: str) -> Piece:
        found = self.pieces.get(text)
        if found is None:
            if text.isascii():  # most of Topical-Chat and doc2dial: NFKC keeps it, no CJK word, no ё
                tokens = tuple(_ASCII_WORD.findall(text.lower()))
                found = Piece(" ".join(tokens), tokens, 0)
            else:
                folded = normal(text)
                tokens = tuple(_WORD.findall(folded))
                found = Piece(" ".join(tokens), tokens, _cjk(tokens) if _HAS_CJK(folded) else 0)
            self.pieces[text] = found
        return found

    def question(self, texts: Texts) -> str:
        """``texts``' normalised question: its parts normalised and joined (a dialogue's, its reply too). A newline
        is no word, so the words of the whole are its parts' in turn."""
        if texts.dialogue:
            return self._run_of(texts).normal
        return " ".join(filter(None, [self.piece(text).normal for text in texts.parts]))

    def hit(self, texts: Texts) -> bool:
        """Whether ``measure`` is true of any n-gram of ``texts`` (measuring each distinct one once). A dialogue's
        pieces are one run of words, n by the whole; any other document's question and reply are apart: a
        question's closing template words and its answer's opening ones are no leak (JEMHopQA's ``どちらですか`` +
        ``回答: X``)."""
        if not texts.dialogue:
            pieces = [self.piece(text) for text in (*texts.parts, texts.reply)]
            found = [self._own(piece, size(len(piece.tokens), piece.cjk)) for piece in pieces
                     if len(piece.tokens) >= N]
            return any(found)
        run = self._run_of(texts)
        if run.count < N:  # too short for either n
            return False
        return self._end(run, size(run.count, run.cjk))[1]

    def _run_of(self, texts: Texts) -> Run:
        """``run`` of a dialogue document's pieces; the last document's kept (``question`` then ``hit``)."""
        if texts is not self._last[0]:
            self._last = (texts, self.run((*texts.parts, texts.reply)))
        return self._last[1]

    def run(self, key: tuple) -> Run:
        """What the pieces ``key`` come to, from what ``key[:-1]`` came to."""
        found = self.runs.get(key)
        if found is None:
            before, piece = self.run(key[:-1]), self.piece(key[-1])
            normal = f"{before.normal} {piece.normal}" if before.normal and piece.normal else \
                before.normal or piece.normal
            found = self.by_words.get(normal)  # its words: what a run comes to depends on them alone
            if found is None:
                found = Run(normal, before.count + len(piece.tokens), before.cjk + piece.cjk, before, piece, {})
            if len(self.runs) >= self.RUNS:
                self.runs, self.by_words = {(): self.runs[()]}, {"": self.runs[()]}
            self.runs[key] = self.by_words[normal] = found
        return found

    def _end(self, run: Run, n: int) -> tuple:
        """``(tail, hit)`` of the pieces of ``run`` read as one run of words in ``n``-grams, from the latest run
        before it whose end is known: each piece measured with the last n - 1 words before it, which gives the
        n-grams that end in it (those across the boundary and its own), each once."""
        chain = []
        while n not in run.ends and run.piece is not None:
            chain.append(run)
            run = run.before
        tail, hit = run.ends.get(n, ((), False))
        for run in reversed(chain):
            if run.piece.tokens:
                words = tail + run.piece.tokens
                hit = bool(self.measure(_hashes(words, n))) | hit  # measured whatever ``hit``: the index adds them
                tail = words[1 - n:]
            run.ends[n] = (tail, hit)
        return tail, hit

    def _own(self, piece: Piece, n: int):
        key = (piece.normal, n)
        if key not in self.own:
            self.own[key] = self.measure(_hashes(piece.tokens, n))
        return self.own[key]


@dataclass
class EvaluationIndex:
    exact: set = field(default_factory=set)
    grams: set = field(default_factory=set)
    documents: int = 0

    def __post_init__(self):
        self._grams = Grams(self.grams.update)  # each piece and boundary is indexed the first time it is seen

    def add(self, texts: Texts):
        self.documents += 1
        question = self._grams.question(texts)
        if question:
            self.exact.add(question)
        self._grams.hit(texts)


class Checker:
    """``why(texts)``: None for a clean training document, else ``"exact"`` or ``"ngram"``; each distinct piece
    and boundary is cut into n-grams and looked up once."""

    def __init__(self, index: EvaluationIndex):
        self.index = index
        self._grams = Grams(lambda hashes: not index.grams.isdisjoint(hashes))

    def why(self, texts: Texts) -> str | None:
        if self._grams.question(texts) in self.index.exact:
            return "exact"
        if self._grams.hit(texts):
            return "ngram"
        return None


RULE = (f"A training row is dropped when its question (for a dialogue turn: the conversation so far and the gold "
        f"reply) equals, once normalised as lm-eval's janitor does (after Unicode NFKC, with ё read as е), that of "
        f"a document some qahub task evaluates, or when any {N}-gram of its non-template text (question or turns, "
        f"and reply; a dialogue's turns read as one run of words: an n-gram may span two turns; not the context: a shared document "
        f"or knowledge text is not a leaked answer, a shared reply is) is one of an evaluated document's "
        f"(lm-eval's decontamination n; for a text mostly in CJK characters, {CJK_N} characters). Evaluated "
        f"documents: every document of every split a qahub task of the corpus declares for evaluation other than "
        f"train (its test and validation splits), in every config it runs on. Few-shot pools are training data "
        f"and are allowed.")
