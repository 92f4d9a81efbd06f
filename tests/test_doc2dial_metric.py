import argparse
import json
import random
import re

import evaluate
import numpy as np
import pytest

from qahub import registry
from qahub.scoring import doc2dial as scoring

SAMPLES = registry.samples_dir("doc2dial")
METRIC_DIR = str(registry.metric_dir("doc2dial"))


@pytest.fixture(scope="module")
def grounding():
    return evaluate.load(METRIC_DIR, "subtask1")


@pytest.fixture(scope="module")
def generation():
    return evaluate.load(METRIC_DIR, "subtask2")


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
        "best_exact": 100.0, "best_exact_thresh": 0.0, "best_f1": 100.0, "best_f1_thresh": 0.0,
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
              "no_answer_threshold": 1.0, "ignore_missing": False}
    return argparse.Namespace(**{**values, **overrides})


# the official scorer's numbers on the sample predictions: the squad_v2 metric of datasets 1.3.0 (the
# official SQuAD v2 script) and sacreBLEU 1.4.3, run on the same rows outside this repository
OFFICIAL_SUBTASK1 = {
    "exact": 42.857142857142854, "f1": 62.28100235596487, "total": 7,
    "HasAns_exact": 33.333333333333336, "HasAns_f1": 55.9945027486257, "HasAns_total": 6,
    "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 1,
    "best_exact": 42.857142857142854, "best_exact_thresh": 0.05000000074505806,
    "best_f1": 62.28100235596487, "best_f1_thresh": 0.4000000059604645,
}
OFFICIAL_SUBTASK2_BLEU = 55.588889824977684


def test_cli_subtask1_matches_the_official_scorer(tmp_path):
    result = scoring.run(cli_args(tmp_path))
    assert result == {"task": "subtask1", "references": "doc2dial validation split", **OFFICIAL_SUBTASK1}


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
    preds.write_text(json.dumps(PREDICTIONS[:2] + [{"id": "c_1", "prediction_text": ""}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"preds\.json: record 2 \(id 'c_1'\): missing key\(s\) no_answer_probability"):
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
    ([{"id": "a_1", "prediction_text": GOLD}], r"prediction 0 \(id 'a_1'\): missing key\(s\) no_answer_probability"),
    ([pred("a_1", None, 0.0)], r"prediction 0 \(id 'a_1'\): 'prediction_text' must be a string, got None"),
    ([pred("a_1", "ok \ud83d", 0.0)], r"prediction 0 \(id 'a_1'\): 'prediction_text' holds a lone surrogate '\\ud83d' at character 3"),
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
    ({"threshold": 0.5}, r"doc2dial subtask1: unknown keyword argument\(s\) threshold \(accepted: no_answer_threshold\)"),
])
def test_subtask1_bad_options(grounding, kwargs, message):
    with pytest.raises(ValueError, match=message):
        grounding.compute(predictions=[pred("a_1", GOLD, 0.0)], references=[ref("a_1", GOLD)], **kwargs)


def test_subtask2_bad_fields_and_options(generation):
    preds, refs = utterances([("d_1", "Turn in your plates.", "Turn in your plates.")])
    with pytest.raises(ValueError, match=r"doc2dial subtask2: unknown keyword argument\(s\) no_answer_threshold \(accepted: none\)"):
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
    with pytest.raises(ValueError, match=r"refs\.json: record 0 \(id 'a_1'\): 'answers' must be .* got \{'text': \['x'\], 'answer_start': \['abc'\]\}"):
        scoring.run(args)
    refs.write_text(json.dumps([ref("a_1", "x")]), encoding="utf-8")
    for literal in ("NaN", "1e400", "-Infinity"):
        preds.write_text(f'[{{"id": "a_1", "prediction_text": "x", "no_answer_probability": {literal}}}]', encoding="utf-8")
        with pytest.raises(ValueError, match=r"preds\.json: record 0 \(id 'a_1'\): 'no_answer_probability' must be a finite number"):
            scoring.run(args)
    preds.write_text(json.dumps([pred("a_1", "x", 0.5)]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"scoring .*preds\.json against .*refs\.json: doc2dial subtask1: no_answer_threshold must be a finite number, got inf"):
        scoring.run(cli_args(tmp_path, predictions=str(preds), references=str(refs), split=None, no_answer_threshold=float("inf")))
    result = scoring.run(args)
    assert json.loads(json.dumps(result, allow_nan=False)) == result
