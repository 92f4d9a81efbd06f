import argparse
import json
import random
import re

import evaluate
import numpy as np
import pytest

from qahub import registry
from qahub.evaluate_cli import doc2dial as scoring

SAMPLES = registry.samples_dir("doc2dial")
METRIC_DIR = str(registry.metric_dir("doc2dial"))


def ref(qid, *texts):
    return {"id": qid, "answers": {"text": list(texts), "answer_start": [0] * len(texts)}}


def pred(qid, text, prob):
    return {"id": qid, "prediction_text": text, "no_answer_probability": prob}


GOLD = "If your insurance ends, turn in your plates before the coverage stops."
REFERENCES = [ref("a_1", GOLD), ref("b_1", GOLD), ref("c_1"), ref("d_1"), ref("e_1", "Eleven points in 18 months.")]
PREDICTIONS = [
    pred("a_1", "if your insurance ends turn in your plates before coverage stops", 0.1),  # exact after normalising
    pred("b_1", "turn in your plates", 0.2),   # partial overlap
    pred("c_1", "", 0.9),                      # empty prediction for an impossible turn: right
    pred("d_1", "You need a form.", 0.6),      # answer for an impossible turn: wrong
    pred("e_1", "", 0.8),                      # no answer for an answerable turn: wrong
]
# b: gold tokens "if your insurance ends turn in your plates before coverage stops" (11, "the" dropped),
# prediction 4 tokens all in gold: precision 1, recall 4/11, F1 = 8/15
F1_B = 8 / 15


def test_subtask1_perfect(grounding):
    preds = [pred("a_1", GOLD, 0.0), pred("c_1", "", 1.0)]
    result = grounding.compute(predictions=preds, references=[ref("a_1", GOLD), ref("c_1")])
    assert result == {
        "exact": 100.0, "f1": 100.0, "total": 2,
        "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 1,
        "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 1,
        "best_exact": 100.0, "best_exact_thresh": 0.0, "best_f1": 100.0, "best_f1_thresh": 0.0, "unparseable": 0,
    }


def test_subtask1_worked_example(grounding):
    result = grounding.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert result["exact"] == 100.0 * 2 / 5
    assert result["f1"] == pytest.approx(100.0 * (1 + F1_B + 1) / 5, rel=1e-12)
    assert (result["HasAns_exact"], result["HasAns_total"]) == (pytest.approx(100.0 / 3), 3)
    assert result["HasAns_f1"] == pytest.approx(100.0 * (1 + F1_B) / 3, rel=1e-12)
    assert (result["NoAns_exact"], result["NoAns_f1"], result["NoAns_total"]) == (50.0, 50.0, 2)
    # by rising no-answer probability: a +1 (best, 0.1), b +0 / +8/15 (best f1, 0.2), d -1, e 0, c 0; start 2
    assert result["best_exact"] == 100.0 * 3 / 5
    assert result["best_f1"] == pytest.approx(100.0 * (3 + F1_B) / 5, rel=1e-12)
    # thresholds are the float32 values the probabilities are stored as
    assert result["best_exact_thresh"] == 0.10000000149011612
    assert result["best_f1_thresh"] == 0.20000000298023224


def test_subtask1_no_answer_threshold(grounding):
    # above 0.5: d (0.6) becomes a right "no answer"; c is already right, e stays wrong
    result = grounding.compute(predictions=PREDICTIONS, references=REFERENCES, no_answer_threshold=0.5)
    assert result["exact"] == 100.0 * 3 / 5
    assert result["NoAns_exact"] == 100.0


def test_subtask1_join_is_by_id(grounding):
    shuffled = PREDICTIONS[::-1]
    assert grounding.compute(predictions=shuffled, references=REFERENCES)["f1"] == \
        grounding.compute(predictions=PREDICTIONS, references=REFERENCES)["f1"]


@pytest.mark.parametrize("predictions, message", [
    (PREDICTIONS[:4], r"references without a prediction: 'e_1'"),
    (PREDICTIONS + [pred("zz_9", "x", 0.0)], r"predictions whose id is not in the references: 'zz_9'"),
    (PREDICTIONS[:4] + [PREDICTIONS[0]], r"duplicate prediction ids: 'a_1'; references without a prediction: 'e_1'"),
    ([pred("a_2", "x", 0.0)] + PREDICTIONS[1:], r"references without a prediction: 'a_1'; predictions whose id is not in the references: 'a_2'"),
])
def test_wrong_ids_are_listed(grounding, predictions, message):
    with pytest.raises(ValueError, match=r"predictions and references must have the same ids, once each; " + message):
        grounding.compute(predictions=predictions, references=REFERENCES)


def test_unknown_config_is_refused():
    with pytest.raises(KeyError, match="unknown config 'subtask3'"):
        evaluate.load(METRIC_DIR, "subtask3")


def utterances(pairs):
    return ([{"id": qid, "utterance": hyp} for qid, hyp, _ in pairs], [{"id": qid, "utterance": gold} for qid, _, gold in pairs])


def test_subtask2_perfect_and_worked_example(generation):
    preds, refs = utterances([("d_1", "Turn in your plates.", "Turn in your plates.")])
    assert generation.compute(predictions=preds, references=refs)["score"] == pytest.approx(100.0)
    # 13a tokens, 6 each: 1-gram 5/6 ("the" clipped), 2-gram 3/5, 3-gram 2/4, 4-gram 1/3, no brevity penalty
    preds, refs = utterances([("d_1", "the cat sat on the mat", "the cat sat on a mat")])
    result = generation.compute(predictions=preds, references=refs)
    assert result["counts"] == [5, 3, 2, 1] and result["totals"] == [6, 5, 4, 3] and result["bp"] == 1.0
    assert result["score"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25, rel=1e-12)
    assert result["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")


def test_subtask2_without_any_matching_unigram_smooths_as_sacrebleu_1_4_3(generation):
    # precisions 100/(2*4), 100/(4*3), 100/(8*2), 100/(16*1); sacreBLEU 1.4.3 printed 7.986788803078408
    preds, refs = utterances([("d_1", "a b c d", "e f g h")])
    result = generation.compute(predictions=preds, references=refs)
    assert result["precisions"] == [12.5, 100 / 12, 6.25, 6.25]
    assert result["score"] == pytest.approx((12.5 * 100 / 12 * 6.25 * 6.25) ** 0.25, rel=1e-12)
    assert result["score"] == pytest.approx(7.986788803078408, rel=1e-12)


