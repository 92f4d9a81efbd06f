"""The reply parser of ``jeopardy_meteor``: a model's free-form reply -> the answer it gives, never raising.

Steps: a reply that is not a string, or not valid Unicode text (a lone surrogate), is ``unparseable``. Else
take the text after the last «Ответ:» marker when there is one, then its first non-empty line, then strip
markdown emphasis, heading and quote marks, quotation marks enclosing the whole answer, and a trailing
period. What is left is the answer; an empty one, or an abstention phrase («Пас», «не знаю», ...), is an
abstention.
"""

import re
import unicodedata

from .checks import is_text

ANSWERED, ABSTAINED, UNPARSEABLE = "answer", "abstained", "unparseable"

_MARKER = re.compile(r"ответ\s*:", re.IGNORECASE)
_EDGE = " \t\r\n\u00a0*_`~"  # whitespace and markdown emphasis / code marks, stripped at both ends
_LEAD = "#>"  # markdown heading and block quote marks, stripped at the start only
_PAIRS = {"«": "»", '"': '"', "“": "”", "„": "“", "'": "'", "‘": "’"}
# Normalized as _phrase() does: lower case, ё -> е, punctuation removed, single spaces.
ABSTENTIONS = frozenset({
    "пас", "я пас", "пасую", "пропуск", "пропускаю", "не знаю", "я не знаю", "не знаю ответа",
    "не знаю ответ", "нет ответа", "без ответа", "ответа нет", "затрудняюсь", "затрудняюсь ответить",
    "не могу ответить", "не уверен", "не уверена", "воздерживаюсь",
    "pass", "i pass", "skip", "no answer", "i dont know", "i don't know", "i do not know", "dont know", "idk",
})
_LONGEST = 40  # no abstention phrase is longer, even with punctuation around it


def parse_reply(reply):
    """``(answer, status)``: status is ``"answer"``, ``"abstained"`` (answer ``""``) or ``"unparseable"``
    (answer ``""``: not a string, or text with a lone surrogate)."""
    if not is_text(reply):
        return "", UNPARSEABLE
    answer = clean(first_line(after_marker(reply)))
    if not answer or (len(answer) <= _LONGEST and _phrase(answer) in ABSTENTIONS):
        return "", ABSTAINED
    return answer, ANSWERED


def after_marker(text):
    """The text after the last «Ответ:» (any case), or the whole text without a marker."""
    ends = [match.end() for match in _MARKER.finditer(text)]
    return text[ends[-1]:] if ends else text


def first_line(text):
    for line in text.splitlines():
        if line.strip(_EDGE):
            return line
    return ""


def clean(text):
    """Strip emphasis, heading marks, enclosing quotes and a trailing period until nothing changes."""
    while True:
        before = text
        text = text.strip(_EDGE).lstrip(_LEAD).strip(_EDGE)
        if len(text) > 1 and _PAIRS.get(text[0]) == text[-1]:
            text = text[1:-1]
        text = _without_final_period(text)
        if text == before:
            return text


def _without_final_period(text):
    """Drop one final period, except after an abbreviation that keeps it as one token («т.д.», «А.С.», «Ф.»):
    the tokenizer drops a period that stands alone anyway, so only the answer's look changes."""
    if not text.endswith(".") or text.endswith(".."):
        return text
    word = text[:-1].rsplit(None, 1)[-1] if text[:-1].strip() else ""
    if len(word) < 2 or "." in word:
        return text
    return text[:-1]


def _phrase(text):
    text = text.lower().replace("ё", "е").replace("’", "'")
    text = "".join(" " if unicodedata.category(char).startswith("P") and char != "'" else char for char in text)
    return " ".join(text.split())
