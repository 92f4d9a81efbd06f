"""The Russian QA Jeopardy! upstream files as Arrow tables or as rows: the one reader of their layout.

The builder (``loaders/jeopardy.py``) makes its splits from ``tables``, and ``qahub evaluate jeopardy_meteor``
reads a gold-answer file with ``rows``, the same checks and mapping record by record. ``rows`` imports neither
``datasets`` nor pyarrow (whose first array from Python objects imports pandas): a score from an upstream file
pays neither their imports (0.9 s) nor a build in a temporary cache.
"""

import re
import warnings

from qahub.readers import read_csv, record_error

EXTENDED = "Russian_QA_Jeopardy_dataset_extended.csv"
TRAINING = "Russian_QA_Jeopardy_dataset_extended_training.csv"
VALIDATION = "Russian_QA_Jeopardy_dataset_extended_validation.csv"

# upstream header -> field; the extended file is tab-separated despite its .csv name
_EXTENDED_COLUMNS = {
    "QuestionID": "question_id",
    "QuestionNumber": "question_number",
    "QuestionText": "question",
    "Answer": "answer",
    "Topic": "topic",
    "Source": "source",
    "AuthorFullName": "author",
    "TourName": "tour_name",
    "TourLink": "tour_link",
}
_QA_COLUMNS = {"QuestionText": "question", "Answer": "answer"}
# upstream writes the text None for a missing source, author or tournament
_NONE_TEXT_FIELDS = {"source", "author", "tour_name", "tour_link"}
_INTEGER = re.compile(r"-?[0-9]+")
# the range of each integer field's Arrow type (question_id int64, question_number int32)
_RANGES = {"question_id": (-(2**63), 2**63 - 1), "question_number": (-(2**31), 2**31 - 1)}
_VALUES = range(1, 6)  # question numbers the card documents; others are kept with a warning


def schema(config):
    """The Arrow schema of ``config``'s rows, as the builder's features declare them."""
    import pyarrow as pa

    if config == "qa":  # the upstream files have no id: a question's is its 0-based row in its file
        return pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("answer", pa.string())])
    return pa.schema([("question_id", pa.int64()), ("question_number", pa.int32()),
                      *[(name, pa.string()) for name in list(_EXTENDED_COLUMNS.values())[2:]]])


def tables(filepath, config):
    """The tables of one upstream file of ``config`` (``extended`` or ``qa``), in order; a bad record is a
    ``SourceDataError`` naming the file and its line."""
    return _qa_tables(filepath, schema(config)) if config == "qa" else _extended_tables(filepath, schema(config))


def rows(filepath, config) -> list[dict]:
    """The rows of one upstream file of ``config``, as the builder's split of that file has them (read record by
    record, as the tables are where a batch fails a check)."""
    if config == "qa":
        return [row for batch in _qa_batches(filepath) for row in batch]
    batches = _extended_batches(filepath, lambda batch, seen, outside: list(_extended_rows(filepath, batch, seen,
                                                                                             outside)))
    return [row for batch in batches for row in batch]


# The files are read in batches of records, each checked and made a table column by column (the checks run in C);
# a batch that fails a check is made row by row instead, which names the first bad record as a row-by-row read does.
BATCH_RECORDS = 20_000
_NONE_IF_EMPTY = {"": None}.get  # with the value as default: "" -> None, any other value -> itself
_NONE_IF_EMPTY_OR_NONE = {"": None, "None": None}.get


def _extended_tables(filepath, schema):
    import pyarrow as pa

    def table(batch, seen, outside):
        return _extended_table(batch, schema, seen, outside) or pa.Table.from_pylist(
            list(_extended_rows(filepath, batch, seen, outside)), schema=schema)

    return _extended_batches(filepath, table)


def _extended_batches(filepath, make):
    """``make(batch, seen, outside)`` of each batch of the extended file's records, then one warning for the
    question numbers outside 1-5 (``seen``: QuestionID -> line of its record; ``outside``: "line N: number")."""
    seen, outside = {}, []
    for batch in _batches(_records(filepath, "\t", _EXTENDED_COLUMNS)):
        yield make(batch, seen, outside)
    if outside:
        warnings.warn(f"{filepath}: {len(outside)} row(s) with a QuestionNumber outside 1-5, kept as given: "
                      f"{', '.join(outside[:5])}", stacklevel=2)


