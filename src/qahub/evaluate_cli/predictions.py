"""The one reader of prediction files for every ``qahub evaluate`` metric, and the one matching of predictions to
reference rows by id.

A metric declares its ``Fields``: the id field (and other spellings of it) and the reply field(s). The file is
JSON (an object ``{id: reply}``, or a list of records or of bare replies), JSON Lines (one record or bare reply a
line, lines split at ``\\n`` only) or CSV (a header naming the fields, or header-less ``id,reply`` rows;
tab-separated when the name ends in ``.tsv`` or the first line holds a tab). It is read with the readers of
``qahub.readers``: UTF-8 with or without a byte-order mark, an object naming a key twice refused; at most
``max_bytes()`` are read (``$QAHUB_MAX_PREDICTIONS_BYTES``), so ``/dev/zero`` or a huge file is one line. Every
record needs an id, not null and not a lone surrogate, given once; a reply may be any value (a model's reply is
never bad input: the metric scores what it cannot read as 0). Each problem is one ``SourceDataError`` (a ``ValueError``):
``FILE: record N: what is wrong`` (``record line N`` in JSON Lines and CSV).

lm-eval's own samples file (``lm_eval --log_samples``: ``samples_<task>_<date>.jsonl``, a line per document with
``doc``, ``doc_id`` and the replies ``filtered_resps``) is read as it is: each document's id fields and its filtered
reply make the record (one file is one task: a file named after another corpus's task is refused).

A bare list of replies has no ids: it is paired with the split's rows by position only with ``--by-position``
and when it holds one reply per row; else it is refused with a line saying how to add the ids.

A record never supplies the gold. A file made from the dataset's rows plus the model's output column carries the
gold answer under the dataset's name for it (``Fields.gold``: LIMUR ``outputs``, Jeopardy ``answer``, ...), which
may also be a reply field of predictions-only files. ``--reply-field NAME`` says which field is the reply (it is
read as the metric's first reply field; the gold and the other reply fields are dropped). Without it, a record
holding a gold field is read only when its other fields are ids or the metric's own (``Fields.extra``): one that
also holds any other field is refused, naming the gold field and the fields that may be the reply (those that are
not the dataset's), or saying that it is a row of the dataset with no reply.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from qahub.metrics._shared.checks import is_text  # also the metrics' check: kept once, in metrics/_shared

MAX_BYTES_ENV = "QAHUB_MAX_PREDICTIONS_BYTES"
DEFAULT_MAX_BYTES = 256 << 20


@dataclass(frozen=True)
class Fields:
    """What a metric reads from a prediction record. ``id``: the id field, then other spellings accepted (a
    dotted name is inside an object: ``meta.id``; a tuple of names is an id made of several fields). ``reply``:
    the reply field(s); a record holds at least one. ``integers``: id fields whose values are integers (a digit
    string is read as one); other id fields are text (an integer is read as its digits). ``gold``: the fields
    in which the dataset's rows (and its harness tasks' docs) of ``corpus`` hold the gold answer; ``extra``: the
    metric's other fields of a prediction record (a confidence)."""

    id: tuple
    reply: tuple
    integers: frozenset = field(default_factory=frozenset)
    gold: tuple = ()
    extra: tuple = ()
    corpus: str = ""

    def shown_id(self):
        first = self.id[0]
        return " + ".join(first) if isinstance(first, tuple) else first


@dataclass
class Predictions:
    """A predictions file as read: ``records`` ``{id: record}`` in file order (``where[id]`` names each record),
    or ``replies``, a bare list of replies without ids."""

    path: str
    fields: Fields
    records: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)
    replies: list | None = None

    def __len__(self):
        return len(self.replies) if self.replies is not None else len(self.records)


