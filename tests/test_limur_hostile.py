"""Hostile and fuzzed input for LIMUR (issue 8): the metric's properties, the builder on damaged copies of its
samples, the judge client on broken servers, and nothing from the data ever executed or unpickled."""

import ast
import http.server
import json
import random
import re
import time
from pathlib import Path

import evaluate
import hostile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qahub import registry, testing
from qahub.export import writer
from qahub.readers import SourceDataError

SAMPLES = registry.samples_dir("limur")
LETTERS = "АБВГДЕЁЖЗ"
TASK_TYPES = ["rwsd", "kusdra"]
CONTEXT_TYPES = ["текст", "диалог"]
FIELDS = ["id", "answer", "options", "task_type", "context_type", "prompt"]
FUZZ = settings(max_examples=60, deadline=None)
pytestmark = pytest.mark.usefixtures("no_judge_env")  # no judge from the environment


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("limur")))


# ---------------------------------------------------------------- the metric: properties

# any code point but lone surrogates, which cannot be stored as UTF-8 (see test_lone_surrogate_is_a_clear_error)
ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)
PIECES = ["Ответ:", "ответ -", "ОТВЕТ —", "**", "__", " ", "\n", "\r\n", ".", ")", "(", "A", "B", "Ë", *LETTERS,
          "б", "«", "»", "\u200b", "\u00a0", "Ответы:", "неответ:"]
REPLIES = st.one_of(st.none(), st.just(""), ANY_TEXT, st.lists(st.sampled_from(PIECES), max_size=12).map("".join))


@st.composite
def examples(draw, min_size=0, max_size=8):
    """``(predictions, references)``: valid references with unique ids, and arbitrary replies (None included)."""
    ids = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=min_size, max_size=max_size, unique=True))
    refs = []
    for record_id in ids:
        n_options = draw(st.integers(1, 9))
        refs.append({
            "id": record_id,
            "answer": LETTERS[draw(st.integers(0, n_options - 1))],
            "options": draw(st.lists(ANY_TEXT, min_size=n_options, max_size=n_options)),
            "task_type": draw(st.sampled_from(TASK_TYPES)),
            "context_type": draw(st.sampled_from(CONTEXT_TYPES)),
            "prompt": draw(ANY_TEXT),
        })
    predictions = draw(st.lists(REPLIES, min_size=len(refs), max_size=len(refs)))
    return predictions, refs


def grader(task, reference, answer):
    """A deterministic judge that answers every kind of reply: grades, junk, numbers, and failures."""
    kind = len(answer or "") % 6
    if kind == 5:
        raise ConnectionError("judge offline")
    return ["1", "0.5", 0, "2", "да"][kind]


@FUZZ
@given(examples(min_size=1))
def test_scores_stay_in_their_ranges(metric, example):
    predictions, refs = example
    result = metric.compute(predictions=predictions, references=refs, judge=grader)
    n = len(refs)
    assert result["count"] == n
    for key in ("exact_match", "exact_match_lenient", "exact_match_mera"):
        assert 0 <= result[key] <= 1
    strict_right = round(result["exact_match"] * n)
    assert strict_right + result["unparseable"] + result["not_an_option"] <= n
    assert result["unparseable_lenient"] <= result["unparseable"] <= n
    info = result["judge"]
    assert info["judged"] + info["unparseable"] + info["failed"] == n
    # the mean over all examples (failures count 0) is at most the mean over the judged ones
    judged_mean = result["judge_score_judged"]
    assert (judged_mean is None) == (info["judged"] == 0)  # no judged-only mean of nothing
    assert 0 <= result["judge_score"] <= (1 if judged_mean is None else judged_mean) <= 1
    assert result["judge_score"] * n == pytest.approx((judged_mean or 0) * info["judged"])
    assert info["coverage"] == result["judge_coverage"] == info["judged"] / n
    for field in ("by_task_type", "by_context_type"):
        assert sum(group["count"] for group in result[field].values()) == n
    json.dumps(result)


