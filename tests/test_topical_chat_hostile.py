"""Fuzzed and hostile input for Topical-Chat (issue 8): metric properties with hypothesis, damaged copies of the
sample files for the builder and the export, and no code run from the data."""

import ast
import contextlib
import json
import random
import re
import shutil
from pathlib import Path

import evaluate
import hostile
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import qahub
from qahub import registry
from qahub.export import writer
from qahub.readers import SourceDataError

SAMPLE = registry.samples_dir("topical_chat")
SETTINGS = settings(max_examples=50, deadline=None)

# the metric


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("topical_chat")))


texts = st.text(max_size=40)  # any Unicode (no lone surrogates: they are not valid text in Arrow)
long_texts = st.builds(lambda word, times: (word + " ") * times, st.text(min_size=1, max_size=8),
                       st.integers(min_value=1_000, max_value=5_000))
any_text = st.one_of(texts, texts, texts, long_texts, st.sampled_from(["", " ", "\n\t", "...", "the a an", "\u00a0"]))
batches = st.lists(st.tuples(any_text, any_text, st.one_of(st.none(), any_text)), min_size=1, max_size=5)

DOCUMENTED = re.compile(
    r"topical_chat: no predictions to score|topical_chat: \d+ predictions for \d+ references"
    r"|topical_chat: knowledge|topical_chat: per_example must be True or False"
    r"|topical_chat: \d+ knowledge texts for \d+ predictions"
    r"|topical_chat: references\[\d+\] must be a gold string, a conversation row"
    r"|topical_chat: (predictions|references) must be a list \(or a Dataset\)"
)

def compute(metric, batch, **kwargs):
    predictions, references, knowledge = (list(column) for column in zip(*batch))
    return metric.compute(predictions=predictions, references=references, knowledge=knowledge, **kwargs)


def assert_in_range(result, count):
    assert 0.0 <= result["f1"] <= 1.0
    assert 0.0 <= result["bleu"] <= 100.0
    assert 0.0 <= result["distinct_1"] <= 1.0 and 0.0 <= result["distinct_2"] <= 1.0
    assert result["num_examples"] == count and 0 <= result["num_with_knowledge"] <= count
    assert (result["knowledge_f1"] is None) == (result["num_with_knowledge"] == 0)
    assert result["knowledge_f1"] is None or 0.0 <= result["knowledge_f1"] <= 1.0
    assert 0 <= result["unparseable"] <= count and result["turns_without_prediction"] == 0
    for row in result["per_example"]:
        assert 0.0 <= row["f1"] <= 1.0 and 0.0 <= row["bleu"] <= 100.0
        assert row["knowledge_f1"] is None or 0.0 <= row["knowledge_f1"] <= 1.0


@SETTINGS
@given(batch=batches)
def test_scores_stay_in_their_ranges(metric, batch):
    assert_in_range(compute(metric, batch, per_example=True), len(batch))


@SETTINGS
@given(batch=batches)
def test_a_perfect_prediction_gets_the_maximum(metric, batch):
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    texts = [prediction for prediction, _, _ in batch]
    result = metric.compute(predictions=texts, references=texts, knowledge=texts, per_example=True)
    assert result["f1"] == 1.0 and all(row["f1"] == 1.0 for row in result["per_example"])
    assert result["knowledge_f1"] in (None, 1.0)
    if all(len(Tokenizer13a()(text).split()) >= 4 for text in texts):  # BLEU-4 needs a 4-gram in each
        assert result["bleu"] == 100.0


@SETTINGS
@given(batch=batches, seed=st.integers(0, 2**32 - 1))
def test_the_order_of_examples_does_not_change_corpus_scores(metric, batch, seed):
    order = list(range(len(batch)))
    random.Random(seed).shuffle(order)
    first = compute(metric, batch, per_example=True)
    second = compute(metric, [batch[i] for i in order], per_example=True)
    corpus = ("f1", "bleu", "distinct_1", "distinct_2", "knowledge_f1", "num_examples", "num_with_knowledge")
    assert {key: second[key] for key in corpus} == {key: first[key] for key in corpus}
    assert second["per_example"] == [first["per_example"][i] for i in order]


