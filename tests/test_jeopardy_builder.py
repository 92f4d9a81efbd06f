import csv
import shutil

import datasets
import hostile
import pytest
from qahub.loaders import jeopardy
from qahub.loaders._sources import sha256_of

import qahub
from qahub import registry
from qahub.readers import SourceDataError
from qahub.testing import assert_export_roundtrip, build, shared_data

SAMPLE = registry.samples_dir("jeopardy")
HEADER = "QuestionID\tQuestionNumber\tQuestionText\tAnswer\tTopic\tSource\tAuthor Full Name\tTourName\tTourLink"


def _write(path, text, bom=False):
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def _extended(tmp_path, body, bom=False, header=HEADER, newline="\n"):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    _write(data_dir / jeopardy.EXTENDED, newline.join([header, *body]) + newline, bom=bom)
    return data_dir


def test_sample_extended_rows(tmp_path):
    train = build("jeopardy", "extended", SAMPLE, tmp_path)["train"]
    assert len(train) == 10
    assert train["question_id"] == list(range(10))
    assert train["question_number"] == [1, 2, 3, 4, 5] * 2
    assert train[3] == {
        "question_id": 3,
        "question_number": 4,
        "question": "Столица Австралии, построенная как компромисс между Сиднеем и Мельбурном.",
        "answer": "Канберра",
        "topic": "СТОЛИЦЫ",
        "source": None,  # an empty cell
        "author": "Иван Петров",
        "tour_name": '"Своя игра". Пример для qahub',
        "tour_link": "https://example.org/tour/qahub-sample",
    }
    assert train[4]["question"] == 'Самая высокогорная столица мира; её название значит "мир".'
    assert train[0]["source"] is None  # the text None upstream writes for a missing source
    assert train[8]["source"] == "https://ru.wikipedia.org/wiki/Бейкер-стрит"


def test_sample_qa_rows(tmp_path):
    dsd = build("jeopardy", "qa", SAMPLE, tmp_path)
    assert {split: len(ds) for split, ds in dsd.items()} == {"train": 5, "validation": 4}
    assert dsd["validation"][3] == {
        "question_id": 3,
        "question": 'Адрес "221B" на ЭТОЙ лондонской улице знают все поклонники Шерлока Холмса.',
        "answer": "Бейкер-стрит, Лондон",
    }
    assert dsd["train"][0] == {"question_id": 0, "question": "Столица Италии.", "answer": "Рим"}
    # the id is the row in the split's own file: each split counts from 0
    assert dsd["train"]["question_id"] == list(range(5)) and dsd["validation"]["question_id"] == list(range(4))


@pytest.mark.parametrize("config, split, name", [("extended", "train", jeopardy.EXTENDED),
                                                 ("qa", "train", jeopardy.TRAINING),
                                                 ("qa", "validation", jeopardy.VALIDATION)])
def test_the_file_reader_gives_the_builders_rows(tmp_path, config, split, name):
    """``qahub evaluate`` reads an upstream file with the builder's reader, without building: the same rows."""
    from qahub.loaders import _jeopardy_tables

    built = build("jeopardy", config, SAMPLE, tmp_path)[split]
    assert _read_by_the_cli(SAMPLE / name, config) == built.to_list()
    assert _jeopardy_tables.schema(config) == built.features.arrow_schema


def test_configs_and_features():
    assert registry.config_names("jeopardy") == ["extended", "qa"]
    assert registry.default_config("jeopardy") == "extended"
    assert registry.splits("jeopardy", "extended") == ["train"]
    assert registry.splits("jeopardy", "qa") == ["train", "validation"]
    features = jeopardy.Jeopardy(config_name="extended").info.features
    assert features["question_id"] == datasets.Value("int64")
    assert features["question_number"] == datasets.Value("int32")
    assert list(features) == ["question_id", "question_number", "question", "answer", "topic", "source", "author",
                              "tour_name", "tour_link"]
    assert jeopardy.Jeopardy(config_name="qa").info.features == datasets.Features(
        {"question_id": datasets.Value("int64"), "question": datasets.Value("string"),
         "answer": datasets.Value("string")})


