"""Reading the answer letter out of a model's reply, two ways.

- ``strict``: the seed's rule. The answer is the line after the last «Ответ:» marker (any case; «Ответ -»,
  markdown bold around the marker or the letter, a trailing period or parenthesis and surrounding whitespace
  are tolerated), and it must be one of the nine capital Cyrillic letters А Б В Г Д Е Ё Ж З. A reply without
  a marker that is the letter alone (the format of MERA's few-shot targets, ``outputs.strip()``), with the
  same decoration tolerated, is read as that letter.
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


def reply_text(reply):
    """A reply as text: None and anything that is not a string are an empty (unreadable) reply."""
    return reply if isinstance(reply, str) else ""


# the characters other than upper and lower case that re.IGNORECASE matches to о, т, в (Cyrillic small letters
# narrow o, tall te, three-legged te, rounded ve): lower-cased and mapped so, a text finds «ответ» where the
# marker pattern would
_EXTRA_CASES = str.maketrans("ᲂᲄᲅᲀ", "оттв")
_EXTRA_CASE_CHARS = re.compile("[ᲂᲄᲅᲀ]")


def last_marker_end(reply):
    """Where the text after the last answer marker starts, or None. The same as the end of the last match of
    ``_MARKER.finditer(reply)``, found from the end of the reply (markers cannot overlap)."""
    folded = reply.lower()
    if _EXTRA_CASE_CHARS.search(folded):
        folded = folded.translate(_EXTRA_CASES)
    if len(folded) == len(reply):  # else a character lower-cased to two: positions would shift
        position, tries = len(folded), 0
        while tries < 4 and (position := folded.rfind("ответ", 0, position)) >= 0:
            match = _MARKER.match(reply, position)
            if match:
                return match.end()
            tries += 1
        if position < 0:
            return None
    matches = list(_MARKER.finditer(reply))  # many «ответ» without a colon: one linear scan
    return matches[-1].end() if matches else None


def answer_line(reply):
    """The first non-empty line after the last answer marker, or None when there is no marker."""
    reply = reply or ""
    end = last_marker_end(reply)
    if end is None:
        return None
    lines = [line.strip() for line in reply[end:].splitlines()]
    return next((line for line in lines if line.strip(_DECORATION)), "")


def read_letter(reply, lenient=False):
    """``(letter, None)`` or ``(None, reason)``; the letter is one of the nine, not yet checked against the options."""
    return read_letters(reply)[1 if lenient else 0]


def read_letters(reply):
    """The strict and the lenient reading of one reply, from one search for the marker."""
    reply = reply_text(reply)
    line = answer_line(reply)
    bare = line is None
    core = _undecorate(reply.strip() if bare else line)
    lenient = core.translate(LATIN_LOOKALIKES) if len(core) == 1 else core  # only one character can be a letter
    return _letter(core, bare), _letter(lenient, bare)


def _letter(core, bare):
    if len(core) == 1 and core in LETTERS:
        return core, None
    if bare:
        return None, "no «Ответ:» marker and not a bare letter"
    return None, f"{core[:40]!r} after the marker is not one of the letters {' '.join(LETTERS)}"


def _undecorate(text):
    """Strip whitespace, markdown emphasis and opening parentheses in front; the same, periods and closing
    parentheses behind."""
    return text.lstrip(_DECORATION + "(").rstrip(_DECORATION + ".)")