@FUZZ
@given(examples(min_size=1), ANY_TEXT)
def test_a_perfect_prediction_gets_the_maximum(metric, example, reasoning):
    _, refs = example
    predictions = [f"{reasoning}\nОтвет: {ref['answer']}" for ref in refs]
    result = metric.compute(predictions=predictions, references=refs, judge=lambda *args: "1")
    assert (result["exact_match"], result["exact_match_lenient"], result["judge_score"]) == (1.0, 1.0, 1.0)
    assert result["exact_match_mera"] == 1.0
    assert (result["unparseable"], result["not_an_option"], result["judge"]["coverage"]) == (0, 0, 1.0)


@FUZZ
@given(examples(min_size=1), st.randoms(use_true_random=False))
def test_the_order_of_examples_does_not_change_the_scores(metric, example, rnd):
    predictions, refs = example
    order = list(range(len(refs)))
    rnd.shuffle(order)
    first = metric.compute(predictions=predictions, references=refs, judge=grader)
    shuffled = metric.compute(predictions=[predictions[i] for i in order], references=[refs[i] for i in order],
                              judge=grader)
    assert shuffled == first


JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), ANY_TEXT, st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@FUZZ
@given(examples(min_size=1), st.data())
def test_bad_references_fail_only_with_a_clear_error(metric, example, data):
    predictions, refs = example
    index = data.draw(st.integers(0, len(refs) - 1))
    field = data.draw(st.sampled_from(FIELDS))
    if data.draw(st.booleans()):
        del refs[index][field]
    else:
        refs[index][field] = data.draw(JUNK)
    try:
        result = metric.compute(predictions=predictions, references=refs)
    except ValueError as err:  # the documented error: it names a reference and its id
        assert re.match(r"reference \d+ \(id .*\): \S", str(err)), str(err)
    else:  # the junk happened to be a valid value
        assert result["count"] == len(refs)


@FUZZ
@given(examples(min_size=1), st.data())
def test_predictions_that_are_not_text_are_unparseable(metric, example, data):
    """A reply is never an error: one that is not text is unreadable and scores 0."""
    predictions, refs = example
    index = data.draw(st.integers(0, len(refs) - 1))
    predictions[index] = data.draw(st.one_of(st.booleans(), st.integers(), st.floats(), st.lists(st.text(), max_size=2),
                                             st.binary(max_size=4)))
    result = metric.compute(predictions=predictions, references=refs)
    alone = metric.compute(predictions=[predictions[index]], references=[refs[index]])
    assert (alone["exact_match"], alone["exact_match_mera"], alone["unparseable"]) == (0.0, 0.0, 1)
    assert result["unparseable"] >= 1


def test_lone_surrogates(metric):
    """A reply with a lone surrogate is read (the surrogate cannot be part of an answer); a reference with one
    cannot be stored by evaluate: the error says so."""
    ref = {"id": 1, "answer": "Б", "options": ["a", "b"], "task_type": "rwsd", "context_type": "текст", "prompt": ""}
    result = metric.compute(predictions=["Ответ: Б\ud800", "\udfff"], references=[ref, {**ref, "id": 2}])
    assert (result["exact_match"], result["exact_match_mera"], result["unparseable"]) == (0.0, 0.0, 2)
    result = metric.compute(predictions=["\ud800\nОтвет: Б"], references=[ref])
    assert (result["exact_match"], result["exact_match_mera"], result["unparseable"]) == (1.0, 1.0, 0)
    with pytest.raises(ValueError, match=r"^reference 0 \(id 1\): prompt is not valid Unicode text"):
        metric.compute(predictions=["Ответ: Б"], references=[{**ref, "prompt": "\udfff"}])


@FUZZ
@given(st.one_of(ANY_TEXT, st.integers(), st.floats(allow_nan=True), st.none(), st.booleans()))
def test_judge_grades_are_one_of_three_or_none(reply):
    score = _judge_module().parse_score(reply)
    assert score in (None, 0.0, 0.5, 1.0)