def _read_by_the_cli(path, config):
    from qahub.loaders import _jeopardy_tables

    return _jeopardy_tables.rows(path, config)


def test_extended_parsing_is_robust(tmp_path):
    body = [
        '7\t2\t"Вопрос с\tтабуляцией, запятой и ""кавычками""\nи переводом строки"\tОтвет\tТема\tNone\tАвтор\tТур\t',
        '8\t3\tВопрос\t"Ответ, с запятой"\tТема\t\t\t\thttps://example.org/t',
        "", "",
    ]
    data_dir = _extended(tmp_path, body, bom=True, newline="\r\n")
    rows = build("jeopardy", "extended", data_dir, tmp_path / "cache")["train"].to_list()
    assert _read_by_the_cli(data_dir / jeopardy.EXTENDED, "extended") == rows
    assert rows == [
        {"question_id": 7, "question_number": 2,
         "question": 'Вопрос с\tтабуляцией, запятой и "кавычками"\nи переводом строки', "answer": "Ответ",
         "topic": "Тема", "source": None, "author": "Автор", "tour_name": "Тур", "tour_link": None},
        {"question_id": 8, "question_number": 3, "question": "Вопрос", "answer": "Ответ, с запятой", "topic": "Тема",
         "source": None, "author": None, "tour_name": None, "tour_link": "https://example.org/t"},
    ]


def test_qa_parsing_is_robust(tmp_path):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    text = 'QuestionText,Answer\r\n"Две\r\nстроки, ""цитата""",Ответ\r\nВопрос\tс табуляцией,"А, Б"\r\n\r\n\r\n'
    _write(data_dir / jeopardy.VALIDATION, text, bom=True)
    rows = build("jeopardy", "qa", data_dir, tmp_path / "cache")["validation"].to_list()
    assert _read_by_the_cli(data_dir / jeopardy.VALIDATION, "qa") == rows
    assert rows == [
        {"question_id": 0, "question": 'Две\r\nстроки, "цитата"', "answer": "Ответ"},
        {"question_id": 1, "question": "Вопрос\tс табуляцией", "answer": "А, Б"},
    ]


ROW = "1\t1\tВопрос\tОтвет\tТема\tNone\tАвтор\tТур\thttps://example.org/t"


@pytest.mark.parametrize(
    "body, message",
    [
        (['0\t1\t"две\nстроки"\tО\tТ\tNone\tА\tТур\tL', "1\t2\tтолько\tчетыре"],
         r"extended\.csv: record line 4: expected 9 columns, got 4"),
        ([ROW, "2\tпять\tВопрос\tОтвет\tТема\tNone\tАвтор\tТур\tL"],
         r"extended\.csv: record line 3: question_number must be an integer, got 'пять'"),
        ([ROW, "x1\t1\tВопрос\tОтвет\tТема\tNone\tАвтор\tТур\tL"],
         r"extended\.csv: record line 3: question_id must be an integer, got 'x1'"),
        ([ROW, ROW.replace("Вопрос", "Другой")],
         r"extended\.csv: record line 3: duplicate QuestionID 1 \(first at line 2\)"),
        ([ROW, '2\t1\t"Вопрос"x\tОтвет\tТема\tNone\tАвтор\tТур\tL'],
         r"extended\.csv: record line 3: malformed CSV"),
        ([ROW, ROW.replace("1\t1", "2\t99999999999", 1)],  # beyond int32
         r"extended\.csv: record line 3: question_number 99999999999 is outside the range -2147483648\.\.2147483647"),
        ([ROW, ROW.replace("1\t1", "99999999999999999999\t1", 1)],  # beyond int64
         r"extended\.csv: record line 3: question_id 99999999999999999999 is outside the range "
         r"-9223372036854775808\.\.9223372036854775807"),
        ([ROW.replace("1\t1", "9" * 5000 + "\t1", 1)],  # longer than int() parses by default
         r"extended\.csv: record line 2: question_id 9{40} is outside the range"),
        ([ROW, '2\t1\t"Вопрос не закрыт\tОтв'], r"extended\.csv: record line 3: malformed CSV \(unexpected end of data\)"),
    ],
)
def test_bad_extended_rows_name_file_line_and_problem(tmp_path, body, message):
    data_dir = _extended(tmp_path, body)
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=message):
        build("jeopardy", "extended", data_dir, cache)
    assert hostile.half_written(cache) == [], "a failed build left a half-written cache"


