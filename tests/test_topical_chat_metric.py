import argparse
import json
import math
import os
import subprocess
import sys

import evaluate
import pytest
from qahub.loaders._sources import SourceDataError

from qahub import registry
from qahub.scoring import topical_chat as scoring
from qahub.testing import shared_data

SAMPLE = registry.samples_dir("topical_chat")
CONV_A = "t_2b56287d-0e03-500a-b3d9-ca835e6f11ab"
CONV_C = "t_3620a7a8-e7fc-52a6-b7f1-796880878625"


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("topical_chat")))


def test_unigram_f1_hand_worked(metric):
    # pred tokens: cat sat on mat (4); ref: cat was sitting on mat (5); common 3 -> P 3/4, R 3/5, F1 2/3
    result = metric.compute(predictions=["The cat sat on the mat."], references=["A cat was sitting on the mat!"])
    assert result["f1"] == pytest.approx(2 / 3)
    assert result["knowledge_f1"] is None and result["num_with_knowledge"] == 0


def test_unigram_f1_edge_cases(metric):
    # both empty after normalisation -> 1 (as SQuAD); one empty -> 0; apostrophes are ASCII punctuation,
    # the typographic ’ is not
    result = metric.compute(predictions=["The!", "...", "Don't", "don’t"], references=["a", "hi", "dont", "dont"],
                            per_example=True)
    assert [row["f1"] for row in result["per_example"]] == [1.0, 0.0, 1.0, 0.0]
    assert result["f1"] == pytest.approx(0.5)


def test_bleu_hand_worked(metric):
    # pair 1: 1-4-gram matches 5/6, 3/5, 2/4, 1/3; pair 2 ("i like jazz" / "i like chess"): 2/3, 1/2, 0/1, 0/0
    # corpus: 7/9, 4/7, 2/5, 1/3, equal lengths (BP 1) -> BLEU = (8/135) ** (1/4)
    result = metric.compute(predictions=["the cat sat on the mat", "I like jazz"],
                            references=["the cat sat on a mat", "I like chess"], per_example=True)
    assert result["bleu"] == pytest.approx(100 * (8 / 135) ** 0.25)
    assert result["per_example"][0]["bleu"] == pytest.approx(100 * (1 / 12) ** 0.25)
    assert result["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")


def test_distinct_hand_worked(metric):
    # unigrams: i like jazz i like chess -> 4 distinct of 6; bigrams: i-like, like-jazz, i-like, like-chess -> 3 of 4
    result = metric.compute(predictions=["I like jazz.", "I like chess!"], references=["x", "y"])
    assert result["distinct_1"] == pytest.approx(4 / 6)
    assert result["distinct_2"] == pytest.approx(3 / 4)
    # articles are removed before counting; a prediction with no bigram adds none
    result = metric.compute(predictions=["the the", "Jazz"], references=["x", "y"])
    assert (result["distinct_1"], result["distinct_2"]) == (1.0, 0.0)


def test_knowledge_f1_hand_worked(metric):
    # "i like jazz" vs "jazz music": common 1 -> P 1/3, R 1/2, F1 0.4; example 1 has no knowledge: left out
    result = metric.compute(predictions=["the cat sat on the mat", "I like jazz"],
                            references=["the cat sat on a mat", "I like chess"], knowledge=[None, "jazz music"],
                            per_example=True)
    assert result["knowledge_f1"] == pytest.approx(0.4)
    assert result["num_with_knowledge"] == 1
    assert [row["knowledge_f1"] for row in result["per_example"]] == [None, pytest.approx(0.4)]
    # "" counts as no knowledge too
    result = metric.compute(predictions=["a cat sat"], references=["x"], knowledge=[""])
    assert result["knowledge_f1"] is None


def test_metric_input_errors(metric):
    with pytest.raises(ValueError, match="1 knowledge texts for 2 predictions"):
        metric.compute(predictions=["a", "b"], references=["a", "b"], knowledge=["a"])
    with pytest.raises(ValueError, match=r"knowledge\[0\] must be a string or None"):
        metric.compute(predictions=["a"], references=["a"], knowledge=[3])


def test_metric_loads_without_qahub(tmp_path):
    """evaluate copies the module and its helper; importing qahub from them would fail here."""
    code = ("import sys; sys.modules['qahub'] = None; import evaluate; m = evaluate.load(sys.argv[1]); "
            "print(m.compute(predictions=['hello there'], references=['hello'])['f1'])")
    done = subprocess.run([sys.executable, "-c", code, str(registry.metric_dir("topical_chat"))], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.split()[-1]) == pytest.approx(2 / 3)  # "hello there" vs "hello": P 1/2, R 1


# command line


def args(**kwargs):
    base = {"predictions": str(SAMPLE / "predictions.json"), "references": str(SAMPLE / "conversations/test_freq.json"),
            "reading_sets": None, "wiki": None, "per_example": False}
    return argparse.Namespace(**(base | kwargs))


