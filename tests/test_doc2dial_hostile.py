"""Hostile and fuzzed input for doc2dial (issue 8): the metric's properties under arbitrary input, damaged copies
of the builder's sample files and zip, and no execution of anything read from the data."""

import ast
import contextlib
import json
import random
import shutil
import zipfile
from pathlib import Path

import hostile
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qahub.loaders import doc2dial as loader

from qahub import registry
from qahub.export import writer
from qahub.readers import SourceDataError
from qahub.testing import build

SAMPLES = registry.samples_dir("doc2dial")
RELEASE = "doc2dial/v1.0.1"
FILES = ("doc2dial_doc.json", "doc2dial_dial_train.json", "doc2dial_dial_validation.json")
METRIC_DIR = str(registry.metric_dir("doc2dial"))
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
BLEU_MAX = 100 + 1e-9  # sacreBLEU's perfect score is 100.00000000000004


# --- metric properties

# arbitrary Unicode (hypothesis leaves out lone surrogates by default), empty, and very long strings
texts = st.one_of(st.text(max_size=40), st.just(""), st.text(min_size=1, max_size=8).map(lambda s: s * 2000))
probabilities = st.floats(min_value=0.0, max_value=1.0)


def as_float32(value):
    return float(np.float32(value))


@st.composite
def grounding_case(draw):
    """Predictions and references over the same ids; distinct probabilities (ties make best_* order-dependent)."""
    n = draw(st.integers(1, 6))
    golds = draw(st.lists(st.lists(texts, max_size=2), min_size=n, max_size=n))
    guesses = draw(st.lists(texts, min_size=n, max_size=n))
    probs = draw(st.lists(probabilities, min_size=n, max_size=n, unique_by=as_float32))  # stored as float32
    references = [{"id": f"q{i}", "answers": {"text": gold, "answer_start": [0] * len(gold)}} for i, gold in enumerate(golds)]
    predictions = [{"id": f"q{i}", "prediction_text": guess, "no_answer_probability": prob}
                   for i, (guess, prob) in enumerate(zip(guesses, probs, strict=True))]
    return predictions, references


def assert_grounding_ranges(result, total):
    for key in ("exact", "f1", "best_exact", "best_f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"):
        if key in result:
            assert 0.0 <= result[key] <= 100.0, key
    assert result["exact"] <= result["f1"]
    assert result["total"] == total == result.get("HasAns_total", 0) + result.get("NoAns_total", 0)


@FUZZ
@given(case=grounding_case(), seed=st.randoms(use_true_random=False))
def test_subtask1_ranges_and_order(grounding, case, seed):
    predictions, references = case
    result = grounding.compute(predictions=predictions, references=references)
    assert_grounding_ranges(result, len(references))
    shuffled_predictions, shuffled_references = predictions[:], references[:]
    seed.shuffle(shuffled_predictions)
    seed.shuffle(shuffled_references)
    again = grounding.compute(predictions=shuffled_predictions, references=shuffled_references)
    assert again.keys() == result.keys()
    for key, value in result.items():
        assert again[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key  # sums in another order


# gold answers of one question all equal (with different ones, only those that normalise to something count)
same_golds = st.one_of(st.just([]), texts.map(lambda text: [text]), texts.map(lambda text: [text, text]))


@FUZZ
@given(golds=st.lists(same_golds, min_size=1, max_size=6))
def test_subtask1_perfect_prediction_gets_100(grounding, golds):
    references = [{"id": f"q{i}", "answers": {"text": gold, "answer_start": [0] * len(gold)}} for i, gold in enumerate(golds)]
    predictions = [{"id": f"q{i}", "prediction_text": (gold or [""])[0], "no_answer_probability": 0.0}
                   for i, gold in enumerate(golds)]
    result = grounding.compute(predictions=predictions, references=references)
    assert (result["exact"], result["f1"], result["best_exact"], result["best_f1"]) == (100.0, 100.0, 100.0, 100.0)


@st.composite
def generation_case(draw):
    n = draw(st.integers(1, 6))
    hypotheses = draw(st.lists(texts, min_size=n, max_size=n))
    golds = draw(st.lists(texts, min_size=n, max_size=n))
    return ([{"id": f"q{i}", "utterance": text} for i, text in enumerate(hypotheses)],
            [{"id": f"q{i}", "utterance": text} for i, text in enumerate(golds)])


@FUZZ
@given(case=generation_case(), seed=st.randoms(use_true_random=False))
def test_subtask2_ranges_and_order(generation, case, seed):
    predictions, references = case
    result = generation.compute(predictions=predictions, references=references)
    assert 0.0 <= result["score"] <= BLEU_MAX
    assert all(0.0 <= p <= BLEU_MAX for p in result["precisions"]) and 0.0 <= result["bp"] <= 1.0
    assert result["total"] == len(references)
    seed.shuffle(predictions)
    seed.shuffle(references)
    assert generation.compute(predictions=predictions, references=references) == result  # integer counts: exact


@FUZZ
@given(utterances=st.lists(texts, min_size=1, max_size=6))
def test_subtask2_perfect_prediction_gets_the_maximum(generation, utterances):
    records = [{"id": f"q{i}", "utterance": text} for i, text in enumerate(utterances)]
    result = generation.compute(predictions=records, references=records)
    assert result["counts"] == result["totals"] and result["bp"] == 1.0
    if all(result["totals"]):
        assert result["score"] == pytest.approx(100.0, rel=1e-12)
    else:  # fewer than 4 tokens in every prediction: no 4-gram, BLEU 0 (documented, as sacreBLEU)
        assert result["score"] == 0.0


FIELD_SPOILERS = [None, 1, 1.5, True, [], {}, b"x", "x\ud800y", float("nan"), float("inf"), 1e39, 2**40, "0.5"]
junk = st.one_of(st.sampled_from(FIELD_SPOILERS), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.sampled_from(["text", "answer_start"]), st.lists(st.one_of(st.text(max_size=3), st.integers())),
                                 max_size=2))