def test_subtask2_pairs_by_id_not_position(generation):
    pairs = [("d_1", "Turn in your plates.", "Turn in your plates first."), ("d_3", "We may suspend it.", "We may suspend your license.")]
    preds, refs = utterances(pairs)
    forward = generation.compute(predictions=preds, references=refs)
    backward = generation.compute(predictions=preds[::-1], references=refs)
    assert forward == backward
    with pytest.raises(ValueError, match=r"duplicate reference ids: 'd_1'"):
        generation.compute(predictions=preds, references=[refs[0], refs[0]])


# --- command line (qahub evaluate doc2dial), references built from the sample release by the builder


def cli_args(tmp_path, **overrides):
    values = {"task": "subtask1", "predictions": str(SAMPLES / "sample_prediction_subtask1.json"), "references": None,
              "split": "validation", "data_dir": str(SAMPLES), "mirror_url": None, "cache_dir": str(tmp_path / "cache"),
              "no_answer_threshold": 1.0, "ignore_missing": False, "config": None}
    return argparse.Namespace(**{**values, **overrides})


# the official scorer's numbers on the sample predictions: the squad_v2 metric of datasets 1.3.0 (the
# official SQuAD v2 script) and sacreBLEU 1.4.3, run on the same rows outside this repository
OFFICIAL_SUBTASK1 = {
    "exact": 42.857142857142854, "f1": 62.28100235596487, "total": 7,
    "HasAns_exact": 33.333333333333336, "HasAns_f1": 55.9945027486257, "HasAns_total": 6,
    "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 1,
    "best_exact": 42.857142857142854, "best_exact_thresh": 0.05000000074505806,
    "best_f1": 62.28100235596487, "best_f1_thresh": 0.4000000059604645, "unparseable": 0,
}
OFFICIAL_SUBTASK2_BLEU = 55.588889824977684


@pytest.mark.quick
def test_cli_subtask1_matches_the_official_scorer(tmp_path):
    result = scoring.run(cli_args(tmp_path))
    signature = result.pop("qahub_signature")  # issue 37: the scorer's settings as used
    assert result == {"task": "subtask1", "references": "doc2dial validation split", **OFFICIAL_SUBTASK1}
    assert (signature["metric"], signature["split"], signature["harness"]) == ("doc2dial", "validation",
                                                                                "qahub evaluate")
    assert "scorer=squad_v2" in signature["scorer"] and "no_answer_threshold=1.0" in signature["scorer"]


@pytest.mark.quick
def test_cli_subtask2_matches_the_official_scorer(tmp_path):
    result = scoring.run(cli_args(tmp_path, task="subtask2", predictions=str(SAMPLES / "sample_prediction_subtask2.json")))
    assert result["score"] == OFFICIAL_SUBTASK2_BLEU and result["total"] == 8


def write_subset(tmp_path, count):
    subset = json.loads((SAMPLES / "sample_prediction_subtask1.json").read_text(encoding="utf-8"))[:count]
    path = tmp_path / "subset.json"
    path.write_text(json.dumps(subset), encoding="utf-8")
    return path


def test_cli_missing_predictions_against_the_split_are_an_error_listing_them(tmp_path):
    path = write_subset(tmp_path, 2)
    # the other five doc2dial_rc validation rows of the sample release, in dataset order
    missing = ("'bc38627ff52a6287de58ebef8f7409bd_6', 'bc38627ff52a6287de58ebef8f7409bd_8', "
               "'31df469f84443357e17ef3f80b6c099e_1', '2fcb88edbbe5bf78ecf05837d44e03b4_2', "
               "'2fcb88edbbe5bf78ecf05837d44e03b4_4'")
    with pytest.raises(ValueError, match=re.escape(f"against doc2dial validation split: doc2dial: predictions and "
                                                   f"references must have the same ids, once each; references without "
                                                   f"a prediction: {missing} (--ignore-missing")):
        scoring.run(cli_args(tmp_path, predictions=str(path)))


def test_cli_ignore_missing_scores_the_predicted_subset_like_the_official_scorer(tmp_path):
    path = write_subset(tmp_path, 2)
    result = scoring.run(cli_args(tmp_path, predictions=str(path), ignore_missing=True))
    # the first two sample predictions: one exact, one partial (7 of 13 gold tokens, precision 1: F1 = 14/20)
    assert (result["total"], result["exact"], result["missing_ignored"]) == (2, 50.0, 5)
    assert result["f1"] == pytest.approx(100.0 * (1 + 14 / 20) / 2, rel=1e-12)


def test_cli_reference_file_and_errors(tmp_path):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps([{"id": r["id"], "answers": r["answers"]} for r in REFERENCES]), encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(PREDICTIONS), encoding="utf-8")
    result = scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None))
    assert result["exact"] == 40.0 and result["references"] == str(refs)
    # no_answer_probability may be left out; prediction_text may not
    preds.write_text(json.dumps(PREDICTIONS[:2] + [{"id": "c_1", "prediction_text": ""}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"references without a prediction: 'd_1', 'e_1'"):
        scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None))
    preds.write_text(json.dumps(PREDICTIONS[:2] + [{"id": "c_1", "no_answer_probability": 0.5}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"preds\.json: record 2: no reply \(a field 'prediction_text'\)"):
        scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None))
    preds.write_text(json.dumps(PREDICTIONS + [pred("nope_1", "x", 0.5)]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"scoring .*preds\.json against .*refs\.json: .*not in the references: 'nope_1'"):
        scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None))


def test_cli_unknown_id_against_the_split(tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"id": "0000_1", "utterance": "hi"}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"against doc2dial validation split: .*not in the references: '0000_1'"):
        scoring.run(cli_args(tmp_path, task="subtask2", predictions=str(preds)))


def test_random_inputs_keep_squad_v2_invariants(grounding):
    rng = random.Random(3)
    words = ["the", "DMV", "plates,", "renew", "a", "café", "10", "%"]
    for _ in range(30):
        n = rng.randint(1, 6)
        refs = [ref(f"q_{i}", *[" ".join(rng.choices(words, k=rng.randint(1, 4)))] * rng.randint(0, 1)) for i in range(n)]
        preds = [pred(f"q_{i}", " ".join(rng.choices(words, k=rng.randint(0, 3))), rng.random()) for i in range(n)]
        result = grounding.compute(predictions=preds, references=refs)
        assert 0.0 <= result["exact"] <= result["f1"] <= 100.0
        stored = {0.0} | {float(np.float32(p["no_answer_probability"])) for p in preds}
        assert result["best_exact_thresh"] in stored and result["best_f1_thresh"] in stored
        assert result.get("HasAns_total", 0) + result.get("NoAns_total", 0) == n


