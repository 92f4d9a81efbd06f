"""Hostile and fuzzed input for JEMHopQA (issue 8): property tests of the metric, damaged copies of the
builder's sample files, and a scan for code that would run data."""

import json
import math
import random
import re
import shutil
import sys
from pathlib import Path

import evaluate
import hostile
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qahub import registry
from qahub.export.writer import export
from qahub.readers import SourceDataError
from qahub.testing import build

SAMPLE = registry.samples_dir("jemhopqa")
CONFIG_OF = {"corpus": "v1.0", "corpus_ver1.1": "v1.1", "corpus_ver1.2": "v1.2"}
SAMPLE_FILES = sorted(str(p.relative_to(SAMPLE)) for p in SAMPLE.glob("corpus*/*.json"))
CORE = {"dictionary": "core", "synonyms": "none"}
SCORES = [("a", "em"), ("a", "score")] + [(d, n) for d in ("e", "r", "er") for n in ("prec", "recall", "f1")]
PROPERTY = settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

pytestmark = pytest.mark.filterwarnings("ignore:JEMHopQA scores use the Sudachi")


@pytest.fixture(scope="module")
def metric_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("evaluate-cache")


@pytest.fixture(scope="module")
def metric(metric_cache):
    return evaluate.load(str(registry.metric_dir("jemhopqa")), cache_dir=str(metric_cache))


# --- the metric: properties over arbitrary text ------------------------------------------------------------

JAPANESE = "あいうえおかきくけこアイウエオ東京都大阪府年月日一二三〇１２３４５６７８９（）「」『』、。・ー々〜"
short_text = st.one_of(
    st.text(max_size=12),  # any Unicode but lone surrogates (those are refused: see test_lone_surrogates...)
    st.text(alphabet=JAPANESE + " 0123456789()", max_size=12),
    st.sampled_from(["", " ", "はい", "いいえ", "Yes", "No", "YES", "794年", "0794年", "（注）", "「」"]),
)
# very long strings: some over Sudachi's 49,149-byte limit (tokenized in pieces)
long_text = st.builds(lambda unit, n: unit * n, st.text(alphabet=JAPANESE, min_size=1, max_size=6),
                      st.integers(2_000, 20_000))
text = st.one_of(short_text, short_text, short_text, long_text)
steps = st.lists(st.tuples(short_text, short_text, st.lists(short_text, max_size=3)), max_size=3)


@st.composite
def questions(draw, min_size=1, texts=text):
    """(references, predictions): gold rows and predictions, answers possibly None or not strings."""
    n = draw(st.integers(min_size, 4))
    refs, preds = [], []
    for i in range(n):
        gold = {"qid": f"q{i}", "answer": draw(texts), "derivations": [[s, r, o] for s, r, o in draw(steps)]}
        answer = draw(st.one_of(texts, st.none(), st.integers(), st.just(gold["answer"])))
        derivations = draw(st.one_of(steps, st.just(gold["derivations"])))
        refs.append(gold)
        preds.append({"qid": f"q{i}", "answer": answer, "derivations": [[s, r, o] for s, r, o in derivations]})
    return refs, preds


def arrow_files(folder):
    return [p for p in Path(folder).rglob("*.arrow")]


@PROPERTY
@given(questions())
def test_scores_stay_in_0_1(metric, data):
    refs, preds = data
    result = metric.compute(predictions=preds, references=refs, per_question=True, **CORE)
    for part, name in SCORES:
        assert 0.0 <= result[part][name] <= 1.0, (part, name, result[part][name])
    for row in result["per_question"]:
        assert all(0.0 <= row[column] <= 1.0 for column in row if column != "qid")


