import json
import shutil

import datasets
import hostile
import pytest
from qahub.loaders import jemhopqa
from qahub.loaders._jemhopqa_files import parse_record
from qahub.loaders._sources import SourceUnavailableError

import qahub
from qahub import registry
from qahub.readers import SourceDataError
from qahub.testing import assert_export_roundtrip, build, shared_data

SAMPLE = registry.samples_dir("jemhopqa")
DEV_V12 = "corpus_ver1.2/dev_ver1.2.json"


def _write_dev(data_dir, records_or_text):
    path = data_dir / DEV_V12
    text = records_or_text if isinstance(records_or_text, str) else json.dumps(records_or_text, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path


def _dev_records():
    return json.loads((SAMPLE / DEV_V12).read_text(encoding="utf-8"))


@pytest.mark.parametrize("config", ["v1.0", "v1.1", "v1.2"])
def test_sample_builds_every_config(tmp_path, config):
    dsd = build("jemhopqa", config, SAMPLE, tmp_path)
    assert {split: len(ds) for split, ds in dsd.items()} == {"train": 4, "validation": 3}
    row = dsd["train"][2]
    assert row["type"] == dsd["train"].features["type"].str2int("comparison")
    assert row["answer"] == "YES"
    assert row["derivations"] == [
        {"subject": "北川駅", "relation": "路線", "objects": ["中央線", "東西線"]},
        {"subject": "南川駅", "relation": "路線", "objects": ["中央線"]},
    ]
    assert dsd["train"][0]["time_dependent"] is True


def test_versions_differ_where_the_sample_releases_differ(tmp_path):
    dev = {c: build("jemhopqa", c, SAMPLE, tmp_path)["validation"][1]["answer"] for c in ("v1.0", "v1.1", "v1.2")}
    assert dev == {"v1.0": "1921年", "v1.1": "1922年", "v1.2": "1922年"}


def test_features_are_typed():
    features = jemhopqa.Jemhopqa(config_name="v1.2").info.features
    assert features["type"] == datasets.ClassLabel(names=["compositional", "comparison"])
    assert isinstance(features["derivations"], datasets.List)
    assert features["derivations"].feature["objects"] == datasets.List(datasets.Value("string"))
    assert features["time_dependent"] == datasets.Value("bool")


def test_default_config_is_latest_release():
    assert registry.default_config("jemhopqa") == "v1.2"
    assert registry.config_names("jemhopqa") == ["v1.0", "v1.1", "v1.2"]


def test_qahub_load_returns_the_builders_datasetdict(tmp_path):
    dsd = qahub.load("jemhopqa", "v1.1", data_dir=SAMPLE, cache_dir=str(tmp_path))
    assert isinstance(dsd, datasets.DatasetDict)
    assert dsd["validation"][0]["qid"] == "s1000000000000000000000000000001"


def test_to_upstream_derivations_round_trips_the_sample():
    upstream = _dev_records()
    rows = [parse_record("f", i, r) for i, r in enumerate(upstream)]
    assert [jemhopqa.to_upstream_derivations(r["derivations"]) for r in rows] == [r["derivations"] for r in upstream]


def test_to_upstream_derivations_accepts_dict_of_lists():
    columns = {"subject": ["a"], "relation": ["r"], "objects": [["x", "y"]]}
    assert jemhopqa.to_upstream_derivations(columns) == [["a", "r", ["x", "y"]]]


@pytest.mark.quick
def test_export_round_trip_every_config(tmp_path):
    counts = assert_export_roundtrip("jemhopqa", SAMPLE, tmp_path)
    assert counts == {c: {"train": 4, "validation": 3} for c in ("v1.0", "v1.1", "v1.2")}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda recs: '[{"qid": "x", ', r"dev_ver1\.2\.json: record -: not valid JSON"),
        (lambda recs: "{}", r"record -: expected a JSON list of questions, got dict"),
        (lambda recs: "[]", r"dev_ver1\.2\.json: record -: no questions \(an empty list\)"),
        (lambda recs: [recs[0], {k: v for k, v in recs[1].items() if k != "answer"}],
         r"record 1 \(qid 's1000000000000000000000000000002'\): missing key\(s\) answer"),
        (lambda recs: [dict(recs[0], derivations=[["a", "b", "c"]])], r"record 0 .*objects of derivation step .* list of strings"),
        (lambda recs: [dict(recs[0], derivations=[["a", "b"]])], r"record 0 .*must be \[subject, relation, \[objects\.\.\.\]\]"),
        (lambda recs: [dict(recs[0], type="bridge")], r"record 0 .*unknown type 'bridge'"),
        (lambda recs: [dict(recs[0], time_dependent="no")], r"record 0 .*'time_dependent' must be true or false"),
        (lambda recs: [dict(recs[0], answer=None)], r"record 0 .*'answer' must be a string"),
        (lambda recs: [dict(recs[0], page_ids="123")], r"record 0 .*'page_ids' must be a list of strings"),
        (lambda recs: [recs[0], "oops"], r"record 1: expected an object, got str"),
    ],
)
def test_bad_input_names_file_record_and_problem(tmp_path, mutate, message):
    data_dir = hostile.sample_copy("jemhopqa", tmp_path)
    _write_dev(data_dir, mutate(_dev_records()))
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=message):
        build("jemhopqa", "v1.2", data_dir, cache)
    assert not list(cache.rglob("*.arrow")), "a failed build left Arrow files in the cache"
    assert not [p for p in cache.rglob("*") if p.name.endswith(".incomplete")]


