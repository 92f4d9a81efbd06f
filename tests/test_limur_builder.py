import json
from pathlib import Path

import datasets
import pytest

from qahub import registry, testing
from qahub.readers import SourceDataError

SAMPLES = registry.samples_dir("limur")
LETTERS = ["А", "Б", "В", "Г", "Д", "Е", "Ё", "Ж", "З"]

# the seed's rwsd example, as the builder must give it back
SEED_426 = {
    "instruction": "Задача:\nПо контексту и референсу нужно определить, к каким вариантам относится референс.\n\n"
    "Референс может указывать как на отдельное слово, так и на того, кто выполняет действие. В последнем случае "
    "нужно определить, какое из существительных имеется в виду.\n\nКонтекст:\n{context}\n\nРеференс:\n{reference}"
    "\n\nФормат ответа:\nВерните результат в формате\n\nОтвет: <буква>\n\nБуквами ответа могут являться только "
    "заглавные буквы русского алфавита из списка (А, Б, В, Г, Д, Е, Ё).\n\nВопрос:\n{question}\n\nВарианты ответа:"
    "\nА. {option_a}\nБ. {option_b}\nВ. {option_c}\nГ. {option_d}\nД. {option_e}\nЕ. {option_f}\nЁ. {option_g}\n",
    "inputs": {
        "question": "К какому из предложенных вариантов ответа относится слово референс в данном контексте?",
        "context": "Дни летели за днями, птицы за птицами, депеши за депешами, а самолёты Аркадия Петровича "
        "Авастюрова никак не желали подниматься с полей в небеса, и всёшеньки! Они понуро жались к стерне и "
        "что-то надрывно бурчали про себя время от времени, но и только.",
        "reference": "они",
        "option_a": "дни", "option_b": "птицы", "option_c": "депеши", "option_d": "самолёты", "option_e": "полей",
        "option_f": "небеса", "option_g": "всёшеньки", "option_h": "", "option_i": "",
    },
    "outputs": "Г",
    "meta": {"id": 426, "context_type": "текст", "task_type": "rwsd"},
}


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def by_id(records, record_id):
    return next(r for r in records if r["meta"]["id"] == record_id)


def filled(instruction, inputs):
    """The prompt, filled by plain replacement (independent of the builder's str.format), then stripped as
    MERA's harness strips it (benchmark_tasks/custom_loglikelihood_task.yaml: instruction.format(**inputs).strip())."""
    for key, value in inputs.items():
        instruction = instruction.replace("{" + key + "}", value)
    return instruction.strip()


def expected_row(record):
    """MERA's own fields exactly as the source has them, plus the derived options, prompt and label."""
    options = [record["inputs"][f"option_{c}"] for c in "abcdefghi" if record["inputs"][f"option_{c}"]]
    return {
        "instruction": record["instruction"],
        "inputs": record["inputs"],
        "outputs": record["outputs"],
        "meta": {"id": record["meta"]["id"], "task_type": record["meta"]["task_type"],
                 "context_type": record["meta"]["context_type"]},
        "options": options,
        "prompt": filled(record["instruction"], record["inputs"]),
        "label": LETTERS.index(record["outputs"].strip()) if record["outputs"].strip() else -1,
    }


SAMPLE_SPLITS = (("dev.jsonl", "validation"), ("test.jsonl", "test"), ("shots.jsonl", "shots"))


def sample_counts(task_type=None):
    counts = {}
    for name, split in SAMPLE_SPLITS:
        records = read_jsonl(SAMPLES / name)
        counts[split] = sum(task_type in (None, r["meta"]["task_type"]) for r in records)
    return counts


def test_samples_cover_what_the_issue_asks():
    records = read_jsonl(SAMPLES / "dev.jsonl") + read_jsonl(SAMPLES / "test.jsonl")
    assert len(records) >= 12
    assert {(r["meta"]["task_type"], r["meta"]["context_type"]) for r in records} == {
        (t, c) for t in ("rwsd", "kusdra") for c in ("текст", "диалог")}
    sizes = {sum(bool(v) for k, v in r["inputs"].items() if k.startswith("option_")) for r in records}
    assert min(sizes) == 4 and max(sizes) == 9
    assert all(r["inputs"]["reference"] == "‘-‘" for r in records if r["meta"]["task_type"] == "kusdra")
    assert by_id(records, 426) == SEED_426