@PROPERTY
@given(questions())
def test_gold_as_prediction_scores_one(metric, data):
    refs, _ = data
    # as the official script: an empty gold answer, or gold derivations without a single object, score 0
    refs = [r for r in refs if r["answer"] and any(objects for _, _, objects in r["derivations"])]
    if not refs:
        refs = [{"qid": "q", "answer": "794年", "derivations": [["平安京", "遷都", ["794年"]]]}]
    result = metric.compute(predictions=refs, references=refs, per_question=True, **CORE)
    assert all(result[part][name] == 1.0 for part, name in SCORES), result
    assert all(value == 1.0 for row in result["per_question"] for key, value in row.items() if key != "qid")


# short texts only: the order of examples is the point here (long texts are scored by the tests above)
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(questions(min_size=2, texts=short_text), st.randoms(use_true_random=False))
def test_order_of_examples_does_not_change_corpus_scores(metric, data, rng):
    refs, preds = data
    first = metric.compute(predictions=preds, references=refs, **CORE)
    order = list(range(len(refs)))
    rng.shuffle(order)
    pred_order = list(order)
    rng.shuffle(pred_order)  # predictions are matched by qid: their order is free too
    again = metric.compute(predictions=[preds[i] for i in pred_order], references=[refs[i] for i in order], **CORE)
    for part, name in SCORES:
        assert again[part][name] == pytest.approx(first[part][name], rel=1e-12, abs=1e-12)


def test_the_cache_checked_below_is_where_evaluate_writes(metric, metric_cache):
    row = {"qid": "q0", "answer": "x", "derivations": []}
    metric.add_batch(predictions=[row], references=[row])
    assert len(arrow_files(metric_cache)) == 1
    metric.compute(**CORE)
    assert arrow_files(metric_cache) == []


# None (or another non-string) where a string is expected: the documented errors, naming the record
HOSTILE = [
    (lambda q: {**q, "qid": None}, r"prediction 0: 'qid' must be a string, got None"),
    (lambda q: {**q, "derivations": None}, r"prediction for qid 'q0': derivations must be a list"),
    (lambda q: {**q, "derivations": [[None, "r", ["o"]]]}, r"qid 'q0': derivation step .* string subject"),
    (lambda q: {**q, "derivations": [["s", None, ["o"]]]}, r"qid 'q0': derivation step .* string subject"),
    (lambda q: {**q, "derivations": [["s", "r", None]]}, r"qid 'q0': objects of derivation step .* list of strings"),
    (lambda q: {**q, "derivations": [["s", "r", ["o", None]]]}, r"qid 'q0': objects of derivation step"),
    (lambda q: {**q, "derivations": [["s", "r"]]}, r"qid 'q0': derivation step .* must be"),
    (lambda q: {**q, "answer": "x\ud800"}, r"prediction for qid 'q0': answer .* holds a lone surrogate"),
]


@PROPERTY
@given(questions(), st.sampled_from(HOSTILE))
def test_bad_values_fail_with_the_documented_error_and_leave_no_cache(metric, metric_cache, data, case):
    refs, preds = data
    spoil, message = case
    input_error = sys.modules[type(metric).__module__].JemhopqaInputError
    with pytest.raises(input_error, match=message):
        metric.compute(predictions=[spoil(preds[0]), *preds[1:]], references=refs, **CORE)
    assert arrow_files(metric_cache) == []


@PROPERTY
@given(questions(), st.sampled_from(["answer", "derivations"]))
def test_none_answer_or_reference_values(metric, metric_cache, data, part):
    refs, preds = data
    # a None predicted answer scores 0, as a non-string answer does in the official script
    result = metric.compute(predictions=[{**preds[0], "answer": None}, *preds[1:]], references=refs,
                            per_question=True, **CORE)
    assert (result["per_question"][0]["a_em"], result["per_question"][0]["a_score"]) == (0.0, 0.0)
    with pytest.raises(ValueError, match=rf"reference for qid 'q0': '?{part}'? must be"):
        metric.compute(predictions=preds, references=[{**refs[0], part: None}, *refs[1:]], **CORE)
    assert arrow_files(metric_cache) == []