def test_scoring_sample_hand_worked():
    result = scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/post-build/test_freq.json"), per_example=True))
    third = result["per_example"][2]
    assert (third["conversation_id"], third["turn_index"]) == (CONV_C, 1)
    # "i agree pizza should be crisp with tomatoes and cheese" (10 tokens) vs the turn (15 tokens): 8 in common
    assert third["f1"] == pytest.approx(2 * (8 / 10) * (8 / 15) / (8 / 10 + 8 / 15))
    # knowledge (agent_2, FS1: Pizza lead + 2 fun facts, 38 tokens): pizza with tomatoes and cheese in common
    assert third["knowledge_f1"] == pytest.approx(2 * (5 / 10) * (5 / 38) / (5 / 10 + 5 / 38))
    assert result["num_examples"] == 3 and result["num_with_knowledge"] == 3


def test_scoring_matches_the_metric_on_explicit_inputs(metric):
    result = scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/post-build/test_freq.json")))
    reading = json.loads((SAMPLE / "reading_sets/post-build/test_freq.json").read_text(encoding="utf-8"))
    conversations = json.loads((SAMPLE / "conversations/test_freq.json").read_text(encoding="utf-8"))
    article = reading[CONV_A]["article"]
    mars_1, mars_2 = reading[CONV_A]["agent_1"]["FS1"], reading[CONV_A]["agent_2"]["FS1"]
    pizza = reading[CONV_C]["agent_2"]["FS1"]
    knowledge = [
        " ".join([article["AS1"], mars_2["summarized_wiki_lead_section"], *mars_2["fun_facts"]]),  # agent_2: AS1, FS1
        " ".join([article["AS2"], mars_1["shortened_wiki_lead_section"], *mars_1["fun_facts"]]),  # agent_1: AS2, FS1
        " ".join([pizza["shortened_wiki_lead_section"], *pizza["fun_facts"]]),
    ]
    predictions = json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8"))
    references = [conversations[p["conversation_id"]]["content"][p["turn_index"]]["message"] for p in predictions]
    expected = metric.compute(predictions=[p["response"] for p in predictions], references=references,
                              knowledge=knowledge)
    assert {key: result[key] for key in expected} == expected


def test_scoring_pre_build_uses_lead_sections_only():
    result = scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/pre-build/test_freq.json"),
                              wiki=str(SAMPLE / "src/wiki/wiki.json"), per_example=True))
    # the pizza turn: knowledge = the Pizza lead only (19 tokens), 5 in common
    assert result["per_example"][2]["knowledge_f1"] == pytest.approx(2 * (5 / 10) * (5 / 19) / (5 / 10 + 5 / 19))


def test_scoring_errors(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"conversation_id": CONV_A, "turn_index": 7, "response": "hi"}]))
    with pytest.raises(scoring.PredictionsError, match=rf"p\.json: record 0: conversation '{CONV_A}' has no turn 7"):
        scoring.run(args(predictions=str(path)))
    path.write_text(json.dumps([{"conversation_id": CONV_A, "turn_index": "1", "response": "hi"}]))
    with pytest.raises(scoring.PredictionsError, match=r"p\.json: record 0: expected"):
        scoring.run(args(predictions=str(path)))
    with pytest.raises(SourceDataError, match=r"pre-build/test_freq\.json: record t_\S+: has 'article_url': a pre-build "
                                         r"reading set, which needs src/wiki/wiki\.json"):
        scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/pre-build/test_freq.json")))
    path.write_text(json.dumps([{"conversation_id": CONV_A, "turn_index": 1, "response": "hi"}] * 2))
    with pytest.raises(scoring.PredictionsError, match=r"record 1: a second prediction for turn 1"):
        scoring.run(args(predictions=str(path)))


def test_demo_json_runs_through_the_cli(tmp_path):
    demo = json.loads((SAMPLE / "demo.json").read_text(encoding="utf-8"))
    (argv,) = demo["evaluate"]
    argv = [arg.replace("{sample}", str(SAMPLE)) for arg in argv]
    out = tmp_path / "scores.json"
    done = subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", "evaluate", *argv, "--output", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(out.read_text())
    assert scores["num_examples"] == 3 and scores["num_with_knowledge"] == 3
    assert math.isclose(scores["f1"], scoring.run(args())["f1"])


@pytest.mark.slow
def test_real_data_matches_the_official_squad_f1(tmp_path):
    """Predict each turn with the previous turn's message over test_freq; the expected mean F1 was computed
    with the official SQuAD v2.0 evaluation script's compute_f1, and BLEU with sacrebleu.corpus_bleu."""
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    references = real / "conversations/test_freq.json"
    raw = json.loads(references.read_text(encoding="utf-8"))
    predictions = [{"conversation_id": cid, "turn_index": i, "response": conv["content"][i - 1]["message"]}
                   for cid, conv in raw.items() for i in range(1, len(conv["content"]))]
    path = tmp_path / "previous_turn.json"
    path.write_text(json.dumps(predictions))
    result = scoring.run(args(predictions=str(path), references=str(references),
                              reading_sets=str(real / "reading_sets/pre-build/test_freq.json"),
                              wiki=str(real / "src/wiki/wiki.json")))
    assert result["num_examples"] == 11221
    assert result["f1"] == pytest.approx(0.13483409205093339, abs=1e-12)
    assert result["bleu"] == pytest.approx(1.1405798108335885, abs=1e-9)
    assert 0 < result["num_with_knowledge"] < 11221
