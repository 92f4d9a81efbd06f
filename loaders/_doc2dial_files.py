"""doc2dial's release files and their rows, without `datasets`: read once here, for the builder beside it
(``doc2dial.py``, which yields these rows) and for ``qahub evaluate doc2dial --data-dir`` (or a release file given to
``--references``), which scores against them without importing `datasets`, pandas or pyarrow."""

import re
from itertools import repeat

from qahub.readers import may_hold_lone_surrogates, parse_json, read_text, record_error, source_file

# the release files inside the zip; a data_dir holds them unzipped
FILES = {
    "doc": "doc2dial/v1.0.1/doc2dial_doc.json",
    "train": "doc2dial/v1.0.1/doc2dial_dial_train.json",
    "validation": "doc2dial/v1.0.1/doc2dial_dial_validation.json",
}

# doc2dial_rc questions keep the first 100 whitespace tokens of the history (DialDoc21 reference loader)
MAX_QUESTION_TOKENS = 100
_ROLES = ("user", "agent")
_DOC_KEYS = dict.fromkeys(("title", "doc_text", "spans", "doc_html_ts", "doc_html_raw")).keys()
SPAN_STR_KEYS = ("id_sp", "tag", "text_sp", "title", "id_sec", "text_sec")
SPAN_INT_KEYS = ("start_sp", "end_sp", "start_sec", "end_sec")
# a document_domain span's fields, in the order of its features
SPAN_FIELDS = ("id_sp", "tag", "start_sp", "end_sp", "text_sp", "title", "parent_titles", "id_sec", "start_sec",
               "text_sec", "end_sec")