# --- replies: any object a model (or a harness) may hand over ------------------------------------------------

with_surrogate = st.builds(lambda a, b: a + "\ud800" + b, short_text, short_text)
reply_text = st.one_of(
    text, with_surrogate,
    st.builds(lambda a, s: f"回答: {a}\n導出: {json.dumps(s, ensure_ascii=False)}", short_text, steps),
    st.builds(lambda a, s: f"**回答**：{a}\n導出:\n```json\n{json.dumps(s)[:-1]}", short_text, steps),  # cut JSON
    st.sampled_from(["", " ", "\n\n", "導出: [[", "回答:", "導出: [[\"a\", \"b\", [1e999]]]"]),
)
replies = st.one_of(reply_text, reply_text, st.none(), st.integers(), st.floats(), st.lists(st.integers(), max_size=2),
                    st.binary(max_size=5))
UNIT_SCORES = [("a", "em"), ("a", "score")] + [(d, n) for d in ("e", "r", "er") for n in ("prec", "recall", "f1")]


@st.composite
def replies_and_references(draw):
    refs, _ = draw(questions())
    return refs, [draw(replies) for _ in refs]


@pytest.fixture(scope="module")
def task_api():
    import importlib

    return importlib.import_module("qahub.metrics.jemhopqa.task_api")


@PROPERTY
@given(replies_and_references())
def test_replies_never_raise_and_scores_stay_in_0_1(metric, metric_cache, data):
    refs, preds = data
    result = metric.compute(predictions=preds, references=refs, per_question=True, **CORE)
    for part, name in UNIT_SCORES:
        assert 0.0 <= result[part][name] <= 1.0, (part, name, result[part][name])
    assert all(0.0 <= result["llm_jp_eval"][name] <= 1.0 for name in ("exact_match", "char_f1"))
    assert result["replies"] == len(preds)
    assert 0 <= result["unparseable"] <= result["derivations_unreadable"] + len(preds)
    assert result["derivations_unreadable"] <= len(preds)
    not_text = sum(not isinstance(p, str) for p in preds)
    assert result["unparseable"] >= not_text and result["derivations_unreadable"] >= not_text
    assert arrow_files(metric_cache) == []


@PROPERTY
@given(replies_and_references())
def test_task_scores_never_raise_and_equal_the_metric(metric, task_api, data):
    refs, preds = data
    result = metric.compute(predictions=preds, references=refs, per_question=True, **task_api.configuration())
    # qahub_jemhopqa scores the answer a reply states (its 回答 line, without the prompt's label and quotes:
    # replies.answer_text); the official metric, given that answer, gives the same exact match and char F1
    answers = [task_api.answer_text(p) for p in preds]
    read = metric.compute(predictions=answers, references=refs, per_question=True, **task_api.configuration())
    for reply, ref, row, answer_row in zip(preds, refs, result["per_question"], read["per_question"], strict=True):
        answer = task_api.score_answer(reply, ref)
        derivations = task_api.score_derivations(reply, ref)
        assert (answer["exact_match"], answer["char_f1"]) == (answer_row["exact_match"], answer_row["char_f1"])
        assert (derivations["a_em"], derivations["a_score"], derivations["er_f1"]) == (
            row["a_em"], row["a_score"], row["er_f"])
        assert all(0.0 <= value <= 1.0 for value in [*answer.values(), *derivations.values()])


@PROPERTY
@given(questions())
def test_target_reads_back_as_the_gold(metric, task_api, data):
    refs, _ = data
    parse = helper_module(metric, "replies").parse_reply
    for ref in refs:
        target = task_api.derivations_target(ref)
        assert "\n\n" not in target and "\n\n" not in task_api.answer_target(ref)
        read = parse(target)
        answer = " ".join(ref["answer"].splitlines()).strip()
        if not re.fullmatch(r"(\*\*|__)(.+)\1", answer):
            assert read.answer == (answer or None)
        assert (read.derivations, read.derivations_read) == (ref["derivations"], True)