def add_arguments(parser, fields: Fields, *others: Fields):
    """The options every metric's ``qahub evaluate`` takes for its predictions file, and what its help says
    about the file (``others``: the fields of the metric's other tasks)."""
    replies = list(dict.fromkeys(name for each in (fields, *others) for name in each.reply))
    mapping = "" if isinstance(fields.id[0], tuple) else "an object {id: reply}, or "
    parser.add_argument("--by-position", action="store_true",
                        help="accept a bare list of replies (no ids), paired with the split's rows in their order; "
                             "it must hold one reply per row. Without it a prediction names its row by id")
    parser.add_argument("--reply-field", metavar="NAME",
                        help="the field of each record that holds the model's reply, e.g. the column added to the "
                             "dataset's rows; needed when a record also holds a gold field ("
                             f"{', '.join(dict.fromkeys(name for each in (fields, *others) for name in each.gold))})")
    parser.epilog = (f"Predictions are matched to the reference rows by id: each record names its row by "
                     f"{_fields_shown(fields)} and gives the reply as {' or '.join(map(repr, replies))}. "
                     f"Read: JSON ({mapping}a list of records), JSON Lines (a record a line) or "
                     "CSV with a header (.csv, .tsv), or lm-eval's samples_<task>_<date>.jsonl (--log_samples: "
                     "each document with its filtered reply); UTF-8 (a byte-order mark allowed), each id once, at most "
                     f"{DEFAULT_MAX_BYTES >> 20} MiB (${MAX_BYTES_ENV}). A bare list of replies without ids is "
                     "scored only with --by-position.")


def max_bytes() -> int:
    value = os.environ.get(MAX_BYTES_ENV, "")
    try:
        return int(value) if value else DEFAULT_MAX_BYTES
    except ValueError:
        raise ValueError(f"${MAX_BYTES_ENV}={value!r}: not a number of bytes") from None


def read(path, fields: Fields, unwrap=None, reply_field=None) -> Predictions:
    """The predictions in ``path``. ``unwrap(value)``: a JSON file's value as the object or list to read (a
    metric's own envelope, e.g. a MERA submission); its ``ValueError`` says what is wrong, and the file is named.
    ``reply_field``: the field each record gives its reply in (``--reply-field``)."""
    from qahub.readers import decode_utf8, jsonl_records, parse_json

    path = str(path)
    data = read_bytes(path)
    if not data.removeprefix(b"\xef\xbb\xbf").strip():
        raise _error(path, None, "empty: no predictions, nothing to score")
    kind = _kind(path, data)
    if kind == "jsonl":
        items = [(f"line {n}", value) for n, value in jsonl_records(path, io.BytesIO(data))]
    elif kind == "csv":
        items = _csv_items(path, decode_utf8(path, None, data), fields)
    else:
        value = parse_json(path, None, decode_utf8(path, None, data))
        try:
            value = unwrap(value) if unwrap else value
        except ValueError as err:
            raise _error(path, None, str(err)) from None
        if isinstance(value, dict) and not isinstance(fields.id[0], tuple):
            items = [(repr(key), {_reply_key(fields): reply, **_id_of_key(fields, key)}) for key, reply in value.items()]
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            shapes = "a list of records" if isinstance(fields.id[0], tuple) else "an object {id: reply} or a list"
            raise _error(path, None, f"expected {shapes}, got {_type(value)}")
    if items and _is_lm_eval_sample(items[0][1]):
        items = _lm_eval_items(path, items, fields, reply_field)
    return _predictions(path, fields, items, reply_field)


def _is_lm_eval_sample(value) -> bool:
    """A line of lm-eval's ``--log_samples`` file: the document, its position and the model's replies."""
    return (isinstance(value, dict) and isinstance(value.get("doc"), dict) and "doc_id" in value
            and ("filtered_resps" in value or "resps" in value))


def _lm_eval_items(path, items, fields, reply_field):
    """The prediction records of an lm-eval samples file (``samples_<task>_<date>.jsonl``): each document's id
    fields and its filtered reply (``filtered_resps``, else ``resps``), under the metric's reply field."""
    if reply_field is not None:
        raise _error(path, None, f"--reply-field {reply_field}: an lm-eval samples file gives each reply in "
                                 "filtered_resps; leave the option out")
    _check_sample_task(path, fields)
    filters = sorted({str(value.get("filter")) for _, value in items if isinstance(value, dict)})
    if len(filters) > 1:
        raise _error(path, None, f"holds the replies of {len(filters)} lm-eval filters ({', '.join(filters)}); "
                                 "score a run with one filter")
    records = []
    for where, value in items:
        if not _is_lm_eval_sample(value):
            raise _error(path, where, "expected a line of lm-eval's samples file (doc, doc_id, filtered_resps) "
                                      "as the first line is")
        record = _id_fields(value["doc"], fields)
        if record is None:
            raise _error(path, where, f"lm-eval's doc: {_no_id(value['doc'], fields)}")
        record[_reply_key(fields)] = _sample_reply(path, where, value)
        records.append((where, record))
    return records