@pytest.mark.parametrize("reply", [
    "ответ" + " " * 1_000_000 + "x",             # quadratic backtracking in the marker pattern (fixed)
    "Ответ: " + "(" * 300_000 + "Б" + ").)" * 300_000,  # quadratic stripping of the letter (fixed)
    "Ответ: Б " * 200_000,
    "я" * 5_000_000 + "\nОтвет: Б",
])
def test_very_long_replies_are_read_in_linear_time(metric, reply):
    ref = {"id": 1, "answer": "Б", "options": ["a", "b"], "task_type": "rwsd", "context_type": "текст", "prompt": ""}
    start = time.monotonic()
    result = metric.compute(predictions=[reply], references=[ref])
    # quadratic reading of these replies takes many minutes; linear takes well under a second
    assert time.monotonic() - start < 30, "reading one reply took more than 30 s"
    assert result["count"] == 1


def test_very_long_judge_reply_is_parsed_in_linear_time():
    start = time.monotonic()
    assert _judge_module().parse_score("оценка" + " " * 1_000_000 + "x") is None
    assert time.monotonic() - start < 5


def _judge_module():
    import importlib

    return importlib.import_module("qahub.metrics.limur.judge")


# ---------------------------------------------------------------- the judge client against broken servers

KEY = "sk-hostile-0123456789abcdef"
BROKEN_REPLIES = {
    "HUGE": (200, b'{"choices": [{"message": {"content": "1"}}], "pad": "' + b"x" * (2 << 20) + b'"}'),
    "BINARY": (200, bytes(range(256)) * 4),
    "NUMBER": (200, b'{"choices": [{"message": {"content": 1}}]}'),
    "NOT-A-LIST": (200, b'{"choices": {"message": {"content": "1"}}}'),
    "EMPTY": (200, b""),
    "DEEP": (200, b"[" * 100_000),
    "BIG-INT": (200, b'{"choices": [{"message": {"content": "1"}}], "n": ' + b"9" * 5000 + b"}"),
    "TEAPOT": (418, b"short and stout " + KEY.encode()),
}