def test_the_answer_task_reads_no_derivations_and_the_derivations_task_checks_them(task_api):
    """The answer task's target and scores need the answer alone (its training rows are built a document at a
    time: the derivations are not converted for them); the derivations task still rejects bad derivations."""
    row = {"qid": "q1", "answer": "東京", "derivations": "not a list of triples"}
    assert task_api.answer_target(row) == "東京"
    assert task_api.score_answer("回答: 東京", row)["exact_match"] == 1.0
    with pytest.raises(ValueError, match="q1.*derivations must be a list"):
        task_api.derivations_target(row)
    with pytest.raises(ValueError, match="'answer' must be a string"):
        task_api.answer_target({**row, "answer": None})


def helper_module(metric, name):
    return sys.modules[type(metric).__module__.rsplit(".", 1)[0] + "." + name]


# --- issue 15: every entry point and the command line's reader, with any value ----------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-10**30, 10**30), st.floats(), st.text(max_size=8),
              st.sampled_from(["\ud800", "\x00", "\u202e", "\ufeff", "ﾟ", "𠮷", "\r\n\r\n"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8)
SAMPLE_ROWS = json.loads((SAMPLE / "corpus_ver1.2" / "dev_ver1.2.json").read_text(encoding="utf-8"))
QIDS = [r["qid"] for r in SAMPLE_ROWS]
KEYS = ["qid", "answer", "derivations"]


@st.composite
def spoiled_record(draw, base):
    """``base`` with some keys replaced by arbitrary values or removed."""
    record = dict(base)
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)):
        if draw(st.booleans()):
            record[key] = draw(json_values)
        else:
            record.pop(key, None)
    return record


gold_records = st.sampled_from(SAMPLE_ROWS)
any_predictions = st.one_of(
    st.lists(st.one_of(gold_records.flatmap(spoiled_record), json_values), max_size=4),
    json_values)
any_references = st.one_of(st.just(SAMPLE_ROWS), st.lists(gold_records.flatmap(spoiled_record), max_size=3),
                           json_values)


def assert_scores_in_range(result):
    for part in ("a", "e", "r", "er", "llm_jp_eval"):
        for name, value in result.get(part, {}).items():
            assert isinstance(value, float) and math.isfinite(value) and 0.0 <= value <= 1.0, (part, name, value)
    assert {"a", "er"} & set(result), "a result must hold some score"
    assert all(isinstance(result[k], int) and result[k] >= 0 for k in ("replies", "unparseable", "derivations_unreadable"))


@PROPERTY
@given(any_predictions, any_references, st.booleans(), st.booleans())
def test_compute_and_add_batch_give_a_named_error_or_scores_in_range(metric, metric_cache, preds, refs, batched,
                                                                    ignore_missing):
    input_error = sys.modules[type(metric).__module__].JemhopqaInputError
    try:
        if batched:
            metric.add_batch(predictions=preds, references=refs)
            result = metric.compute(ignore_missing=ignore_missing, **CORE)
        else:
            result = metric.compute(predictions=preds, references=refs, ignore_missing=ignore_missing, **CORE)
    except input_error as err:
        assert str(err) and "\n" not in str(err)
    else:
        assert_scores_in_range(result)
    assert arrow_files(metric_cache) == []


@PROPERTY
@given(json_values, gold_records)
def test_task_scores_of_any_reply_stay_in_range(task_api, reply, doc):
    for name, spec in task_api.TASKS.items():
        scores = spec.score(reply, doc)
        assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in scores.values()), (name, scores)