@FUZZ
@given(case=grounding_case(), index=st.integers(0, 5), side=st.sampled_from(["predictions", "references"]),
       field=st.sampled_from(["id", "prediction_text", "no_answer_probability", "answers", None]), value=junk)
def test_subtask1_spoiled_fields_give_only_the_documented_error(grounding, case, index, side, field, value):
    records = dict(zip(("predictions", "references"), case, strict=True))
    record = records[side][index % len(records[side])]
    if field is None:
        records[side][index % len(records[side])] = value  # the whole record replaced
    elif field in record:
        record[field] = value
    try:
        result = grounding.compute(**records)
    except ValueError as err:
        assert str(err).startswith("doc2dial"), err
    else:
        assert_grounding_ranges(result, len(records["references"]))


@FUZZ
@given(case=generation_case(), index=st.integers(0, 5), side=st.sampled_from(["predictions", "references"]),
       field=st.sampled_from(["id", "utterance"]), value=st.one_of(st.none(), junk))
def test_subtask2_none_and_junk_fields_give_only_the_documented_error(generation, case, index, side, field, value):
    records = dict(zip(("predictions", "references"), case, strict=True))
    position = index % len(records[side])
    records[side][position][field] = value
    if isinstance(value, str) and "\ud800" not in value:  # still text: scored, or an id no longer matches
        try:
            result = generation.compute(**records)
        except ValueError as err:
            assert field == "id" and "must have the same ids, once each" in str(err), err
        else:
            assert 0.0 <= result["score"] <= BLEU_MAX
        return
    if side == "predictions" and field == "utterance":  # a reply: read as empty and counted, never an error
        result = generation.compute(**records)
        assert result["unparseable"] == 1 and 0.0 <= result["score"] <= BLEU_MAX
        return
    kind = "prediction" if side == "predictions" else "reference"
    problem = "holds a lone surrogate '\\ud800'" if isinstance(value, str) else f"must be a string, got {value!r}"
    with pytest.raises(ValueError) as raised:
        generation.compute(**records)
    assert str(raised.value).startswith(f"doc2dial: {kind} {position} "), raised.value
    assert f"{field!r} {problem}" in str(raised.value)