def _extended_table(batch, schema, seen, outside):
    """The table of ``batch`` when every record passes the checks, else None."""
    lines, records = zip(*batch)
    if set(map(len, records)) != {len(_EXTENDED_COLUMNS)}:
        return None
    ids, numbers, *texts = zip(*records)
    # at most 18 and 9 characters: in the range of int64 and int32 (longer ones are checked row by row)
    if not (_all_integers(ids, 18) and _all_integers(numbers, 9)):
        return None
    ids, numbers = list(map(int, ids)), list(map(int, numbers))
    if len(set(ids)) != len(ids) or not seen.keys().isdisjoint(ids):
        return None
    seen.update(zip(ids, lines))
    outside += [f"line {line}: {number}" for line, number in zip(lines, numbers) if number not in _VALUES]
    names = list(_EXTENDED_COLUMNS.values())
    columns = [ids, numbers] + [
        list(map(_NONE_IF_EMPTY_OR_NONE if name in _NONE_TEXT_FIELDS else _NONE_IF_EMPTY, values, values))
        for name, values in zip(names[2:], texts)
    ]
    import pyarrow as pa

    return pa.Table.from_pydict(dict(zip(names, columns)), schema=schema)


def _all_integers(values, longest):
    return all(map(_INTEGER.fullmatch, values)) and max(map(len, values)) <= longest


def _extended_rows(filepath, batch, seen, outside):
    for line, record in batch:
        where = f"line {line}"
        row = _extended_row(filepath, where, _fields(filepath, where, record, _EXTENDED_COLUMNS))
        first = seen.setdefault(row["question_id"], line)
        if first != line:
            raise record_error(filepath, where, f"duplicate QuestionID {row['question_id']} (first at line {first})")
        if row["question_number"] not in _VALUES:
            outside.append(f"{where}: {row['question_number']}")
        yield row


def _qa_tables(filepath, schema):
    import pyarrow as pa

    for batch in _qa_batches(filepath):
        yield pa.Table.from_pylist(batch, schema=schema)


def _qa_batches(filepath):
    row_number = 0  # the question's id: its 0-based row after the header, stable whatever order an export is in
    for batch in _batches(_records(filepath, ",", _QA_COLUMNS)):
        rows = [{"question_id": row_number + i,
                 **_qa_row(filepath, f"line {line}", _fields(filepath, f"line {line}", record, _QA_COLUMNS))}
                for i, (line, record) in enumerate(batch)]
        row_number += len(rows)
        yield rows


def _records(filepath, delimiter, columns):
    """``(line, fields)`` of each record after the header (``line``: where the record starts)."""
    records = read_csv(filepath, delimiter)
    line, header = next(records, (1, None))
    _check_header(filepath, line, header, columns, delimiter)
    count = 0
    for line, record in records:
        count += 1
        yield line, record
    if not count:
        raise record_error(filepath, f"line {line + 1}", "no rows after the header")


def _batches(records):
    """Lists of up to ``BATCH_RECORDS`` records. When a record cannot be read, the records before it are handed
    on before the error is raised: they are checked first, as in a read row by row."""
    batch = []
    try:
        for record in records:
            batch.append(record)
            if len(batch) == BATCH_RECORDS:
                yield batch
                batch = []
    except Exception:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def _fields(filepath, where, record, columns):
    """``{field: value}`` of a record, which must have one value per column."""
    if len(record) != len(columns):
        raise record_error(filepath, where, f"expected {len(columns)} columns, got {len(record)}: {record!r}")
    return dict(zip(columns.values(), record))


def _check_header(filepath, line, header, columns, delimiter):
    names = [name.replace(" ", "") for name in header or []]
    if names != list(columns):
        sep = "tab" if delimiter == "\t" else "comma"
        raise record_error(filepath, f"line {line}", f"expected the {sep}-separated header {list(columns)}, got {header!r}")


def _extended_row(filepath, where, row):
    for field in ("question_id", "question_number"):
        row[field] = _integer(filepath, where, field, row[field])
    return {field: _text(value, field in _NONE_TEXT_FIELDS) for field, value in row.items()}


def _qa_row(filepath, where, row):
    return {field: _text(value, False) for field, value in row.items()}


def _integer(filepath, where, field, value):
    if not _INTEGER.fullmatch(value):
        raise record_error(filepath, where, f"{field} must be an integer, got {value!r}")
    low, high = _RANGES[field]
    if len(value) > 20 or not low <= int(value) <= high:  # 20 characters: "-" and the 19 digits of 2**63
        raise record_error(filepath, where, f"{field} {value[:40]} is outside the range {low}..{high}")
    return int(value)


def _text(value, none_is_missing):
    """The value of a text field, None where it is missing: the same mapping the batch path applies to a column."""
    return (_NONE_IF_EMPTY_OR_NONE if none_is_missing else _NONE_IF_EMPTY)(value, value)