def test_compute_on_direct_inputs_checks_once_and_writes_no_cache(metric, metric_cache, monkeypatch):
    """Issue 14.4/14 speed: given predictions and references alone, compute checks each input once and skips
    evaluate's Arrow cache; add_batch checks once too."""
    records = helper_module(metric, "records")
    calls = []
    original = records.check_prediction
    monkeypatch.setattr(records, "check_prediction", lambda p, i: calls.append(i) or original(p, i))
    preds = [{"qid": r["qid"], "answer": r["answer"], "derivations": r["derivations"]} for r in SAMPLE_ROWS]
    result = metric.compute(predictions=preds, references=SAMPLE_ROWS, **CORE)
    assert calls == [0, 1, 2] and result["er"]["f1"] == 1.0
    assert arrow_files(metric_cache) == [] and metric.writer is None
    calls.clear()
    metric.add_batch(predictions=preds, references=SAMPLE_ROWS)
    assert len(arrow_files(metric_cache)) == 1
    assert metric.compute(**CORE) == result and calls == [0, 1, 2]


# the command line: any prediction file gives the result or one line naming the problem, exit 1

CLI_BASE = ["evaluate", "jemhopqa", "--data-dir", str(SAMPLE), "--config", "v1.2", *sum(
    ([f"--{k}", v] for k, v in CORE.items()), [])]
official_files = st.builds(lambda answers, derivations: {"answer": answers, "derivations": derivations},
                           st.dictionaries(st.sampled_from(QIDS), json_values, max_size=3),
                           st.dictionaries(st.sampled_from(QIDS), json_values, max_size=3))
file_bytes = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.one_of(json_values, official_files).map(lambda v: json.dumps(v).encode()),
    st.one_of(json_values, official_files).map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8",
                                                                                                    "surrogatepass")),
    st.sampled_from([b"", b"{}", b"[]", b"\xef\xbb\xbf[]", "[\"x\"]".encode("utf-16"), b"[" * 50_000,
                     b"[" + b"9" * 5000 + b"]", b'{"answer": {"a": 1, "a": 2}, "derivations": {}}',
                     b"qid\tpredicted_answer\tpredicted_derivations\n", b"qid\tpredicted_answer\n\xff\n"]),
)


def run_cli(capsys, argv):
    from qahub.cli import main

    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def assert_named_error_or_result(status, out, err, name):
    assert status in (0, 1), (status, err)
    if status == 1:
        assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("qahub evaluate: error: "), err
        assert "Traceback" not in err
    else:
        assert_scores_in_range(json.loads(out))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(file_bytes)
def test_reader_gives_records_or_an_error_naming_the_file(tmp_path_factory, data):
    from qahub.evaluate_cli import jemhopqa as cli

    path = tmp_path_factory.mktemp("pred") / "pred.json"
    path.write_bytes(data)
    try:
        records = cli.read_predictions(path)
    except ValueError as err:
        assert "pred.json" in str(err) and "\n" not in str(err).strip(), str(err)
    else:
        assert isinstance(records, list)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(file_bytes, st.booleans())
def test_cli_gives_a_result_or_one_named_error(tmp_path_factory, capsys, data, ignore_missing):
    path = tmp_path_factory.mktemp("pred") / "pred.json"
    path.write_bytes(data)
    argv = ["--quiet", *CLI_BASE, "--predictions", str(path), *(["--ignore-missing"] if ignore_missing else [])]
    assert_named_error_or_result(*run_cli(capsys, argv), "pred.json")