@pytest.mark.parametrize("config, task_type", [("all", None), ("rwsd", "rwsd"), ("kusdra", "kusdra")])
def test_build_configs(tmp_path, config, task_type):
    dsd = testing.build("limur", config, SAMPLES, tmp_path)
    assert {split: len(ds) for split, ds in dsd.items()} == sample_counts(task_type)
    for name, split in SAMPLE_SPLITS:
        records = [r for r in read_jsonl(SAMPLES / name) if task_type in (None, r["meta"]["task_type"])]
        assert dsd[split].to_list() == [expected_row(r) for r in records]


def test_seed_rows_exactly(tmp_path):
    test = testing.build("limur", "all", SAMPLES, tmp_path)["test"].to_list()
    row = by_id(test, 426)
    assert row["outputs"] == "Г" and row["label"] == 3 and row["options"][3] == "самолёты" and len(row["options"]) == 7
    assert row["prompt"].endswith("Е. небеса\nЁ. всёшеньки") and "{" not in row["prompt"]
    assert row["prompt"].startswith("Задача:\nПо контексту")
    assert "Референс:\nони\n" in row["prompt"]
    kusdra = by_id(test, 429)
    assert kusdra["outputs"] == "В" and kusdra["label"] == 2 and kusdra["inputs"]["reference"] == "‘-‘"
    assert kusdra["options"] == ["Три", "Два", "Нисколько", "Невозможно определить"]
    assert kusdra["meta"] == {"id": 429, "task_type": "kusdra", "context_type": "текст"}


def test_features(tmp_path):
    features = testing.build("limur", "all", SAMPLES, tmp_path)["test"].features
    string = datasets.Value("string")
    assert features["outputs"] == string and features["instruction"] == string
    assert features["meta"] == {"id": datasets.Value("int32"), "task_type": string, "context_type": string}
    assert features["label"].names == LETTERS
    assert list(features) == ["instruction", "inputs", "outputs", "meta", "options", "prompt", "label"]
    assert list(features["inputs"]) == ["question", "context", "reference", *[f"option_{c}" for c in "abcdefghi"]]


@pytest.mark.quick
def test_export_roundtrip(tmp_path):
    rows = testing.assert_export_roundtrip("limur", SAMPLES, tmp_path)
    assert rows == {config: sample_counts(task) for config, task in
                    (("all", None), ("rwsd", "rwsd"), ("kusdra", "kusdra"))}


def test_task_json_gives_the_same_rows(tmp_path):
    dev, test = read_jsonl(SAMPLES / "dev.jsonl"), read_jsonl(SAMPLES / "test.jsonl")
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"data": {"train": dev[:2], "dev": dev, "test": test}},
                                                 ensure_ascii=False), encoding="utf-8")
    assert {r["meta"]["task_type"] for r in dev[:2]} == {"rwsd"}
    for config in ("all", "kusdra"):
        from_task = testing.build("limur", config, folder, tmp_path / f"{config}-task")
        from_jsonl = testing.build("limur", config, SAMPLES, tmp_path / f"{config}-jsonl")
        assert from_task["validation"].to_list() == from_jsonl["validation"].to_list()
        assert from_task["test"].to_list() == from_jsonl["test"].to_list()
    # the train split holds only rwsd records: the kusdra config has no train split rather than an empty one
    assert set(from_task) == {"validation", "test"}
    assert testing.build("limur", "rwsd", folder, tmp_path / "rwsd")["train"].to_list() == [
        expected_row(r) for r in dev[:2]]


def test_config_without_records(tmp_path):
    write_jsonl(tmp_path / "test.jsonl", [r for r in read_jsonl(SAMPLES / "test.jsonl") if r["meta"]["task_type"] == "rwsd"])
    with pytest.raises(SourceDataError, match="no kusdra records in any split"):
        testing.build("limur", "kusdra", tmp_path, tmp_path / "cache")


def test_validation_jsonl_and_closed_test_answers(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    test = read_jsonl(SAMPLES / "test.jsonl")
    write_jsonl(folder / "validation.jsonl", test[:3])
    write_jsonl(folder / "test.jsonl", [{**r, "outputs": ""} for r in test])
    dsd = testing.build("limur", "all", folder, tmp_path / "cache")
    assert set(dsd) == {"validation", "test"}
    assert dsd["test"]["outputs"] == [""] * len(test)
    assert dsd["test"]["label"] == [-1] * len(test)
    assert dsd["validation"].to_list() == [expected_row(r) for r in test[:3]]


def test_no_data_dir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="LIMUR has no public download: pass data_dir"):
        testing.build("limur", "all", None, tmp_path)


