"""Hostile input for Russian QA Jeopardy!: properties of ``jeopardy_meteor`` under arbitrary text, fuzzed copies
of the builder's sample files (truncated, mutated, wrongly encoded), and a scan that no data is executed or
unpickled."""

import ast
import json
import math
import random
import re
import sys
import warnings
from pathlib import Path

import evaluate
import hostile
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qahub.loaders import jeopardy
from qahub.metrics.jeopardy_meteor import task_api

from qahub import registry
from qahub.export.writer import export
from qahub.readers import SourceDataError
from qahub.testing import build

ROOT = Path(__file__).resolve().parents[1]
METRIC_DIR = registry.metric_dir("jeopardy_meteor")
SAMPLE = registry.samples_dir("jeopardy")
THRESHOLD = 0.227743
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

try:
    import spacy
except ImportError:
    spacy = None
TOKENIZERS = ["regex", pytest.param("spacy", marks=pytest.mark.skipif(spacy is None, reason="spaCy is not installed"))]


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_DIR))


def _tokenize(kind):
    sys.path.insert(0, str(METRIC_DIR.parent))
    try:
        from jeopardy_meteor.spacy_like import tokenizer_for
    finally:
        sys.path.pop(0)
    return tokenizer_for(kind)[0]


WORDS = ["Бульвар", "бульвара", "Сансет", "Рим", "А.С.", "Пушкин", "т.е.", "32-й", "Лед-9", "Д'Артаньян", "1/10",
         "«Монгол", "Шуудан»", "?!", "—", "  ", "\n", "ёлка", "R2-D2", "C++", "$", "Pepper's", "...", ""]
words_text = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
any_text = st.one_of(st.text(max_size=40), words_text, st.text(alphabet="Рим .,-'«»\n\t\u00a0", max_size=12))
gold = any_text.filter(str.strip)
prediction = st.one_of(st.none(), any_text)


def _examples(min_size=1, max_size=8):
    return st.lists(st.tuples(prediction, gold, st.integers(1, 5)), min_size=min_size, max_size=max_size)


def _compute(metric, examples, **kwargs):
    predictions, references, numbers = (list(column) for column in zip(*examples, strict=True))
    return metric.compute(predictions=predictions, references=references, question_numbers=numbers, **kwargs)


@SETTINGS
@given(examples=_examples())
def test_results_stay_in_their_documented_ranges(metric, examples):
    result = _compute(metric, examples)
    n = len(examples)
    assert result["num_questions"] == n
    assert 0.0 <= result["meteor"] <= 1.0 and 0.0 <= result["accuracy"] <= 1.0
    assert all(0.0 <= value <= 1.0 for value in result["meteor_per_example"])
    assert result["num_answered"] + result["num_abstained"] == n
    assert result["num_correct"] + result["num_wrong"] == result["num_answered"]
    statuses = [task_api.parse_reply(p)[1] for p, _, _ in examples]
    assert result["status"] == statuses
    assert result["abstained"] == [status != "answer" for status in statuses]
    assert result["num_unparseable"] == statuses.count("unparseable") == sum(p is None for p, _, _ in examples)
    assert result["correct"] == [not a and m > THRESHOLD
                                 for m, a in zip(result["meteor_per_example"], result["abstained"], strict=True)]
    assert result["max_score"] == sum(number for _, _, number in examples)
    assert -result["max_score"] <= result["score"] <= result["max_score"]


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@SETTINGS
@given(references=st.lists(gold, min_size=1, max_size=8))
def test_a_perfect_prediction_gets_the_maximum(metric, tokenizer, references):
    # gold answers as the reply parser leaves them: no abstention phrase, one line, no enclosing quotes
    references = [task_api.target({"answer": ref}) for ref in references]
    references = [ref for ref in references if task_api.parse_reply(ref)[0] == ref] or ["Рим"]
    tokenize = _tokenize(tokenizer)
    numbers = [1 + i % 5 for i in range(len(references))]
    predictions = [task_api.target({"answer": ref}) for ref in references]
    result = metric.compute(predictions=predictions, references=references, question_numbers=numbers,
                            tokenizer=tokenizer)
    # a gold answer with no token (only punctuation, e.g. "?!") cannot be matched; any other is matched fully
    assert result["correct"] == [bool(tokenize(ref)) for ref in references]
    if all(result["correct"]):
        assert result["score"] == result["max_score"] and result["accuracy"] == 1.0


