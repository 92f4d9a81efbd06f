"""doc2dial v1.0.1: goal-oriented dialogues grounded in documents (DialDoc21 shared task release)."""

import os
import re
import shutil
import tempfile
import zipfile
import zlib
from itertools import repeat

import datasets
from qahub.dataset_cards import citation

from qahub.readers import SourceDataError, may_hold_lone_surrogates, parse_json, read_text, record_error

from ._rows import RowsBuilder
from ._sources import Source, SourceConfig

_DESCRIPTION = """\
Doc2dial is a dataset of goal-oriented dialogues grounded in associated documents: over 4500 annotated
conversations with an average of 14 turns, grounded in over 450 documents from four domains (dmv, ssa, va,
studentaid). Each turn carries a dialogue act and references to spans of its document. Version 1.0.1 is the
release of the DialDoc21 shared task.
"""

_ZIP = "doc2dial_v1.0.1.zip"
# the release files inside the zip; a data_dir holds them unzipped
_FILES = {
    "doc": "doc2dial/v1.0.1/doc2dial_doc.json",
    "train": "doc2dial/v1.0.1/doc2dial_dial_train.json",
    "validation": "doc2dial/v1.0.1/doc2dial_dial_validation.json",
}
SOURCE = Source(
    corpus="doc2dial", description=_DESCRIPTION, citation=citation("doc2dial"),
    homepage="https://doc2dial.github.io", license="cc-by-3.0",
    base_url="https://doc2dial.github.io/file",
    # sha256 and size (5,879,543 bytes) of the zip as recorded in huggingface/datasets
    # datasets/doc2dial/dataset_infos.json (download_checksums, commit 521f463a9a5b74a948e3d1faeb75aa80f8fa9246)
    sha256={_ZIP: "c764d86628431fc1e54819d687a36f1d00b7ee95b8db2b3a7454149673ca4c17"},
)

# doc2dial_rc questions keep the first 100 whitespace tokens of the history (DialDoc21 reference loader)
MAX_QUESTION_TOKENS = 100
_ROLES = ("user", "agent")
_DOC_KEYS = dict.fromkeys(("title", "doc_text", "spans", "doc_html_ts", "doc_html_raw")).keys()
_SPAN_STR_KEYS = ("id_sp", "tag", "text_sp", "title", "id_sec", "text_sec")
_SPAN_INT_KEYS = ("start_sp", "end_sp", "start_sec", "end_sec")
_SPAN_KEYS = {**dict.fromkeys(_SPAN_STR_KEYS), **dict.fromkeys(_SPAN_INT_KEYS), "parent_titles": None}.keys()
_TURN_KEYS = dict.fromkeys(("turn_id", "role", "da", "references", "utterance")).keys()
_KIND = {"sp": "span", "sec": "section"}
_INT32 = (-(2**31), 2**31 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")

_REFERENCE = {"sp_id": datasets.Value("string"), "label": datasets.Value("string")}
_TURN = {
    "turn_id": datasets.Value("int32"),
    "role": datasets.Value("string"),
    "da": datasets.Value("string"),
    "references": datasets.List(_REFERENCE),
    "utterance": datasets.Value("string"),
}
_SPAN = {
    "id_sp": datasets.Value("string"),
    "tag": datasets.Value("string"),
    "start_sp": datasets.Value("int32"),
    "end_sp": datasets.Value("int32"),
    "text_sp": datasets.Value("string"),
    "title": datasets.Value("string"),
    "parent_titles": datasets.Value("string"),
    "id_sec": datasets.Value("string"),
    "start_sec": datasets.Value("int32"),
    "text_sec": datasets.Value("string"),
    "end_sec": datasets.Value("int32"),
}
_FEATURES = {
    "dialogue_domain": {
        "dial_id": datasets.Value("string"),
        "doc_id": datasets.Value("string"),
        "domain": datasets.Value("string"),
        "turns": datasets.List(_TURN),
    },
    "document_domain": {
        "domain": datasets.Value("string"),
        "doc_id": datasets.Value("string"),
        "title": datasets.Value("string"),
        "doc_text": datasets.Value("string"),
        "spans": datasets.List(_SPAN),
        "doc_html_ts": datasets.Value("string"),
        "doc_html_raw": datasets.Value("string"),
    },
    "doc2dial_rc": {
        "id": datasets.Value("string"),
        "title": datasets.Value("string"),
        "context": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answers": {
            "text": datasets.List(datasets.Value("string")),
            "answer_start": datasets.List(datasets.Value("int32")),
        },
        "is_impossible": datasets.Value("bool"),
        "domain": datasets.Value("string"),
    },
}