def test_empty_data_dir(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty: no LIMUR files found \(expected train.jsonl"):
        testing.build("limur", "all", tmp_path / "empty", tmp_path / "cache")


@pytest.mark.parametrize("names, problem", [
    (["dev.jsonl", "validation.jsonl"], "holds both dev.jsonl and validation.jsonl"),
    (["task.json", "test.jsonl"], "holds both task.json and test.jsonl"),
])
def test_ambiguous_layouts(tmp_path, names, problem):
    folder = tmp_path / "data"
    folder.mkdir()
    for name in names:
        (folder / name).write_text("{}" if name == "task.json" else "", encoding="utf-8")
    with pytest.raises(SourceDataError, match=problem):
        testing.build("limur", "all", folder, tmp_path / "cache")


def test_task_json_with_unknown_split(tmp_path):
    (tmp_path / "task.json").write_text(json.dumps({"data": {"public_test": []}}), encoding="utf-8")
    with pytest.raises(SourceDataError, match=r"task.json: record -: unknown split 'public_test'"):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")


def _change(record, **changes):
    record = json.loads(json.dumps(record))
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = record
        for key in parents:
            target = target[key]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return record


# the seed's kusdra instruction (4 options), which record 101 of the samples carries in substance
_SEED_KUSDRA_LIKE = (
    "Внимательно прочитай текст и определи ответ.\n\nЗадача:\nОтветь на вопрос по тексту и выбери правильный "
    "вариант.\n\nТекст:\n{context}\n\nФормат ответа:\nВыведи только\n\nОтвет: <буква>\n\nБуквами ответа могут "
    "являться только заглавные буквы русского алфавита из списка (А, Б, В, Г).\n\nВопрос:\n{question}\n\n"
    "Варианты ответа:\nА. {option_a}\nБ. {option_b}\nВ. {option_c}\nГ. {option_d}\n"
)


def test_seed_kusdra_instruction_is_accepted(tmp_path):
    record = _change(read_jsonl(SAMPLES / "dev.jsonl")[0], instruction=_SEED_KUSDRA_LIKE)
    write_jsonl(tmp_path / "dev.jsonl", [record])
    row = testing.build("limur", "all", tmp_path, tmp_path / "cache")["validation"][0]
    assert row["prompt"] == filled(_SEED_KUSDRA_LIKE, record["inputs"])


@pytest.mark.parametrize("record_id, changes, problem", [
    (101, {"outputs": "Д"}, "answer 'Д' points at option_e, which is empty"),
    (101, {"outputs": "И"}, "answer 'И' is not one of the letters А Б В Г Д Е Ё Ж З"),
    (101, {"outputs": "A"}, "answer 'A' is not one of the letters"),
    (102, {"inputs__option_b": ""}, r"options are not contiguous: option_b \(Б\) is empty but a later option is not"),
    (101, {"inputs__option_e": "лишний"}, "instruction has placeholders for option_a, option_b, option_c, option_d "
                                          "but the non-empty options are option_a, option_b, option_c, option_d, option_e"),
    (101, {"instruction": "Контекст: {context}\nА. {option_a}\nБ. {option_b}\nВ. {option_c}\n"},
     "instruction has placeholders for option_a, option_b, option_c but the non-empty options are option_a, "
     "option_b, option_c, option_d$"),
    (101, {"instruction": "{context} {foo} {option_a}{option_b}{option_c}{option_d}"},
     "instruction has unknown placeholder"),
    (101, {"instruction": "{context"}, "instruction is not a valid template"),
    (201, {"meta__task_type": "winograd"}, "meta 'task_type' is 'winograd', expected one of rwsd, kusdra"),
    (201, {"meta__context_type": "стих"}, "meta 'context_type' is 'стих'"),
    (201, {"inputs__option_i": None}, "'inputs' lacks option_i"),
    (201, {"inputs__question": 7}, "inputs 'question' must be a string, got 7"),
    (201, {"outputs": None}, "'outputs' must be a string, got None"),
    # a placeholder for an empty option
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("Г. {option_d}\n", "Г. {option_d}\nД. {option_e}\n")},
     "instruction has placeholders for option_a, option_b, option_c, option_d, option_e but the non-empty "
     "options are option_a, option_b, option_c, option_d$"),
    # the answer-format letter list must name exactly the letters of the non-empty options
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("(А, Б, В, Г)", "(А, Б, В, Г, Д, Е)")},
     r"instruction lists the answer letters \(А, Б, В, Г, Д, Е\) but the non-empty options are \(А, Б, В, Г\)"),
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("(А, Б, В, Г)", "(А, Б, В)")},
     r"instruction lists the answer letters \(А, Б, В\) but"),
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace(" из списка (А, Б, В, Г)", "")},
     r"instruction lists no answer letters \(expected «\(А, Б, В, Г\)»\)"),
    # each option line carries its own letter
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("А. {option_a}", "Б. {option_a}")},
     "instruction labels {option_a} as 'Б', expected 'А'"),
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("В. {option_c}", "{option_c}")},
     "instruction has no letter label before {option_c}"),
    # plain placeholders only: no conversion, no format spec, no attribute or index
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("{option_a}", "{option_a!r}")},
     "instruction placeholder {option_a!r} must be a plain {option_a}"),
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("{context}", "{context:>10}")},
     "instruction placeholder {context:>10} must be a plain {context}"),
    (101, {"instruction": _SEED_KUSDRA_LIKE.replace("{context}", "{context.upper}")},
     r"instruction has unknown placeholder\(s\) {context.upper}"),
    (101, {"instruction": _SEED_KUSDRA_LIKE + "{}"}, r"instruction has unknown placeholder\(s\) {}"),
])
def test_record_errors(tmp_path, record_id, changes, problem):
    records = read_jsonl(SAMPLES / "dev.jsonl")
    index = next(i for i, r in enumerate(records) if r["meta"]["id"] == record_id)
    records[index] = _change(records[index], **changes)
    folder = tmp_path / "data"
    folder.mkdir()
    write_jsonl(folder / "dev.jsonl", records)
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"dev.jsonl: record line {index + 1} \(id {record_id}\): {problem}"):
        testing.build("limur", "all", folder, cache)
    assert not list(cache.rglob("*.arrow")), "a half-written split was left in the cache"