junk = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.binary(max_size=5), st.lists(texts, max_size=2),
                 st.dictionaries(texts, texts, max_size=2))


@SETTINGS
@given(batch=batches, where=st.sampled_from(["references", "knowledge"]), index=st.integers(0, 7), value=junk)
def test_a_non_string_reference_or_knowledge_is_a_documented_error(metric, batch, where, index, value):
    columns = dict(zip(("predictions", "references", "knowledge"), (list(c) for c in zip(*batch))))
    if where == "knowledge" and value is None:
        value = 3  # None is a valid knowledge entry
    if where == "references" and isinstance(value, dict):
        value = {"not": "a turn"}  # a dict with "turns" or "history"+"response" is a reference of another form
    columns[where][index % len(batch)] = value
    with pytest.raises(ValueError, match=DOCUMENTED):
        metric.compute(**columns)


replies = st.one_of(any_text, junk, st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
                                            min_size=1, max_size=3),
                    st.builds(lambda a, b: a + "\ud800" + b, texts, texts))


def readable(reply):
    return isinstance(reply, str) and not re.search("[\ud800-\udfff]", reply)


@SETTINGS
@given(pairs=st.lists(st.tuples(replies, any_text, st.one_of(st.none(), any_text)), min_size=1, max_size=6))
def test_any_reply_is_scored_finite_and_unreadable_ones_counted(metric, pairs):
    predictions, references, knowledge = (list(column) for column in zip(*pairs))
    result = metric.compute(predictions=predictions, references=references, knowledge=knowledge, per_example=True)
    assert_in_range(result, len(pairs))
    assert result["unparseable"] == sum(not readable(reply) for reply in predictions)
    for reply, row in zip(predictions, result["per_example"], strict=True):
        if not readable(reply):
            assert row["f1"] == 0.0 and row["knowledge_f1"] in (None, 0.0) and row["unparseable"] == 1


@SETTINGS
@given(pairs=st.lists(st.tuples(replies, any_text, st.one_of(st.none(), any_text)), min_size=1, max_size=6))
def test_the_task_scorer_never_raises_and_aggregates_finite(pairs):
    import math

    from qahub.metrics.topical_chat import task_api

    spec = task_api.TASKS["qahub_topical_chat_freq"]
    docs = [{"target": " ".join(gold.split()), "knowledge": k} for _, gold, k in pairs]
    rows = [spec.score(reply, doc) for (reply, _, _), doc in zip(pairs, docs, strict=True)]
    for name, (how, _) in spec.metrics.items():
        values = [row[name] for row in rows]
        value = math.fsum(values) / len(values) if how == "mean" else how(values)
        assert isinstance(value, float) and math.isfinite(value), name


messages = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=30)
conversation_rows = st.builds(
    lambda cid, turns: {"conversation_id": cid, "turns": [
        {"agent": i % 2, "message": m, "knowledge_source": ["FS1"]} for i, m in enumerate(turns)]},
    st.text(min_size=1, max_size=5), st.lists(messages, min_size=1, max_size=6))


@SETTINGS
@given(rows=st.lists(conversation_rows, min_size=1, max_size=3, unique_by=lambda row: row["conversation_id"]),
       seed=st.integers(0, 2**32 - 1))
