import argparse
import json
import math
import os
import re
import string
import subprocess
import sys
from collections import Counter

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
    # 13a tokens of the lowercased predictions: i like jazz . | i like chess ! -> 6 distinct unigrams of 8;
    # bigrams i-like, like-jazz, jazz-., i-like, like-chess, chess-! -> 5 distinct of 6 (none across predictions)
    result = metric.compute(predictions=["I like jazz.", "I like chess!"], references=["x", "y"])
    assert result["distinct_1"] == pytest.approx(6 / 8)
    assert result["distinct_2"] == pytest.approx(5 / 6)
    # articles are kept and case is folded: the the jazz -> 2 of 3; the one bigram the-the -> 1 of 1
    result = metric.compute(predictions=["The the", "Jazz"], references=["x", "y"])
    assert (result["distinct_1"], result["distinct_2"]) == (pytest.approx(2 / 3), 1.0)
    result = metric.compute(predictions=["", "  "], references=["x", "y"])
    assert (result["distinct_1"], result["distinct_2"]) == (0.0, 0.0)


def test_distinct_is_the_usual_formula_on_13a_tokens(metric):
    """An independent count: distinct n-grams / all n-grams, tokens from sacrebleu's 13a tokenizer."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    predictions = ["Well, I don't know... do you?", "Do you like (old) jazz?", "Yes! Yes, I do."]
    split = [Tokenizer13a()(p.lower()).split() for p in predictions]
    result = metric.compute(predictions=predictions, references=predictions)
    for n in (1, 2):
        grams = [tuple(t[i:i + n]) for t in split for i in range(len(t) - n + 1)]
        assert result[f"distinct_{n}"] == len(set(grams)) / len(grams)


def test_knowledge_f1_hand_worked(metric):
    # "i like jazz" vs "jazz music": common 1 -> P 1/3, R 1/2, F1 0.4; example 1 has no knowledge: left out
    result = metric.compute(predictions=["the cat sat on the mat", "I like jazz"],
                            references=["the cat sat on a mat", "I like chess"], knowledge=[None, "jazz music"],
                            per_example=True)
    assert result["knowledge_f1"] == pytest.approx(0.4)
    assert result["num_with_knowledge"] == 1
    assert [row["knowledge_f1"] for row in result["per_example"]] == [None, pytest.approx(0.4)]
    # a text with no token after the normalisation counts as no knowledge: "", spaces, punctuation, articles
    result = metric.compute(predictions=["a cat sat"] * 5, references=["x"] * 5, knowledge=["", "  ", "...", "the",
                                                                                          "cat"], per_example=True)
    assert result["num_with_knowledge"] == 1
    assert [row["knowledge_f1"] for row in result["per_example"]] == [None, None, None, None, pytest.approx(2 / 3)]


def test_metric_input_errors(metric):
    with pytest.raises(ValueError, match="1 knowledge texts for 2 predictions"):
        metric.compute(predictions=["a", "b"], references=["a", "b"], knowledge=["a"])
    with pytest.raises(ValueError, match=r"knowledge\[0\] must be a string or None"):
        metric.compute(predictions=["a"], references=["a"], knowledge=[3])
    with pytest.raises(ValueError, match=r"knowledge must be a list with one text \(or None\) per prediction, got str"):
        metric.compute(predictions=["ab c", "d"], references=["x", "y"], knowledge="ab")
    with pytest.raises(ValueError, match=r"per_example must be True or False, got 'no'"):
        metric.compute(predictions=["a"], references=["a"], per_example="no")
    with pytest.raises(ValueError, match=r"no predictions to score"):
        metric.compute(predictions=[], references=[])



@pytest.mark.parametrize("value", [None, 0, 1.5, b"x", ["a"]])
def test_every_prediction_and_reference_must_be_a_string(metric, value):
    """evaluate checks the first example only: a later None crashed, a later number was scored as text."""
    with pytest.raises(ValueError, match=rf"topical_chat: predictions\[1\] must be a string, got {re.escape(repr(value))}"):
        metric.compute(predictions=["a", value], references=["a", "b"])
    with pytest.raises(ValueError, match=r"topical_chat: references\[2\] must be a string"):
        metric.add_batch(predictions=["a", "b", "c"], references=["a", "b", value])
    with pytest.raises(ValueError, match=r"topical_chat: prediction\[0\] must be a string"):
        metric.add(prediction=value, reference="a")
    with pytest.raises(ValueError, match=r"topical_chat: predictions must be a list of strings, got str"):
        metric.compute(predictions="ab", references=["a", "b"])


def test_docstring_example_runs(monkeypatch):
    """The doctest of _KWARGS_DESCRIPTION, run as written: evaluate.load("topical_chat") from metrics/."""
    import doctest

    monkeypatch.chdir(registry.metric_dir("topical_chat").parent)
    module = evaluate.load("topical_chat")
    test = doctest.DocTestParser().get_doctest(module.inputs_description, {"evaluate": evaluate}, "topical_chat",
                                               None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=3)


def test_readme_worked_examples_run(metric):
    """The README's ">>>" examples, with their printed values, as a doctest."""
    import doctest

    readme = (registry.metric_dir("topical_chat") / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if ">>>" in b]
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {"metric": metric}, "README", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=5)


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