def test_none_where_a_string_is_expected_names_record_and_field(grounding, generation):
    references = [{"id": "q0", "answers": {"text": None, "answer_start": [0]}}]
    with pytest.raises(ValueError, match=r"^doc2dial: reference 0 \(id 'q0'\): 'answers' must be .* got \{'text': None"):
        grounding.compute(predictions=[{"id": "q0", "prediction_text": None, "no_answer_probability": 0.0}], references=references)
    with pytest.raises(ValueError, match=r"^doc2dial: prediction 0 \(id None\): 'id' must be a string, got None$"):
        generation.compute(predictions=[{"id": None, "utterance": "x"}], references=[{"id": "q0", "utterance": "x"}])


# --- damaged copies of the sample files: they build, or fail with SourceDataError naming the file


def damaged_copy(tmp_path, name, data: bytes):
    root = tmp_path / "data"
    shutil.copytree(SAMPLES / "doc2dial", root / "doc2dial")
    (root / RELEASE / name).write_bytes(data)
    return root


def assert_builds_or_fails_cleanly(tmp_path, root, name, config):
    cache = tmp_path / "cache"
    try:
        dsd = build("doc2dial", config, root, cache)
    except SourceDataError as err:
        assert str(err).startswith(str(root / RELEASE / name) + ": record "), err
        assert hostile.half_written(cache) == []
        return "error"
    assert dsd and all(len(ds) >= 0 for ds in dsd.values())
    assert not [p for p in cache.rglob("*") if p.is_dir() and p.name.endswith(".incomplete")]
    return "built"


def original(name):
    return (SAMPLES / RELEASE / name).read_bytes()


def config_for(name, seed):
    if name == "doc2dial_doc.json":
        return ("document_domain", "doc2dial_rc")[seed % 2]
    return ("dialogue_domain", "doc2dial_rc")[seed % 2]


MUTATIONS = [hostile.truncated, hostile.flipped, hostile.deleted_line, hostile.deleted_key, hostile.replaced_value]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
@pytest.mark.parametrize("name", FILES)
def test_mutated_sample_builds_or_fails_with_source_data_error(tmp_path, name, mutation, seed):
    rng = random.Random(f"{name}/{mutation.__name__}/{seed}")
    root = damaged_copy(tmp_path, name, mutation(original(name), rng))
    assert_builds_or_fails_cleanly(tmp_path, root, name, config_for(name, seed))


def plain_utf8(data):
    """Bytes that decode as UTF-8, a byte-order mark allowed (anything else cannot build)."""
    try:
        return bool(data.decode("utf-8"))
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("encoding", ["cp1251", "utf-16", "shift_jis", "latin-1", "utf-32", "utf-8-sig"])
@pytest.mark.parametrize("name", FILES)
def test_wrongly_encoded_sample_builds_or_fails_as_not_utf8_or_json(tmp_path, name, encoding):
    data = original(name).decode("utf-8").encode(encoding, errors="replace")
    root = damaged_copy(tmp_path, name, data)
    outcome = assert_builds_or_fails_cleanly(tmp_path, root, name, config_for(name, 1))
    if not plain_utf8(data):
        assert outcome == "error"


def test_the_sample_document_file_is_not_ascii():
    """So that cp1251, shift_jis and latin-1 copies of it really differ from UTF-8."""
    assert not original("doc2dial_doc.json").isascii()
    assert not plain_utf8(original("doc2dial_doc.json").decode("utf-8").encode("cp1251", errors="replace"))


def test_mutations_reach_the_record_checks(tmp_path):
    """The fuzzing above is not all 'not valid JSON': key deletions and replaced values hit record checks."""
    problems = set()
    for seed in range(12):
        for mutation in (hostile.deleted_key, hostile.replaced_value):
            rng = random.Random(f"doc2dial_doc.json/{mutation.__name__}/{seed}")
            root = damaged_copy(tmp_path / f"{mutation.__name__}{seed}", "doc2dial_doc.json",
                                mutation(original("doc2dial_doc.json"), rng))
            try:
                build("doc2dial", "document_domain", root, tmp_path / f"{mutation.__name__}{seed}" / "cache")
            except SourceDataError as err:
                problems.add(str(err).split(": ")[-1].split(" ")[0])
    assert len(problems) >= 3, problems