def _id_fields(doc: dict, fields: Fields) -> dict | None:
    """The first spelling of the id that ``doc`` holds, as a record of those fields alone (None: none)."""
    for name in fields.id:
        parts = name if isinstance(name, tuple) else (name,)
        if all(_get(doc, part) is not _ABSENT for part in parts):
            record = {}
            for part in parts:
                *outer, last = part.split(".")
                inner = record
                for key in outer:
                    inner = inner.setdefault(key, {})
                inner[last] = _get(doc, part)
            return record
    return None


def _sample_reply(path, where, sample: dict):
    """The one reply of a generation task's sample: ``filtered_resps`` is a list of one reply per request (one
    request here), a reply that a filter did not reduce being the list of its repeats (one here too)."""
    key = "filtered_resps" if "filtered_resps" in sample else "resps"
    value = sample[key]
    for _ in ("requests", "repeats"):
        if isinstance(value, list):
            if len(value) != 1:
                raise _error(path, where, f"{key} holds {len(value)} replies; a qahub task's sample holds one")
            value = value[0]
    return value


def _check_sample_task(path, fields: Fields):
    """A samples file named after a qahub task of another corpus is refused, naming both."""
    import re

    from qahub import tasks

    found = re.match(r"samples_(.+?)_\d{4}-\d{2}-\d{2}T", Path(path).name)
    corpus = found and tasks.declared_tasks().get(found.group(1))
    if corpus and fields.corpus and corpus != fields.corpus:
        raise _error(path, None, f"lm-eval's samples of the task {found.group(1)}, a {corpus} task; this command "
                                 f"scores {fields.corpus}")


def read_references(path, fields: Fields, id_name: str) -> Predictions:
    """A file of reference records, read as predictions are; a list without ids is refused (``id_name`` says
    which id the records need)."""
    records = read(path, fields)
    if records.replies is not None:
        raise ValueError(f"{path}: expected reference records with {id_name}, got a list without ids")
    return records


def check_readable(path):
    """A ValueError when ``path`` cannot be opened (said before any reference is built); a pipe is not opened."""
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            open(path, "rb").close()
    except OSError as err:
        raise _unreadable(path, err) from None


def read_bytes(path) -> bytes:
    """At most ``max_bytes()`` of ``path``; a larger file (or a device that never ends) is an error."""
    limit = max_bytes()
    try:
        with open(path, "rb") as f:
            # a regular file's size is known without reading it; a device or a pipe is read up to the limit only
            data = None if os.fstat(f.fileno()).st_size > limit else f.read(limit + 1)
    except OSError as err:
        raise _unreadable(path, err) from None
    except MemoryError:
        data = None
    if data is None or len(data) > limit:
        raise _error(path, None, f"larger than {limit:,} bytes: not a predictions file (${MAX_BYTES_ENV} sets the limit)")
    return data


def _unreadable(path, err):
    return ValueError(f"{path}: cannot be read ({err.strerror or err})")


def _kind(path, data):
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix == ".json":
        return "json"
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return "json" if start in (b"{", b"[") else "csv"


def _csv_items(path, text, fields):
    """``(where, record)`` of each CSV row: a header naming an id or reply field, else ``id,reply`` rows."""
    from qahub.readers import csv_records

    first = text.split("\n", 1)[0]
    delimiter = "\t" if Path(path).suffix.lower() == ".tsv" or "\t" in first else ","
    rows = list(csv_records(path, io.StringIO(text, newline=""), delimiter))
    known = set(_names(fields.id)) | set(fields.reply)
    if rows and known.intersection(name.strip() for name in rows[0][1]):
        header = [name.strip() for name in rows[0][1]]
        twice = next((name for n, name in enumerate(header) if name in header[:n]), None)
        if twice is not None:
            raise _error(path, f"line {rows[0][0]}", f"the header names the column {twice!r} twice")
        for line, row in rows[1:]:
            if len(row) > len(header):
                raise _error(path, f"line {line}", f"{len(row)} cells, but the header has {len(header)} columns "
                                                   f"({', '.join(header)})")
        # a shorter row lacks its last fields (as pandas reads it: missing)
        return [(f"line {line}", dict(zip(header, row))) for line, row in rows[1:]]
    if isinstance(fields.id[0], tuple):
        raise _error(path, "line 1", f"expected a header naming the fields {_fields_shown(fields)}")
    items = []
    for line, row in rows:
        if len(row) != 2:
            raise _error(path, f"line {line}", f"expected a header or id,reply rows, got {len(row)} columns")
        items.append((f"line {line}", {fields.id[0]: row[0], _reply_key(fields): row[1]}))
    return items