@pytest.mark.parametrize("line, problem", [
    ("{not json", r"record line 2: not valid JSON"),
    ('"a string"', "record line 2: expected an object, got str"),
    ('{"meta": {"id": "7"}}', r"record line 2: meta 'id' must be a 32-bit integer, got '7'"),
    ('{"meta": {"id": 4294967296}}', "record line 2: meta 'id' must be a 32-bit integer, got 4294967296"),
])
def test_broken_lines(tmp_path, line, problem):
    first = (SAMPLES / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "test.jsonl").write_text(f"{first}\n{line}\n", encoding="utf-8")
    with pytest.raises(SourceDataError, match=f"test.jsonl: {problem}"):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")


def test_not_utf8(tmp_path):
    first = (SAMPLES / "dev.jsonl").read_bytes().splitlines()[0]
    (tmp_path / "test.jsonl").write_bytes(first + b"\n" + "ответ".encode("cp1251") + b"\n")
    with pytest.raises(SourceDataError, match="test.jsonl: record line 2: not UTF-8 text"):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")


def test_filtered_config_still_reports_broken_records(tmp_path):
    records = [r for r in read_jsonl(SAMPLES / "test.jsonl") if r["meta"]["task_type"] == "rwsd"]
    records[1] = _change(records[1], meta__task_type="RWSD")
    write_jsonl(tmp_path / "test.jsonl", records)
    with pytest.raises(SourceDataError, match=r"record line 2 \(id \d+\): meta 'task_type' is 'RWSD'"):
        testing.build("limur", "kusdra", tmp_path, tmp_path / "cache")


@pytest.mark.parametrize("config", ["all", "rwsd", "kusdra"])
def test_every_config_validates_every_record(tmp_path, config):
    """A split entirely of the other task type is still read and checked, not skipped."""
    dev = read_jsonl(SAMPLES / "dev.jsonl")
    other = "kusdra" if config == "rwsd" else "rwsd"
    only_other = [r for r in dev if r["meta"]["task_type"] == other]
    broken = _change(only_other[1], outputs="Ж")
    write_jsonl(tmp_path / "train.jsonl", [only_other[0], broken])
    write_jsonl(tmp_path / "dev.jsonl", dev)
    record_id = broken["meta"]["id"]
    with pytest.raises(SourceDataError, match=rf"train.jsonl: record line 2 \(id {record_id}\): answer 'Ж' points at"):
        testing.build("limur", config, tmp_path, tmp_path / "cache")


@pytest.mark.parametrize("config", ["all", "rwsd", "kusdra"])
def test_duplicate_id_in_a_split(tmp_path, config):
    dev = read_jsonl(SAMPLES / "dev.jsonl")
    dev[3] = _change(dev[3], meta__id=dev[0]["meta"]["id"])
    write_jsonl(tmp_path / "dev.jsonl", dev)
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"dev.jsonl: record line 4 \(id {dev[0]['meta']['id']}\): "
                                              r"duplicate meta 'id' \d+: record line 1 has it too"):
        testing.build("limur", config, tmp_path, cache)
    assert not list(cache.rglob("*.arrow"))