@pytest.mark.parametrize("name, damage", [
    ("doc2dial_doc.json", lambda data: data[: len(data) // 2]),
    ("doc2dial_dial_validation.json", lambda data: data.decode("utf-8").encode("utf-16")),
    ("doc2dial_dial_train.json", lambda data: data.replace(b'"turn_id": 2,', b'"turn_id": 99999999999,', 1)),
], ids=["truncated_doc", "utf16_validation", "huge_turn_id"])
def test_failed_export_leaves_no_output(tmp_path, name, damage):
    root = damaged_copy(tmp_path, name, damage(original(name)))
    out = tmp_path / "export" / "doc2dial"
    out.parent.mkdir()
    with pytest.raises(SourceDataError, match=rf"{name}: record "):
        writer.export("doc2dial", out, data_dir=root, cache_dir=str(tmp_path / "cache"))
    assert list(out.parent.iterdir()) == []  # neither the folder nor a .partial-* staging folder
    assert hostile.half_written(tmp_path / "cache") == []


def test_deeply_nested_json_is_a_source_data_error(tmp_path):
    root = damaged_copy(tmp_path, "doc2dial_doc.json", b"[" * 100000 + b"]" * 100000)
    with pytest.raises(SourceDataError, match=r"doc2dial_doc\.json: record -: not valid JSON \(nested too deeply\)"):
        build("doc2dial", "document_domain", root, tmp_path / "cache")


def test_integer_too_long_to_parse_is_a_source_data_error(tmp_path):
    data = original("doc2dial_dial_train.json").replace(b'"turn_id": 1,', b'"turn_id": ' + b"9" * 5000 + b",", 1)
    root = damaged_copy(tmp_path, "doc2dial_dial_train.json", data)
    with pytest.raises(SourceDataError, match=r"doc2dial_dial_train\.json: record -: not valid JSON \(Exceeds"):
        build("doc2dial", "dialogue_domain", root, tmp_path / "cache")


# --- damaged copies of the zip


def sample_zip(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in FILES:
            archive.write(SAMPLES / RELEASE / name, f"{RELEASE}/{name}")
    return path.read_bytes()


@pytest.mark.parametrize("seed", range(40))
def test_damaged_zip_extracts_or_fails_leaving_nothing(tmp_path, seed):
    rng = random.Random(f"zip/{seed}")
    data = sample_zip(tmp_path / "good.zip")
    damaged = hostile.truncated(data, rng) if seed % 4 == 0 else hostile.flipped(data, rng)
    archive = tmp_path / "damaged.zip"
    archive.write_bytes(damaged)
    target = tmp_path / "out"
    try:
        loader.extract_zip(str(archive), str(target), required=loader.FILES.values())
    except SourceDataError as err:
        assert str(err).startswith(f"{archive}: "), err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.zip", "good.zip"]
    else:
        assert all((target / rel).is_file() for rel in loader.FILES.values())


# --- nothing from the data is executed or unpickled

DOC2DIAL_CODE = [
    Path(loader.__file__),
    Path(loader.__file__).with_name("_doc2dial_files.py"),
    *sorted(Path(METRIC_DIR).glob("*.py")),
    Path(registry.__file__).parent / "evaluate_cli" / "doc2dial.py",
]
UNSAFE_MODULES = {"pickle", "_pickle", "cPickle", "dill", "marshal", "shelve", "joblib", "yaml", "subprocess", "runpy", "code"}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__"}  # called by bare name (re.compile is fine)
UNSAFE_METHODS = {"system", "popen", "literal_eval", "load_module", "exec_module"}


def unsafe_uses(path):
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNSAFE_MODULES:
            found.append(node.module)
        elif isinstance(node, ast.Call):
            func = node.func
            unsafe = (isinstance(func, ast.Name) and func.id in UNSAFE_BUILTINS
                      or isinstance(func, ast.Attribute) and func.attr in UNSAFE_METHODS)
            if unsafe:
                found.append(f"{ast.unparse(func)}() at line {node.lineno}")
    return found


def test_scan_finds_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import pickle\nfrom yaml import load\nx = eval('1')\nimport os\nos.system('true')\n"
                     "import re\nre.compile('x')\n", encoding="utf-8")
    assert unsafe_uses(probe) == ["pickle", "yaml", "eval() at line 3", "os.system() at line 5"]


@pytest.mark.parametrize("path", DOC2DIAL_CODE, ids=lambda p: p.name)
def test_no_code_unpickles_or_executes_data(path):
    assert path.is_file()
    assert unsafe_uses(path) == []


def test_parent_titles_are_kept_as_text_never_evaluated(tmp_path):
    payload = "__import__('os').system('touch " + str(tmp_path / "pwned") + "')"
    data = json.loads(original("doc2dial_doc.json"))
    doc = next(iter(next(iter(data["doc_data"].values())).values()))
    span = next(iter(doc["spans"].values()))
    span["parent_titles"] = payload
    root = damaged_copy(tmp_path, "doc2dial_doc.json", json.dumps(data).encode())
    rows = build("doc2dial", "document_domain", root, tmp_path / "cache")["train"]
    assert rows[0]["spans"][0]["parent_titles"] == payload
    assert not (tmp_path / "pwned").exists()


def test_long_values_are_cut_in_error_messages(tmp_path):
    data = json.loads(original("doc2dial_dial_train.json"))
    dialogue = next(iter(next(iter(data["dial_data"].values())).values()))[0]
    dialogue["turns"][0]["references"][0]["sp_id"] = "x" * 100000
    root = damaged_copy(tmp_path, "doc2dial_dial_train.json", json.dumps(data).encode())
    with pytest.raises(SourceDataError, match=r"turn 1: span 'x{76}\.\.\. is not a span of the document$") as raised:
        build("doc2dial", "dialogue_domain", root, tmp_path / "cache")
    assert len(str(raised.value)) < 400


# --- model replies (issue 13): any object, never an error; the harness task and the metric agree

import math  # noqa: E402

from qahub.metrics.doc2dial import squad_v2_scoring as squad  # noqa: E402
from qahub.metrics.doc2dial import task_api  # noqa: E402
from qahub.metrics.doc2dial.replies import bleu_line, one_line, read_reply  # noqa: E402

GROUNDING = task_api.TASKS["qahub_doc2dial_grounding"]
RESPONSE = task_api.TASKS["qahub_doc2dial_response"]
with_surrogate = st.builds(lambda a, s, b: a + s + b, st.text(max_size=10), st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]),
                           st.text(max_size=10))
