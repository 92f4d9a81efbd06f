"""Sudachi tokenization and synonym lookup as in the official JEMHopQA ``evaluate.py``.

A token is the set of strings that count as the same word: its surface, its normalized form and its synonyms
(or, for a number followed by a counter, the number without one leading zero joined to the counter).
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

DICTIONARIES = ("full", "core", "small")
CACHE_LIMIT = 200_000  # cached texts per tokenizer
_SKIPPED_POS = ("空白", "補助記号", "助詞", "助動詞")
_LEADING_ZERO = re.compile(r"^0")


def installed_dictionaries() -> list[str]:
    return [name for name in DICTIONARIES if importlib.util.find_spec(f"sudachidict_{name}") is not None]


def pick_dictionary(name: str | None) -> str:
    installed = installed_dictionaries()
    if name is None:
        if not installed:
            raise RuntimeError("no Sudachi dictionary is installed: pip install sudachidict-full (or -core, -small)")
        return installed[0]
    if name not in DICTIONARIES:
        raise ValueError(f"dictionary must be one of {DICTIONARIES} or None, got {name!r}")
    if name not in installed:
        raise RuntimeError(f"the Sudachi {name} dictionary is not installed: pip install sudachidict-{name}")
    return name


class SynonymTable:
    """Synonym groups with chikkarpy's lookup rules (verbs enabled): the groups whose entry for ``word`` is not
    ambiguous give their other head words. Build it from a mapping ``{word: [synonym, ...]}`` or from a
    synonym source file in the Sudachi/chikkarpy CSV format (e.g. JEMHopQA's ``sample_user_dic.txt``)."""

    def __init__(self, groups: dict, name: str):
        self.groups = groups  # word -> list of (ambiguous, [head words of the group])
        self.name = name

    @classmethod
    def from_mapping(cls, mapping: dict, name: str = "mapping"):
        groups = {}
        for word, synonyms in mapping.items():
            if not isinstance(word, str) or not _is_str_list(synonyms):
                raise ValueError(f"synonym mapping: entry {word!r} must map a string to a list of strings")
            groups[word] = [(False, [word, *synonyms])]
        return cls(groups, f"{name} ({len(groups)} words)")

    @classmethod
    def from_file(cls, path):
        groups = {}
        for group in _read_synonym_groups(Path(path)):
            heads = [head for head, _ in group]
            for head, ambiguous in group:
                groups.setdefault(head, []).append((ambiguous, heads))
        return cls(groups, f"file {Path(path).name} ({len(groups)} words)")

    def lookup(self, word: str):
        """None when ``word`` is not in the table (the next source is asked), else its synonyms."""
        if word not in self.groups:
            return None
        found = []
        for ambiguous, heads in self.groups[word]:
            if not ambiguous:
                found += [head for head in heads if head != word]
        return found


def _read_synonym_groups(path: Path):
    """Groups of (head word, ambiguous) from a synonym source file: CSV lines, groups separated by blank lines."""
    group, group_id = [], None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"synonym source file {path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            if group:
                yield group
            group, group_id = [], None
            continue
        cols = line.split(",")
        if len(cols) < 9 or not cols[0].strip().isdigit() or cols[2].strip() not in ("0", "1", "2"):
            raise ValueError(f"{path}: line {number}: not a synonym source line "
                             f"(group id, noun flag, ambiguity 0/1/2, ..., head word in column 9): {line!r}")
        if cols[2].strip() == "2":
            continue  # ambiguity 2 = entry switched off
        if group_id is not None and cols[0] != group_id:
            raise ValueError(f"{path}: line {number}: group id {cols[0]} changes inside the group of {group_id}")
        group_id = cols[0]
        group.append((cols[8], cols[2].strip() == "1"))
    if group:
        yield group


class Synonyms:
    """Synonym sources asked in order; the first that knows a word answers (chikkarpy's dictionary precedence)."""

    def __init__(self, sources: list, description: str, official: bool):
        self.sources = sources
        self.description = description
        self.official = official

    def find(self, word: str) -> list:
        for source in self.sources:
            found = source(word)
            if found is not None:
                return list(found)
        return []


def resolve_auto(spec):
    if isinstance(spec, str) and spec == "auto":
        return "chikkarpy" if importlib.util.find_spec("chikkarpy") is not None else "none"
    return spec


def make_synonyms(spec, user_dic=None) -> Synonyms:
    """``spec``: "auto" (chikkarpy, with ``user_dic`` when given, when installed; else none), "chikkarpy", "none"/None/False, a mapping,
    a path to a synonym source file, a callable ``word -> list of synonyms``, or a list of these
    (the first source that knows a word answers)."""
    spec = resolve_auto(spec)
    if user_dic is not None and spec != "chikkarpy":
        raise ValueError(f"user_dic {user_dic} is read by chikkarpy only, but the synonyms are {spec!r}"
                         + (" (chikkarpy is not installed)" if importlib.util.find_spec("chikkarpy") is None else ""))
    if spec in (None, False, "none"):
        return Synonyms([], "none", False)
    if spec == "chikkarpy":
        return _chikkarpy_synonyms(user_dic)
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    sources, names = [], []
    for item in specs:
        source, name = _one_source(item)
        sources.append(source)
        names.append(name)
    return Synonyms(sources, " + ".join(names), False)


def _one_source(item):
    if isinstance(item, dict):
        table = SynonymTable.from_mapping(item)
        return table.lookup, table.name
    if isinstance(item, (str, Path)):
        if not Path(item).is_file():
            raise ValueError(f"synonyms {str(item)!r}: neither 'auto', 'chikkarpy', 'none' nor a synonym source file")
        table = SynonymTable.from_file(item)
        return table.lookup, table.name
    if callable(item):
        return _checked_callable(item), f"callable {getattr(item, '__name__', type(item).__name__)}"
    raise ValueError(f"unknown synonym source {item!r}: expected 'auto', 'chikkarpy', 'none', a mapping, "
                     "a synonym source file path, a callable or a list of these")


def _checked_callable(func):
    def lookup(word):
        found = func(word)
        if found is not None and not (isinstance(found, (list, tuple)) and _is_str_list(list(found))):
            raise ValueError(f"synonym callable returned {found!r} for {word!r}: expected a list of strings")
        return found

    return lookup


def _chikkarpy_synonyms(user_dic) -> Synonyms:
    try:
        from chikkarpy import Chikkar
        from chikkarpy.dictionarylib import Dictionary as ChikkarDictionary
    except ImportError:
        raise RuntimeError("synonyms='chikkarpy' needs chikkarpy: pip install chikkarpy") from None
    chikkar = Chikkar()
    chikkar.add_dictionary(ChikkarDictionary())
    description = "chikkarpy system dictionary"
    if user_dic is not None:
        if not Path(user_dic).is_file():
            raise FileNotFoundError(f"user_dic {user_dic}: no such file (JEMHopQA's compiled user.dic)")
        chikkar.add_dictionary(ChikkarDictionary(str(user_dic)))
        description += " + user.dic" + ("" if Path(user_dic).name == "user.dic" else f" ({user_dic})")
    chikkar.enable_verb()
    return Synonyms([chikkar.find], description, user_dic is not None)


_SUDACHI = {}


def sudachi_tokenizer(dictionary: str):
    """A Sudachi mode C tokenizer; each dictionary is loaded once per process."""
    if dictionary not in _SUDACHI:
        from sudachipy import Dictionary, SplitMode

        sudachi = Dictionary(dict=dictionary)
        make = sudachi.tokenizer if hasattr(sudachi, "tokenizer") else sudachi.create  # create(): sudachipy < 0.6.9
        _SUDACHI[dictionary] = make(mode=SplitMode.C)
    return _SUDACHI[dictionary]


class Tokenizer:
    """Sudachi mode C with the official filter; ``tokens(text)`` is cached when ``cache`` is true."""

    def __init__(self, dictionary: str, synonyms: Synonyms, cache: bool = True):
        self.dictionary = dictionary
        self.synonyms = synonyms
        self._sudachi = sudachi_tokenizer(dictionary)
        self._cache = {} if cache else None

    @property
    def official(self) -> bool:
        return self.dictionary == "full" and self.synonyms.official

    def tokens(self, text: str) -> list:
        if self._cache is None:
            return self._tokenize(text)
        found = self._cache.get(text)
        if found is None:
            if len(self._cache) >= CACHE_LIMIT:  # a long training run should not grow it without end
                self._cache.clear()
            found = self._cache[text] = self._tokenize(text)
        return found

    def _tokenize(self, text: str) -> list:
        morphemes = self._morphemes(text, SUDACHI_MAX_BYTES)
        tokens, skip = [], False
        for i, m in enumerate(morphemes):
            if skip:
                skip = False
                continue
            pos = m.part_of_speech()
            if pos[0] in _SKIPPED_POS:
                continue
            surface = m.surface()
            if i < len(morphemes) - 1 and pos[1] == "数詞" and "助数詞" in morphemes[i + 1].part_of_speech()[2]:
                tokens.append(frozenset([_LEADING_ZERO.sub("", surface) + morphemes[i + 1].surface()]))
                skip = True
            elif pos[1] == "数詞" and surface[0] == "0":
                tokens.append(frozenset([_LEADING_ZERO.sub("", surface)]))
            else:
                tokens.append(frozenset([surface, m.normalized_form(), *self.synonyms.find(surface)]))
        return tokens


    def _morphemes(self, text: str, limit: int) -> list:
        """Sudachi refuses inputs over 49,149 bytes (65,535 once normalized): longer texts are tokenized in
        pieces cut at whitespace or punctuation, else between characters (tokens at the cuts may differ)."""
        if len(text.encode("utf-8")) <= limit:
            try:
                return list(self._sudachi.tokenize(text))
            except Exception as err:  # sudachipy's SudachiError; its normalized text can grow
                if "too long" not in str(err) or limit < 64:
                    raise
                limit //= 2
        morphemes = []
        for piece in split_text(text, limit):
            morphemes += self._morphemes(piece, limit)
        return morphemes


SUDACHI_MAX_BYTES = 49_149
_CUT_AFTER = re.compile(r"[\s、。，．,.!?！？;；:：)）」』】\]]")


def split_text(text: str, limit: int) -> list:
    """``text`` in pieces of at most ``limit`` UTF-8 bytes, each cut after the last whitespace or punctuation
    of its second half when there is one, else at the last character that fits."""
    pieces = []
    while len(text.encode("utf-8")) > limit:
        head = text.encode("utf-8")[:limit].decode("utf-8", "ignore")
        cuts = [m.end() for m in _CUT_AFTER.finditer(head, len(head) // 2)]
        cut = cuts[-1] if cuts else len(head)
        pieces.append(text[:cut])
        text = text[cut:]
    return [*pieces, text] if text else pieces


_TOKENIZERS = {}


def get_tokenizer(dictionary=None, synonyms="auto", user_dic=None, cache=True) -> Tokenizer:
    """A tokenizer for this configuration, built once per process when ``cache`` (loading a dictionary is slow)."""
    name = pick_dictionary(dictionary)
    synonyms = resolve_auto(synonyms)  # "auto" is keyed by what it resolves to now, not by the word "auto"
    key = (name, _spec_key(synonyms), str(user_dic))
    tokenizer = _TOKENIZERS.get(key) if cache else None
    if tokenizer is None:
        tokenizer = Tokenizer(name, make_synonyms(synonyms, user_dic), cache)
        if cache:
            _TOKENIZERS[key] = tokenizer
        if not tokenizer.official:
            warnings.warn(
                f"JEMHopQA scores use the Sudachi {name} dictionary and synonyms: {tokenizer.synonyms.description}; "
                "the official scorer uses the full dictionary with chikkarpy (system dictionary + user.dic), "
                "so scores may differ from published ones",
                UserWarning,
                stacklevel=3,
            )
    return tokenizer


def _spec_key(spec):
    if isinstance(spec, dict):
        return ("mapping", repr(sorted(spec.items(), key=lambda item: str(item[0]))))
    if isinstance(spec, (list, tuple)):
        return tuple(_spec_key(item) for item in spec)
    if callable(spec):
        return ("callable", id(spec))
    return str(spec)


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