def test_non_utf8_file_is_a_clear_error(tmp_path):
    data_dir = hostile.sample_copy("jemhopqa", tmp_path)
    (data_dir / DEV_V12).write_bytes('[{"qid": "ア"}]'.encode("shift_jis"))
    with pytest.raises(SourceDataError, match=r"dev_ver1\.2\.json: record -: not UTF-8 text"):
        build("jemhopqa", "v1.2", data_dir, tmp_path / "cache")


def test_missing_file_names_it(tmp_path):
    data_dir = hostile.sample_copy("jemhopqa", tmp_path)
    (data_dir / DEV_V12).unlink()
    with pytest.raises(FileNotFoundError, match=r"dev_ver1\.2\.json: source file not found"):
        build("jemhopqa", "v1.2", data_dir, tmp_path / "cache")


def test_failed_export_leaves_no_folder(tmp_path):
    from qahub.export.writer import export

    data_dir = hostile.sample_copy("jemhopqa", tmp_path)
    _write_dev(data_dir, "not json")
    with pytest.raises(SourceDataError):
        export("jemhopqa", tmp_path / "out", data_dir=data_dir)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def _pin_sample_checksums(monkeypatch):
    sums = {rel: jemhopqa_sha(rel) for rel in jemhopqa.SOURCE.sha256}
    monkeypatch.setattr(jemhopqa.SOURCE, "sha256", sums)


def jemhopqa_sha(rel):
    from qahub.loaders._sources import sha256_of

    return sha256_of(SAMPLE / rel)