@pytest.mark.parametrize("text, ignore_missing, message", [
    ("[]", True, "pred.json: holds no predictions: nothing to score"),
    ("{}", True, "pred.json: holds no predictions: nothing to score"),
    ('{"answer": {}, "derivations": {}}', True, "nothing to score"),
    ('{"answer": {"%s": null, "%s": null}, "derivations": {}}' % tuple(QIDS[:2]), True, "nothing to score"),
    ("qid\tpredicted_answer\tpredicted_derivations\n", True, "pred.tsv: holds no predictions: nothing to score"),
    ("[]", False, "pred.json: holds no predictions: nothing to score"),
])
def test_cli_nothing_scored_is_one_line_and_exit_1(tmp_path, capsys, text, ignore_missing, message):
    """Issue 15.1: never a 0.0 / NaN / null printed as a score when nothing was scored."""
    path = tmp_path / ("pred.tsv" if "\t" in text else "pred.json")
    path.write_text(text, encoding="utf-8")
    argv = [*CLI_BASE, "--predictions", str(path), *(["--ignore-missing"] if ignore_missing else [])]
    status, out, err = run_cli(capsys, argv)
    assert (status, out) == (1, "") and re.search(message, err) and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("data, message", [
    # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
    ('{"answer": {"q": "a", "q": "b"}, "derivations": {}}'.encode(),
     r"pred.json: not valid JSON \(an object names the key 'q' twice\)"),
    (b'["x", {"qid": "a", "qid": "b"}]', r"pred.json: not valid JSON \(an object names the key 'qid' twice\)"),
    ('{"answer": {"%s": "\\ud800"}, "derivations": {}}'.encode() % QIDS[0].encode(),
     r"scoring .*pred.json against .*: prediction for qid .* holds a lone surrogate"),
    (b'["\xff"]', r"pred.json: not UTF-8 text \(invalid start byte at byte 2, line 1\)"),
    (b"[" * 100_000, r"pred.json: not valid JSON \(nested too deeply\)"),
    (b"[" + b"1" * 5000 + b"]", r"pred.json: not valid JSON \(Exceeds the limit"),
])
def test_cli_bad_prediction_bytes_are_one_named_line(tmp_path, capsys, data, message):
    """Issue 15.10/15.12: duplicate keys, lone surrogates and undecodable bytes name the file; no raw codec error."""
    path = tmp_path / "pred.json"
    path.write_bytes(data)
    status, out, err = run_cli(capsys, [*CLI_BASE, "--predictions", str(path), "--ignore-missing"])
    assert (status, out) == (1, "") and re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_quiet_prints_only_the_result(tmp_path, capsys):
    """Issue 15.12: the notes (a TSV step dropped, a non-official configuration) are warnings; --quiet hides them.
    (A repeated TSV row was such a note; every metric's reader now refuses a repeated id.)"""
    path = tmp_path / "pred.tsv"
    path.write_text(f"qid\tpredicted_answer\tpredicted_derivations\n{QIDS[0]}\t星の歌\t(a, b, c); no step\n",
                    encoding="utf-8")
    argv = [*CLI_BASE, "--predictions", str(path), "--ignore-missing"]
    status, out, err = run_cli(capsys, ["--quiet", *argv])
    assert (status, err) == (0, "") and json.loads(out)["a"] == {"em": 1.0, "score": 1.0}
    with pytest.warns(UserWarning, match="is not \\(subject, relation, objects\\): dropped"):
        assert run_cli(capsys, argv)[0] == 0


# --- the builder: damaged copies of the sample files -----------------------------------------------------------


DAMAGE = {"truncated": hostile.truncated, "flipped": hostile.flipped, "key_deleted": hostile.deleted_key,
          **{encoding: hostile.reencoded(encoding) for encoding in ("utf-16", "shift_jis", "cp932", "utf-8-sig")}}
CASES = [(relpath, damage, seed) for relpath in SAMPLE_FILES for damage in DAMAGE
         for seed in (range(3) if damage in ("truncated", "flipped", "key_deleted") else [0])]


def damaged_copy(tmp_path, relpath, damage, seed):
    return hostile.damaged_copy(SAMPLE, tmp_path / "data", relpath, DAMAGE[damage], seed)


def assert_documented_error(err, relpath):
    assert isinstance(err, (SourceDataError, FileNotFoundError)), f"{type(err).__name__}: {err}"
    assert re.search(rf"{re.escape(Path(relpath).name)}: record [^:]+: \S", str(err)), str(err)


