import hashlib
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from qahub.loaders import _doc2dial_files as files
from qahub.loaders import doc2dial as loader

from qahub import registry
from qahub.readers import SourceDataError
from qahub.testing import assert_export_roundtrip, build, shared_data

SAMPLES = registry.samples_dir("doc2dial")
RELEASE = "doc2dial/v1.0.1"
SEED_DIAL = "9f44c1539efe6f7e79b02eb1b413aa43"
SSA_DIAL = "78f72b08b43791a4a70363fe62b8de08"
SSA_DOC = "Benefits Planner: Retirement | Online Calculator (WEP Version)#1_0"
VAL_DMV = "bc38627ff52a6287de58ebef8f7409bd"
VAL_STUDENTAID = "2fcb88edbbe5bf78ecf05837d44e03b4"
TRAIN_STUDENTAID = "2ea7eb0892022d975ceaeb551121c36a"


@pytest.fixture(scope="module")
def rc(tmp_path_factory):
    dsd = build("doc2dial", "doc2dial_rc", SAMPLES, tmp_path_factory.mktemp("rc-cache"))
    return {split: {row["id"]: row for row in ds} for split, ds in dsd.items()}


def raw(name, root=SAMPLES):
    return json.loads((Path(root) / RELEASE / name).read_text(encoding="utf-8"))


def test_counts_of_every_config(tmp_path):
    counts = {
        config: {split: len(ds) for split, ds in build("doc2dial", config, SAMPLES, tmp_path / config).items()}
        for config in registry.config_names("doc2dial")
    }
    assert counts == {
        "dialogue_domain": {"train": 3, "validation": 3},
        "document_domain": {"train": 4},
        "doc2dial_rc": {"train": 11, "validation": 7},
    }
    assert registry.default_config("doc2dial") == "dialogue_domain"


def test_dialogue_rows_keep_turns_as_released(tmp_path):
    ds = build("doc2dial", "dialogue_domain", SAMPLES, tmp_path)["train"]
    first = ds[0]
    assert (first["dial_id"], first["doc_id"], first["domain"]) == (SEED_DIAL, "Top 5 DMV Mistakes and How to Avoid Them#3_0", "dmv")
    assert first["turns"][1] == {
        "turn_id": 2,
        "role": "agent",
        "da": "response_solution",
        "references": [
            {"sp_id": "6", "label": "solution"},
            {"sp_id": "7", "label": "solution"},
            {"sp_id": "4", "label": "references"},
        ],
        "utterance": "hi, you have to report any change of address to DMV within 10 days after moving. You should do "
        "this both for the address associated with your license and all the addresses associated with all your vehicles.",
    }
    assert [row["dial_id"] for row in ds] == [SEED_DIAL, SSA_DIAL, TRAIN_STUDENTAID]


def test_document_row_matches_the_seed_record(tmp_path):
    docs = {row["doc_id"]: row for row in build("doc2dial", "document_domain", SAMPLES, tmp_path)["train"]}
    ssa = docs[SSA_DOC]
    assert ssa["title"] == "Benefits Planner: Retirement | Online Calculator (WEP Version)#1"
    assert ssa["spans"][1] == {
        "id_sp": "2", "tag": "h3", "start_sp": 32, "end_sp": 67,
        "text_sp": "\n\nOnline Calculator (WEP Version) \n", "title": "Online Calculator (WEP Version)",
        "parent_titles": "[{'id_sp': '1', 'text': 'Benefits Planner: Retirement', 'level': 'h2'}]",
        "id_sec": "t_1", "start_sec": 32, "text_sec": "\n\nOnline Calculator (WEP Version) \n", "end_sec": 67,
    }
    assert ssa["spans"][2]["parent_titles"] == "[]"
    assert len(ssa["doc_text"]) == 866 and len(ssa["spans"]) == 18


