"""The loaders' shared readers: every bad input is a SourceDataError naming the file, the line or record, the problem."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qahub.readers import SourceDataError, read_csv, read_json, read_jsonl


def write(tmp_path, data: bytes, name="f.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_read_json_allows_a_byte_order_mark(tmp_path):
    assert read_json(write(tmp_path, b'\xef\xbb\xbf{"a": [1, "\xc3\xa9"]}')) == {"a": [1, "é"]}


@pytest.mark.parametrize("data, problem", [
    (b'{"a": 1,\n "b": \xff}', r"record -: not UTF-8 text \(invalid start byte at byte 15, line 2\)"),
    ('{"a": 1}'.encode("utf-16"), r"record -: not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    ('{"a": 1}'.encode("utf-32-le"), r"record -: not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    (b'{"a": 1,\n "b": }', r"record -: not valid JSON \(Expecting value at line 2 column 7\)"),
    (b'[{"qid": 1, "x": {"y": 1, "y": 2}}]', r"record -: not valid JSON \(an object names the key 'y' twice\)"),
    (b"[" * 100_000 + b"]" * 100_000, r"record -: not valid JSON \(nested too deeply\)"),
    (b"[" + b"1" * 5000 + b"]", r"record -: not valid JSON \(Exceeds the limit"),
])
def test_read_json_names_file_and_problem(tmp_path, data, problem):
    path = write(tmp_path, data)
    with pytest.raises(SourceDataError, match=rf"^{path}: {problem}"):
        read_json(path)


def test_read_jsonl_numbers_lines_and_skips_blank_ones(tmp_path):
    path = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\n\n  \n{"a": 2}\n', "f.jsonl")
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (4, {"a": 2})]


@pytest.mark.parametrize("line, problem", [
    (b'{"a": \xe9}', r"not UTF-8 text \(invalid continuation byte at byte 6, line 1\)"),
    (b'{"a": }', r"not valid JSON \(Expecting value at line 1 column 7\)"),
    (b'{"a": 1, "a": 2}', r"not valid JSON \(an object names the key 'a' twice\)"),
])
def test_read_jsonl_names_the_line(tmp_path, line, problem):
    path = write(tmp_path, b'{"a": 0}\n' + line + b"\n", "f.jsonl")
    with pytest.raises(SourceDataError, match=rf"^{path}: record line 2: {problem}"):
        list(read_jsonl(path))


def test_read_csv_gives_the_line_where_each_record_starts(tmp_path):
    path = write(tmp_path, '\ufeffa,b\n"x\ny",z\n\n1,2\n'.encode(), "f.csv")
    assert list(read_csv(path)) == [(1, ["a", "b"]), (2, ["x\ny", "z"]), (5, ["1", "2"])]
    assert list(read_csv(write(tmp_path, b"a\tb\n1\t2\n", "t.csv"), "\t")) == [(1, ["a", "b"]), (2, ["1", "2"])]


@pytest.mark.parametrize("data, problem", [
    (b"a,b\n1,2\n\xe9,3\n", r"record line 3: not UTF-8 text \(invalid continuation byte at byte 8\)"),
    ("a,b\n1,2\n".encode("utf-16"), r"record line 1: not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    (b'a,b\n"1"x,2\n', r"record line 2: malformed CSV \("),
])
def test_read_csv_names_line_and_problem(tmp_path, data, problem):
    path = write(tmp_path, data, "f.csv")
    with pytest.raises(SourceDataError, match=rf"^{path}: {problem}"):
        list(read_csv(path))


def test_a_source_without_public_download_asks_for_a_local_copy_or_mirror(monkeypatch):
    from types import SimpleNamespace

    from qahub.loaders._sources import MIRROR_ENV, Source

    monkeypatch.delenv(MIRROR_ENV, raising=False)
    source = Source(corpus="nowhere", description="", citation="", homepage="", license="unknown")
    with pytest.raises(FileNotFoundError, match="nowhere has no public download: pass data_dir"):
        source.resolve(SimpleNamespace(data_dir=None, mirror_url=None), None, {"train": "train.jsonl"})


def test_splits_are_declared_once_on_the_builder_class():
    """The registry reads each builder's SPLITS; no loader keeps a module-level copy, and LIMUR (whose splits are
    whichever files its data_dir holds) says so with SPLITS_FROM_FILES rather than a special case in the export."""
    from qahub import registry

    for corpus in registry.corpus_names():
        assert not hasattr(registry.builder_module(corpus), "SPLITS"), corpus
    assert registry.splits("limur", "rwsd") == ["train", "validation", "test", "shots"]
    assert registry.absent_splits("limur", "all", ["validation"]) == []
    assert registry.absent_splits("topical_chat", "asr", ["test_freq"]) == ["test_rare"]


@pytest.mark.parametrize("rows, sizes", [(0, [0]), (3, [3]), (7, [3, 3, 1])])
def test_rows_builder_hands_datasets_tables_of_batch_rows(rows, sizes):
    """Every row once, in order, in tables of BATCH_ROWS rows; an empty split is one empty table (its schema)."""
    import datasets
    from qahub.loaders._rows import RowsBuilder

    class Numbers(RowsBuilder):
        BATCH_ROWS = 3

        def _info(self):
            return datasets.DatasetInfo(features=datasets.Features({"n": datasets.Value("int32"),
                                                                   "tag": datasets.ClassLabel(names=["a", "b"])}))

        def _generate_examples(self, count):
            for n in range(count):
                yield n, {"n": n, "tag": n % 2}

    tables = list(Numbers()._generate_tables(count=rows))
    assert [table.num_rows for _, table in tables] == sizes
    assert [row for _, table in tables for row in table.to_pylist()] == [{"n": n, "tag": n % 2} for n in range(rows)]
    assert [key for key, _ in tables] == list(range(len(tables)))


# --- any bytes: the readers return data or raise SourceDataError, nothing else -------------------------------

_JSONISH = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                 lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
                 max_leaves=20).map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_JSONISH, reader=st.sampled_from(["json", "jsonl", "csv"]))
def test_readers_return_data_or_a_named_error_for_any_bytes(tmp_path, data, reader):
    path = write(tmp_path, data, f"any.{reader}")
    read = {"json": read_json, "jsonl": lambda p: list(read_jsonl(p)), "csv": lambda p: list(read_csv(p))}[reader]
    try:
        read(path)
    except SourceDataError as err:
        assert str(err).startswith(f"{path}: "), err