def test_wrong_header_is_a_clear_error(tmp_path):
    data_dir = _extended(tmp_path, [ROW], header=HEADER.replace("\t", ","))
    with pytest.raises(SourceDataError, match=r"extended\.csv: record line 1: expected the tab-separated header"):
        build("jeopardy", "extended", data_dir, tmp_path / "cache")


def test_qa_row_with_three_columns_is_an_error(tmp_path):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    _write(data_dir / jeopardy.TRAINING, "QuestionText,Answer\nВопрос,Ответ\nВопрос,Ответ,лишнее\n")
    with pytest.raises(SourceDataError, match=r"training\.csv: record line 3: expected 2 columns, got 3"):
        build("jeopardy", "qa", data_dir, tmp_path / "cache")


def test_non_utf8_file_is_a_clear_error(tmp_path):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    (data_dir / jeopardy.EXTENDED).write_bytes((HEADER + "\n" + ROW + "\n").encode("cp1251"))
    with pytest.raises(SourceDataError, match=r"extended\.csv: record line 2: not UTF-8 text \(invalid continuation "
                                              r"byte at byte \d+\)"):
        build("jeopardy", "extended", data_dir, tmp_path / "cache")


def test_non_utf8_line_far_into_the_file_is_named(tmp_path):
    # the reader decodes in blocks of several KB: the line must come from the bad byte, not the reader's position
    rows = [ROW.replace("1\t1", f"{i}\t1", 1) for i in range(1, 300)]
    data_dir = _extended(tmp_path, rows)
    path = data_dir / jeopardy.EXTENDED
    bad = (HEADER + "\n" + "\n".join(rows) + "\n").encode()
    path.write_bytes(bad + "300\t1\tq\t".encode() + "Ответ".encode("cp1251") + b"\tT\tNone\tA\tT\tL\n")
    offset = len(bad) + len("300\t1\tq\t")
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"record line 301: not UTF-8 text \(invalid continuation byte at byte {offset}\)"):
        build("jeopardy", "extended", data_dir, cache)
    assert hostile.half_written(cache) == [], "a failed build left a half-written cache"


@pytest.mark.parametrize("config, name, text", [
    ("extended", jeopardy.EXTENDED, HEADER + "\n\n"),
    ("qa", jeopardy.VALIDATION, "QuestionText,Answer\r\n"),
])
def test_a_header_without_rows_is_a_clear_error(tmp_path, config, name, text):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    _write(data_dir / name, text)
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"{name}: record line 2: no rows after the header"):
        build("jeopardy", config, data_dir, cache)
    assert hostile.half_written(cache) == [], "a failed build left a half-written cache"


def test_question_numbers_outside_one_to_five_warn_and_are_kept(tmp_path):
    body = [ROW, ROW.replace("1\t1", "2\t0", 1), ROW.replace("1\t1", "3\t-3", 1), ROW.replace("1\t1", "4\t6", 1)]
    data_dir = _extended(tmp_path, body)
    warned = r"extended\.csv: 3 row\(s\) with a QuestionNumber outside 1-5, kept as given: line 3: 0, line 4: -3, line 5: 6"
    with pytest.warns(UserWarning, match=warned):
        train = build("jeopardy", "extended", data_dir, tmp_path / "cache")["train"]
    assert train["question_number"] == [1, 0, -3, 6]
    with pytest.warns(UserWarning, match=warned):  # the CLI's read of the file, record by record: the same
        assert _read_by_the_cli(data_dir / jeopardy.EXTENDED, "extended") == train.to_list()


def test_missing_file_names_it(tmp_path):
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    (data_dir / jeopardy.TRAINING).unlink()
    with pytest.raises(FileNotFoundError, match=r"extended_training\.csv is not there; to build only the splits "
                                                r"whose files are there \(validation\), pass --option present_splits_only=true"):
        build("jeopardy", "qa", data_dir, tmp_path / "cache")