def test_rc_first_turn_is_the_seed_example(rc):
    row = rc["train"][f"{SSA_DIAL}_1"]
    assert row == {
        "id": f"{SSA_DIAL}_1",
        "title": SSA_DOC,
        "context": row["context"],
        "question": "user: Hello, I want to know about the retirement plan.",
        "answers": {"text": ["\n\nBenefits Planner: Retirement \n\n\nOnline Calculator (WEP Version) \n"], "answer_start": [0]},
        "is_impossible": False,
        "domain": "ssa",
    }


def test_rc_answer_spans_from_smallest_start_to_largest_end(rc):
    # agent turn 4 references spans 6, 3 and 5: the answer runs from span 3's start to span 6's end
    row = rc["train"][f"{SSA_DIAL}_3"]
    assert row["answers"] == {
        "text": ["The calculator shown below allows you to estimate your Social Security benefit. However , "
                 "for the most accurate estimates , use the Detailed Calculator. "],
        "answer_start": [67],
    }
    # non-ASCII document: offsets count code points
    row = rc["train"][f"{TRAIN_STUDENTAID}_1"]
    text, start = row["answers"]["text"][0], row["answers"]["answer_start"][0]
    assert text == "Your payment is based on your income and family size — usually 10 % of your discretionary income. " \
                   "If you’re married , your spouse’s income may count too. "
    assert row["context"][start:start + len(text)] == text


def test_rc_skips_and_out_of_document_turns(rc):
    train, validation = rc["train"], rc["validation"]
    # consecutive user turns 5 and 6: only the one right before the agent turn is a question
    assert f"{SSA_DIAL}_5" not in train
    assert train[f"{SSA_DIAL}_6"]["question"] == (
        "user: Also, can I print my results? user: I have a Mac. Will the calculator work for me? "
        "agent: Yes it can, but for the most accurate estimates use the Detailed Calculator. "
        "user: Can it estimate my Social Security benefit? agent: This is the Benefits Planner for retirement. "
        "It has an Online Calculator, the WEP version. user: Hello, I want to know about the retirement plan."
    )
    # out-of-document agent turn (no references): impossible, empty answers
    assert train[f"{SSA_DIAL}_8"]["is_impossible"] is True
    assert train[f"{SSA_DIAL}_8"]["answers"] == {"text": [], "answer_start": []}
    # a dialogue ending on a user turn gives no row for that turn
    assert f"{SSA_DIAL}_10" not in train and f"{VAL_STUDENTAID}_6" not in validation
    # agent turn 5 follows agent turn 4: no row for turn 4, and turn 3's answer is turn 4's grounding only
    assert f"{VAL_DMV}_4" not in validation
    assert validation[f"{VAL_DMV}_3"]["answers"]["text"] == ["Otherwise we may suspend your registration. We may also suspend your driver license. "]
    assert sorted(validation) == sorted(
        [f"{VAL_DMV}_1", f"{VAL_DMV}_3", f"{VAL_DMV}_6", f"{VAL_DMV}_8", "31df469f84443357e17ef3f80b6c099e_1",
         f"{VAL_STUDENTAID}_2", f"{VAL_STUDENTAID}_4"]
    )
    assert sum(row["is_impossible"] for row in validation.values()) == 1


def test_rc_question_keeps_the_first_100_tokens_newest_first(rc):
    question = rc["train"][f"{SEED_DIAL}_9"]["question"]
    assert question == (
        "user: Can you tell me more about Traffic points and their cost? "
        "agent: Sure. Any change of address must be reported to the DMV, that's for the address associated with your "
        "license and any of your vehicles. "
        "user: Ok, and can you tell me again where should I report my new address? "
        "agent: This happens often with our customers so that's why our website and MyDMV are so useful for our "
        "customers. Just check if you can make your transaction online so you don't have to go to the DMV Office. "
        "user: Thanks, and in case I forget to bring"
    )
    assert len(question.split()) == files.MAX_QUESTION_TOKENS