def test_rows_oracle_gets_f1_1_and_unscored_turns_are_counted(metric, rows, seed):
    records = [{"conversation_id": row["conversation_id"], "turn_index": i, "response": turn["message"]}
               for row in rows for i, turn in enumerate(row["turns"]) if i >= 1]
    total = len(records)
    random.Random(seed).shuffle(records)
    records = records[:max(1, len(records) // 2)]
    if not total:
        with pytest.raises(ValueError, match=DOCUMENTED_ROWS):
            metric.compute(predictions=[{"conversation_id": rows[0]["conversation_id"], "turn_index": 0,
                                         "response": "x"}], references=rows)
        return
    result = metric.compute(predictions=records, references=rows, per_example=True)
    assert result["f1"] == 1.0 and result["unparseable"] == 0
    assert (result["reference_turns"], result["turns_without_prediction"]) == (total, total - len(records))


@SETTINGS
@given(predictions=st.lists(st.one_of(texts, st.none()), max_size=4), references=st.lists(st.one_of(texts, st.none()),
                                                                                            max_size=4),
       knowledge=st.one_of(st.none(), texts, st.lists(st.one_of(texts, st.none(), st.integers()), max_size=4)),
       per_example=st.one_of(st.booleans(), st.none(), st.integers(0, 1), texts))
def test_only_documented_exceptions(metric, predictions, references, knowledge, per_example):
    """Any mixture of inputs is either scored (in range) or refused with one of the documented ValueErrors."""
    try:
        result = metric.compute(predictions=predictions, references=references, knowledge=knowledge,
                                per_example=per_example)
    except ValueError as err:
        assert DOCUMENTED.search(str(err)), str(err)
        return
    assert isinstance(per_example, bool) and predictions and len(predictions) == len(references)
    assert all(isinstance(reference, str) for reference in references)
    assert result["unparseable"] == predictions.count(None)
    assert_in_range(result | {"per_example": result.get("per_example", [])}, len(predictions))


DOCUMENTED_ROWS = re.compile(r"topical_chat: \d+ predictions name turns the references do not have")


def test_empty_and_whitespace_inputs(metric):
    result = metric.compute(predictions=["", " "], references=["", "\n"], knowledge=["", " "])
    assert (result["f1"], result["bleu"], result["distinct_1"], result["knowledge_f1"]) == (1.0, 0.0, 0.0, None)
    assert result["unparseable"] == 0  # empty replies are read (empty responses), not unparseable


@settings(SETTINGS, max_examples=15)
@given(batch=batches, cuts=st.lists(st.integers(0, 5), max_size=3), one_by_one=st.booleans())
def test_add_and_add_batch_give_what_compute_gives(metric, batch, cuts, one_by_one):
    """evaluate's path (add/add_batch, then compute) and the direct compute agree on any split into batches."""
    predictions, references, knowledge = (list(column) for column in zip(*batch))
    direct = metric.compute(predictions=predictions, references=references, knowledge=knowledge, per_example=True)
    if one_by_one:
        for prediction, reference in zip(predictions, references, strict=True):
            metric.add(prediction=prediction, reference=reference)
    else:
        bounds = [0, *sorted(c % (len(batch) + 1) for c in cuts), len(batch)]
        for start, end in zip(bounds, bounds[1:]):
            metric.add_batch(predictions=predictions[start:end], references=references[start:end])
    assert metric.compute(knowledge=knowledge, per_example=True) == direct


# the command line's prediction reader


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory):
    """The test_freq conversation and reading-set rows, built once (the command line would build them per run)."""
    from qahub.evaluate_cli import topical_chat as scoring

    return scoring.Source(SAMPLE, "conversations", "test_freq", build=True).rows()


CONVERSATIONS = ["t_2b56287d-0e03-500a-b3d9-ca835e6f11ab", "t_3620a7a8-e7fc-52a6-b7f1-796880878625"]
huge = st.one_of(st.integers(min_value=2**63), st.integers(max_value=-(2**63)), st.floats())
records = st.fixed_dictionaries(
    {"conversation_id": st.one_of(st.sampled_from(CONVERSATIONS), texts, junk),
     "turn_index": st.one_of(st.integers(0, 3), st.booleans(), huge, junk),
     "response": st.one_of(replies, huge)},
    optional={"extra": any_text})
good_records = st.lists(
    st.fixed_dictionaries({"conversation_id": st.just(CONVERSATIONS[0]), "turn_index": st.integers(1, 2),
                           "response": replies}), min_size=1, max_size=2, unique_by=lambda r: r["turn_index"])
prediction_files = st.one_of(
    st.builds(lambda items: json.dumps(items, default=repr).encode(), good_records),
    st.binary(max_size=200),
    st.builds(lambda items: json.dumps(items, default=repr).encode(), st.lists(st.one_of(records, junk), max_size=5)),
    st.builds(lambda value: json.dumps(value, default=repr).encode(), st.one_of(junk, records, huge)),
    st.builds(lambda digits: b'[{"conversation_id": "x", "turn_index": 1%s}]' % (b"0" * digits), st.integers(4000, 5000)),
    st.builds(lambda text: text.encode("utf-8", "surrogatepass"), st.text(max_size=60)),
)


def written(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("predictions") / "p.json"
    path.write_bytes(content)
    return path


def evaluate_cli(path, rows):
    """``qahub --quiet evaluate topical_chat`` on the file at ``path``, the references ``rows`` given:
    (exit status, stdout, stderr)."""
    import io
    from unittest import mock

    from qahub import cli
    from qahub.evaluate_cli import topical_chat as scoring

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(scoring.Source, "rows", lambda self: rows), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--quiet", "evaluate", "topical_chat", "--predictions", str(path), "--data-dir",
                         str(SAMPLE), "--split", "test_freq", "--per-example"])
    return code, out.getvalue(), err.getvalue()


