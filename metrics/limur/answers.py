"""Reading the answer letter out of a model's reply, two ways.

- ``strict``: the seed's rule. The answer is the line after the last «Ответ:» marker (any case; «Ответ -»,
  markdown bold around the marker or the letter, a trailing period or parenthesis and surrounding whitespace
  are tolerated), and it must be one of the nine capital Cyrillic letters А Б В Г Д Е Ё Ж З.
- ``lenient``: the same, but Latin capitals that look like Cyrillic ones are read as those (A→А, B→В, E→Е,
  Ë→Ё, …). Е and Ё stay distinct letters, as in the seed, where they name different options.
"""

import re

LETTERS = "АБВГДЕЁЖЗ"

# Latin capitals that render like Cyrillic capitals; only A, B, E and Ë land on one of the nine letters, the
# rest turn a Latin reply into the Cyrillic letter it imitates, which is then not among the nine.
LATIN_LOOKALIKES = str.maketrans("ABEËCHKMOPTXY", "АВЕЁСНКМОРТХУ")

# no two adjacent runs of \s* (that backtracking would make quadratic on a long run of spaces)
_MARKER = re.compile(r"(?<![а-яё])ответ\s*(?:(?:\*\*|__)\s*)?(?::|[-–—])", re.IGNORECASE)
_DECORATION = " \t*_`"


def answer_line(reply):
    """The first non-empty line after the last answer marker, or None when there is no marker."""
    matches = list(_MARKER.finditer(reply or ""))
    if not matches:
        return None
    lines = [line.strip() for line in reply[matches[-1].end():].splitlines()]
    return next((line for line in lines if line.strip(_DECORATION)), "")


def read_letter(reply, lenient=False):
    """``(letter, None)`` or ``(None, reason)``; the letter is one of the nine, not yet checked against the options."""
    line = answer_line(reply)
    if line is None:
        return None, "no «Ответ:» marker"
    core = _undecorate(line)
    if lenient:
        core = core.translate(LATIN_LOOKALIKES)
    if len(core) == 1 and core in LETTERS:
        return core, None
    return None, f"{core[:40]!r} after the marker is not one of the letters {' '.join(LETTERS)}"


def _undecorate(text):
    """Strip whitespace, markdown emphasis and opening parentheses in front; the same, periods and closing
    parentheses behind."""
    return text.lstrip(_DECORATION + "(").rstrip(_DECORATION + ".)")