def test_download_from_local_mirror_with_checksums(tmp_path, http_server, monkeypatch):
    root = tmp_path / "mirror"
    shutil.copytree(SAMPLE, root / "jemhopqa")
    _pin_sample_checksums(monkeypatch)
    base = http_server(root)
    builder = qahub.make_builder("jemhopqa", "v1.2", mirror_url=base, cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    dsd = builder.as_dataset()
    assert {split: len(ds) for split, ds in dsd.items()} == {"train": 4, "validation": 3}
    assert dsd["validation"].to_list() == build("jemhopqa", "v1.2", SAMPLE, tmp_path / "local")["validation"].to_list()


def test_mirror_from_environment_variable(tmp_path, http_server, monkeypatch):
    root = tmp_path / "mirror"
    shutil.copytree(SAMPLE, root / "jemhopqa")
    _pin_sample_checksums(monkeypatch)
    monkeypatch.setenv("QAHUB_MIRROR_URL", http_server(root) + "/")
    dsd = qahub.load("jemhopqa", "v1.0", cache_dir=str(tmp_path / "cache"))
    assert len(dsd["train"]) == 4


def test_checksum_mismatch_is_an_error_and_leaves_no_cache(tmp_path, http_server, monkeypatch):
    root = tmp_path / "mirror"
    shutil.copytree(SAMPLE, root / "jemhopqa")
    _pin_sample_checksums(monkeypatch)
    (root / "jemhopqa" / DEV_V12).write_text("[]", encoding="utf-8")  # served file no longer matches its pin
    base = http_server(root)
    cache = tmp_path / "cache"
    builder = qahub.make_builder("jemhopqa", "v1.2", mirror_url=base, cache_dir=str(cache))
    with pytest.raises(SourceDataError, match=rf"{base}/jemhopqa/{DEV_V12}: checksum mismatch: expected sha256 [0-9a-f]{{64}}, got"):
        builder.download_and_prepare()
    assert not list(cache.rglob("*.arrow"))
    downloads = [p for p in (cache / "downloads").rglob("*") if p.is_file() and p.stat().st_size == 2]
    assert downloads == [], "the mismatching download stayed in the cache"


def test_unreachable_mirror_is_a_clear_error(tmp_path, http_server):
    base = http_server(tmp_path)  # serves nothing: a 404 for every file
    builder = qahub.make_builder("jemhopqa", "v1.2", mirror_url=base, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(SourceUnavailableError, match=rf"downloading {base}/jemhopqa/corpus_ver1\.2/.* failed: not found on the server \(HTTP 404\); use a local copy \(data_dir="):
        builder.download_and_prepare()


def test_streaming_from_a_mirror_verifies_checksums(tmp_path, http_server, monkeypatch):
    root = tmp_path / "mirror"
    shutil.copytree(SAMPLE, root / "jemhopqa")
    _pin_sample_checksums(monkeypatch)
    builder = qahub.make_builder("jemhopqa", "v1.2", mirror_url=http_server(root), cache_dir=str(tmp_path / "cache"))
    streamed = list(builder.as_streaming_dataset()["validation"])
    assert streamed == build("jemhopqa", "v1.2", SAMPLE, tmp_path / "local")["validation"].to_list()
    (root / "jemhopqa" / DEV_V12).write_text("[]", encoding="utf-8")
    with pytest.raises(SourceDataError, match="checksum mismatch"):
        builder.as_streaming_dataset()


def test_canonical_urls_are_pinned_to_the_commit():
    source = jemhopqa.SOURCE
    urls = {f"{source.base_url}/{rel}" for files in source.files.values() for rel in files.values()}
    assert all("/fed5024f4f39f02727e699cb7ccb67935a779a5a/" in url for url in urls)
    assert set(source.sha256) == {rel for files in source.files.values() for rel in files.values()}


REAL = shared_data("jemhopqa")
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/data/jemhopqa is absent")


@needs_real
def test_real_checksums_match_the_pins():
    from qahub.loaders._sources import sha256_of

    assert {rel: sha256_of(REAL / rel) for rel in jemhopqa.SOURCE.sha256} == jemhopqa.SOURCE.sha256


@needs_real
@pytest.mark.parametrize("config", ["v1.0", "v1.1", "v1.2"])
def test_real_data_every_config(tmp_path, config):
    dsd = build("jemhopqa", config, REAL, tmp_path)
    assert {split: len(ds) for split, ds in dsd.items()} == {"train": 1059, "validation": 120}
    types = dsd["train"].features["type"]
    assert sum(1 for t in dsd["train"]["type"] if types.int2str(t) == "compositional") == 392
    assert sum(1 for t in dsd["validation"]["type"] if types.int2str(t) == "comparison") == 73
    first = dsd["validation"][0]
    assert first["qid"] == "2138f0638f363e75593d09df560db76c"
    assert first["answer"] == "ファイナルファンタジーXIII"
    assert first["derivations"][1] == {"subject": "ファイナルファンタジーXIII", "relation": "発売日", "objects": ["2009年12月17日"]}
    assert first["page_ids"] == ["543287", "2236928"]
    assert first["time_dependent"] is False


@needs_real
def test_real_releases_differ_where_upstream_fixed_them(tmp_path):
    dev = {c: build("jemhopqa", c, REAL, tmp_path)["validation"] for c in ("v1.0", "v1.1", "v1.2")}
    assert {c: d[4]["qid"] for c, d in dev.items()} == {c: "a5dda44918d33681714638f30fba1663" for c in dev}
    assert [dev[c][4]["answer"] for c in dev] == ["クリス・モーガン", "F・ゲイリー・グレイ", "F・ゲイリー・グレイ"]
    assert dev["v1.0"][4]["question"].endswith("監督はは誰？") and dev["v1.1"][4]["question"].endswith("監督は誰？")
    relations = [[step["relation"] for step in dev[c][6]["derivations"]] for c in ("v1.1", "v1.2")]
    assert relations == [["管轄区域", "管轄区域"], ["管轄県民局", "管轄県民局"]]


@needs_real
def test_real_data_export_round_trip(tmp_path):
    counts = assert_export_roundtrip("jemhopqa", REAL, tmp_path)
    assert counts == {c: {"train": 1059, "validation": 120} for c in ("v1.0", "v1.1", "v1.2")}
