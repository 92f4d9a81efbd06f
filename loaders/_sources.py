"""Where a builder's source files come from: a local copy, a mirror, or the pinned upstream URL.

Shared by the builders in this folder; it needs only the standard library and `datasets`.

A source file is named by its path relative to the corpus root (``corpus_ver1.2/dev_ver1.2.json``):
- with ``data_dir`` the file is ``<data_dir>/<path>``;
- with a mirror base URL (config ``mirror_url`` or the ``QAHUB_MIRROR_URL`` environment variable) it is
  downloaded from ``<mirror>/<corpus>/<path>``, so a mirror is an HTTP-served data root;
- otherwise it is downloaded from the builder's canonical base URL, pinned to an upstream commit.

Downloaded files go through the `datasets` download manager (its cache) and are checked against the
pinned sha256; a mismatch removes the cached copy so that a retry downloads again.

Each corpus declares its ``Source`` once (what it is, its upstream base URL, its files and their sha256) and
gives its builder config class ``SourceConfig`` (the ``mirror_url`` option). The readers ``read_json``,
``read_jsonl`` and ``read_csv`` turn every undecodable or unparsable input into a ``SourceDataError`` naming
the file, the line or record, and the problem.
"""

import codecs
import csv
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from itertools import repeat
from typing import Mapping, Optional

import datasets
from datasets.utils.file_utils import xopen

MIRROR_ENV = "QAHUB_MIRROR_URL"


class SourceDataError(ValueError):
    """A source file is corrupt, or holds a record the builder cannot accept."""


class SourceUnavailableError(ConnectionError):
    """A source file could not be downloaded (network, proxy or mirror trouble)."""


def record_error(path, record, problem):
    """The builders' one error shape: which file, which record (None: the whole file), what is wrong."""
    return SourceDataError(f"{path}: {problem}" if record is None else f"{path}: record {record}: {problem}")


@dataclass
class Source:
    """What a corpus is and where its files come from, declared once in its builder module.

    ``files`` is ``{config: {split: path}}`` for a corpus stored as one file per split (else empty);
    ``sha256`` maps a path to its pinned checksum (a path not listed is downloaded unchecked).
    """

    corpus: str  # also the corpus folder under a mirror: <mirror>/<corpus>/<path>
    description: str
    citation: str
    homepage: str
    license: str
    base_url: Optional[str] = None  # upstream, pinned to a commit where upstream allows; None: no public download
    sha256: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def info(self, features):
        return datasets.DatasetInfo(description=self.description, features=datasets.Features(features),
                                    homepage=self.homepage, license=self.license, citation=self.citation)

    def splits(self):
        """``{config: [split, ...]}`` of ``files``."""
        return {config: list(by_split) for config, by_split in self.files.items()}

    def resolve(self, config, dl_manager, files):
        """``{key: local path}`` of ``{key: path}``: from ``data_dir``, a mirror, or upstream (see the module)."""
        return resolve_sources(config, dl_manager, self.corpus, self.base_url, files, self.sha256)


@dataclass
class SourceConfig(datasets.BuilderConfig):
    """A builder config whose source files can come from a mirror: ``mirror_url`` replaces the upstream base URL."""

    mirror_url: Optional[str] = None


def in_data_dir(config, path):
    """Whether ``config.data_dir`` is given and holds ``path``."""
    return bool(config.data_dir) and os.path.isfile(os.path.join(os.path.expanduser(str(config.data_dir)), path))


# --- reading


def is_str_list(value):
    """A list of strings (the check runs in C: it is made for every list of every record)."""
    return isinstance(value, list) and all(map(isinstance, value, repeat(str)))


class _DuplicateKey(ValueError):
    pass