@pytest.mark.quick
def test_export_roundtrip(tmp_path):
    loaded = assert_export_roundtrip("doc2dial", SAMPLES, tmp_path)
    assert loaded == {
        "dialogue_domain": {"train": 3, "validation": 3},
        "document_domain": {"train": 4},
        "doc2dial_rc": {"train": 11, "validation": 7},
    }


# --- the release zip, served from a local HTTP server


def make_zip(path, extra=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("doc2dial_doc.json", "doc2dial_dial_train.json", "doc2dial_dial_validation.json"):
            archive.write(SAMPLES / RELEASE / name, f"{RELEASE}/{name}")
        for name, data in extra:
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_from_mirror(config, base_url, cache_dir):
    import qahub

    builder = qahub.make_builder("doc2dial", config, cache_dir=str(cache_dir), mirror_url=base_url)
    builder.download_and_prepare()
    return builder.as_dataset()


def leftovers(cache_dir):
    """Half-written folders: the builder's ``*.incomplete`` cache folder or an unfinished unpack folder."""
    return sorted(p.name for p in Path(cache_dir).rglob("*")
                  if p.is_dir() and (".incomplete" in p.name or ".doc2dial-unpack-" in p.name))


def test_zip_download_builds_the_same_rows(tmp_path, http_server, monkeypatch):
    sha = make_zip(tmp_path / "www" / "doc2dial" / loader._ZIP)
    monkeypatch.setitem(loader.SOURCE.sha256, loader._ZIP, sha)
    base = http_server(tmp_path / "www")
    for config in ("doc2dial_rc", "document_domain"):
        downloaded = build_from_mirror(config, base, tmp_path / "cache")
        local = build("doc2dial", config, SAMPLES, tmp_path / "local")
        assert {s: ds.to_list() for s, ds in downloaded.items()} == {s: ds.to_list() for s, ds in local.items()}
    unpacked = list((tmp_path / "cache" / "downloads").glob(f"*.{sha[:16]}.unpacked"))
    assert len(unpacked) == 1 and (unpacked[0] / RELEASE / "doc2dial_doc.json").is_file()
    assert leftovers(tmp_path / "cache") == []


def test_zip_checksum_mismatch_is_refused_and_removed(tmp_path, http_server):
    make_zip(tmp_path / "www" / "doc2dial" / loader._ZIP)
    size = (tmp_path / "www" / "doc2dial" / loader._ZIP).stat().st_size
    base = http_server(tmp_path / "www")
    with pytest.raises(SourceDataError, match=rf"doc2dial/{loader._ZIP}: checksum mismatch: expected sha256 {loader.SOURCE.sha256[loader._ZIP]}"):
        build_from_mirror("dialogue_domain", base, tmp_path / "cache")
    cached = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.stat().st_size == size]
    assert cached == []
    assert not list((tmp_path / "cache").rglob("*.unpacked"))


def test_zip_member_outside_the_folder_is_refused(tmp_path, http_server, monkeypatch):
    sha = make_zip(tmp_path / "www" / "doc2dial" / loader._ZIP, extra=[("../escaped.txt", "x")])
    monkeypatch.setitem(loader.SOURCE.sha256, loader._ZIP, sha)
    base = http_server(tmp_path / "www")
    with pytest.raises(SourceDataError, match=r"member '\.\./escaped\.txt': path resolves outside the extraction folder"):
        build_from_mirror("doc2dial_rc", base, tmp_path / "cache")
    assert not list(tmp_path.rglob("escaped.txt"))
    assert not list((tmp_path / "cache").rglob("*.unpacked"))
    assert leftovers(tmp_path / "cache") == []