# --- input checks: one ValueError naming the record, its id and the field


@pytest.mark.parametrize("predictions, message", [
    ([pred("a_1", GOLD, None)], r"prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number \(it is stored as float32\), got None"),
    ([pred("a_1", GOLD, float("nan"))], r"prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number .* got nan"),
    ([pred("a_1", GOLD, 1e39)], r"prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number .* got 1e\+39"),
    ([pred("a_1", GOLD, "0.5")], r"prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number .* got '0\.5'"),
    ([{"id": "a_1", "no_answer_probability": 0.5}], r"prediction 0 \(id 'a_1'\): missing key\(s\) prediction_text"),
    ([pred(None, GOLD, 0.0)], r"prediction 0 \(id None\): 'id' must be a string, got None"),
    (["a_1"], r"prediction 0: expected a dict with id, prediction_text, no_answer_probability, got str"),
])
def test_subtask1_bad_prediction_fields_are_named(grounding, predictions, message):
    with pytest.raises(ValueError, match="doc2dial: " + message):
        grounding.compute(predictions=predictions, references=[ref("a_1", GOLD)])


@pytest.mark.parametrize("answers, message", [
    (None, r"'answers' must be \{\"text\": \[str, \.\.\.\], \"answer_start\": \[int, \.\.\.\]\} of equal lengths, got None"),
    ({"text": ["x"], "answer_start": ["abc"]}, r"'answers' answer_start must hold int32 integers, got 'abc'"),
    ({"text": ["x"], "answer_start": []}, r"'answers' must be .* got 1 texts and 0 starts"),
    ({"text": [None], "answer_start": [0]}, r"'answers' text must be a string, got None"),
])
def test_subtask1_bad_reference_answers_are_named(grounding, answers, message):
    with pytest.raises(ValueError, match=r"doc2dial: reference 0 \(id 'a_1'\): " + message):
        grounding.compute(predictions=[pred("a_1", GOLD, 0.0)], references=[{"id": "a_1", "answers": answers}])


def test_subtask1_accepts_doc2dial_rc_rows_as_references(grounding, tmp_path):
    from qahub.testing import build

    rows = build("doc2dial", "doc2dial_rc", SAMPLES, tmp_path)["validation"].to_list()
    preds = [pred(row["id"], (row["answers"]["text"] or [""])[0], 0.0) for row in rows]
    result = grounding.compute(predictions=preds, references=rows)
    assert (result["exact"], result["f1"], result["total"]) == (100.0, 100.0, 7)
    preds[0] = pred(rows[0]["id"], "", 0.0)  # the other columns are really ignored, not the answers
    assert grounding.compute(predictions=preds, references=rows)["HasAns_exact"] == 100.0 * 5 / 6


@pytest.mark.parametrize("kwargs, message", [
    ({"no_answer_threshold": float("nan")}, r"doc2dial subtask1: no_answer_threshold must be a finite number, got nan"),
    ({"no_answer_threshold": None}, r"doc2dial subtask1: no_answer_threshold must be a finite number, got None"),
    ({"threshold": 0.5}, r"doc2dial subtask1: unknown keyword argument\(s\) threshold \(accepted: no_answer_threshold, no_answer_text, ignore_missing\)"),
])
def test_subtask1_bad_options(grounding, kwargs, message):
    with pytest.raises(ValueError, match=message):
        grounding.compute(predictions=[pred("a_1", GOLD, 0.0)], references=[ref("a_1", GOLD)], **kwargs)


def test_subtask2_bad_fields_and_options(generation):
    preds, refs = utterances([("d_1", "Turn in your plates.", "Turn in your plates.")])
    with pytest.raises(ValueError, match=r"doc2dial subtask2: unknown keyword argument\(s\) no_answer_threshold \(accepted: ignore_missing\)"):
        generation.compute(predictions=preds, references=refs, no_answer_threshold=0.3)
    with pytest.raises(ValueError, match=r"doc2dial: prediction 0 \(id 'd_1'\): missing key\(s\) utterance"):
        generation.compute(predictions=[{"id": "d_1"}], references=refs)
    with pytest.raises(ValueError, match=r"doc2dial: reference 0 \(id 'd_1'\): 'utterance' must be a string, got None"):
        generation.compute(predictions=preds, references=[{"id": "d_1", "utterance": None}])
    extra = [{**preds[0], "model": "bart"}]  # extra keys are ignored
    assert generation.compute(predictions=extra, references=refs)["score"] == pytest.approx(100.0)


def test_add_batch_checks_fields_too(grounding):
    with pytest.raises(ValueError, match=r"doc2dial: prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite"):
        grounding.add_batch(predictions=[pred("a_1", GOLD, None)], references=[ref("a_1", GOLD)])
    grounding.add(prediction=pred("a_1", GOLD, 0.5), reference={**ref("a_1", GOLD), "title": "ignored"})
    assert grounding.compute()["exact"] == 100.0


def test_subtask2_signature_says_when_the_1_4_3_rule_is_used(generation):
    preds, refs = utterances([("d_1", "a b c d", "e f g h")])
    result = generation.compute(predictions=preds, references=refs)
    assert result["zero_match_1_4_3"] is True
    assert result["signature"].endswith("|smooth:exp|version:" + __import__("sacrebleu").__version__
                                        + "|zero-match:sacrebleu-1.4.3-exp-smoothing")
    preds, refs = utterances([("d_1", "a b c d", "a b c e")])
    result = generation.compute(predictions=preds, references=refs)
    assert result["zero_match_1_4_3"] is False and "zero-match" not in result["signature"]