@SETTINGS
@given(data=st.data(), examples=_examples(min_size=2))
def test_the_order_of_examples_does_not_change_corpus_scores(metric, data, examples):
    order = data.draw(st.permutations(range(len(examples))))
    first, second = _compute(metric, examples), _compute(metric, [examples[i] for i in order])
    for key in ("num_correct", "num_abstained", "num_answered", "score", "max_score", "accuracy"):
        assert first[key] == second[key], key
    assert second["meteor"] == pytest.approx(first["meteor"], rel=1e-12, abs=1e-15)
    assert second["meteor_per_example"] == [first["meteor_per_example"][i] for i in order]


DOCUMENTED = re.compile(
    r"^(reference \d+: expected a gold answer \(str\) or a row \(dict\), got"
    r"|reference \d+: the gold answer is empty$)"
)
junk = st.one_of(st.none(), any_text, st.integers(), st.floats(), st.booleans(), st.lists(st.text(), max_size=2))


@SETTINGS
@given(predictions=st.lists(junk, min_size=1, max_size=5), data=st.data())
def test_wrong_types_and_none_give_only_the_documented_errors(metric, predictions, data):
    references = data.draw(st.lists(junk, min_size=len(predictions), max_size=len(predictions)))
    try:
        result = metric.compute(predictions=predictions, references=references)
    except (TypeError, ValueError) as err:
        message = str(err)
        assert DOCUMENTED.match(message), message
        bad = references[int(message.split()[1].rstrip(":"))]
        assert bad is None or not isinstance(bad, str) or not bad.strip()
    else:  # replies are never an error: what is not text is counted
        assert all(isinstance(r, str) and r.strip() for r in references)
        assert 0.0 <= result["meteor"] <= 1.0
        assert result["num_unparseable"] == sum(not isinstance(p, str) for p in predictions)


ROW_ERRORS = re.compile(
    r"^reference \d+( \(question_id .+\))?: (the row has no 'answer' field \(fields: .*\)"
    r"|'answer' must be a string, got |the gold answer is empty$|question_number must be an integer, got "
    r"|no question_number, while reference \d+ has one: )",
    re.S,
)
row_values = st.one_of(st.none(), any_text, st.integers(-3, 7), st.floats(), st.booleans())
rows = st.dictionaries(st.sampled_from(["question_id", "question_number", "answer", "question", "topic"]),
                       row_values, max_size=5)


@SETTINGS
@given(references=st.lists(rows, min_size=1, max_size=5))
def test_wrong_rows_give_only_the_documented_errors(metric, references):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # question numbers outside 1-5
            result = metric.compute(predictions=["Рим"] * len(references), references=references)
    except ValueError as err:
        assert ROW_ERRORS.match(str(err)), str(err)
    else:
        assert all(isinstance(row.get("answer"), str) and row["answer"].strip() for row in references)
        numbered = [row.get("question_number") is not None for row in references]
        assert ("score" in result) == all(numbered)
        assert all(math.isfinite(v) for v in result.values() if isinstance(v, float))


number_junk = st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                        st.none(), st.booleans())


@SETTINGS
@given(numbers=st.lists(number_junk, min_size=2, max_size=2))
def test_question_numbers_are_integers_or_a_documented_error(metric, numbers):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numbers outside 1-5 warn and still score
            result = metric.compute(predictions=["Рим", "Лондон"], references=["Рим", "Париж"], question_numbers=numbers)
    except TypeError as err:
        assert re.match(r"question number [01]: expected an integer, got ", str(err)), str(err)
        assert not all(_integral(n) for n in numbers)
    except ValueError as err:  # e.g. 1.7e308 twice: the max score, the sum of the values, is beyond a float
        assert str(err).startswith("the game score overflows"), str(err)
        assert sum(abs(int(n)) for n in numbers) > sys.float_info.max
    else:
        values = [int(n) for n in numbers]
        assert result["score"] == values[0] - values[1]
        assert isinstance(result["score"], int)