class Doc2dial(RowsBuilder):
    """doc2dial v1.0.1 dialogues, documents, and SQuAD-style reading comprehension rows."""

    VERSION = datasets.Version("1.0.1")
    BUILDER_CONFIG_CLASS = SourceConfig
    BUILDER_CONFIGS = [
        SourceConfig(name="dialogue_domain", version=VERSION,
                     description="Dialogues with their turns, dialogue acts and span references."),
        SourceConfig(name="document_domain", version=VERSION,
                     description="The grounding documents with their annotated spans."),
        SourceConfig(name="doc2dial_rc", version=VERSION,
                     description="Reading comprehension (SQuAD v2 style): ground the next agent turn in the document."),
    ]
    DEFAULT_CONFIG_NAME = "dialogue_domain"
    # the documents are the train split of document_domain; the dialogue files give the others their splits
    SPLITS = {"dialogue_domain": ["train", "validation"], "document_domain": ["train"], "doc2dial_rc": ["train", "validation"]}

    def _info(self):
        return SOURCE.info(_FEATURES[self.config.name])

    def _split_generators(self, dl_manager):
        # everything is read and checked here, so that a bad record fails as SourceDataError (not wrapped)
        paths = self._source_files(dl_manager)
        docs = read_documents(paths["doc"])
        dialogues = self.config.name != "document_domain"
        return [
            datasets.SplitGenerator(
                name=split,
                gen_kwargs={"docs": docs, "dialogues": tuple(read_dialogues(paths[split], docs)) if dialogues else None},
            )
            for split in self.SPLITS[self.config.name]
        ]

    def _source_files(self, dl_manager):
        if self.config.data_dir:
            return SOURCE.resolve(self.config, dl_manager, _FILES)
        zip_path = SOURCE.resolve(self.config, dl_manager, {"zip": _ZIP})["zip"]
        label = f"{_ZIP} (downloaded to {zip_path})"
        unpacked = f"{zip_path}.{SOURCE.sha256[_ZIP][:16]}.unpacked"
        folder = extract_zip(zip_path, unpacked, required=_FILES.values(), label=label)
        paths = {key: os.path.join(folder, rel) for key, rel in _FILES.items()}
        for key, path in paths.items():
            if not os.path.isfile(path):
                raise SourceDataError(f"{label}: the archive has no member {_FILES[key]}")
        return paths

    def _generate_examples(self, docs, dialogues):
        if self.config.name == "document_domain":
            rows = (_document_row(domain, doc_id, doc) for (domain, doc_id), doc in docs.items())
        elif self.config.name == "dialogue_domain":
            rows = (_dialogue_row(domain, doc_id, dial) for domain, doc_id, dial in dialogues)
        else:
            rows = (row for domain, doc_id, dial in dialogues for row in rc_rows(domain, doc_id, docs[domain, doc_id], dial))
        yield from enumerate(rows)



# --- the zip


def extract_zip(zip_path, target, required=(), label=None):
    """Unpack ``zip_path`` into ``target`` (once): written to a temporary sibling, renamed when complete.

    A member whose path would land outside ``target`` (absolute, ``..``, drive letter) or a symbolic link, a
    missing ``required`` member, or a member that cannot be read (corrupt, encrypted, unknown compression) is
    refused with ``SourceDataError`` naming the zip (``label``, default its path) and the member; nothing is kept.
    """
    if os.path.isdir(target):
        return target
    parent = os.path.dirname(os.path.abspath(target))
    scratch = tempfile.mkdtemp(prefix=".doc2dial-unpack-", dir=parent)
    try:
        _extract_members(zip_path, scratch, required, label or zip_path)
        try:
            os.rename(scratch, target)
        except OSError:
            if not os.path.isdir(target):  # another process may have finished first
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


# what zipfile raises on a damaged archive: bad headers or CRC, a broken deflate stream, a short member,
# an encrypted member (RuntimeError), an unknown compression method, a member name that is not UTF-8
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, ValueError, OverflowError)


def _extract_members(zip_path, folder, required, label):
    root = os.path.realpath(folder)
    try:
        archive = zipfile.ZipFile(zip_path)
    except _ZIP_ERRORS as err:
        raise SourceDataError(f"{label}: not a valid zip archive ({type(err).__name__}: {err})") from None
    with archive:
        infos = archive.infolist()
        for info in infos:
            _check_member(label, root, info)
        names = {info.filename for info in infos}
        missing = [name for name in required if name not in names]
        if missing:
            raise SourceDataError(f"{label}: the archive has no member {', '.join(missing)}")
        for info in infos:
            try:
                archive.extract(info, folder)
            except _ZIP_ERRORS as err:
                raise SourceDataError(
                    f"{label}: member {info.filename!r}: cannot be extracted ({type(err).__name__}: {err})"
                ) from None


def _check_member(label, root, info):
    name = info.filename
    destination = os.path.realpath(os.path.join(root, name))
    drive = len(name) > 1 and name[1] == ":"
    outside = os.path.isabs(name) or drive or os.path.commonpath([root, destination]) != root
    if outside:
        raise SourceDataError(f"{label}: member {name!r}: path resolves outside the extraction folder; refusing to extract")
    if (info.external_attr >> 16) & 0o170000 == 0o120000:
        raise SourceDataError(f"{label}: member {name!r}: symbolic links are not accepted; refusing to extract")


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
    strings = [span[key] for key in _SPAN_STR_KEYS]
    if surrogates or not all(map(isinstance, strings, repeat(str))):
        where = _span_where(document, sp_id)
        for key in _SPAN_STR_KEYS:
            _check_text(path, where, key, span[key], surrogates)
        _check_text(path, where, "parent_titles", str(span["parent_titles"]), surrogates)
    for key in _SPAN_INT_KEYS:
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


def _document_row(domain, doc_id, doc):
    return {
        "domain": domain,
        "doc_id": doc_id,
        "title": doc["title"],
        "doc_text": doc["doc_text"],
        "spans": [
            {key: (str(span[key]) if key == "parent_titles" else span[key]) for key in _SPAN}
            for span in doc["spans"].values()
        ],
        "doc_html_ts": doc["doc_html_ts"],
        "doc_html_raw": doc["doc_html_raw"],
    }


def _dialogue_row(domain, doc_id, dial):
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