class BrokenJudge(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        kind = next((k for k in BROKEN_REPLIES if k.encode() in body), None)
        if kind is None:  # hang up without a reply
            self.close_connection = True
            return
        status, data = BROKEN_REPLIES[kind]
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def broken_judge(handler_server):
    return handler_server(BrokenJudge)


def test_broken_judge_replies_are_failures_not_exceptions(metric, broken_judge):
    answers = [*BROKEN_REPLIES, "HANG-UP"]
    refs = [{"id": i, "answer": "Б", "options": ["a", "b"], "task_type": "rwsd", "context_type": "текст",
             "prompt": f"task {i}"} for i in range(len(answers))]
    result = metric.compute(predictions=answers, references=refs, judge_url=broken_judge, judge_model="m",
                            judge_api_key=KEY, judge_timeout=5.0, judge_retries=0)
    info = result["judge"]
    assert (info["judged"], info["unparseable"], info["failed"]) == (0, 0, len(answers))
    assert result["judge_score"] == 0.0 and result["judge_score_judged"] is None
    assert info["coverage"] == result["judge_coverage"] == 0.0
    errors = " | ".join(info["errors"])
    assert "larger than 1048576 bytes" in errors and "malformed response body" in errors and "HTTP 418" in errors
    assert KEY not in json.dumps(result, ensure_ascii=False)


# ---------------------------------------------------------------- the builder on damaged copies of its samples

SAMPLE_FILES = ["dev.jsonl", "test.jsonl", "shots.jsonl"]
ENCODINGS = ["cp1251", "utf-16", "utf-16-le", "shift_jis", "koi8-r", "latin-1"]
# besides wrong types: text that the prompt template or the answer letters might trip over
ODD_VALUES = [None, 0, -1, 2**40, 1.5, True, "", " ", "Ж", "{", "}", "{option_a}", [], {}, "‘-‘"]


def wrongly_encoded(data, rng):
    return hostile.reencoded(rng.choice(ENCODINGS))(data, rng)


MUTATIONS = [hostile.truncated, hostile.flipped, hostile.deleted_line, hostile.jsonl(hostile.deleted_key),
             hostile.jsonl(hostile.deleted_column), hostile.jsonl(hostile.replacing(ODD_VALUES)), wrongly_encoded]
CASES = [(mutation, seed) for mutation in MUTATIONS for seed in range(6)]


def _damaged_copy(tmp_path, mutation, seed):
    """A copy of the samples with one of the files, chosen by the seed, damaged; that file's path."""
    name = random.Random(f"{mutation.__name__}-{seed}").choice(SAMPLE_FILES)
    return hostile.damaged_copy(SAMPLES, tmp_path / "data", name, mutation, seed) / name


def _assert_documented_error(err, damaged):
    """The builder's documented errors: a SourceDataError or FileNotFoundError naming the file and record."""
    assert isinstance(err, (SourceDataError, FileNotFoundError)), f"{type(err).__name__}: {err}"
    if isinstance(err, SourceDataError):
        assert str(err).startswith(f"{damaged}: record "), str(err)


@pytest.mark.parametrize("mutation, seed", CASES, ids=[f"{m.__name__}-{s}" for m, s in CASES])
def test_damaged_samples_build_or_fail_cleanly(tmp_path, mutation, seed):
    damaged = _damaged_copy(tmp_path, mutation, seed)
    for config in ("all", "rwsd", "kusdra"):
        cache = tmp_path / f"cache-{config}"
        try:
            built = testing.build("limur", config, tmp_path / "data", cache)
        except Exception as err:  # noqa: BLE001 (the point is to see which exception comes out)
            _assert_documented_error(err, damaged)
            assert hostile.half_written(cache) == [], f"{config}: a half-written cache was left"
        else:
            for split, rows in built.items():
                assert all(row["label"] < len(row["options"]) for row in rows), split
                assert all(row["outputs"].strip() == ("" if row["label"] < 0 else LETTERS[row["label"]])
                           for row in rows), split
                assert all("{" not in row["prompt"] or "{" in "".join(row["inputs"].values()) for row in rows)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
def test_damaged_samples_export_whole_or_not_at_all(tmp_path, mutation):
    damaged = _damaged_copy(tmp_path, mutation, 0)
    out = tmp_path / "hub" / "limur"
    try:
        writer.export("limur", out, data_dir=tmp_path / "data", cache_dir=str(tmp_path / "cache"))
    except Exception as err:  # noqa: BLE001
        _assert_documented_error(err, damaged)
        assert not out.exists(), "a failed export left its folder"
        assert not [p.name for p in (tmp_path / "hub").glob("*partial*")], "a failed export left its staging folder"
        assert hostile.half_written(tmp_path / "cache") == []
    else:
        assert (out / "README.md").is_file()


@pytest.mark.parametrize("content, problem", [
    (b"[" * 100_000 + b"\n", "not valid JSON (nested too deeply)"),
    (b'{"meta": {"id": ' + b"7" * 5000 + b"}}\n", "not valid JSON (Exceeds the limit (4300 digits)"),
    (b"\x00" * 64 + b"\n", "not valid JSON"),
    (b"\xff\xfe" + "{}".encode("utf-16-le") + b"\n", "not UTF-8 text"),
])
def test_hostile_lines(tmp_path, content, problem):
    first = (SAMPLES / "dev.jsonl").read_bytes().splitlines()[0]
    (tmp_path / "dev.jsonl").write_bytes(first + b"\n" + content)
    with pytest.raises(SourceDataError, match=re.escape(f"dev.jsonl: record line 2: {problem}")):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")
    assert hostile.half_written(tmp_path / "cache") == []


def test_hostile_task_file(tmp_path):
    (tmp_path / "task.json").write_bytes(b'{"data": {"test": ' + b"[" * 100_000)
    with pytest.raises(SourceDataError, match=re.escape("task.json: record -: not valid JSON (nested too deeply)")):
        testing.build("limur", "all", tmp_path, tmp_path / "cache")


def test_hostile_predictions_file(tmp_path):
    from qahub.evaluate_cli import limur as scoring

    path = tmp_path / "p.json"
    path.write_bytes(b"[" * 100_000)
    with pytest.raises(ValueError, match=re.escape("p.json: not valid JSON (nested too deeply)")):
        scoring.load_predictions(path)


# ---------------------------------------------------------------- nothing from the data is executed or unpickled

def _our_code():
    from qahub.loaders import _limur_files as files
    from qahub.loaders import limur as loader

    from qahub.evaluate_cli import limur as scoring

    return [Path(loader.__file__), Path(files.__file__), Path(scoring.__file__),
            *sorted(registry.metric_dir("limur").glob("*.py"))]


OUR_CODE = _our_code()
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "loads", "load", "literal_eval", "system", "popen",
                   "Popen", "run", "call", "check_output"}