def _integral(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or (value == value and abs(value) != float("inf") and value.is_integer())


@SETTINGS
@given(threshold=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3), st.none(),
                           st.booleans()))
def test_thresholds_are_finite_numbers_or_a_documented_error(metric, threshold):
    kwargs = {"predictions": ["Рим"], "references": ["Рим"], "confidences": [0.5]}
    try:
        result = metric.compute(**kwargs, confidence_threshold=threshold)
    except (TypeError, ValueError) as err:
        assert re.match(r"confidence_threshold must be a (finite )?number, got |confidences and confidence_threshold "
                        r"go together", str(err)), str(err)
    else:
        assert result["abstained"] == [0.5 < threshold]


@settings(max_examples=8, deadline=None)
@given(text=st.text(min_size=2000, max_size=6000).filter(str.strip))
def test_very_long_answers(metric, text):
    result = metric.compute(predictions=[text, text[: len(text) // 2] or None], references=[text, text])
    assert all(0.0 <= value <= 1.0 for value in result["meteor_per_example"])
    if task_api.parse_reply(text)[0] == text:  # one line the parser leaves as it is: the gold answer itself
        assert result["correct"][0] == bool(_tokenize("auto")(text))


# any object, any text: the reply parser and the harness scorer never raise
replies = st.one_of(junk, st.text(), st.binary(max_size=8), st.dictionaries(st.text(max_size=3), st.text(max_size=3)),
                    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1,
                            max_size=3).map("Ответ: Рим".__add__),
                    st.lists(st.sampled_from(["Ответ:", "**", "«", "»", "\n", "Пас", "Рим", ".", " ", "#"]),
                             max_size=8).map("".join))


@SETTINGS
@given(reply=replies, number=st.integers(1, 5))
def test_any_reply_scores_in_range_and_never_raises(reply, number):
    answer, status = task_api.parse_reply(reply)
    assert status in ("answer", "abstained", "unparseable") and isinstance(answer, str)
    assert (answer != "") == (status == "answer")
    values = task_api.score(reply, {"question": "?", "answer": "Рим", "question_number": number})
    assert set(values) == set(task_api.TASKS["qahub_jeopardy"].metrics)
    assert all(isinstance(v, float) and math.isfinite(v) for v in values.values())
    assert values["game_score"] in (-number, 0, number) and 0.0 <= values["meteor"] <= 1.0
    assert values["unparseable"] == float(status == "unparseable")
    assert values["abstained"] == float(status != "answer")


def test_a_100000_character_answer(metric):
    rng = random.Random(4)
    text = " ".join(rng.choice(WORDS[:12]) for _ in range(20000))[:100000]
    result = metric.compute(predictions=[text, None], references=[text, text], question_numbers=[5, 5])
    assert result["correct"] == [True, False] and result["score"] == 5


# --- the builder ---------------------------------------------------------------------------------------------

SOURCES = [("extended", jeopardy.EXTENDED), ("qa", jeopardy.TRAINING), ("qa", jeopardy.VALIDATION)]


def _delete_column(data, rng):
    delimiter = b"\t" if b"\t" in data.split(b"\n", 1)[0] else b","
    column = rng.randrange(2)
    lines = [line.split(delimiter) for line in data.split(b"\n")]
    return b"\n".join(delimiter.join(f[:column] + f[column + 1:]) for f in lines)


def _delete_header_key(data, rng):
    header, rest = data.split(b"\n", 1)
    delimiter = b"\t" if b"\t" in header else b","
    names = header.split(delimiter)
    del names[rng.randrange(len(names))]
    return delimiter.join(names) + b"\n" + rest


def _delete_cell(data, rng):
    lines = data.split(b"\n")
    index = rng.randrange(1, len(lines) - 1)
    delimiter = b"\t" if b"\t" in lines[0] else b","
    cells = lines[index].split(delimiter)
    del cells[rng.randrange(len(cells))]
    lines[index] = delimiter.join(cells)
    return b"\n".join(lines)


MUTATIONS = {
    "truncate": hostile.truncated, "flip": hostile.flipped, "delete_line": hostile.deleted_line,
    "delete_column": _delete_column, "delete_header_key": _delete_header_key, "delete_cell": _delete_cell,
    **{encoding: hostile.reencoded(encoding) for encoding in ("cp1251", "utf-16", "shift_jis", "koi8_r")},
}
SEEDED = ["truncate", "flip", "delete_line", "delete_cell"]
CASES = [(config, name, mutation, seed) for config, name in SOURCES for mutation in MUTATIONS
         for seed in (range(4) if mutation in SEEDED else [0])]


def _mutated_copy(tmp_path, name, mutation, seed):
    return hostile.damaged_copy(SAMPLE, tmp_path / "data", name, MUTATIONS[mutation], seed)


def _check_failure(err, data_dir):
    if isinstance(err, FileNotFoundError):
        assert str(data_dir) in str(err), err
        return
    assert isinstance(err, SourceDataError), f"{type(err).__name__}: {err}"
    assert re.match(rf"{re.escape(str(data_dir))}/\S+: record (line \d+|-): \S", str(err)), str(err)


@pytest.mark.parametrize("config, name, mutation, seed", CASES)
def test_a_mutated_source_builds_or_fails_with_the_documented_error(tmp_path, config, name, mutation, seed):
    data_dir = _mutated_copy(tmp_path, name, mutation, seed)
    cache = tmp_path / "cache"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # QuestionNumber outside 1-5 after a byte flip
            dsd = build("jeopardy", config, data_dir, cache)
    except Exception as err:  # noqa: BLE001 - which exception it is, is what the test checks
        _check_failure(err, data_dir)
        assert hostile.half_written(cache) == [], "a failed build left a half-written cache"
    else:
        assert all(len(ds) > 0 for ds in dsd.values())


@pytest.mark.parametrize("config, name, mutation, seed", [c for c in CASES if c[3] == 0])
def test_a_failed_export_leaves_nothing(tmp_path, config, name, mutation, seed):
    data_dir = _mutated_copy(tmp_path, name, mutation, seed)
    out = tmp_path / "exports" / "jeopardy"
    out.parent.mkdir()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            export("jeopardy", out, configs=[config], data_dir=data_dir, cache_dir=str(tmp_path / "cache"))
    except Exception as err:  # noqa: BLE001
        _check_failure(err, data_dir)
        assert list(out.parent.iterdir()) == [], "a failed export left output or a .partial-* folder"
    else:
        assert (out / "README.md").is_file()
        assert [p.name for p in out.parent.iterdir()] == ["jeopardy"]


def test_the_mutations_do_reach_the_error_paths(tmp_path):
    """The fuzz cases above are not all harmless: re-encoding and truncation must hit the documented errors."""
    for mutation, message in [("utf-16", r"record line 1: not UTF-8 text"), ("cp1251", r"not UTF-8 text"),
                              ("delete_header_key", r"record line 1: expected the tab-separated header")]:
        data_dir = _mutated_copy(tmp_path / mutation, jeopardy.EXTENDED, mutation, 0)
        with pytest.raises(SourceDataError, match=message):
            build("jeopardy", "extended", data_dir, tmp_path / mutation / "cache")


# --- the command line -----------------------------------------------------------------------------------------

CLI_FILES = [("predictions", "predictions.json"), ("references", jeopardy.EXTENDED)]
CLI_CASES = [(role, name, mutation, seed) for role, name in CLI_FILES for mutation in MUTATIONS
             for seed in (range(3) if mutation in SEEDED else [0]) if not mutation.startswith("delete_c")]


@pytest.mark.parametrize("role, name, mutation, seed", CLI_CASES)
def test_the_command_line_scores_mutated_files_or_names_file_and_problem(tmp_path, role, name, mutation, seed):
    import argparse

    from qahub.evaluate_cli import jeopardy_meteor as scoring

    data_dir = _mutated_copy(tmp_path, name, mutation, seed)
    parser = argparse.ArgumentParser()
    scoring.add_arguments(parser)
    args = parser.parse_args(["--predictions", str(data_dir / "predictions.json"), "--references",
                              str(data_dir / jeopardy.EXTENDED), "--missing", "abstain"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            result = scoring.run(args)
    except ValueError as err:
        # the message starts with a file and names the mutated one (an unmatched id names both files)
        inputs = (str(data_dir / "predictions.json") + ":", str(data_dir / jeopardy.EXTENDED) + ":")
        assert str(err).startswith(inputs) and str(data_dir / name) in str(err), str(err)
    else:
        assert 0.0 <= result["meteor"] <= 1.0 and result["num_questions"] > 0


# --- nothing from the data is executed or unpickled -----------------------------------------------------------

CODE = [ROOT / "loaders" / "jeopardy.py", ROOT / "src" / "qahub" / "evaluate_cli" / "jeopardy_meteor.py",
        *sorted(METRIC_DIR.glob("*.py"))]
UNSAFE_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "joblib", "cloudpickle", "yaml", "subprocess"}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__"}  # called by bare name (re.compile is fine)
UNSAFE_METHODS = {"load_module", "exec_module", "system", "popen", "spawnv", "execv"}


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.name)
def test_the_code_neither_executes_nor_unpickles_data(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & UNSAFE_MODULES
    calls = [node.func for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert not {func.id for func in calls if isinstance(func, ast.Name)} & UNSAFE_BUILTINS
    assert not {func.attr for func in calls if isinstance(func, ast.Attribute)} & UNSAFE_METHODS


def test_the_scan_covers_the_metric_helpers():
    assert {p.name for p in CODE} >= {"jeopardy.py", "jeopardy_meteor.py", "inputs.py", "russian_meteor.py",
                                      "spacy_like.py", "replies.py", "examples.py", "task_api.py"}


# --- the command line's readers and the metric's entry points, with any input ----------------------------------

def _cli(tmp_path, name, data, *options):
    import contextlib
    import io

    from qahub import cli

    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(f'{{"question_id": {i}, "answer": "Рим", "question_number": {i + 1}}}\n' for i in range(5)),
                    encoding="utf-8")
    preds = tmp_path / name
    preds.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--quiet", "evaluate", "jeopardy_meteor", "--predictions", str(preds), "--references",
                         str(refs), *options])
    return code, out.getvalue(), err.getvalue()


def _check_cli_outcome(code, out, err, name):
    """Exit 0 with scores in range, or exit 1 with one line naming the predictions file; never a traceback."""
    assert "Traceback" not in err
    if code == 0:
        result = json.loads(out)
        assert 0.0 <= result["meteor"] <= 1.0 and 0.0 <= result["accuracy"] <= 1.0 and result["num_questions"] > 0
        assert -15 <= result["score"] <= result["max_score"] <= 15
    else:
        assert (code, out) == (1, "") and err.count("\n") == 1, err
        assert err.startswith(f"qahub evaluate: error: {name}"), err


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=6),
              st.sampled_from(["0", "1", "Рим", "Ответ: Рим", "\ud800", "\ufeff", "𝕽им", "Р\u0301им"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(
        st.one_of(st.sampled_from(["question_id", "id", "prediction", "answer", "confidence", "0", "3"]),
                  st.text(max_size=3)), inner, max_size=4)),
    max_leaves=12,
)
MISSING = st.sampled_from(["skip", "abstain"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(json_values, st.dictionaries(st.sampled_from("012345"), json_values, min_size=1)),
       missing=MISSING, lines=st.booleans())
def test_any_json_predictions_score_or_give_a_one_line_error(tmp_path, value, missing, lines):
    name = "p.jsonl" if lines else "p.json"
    data = ("\n".join(json.dumps(v) for v in value) if lines and isinstance(value, list) else json.dumps(value))
    code, out, err = _cli(tmp_path, name, data.encode("utf-8", "surrogatepass"), "--missing", missing)
    _check_cli_outcome(code, out, err, str(tmp_path / name))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=60), st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.lists(st.tuples(st.integers(-1, 6), st.text(max_size=8)), max_size=6).map(
                          lambda rows: "".join(f"{i},{t}\n" for i, t in rows).encode("utf-8", "surrogatepass"))),
       suffix=st.sampled_from([".csv", ".json", ".jsonl"]), missing=MISSING,
       options=st.sampled_from([(), ("--confidence-threshold", "0.5"), ("--value-multiplier", "1e308"),
                                ("--per-example",)]))
