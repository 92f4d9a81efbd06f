"""Tokenizers for ``jeopardy_meteor``: spaCy's Russian tokenizer when spaCy is installed, else a regex imitation.

The official notebook tokenizes with ``spacy.load("ru_core_news_lg")`` and keeps the tokens that are not
``is_punct``. That model's tokenizer is spaCy's rule-based Russian tokenizer (no statistical part), which
``spacy.blank("ru")`` builds without any model download. Whitespace tokens (a second space, a newline) are
not punctuation, so the notebook keeps them, and so do both tokenizers here.

Without spaCy, ``regex_tokens`` follows the same steps with rules written for this module: split on
whitespace as spaCy does, peel punctuation off both ends of each chunk, split a few infixes (a hyphen or
dash between letters, ``/ : < > =`` before a letter, a comma between letters, a hyphen between digits),
and keep URLs, e-mail addresses and dotted abbreviations («т.е.», «А.С.») whole. It knows no exception list,
so it can differ from spaCy on some abbreviations («см.», «г.»), units glued to numbers («5км») and
English contractions («don't»).
"""

import itertools
import re
import unicodedata

TOKENIZERS = ("auto", "spacy", "regex")
REGEX_NAME = "regex (spaCy-like, no spaCy installed or tokenizer='regex')"

_KEEP_WHOLE = re.compile(r"(?:[^\W\d_]{1,3}\.){2,}|\S*(?:://|@|www\.)\S*")
_ELLIPSIS = re.compile(r"\.\.+|…")
_INFIX = re.compile(
    r"\.\.+|…"
    r"|(?<=[^\W\d_])[-‐‑‒–—―]+(?=[^\W\d_])"
    r"|(?<=\d)[-+*^](?=\d)"
    r"|(?<=[^\W_])[:<>=/](?=[^\W\d_])"
    r"|(?<=[^\W\d_]),(?=[^\W\d_])"
)
_QUOTE_LIKE = "'’"
_CLITIC = re.compile(r"(?<=[^\W\d_])['’][sS]$")  # English possessive: Pepper's -> Pepper 's


def is_punct(text):
    """spaCy's ``is_punct``: every character is Unicode punctuation (category P*)."""
    return all(unicodedata.category(char).startswith("P") for char in text)


def tokenizer_for(kind="auto"):
    """``(tokenize, name)``: ``tokenize(text)`` gives the notebook's non-punctuation tokens."""
    if kind not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {kind!r}")
    if kind != "regex":
        try:
            import spacy
        except ImportError:
            if kind == "spacy":
                raise ImportError("tokenizer='spacy' needs spaCy: pip install 'spacy>=3.7,<4'") from None
        else:
            return _spacy_tokens(spacy), f"spacy-blank-ru {spacy.__version__}"
    return regex_tokens, REGEX_NAME


def _spacy_tokens(spacy):
    nlp = spacy.blank("ru")
    # Only the token texts are used, so the vocabulary need not compute lexical attributes (like_num, shape,
    # ...) for each new word: that halves the time. Splitting uses the affix and exception rules alone, and
    # is_punct below is spaCy's own definition.
    nlp.vocab.lex_attr_getters = {}
    tokenizer = nlp.tokenizer

    def tokenize(text):
        return [token.text for token in tokenizer(text) if not is_punct(token.text)]

    return tokenize


def regex_tokens(text):
    return [token for token in _all_tokens(text) if not is_punct(token)]


def _all_tokens(text):
    out = []
    for space, group in itertools.groupby(text, str.isspace):
        chunk = "".join(group)
        if not space:
            out.extend(_split_chunk(chunk))
            continue
        if out and chunk[0] == " ":  # one space after a token belongs to that token
            chunk = chunk[1:]
        if chunk:
            out.append(chunk)
    return out


def _split_chunk(chunk):
    prefixes, suffixes = [], []
    while chunk and not _KEEP_WHOLE.fullmatch(chunk):
        cut = _prefix_length(chunk)
        if cut:
            prefixes.append(chunk[:cut])
            chunk = chunk[cut:]
            continue
        cut = _suffix_length(chunk)
        if not cut:
            break
        suffixes.insert(0, chunk[-cut:])
        chunk = chunk[:-cut]
    return prefixes + _split_infixes(chunk) + suffixes


def _prefix_length(chunk):
    match = _ELLIPSIS.match(chunk)
    if match:
        return match.end()
    first = chunk[0]
    if first in "+-" and chunk[1:2].isdigit():  # a signed number
        return 0
    if len(chunk) > 1 and (first in "§%=+" or unicodedata.category(first) in _PREFIX_CATEGORIES):
        return 1
    return 0


_PREFIX_CATEGORIES = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sc", "So"}


def _suffix_length(chunk):
    if len(chunk) < 2:
        return 0
    match = _ELLIPSIS.search(chunk)
    if match and match.end() == len(chunk) and match.start() > 0:
        return len(chunk) - match.start()
    if _CLITIC.search(chunk):
        return 2
    last, before = chunk[-1], chunk[-2]
    if last == ".":
        return 1 if _period_is_a_suffix(chunk) else 0
    if last in _QUOTE_LIKE and before.isalpha():
        return 0
    if unicodedata.category(last).startswith("P") or (last == "%" and before.isdigit()):
        return 1
    return 0


def _period_is_a_suffix(chunk):
    before = chunk[-2]
    if before.islower() or before.isdigit() or unicodedata.category(before).startswith("P"):
        return True
    return len(chunk) > 2 and before.isupper() and chunk[-3].isupper()


def _split_infixes(chunk):
    if not chunk or _KEEP_WHOLE.fullmatch(chunk):
        return [chunk] if chunk else []
    out, start = [], 0
    for match in _INFIX.finditer(chunk):
        if match.start() == 0 or match.end() == len(chunk):
            continue
        out += [chunk[start:match.start()], match.group()]
        start = match.end()
    out.append(chunk[start:])
    return out