def test_scoring_reports_turns_left_unscored_and_names_foreign_conversations(tmp_path):
    result = scoring.run(args())
    conversations = json.loads((SAMPLE / "conversations" / "test_freq.json").read_text(encoding="utf-8"))
    turns = sum(len(c["content"]) for c in conversations.values())
    assert result["reference_turns"] == turns
    assert result["turns_without_prediction"] == turns - result["num_examples"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"conversation_id": "t_not_here", "turn_index": 0, "response": "hi"}]), encoding="utf-8")
    with pytest.raises(scoring.PredictionsError, match=r"p\.json: record 0: conversation 't_not_here' is not in .*test_freq\.json"):
        scoring.run(args(predictions=str(path)))


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


def test_scoring_errors_name_the_file_and_the_problem(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(json.dumps([{"conversation_id": CONV_A, "turn_index": 1, "response": "caf\u00e9"}],
                                ensure_ascii=False).encode("cp1252"))
    with pytest.raises(scoring.PredictionsError, match=r"p\.json: not valid UTF-8 \(byte 0xe9 at offset \d+"):
        scoring.run(args(predictions=str(path)))
    with pytest.raises(SourceDataError, match=rf"post-build/test_freq\.json: record {CONV_A}: has 'article' and no "
                                              r"'article_url': a post-build reading set, which is read without"):
        scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/post-build/test_freq.json"),
                         wiki=str(SAMPLE / "src/wiki/wiki.json")))
    wiki = json.loads((SAMPLE / "src/wiki/wiki.json").read_text(encoding="utf-8"))
    wiki["shortened_wiki_lead_section"]["zzz"] = [1]
    (tmp_path / "wiki.json").write_text(json.dumps(wiki), encoding="utf-8")
    with pytest.raises(SourceDataError, match=r"wiki\.json: record shortened_wiki_lead_section\['zzz'\]: the id must "
                                              r"be an integer, got \[1\]"):
        scoring.run(args(reading_sets=str(SAMPLE / "reading_sets/pre-build/test_freq.json"),
                         wiki=str(tmp_path / "wiki.json")))


def test_scoring_reads_an_asr_file_as_references(tmp_path):
    """The ASR file's turns carry the same messages: the scores equal those against the conversations file."""
    predictions = json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8"))
    path = tmp_path / "p.json"
    path.write_text(json.dumps([p for p in predictions if p["conversation_id"] == CONV_A]), encoding="utf-8")
    asr = scoring.run(args(predictions=str(path), references=str(SAMPLE / "TopicalChatASR/actual/test_freq_audio.json")))
    plain = scoring.run(args(predictions=str(path)))
    assert asr["num_examples"] == 2
    per_file = ("references", "reference_turns", "turns_without_prediction")  # the ASR file holds fewer conversations
    assert {k: v for k, v in asr.items() if k not in per_file} == {k: v for k, v in plain.items() if k not in per_file}
    assert asr["turns_without_prediction"] == asr["reference_turns"] - 2


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


def squad_f1(prediction, gold):
    """The SQuAD v2.0 evaluation script's compute_f1, written again from its published definition: normalise
    (lowercase; drop string.punctuation; drop the words a, an, the; split on whitespace), then token F1 with
    clipped counts; when either side has no token, 1 if both have none, else 0."""
    def words(text):
        text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    pred, ref = words(prediction), words(gold)
    if not pred or not ref:
        return int(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


@pytest.mark.slow
def test_real_data_matches_the_official_squad_f1_and_sacrebleu(tmp_path):
    """Predict each test_freq turn with the previous turn's message; F1 must equal the SQuAD v2.0 compute_f1
    mean and BLEU sacrebleu.corpus_bleu's score, both computed here independently of the metric's code."""
    import sacrebleu

    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    references = real / "conversations/test_freq.json"
    raw = json.loads(references.read_text(encoding="utf-8"))
    pairs = [(conv["content"][i - 1]["message"], conv["content"][i]["message"], cid, i)
             for cid, conv in raw.items() for i in range(1, len(conv["content"]))]
    path = tmp_path / "previous_turn.json"
    path.write_text(json.dumps([{"conversation_id": cid, "turn_index": i, "response": pred}
                                for pred, _, cid, i in pairs]))
    result = scoring.run(args(predictions=str(path), references=str(references),
                              reading_sets=str(real / "reading_sets/pre-build/test_freq.json"),
                              wiki=str(real / "src/wiki/wiki.json")))
    assert result["num_examples"] == len(pairs) == sum(len(conv["content"]) - 1 for conv in raw.values())
    expected_f1 = math.fsum(squad_f1(pred, gold) for pred, gold, _, _ in pairs) / len(pairs)
    assert result["f1"] == pytest.approx(expected_f1, abs=1e-12)
    bleu = sacrebleu.corpus_bleu([pred for pred, _, _, _ in pairs], [[gold for _, gold, _, _ in pairs]])
    assert result["bleu"] == bleu.score
    assert 0 < result["num_with_knowledge"] < len(pairs)