# evaluate.load in app.py loads the metric module itself (the Space), never data; qahub.load in the command line
# builds the references with the builder checked here
ALLOWED_CALLS = {("json", "loads"), ("json", "load"), ("re", "compile"), ("evaluate", "load"), ("qahub", "load")}
FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "subprocess", "yaml", "importlib", "ctypes"}


def test_our_code_never_executes_or_unpickles_data():
    assert len(OUR_CODE) >= 6 and all(path.is_file() for path in OUR_CODE), OUR_CODE
    for path in OUR_CODE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not {a.name.split(".")[0] for a in node.names} & FORBIDDEN_MODULES, (path, node.lineno)
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] not in FORBIDDEN_MODULES, (path, node.lineno)
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                owner = getattr(getattr(node.func, "value", None), "id", None)
                if name in FORBIDDEN_CALLS:  # only the JSON parser and compiled regular expressions
                    assert (owner, name) in ALLOWED_CALLS, (path, node.lineno, owner, name)


# ---------------------------------------------------------------- the harness scorer on any reply


def _task_api():
    import importlib

    return importlib.import_module("qahub.metrics.limur.task_api")


SAMPLE_DOCS = [json.loads(line) for name in ("dev.jsonl", "test.jsonl", "shots.jsonl")
               for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines()]
ANY_REPLY = st.one_of(REPLIES, st.text(max_size=80), st.binary(max_size=8), st.integers(), st.floats(),
                      st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers()))


@FUZZ
@given(ANY_REPLY, st.sampled_from(SAMPLE_DOCS))
def test_task_score_never_raises_and_agrees_with_the_metric(metric, reply, doc):
    values = _task_api().score(reply, doc)
    assert set(values) == {"exact_match", "exact_match_mera", "unparseable"}
    assert all(v in (0, 1) for v in values.values())
    assert not (values["exact_match"] and values["unparseable"])
    if isinstance(reply, str) and not re.search("[\ud800-\udfff]", reply):
        result = metric.compute(predictions=[reply], references=[doc])
        assert (result["exact_match"], result["exact_match_mera"], result["unparseable"]) == (
            values["exact_match"], values["exact_match_mera"], values["unparseable"])


ROW_FIELDS = ["outputs", "meta", "meta.id", "meta.task_type", "meta.context_type", "options", "instruction", "inputs",
              "prompt"]


@FUZZ
@given(st.sampled_from(SAMPLE_DOCS), st.sampled_from(ROW_FIELDS), st.one_of(st.just("<deleted>"), JUNK), REPLIES)
def test_damaged_rows_fail_only_with_a_clear_error(metric, doc, field, value, reply):
    row = json.loads(json.dumps(doc))
    parent, _, key = field.rpartition(".")
    target = row[parent] if parent else row
    if value == "<deleted>":
        target.pop(key, None)
    else:
        target[key] = value
    try:
        result = metric.compute(predictions=[reply], references=[row])
    except ValueError as err:
        if row.get("outputs") == "":  # the one reference's answer closed, as in MERA's test split: refused as a whole
            assert str(err).startswith("limur: nothing to score: the answers are closed in these 1 references"), err
        else:
            assert re.match(r"reference 0 \(id .*\): \S", str(err)), str(err)
    else:
        assert result["count"] == 1 and 0 <= result["exact_match_mera"] <= 1