def test_docstring_example_runs(monkeypatch):
    import doctest

    monkeypatch.chdir(registry.metric_dir("doc2dial").parent)  # evaluate.load("doc2dial") finds ./doc2dial/
    text = evaluate.load("doc2dial", "subtask1").info.inputs_description
    test = doctest.DocTestParser().get_doctest(text, {}, "doc2dial", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert "+SKIP" not in text and runner.summarize(verbose=False) == (0, len(test.examples))


# --- command line: reference-file and option errors name the file and the record


def test_cli_reference_file_element_types_and_non_finite_probabilities(tmp_path):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps([{"id": "a_1", "answers": {"text": ["x"], "answer_start": ["abc"]}}]), encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([pred("a_1", "x", 0.5)]), encoding="utf-8")
    args = cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None)
    with pytest.raises(ValueError, match=r"against .*refs\.json: doc2dial: reference 0 \(id 'a_1'\): 'answers' answer_start must hold int32 integers, got 'abc'"):
        scoring.run(args)
    refs.write_text(json.dumps([ref("a_1", "x")]), encoding="utf-8")
    for literal in ("NaN", "1e400", "-Infinity"):
        preds.write_text(f'[{{"id": "a_1", "prediction_text": "x", "no_answer_probability": {literal}}}]', encoding="utf-8")
        with pytest.raises(ValueError, match=r"scoring .*preds\.json against .*: doc2dial: prediction 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number"):
            scoring.run(args)
    preds.write_text(json.dumps([pred("a_1", "x", 0.5)]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"scoring .*preds\.json against .*refs\.json: doc2dial subtask1: no_answer_threshold must be a finite number, got inf"):
        scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None, no_answer_threshold=float("inf")))
    result = scoring.run(args)
    assert json.loads(json.dumps(result, allow_nan=False)) == result


# --- the corpus's rows as references, exactly as load_dataset yields them (issue 13)

import math  # noqa: E402

import datasets  # noqa: E402
from qahub.metrics.doc2dial import task_api  # noqa: E402
from qahub.metrics.doc2dial.dialogues import agent_turn_references  # noqa: E402

from qahub.export import writer  # noqa: E402

VALIDATION_AGENT_IDS = [
    "bc38627ff52a6287de58ebef8f7409bd_1", "bc38627ff52a6287de58ebef8f7409bd_3", "bc38627ff52a6287de58ebef8f7409bd_4",
    "bc38627ff52a6287de58ebef8f7409bd_6", "bc38627ff52a6287de58ebef8f7409bd_8", "31df469f84443357e17ef3f80b6c099e_1",
    "2fcb88edbbe5bf78ecf05837d44e03b4_2", "2fcb88edbbe5bf78ecf05837d44e03b4_4",
]
# replies a model really gives; the last four cannot be read as text
GARBAGE = ["", "   \n\t ", "x" * 10000, "# Answer\n\n**Turn in** your `plates`", '{"span": "unterminated', "\ud800",
           "ok \udfff", None, 42, ["a list"]]
UNREADABLE = 5


@pytest.fixture(scope="module")
def exported(sample_exports):
    """The sample release exported as `qahub export` writes it (the folder load_dataset reads; the session's)."""
    return str(sample_exports["doc2dial"])


def rows_of(location, config, split="validation"):
    return datasets.load_dataset(location, config, split=split)


def oracle_spans(rows):
    return [{"id": row["id"], "prediction_text": (row["answers"]["text"] or [""])[0]} for row in rows]


def test_subtask1_takes_a_dataset_of_doc2dial_rc_rows(grounding, exported):
    rows = rows_of(exported, "doc2dial_rc")
    assert isinstance(rows, datasets.Dataset)
    result = grounding.compute(predictions=oracle_spans(rows), references=rows)
    assert (result["exact"], result["f1"], result["total"], result["unparseable"]) == (100.0, 100.0, 7, 0)
    assert (result["HasAns_total"], result["NoAns_total"]) == (6, 1)
    # predictions may be a Dataset too; no_answer_probability may be left out (0.0)
    predictions = datasets.Dataset.from_list(oracle_spans(rows)[1:] + [{"id": rows[0]["id"], "prediction_text": ""}])
    assert grounding.compute(predictions=predictions, references=rows)["HasAns_exact"] == 100.0 * 5 / 6


def test_subtask2_takes_dialogue_domain_rows_as_they_are(generation, exported):
    dialogues = rows_of(exported, "dialogue_domain")
    predictions = json.loads((SAMPLES / "sample_prediction_subtask2.json").read_text(encoding="utf-8"))
    assert [r["id"] for d in dialogues for r in agent_turn_references(d)] == VALIDATION_AGENT_IDS
    for references in (dialogues, dialogues.to_list(), [r for d in dialogues for r in agent_turn_references(d)]):
        result = generation.compute(predictions=predictions, references=references)
        assert (result["score"], result["total"], result["unparseable"]) == (OFFICIAL_SUBTASK2_BLEU, 8, 0)
    # the harness task's per-turn docs (with history and document) are references too
    docs = task_api.response_docs(dialogues, exported)
    assert generation.compute(predictions=predictions, references=docs)["score"] == OFFICIAL_SUBTASK2_BLEU


def dialogue(*turns, dial_id="d1"):
    return {"dial_id": dial_id, "doc_id": "doc", "domain": "dmv", "turns": [
        {"turn_id": n, "role": role, "da": "x", "references": [], "utterance": text} for n, role, text in turns]}


def test_dialogue_rows_expand_to_agent_turns_named_by_the_turn_before():
    row = dialogue((1, "user", "Hi"), (2, "agent", "Hello."), (3, "agent", "Anything else?"), (5, "user", "Bye"))
    assert agent_turn_references(row) == [{"id": "d1_1", "utterance": "Hello."}, {"id": "d1_2", "utterance": "Anything else?"}]


def spoiled(change):
    row = dialogue((1, "user", "Hi"), (2, "agent", "Hello there, how can I help?"))
    change(row)
    return row


@pytest.mark.parametrize("change, message", [
    (lambda row: row.pop("turns"), r"reference 0 \(dialogue 'd1'\): 'turns' must be a list of turns, got None"),
    (lambda row: row.update(dial_id=None), r"reference 0: 'dial_id' must be a string, got None"),
    (lambda row: row["turns"][1].pop("utterance"), r"reference 0 \(dialogue 'd1'\): turn 1: missing key\(s\) utterance"),
    (lambda row: row["turns"][1].update(utterance=None), r"reference 0 \(dialogue 'd1'\): turn 1 \(turn_id 2\): 'utterance' must be a string, got None"),
    (lambda row: row["turns"][0].update(turn_id="1"), r"reference 0 \(dialogue 'd1'\): turn 0: 'turn_id' must be an integer, got '1'"),
    (lambda row: row["turns"].append("turn"), r"reference 0 \(dialogue 'd1'\): turn 2: expected a dict with turn_id, role, utterance, got str"),
    (lambda row: row["turns"][1].update(utterance="bad \ud800"), r"reference 0 \(id 'd1_1'\): 'utterance' holds a lone surrogate"),
])
def test_malformed_dialogue_rows_raise_naming_dialogue_and_turn(generation, change, message):
    with pytest.raises(ValueError, match="^doc2dial: " + message):
        generation.compute(predictions=[{"id": "d1_1", "utterance": "Hello."}], references=[spoiled(change)])