def unique_keys(pairs):
    """``object_pairs_hook`` for ``json``: an object that names a key twice is an error, not a silent overwrite."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def read_json(path):
    """The JSON value of ``path``: UTF-8 (a byte-order mark allowed), and no object naming a key twice."""
    return parse_json(path, "-", read_text(path))


def read_text(path):
    """The text of ``path``: UTF-8, a leading byte-order mark dropped; else a ``SourceDataError`` saying why."""
    # binary, then decode: the text mode of HTTP files (streaming mode) is broken in fsspec
    with open_source(path, "rb") as f:
        data = f.read()
    return decode_utf8(path, "-", data)


def may_hold_lone_surrogates(json_text):
    """Whether a string parsed from ``json_text`` may hold a lone surrogate, which UTF-8 (and Arrow) cannot
    store: only a ``\\uD800``-``\\uDFFF`` escape makes one, as UTF-8 text holds none. A builder checks every
    string of a file for them only when this is true."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD]")  # also matches \uD000-\uD7FF, which are not surrogates: harmless


def read_jsonl(path):
    """``(line number, record)`` of each non-blank line of a JSON Lines file (a byte-order mark allowed)."""
    with open_source(path, "rb") as f:
        yield from jsonl_records(path, f)


def jsonl_records(path, lines):
    """``read_jsonl`` of ``lines``, the bytes of each line of ``path`` (split at b"\\n" only: U+2028 and U+0085
    are text inside a JSON string, not line ends)."""
    for number, raw in enumerate(lines, start=1):
        where = f"line {number}"
        line = decode_utf8(path, where, raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw)
        if line and not line.isspace():  # as line.strip(), without copying the line
            yield number, parse_json(path, where, line)


def read_csv(path, delimiter=","):
    """``(line number, fields)`` of each non-blank record; the number is the line where the record starts.

    UTF-8 with or without a byte-order mark; quoting is strict (``csv.reader(strict=True)``).
    """
    with open_source(path, "r", encoding="utf-8-sig", newline="") as f:
        try:
            yield from csv_records(path, f, delimiter)
        except UnicodeDecodeError:
            line, problem = _first_undecodable_line(path)
            raise record_error(path, f"line {line}", problem) from None


def csv_records(path, lines, delimiter=","):
    """``read_csv`` of ``lines``, the text of ``path`` (a file opened with ``newline=""``, or a ``StringIO``)."""
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    start = 1
    try:
        for record in reader:
            if record:  # blank lines (e.g. trailing ones) carry no record
                yield start, record
            start = reader.line_num + 1
    except csv.Error as err:
        raise record_error(path, f"line {start}", f"malformed CSV ({err})") from None


def decode_utf8(path, where, data):
    """``data`` (bytes) as text, a leading byte-order mark dropped; else a ``SourceDataError`` saying why."""
    expect_utf8_start(path, data[:4], where)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise record_error(path, where, utf8_problem(data, err)) from None


def utf8_problem(data, err):
    """What is wrong with ``data``, which failed to decode with ``err``: why, at which byte and line."""
    line = data.count(b"\n", 0, err.start) + 1
    return f"not UTF-8 text ({err.reason} at byte {err.start}, line {line})"


# one decoder for all: json.loads(text, object_pairs_hook=...) would make one per call (per line of a JSON Lines file)
_DECODER = json.JSONDecoder(object_pairs_hook=unique_keys)


def parse_json(path, where, text):
    """``json.loads(text)`` with every failure a ``SourceDataError``: syntax, duplicate key, size, nesting."""
    try:
        if text.startswith("\ufeff"):  # as json.loads: a second byte-order mark
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _DECODER.decode(text)
    except json.JSONDecodeError as err:
        problem = f"{err.msg} at line {err.lineno} column {err.colno}"
    except _DuplicateKey as err:
        problem = f"an object names the key {_shown(err.args[0])} twice"
    except RecursionError:
        problem = "nested too deeply"
    except ValueError as err:  # an integer of over 4,300 digits
        problem = str(err)[:200]
    raise record_error(path, where, f"not valid JSON ({problem})")