@SETTINGS
@given(content=prediction_files)
def test_any_prediction_file_is_scored_in_range_or_refused_in_one_line(sample_rows, tmp_path_factory, content):
    """Bytes, odd Unicode, wrong types, huge numbers: exit 0 with finite scores in range, or exit 1 with one line
    naming the file; never a traceback."""
    path = written(tmp_path_factory, content)
    code, out, err = evaluate_cli(path, sample_rows)
    event(f"exit {code}")
    if code == 1:
        assert out == "" and re.fullmatch(rf"qahub evaluate: error: {re.escape(str(path))}(: | against ).*\n", err)
        return
    assert code == 0 and err == "", err
    result = json.loads(out)
    assert_in_range(result | {"turns_without_prediction": 0}, result["num_examples"])
    assert result["num_examples"] + result["turns_without_prediction"] == result["reference_turns"] == 3


@SETTINGS
@given(content=prediction_files)
def test_the_prediction_reader_returns_records_or_names_the_file(tmp_path_factory, content):
    from qahub.evaluate_cli.topical_chat import read_predictions

    path = written(tmp_path_factory, content)
    with contextlib.suppress(ValueError):
        assert isinstance(read_predictions(path), list) and read_predictions(path)  # a non-empty list
        return
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: [^\n]*$"):
        read_predictions(path)


# the builder


def copy_sample(root):
    data = root / "data"
    shutil.copytree(SAMPLE, data)
    return data


def truncate(raw, rng):
    return raw[:rng.randrange(len(raw.rstrip()))]  # always before the closing brace


MUTATIONS = [truncate, hostile.flipped, hostile.deleted_line, hostile.deleted_key, hostile.deleted_column,
             hostile.replaced_value]
TARGETS = [  # (config, file, builder options)
    ("conversations", "conversations/test_freq.json", {}),
    ("asr", "TopicalChatASR/actual/test_freq_audio.json", {}),
    ("reading_sets", "reading_sets/post-build/test_freq.json", {}),
    ("reading_sets", "reading_sets/pre-build/test_freq.json", {"reading_set_form": "pre-build"}),
    ("reading_sets", "src/wiki/wiki.json", {"reading_set_form": "pre-build"}),
    ("reading_sets", "conversations/test_freq.json", {}),
]
CASES = [(config, rel, options, mutate, seed) for config, rel, options in TARGETS for mutate in MUTATIONS
         for seed in range(3)]