def test_add_takes_one_agent_turn(generation):
    row = dialogue((1, "user", "Hi"), (2, "agent", "Hello."), (3, "user", "Plates?"), (4, "agent", "Turn them in."))
    with pytest.raises(ValueError, match=r"add\(\) takes one per-turn reference, got a dialogue with 2 agent turns"):
        generation.add(prediction={"id": "d1_1", "utterance": "Hello."}, reference=row)


# --- replies never raise: unreadable text is counted and scored as empty


def test_subtask1_garbage_predictions_are_counted_and_scored_as_empty(grounding, exported):
    rows = rows_of(exported, "doc2dial_rc")  # row 2 (bc38..._6) is the turn without grounding
    predictions = [{"id": row["id"], "prediction_text": GARBAGE[i]} for i, row in enumerate(rows)]
    result = grounding.compute(predictions=predictions, references=rows)
    assert all(math.isfinite(v) for v in result.values())
    # nothing overlaps a gold span; "x" * 10000 answers the turn without grounding: all wrong
    assert (result["exact"], result["f1"], result["unparseable"]) == (0.0, 0.0, 2)
    predictions = [{"id": row["id"], "prediction_text": GARBAGE[-1 - i]} for i, row in enumerate(rows)]
    result = grounding.compute(predictions=predictions, references=rows)
    # unreadable: ["a list"], 42, None, "ok \udfff", "\ud800"; the last, on the turn without grounding, is a
    # right (empty) answer there
    assert (result["NoAns_exact"], result["HasAns_exact"], result["unparseable"]) == (100.0, 0.0, 5)
    assert result["exact"] == pytest.approx(100.0 / 7)


def test_subtask2_garbage_predictions_are_counted_and_scored_as_empty(generation, exported):
    dialogues = rows_of(exported, "dialogue_domain")
    predictions = [{"id": qid, "utterance": GARBAGE[i]} for i, qid in enumerate(VALIDATION_AGENT_IDS)]
    result = generation.compute(predictions=predictions, references=dialogues)
    assert result["unparseable"] == 3 and result["counts"][0] == 0 and result["zero_match_1_4_3"] is True
    assert 0.0 <= result["score"] < 1.0 and all(math.isfinite(p) for p in result["precisions"])


def test_no_answer_text_reads_harness_replies(grounding):
    references = [ref("a_1", GOLD), ref("c_1")]
    predictions = [{"id": "a_1", "prediction_text": GOLD}, {"id": "c_1", "prediction_text": "**No answer.**"}]
    assert grounding.compute(predictions=predictions, references=references)["NoAns_exact"] == 0.0
    assert grounding.compute(predictions=predictions, references=references, no_answer_text="NO ANSWER")["exact"] == 100.0
    with pytest.raises(ValueError, match=r"no_answer_text must be a string or None, got 3"):
        grounding.compute(predictions=predictions, references=references, no_answer_text=3)


def test_cli_counts_unreadable_predictions(tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"id": "bc38627ff52a6287de58ebef8f7409bd_1", "prediction_text": None},
                                 {"id": "bc38627ff52a6287de58ebef8f7409bd_6", "prediction_text": "No answer."}]))
    result = scoring.run(cli_args(tmp_path, predictions=str(preds), ignore_missing=True, no_answer_text="NO ANSWER"))
    assert (result["total"], result["missing_ignored"], result["unparseable"], result["exact"]) == (2, 5, 1, 50.0)
    preds.write_text(json.dumps([{"id": qid, "utterance": 7} for qid in VALIDATION_AGENT_IDS[:3]]))
    result = scoring.run(cli_args(tmp_path, task="subtask2", predictions=str(preds), ignore_missing=True))
    assert (result["total"], result["missing_ignored"], result["unparseable"], result["score"]) == (3, 5, 3, 0.0)


# --- lm-evaluation-harness tasks (task_api): the same scoring code as the metric


GROUNDING = task_api.TASKS["qahub_doc2dial_grounding"]
RESPONSE = task_api.TASKS["qahub_doc2dial_response"]


def test_task_table_follows_the_contract():
    assert sorted(task_api.TASKS) == ["qahub_doc2dial_grounding", "qahub_doc2dial_response"]
    assert (GROUNDING.configs, GROUNDING.splits, GROUNDING.fewshot_split, GROUNDING.docs) == \
        (("doc2dial_rc",), ("validation", "train"), "train", None)
    assert (RESPONSE.configs, RESPONSE.splits, RESPONSE.fewshot_split) == (("dialogue_domain",), ("validation", "train"), "train")
    assert GROUNDING.metrics == {"exact": ("mean", True), "f1": ("mean", True), "unparseable": ("mean", False)}
    assert RESPONSE.metrics == {"bleu": (task_api.corpus_bleu, True), "unparseable": ("mean", False)}
    for spec in (GROUNDING, RESPONSE):
        assert spec.until == ("\n\n",) and spec.max_gen_toks > 0
        assert all(callable(getattr(spec, key)) for key in ("prompt", "target", "score"))


def task_docs(exported, task, split):
    if task is GROUNDING:
        return rows_of(exported, "doc2dial_rc", split)
    return task_api.response_docs(rows_of(exported, "dialogue_domain", split), exported)


@pytest.mark.parametrize("split", ["validation", "train"])
def test_oracle_replies_score_the_top(exported, split):
    docs = task_docs(exported, GROUNDING, split)
    scores = [GROUNDING.score(GROUNDING.target(doc), doc) for doc in docs]
    assert [s["exact"] for s in scores] == [100.0] * len(docs) and [s["f1"] for s in scores] == [100.0] * len(docs)
    assert sum(s["unparseable"] for s in scores) == 0
    docs = task_docs(exported, RESPONSE, split)
    scores = [RESPONSE.score(RESPONSE.target(doc), doc) for doc in docs]
    assert task_api.corpus_bleu([s["bleu"] for s in scores]) == pytest.approx(100.0, rel=1e-12)
    for task in (GROUNDING, RESPONSE):
        for doc in task_docs(exported, task, split):
            assert "\n" not in task.target(doc) and task.target(doc).strip()