def _predictions(path, fields, items, reply_field=None) -> Predictions:
    out = Predictions(path, fields)
    if not items:
        raise _error(path, None, "holds no predictions: nothing to score")
    if not any(isinstance(value, dict) for _, value in items):
        if reply_field is not None:
            raise _error(path, None, f"--reply-field {reply_field}: a list of replies has no records, no fields")
        out.replies = [value for _, value in items]
        return out
    if reply_field in set(_names(fields.id)):
        raise _error(path, None, f"--reply-field {reply_field}: that is the id field, not a reply")
    for where, record in items:
        if not isinstance(record, dict):
            raise _error(path, where, f"expected a record with the id field {fields.shown_id()!r}, "
                                            f"got {_type(record)} (a list of replies has no record at all)")
        key = _record_id(path, where, record, fields)
        record = _with_reply(path, where, record, fields, reply_field)
        if not any(name in record for name in fields.reply):
            raise _error(path, where, _no_reply(record, fields))
        if key in out.records:
            raise _error(path, where, f"the id {_shown(key)} is given twice (first in record {out.where[key]})")
        out.records[key], out.where[key] = record, where
    return out


def _with_reply(path, where, record, fields, reply_field):
    """``record`` as the metric reads it: with ``reply_field``, its value under the metric's first reply field
    (the gold and the other reply fields dropped); else ``record``, once no gold field in it can be the reply."""
    if reply_field is not None:
        if reply_field not in record:
            raise _error(path, where, f"no field {reply_field!r} (--reply-field)")
        kept = {name: value for name, value in record.items() if name not in (*fields.reply, *fields.gold)}
        return {**kept, _reply_key(fields): record[reply_field]}
    gold = [name for name in record if name in fields.gold]
    own = {name.split(".")[0] for name in _names(fields.id)} | set(fields.gold) | set(fields.extra)
    others = [name for name in record if name not in own]
    if gold and others:
        raise _error(path, where, _gold_problem(gold[0], others, fields))
    return record


def _gold_problem(gold, others, fields):
    """Why a record holding the gold field ``gold`` and the fields ``others`` is refused."""
    from qahub.export.reader import dataset_fields

    candidates = [name for name in others if name not in dataset_fields(fields.corpus)]
    if candidates:
        return (f"holds the gold field {gold!r} and the {_listed(candidates)}: which is the model's reply? Name it "
                f"with --reply-field {candidates[0] if len(candidates) == 1 else 'NAME'} (the dataset's rows plus "
                f"a reply column carry the gold; a predictions-only record gives the reply alone)")
    return (f"holds the gold field {gold!r} and the dataset's {_listed(others)}: a row of the dataset, no model "
            "reply in it; add the reply as a field and name it with --reply-field NAME")


def _no_reply(record, fields):
    """Why ``record`` has no reply: the reply fields looked for, the fields it has, and ``--reply-field``."""
    ids = {name.split(".")[0] for name in _names(fields.id)}
    others = [name for name in record if name not in ids]
    named = others[0] if len(others) == 1 else "NAME"
    found = f"it has the {_listed(others)}" if others else "it has no field besides its id"
    return (f"no reply (a field {' or '.join(map(repr, fields.reply))}); {found}: name the reply's field with "
            f"--reply-field {named}")


def _listed(names):
    shown = ", ".join(map(repr, names[:5])) + (f" ... ({len(names)} in all)" if len(names) > 5 else "")
    return f"field{'s' if len(names) > 1 else ''} {shown}"


def _record_id(path, where, record, fields):
    for name in fields.id:
        parts = name if isinstance(name, tuple) else (name,)
        if all(_get(record, part) is not _ABSENT for part in parts):
            values = tuple(_id_value(path, where, part, _get(record, part), part in fields.integers) for part in parts)
            return values if isinstance(name, tuple) else values[0]
    raise _error(path, where, _no_id(record, fields))