def test_any_bytes_as_predictions_score_or_give_a_one_line_error(tmp_path, data, suffix, missing, options):
    code, out, err = _cli(tmp_path, "p" + suffix, data, "--missing", missing, *options)
    if "--value-multiplier" not in options:
        _check_cli_outcome(code, out, err, str(tmp_path / ("p" + suffix)))
    elif code == 0:  # only one question of number 1 scored: a max score of 1e308 still fits a float
        result = json.loads(out)
        assert result["max_score"] == int(1e308) and abs(result["score"]) <= result["max_score"], out[:300]
    else:
        assert code == 1 and "Traceback" not in err and err.count("\n") == 1, err


huge = st.one_of(st.integers(-(2**80), 2**80), st.floats(allow_nan=True, allow_infinity=True))


@SETTINGS
@given(examples=_examples(min_size=0, max_size=6), cut=st.integers(0, 6),
       multiplier=st.one_of(st.just(1), huge), threshold=st.one_of(st.just(THRESHOLD), huge))
def test_compute_and_add_batch_agree_or_give_a_clear_error(metric, examples, cut, multiplier, threshold):
    predictions = [reply for reply, _, _ in examples]
    references = [{"answer": gold, "question_number": number} for _, gold, number in examples]
    options = {"value_multiplier": multiplier, "threshold": threshold}
    try:
        direct = metric.compute(predictions=predictions, references=references, **options)
    except (TypeError, ValueError) as err:
        assert re.match(r"(nothing to score|threshold must be a |value_multiplier must be a finite positive|"
                        r"the game score overflows)", str(err)), str(err)
        return
    metric.add_batch(predictions=predictions[:cut], references=references[:cut])
    for reply, reference in zip(predictions[cut:], references[cut:], strict=True):
        metric.add(prediction=reply, reference=reference)
    assert metric.compute(**options) == direct
    assert 0.0 <= direct["meteor"] <= 1.0 and 0.0 <= direct["accuracy"] <= 1.0
    assert math.isfinite(float(direct["max_score"])) and abs(direct["score"]) <= direct["max_score"]


@pytest.mark.parametrize("missing", ["abstain", "skip"])
def test_a_max_score_beyond_a_float_is_refused_in_one_line(tmp_path, missing):
    """Five questions of numbers 1-5 at 1e308 each sum to 1.5e309: no JSON reader can read that back as a number.
    With --missing skip only the one predicted question counts, and 1e308 fits."""
    code, out, err = _cli(tmp_path, "p.csv", b"0,\n1,\n2,\n3,\n4,\n" if missing == "skip" else b"0,",
                          "--missing", missing, "--value-multiplier", "1e308")
    assert (code, out) == (1, "") and "the game score overflows" in err and err.count("\n") == 1, err


def test_the_metric_refuses_values_whose_sum_is_beyond_a_float(metric):
    with pytest.raises(ValueError, match="the game score overflows"):
        metric.compute(predictions=["Рим", "Рим"], value_multiplier=10**308,
                       references=[{"answer": "Рим", "question_number": 1}, {"answer": "Рим", "question_number": 2}])
    result = metric.compute(predictions=["Рим"], references=[{"answer": "Рим", "question_number": 1}],
                            value_multiplier=10**308)
    assert result["max_score"] == result["score"] == 10**308