def test_garbage_replies_give_finite_low_scores_and_are_counted(exported):
    docs = task_docs(exported, GROUNDING, "validation")
    scores = [GROUNDING.score(reply, doc) for doc in docs for reply in GARBAGE]
    assert all(math.isfinite(v) for s in scores for v in s.values())
    assert sum(s["unparseable"] for s in scores) == UNREADABLE * len(docs)
    # only the empty, blank and unreadable replies on the turn without grounding are right (an empty span)
    assert sum(s["exact"] for s in scores) / len(scores) == pytest.approx(100.0 * (2 + UNREADABLE) / len(scores))
    docs = task_docs(exported, RESPONSE, "validation")
    scores = [RESPONSE.score(reply, doc) for doc in docs for reply in GARBAGE]
    assert sum(s["unparseable"] for s in scores) == UNREADABLE * len(docs)
    bleu = task_api.corpus_bleu([s["bleu"] for s in scores])
    assert math.isfinite(bleu) and 0.0 <= bleu < 5.0
    assert task_api.corpus_bleu([]) == 0.0


def test_the_metric_and_the_task_give_the_same_numbers(grounding, generation, exported):
    rows = rows_of(exported, "doc2dial_rc")
    replies = [GROUNDING.target(rows[0]), "turn in your plates", "NO ANSWER", "No answer.", None, "", "\ud800"]
    scores = [GROUNDING.score(reply, row) for reply, row in zip(replies, rows, strict=True)]
    result = grounding.compute(predictions=[{"id": row["id"], "prediction_text": reply} for reply, row in zip(replies, rows, strict=True)],
                               references=rows, no_answer_text=task_api.NO_ANSWER)
    for key in ("exact", "f1"):
        assert result[key] == pytest.approx(sum(s[key] for s in scores) / len(scores), rel=1e-12)
    assert result["unparseable"] == sum(s["unparseable"] for s in scores) == 2
    docs = task_docs(exported, RESPONSE, "validation")
    replies = ["We may suspend it.", None, "You should turn in your plates.", "", "x" * 300, "Yes.", "\udfff", "Recertify each year."]
    items = [RESPONSE.score(reply, doc) for reply, doc in zip(replies, docs, strict=True)]
    result = generation.compute(predictions=[{"id": doc["id"], "utterance": reply} for reply, doc in zip(replies, docs, strict=True)],
                                references=rows_of(exported, "dialogue_domain"))
    assert task_api.corpus_bleu([item["bleu"] for item in items]) == result["score"]
    assert result["unparseable"] == sum(item["unparseable"] for item in items) == 2


def test_grounding_prompt_shows_the_document_and_the_history_oldest_first(exported):
    row = rows_of(exported, "doc2dial_rc")[3]
    prompt = GROUNDING.prompt(row)
    assert prompt.startswith("Below are a document and a dialogue") and prompt.endswith("reply NO ANSWER.\nSpan:")
    assert "Document:\nTop 5 DMV Mistakes and How to Avoid Them\n1. Forgetting to change your address\n" in prompt
    assert ("Dialogue (oldest turn first):\nuser: My car insurance ends next week, what should I do?\n"
            "agent: You should turn in your plates before the coverage stops.\nuser: What happens if I don't?\n") in prompt
    assert "\nuser: Is there a course to reduce points?\n\nReply with that span" in prompt
    assert "earlier turns" not in prompt and "\n\n\n" not in prompt


def test_a_history_cut_by_the_corpus_is_said_so(exported):
    row = rows_of(exported, "doc2dial_rc", "train")[3]  # its question is the 100-word maximum
    assert len(row["question"].split()) == 100
    assert "Dialogue (oldest turn first):\n(earlier turns are not shown)\n" in GROUNDING.prompt(row)


def test_long_documents_are_cut_and_still_scored(exported, monkeypatch):
    row = rows_of(exported, "doc2dial_rc")[3]  # its gold span starts at character 1428 of 2623
    monkeypatch.setattr(task_api, "DOC_CHARS", 300)
    prompt = GROUNDING.prompt(row)
    assert "Document (only its first 300 characters; the rest is cut):\n" in prompt
    shown = prompt.split("the rest is cut):\n")[1].split("\n\nDialogue")[0]
    assert len(shown) == 300 and "defensive driving" not in shown
    assert GROUNDING.score(GROUNDING.target(row), row)["exact"] == 100.0
    assert GROUNDING.score("NO ANSWER", row)["exact"] == 0.0
    monkeypatch.undo()
    assert "Document:\n" in GROUNDING.prompt(row) and task_api.DOC_CHARS == 6000
    long_row = {**row, "context": "word " * 2000}
    assert f"only its first {task_api.DOC_CHARS} characters" in GROUNDING.prompt(long_row)


def test_response_docs_are_agent_turns_with_their_document(exported):
    docs = task_docs(exported, RESPONSE, "validation")
    assert docs["id"] == VALIDATION_AGENT_IDS
    documents = {d["doc_id"]: d["doc_text"] for d in rows_of(exported, "document_domain", "train")}
    assert all(doc["document"] == documents[doc["doc_id"]] for doc in docs)
    third = docs[2]  # agent turn 5 of bc38...: an agent turn right after an agent turn
    assert (third["turn_id"], third["utterance"]) == (5, "We would also mail you an inquiry letter.")
    assert [t["role"] for t in third["history"]] == ["user", "agent", "user", "agent"]
    prompt = RESPONSE.prompt(third)
    assert prompt.endswith("user: What happens if I don't?\nagent: We may suspend your registration and your driver "
                           "license.\n\nWrite the agent's next turn, on one line, without the \"agent:\" prefix, and nothing else.\nagent:")
    assert RESPONSE.target(third) == "We would also mail you an inquiry letter."


def test_response_docs_name_a_missing_document(exported):
    rows = [dialogue((1, "user", "Hi"), (2, "agent", "Hello."), dial_id="zz")]
    rows[0]["doc_id"] = "No such document#0"
    with pytest.raises(ValueError, match=r"dialogue_domain row 0 \(dialogue 'zz'\): document 'No such document#0' is not in "
                                         r"the document_domain config of "):
        task_api.response_docs(datasets.Dataset.from_list(rows), exported)


def test_response_target_is_one_line_and_tokenizes_as_the_gold():
    doc = {"utterance": "Renew it on-\nline.\n\nThen  wait\tfor the  letter -\n"}
    target = RESPONSE.target(doc)
    assert target == "Renew it online. Then wait for the letter -"
    assert task_api.corpus_bleu([RESPONSE.score(target, doc)["bleu"]]) == pytest.approx(100.0, rel=1e-12)