def assert_builds_or_documented_error(data, config, cache, **options):
    """Returns None when it builds, else the SourceDataError / FileNotFoundError (nothing left in the cache)."""
    builder = qahub.make_builder("topical_chat", config, data_dir=str(data), cache_dir=str(cache),
                                 splits=("test_freq",), **options)
    try:
        qahub.prepare(builder)
    except (SourceDataError, FileNotFoundError) as err:
        assert str(data) in str(err), f"the error does not name the file: {err}"
        assert hostile.half_written(cache) == [], f"half-written cache after: {err}"
        return err
    assert len(builder.as_dataset()["test_freq"]) > 0
    return None


@pytest.mark.parametrize("config, rel, options, mutate, seed", CASES,
                         ids=[f"{c}-{r.replace('/', '_')}-{m.__name__}-{s}" for c, r, _, m, s in CASES])
def test_damaged_copies_build_or_fail_with_the_documented_error(tmp_path, config, rel, options, mutate, seed):
    data = copy_sample(tmp_path)
    path = data / rel
    path.write_bytes(mutate(path.read_bytes(), random.Random(f"{rel}/{mutate.__name__}/{seed}")))
    assert_builds_or_documented_error(data, config, tmp_path / "cache", **options)


@pytest.mark.parametrize("mutate", [truncate, hostile.deleted_key])
def test_truncated_or_keyless_files_are_refused(tmp_path, mutate):
    """Every key of a conversation is required and a truncated file is not JSON: these copies never build, so
    the fuzzing above does reach the checks."""
    for seed in range(3):
        data = copy_sample(tmp_path / str(seed))
        path = data / "conversations/test_freq.json"
        path.write_bytes(mutate(path.read_bytes(), random.Random(seed)))
        err = assert_builds_or_documented_error(data, "conversations", tmp_path / str(seed) / "cache")
        assert isinstance(err, SourceDataError) and "test_freq.json: record " in str(err)


ENCODINGS = [("cp1251", "Привет, ты любишь космос?"), ("shift_jis", "こんにちは、宇宙は好き？"),
             ("utf-16", "Hello — ¿te gusta el espacio?"), ("utf-16-be", "Hello"), ("utf-32", "Hello"),
             ("latin-1", "Café au lait?"), ("cp1252", "“Hello”")]  # utf-8-sig builds: a BOM is allowed


@pytest.mark.parametrize("encoding, message", ENCODINGS, ids=[e for e, _ in ENCODINGS])
@pytest.mark.parametrize("config, rel, options", [TARGETS[0], TARGETS[2], TARGETS[4]],
                         ids=["conversations", "post-build", "wiki"])
def test_wrongly_encoded_copies_are_refused(tmp_path, encoding, message, config, rel, options):
    data = copy_sample(tmp_path)
    path = data / rel
    text = path.read_text(encoding="utf-8")
    text = text.replace("Hello! Do you follow space news?", message).replace("Jazz is a music", f"{message} Jazz is a music")
    assert message in text or message == "Hello"
    path.write_bytes(text.encode(encoding))
    err = assert_builds_or_documented_error(data, config, tmp_path / "cache", **options)
    assert isinstance(err, SourceDataError), "a non-UTF-8 copy built"
    assert re.search(r"UTF-8|byte-order mark|UTF-16", str(err)), str(err)