replies = st.one_of(texts, with_surrogate, st.none(), st.integers(), st.floats(), st.binary(max_size=5),
                    st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
                    st.sampled_from(["NO ANSWER", "no answer.", "**No Answer**", "# Span\n\n- item", '{"span": "x",', "   \n"]))
RC_DOC = {"id": "d_1", "question": "user: Hi", "context": "Turn in your plates. The course is online.",
          "answers": {"text": ["Turn in your plates. "], "answer_start": [0]}}
NO_ANSWER_DOC = {**RC_DOC, "answers": {"text": [], "answer_start": []}}
RESPONSE_DOC = {"id": "d_1", "history": [], "document": "Turn in your plates.", "utterance": "You should turn in your plates."}


def unreadable(reply):
    return not isinstance(reply, str) or any("\ud800" <= ch <= "\udfff" for ch in reply)


@FUZZ
@given(reply=replies)
def test_task_scores_never_raise_and_are_finite(reply):
    for doc in (RC_DOC, NO_ANSWER_DOC):
        score = GROUNDING.score(reply, doc)
        assert set(score) == {"exact", "f1", "unparseable"} and score["unparseable"] == int(unreadable(reply))
        assert score["exact"] in (0.0, 100.0) and 0.0 <= score["f1"] <= 100.0 and math.isfinite(score["f1"])
    item = RESPONSE.score(reply, RESPONSE_DOC)
    assert item["unparseable"] == int(unreadable(reply))
    text, gold = item["bleu"]
    assert isinstance(text, str) and gold == RESPONSE_DOC["utterance"] and (text == "" or not unreadable(reply))
    assert 0.0 <= task_api.corpus_bleu([item["bleu"], item["bleu"]]) <= BLEU_MAX


@FUZZ
@given(prediction=texts, golds=st.lists(texts, max_size=3))
def test_span_scores_are_the_official_per_answer_maxima(prediction, golds):
    """span_scores (normalising the prediction once) = the official script's max of compute_exact / compute_f1."""
    kept = [gold for gold in golds if squad.normalize_answer(gold)] or [""]
    expected = (max(squad.exact_match(g, prediction) for g in kept), max(squad.token_f1(g, prediction) for g in kept))
    assert squad.span_scores(prediction, golds) == expected