@pytest.mark.quick
def test_cli_scores_the_sample_harness_replies(tmp_path):
    """The demo's third command: replies as the grounding task asks for them (no probabilities, NO ANSWER)."""
    args = cli_args(tmp_path, predictions=str(SAMPLES / "sample_replies_subtask1.json"), no_answer_text="NO ANSWER")
    result = scoring.run(args)
    # exact: rows 1, 3 (NO ANSWER on the turn without grounding) and 7; "No answer." on answerable row 5 and the
    # null (unparseable) on row 6 are empty answers; row 2: 6 of 13 gold tokens (F1 12/19); row 4: 9 of 19 (9/14)
    assert (result["exact"], result["unparseable"], result["NoAns_exact"]) == (100.0 * 3 / 7, 1, 100.0)
    assert result["f1"] == pytest.approx(100.0 * (3 + 12 / 19 + 9 / 14) / 7, rel=1e-12)
    demo = json.loads((SAMPLES / "demo.json").read_text(encoding="utf-8"))["evaluate"]
    assert demo[2][-2:] == ["--no-answer-text", "NO ANSWER"] and demo[2][4].endswith("sample_replies_subtask1.json")


def test_response_docs_need_the_document_config(tmp_path):
    folder = tmp_path / "doc2dial"
    writer.export("doc2dial", folder, configs=["dialogue_domain"], data_dir=SAMPLES, cache_dir=str(tmp_path / "cache"), sample=True)
    with pytest.raises(ValueError, match=r"doc2dial: .*doc2dial: has no document_domain config; the response task reads"):
        task_api.response_docs(rows_of(str(folder), "dialogue_domain"), str(folder))


# --- round 2 (issues 14, 15): one check, a direct compute, references from rows, nothing scored is an error

import importlib  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

import sacrebleu  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qahub import cli  # noqa: E402


def metric_module(metric, name):
    """A helper module of the metric as evaluate loaded it (beside its main file)."""
    return importlib.import_module(type(metric).__module__.rsplit(".", 1)[0] + "." + name)


def test_compute_checks_each_record_once_and_skips_the_arrow_cache(grounding, monkeypatch):
    inputs = metric_module(grounding, "inputs")
    calls = {"_clean": 0, "check_ids": 0}
    for name in calls:
        original = getattr(inputs, name)
        monkeypatch.setattr(inputs, name, lambda *a, _f=original, _n=name, **k: (calls.__setitem__(_n, calls[_n] + 1), _f(*a, **k))[1])
    monkeypatch.setattr(type(grounding).__mro__[1], "add_batch", lambda *a, **k: pytest.fail("went through Arrow"))
    result = grounding.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert calls == {"_clean": 10, "check_ids": 1}  # 5 predictions + 5 references, one id join
    assert (result["exact"], result["total"]) == (40.0, 5)


def test_direct_compute_equals_evaluates_add_batch_path(grounding, generation):
    direct = grounding.compute(predictions=PREDICTIONS, references=REFERENCES, no_answer_threshold=0.5)
    grounding.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    for p, r in zip(PREDICTIONS[2:], REFERENCES[2:], strict=True):
        grounding.add(prediction=p, reference=r)
    assert grounding.compute(no_answer_threshold=0.5) == direct
    assert direct["exact"] == 60.0  # d_1 (0.6) and e_1 (0.8) now count as no-answers: d_1 right, e_1 wrong
    preds, refs = utterances([("d_1", "the cat sat on the mat", "the cat sat on a mat"), ("d_2", "hello there", "hello")])
    alone = generation.compute(predictions=preds, references=refs)
    generation.add_batch(predictions=preds, references=refs)
    assert generation.compute() == alone


@pytest.mark.parametrize("call, message", [
    (lambda m: m.compute(predictions=[], references=[]), "doc2dial: nothing to score: no predictions and no references"),
    (lambda m: m.compute(), "doc2dial: nothing to score: no predictions and no references were given or added"),
    (lambda m: m.compute(predictions=[], references=REFERENCES, ignore_missing=True),
     r"doc2dial: nothing to score: no predictions \(all 5 references ignored as missing\)"),
    (lambda m: m.compute(predictions=PREDICTIONS, references=REFERENCES, ignore_missing="yes"),
     "ignore_missing must be True or False, got 'yes'"),
])
def test_nothing_scored_is_a_value_error(grounding, call, message):
    with pytest.raises(ValueError, match=message):
        call(grounding)


def test_ignore_missing_filters_the_references_as_the_official_scorer(grounding, generation):
    result = grounding.compute(predictions=PREDICTIONS[:2], references=REFERENCES, ignore_missing=True)
    assert (result["total"], result["missing_ignored"], result["exact"]) == (2, 3, 50.0)
    assert "missing_ignored" not in grounding.compute(predictions=PREDICTIONS, references=REFERENCES)
    dialogue = {"dial_id": "d1", "turns": [
        {"turn_id": 1, "role": "user", "utterance": "Plates?"}, {"turn_id": 2, "role": "agent", "utterance": "Turn them in."},
        {"turn_id": 3, "role": "user", "utterance": "Why?"}, {"turn_id": 4, "role": "agent", "utterance": "The law says so."}]}
    result = generation.compute(predictions=[{"id": "d1_3", "utterance": "The law says so."}], references=[dialogue],
                                ignore_missing=True)
    assert (result["total"], result["missing_ignored"]) == (1, 1) and result["score"] == pytest.approx(100.0)


words = st.sampled_from(["a", "b", "the", "cat", "a.", "&amp;", "-", "x-\n", "<skipped>", "'s", "1,000", "é", "z!", "\t"])
lines = st.lists(words, max_size=9).map(" ".join) | st.text(max_size=20)


@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(lines, lines), min_size=1, max_size=4))
def test_bleu_statistics_are_sacrebleus(generation, pairs):
    """The metric counts n-grams itself (1.6x faster): the same counts, totals, lengths and score as sacreBLEU."""
    bleu = metric_module(generation, "bleu_scoring")
    hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
    ours, theirs = bleu.corpus_sacrebleu(hyps, refs), sacrebleu.corpus_bleu(hyps, [refs])
    assert (ours["counts"], ours["totals"], ours["sys_len"], ours["ref_len"]) == (
        theirs.counts, theirs.totals, theirs.sys_len, theirs.ref_len)
    assert ours["zero_match_1_4_3"] or (ours["score"], ours["precisions"], ours["bp"]) == (
        theirs.score, theirs.precisions, theirs.bp)
    assert ours["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")


