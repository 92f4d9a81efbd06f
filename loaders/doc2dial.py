"""doc2dial v1.0.1: goal-oriented dialogues grounded in documents (DialDoc21 shared task release)."""

import os
import shutil
import tempfile
import zipfile
import zlib

import datasets
from qahub.dataset_cards import citation

from qahub.readers import SourceDataError

from ._doc2dial_files import (
    FILES,
    SPAN_FIELDS,
    SPAN_INT_KEYS,
    read_dialogues,
    read_documents,
    split_rows,
)
from ._rows import RowsBuilder
from ._sources import Source, SourceConfig

_DESCRIPTION = """\
Doc2dial is a dataset of goal-oriented dialogues grounded in associated documents: over 4500 annotated
conversations with an average of 14 turns, grounded in over 450 documents from four domains (dmv, ssa, va,
studentaid). Each turn carries a dialogue act and references to spans of its document. Version 1.0.1 is the
release of the DialDoc21 shared task.
"""

_ZIP = "doc2dial_v1.0.1.zip"
SOURCE = Source(
    corpus="doc2dial", description=_DESCRIPTION, citation=citation("doc2dial"),
    homepage="https://doc2dial.github.io", license="cc-by-3.0",
    base_url="https://doc2dial.github.io/file",
    # sha256 and size (5,879,543 bytes) of the zip as recorded in huggingface/datasets
    # datasets/doc2dial/dataset_infos.json (download_checksums, commit 521f463a9a5b74a948e3d1faeb75aa80f8fa9246)
    sha256={_ZIP: "c764d86628431fc1e54819d687a36f1d00b7ee95b8db2b3a7454149673ca4c17"},
)

_REFERENCE = {"sp_id": datasets.Value("string"), "label": datasets.Value("string")}
_TURN = {
    "turn_id": datasets.Value("int32"),
    "role": datasets.Value("string"),
    "da": datasets.Value("string"),
    "references": datasets.List(_REFERENCE),
    "utterance": datasets.Value("string"),
}
_SPAN = {key: datasets.Value("int32" if key in SPAN_INT_KEYS else "string") for key in SPAN_FIELDS}
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
            return SOURCE.resolve(self.config, dl_manager, FILES)
        zip_path = SOURCE.resolve(self.config, dl_manager, {"zip": _ZIP})["zip"]
        label = f"{_ZIP} (downloaded to {zip_path})"
        unpacked = f"{zip_path}.{SOURCE.sha256[_ZIP][:16]}.unpacked"
        folder = extract_zip(zip_path, unpacked, required=FILES.values(), label=label)
        paths = {key: os.path.join(folder, rel) for key, rel in FILES.items()}
        for key, path in paths.items():
            if not os.path.isfile(path):
                raise SourceDataError(f"{label}: the archive has no member {FILES[key]}")
        return paths

    def _generate_examples(self, docs, dialogues):
        yield from enumerate(split_rows(self.config.name, docs, dialogues))


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