@pytest.mark.parametrize("relpath, damage, seed", CASES)
def test_damaged_source_builds_or_fails_cleanly(tmp_path, relpath, damage, seed):
    data_dir = damaged_copy(tmp_path, relpath, damage, seed)
    cache = tmp_path / "cache"
    try:
        dsd = build("jemhopqa", CONFIG_OF[Path(relpath).parts[0]], data_dir, cache)
    except Exception as err:  # noqa: BLE001 - the point is which exception it is
        assert_documented_error(err, relpath)
        assert hostile.half_written(cache) == [], "a failed build left a half-written cache"
    else:
        assert set(dsd) == {"train", "validation"} and all(len(ds) > 0 for ds in dsd.values())


@pytest.mark.parametrize("damage, seed", [("truncated", 0), ("flipped", 1), ("key_deleted", 2), ("utf-16", 0),
                                          ("shift_jis", 0)])
def test_damaged_source_exports_or_leaves_nothing(tmp_path, damage, seed):
    relpath = "corpus_ver1.2/dev_ver1.2.json"
    data_dir = damaged_copy(tmp_path, relpath, damage, seed)
    out = tmp_path / "hub" / "jemhopqa"
    try:
        export("jemhopqa", out, configs=["v1.2"], data_dir=data_dir, cache_dir=str(tmp_path / "cache"))
    except Exception as err:  # noqa: BLE001
        assert_documented_error(err, relpath)
        assert not out.parent.exists() or list(out.parent.iterdir()) == [], "a failed export left files"
    else:
        assert (out / "README.md").is_file()
        assert not list(out.parent.glob(".*partial-*"))


def test_every_damage_kind_is_exercised_and_some_fail():
    """Guards the test above against damage that never reaches the builder (e.g. a no-op mutation)."""
    sample = SAMPLE / "corpus_ver1.2" / "dev_ver1.2.json"
    for damage, func in DAMAGE.items():
        assert func(sample.read_bytes(), random.Random(0)) != sample.read_bytes(), damage


@pytest.mark.parametrize("text, problem", [
    ('[{"qid": "\\ud800"}]', r"record 0 .*missing key"),
    (None, r"record 0 .*holds a lone surrogate"),
    ("[" + "1" * 5000 + "]", r"record -: not valid JSON \(Exceeds the limit"),
    ("[" * 100_000 + "]" * 100_000, r"record -: not valid JSON \(nested too deeply\)"),
])
def test_hostile_json_is_a_documented_error(tmp_path, text, problem):
    data_dir = tmp_path / "data"
    shutil.copytree(SAMPLE, data_dir)
    path = data_dir / "corpus_ver1.2" / "dev_ver1.2.json"
    if text is None:  # a valid record whose answer is an escaped lone surrogate
        records = json.loads(path.read_text(encoding="utf-8"))
        records[0]["answer"] = "\ud800"
        text = json.dumps(records)
    path.write_text(text, encoding="utf-8")
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=rf"dev_ver1\.2\.json: {problem}"):
        build("jemhopqa", "v1.2", data_dir, cache)
    assert hostile.half_written(cache) == []


# --- nothing from the data is executed or unpickled ----------------------------------------------------------

CODE = [Path(registry.__file__).parents[2] / "loaders" / "jemhopqa.py",
        *sorted(registry.metric_dir("jemhopqa").glob("*.py")),
        Path(registry.__file__).parent / "evaluate_cli" / "jemhopqa.py"]
RUNS_DATA = re.compile(r"\b(pickle|cPickle|marshal|dill|shelve|joblib)\b|(?<![\w.])(eval|exec|compile)\s*\(|__import__"
                       r"|yaml\.load\(|torch\.load|allow_pickle")


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.name)
def test_no_code_runs_data(path):
    assert path.is_file()
    found = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if RUNS_DATA.search(line)]
    assert found == [], f"{path}: {found}"