def test_deeply_nested_json_is_refused(tmp_path):
    data = copy_sample(tmp_path)
    depth = 5_000
    (data / "conversations/test_freq.json").write_text('{"t_x": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    err = assert_builds_or_documented_error(data, "conversations", tmp_path / "cache")
    assert isinstance(err, SourceDataError) and re.search(r"record (t_x|-): ", str(err)), err


# the export


@pytest.mark.parametrize("mutate, seed", [(m, s) for m in MUTATIONS for s in range(2)],
                         ids=[f"{m.__name__}-{s}" for m in MUTATIONS for s in range(2)])
def test_a_failed_export_leaves_nothing(tmp_path, mutate, seed):
    data = copy_sample(tmp_path)
    path = data / "conversations/test_freq.json"
    path.write_bytes(mutate(path.read_bytes(), random.Random(f"export/{mutate.__name__}/{seed}")))
    out = tmp_path / "out" / "topical_chat"
    try:
        writer.export("topical_chat", out, configs=["conversations"], data_dir=str(data),
                          cache_dir=str(tmp_path / "cache"), builder_options={"splits": ("test_freq",)})
    except (SourceDataError, FileNotFoundError) as err:
        assert str(data) in str(err)
        assert not out.exists()
        assert list(out.parent.glob(".*partial-*")) == []
        assert hostile.half_written(tmp_path / "cache") == []
    else:
        assert (out / "README.md").is_file()


def test_a_broken_export_really_fails(tmp_path):
    """The export test above is not vacuous: a truncated file does fail it, leaving no folder."""
    data = copy_sample(tmp_path)
    path = data / "conversations/test_freq.json"
    path.write_bytes(path.read_bytes()[:100])
    out = tmp_path / "out" / "topical_chat"
    with pytest.raises(SourceDataError, match=r"test_freq\.json: record"):
        writer.export("topical_chat", out, configs=["conversations"], data_dir=str(data),
                          cache_dir=str(tmp_path / "cache"), builder_options={"splits": ("test_freq",)})
    assert not out.exists() and list(out.parent.glob(".*partial-*")) == []


# nothing from the data is executed or unpickled

OUR_CODE = [Path(registry.builder_module("topical_chat").__file__), Path(qahub.__file__).parent / "evaluate_cli/topical_chat.py",
            *sorted(registry.metric_dir("topical_chat").glob("*.py"))]
FORBIDDEN_NAMES = {"eval", "exec", "compile", "__import__", "breakpoint"}  # called by bare name
FORBIDDEN_METHODS = {"system", "popen", "load_module", "exec_module", "run_path"}  # os.system(...) and the like
FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "subprocess", "joblib", "cloudpickle", "yaml",
                     "torch", "importlib"}


def dangerous(source):
    """Names of calls and imports that could run or unpickle data, found in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            found.append(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_NAMES:
            found.append(node.func.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FORBIDDEN_METHODS:
            found.append(node.func.attr)
    return found


def test_the_scan_finds_what_it_looks_for():
    assert dangerous("import pickle\nfrom subprocess import run\nx = eval(s)\nos.system(c)\n") == [
        "pickle", "subprocess", "eval", "system"]
    assert dangerous("import re\nre.compile(r'x')\njson.loads(s)\n") == []


def test_our_code_neither_executes_nor_unpickles_data():
    assert len(OUR_CODE) >= 5 and all(path.is_file() for path in OUR_CODE)
    assert {path: dangerous(path.read_text(encoding="utf-8")) for path in OUR_CODE} == {path: [] for path in OUR_CODE}


def test_code_in_the_data_is_kept_as_text(tmp_path):
    data = copy_sample(tmp_path)
    path = data / "conversations/test_freq.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    payload = "__import__('os').system('touch PWNED') # cos\nsystem\n(S'x'\ntR. {{7*7}} ${7*7}"
    next(iter(records.values()))["content"][0]["message"] = payload
    path.write_text(json.dumps(records), encoding="utf-8")
    builder = qahub.make_builder("topical_chat", "conversations", data_dir=str(data), cache_dir=str(tmp_path / "c"),
                                 splits=("test_freq",))
    qahub.prepare(builder)
    assert builder.as_dataset()["test_freq"][0]["turns"][0]["message"] == payload
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()