@pytest.mark.quick
def test_export_round_trip_every_config(tmp_path):
    counts = assert_export_roundtrip("jeopardy", SAMPLE, tmp_path)
    assert counts == {"extended": {"train": 10}, "qa": {"train": 5, "validation": 4}}


def _mirror(tmp_path, monkeypatch):
    root = tmp_path / "mirror"
    shutil.copytree(SAMPLE, root / "jeopardy")
    sums = {name: sha256_of(SAMPLE / name) for name in (jeopardy.EXTENDED, jeopardy.TRAINING, jeopardy.VALIDATION)}
    monkeypatch.setattr(jeopardy.SOURCE, "sha256", sums)
    return root


def test_download_from_local_mirror_with_checksums(tmp_path, http_server, monkeypatch):
    base = http_server(_mirror(tmp_path, monkeypatch))
    dsd = qahub.load("jeopardy", "qa", mirror_url=base, cache_dir=str(tmp_path / "cache"))
    local = build("jeopardy", "qa", SAMPLE, tmp_path / "local")
    assert {split: ds.to_list() for split, ds in dsd.items()} == {split: ds.to_list() for split, ds in local.items()}


def test_checksum_mismatch_is_an_error(tmp_path, http_server, monkeypatch):
    root = _mirror(tmp_path, monkeypatch)
    (root / "jeopardy" / jeopardy.EXTENDED).write_text(HEADER + "\n", encoding="utf-8")
    base = http_server(root)
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"{base}/jeopardy/{jeopardy.EXTENDED}: checksum mismatch"):
        qahub.load("jeopardy", "extended", mirror_url=base, cache_dir=str(cache))
    assert hostile.half_written(cache) == [], "a failed build left a half-written cache"


def test_canonical_urls_are_pinned_to_the_commit():
    assert jeopardy.SOURCE.base_url == (
        "https://raw.githubusercontent.com/evrog/Russian-QA-Jeopardy/55b6876fe647571c8ea47a7aec192dfab72b99b1")
    assert set(jeopardy.SOURCE.sha256) == {jeopardy.VALIDATION}


REAL = shared_data("jeopardy")
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/data/jeopardy is absent")


@needs_real
def test_real_validation_checksum_matches_the_pin():
    assert sha256_of(REAL / jeopardy.VALIDATION) == jeopardy.SOURCE.sha256[jeopardy.VALIDATION]


@needs_real
def test_real_validation_file(tmp_path):
    # the real training file is not in ../shared/data: pair the real validation file with the sample one
    data_dir = hostile.sample_copy("jeopardy", tmp_path)
    (data_dir / jeopardy.VALIDATION).unlink()
    (data_dir / jeopardy.VALIDATION).symlink_to(REAL / jeopardy.VALIDATION)
    validation = build("jeopardy", "qa", data_dir, tmp_path / "cache")["validation"]
    with open(REAL / jeopardy.VALIDATION, encoding="utf-8", newline="") as f:
        expected = [{"question_id": i, "question": r["QuestionText"], "answer": r["Answer"]}
                    for i, r in enumerate(csv.DictReader(f))]
    assert len(validation) == 3376
    assert validation.to_list() == expected
    assert validation[3]["answer"] == "Бульвар Сансет"


@needs_real
def test_real_extended_file_when_present(tmp_path):
    if not (REAL / jeopardy.EXTENDED).is_file():
        pytest.skip(f"{jeopardy.EXTENDED} is not in ../shared/data/jeopardy (too large to mirror)")
    train = build("jeopardy", "extended", REAL, tmp_path)["train"]
    with open(REAL / jeopardy.EXTENDED, encoding="utf-8", newline="") as f:
        expected = [(int(r["QuestionID"]), int(r["QuestionNumber"]), r["Answer"])
                    for r in csv.DictReader(f, delimiter="\t")]
    assert list(zip(train["question_id"], train["question_number"], train["answer"], strict=True)) == expected