def _first_undecodable_line(path):
    """``(line, problem)`` of the first line that is not UTF-8 (lines split at b"\\n")."""
    offset = 0
    with open_source(path, "rb") as f:
        if _utf16_or_32(f.read(4)):
            return 1, _WIDE
        f.seek(0)
        for number, line in enumerate(f, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as err:
                return number, f"not UTF-8 text ({err.reason} at byte {offset + err.start})"
            offset += len(line)
    return "-", "not UTF-8 text"  # not reached: the reader failed to decode some line


_WIDE = "not UTF-8 text (UTF-16 or UTF-32 encoded)"


def expect_utf8_start(path, head, where="-"):
    """Name UTF-16 and UTF-32, seen in the first bytes of a file, rather than report an undecodable byte."""
    if _utf16_or_32(head):
        raise record_error(path, where, _WIDE)


def _utf16_or_32(head):
    """A UTF-16 byte-order mark (UTF-32's starts the same), or NULs beside other bytes (NULs alone are UTF-8)."""
    bom = head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    return bom or (b"\x00" in head and bool(head.strip(b"\x00")))


def _shown(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def open_source(path, mode, **kwargs):
    """A local file, or a URL's content: in streaming mode builders are handed URLs, not files. Builders open
    every source file with this (see ``RowsBuilder``: datasets' streaming patches of ``open`` are not applied)."""
    return (open if os.path.exists(path) else xopen)(path, mode, **kwargs)


# --- downloading


def sha256_of(path):
    """sha256 of a local file, or of a URL's content (streaming mode hands builders URLs, not files)."""
    digest = hashlib.sha256()
    with open_source(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_sources(config, dl_manager, corpus, canonical_base, files, sha256=None):
    """Map ``{key: relative path}`` to local file paths, downloading when there is no ``data_dir``."""
    if config.data_dir:
        return {key: _local(config.data_dir, rel) for key, rel in files.items()}
    base = (getattr(config, "mirror_url", None) or os.environ.get(MIRROR_ENV) or "").rstrip("/")
    if not base and not canonical_base:
        raise FileNotFoundError(f"{corpus} has no public download: pass data_dir (a local copy) or a mirror")
    base = f"{base}/{corpus}" if base else canonical_base.rstrip("/")
    urls = {key: f"{base}/{rel}" for key, rel in files.items()}
    paths = {}
    for key, url in urls.items():
        try:
            paths[key] = dl_manager.download(url)
        except (OSError, ValueError) as err:  # requests/fsspec raise both kinds for network and HTTP errors
            raise SourceUnavailableError(
                f"downloading {url} failed: {_why(err)}; "
                f"use a local copy (data_dir=, --data-dir) or a mirror (mirror_url=, --mirror-url, ${MIRROR_ENV})"
            ) from err
    for key, rel in files.items():
        expected = (sha256 or {}).get(rel)
        if expected:
            _verify(paths[key], urls[key], expected)
    return paths


def _why(err) -> str:
    """What went wrong, from the exception chain: fsspec reports a 404 and a dead host alike as FileNotFoundError."""
    causes, cause = [], err
    while cause is not None and len(causes) < 6:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any("404" in f"{type(c).__name__} {c}" for c in causes):
        return "not found on the server (HTTP 404)"
    root = causes[-1]
    return f"the server could not be reached ({type(root).__name__}: {root})"


def _local(data_dir, rel):
    path = os.path.join(os.path.expanduser(str(data_dir)), rel)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: source file not found (data_dir={data_dir!r} must hold {rel})")
    return path


def _verify(path, url, expected):
    got = sha256_of(path)
    if got != expected:
        for leftover in (path, path + ".json", path + ".lock"):
            if os.path.isfile(leftover):
                os.remove(leftover)
        raise SourceDataError(f"{url}: checksum mismatch: expected sha256 {expected}, got {got}")
