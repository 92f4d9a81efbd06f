"""The strict readers of JSON, JSON Lines and CSV files, for the builders' source files (``loaders/``) and for
``qahub evaluate``'s prediction files: one reader per format.

``read_json``, ``read_jsonl`` and ``read_csv`` (and ``parse_json``, ``jsonl_records``, ``csv_records`` for bytes or
text already read) take UTF-8 with or without a byte-order mark, and turn every undecodable or unparsable input into
a ``SourceDataError`` naming the file, the line or record, and the problem (``FILE: record WHERE: PROBLEM``, made by
``record_error``): bad UTF-8 (byte and line), UTF-16/32, bad JSON, a key named twice in one object, too-deep
nesting, over-long integers, malformed CSV quoting.

Standard library only: ``datasets`` is imported only to open a URL (``open_source``: a builder in streaming mode
is handed URLs, not files), so that ``qahub evaluate --help`` imports no ``datasets``.
"""

import codecs
import csv
import json
import os
import re
from itertools import repeat


class SourceDataError(ValueError):
    """A file is corrupt, or holds a record its reader (a builder, ``qahub evaluate``) cannot accept."""


def source_file(data_dir, rel) -> str:
    """The upstream file ``rel`` in a local copy ``data_dir`` (a builder's ``data_dir`` layout), or a one-line error
    naming both when it is not there."""
    path = os.path.join(os.path.expanduser(str(data_dir)), rel)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: source file not found (data_dir={str(data_dir)!r} must hold {rel})")
    return path


def record_error(path, record, problem):
    """The one error shape of the readers and the builders: which file, which record (None: the whole file),
    what is wrong."""
    return SourceDataError(f"{path}: {problem}" if record is None else f"{path}: record {record}: {problem}")


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
    if os.path.exists(path):
        return open(path, mode, **kwargs)
    from datasets.utils.file_utils import xopen  # only here: the readers need no datasets for local files

    return xopen(path, mode, **kwargs)