_SPAN_KEYS = {**dict.fromkeys(SPAN_STR_KEYS), **dict.fromkeys(SPAN_INT_KEYS), "parent_titles": None}.keys()
_TURN_KEYS = dict.fromkeys(("turn_id", "role", "da", "references", "utterance")).keys()
_KIND = {"sp": "span", "sec": "section"}
_INT32 = (-(2**31), 2**31 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- reading and validating the release files


def _load(path, top_key):
    """``(data[top_key], surrogates)``: whether its strings may hold lone surrogates (see ``_check_text``)."""
    text = read_text(path)
    data = parse_json(path, "-", text)
    if not isinstance(data, dict) or not isinstance(data.get(top_key), dict):
        raise record_error(path, "-", f"expected an object with a {top_key!r} object of domains")
    return data[top_key], may_hold_lone_surrogates(text)


def _domains(path, data, surrogates):
    for domain, by_doc in data.items():
        _check_text(path, f"domain {domain!r}", "domain", domain, surrogates)
        if not isinstance(by_doc, dict):
            raise record_error(path, f"domain {domain!r}", f"expected an object keyed by doc_id, got {type(by_doc).__name__}")
        for doc_id, value in by_doc.items():
            if surrogates:  # a key is a string
                _check_text(path, f"doc_id {doc_id!r} (domain {domain!r})", "doc_id", doc_id, surrogates)
            yield domain, doc_id, value


def read_documents(path):
    """``{(domain, doc_id): document}`` from ``doc2dial_doc.json``, every span checked against ``doc_text``."""
    docs = {}
    data, surrogates = _load(path, "doc_data")
    for domain, doc_id, doc in _domains(path, data, surrogates):
        where = f"document {doc_id!r} (domain {domain!r})"
        _expect(isinstance(doc, dict), path, where, f"expected an object, got {type(doc).__name__}")
        _expect_keys(path, where, doc, _DOC_KEYS)
        for key in ("title", "doc_text", "doc_html_ts", "doc_html_raw"):
            _check_text(path, where, key, doc[key], surrogates)
        _expect(isinstance(doc["spans"], dict), path, where, "'spans' must be an object keyed by id_sp")
        for sp_id, span in doc["spans"].items():
            _check_span(path, where, doc["doc_text"], sp_id, span, surrogates)
        docs[domain, doc_id] = doc
    return docs


def _check_span(path, document, text, sp_id, span, surrogates):
    # messages are formatted only on failure (here and below): formatting them for every record was most of the
    # build's time
    if not isinstance(span, dict):
        raise record_error(path, _span_where(document, sp_id), f"expected an object, got {type(span).__name__}")
    _expect_keys(path, lambda: _span_where(document, sp_id), span, _SPAN_KEYS)
    strings = [span[key] for key in SPAN_STR_KEYS]
    if surrogates or not all(map(isinstance, strings, repeat(str))):
        where = _span_where(document, sp_id)
        for key in SPAN_STR_KEYS:
            _check_text(path, where, key, span[key], surrogates)
        _check_text(path, where, "parent_titles", str(span["parent_titles"]), surrogates)
    for key in SPAN_INT_KEYS:
        if type(span[key]) is not int:
            raise record_error(path, _span_where(document, sp_id), f"{key!r} must be an integer, got {_shown(span[key])}")
    if span["id_sp"] != sp_id:
        raise record_error(path, _span_where(document, sp_id), f"id_sp {_shown(span['id_sp'])} differs from its key")
    _check_offsets(path, document, sp_id, text, span, "sp")
    _check_offsets(path, document, sp_id, text, span, "sec")


def _span_where(document, sp_id):
    return f"{document} span {sp_id!r}"


def _check_offsets(path, document, sp_id, text, span, kind):
    """``text_{kind} == doc_text[start_{kind}:end_{kind}]`` (kind ``sp``: the span, ``sec``: its section)."""
    start, end, expected = span[f"start_{kind}"], span[f"end_{kind}"], span[f"text_{kind}"]
    if not 0 <= start <= end <= len(text):
        raise record_error(path, _span_where(document, sp_id),
                           f"{_KIND[kind]} offsets [{start}, {end}) lie outside doc_text (length {len(text)})")
    if text[start:end] != expected:
        raise record_error(path, _span_where(document, sp_id),
                           f"text_{kind} {expected[:60]!r} != doc_text[{start}:{end}] {text[start:end][:60]!r}")


def read_dialogues(path, docs):
    """``(domain, doc_id, dialogue)`` in file order, each turn checked and its references resolved."""
    seen = set()
    data, surrogates = _load(path, "dial_data")
    for domain, doc_id, dials in _domains(path, data, surrogates):
        _expect(isinstance(dials, list), path, f"doc_id {doc_id!r} (domain {domain!r})", "expected a list of dialogues")
        for index, dial in enumerate(dials):
            dial_id = dial.get("dial_id") if isinstance(dial, dict) else None
            if not isinstance(dial_id, str) or surrogates:
                where = f"dialogue #{index} (doc_id {doc_id!r})"
                _expect(isinstance(dial_id, str), path, where, "expected an object with a string 'dial_id'")
                _check_text(path, where, "dial_id", dial_id, surrogates)
            where = f"dialogue {dial_id} (doc_id {doc_id!r})"
            _expect(dial_id not in seen, path, where, "dial_id occurs twice in the file")
            seen.add(dial_id)
            if (domain, doc_id) not in docs:
                raise record_error(path, where, f"document {doc_id!r} of domain {domain!r} is not in doc2dial_doc.json")
            _check_turns(path, where, dial.get("turns"), docs[domain, doc_id]["spans"], surrogates)
            yield domain, doc_id, dial


def _check_turns(path, where, turns, spans, surrogates):
    _expect(isinstance(turns, list) and turns, path, where, "'turns' must be a non-empty list")
    ids = set()
    for index, turn in enumerate(turns):
        _check_turn(path, where, index, turn, spans, ids, surrogates)
        ids.add(turn["turn_id"])


def _check_turn(path, dialogue, index, turn, spans, ids, surrogates):
    if not isinstance(turn, dict):
        raise record_error(path, f"{dialogue} turn #{index}", "expected an object")
    turn_id = turn.get("turn_id")

    def where():
        return f"{dialogue} turn {turn_id if type(turn_id) is int else f'#{index}'}"

    _expect_keys(path, where, turn, _TURN_KEYS)
    if type(turn_id) is not int or turn_id in ids:
        raise record_error(path, where(), f"turn_id must be a unique integer, got {_shown(turn_id)}")
    if not _INT32[0] <= turn_id <= _INT32[1]:
        raise record_error(path, where(), f"turn_id {turn_id} is outside the int32 range")
    if turn["role"] not in _ROLES:
        raise record_error(path, where(), f"role {_shown(turn['role'])} is not one of {_ROLES}")
    if surrogates or type(turn["da"]) is not str or type(turn["utterance"]) is not str:
        for key in ("da", "utterance"):
            _check_text(path, where(), key, turn[key], surrogates)
    if not isinstance(turn["references"], list):
        raise record_error(path, where(), "'references' must be a list")
    for ref in turn["references"]:
        ok = isinstance(ref, dict) and isinstance(ref.get("sp_id"), str) and isinstance(ref.get("label"), str)
        if not ok:
            raise record_error(path, where(), f"reference {_shown(ref)} must be an object with string sp_id and label")
        if surrogates:
            _check_text(path, where(), "label", ref["label"], surrogates)
        if ref["sp_id"] not in spans:
            raise record_error(path, where(), f"span {_shown(ref['sp_id'])} is not a span of the document")


def _check_text(path, where, key, value, surrogates=True):
    """A string that UTF-8 can encode (JSON ``\\ud83d`` escapes decode to lone surrogates, which it cannot); with
    ``surrogates`` False (no such escape in the file) only that it is a string."""
    if not isinstance(value, str):
        raise record_error(path, where, f"{key!r} must be a string, got {type(value).__name__}")
    bad = surrogates and _SURROGATE.search(value)
    if bad:
        raise record_error(path, where, f"{key!r} holds a lone surrogate {bad.group()!r} at character {bad.start()}: "
                                        "not encodable as UTF-8")


def _expect_keys(path, where, record, keys):
    """``where``: text, or a function making it (called only on failure)."""
    if not record.keys() >= keys:
        missing = [key for key in keys if key not in record]
        raise record_error(path, where() if callable(where) else where, f"missing key(s) {', '.join(missing)}")


def _shown(value, limit=80):
    """``repr(value)``, cut to ``limit`` characters (a record may hold a very long value)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def _expect(condition, path, where, problem):
    if not condition:
        raise record_error(path, where, problem)


# --- rows


def local_rows(data_dir, config, split):
    """The rows of ``split`` of ``config`` in a local copy of the release files (the builder's ``data_dir``
    layout), as the builder yields them, without `datasets`: the documents and the split's dialogues are read
    and checked as the builder reads them."""
    paths = {key: source_file(data_dir, FILES[key]) for key in ("doc", *([] if config == "document_domain" else [split]))}
    docs = read_documents(paths["doc"])
    dialogues = None if config == "document_domain" else tuple(read_dialogues(paths[split], docs))
    return list(split_rows(config, docs, dialogues))


def split_rows(config, docs, dialogues):
    """The rows of one split of ``config`` (one at a time), from the documents and the split's dialogues (as
    ``read_documents`` and ``read_dialogues`` give them)."""
    if config == "document_domain":
        return (document_row(domain, doc_id, doc) for (domain, doc_id), doc in docs.items())
    if config == "dialogue_domain":
        return (dialogue_row(domain, doc_id, dial) for domain, doc_id, dial in dialogues)
    return (row for domain, doc_id, dial in dialogues for row in rc_rows(domain, doc_id, docs[domain, doc_id], dial))


def document_row(domain, doc_id, doc):
    return {
        "domain": domain,
        "doc_id": doc_id,
        "title": doc["title"],
        "doc_text": doc["doc_text"],
        "spans": [
            {key: (str(span[key]) if key == "parent_titles" else span[key]) for key in SPAN_FIELDS}
            for span in doc["spans"].values()
        ],
        "doc_html_ts": doc["doc_html_ts"],
        "doc_html_raw": doc["doc_html_raw"],
    }


def dialogue_row(domain, doc_id, dial):
    turns = [
        {
            "turn_id": turn["turn_id"],
            "role": turn["role"],
            "da": turn["da"],
            "references": [{"sp_id": ref["sp_id"], "label": ref["label"]} for ref in turn["references"]],
            "utterance": turn["utterance"],
        }
        for turn in dial["turns"]
    ]
    return {"dial_id": dial["dial_id"], "doc_id": doc_id, "domain": domain, "turns": turns}


def rc_rows(domain, doc_id, doc, dial):
    """One row per user turn directly followed by an agent turn; the answer grounds that agent turn.

    The question is the history up to the user turn, newest first, each turn as ``"\\t{role}: {utterance}"``,
    joined by spaces, cut to its first ``MAX_QUESTION_TOKENS`` whitespace tokens and re-joined with single spaces.
    """
    turns = dial["turns"]
    tokens = []  # the first tokens of the history, newest turn first (splitting turns one by one gives the same)
    for index, turn in enumerate(turns):
        tokens = (f"\t{turn['role']}: {turn['utterance']}".split() + tokens)[:MAX_QUESTION_TOKENS]
        if turn["role"] == "agent" or index + 1 == len(turns) or turns[index + 1]["role"] != "agent":
            continue
        answers = grounding(turns[index + 1]["references"], doc)
        yield {
            "id": f"{dial['dial_id']}_{turn['turn_id']}",
            "title": doc_id,
            "context": doc["doc_text"],
            "question": " ".join(tokens),
            "answers": answers,
            "is_impossible": not answers["text"],
            "domain": domain,
        }


def grounding(references, doc):
    """The text from the smallest start to the largest end of the referenced spans (none when no references)."""
    if not references:
        return {"text": [], "answer_start": []}
    spans = [doc["spans"][ref["sp_id"]] for ref in references]
    start = min([span["start_sp"] for span in spans])
    end = max([span["end_sp"] for span in spans])
    return {"text": [doc["doc_text"][start:end]], "answer_start": [start]}