def _no_id(record, fields):
    """Why ``record`` has no id: the part of a composite id it lacks, else the id fields looked for."""
    for name in fields.id:
        if isinstance(name, tuple) and any(_get(record, part) is not _ABSENT for part in name):
            missing = [part for part in name if _get(record, part) is _ABSENT]
            return (f"no id: the {_listed(missing)} {'is' if len(missing) == 1 else 'are'} missing (the id is "
                    f"{' + '.join(name)!r})")
    return f"no id: expected the field {_fields_shown(fields)}; the record has {_listed(list(record)) if record else 'no field'}"


_ABSENT = object()


def _get(record, dotted):
    value = record
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _id_value(path, where, name, value, integer):
    if value is None:
        raise _error(path, where, f"the id {name!r} is null")
    if isinstance(value, str) and not is_text(value):
        raise _error(path, where, f"the id {name!r} ({_shown(value)}) holds a lone surrogate, which is not text")
    if integer:
        text = value.strip() if isinstance(value, str) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if text and text.lstrip("-").isdigit() and text.isascii():
            return int(text)
        raise _error(path, where, f"the id {name!r} must be an integer, got {_shown(value)}")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise _error(path, where, f"the id {name!r} must be text, got {_shown(value)}")
    return value.strip()


def _id_of_key(fields, key):
    """The record of one ``{id: reply}`` entry: the key under the id field (its dotted path)."""
    record = key
    for part in reversed(fields.id[0].split(".")):
        record = {part: record}
    return record


def matched(predictions: Predictions, ids: list, *, by_position=False, missing="error", allow_extra=False,
            missing_hint="", references="the references") -> list:
    """``[(id, record or None)]`` in the order of ``ids`` (the ids of the rows of ``references``, named in
    messages). ``missing``: "error" (a row without a prediction is an error, ``missing_hint`` saying what to do)
    or "keep" (its record is None)."""
    path, fields = predictions.path, predictions.fields
    if predictions.replies is not None:
        return _by_position(predictions, ids, by_position)
    known = set(ids)
    unknown = [key for key in predictions.records if key not in known]
    if unknown and not allow_extra:
        raise _error(path, predictions.where[unknown[0]], f"the id {_shown(unknown[0])} is not a row of {references}"
                     + (f" ({len(unknown)} ids are not)" if len(unknown) > 1 else ""))
    absent = [key for key in ids if key not in predictions.records]
    if absent and missing == "error":
        shown = ", ".join(_shown(key) for key in absent[:5]) + (f" ... ({len(absent)} in all)" if len(absent) > 5 else "")
        raise _error(path, None, f"no prediction for {len(absent)} of the {len(ids)} rows "
                                 f"({fields.shown_id()} {shown}){missing_hint}")
    return [(key, predictions.records.get(key)) for key in ids]


def _by_position(predictions, ids, by_position):
    path, fields, count = predictions.path, predictions.fields, len(predictions.replies)
    example = f'{{"{fields.shown_id()}": ..., "{_reply_key(fields)}": "..."}}'
    if not by_position:
        raise _error(path, None, f"a list of {count} replies without ids: give each reply its row's id, records "
                                 f"such as {example} (the id field {fields.shown_id()!r} of the references), or "
                                 "pass --by-position if the list follows the split's row order, one reply per row "
                                 f"({len(ids)})")
    if count != len(ids):
        raise _error(path, None, f"--by-position: {count} replies for the {len(ids)} rows of the split "
                                 f"(one reply per row, in its order; else give each reply its id: {example})")
    return [(key, {_reply_key(fields): reply}) for key, reply in zip(ids, predictions.replies, strict=True)]


def _error(path, where, problem):
    """The error of ``qahub.readers`` (imported where it is used, as the readers are: ``qahub evaluate --help``
    needs none of them): ``FILE: record WHERE: PROBLEM``, or ``FILE: PROBLEM`` for the whole file."""
    from qahub.readers import record_error

    return record_error(path, where, problem)


def reply_of(record, fields: Fields):
    """The first reply field of ``record`` present (None when there is none)."""
    return next((record[name] for name in fields.reply if name in record), None)


def _reply_key(fields):
    return fields.reply[0]


def _names(ids):
    for name in ids:
        yield from (name if isinstance(name, tuple) else (name,))


def _fields_shown(fields):
    return " or ".join(repr(" + ".join(name)) if isinstance(name, tuple) else repr(name) for name in fields.id)


def _type(value):
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(type(value),
                                                                                       type(value).__name__)


def _shown(value, limit=60):
    text = repr(value).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."