# --- the command line: references from an export or a build, predictions read strictly


def evaluate_cli(capsys, *argv):
    """``qahub --quiet evaluate doc2dial ARGV``: (exit code, stdout, stderr)."""
    code = cli.main(["--quiet", "evaluate", "doc2dial", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def sample_args(tmp_path, task="subtask1"):
    return ["--task", task, "--predictions", SAMPLES / f"sample_prediction_{task}.json", "--cache-dir", tmp_path / "cache"]


def test_cli_references_from_an_export(capsys, tmp_path, exported):
    code, out, err = evaluate_cli(capsys, *sample_args(tmp_path), "--references", exported, "--split", "validation")
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result.pop("qahub_signature")["dataset"] == "doc2dial"  # issue 37: the references' folder
    assert result == {"task": "subtask1", "references": f"{exported} doc2dial_rc validation split", **OFFICIAL_SUBTASK1}
    code, out, _ = evaluate_cli(capsys, *sample_args(tmp_path, "subtask2"), "--references", exported,
                                "--config", "dialogue_domain", "--split", "validation")
    assert code == 0 and json.loads(out)["score"] == OFFICIAL_SUBTASK2_BLEU


def test_cli_references_from_a_build_or_an_upstream_file(capsys, tmp_path):
    code, out, err = evaluate_cli(capsys, *sample_args(tmp_path), "--data-dir", SAMPLES, "--config", "doc2dial_rc",
                                  "--split", "validation")
    assert (code, err) == (0, "") and json.loads(out)["f1"] == OFFICIAL_SUBTASK1["f1"]
    upstream = SAMPLES / "doc2dial/v1.0.1/doc2dial_dial_validation.json"
    code, out, err = evaluate_cli(capsys, *sample_args(tmp_path, "subtask2"), "--references", upstream)
    assert (code, err) == (0, "") and json.loads(out)["score"] == OFFICIAL_SUBTASK2_BLEU
    documents = SAMPLES / "doc2dial/v1.0.1/doc2dial_doc.json"
    code, out, err = evaluate_cli(capsys, *sample_args(tmp_path), "--references", documents, "--split", "validation")
    assert (code, err) == (0, "") and json.loads(out)["exact"] == OFFICIAL_SUBTASK1["exact"]


def test_cli_prints_a_reference_path_that_is_not_utf8(capsys, tmp_path):
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/refs-\xff"))  # the name holds the surrogate \udcff
    folder.mkdir()
    refs = write(folder, json.dumps([ref("a_1", "x")]), "refs.json")
    preds = write(tmp_path, json.dumps([pred("a_1", "x", 0.5)]))
    code, out, err = evaluate_cli(capsys, "--task", "subtask1", "--predictions", preds, "--references", refs)
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result["exact"] == 100.0 and result["references"].endswith("refs-\\udcff/refs.json")


def write(tmp_path, data, name="preds.json"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


@pytest.mark.parametrize("content, message", [
    # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
    ("[]", r"preds\.json: holds no predictions: nothing to score"),
    ("{}", r"preds\.json: holds no predictions: nothing to score"),
    ('[{"id": "x_1", "id": "x_2", "prediction_text": ""}]',
     r"preds\.json: not valid JSON \(an object names the key 'id' twice\)"),
    (b'[{"id": "a\xed\xa0\x80", "prediction_text": ""}]',
     r"preds\.json: not UTF-8 text \(invalid continuation byte at byte 10, line 1\)"),
    ('[{"id": "\\ud800_1", "prediction_text": ""}]',
     r"preds\.json: record 0: the id 'id' \('\\ud800_1'\) holds a lone surrogate, which is not text"),
    ('[{"id": "nope_1", "prediction_text": null}]', r"predictions whose id is not in the references: 'nope_1'"),
    ("[" * 100000, r"preds\.json: not valid JSON \(nested too deeply\)"),
])
def test_cli_nothing_scored_or_a_bad_file_is_one_line_and_exit_1(capsys, tmp_path, content, message):
    preds = write(tmp_path, content)
    code, out, err = evaluate_cli(capsys, "--task", "subtask1", "--predictions", preds, "--data-dir", SAMPLES,
                                  "--split", "validation", "--ignore-missing", "--cache-dir", tmp_path / "cache")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("qahub evaluate: error: ") and re.search(message, err), err


@pytest.mark.parametrize("argv, message", [
    (["--config", "dialogue_domain", "--data-dir", str(SAMPLES), "--split", "validation"],
     "--config dialogue_domain: subtask1 is scored against doc2dial_rc rows"),
    (["--data-dir", str(SAMPLES)], r"--split is required \(train or validation\) unless --references is a JSON list file"),
    (["--data-dir", str(SAMPLES), "--split", "test"], "--split test: doc2dial has the splits train, validation"),
])
def test_cli_reference_options_are_checked(capsys, tmp_path, argv, message):
    code, out, err = evaluate_cli(capsys, *sample_args(tmp_path), *argv)
    assert (code, out) == (1, "") and re.search(message, err), err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=60) | st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass"))
       | st.lists(st.dictionaries(st.sampled_from(["id", "prediction_text", "no_answer_probability"]),
                                  st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)),
                  max_size=3).map(lambda v: json.dumps(v).encode()))
def test_cli_never_lets_a_traceback_out(capsys, tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("refs")
    refs = write(folder, json.dumps([ref("a_1", "x"), ref("b_1")]), "refs.json")
    preds = write(folder, content)
    code, out, err = evaluate_cli(capsys, "--task", "subtask1", "--predictions", preds, "--references", refs,
                                  "--ignore-missing")
    if code == 0:
        result = json.loads(out)
        assert 0 <= result["exact"] <= 100 and 0 <= result["f1"] <= 100 and err == ""
    else:
        assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("qahub evaluate: error: "), err


# how tests/test_predictions.py scores this corpus's gold replies against its sample export: the metric
# command and its options, the config and split read, the reply field, and (id fields, gold reply) of each
# prediction a row of that split gives
def _answer_span(row):
    texts = row["answers"]["text"]
    return texts[0] if texts else ""


PREDICTION_CASE = dict(
    corpus="doc2dial", metric=["doc2dial", "--task", "subtask1"], config="doc2dial_rc", split="validation",
    reply="prediction_text", items=lambda row: [({"id": row["id"]}, _answer_span(row))], gold="answers")