def test_same_id_in_two_splits_is_fine(tmp_path):
    dev = read_jsonl(SAMPLES / "dev.jsonl")
    write_jsonl(tmp_path / "train.jsonl", dev[:1])
    write_jsonl(tmp_path / "dev.jsonl", dev)
    dsd = testing.build("limur", "all", tmp_path, tmp_path / "cache")
    assert dsd["train"][0]["meta"]["id"] == dsd["validation"][0]["meta"]["id"]


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    text = (SAMPLES / "dev.jsonl").read_text(encoding="utf-8")
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl" / "dev.jsonl").write_bytes("\ufeff".encode() + text.encode())
    (tmp_path / "task").mkdir()
    task = json.dumps({"data": {"dev": read_jsonl(SAMPLES / "dev.jsonl")}}, ensure_ascii=False)
    (tmp_path / "task" / "task.json").write_bytes("\ufeff".encode() + task.encode())
    plain = testing.build("limur", "all", SAMPLES, tmp_path / "plain")["validation"].to_list()
    for folder in ("jsonl", "task"):
        assert testing.build("limur", "all", tmp_path / folder, tmp_path / f"{folder}-cache")["validation"].to_list() == plain


def test_empty_split_file(tmp_path):
    (tmp_path / "test.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(SourceDataError, match="test.jsonl: record -: the test split holds no records"):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")


def test_outputs_kept_as_the_source_has_them(tmp_path):
    """MERA's doc_to_target is "{{ outputs.strip() }}": outputs stays the source string, label is the position."""
    test = read_jsonl(SAMPLES / "test.jsonl")
    write_jsonl(tmp_path / "test.jsonl", [{**test[0], "outputs": " Г\n"}, {**test[1], "outputs": "  "}])
    rows = testing.build("limur", "all", tmp_path, tmp_path / "cache")["test"].to_list()
    assert [(r["outputs"], r["label"]) for r in rows] == [(" Г\n", 3), ("  ", -1)]


def test_shots_split_is_the_few_shot_split(tmp_path):
    shots = testing.build("limur", "all", SAMPLES, tmp_path)["shots"].to_list()
    assert [(r["meta"]["id"], r["outputs"], r["label"]) for r in shots] == [(1, "Б", 1), (2, "В", 2), (3, "А", 0)]
    assert [r["meta"]["task_type"] for r in shots] == ["rwsd", "kusdra", "kusdra"]


# --- the rows `qahub evaluate limur --data-dir` reads without `datasets` are the built ones (issue 44)



def _local_equals_built(folder):
    """Every config and split the adapter reads (--config all/rwsd/kusdra): the reader's rows of a split are what
    the builder gives after `datasets` cast them (``built_rows``), values and types alike."""
    from qahub.loaders import _limur_files as files

    import qahub

    sources = files.find_sources(folder)
    for config, task_type in files.CONFIGS.items():
        built = qahub.load("limur", config, data_dir=str(folder), cache_dir=str(folder.parent / f"cache-{config}"))
        assert list(built) == [split for split in sources if files.holds_task_type(sources[split], split, task_type)]
        for split, rows in built.items():
            local = files.local_rows(sources, split, task_type, folder, "no {found}")
            assert local == rows.to_list() and local, (config, split)
            assert [list(row) for row in local] == [list(row) for row in rows.to_list()]  # the same field order


def test_the_rows_read_without_datasets_are_the_built_rows(tmp_path):
    import shutil

    folder = tmp_path / "limur"
    shutil.copytree(SAMPLES, folder)
    _local_equals_built(folder)


def test_the_rows_read_without_datasets_are_the_built_rows_of_the_shared_data(tmp_path):
    shared = testing.shared_data("limur")
    if shared is None:
        pytest.skip("../shared/data/limur is absent (MERA's LIMUR task files are not mirrored there)")
    import shutil

    folder = tmp_path / "limur"
    shutil.copytree(shared, folder)
    _local_equals_built(folder)


def test_the_reader_without_datasets_imports_neither_datasets_pandas_nor_pyarrow():
    import subprocess
    import sys

    code = ("import sys; from qahub.loaders import _limur_files as f; f.find_sources(sys.argv[1]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'datasets', 'pandas', 'pyarrow'}))")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