pieces = st.sampled_from(list("ab1 .,-'<&\n\t\r\u00a0\u2028") + ["the", "An", "&amp;", "-\n"])
whitespace_heavy = st.lists(pieces, max_size=25).map("".join)


@FUZZ
@given(text=whitespace_heavy, golds=st.lists(whitespace_heavy, max_size=2))
def test_one_line_targets_score_as_the_gold_span(text, golds):
    assert squad.span_scores(one_line(text), golds) == squad.span_scores(text, golds)
    assert squad.span_scores(one_line(text), [text]) == squad.span_scores(text, [text])


@FUZZ
@given(text=whitespace_heavy)
def test_bleu_line_tokenizes_as_the_gold(text):
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenize = Tokenizer13a()
    line = bleu_line(text)
    assert "\n" not in line and tokenize(line.rstrip()) == tokenize(text.rstrip())  # sacreBLEU rstrips, then 13a


@FUZZ
@given(reply=replies)
def test_read_reply_keeps_readable_text_as_it_is(reply):
    text, bad = read_reply(reply)
    assert bad == unreadable(reply) and text == ("" if bad else reply)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(replies, min_size=4, max_size=4))
def test_metric_and_task_agree_on_any_replies(grounding, generation, picks):
    docs = [RC_DOC, NO_ANSWER_DOC, {**RC_DOC, "id": "d_3"}, {**NO_ANSWER_DOC, "id": "d_4"}]
    docs[1] = {**NO_ANSWER_DOC, "id": "d_2"}
    scores = [GROUNDING.score(reply, doc) for reply, doc in zip(picks, docs, strict=True)]
    result = grounding.compute(predictions=[{"id": d["id"], "prediction_text": r} for r, d in zip(picks, docs, strict=True)],
                               references=docs, no_answer_text=task_api.NO_ANSWER)
    for key in ("exact", "f1"):
        assert result[key] == pytest.approx(sum(s[key] for s in scores) / 4, rel=1e-12, abs=1e-12)
    assert result["unparseable"] == sum(s["unparseable"] for s in scores)
    turns = [{**RESPONSE_DOC, "id": f"d_{i}"} for i in range(4)]
    items = [RESPONSE.score(reply, doc) for reply, doc in zip(picks, turns, strict=True)]
    result = generation.compute(predictions=[{"id": t["id"], "utterance": r} for r, t in zip(picks, turns, strict=True)],
                                references=turns)
    assert task_api.corpus_bleu([item["bleu"] for item in items]) == result["score"]
    assert result["unparseable"] == sum(item["unparseable"] for item in items)


@settings(FUZZ, max_examples=25)
@given(case=grounding_case(), index=st.integers(0, 5), side=st.sampled_from(["predictions", "references"]),
       field=st.sampled_from(["id", "prediction_text", "no_answer_probability", "answers", None]), value=junk,
       split=st.integers(0, 6))
def test_add_and_add_batch_give_the_direct_result_or_only_the_documented_error(grounding, case, index, side, field,
                                                                                value, split):
    """Through evaluate's Arrow path (add_batch, then add one by one): the direct compute's numbers, or its error."""
    records = dict(zip(("predictions", "references"), case, strict=True))
    if value is not None or field is not None:
        record = records[side][index % len(records[side])]
        if field is None:
            records[side][index % len(records[side])] = value
        elif field in record:
            record[field] = value
    try:
        expected = grounding.compute(**records)
    except ValueError as err:
        expected = err
    predictions, references = records["predictions"], records["references"]
    try:
        grounding.add_batch(predictions=predictions[:split], references=references[:split])
        for prediction, reference in zip(predictions[split:], references[split:], strict=True):
            grounding.add(prediction=prediction, reference=reference)
        result = grounding.compute()
    except ValueError as err:
        assert isinstance(expected, ValueError) and str(err).startswith("doc2dial"), err
        if grounding.writer is not None:  # rows added before the bad record: compute empties the cache
            with contextlib.suppress(ValueError):
                grounding.compute()
    else:
        assert result == expected
        assert_grounding_ranges(result, len(references))
