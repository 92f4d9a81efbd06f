"""Reading a model's free-form reply: the answer and, when given, the derivation triples. Never raises.

The reply format asked for by the ``qahub_jemhopqa_derivations`` task (and rendered by ``render``)::

    回答: 星の歌
    導出: [["星の歌", "発売日", ["2001年4月1日"]], ["月の歌", "発売日", ["2003年9月9日"]]]

- answer: the rest of the first line starting with ``回答:`` (or ``回答：``; the marker or the answer may be
  in markdown bold); without such a line, the first paragraph (text before the first blank line) of what
  precedes a ``導出:`` marker, stripped: for a plain answer-only reply, exactly llm-jp-eval's reading.
- derivations: the JSON list that follows the first ``導出:`` marker (it may span lines): a list of
  ``[subject, relation, [object, ...]]``; an object given as one string, numbers for strings, and records
  ``{"subject", "relation", "objects"}`` are accepted. No marker, broken JSON or another shape: unreadable.
- lone surrogates (not Unicode text) become U+FFFD; anything but a string reads as nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_SURROGATE = re.compile("[\ud800-\udfff]")
_ANSWER = re.compile(r"^[ \t>*#_-]*回答[*_]*[ \t]*[:：][*_]*[ \t]*(.*)$", re.MULTILINE)
_DERIVATIONS = re.compile(r"^[ \t>*#_-]*導出[*_]*[ \t]*[:：]", re.MULTILINE)
_BOLD = re.compile(r"(\*\*|__)(.+)\1")  # a markdown bold answer
_DECODER = json.JSONDecoder()
MAX_JSON_CHARS = 100_000  # a longer derivation list is not read (it could only be garbage)


@dataclass
class Reply:
    answer: str | None = None  # None: no answer could be read
    derivations: list = field(default_factory=list)
    derivations_read: bool = False


def clean(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def parse_reply(reply) -> Reply:
    if not isinstance(reply, str):
        return Reply()
    text = clean(reply)
    marker = _DERIVATIONS.search(text)
    derivations = read_derivations(text[marker.end():]) if marker else None
    return Reply(answer=_answer(text, marker), derivations=derivations or [], derivations_read=derivations is not None)


def _answer(text: str, marker) -> str | None:
    found = _ANSWER.search(text)
    if found:
        answer = found.group(1).strip()
        bold = _BOLD.fullmatch(answer)
        answer = bold.group(2).strip() if bold else answer
    else:
        answer = text[: marker.start() if marker else len(text)].split("\n\n")[0].strip()
    return answer or None


def read_derivations(text: str) -> list | None:
    """The derivation list at the start of ``text`` (after blanks and an optional code fence), or None."""
    start = text.find("[")
    if start < 0 or text[:start].strip(" \t\r\n`json") != "":
        return None
    try:
        value, _ = _DECODER.raw_decode(text[start: start + MAX_JSON_CHARS])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    steps = [_step(step) for step in value]
    return None if any(step is None for step in steps) else steps


def _step(step) -> list | None:
    if isinstance(step, dict):
        step = [step.get("subject"), step.get("relation"), step.get("objects")]
    if not (isinstance(step, list) and len(step) == 3):
        return None
    subject, relation, objects = _scalar(step[0]), _scalar(step[1]), step[2]
    objects = [objects] if not isinstance(objects, list) else objects
    objects = [_scalar(obj) for obj in objects]
    if subject is None or relation is None or any(obj is None for obj in objects):
        return None
    return [subject, relation, objects]


def _scalar(value) -> str | None:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


# a reasoning model's closed thinking block before its answer
_THINK = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)
_QUOTES = {"『": "』", "「": "」"}


def answer_text(reply):
    """What ``qahub_jemhopqa`` scores as the model's output (llm-jp-eval then reads its first paragraph, NFKC):
    a leading closed ``<think>...</think>`` block dropped; where a line starts with the answer label «回答:» or
    «回答：» (the prompt asks for the 回答; a base model writes it as a label), the rest of the first such line;
    an answer wholly inside one pair of 『』 or 「」 (how a base model quotes a title) without them. Any other
    reply is returned as it is; anything but a string too (it scores 0)."""
    if not isinstance(reply, str):
        return reply
    text = _THINK.sub("", reply, count=1)
    found = _ANSWER.search(text)
    if not found:
        return text
    answer = found.group(1).strip()
    bold = _BOLD.fullmatch(answer)
    answer = bold.group(2).strip() if bold else answer
    close = _QUOTES.get(answer[:1])
    if close and answer.endswith(close) and close not in answer[1:-1]:
        answer = answer[1:-1].strip()
    return answer


def render(answer: str, derivations: list) -> str:
    """The reply format above for a gold answer and upstream nested derivations; one line each (JSON escapes
    line breaks; line breaks in the answer become spaces), so it never holds a blank line."""
    answer = " ".join(answer.splitlines())
    return f"回答: {answer}\n導出: {json.dumps(derivations, ensure_ascii=False)}"