@pytest.mark.parametrize("member, problem", [
    ("/tmp/absolute.txt", "path resolves outside the extraction folder"),
    ("doc2dial/../../up.txt", "path resolves outside the extraction folder"),
    ("C:/windows.txt", "path resolves outside the extraction folder"),
])
def test_extract_zip_refuses_unsafe_paths(tmp_path, member, problem):
    archive = tmp_path / "bad.zip"
    make_zip(archive, extra=[(member, "x")])
    with pytest.raises(SourceDataError, match=re.escape(f"bad.zip: member {member!r}: {problem}")):
        loader.extract_zip(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.zip"]


def test_extract_zip_refuses_symlinks(tmp_path):
    archive = tmp_path / "link.zip"
    make_zip(archive)
    with zipfile.ZipFile(archive, "a") as zf:
        info = zipfile.ZipInfo("doc2dial/link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(SourceDataError, match=r"member 'doc2dial/link': symbolic links are not accepted"):
        loader.extract_zip(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_not_a_zip(tmp_path):
    archive = tmp_path / "broken.zip"
    archive.write_text("not a zip")
    with pytest.raises(SourceDataError, match=r"broken\.zip: not a valid zip archive"):
        loader.extract_zip(str(archive), str(tmp_path / "out"))


# --- bad records


def corrupt(tmp_path, name, change):
    root = tmp_path / "data"
    shutil.copytree(SAMPLES / "doc2dial", root / "doc2dial")
    path = root / RELEASE / name
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")  # ASCII: lone surrogates stay \u escapes, as JSON allows
    return root


def ssa_doc(data):
    return data["doc_data"]["ssa"][SSA_DOC]


def ssa_turns(data):
    return data["dial_data"]["ssa"][SSA_DOC][0]["turns"]


def _shift_text(data):
    ssa_doc(data)["spans"]["3"]["text_sp"] = "The calculator shown below allows you"


def _offsets_outside(data):
    ssa_doc(data)["spans"]["18"]["end_sp"] = 900


def _unknown_span(data):
    ssa_turns(data)[3]["references"].append({"sp_id": "99", "label": "solution"})


def _bad_role(data):
    ssa_turns(data)[1]["role"] = "system"


def _missing_doc(data):
    data["dial_data"]["ssa"]["No such document#1_0"] = data["dial_data"]["ssa"].pop(SSA_DOC)


def _offset_type(data):
    ssa_doc(data)["spans"]["2"]["start_sp"] = "32"


def _surrogate_utterance(data):
    ssa_turns(data)[1]["utterance"] = "ok \ud83d"


def _surrogate_html(data):
    ssa_doc(data)["doc_html_raw"] = "\udc80"


def _huge_turn_id(data):
    ssa_turns(data)[1]["turn_id"] = 2**40


def _huge_section_start(data):
    ssa_doc(data)["spans"]["2"]["start_sec"] = 2**40


def _section_outside(data):
    ssa_doc(data)["spans"]["2"]["end_sec"] = 99999


def _section_text(data):
    ssa_doc(data)["spans"]["3"]["text_sec"] = "The calculator"


CASES = [
    ("doc2dial_doc.json", _shift_text, "dialogue_domain",
     rf"doc2dial_doc\.json: record document '{SSA_DOC}' \(domain 'ssa'\) span '3': text_sp 'The calculator shown below allows you' != doc_text\[67:147\]"),
    ("doc2dial_doc.json", _offsets_outside, "document_domain",
     r"doc2dial_doc\.json: record .* span '18': span offsets \[800, 900\) lie outside doc_text \(length 866\)"),
    ("doc2dial_doc.json", _offset_type, "document_domain",
     r"doc2dial_doc\.json: record .* span '2': 'start_sp' must be an integer, got '32'"),
    ("doc2dial_dial_train.json", _unknown_span, "doc2dial_rc",
     rf"doc2dial_dial_train\.json: record dialogue {SSA_DIAL} \(doc_id '{SSA_DOC}'\) turn 4: span '99' is not a span of the document"),
    ("doc2dial_dial_train.json", _bad_role, "dialogue_domain",
     rf"doc2dial_dial_train\.json: record dialogue {SSA_DIAL} .* turn 2: role 'system' is not one of"),
    ("doc2dial_dial_train.json", _missing_doc, "doc2dial_rc",
     r"doc2dial_dial_train\.json: record dialogue .*: document 'No such document#1_0' of domain 'ssa' is not in doc2dial_doc\.json"),
    ("doc2dial_dial_train.json", _surrogate_utterance, "dialogue_domain",
     rf"doc2dial_dial_train\.json: record dialogue {SSA_DIAL} .* turn 2: 'utterance' holds a lone surrogate '\\ud83d' "
     r"at character 3: not encodable as UTF-8"),
    ("doc2dial_doc.json", _surrogate_html, "document_domain",
     rf"doc2dial_doc\.json: record document '{re.escape(SSA_DOC)}' \(domain 'ssa'\): 'doc_html_raw' holds a lone surrogate"),
    ("doc2dial_dial_train.json", _huge_turn_id, "doc2dial_rc",
     rf"doc2dial_dial_train\.json: record dialogue {SSA_DIAL} .* turn 1099511627776: turn_id 1099511627776 is outside the int32 range"),
    ("doc2dial_doc.json", _huge_section_start, "document_domain",
     r"doc2dial_doc\.json: record .* span '2': section offsets \[1099511627776, 67\) lie outside doc_text \(length 866\)"),
    ("doc2dial_doc.json", _section_outside, "document_domain",
     r"doc2dial_doc\.json: record .* span '2': section offsets \[32, 99999\) lie outside doc_text \(length 866\)"),
    ("doc2dial_doc.json", _section_text, "dialogue_domain",
     r"doc2dial_doc\.json: record .* span '3': text_sec 'The calculator' != doc_text\[67:220\]"),
]


@pytest.mark.parametrize("name, change, config, message", CASES, ids=[case[1].__name__ for case in CASES])
def test_bad_records_name_file_record_and_problem(tmp_path, name, change, config, message):
    data_dir = corrupt(tmp_path, name, change)
    with pytest.raises(SourceDataError, match=message):
        build("doc2dial", config, data_dir, tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []
    assert not list((tmp_path / "cache").rglob("*.arrow"))


def test_invalid_json_and_missing_file(tmp_path):
    root = tmp_path / "data"
    shutil.copytree(SAMPLES / "doc2dial", root / "doc2dial")
    (root / RELEASE / "doc2dial_dial_validation.json").write_text('{"dial_data": {', encoding="utf-8")
    with pytest.raises(SourceDataError, match=r"doc2dial_dial_validation\.json: record -: not valid JSON"):
        build("doc2dial", "dialogue_domain", root, tmp_path / "cache")
    os.remove(root / RELEASE / "doc2dial_doc.json")
    with pytest.raises(FileNotFoundError, match=r"doc2dial_doc\.json: source file not found"):
        build("doc2dial", "document_domain", root, tmp_path / "cache")


def test_real_release_counts(tmp_path):
    real = shared_data("doc2dial")
    if real is None:
        pytest.skip("../shared/data/doc2dial absent (the v1.0.1 zip is not mirrored there)")
    counts = {config: {split: len(ds) for split, ds in build("doc2dial", config, real, tmp_path / config).items()}
              for config in registry.config_names("doc2dial")}
    # dialogue and rc counts published for the v1.0.1 zip (huggingface/datasets dataset_infos.json)
    assert counts["dialogue_domain"] == {"train": 3474, "validation": 661}
    assert counts["doc2dial_rc"] == {"train": 20431, "validation": 3972}
    assert counts["document_domain"] == {"train": 488}


# --- damaged zips: SourceDataError naming the zip and the member, nothing left beside the zip


def first_member_data_offset(raw_zip):
    """Offset of the first member's compressed data (after its 30-byte local header, name and extra field)."""
    name_len, extra_len = int.from_bytes(raw_zip[26:28], "little"), int.from_bytes(raw_zip[28:30], "little")
    return 30 + name_len + extra_len


def _flip_deflate(raw):
    raw[first_member_data_offset(raw) + 50] ^= 0xFF


def _encrypted_flag(raw):
    raw[6] |= 1  # general purpose flag bit 0, local header and central directory
    raw[raw.find(b"PK\x01\x02") + 8] |= 1


def _unknown_method(raw):
    raw[8] = 99
    raw[raw.find(b"PK\x01\x02") + 10] = 99


@pytest.mark.parametrize("damage, problem", [
    (_flip_deflate, r"cannot be extracted \((error: Error -3 while decompressing|BadZipFile: Bad CRC-32)"),
    (_encrypted_flag, r"cannot be extracted \(RuntimeError: File .* is encrypted"),
    (_unknown_method, r"cannot be extracted \(NotImplementedError: That compression method is not supported"),
], ids=["corrupt_deflate", "encrypted", "unknown_method"])
def test_damaged_zip_member_is_refused(tmp_path, damage, problem):
    archive = tmp_path / "damaged.zip"
    make_zip(archive)
    raw = bytearray(archive.read_bytes())
    damage(raw)
    archive.write_bytes(bytes(raw))
    member = f"{RELEASE}/doc2dial_doc.json"
    with pytest.raises(SourceDataError, match=rf"damaged\.zip: member '{member}': {problem}"):
        loader.extract_zip(str(archive), str(tmp_path / "out"), required=loader.FILES.values())
    assert [p.name for p in tmp_path.iterdir()] == ["damaged.zip"]


def test_zip_without_the_release_files_leaves_nothing(tmp_path, http_server, monkeypatch):
    archive = tmp_path / "www" / "doc2dial" / loader._ZIP
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w"):
        pass
    monkeypatch.setitem(loader.SOURCE.sha256, loader._ZIP, hashlib.sha256(archive.read_bytes()).hexdigest())
    with pytest.raises(SourceDataError, match=rf"{loader._ZIP} \(downloaded to .*\): the archive has no member {RELEASE}/doc2dial_doc\.json, "):
        build_from_mirror("dialogue_domain", http_server(tmp_path / "www"), tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.unpacked"))
    assert leftovers(tmp_path / "cache") == []


# --- the rows `qahub evaluate doc2dial --data-dir` reads without `datasets` are the built ones (issue 44)


def _local_equals_built(folder, cache):
    """Every config and split (the adapter reads doc2dial_rc and dialogue_domain): the reader's rows are what the
    builder gives after `datasets` cast them, values and key order alike."""
    import qahub

    for config in registry.config_names("doc2dial"):
        built = qahub.load("doc2dial", config, data_dir=str(folder), cache_dir=str(cache / config))
        assert list(built) == registry.catalog()["doc2dial"]["configs"][config]
        for split, rows in built.items():
            local, rows = files.local_rows(folder, config, split), rows.to_list()
            assert local == rows and local, (config, split)
            assert [list(row) for row in local] == [list(row) for row in rows]


def test_the_rows_read_without_datasets_are_the_built_rows(tmp_path):
    _local_equals_built(SAMPLES, tmp_path)


@pytest.mark.slow
def test_the_rows_read_without_datasets_are_the_built_rows_of_the_shared_data(tmp_path):
    real = shared_data("doc2dial")
    if real is None:
        pytest.skip("../shared/data/doc2dial absent (the v1.0.1 zip is not mirrored there)")
    _local_equals_built(real, tmp_path)


def test_the_reader_without_datasets_imports_neither_datasets_pandas_nor_pyarrow():
    import subprocess
    import sys

    code = ("import sys; from qahub.loaders import _doc2dial_files as f; f.local_rows(sys.argv[1], 'doc2dial_rc', "
            "'validation'); print(sorted({m.split('.')[0] for m in sys.modules} & {'datasets', 'pandas', 'pyarrow'}))")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
