import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings

import evaluate
import pytest
from qahub.metrics.doc2dial import squad_v2_scoring as squad
from qahub.metrics.topical_chat import task_api
from qahub.metrics.topical_chat.turns import turn_examples

from qahub import registry
from qahub.cli import main
from qahub.evaluate_cli import topical_chat as scoring
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



@pytest.mark.parametrize("value", [None, 0, 1.5, b"x", ["a"], {"response": "a"}])
def test_a_reply_that_is_not_a_string_is_unparseable_and_scored_0(metric, value):
    result = metric.compute(predictions=["a b", value], references=["a b", "b"], per_example=True)
    assert result["unparseable"] == 1 and result["num_examples"] == 2
    assert [row["f1"] for row in result["per_example"]] == [1.0, 0.0]
    assert [row["unparseable"] for row in result["per_example"]] == [0, 1]
    metric.add(prediction=value, reference="a")
    assert metric.compute()["unparseable"] == 1


@pytest.mark.parametrize("value", [None, 0, 1.5, b"x", ["a"], {"x": 1}])
def test_every_reference_must_be_of_a_known_form(metric, value):
    with pytest.raises(ValueError, match=r"topical_chat: references\[2\] must be a gold string, a conversation row"):
        metric.add_batch(predictions=["a", "b", "c"], references=["a", "b", value])
    with pytest.raises(ValueError, match=r"topical_chat: references\[0\] must be a gold string"):
        metric.add(prediction="a", reference=value)
    with pytest.raises(ValueError, match=r"topical_chat: predictions must be a list \(or a Dataset\), got str"):
        metric.compute(predictions="ab", references=["a", "b"])


GARBAGE = ["", "   \n\t ", "word " * 2000, "# Title\n\n* **bold** `code`\n```json\n{}\n```", '{"response": "hi", [',
           "\ud800 lone \udfff", None, 42, ["a list"]]


def test_garbage_replies_give_finite_results_and_are_counted(metric):
    gold = "I love jazz, do you like it?"
    result = metric.compute(predictions=GARBAGE, references=[gold] * len(GARBAGE), knowledge=["jazz music"] * 9,
                            per_example=True)
    numbers = [result[k] for k in ("f1", "bleu", "distinct_1", "distinct_2", "knowledge_f1")]
    assert all(math.isfinite(x) for x in numbers)
    assert result["unparseable"] == 4  # the lone surrogates, None, 42, the list
    assert [row["unparseable"] for row in result["per_example"]] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    # no reply shares a token with the gold (i love jazz do you like it): every F1 is 0
    assert [row["f1"] for row in result["per_example"]] == [0.0] * 9
    assert result["f1"] == 0.0 and result["knowledge_f1"] == 0.0
    # distinct over the readable replies: "word" 2000 times, the markdown tokens, the JSON tokens
    assert 0.0 < result["distinct_1"] < 0.02


def test_an_unparseable_reply_scores_0_even_against_an_empty_gold(metric):
    result = metric.compute(predictions=["", None, "\ud800"], references=["...", "...", "the"], per_example=True)
    assert [row["f1"] for row in result["per_example"]] == [1.0, 0.0, 0.0]  # "" vs "...": both empty, SQuAD's 1


def test_replies_are_read_on_one_line_without_a_speaker_label(metric):
    replies = ["agent_2: hi there", "**Agent 1:** hi there", "Agent 2 : hi there", "hi\n\nthere", "agent_2 hi there"]
    result = metric.compute(predictions=replies, references=["hi there"] * 5, per_example=True)
    # the last keeps "agent_2" (no colon): tokens agent_2 hi there vs hi there: P 2/3, R 1, F1 0.8
    assert [row["f1"] for row in result["per_example"]] == [1.0, 1.0, 1.0, 1.0, pytest.approx(0.8)]
    # a newline in the gold is a space: BLEU 100 for the same words
    result = metric.compute(predictions=["one two three four five"], references=["one two\nthree  four five"])
    assert result["bleu"] == 100.0


# rows as references


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory):
    import qahub

    cache = str(tmp_path_factory.mktemp("tc_cache"))
    conversations = qahub.load("topical_chat", "conversations", data_dir=str(SAMPLE), cache_dir=cache)
    reading = qahub.load("topical_chat", "reading_sets", data_dir=str(SAMPLE), cache_dir=cache)
    return conversations["test_freq"], reading["test_freq"]


PREDICTIONS = json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8"))


def test_conversation_rows_as_references_hand_worked(metric, sample_rows):
    conversations, reading = sample_rows
    result = metric.compute(predictions=PREDICTIONS, references=conversations, reading_sets=reading,
                            per_example=True)
    third = result["per_example"][2]
    assert (third["conversation_id"], third["turn_index"]) == (CONV_C, 1)
    # "i agree pizza should be crisp with tomatoes and cheese" (10 tokens) vs the turn (15 tokens): 8 in common
    assert third["f1"] == pytest.approx(2 * (8 / 10) * (8 / 15) / (8 / 10 + 8 / 15))
    # knowledge (agent_2, FS1: Pizza lead + 2 fun facts, 38 tokens): pizza with tomatoes and cheese in common
    assert third["knowledge_f1"] == pytest.approx(2 * (5 / 10) * (5 / 38) / (5 / 10 + 5 / 38))
    assert (result["num_examples"], result["num_with_knowledge"], result["unparseable"]) == (3, 3, 0)
    assert (result["reference_turns"], result["turns_without_prediction"]) == (3, 0)
    # a list of row dicts is the same as the Dataset
    assert metric.compute(predictions=PREDICTIONS, references=list(conversations), reading_sets=list(reading),
                          per_example=True) == result


def test_rows_give_the_same_numbers_as_strings_with_knowledge(metric, sample_rows):
    conversations, reading = sample_rows
    by_id = {row["conversation_id"]: row for row in reading}
    examples = {(e["conversation_id"], e["turn_index"]): e for row in conversations
                for e in turn_examples(row, by_id[row["conversation_id"]])}
    chosen = [examples[p["conversation_id"], p["turn_index"]] for p in PREDICTIONS]
    replies = [p["response"] for p in PREDICTIONS]
    rows = metric.compute(predictions=PREDICTIONS, references=conversations, reading_sets=reading)
    strings = metric.compute(predictions=replies, references=[e["response"] for e in chosen],
                             knowledge=[e["knowledge"] for e in chosen])
    as_examples = metric.compute(predictions=replies, references=chosen)
    assert strings == rows == as_examples


def test_rows_without_reading_sets_have_no_knowledge(metric, sample_rows):
    conversations, _ = sample_rows
    result = metric.compute(predictions=PREDICTIONS[:1], references=conversations)
    assert result["knowledge_f1"] is None and result["num_with_knowledge"] == 0
    assert (result["reference_turns"], result["turns_without_prediction"]) == (3, 2)


def test_prediction_records_keep_unparseable_responses(metric, sample_rows):
    conversations, reading = sample_rows
    records = [dict(p, response=value) for p, value in zip(PREDICTIONS, [None, "\ud800", 7], strict=True)]
    result = metric.compute(predictions=records, references=conversations, reading_sets=reading)
    assert (result["unparseable"], result["f1"], result["knowledge_f1"], result["bleu"]) == (3, 0.0, 0.0, 0.0)


def test_rows_errors_name_the_records(metric, sample_rows):
    conversations, reading = sample_rows
    foreign = [{"conversation_id": "t_not_here", "turn_index": 1, "response": "hi"},
               {"conversation_id": CONV_A, "turn_index": 0, "response": "hi"},
               {"conversation_id": CONV_A, "turn_index": 9, "response": "hi"}]
    with pytest.raises(ValueError, match=r"topical_chat: 3 predictions name turns the references do not have: "
                                         r"predictions\[0\] \(conversation 't_not_here', turn 1\), predictions\[1\] "
                                         rf"\(conversation '{CONV_A}', turn 0\), predictions\[2\]"):
        metric.compute(predictions=foreign, references=conversations)
    with pytest.raises(ValueError, match=rf"predictions\[1\]: a second prediction for turn 1 of '{CONV_A}'"):
        metric.compute(predictions=[PREDICTIONS[0]] * 2, references=conversations)
    with pytest.raises(ValueError, match=r"predictions\[0\] must be a record \{\"conversation_id\": str"):
        metric.compute(predictions=["hi"], references=conversations)
    with pytest.raises(ValueError, match=rf"references\[1\]: conversation '{CONV_A}' appears twice"):
        metric.compute(predictions=PREDICTIONS[:1], references=[conversations[0]] * 2)
    with pytest.raises(ValueError, match=rf"reading_sets has no row for conversation '{CONV_C}' \(references\[1\]\)"):
        metric.compute(predictions=PREDICTIONS, references=conversations, reading_sets=list(reading)[:1])
    broken = dict(conversations[0], turns=[dict(t) for t in conversations[0]["turns"]])
    broken["turns"][2]["message"] = None
    with pytest.raises(ValueError, match=rf"references\[0\] '{CONV_A}': turn 2: 'message' must be a string, got None"):
        metric.compute(predictions=PREDICTIONS[:1], references=[broken])
    with pytest.raises(ValueError, match=r"references\[1\] is a text but references\[0\] is a conversation"):
        metric.compute(predictions=PREDICTIONS[:1], references=[conversations[0], "x"])
    with pytest.raises(ValueError, match=r"knowledge= goes with gold strings"):
        metric.compute(predictions=PREDICTIONS, references=conversations, knowledge=["x", "y", "z"])
    with pytest.raises(ValueError, match=r"reading_sets= goes with conversation rows"):
        metric.compute(predictions=["x"], references=["y"], reading_sets=reading)
    with pytest.raises(ValueError, match=r"reading_sets\[0\] 't_\S+': 'agent_1' must be a dict or None, got str"):
        metric.compute(predictions=PREDICTIONS, references=conversations,
                       reading_sets=[dict(reading[0], agent_1="x")])


def test_a_refused_input_leaves_no_cache_file(tmp_path):
    metric = evaluate.load(str(registry.metric_dir("topical_chat")), cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="predictions name turns"):
        metric.compute(predictions=[{"conversation_id": "t_x", "turn_index": 1, "response": "a"}],
                       references=[{"conversation_id": "t_y", "turns": []}])
    assert [p for p in tmp_path.rglob("*") if p.suffix in (".arrow", ".lock")] == []


def test_add_batch_pairs_records_across_batches(metric, sample_rows):
    conversations, reading = sample_rows
    metric.add_batch(predictions=PREDICTIONS[:2], references=[conversations[0]])
    metric.add_batch(predictions=PREDICTIONS[2:], references=[conversations[1]])
    assert metric.compute(reading_sets=reading) == metric.compute(predictions=PREDICTIONS, references=conversations,
                                                                  reading_sets=reading)


# turn examples


def test_turn_examples_hand_checked(sample_rows):
    conversations, reading = sample_rows
    first, *_ = turn_examples(conversations[0], reading[0])
    assert {k: first[k] for k in ("conversation_id", "turn_index", "agent", "response")} == {
        "conversation_id": CONV_A, "turn_index": 1, "agent": "agent_2",
        "response": "A rover found signs of water ice under the dust on Mars."}
    assert first["history"] == [{"agent": "agent_1", "message": "Hello! Do you follow space news?"}]
    mars = reading[0]["agent_2"]["FS1"]  # the turn's sources: AS1, FS1 (agent_2's reading set)
    assert first["knowledge"] == " ".join([reading[0]["article"]["AS1"], mars["wiki_lead_section"],
                                           *mars["fun_facts"]])
    assert [e["turn_index"] for e in turn_examples(conversations[0])] == [1, 2]  # turn 0 is not an example
    assert all(e["knowledge"] is None for e in turn_examples(conversations[0]))
    personal = turn_examples({"conversation_id": "t", "turns": [
        {"agent": "agent_1", "message": "a", "knowledge_source": []},
        {"agent": 1, "message": "b", "knowledge_source": ["Personal Knowledge"]}]}, reading[0])
    assert personal[0]["knowledge"] is None and personal[0]["agent"] == "agent_2"


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
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=7)


# run in a process where qahub cannot be imported, with the other checks of this metric (tests/metric_alone.py)
_WITHOUT_QAHUB_CODE = textwrap.dedent(
    """
    import evaluate

    m = evaluate.load(source)
    print(m.compute(predictions=['hello there'], references=['hello'])['f1'])
    """
)
WITHOUT_QAHUB = {"topical_chat_f1": _WITHOUT_QAHUB_CODE}


def test_metric_loads_without_qahub(metric_alone):
    """evaluate copies the module and its helper; importing qahub from them would fail here (tests/metric_alone.py)."""
    check = metric_alone("topical_chat")["topical_chat_f1"]
    assert check["ok"], check["error"][-2000:]
    assert not check["qahub_imports"]
    assert float(check["stdout"].split()[-1]) == pytest.approx(2 / 3)  # "hello there" vs "hello": P 1/2, R 1


# command line


def args(**kwargs):
    base = {"predictions": str(SAMPLE / "predictions.json"), "references": None, "data_dir": str(SAMPLE),
            "config": None, "split": "test_freq", "reading_sets": None, "wiki": None, "per_example": False}
    return argparse.Namespace(**(base | kwargs))


def legacy(**kwargs):
    """The arguments of the upstream-file form: a conversations file (and a reading-set file)."""
    return args(**({"data_dir": None, "split": None, "references": str(SAMPLE / "conversations/test_freq.json")}
                   | kwargs))


def cli(capsys, *argv):
    """``qahub evaluate topical_chat ARGV``: (exit status, stdout, stderr)."""
    code = main(["evaluate", "topical_chat", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.quick
def test_scoring_sample_hand_worked():
    result = scoring.run(args(per_example=True))
    third = result["per_example"][2]
    assert (third["conversation_id"], third["turn_index"]) == (CONV_C, 1)
    # "i agree pizza should be crisp with tomatoes and cheese" (10 tokens) vs the turn (15 tokens): 8 in common
    assert third["f1"] == pytest.approx(2 * (8 / 10) * (8 / 15) / (8 / 10 + 8 / 15))
    # knowledge (agent_2, FS1: Pizza lead + 2 fun facts, 38 tokens): pizza with tomatoes and cheese in common
    assert third["knowledge_f1"] == pytest.approx(2 * (5 / 10) * (5 / 38) / (5 / 10 + 5 / 38))
    assert result["num_examples"] == 3 and result["num_with_knowledge"] == 3
    assert (result["config"], result["split"]) == ("conversations", "test_freq")


def test_scoring_matches_the_metric_on_explicit_inputs(metric):
    result = scoring.run(args())
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
    assert expected["knowledge_f1"] == pytest.approx(0.2291343669250646)


def test_an_export_and_a_build_give_the_same_scores(exported, recwarn):
    full, bare = exported
    from_export = scoring.run(args(data_dir=None, references=str(full), per_example=True))
    from_build = scoring.run(args(per_example=True))
    assert from_export.pop("references") == str(full) and from_build.pop("references") == str(SAMPLE)
    # the signatures name the references read (issue 37), and agree on the scorer
    signatures = from_export.pop("qahub_signature"), from_build.pop("qahub_signature")
    assert [s["dataset"] for s in signatures] == [full.name, SAMPLE.name] and signatures[0]["scorer"] == \
        signatures[1]["scorer"]
    assert from_export == from_build and from_build["num_with_knowledge"] == 3
    without = scoring.run(args(data_dir=None, references=str(bare)))
    assert (without["knowledge_f1"], without["num_with_knowledge"], without["f1"]) == (None, 0, from_build["f1"])
    assert any("no reading_sets config: knowledge_f1 is not computed" in str(w.message) for w in recwarn)


def test_an_upstream_file_is_read_as_a_build_of_its_folder():
    """The form of round 1 (--references conversations/<split>.json) gives what --data-dir gives."""
    old_form = scoring.run(legacy(reading_sets=str(SAMPLE / "reading_sets/post-build/test_freq.json")))
    assert {k: v for k, v in old_form.items() if k != "references"} == {
        k: v for k, v in scoring.run(args()).items() if k != "references"}
    assert old_form["references"] == str(SAMPLE) and old_form["split"] == "test_freq"


def test_scoring_pre_build_uses_lead_sections_only():
    result = scoring.run(legacy(reading_sets=str(SAMPLE / "reading_sets/pre-build/test_freq.json"),
                                wiki=str(SAMPLE / "src/wiki/wiki.json"), per_example=True))
    # the pizza turn: knowledge = the Pizza lead only (19 tokens), 5 in common
    assert result["per_example"][2]["knowledge_f1"] == pytest.approx(2 * (5 / 10) * (5 / 19) / (5 / 10 + 5 / 19))


def test_a_data_dir_without_reading_sets_scores_without_knowledge(tmp_path, capsys):
    (tmp_path / "conversations").mkdir()
    shutil.copy(SAMPLE / "conversations/test_freq.json", tmp_path / "conversations")
    argv = ["--predictions", str(SAMPLE / "predictions.json"), "--data-dir", str(tmp_path), "--split", "test_freq"]
    with pytest.warns(UserWarning, match=r"no reading sets of test_freq .*: knowledge_f1 is not computed"):
        code, out, _ = cli(capsys, *argv)
    assert code == 0 and json.loads(out)["knowledge_f1"] is None and json.loads(out)["num_examples"] == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["--quiet", "evaluate", "topical_chat", *argv]) == 0  # --quiet: the result only
    out, err = capsys.readouterr()
    assert (caught, err) == ([], "") and json.loads(out)["f1"] == pytest.approx(0.7318518518518519)


def test_scoring_reports_turns_left_unscored_and_names_foreign_conversations(tmp_path):
    result = scoring.run(args())
    conversations = json.loads((SAMPLE / "conversations" / "test_freq.json").read_text(encoding="utf-8"))
    turns = sum(len(c["content"]) - 1 for c in conversations.values())  # turn 0 of each is not an example
    assert result["reference_turns"] == turns == 3
    assert result["turns_without_prediction"] == turns - result["num_examples"] == 0
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"conversation_id": "t_not_here", "turn_index": 1, "response": "hi"}]), encoding="utf-8")
    with pytest.raises(scoring.PredictionsError, match=r"p\.json against .*topical_chat \(conversations, test_freq\): "
                                                       r"topical_chat: 1 predictions name turns the references do not "
                                                       r"have: predictions\[0\] \(conversation 't_not_here', turn 1\)"):
        scoring.run(args(predictions=str(path)))
    path.write_text(json.dumps([{"conversation_id": CONV_A, "turn_index": 1, "response": None}]), encoding="utf-8")
    result = scoring.run(args(predictions=str(path)))
    assert (result["unparseable"], result["f1"], result["turns_without_prediction"]) == (1, 0.0, 2)


@pytest.mark.parametrize("records, message", [
    ([{"conversation_id": CONV_A, "turn_index": 7, "response": "hi"}],
     r"p\.json against .*: topical_chat: 1 predictions name turns the references do not have: predictions\[0\] "
     rf"\(conversation '{CONV_A}', turn 7\)"),
    # the ids are read by the one prediction reader (qahub.evaluate_cli.predictions), for every metric alike
    ([{"conversation_id": CONV_A, "turn_index": 1.5, "response": "hi"}],
     r"p\.json: record 0: the id 'turn_index' must be an integer, got 1\.5"),
    ([{"conversation_id": CONV_A, "turn_index": 1, "response": "hi"}] * 2,
     rf"p\.json: record 1: the id \('{CONV_A}', 1\) is given twice \(first in record 0\)"),
])
def test_bad_records_are_named_with_the_file(tmp_path, records, message):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        scoring.run(args(predictions=str(path)))


@pytest.mark.parametrize("kwargs, message", [
    ({"wiki": str(SAMPLE / "src/wiki/wiki.json")}, r"--wiki goes with a pre-build --reading-sets file"),
    ({"reading_sets": str(SAMPLE / "reading_sets/post-build/test_freq.json"), "wiki": str(SAMPLE / "src/wiki/wiki.json")},
     r"--wiki goes with a pre-build reading set; .*post-build/test_freq\.json is post-build"),
    ({"reading_sets": str(SAMPLE / "predictions.json")},
     r"--reading-sets .*predictions\.json: expected reading_sets/post-build/<split>\.json"),
    ({"split": "test_rare"}, r"--split test_rare: the references file .*conversations/test_freq\.json is test_freq"),
    ({"references": str(SAMPLE / "predictions.json")}, r"predictions\.json: expected an export folder, a Hub dataset"),
])
def test_reference_option_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        scoring.run(legacy(**kwargs))


def test_a_pre_build_reading_set_needs_the_wiki_of_its_folder(tmp_path):
    shutil.copytree(SAMPLE / "conversations", tmp_path / "conversations")
    shutil.copytree(SAMPLE / "reading_sets/pre-build", tmp_path / "reading_sets/pre-build")
    shutil.copy(SAMPLE / "src/wiki/wiki.json", tmp_path / "wiki.json")
    given = {"references": str(tmp_path / "conversations/test_freq.json"),
             "reading_sets": str(tmp_path / "reading_sets/pre-build/test_freq.json")}
    with pytest.raises(ValueError, match=r"--wiki .*wiki\.json: the build reads .*src/wiki/wiki\.json; put the wiki"):
        scoring.run(legacy(**given, wiki=str(tmp_path / "wiki.json")))
    with pytest.raises(FileNotFoundError, match=r"split 'test_freq' of topical_chat/reading_sets needs .*src/wiki/wiki"):
        scoring.run(legacy(**given))


def test_split_errors(exported):
    with pytest.raises(ValueError, match=r"name the split to score with --split"):
        scoring.run(args(split=None))
    with pytest.raises(ValueError, match=r"the conversations config has no split 'nope' \(found train, valid_freq"):
        scoring.run(args(data_dir=None, references=str(exported[0]), split="nope"))
    with pytest.raises(ValueError, match=r"topical_chat/conversations: unknown split\(s\) \['nope'\]"):
        scoring.run(args(split="nope"))


@pytest.mark.parametrize("content, message", [
    (b"[]", r"p\.json: holds no predictions: nothing to score"),
    # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
    (b"{}", r"p\.json: expected a list of records, got an object"),
    (b"null", r"p\.json: expected a list of records, got null"),
    (b"", r"p\.json: empty: no predictions, nothing to score"),
    (b'[{"conversation_id": "a", "turn_index": 1, "conversation_id": "b"}]',
     r"p\.json: not valid JSON \(an object names the key 'conversation_id' twice\)"),
    (b"[" * 100_000 + b"]" * 100_000, r"p\.json: not valid JSON \(nested too deeply\)"),
    (b'[{"turn_index": 1' + b"0" * 5000 + b"}]", r"p\.json: not valid JSON \(Exceeds the limit"),
    ('[{"response": "caf\u00e9"}]'.encode("cp1252"), r"p\.json: not UTF-8 text \(invalid continuation byte at byte 18"),
    (b'[{"response": "\xed\xa0\x80"}]', r"p\.json: not UTF-8 text \(invalid continuation byte at byte 15"),
])
def test_unreadable_prediction_files_exit_1_with_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "p.json"
    path.write_bytes(content)
    code, out, err = cli(capsys, "--predictions", str(path), "--data-dir", str(SAMPLE), "--split", "test_freq")
    assert (code, out) == (1, "")
    assert re.fullmatch(r"qahub evaluate: error: .*\n", err) and re.search(message, err), err


def test_a_lone_surrogate_in_a_reply_is_scored_unparseable(tmp_path, capsys):
    """Finding 15.12: a reply with a lone surrogate (a JSON escape) is scored as an unparseable reply."""
    path = tmp_path / "p.json"
    path.write_text('[{"conversation_id": "%s", "turn_index": 1, "response": "Mars \\ud800 ice"}]' % CONV_A,
                    encoding="utf-8")
    code, out, _ = cli(capsys, "--predictions", str(path), "--data-dir", str(SAMPLE), "--split", "test_freq",
                       "--per-example")
    result = json.loads(out)
    assert code == 0 and (result["unparseable"], result["f1"], result["per_example"][0]["unparseable"]) == (1, 0.0, 1)


def test_a_file_name_that_is_not_utf8_is_printed_escaped(tmp_path):
    """Finding 15.12: with a strict UTF-8 stdout, a prediction file whose name is not UTF-8 gave "'utf-8' codec
    can't encode character '\\udcff'"; its name is now printed with \\xNN escapes."""
    name = os.fsdecode(b"p\xff.json")
    (tmp_path / name).write_bytes((SAMPLE / "predictions.json").read_bytes())
    done = subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", "evaluate", "topical_chat", "--predictions",
                           str(tmp_path / name), "--data-dir", str(SAMPLE), "--split", "test_freq"],
                          capture_output=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["predictions"].endswith("p\\xff.json")


def test_scoring_reads_an_asr_file_as_references(tmp_path):
    """The ASR file's turns carry the same messages: the scores equal those against the conversations file."""
    predictions = json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8"))
    path = tmp_path / "p.json"
    path.write_text(json.dumps([p for p in predictions if p["conversation_id"] == CONV_A]), encoding="utf-8")
    asr = scoring.run(legacy(predictions=str(path), references=str(SAMPLE / "TopicalChatASR/actual/test_freq_audio.json")))
    plain = scoring.run(legacy(predictions=str(path)))
    assert asr["num_examples"] == 2 and asr["config"] == "asr" and asr["num_with_knowledge"] == 2
    # the ASR file holds fewer conversations; the signature names the file read
    per_file = ("config", "reference_turns", "turns_without_prediction", "qahub_signature")
    assert {k: v for k, v in asr.items() if k not in per_file} == {k: v for k, v in plain.items() if k not in per_file}
    assert asr["turns_without_prediction"] == asr["reference_turns"] - 2
    from_folder = scoring.run(args(predictions=str(path), config="asr"))
    assert from_folder.pop("qahub_signature")["config"] == asr.pop("qahub_signature")["config"] == "asr"
    assert from_folder == asr | {"references": str(SAMPLE)}


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
    assert math.isclose(scores["f1"], 0.7318518518518519)


@pytest.mark.slow
def test_real_data_matches_the_official_squad_f1_and_sacrebleu(tmp_path):
    """Predict each test_freq turn with the previous turn's message; F1 must equal the SQuAD v2.0 compute_f1
    mean (as doc2dial's squad_v2_scoring transcribes the official script) and BLEU sacrebleu.corpus_bleu's score,
    both computed independently of this metric's code."""
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
    result = scoring.run(legacy(predictions=str(path), references=str(references),
                                reading_sets=str(real / "reading_sets/pre-build/test_freq.json"),
                                wiki=str(real / "src/wiki/wiki.json")))
    assert result["num_examples"] == len(pairs) == sum(len(conv["content"]) - 1 for conv in raw.values())
    expected_f1 = math.fsum(squad.token_f1(gold, pred) for pred, gold, _, _ in pairs) / len(pairs)
    assert result["f1"] == pytest.approx(expected_f1, abs=1e-12)
    bleu = sacrebleu.corpus_bleu([pred for pred, _, _, _ in pairs], [[gold for _, gold, _, _ in pairs]])
    assert result["bleu"] == bleu.score
    assert 0 < result["num_with_knowledge"] < len(pairs)


# the lm-evaluation-harness task (task_api)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The sample exported twice: with the reading_sets config, and with conversations only."""
    from qahub.export import writer

    root = tmp_path_factory.mktemp("tc_export")
    full, bare = root / "full", root / "bare"
    writer.export("topical_chat", full, configs=["conversations", "reading_sets"], data_dir=str(SAMPLE),
                      cache_dir=str(root / "cache"))
    writer.export("topical_chat", bare, configs=["conversations"], data_dir=str(SAMPLE),
                      cache_dir=str(root / "cache"))
    return full, bare


def task_docs(location, split="test_freq"):
    import datasets

    spec = task_api.TASKS["qahub_topical_chat_freq"]
    return list(spec.docs(datasets.load_dataset(str(location), "conversations", split=split), str(location)))


def aggregate(rows):
    out = {}
    for name, (how, _) in task_api.TASKS["qahub_topical_chat_freq"].metrics.items():
        values = [row[name] for row in rows]
        out[name] = math.fsum(values) / len(values) if how == "mean" else how(values)
    return out


def test_task_contract():
    assert set(task_api.TASKS) == {"qahub_topical_chat_freq", "qahub_topical_chat_rare"}
    assert task_api.TASKS["qahub_topical_chat_rare"].splits == ("test_rare", "valid_rare")
    spec = task_api.TASKS["qahub_topical_chat_freq"]
    assert spec.configs == ("conversations",) and spec.fewshot_split == "train"
    assert spec.splits == ("test_freq", "valid_freq")
    assert spec.until == ("\n",)
    assert {name: better for name, (_, better) in spec.metrics.items()} == {
        "f1": True, "knowledge_f1": True, "bleu": True, "distinct_1": True, "distinct_2": True, "unparseable": False}


def test_task_docs_prompt_and_target(exported):
    full, bare = exported
    docs = task_docs(full)
    assert [(d["conversation_id"], d["turn_index"], d["agent"]) for d in docs] == [
        (CONV_A, 1, "agent_2"), (CONV_A, 2, "agent_1"), (CONV_C, 1, "agent_2")]
    second = docs[1]
    assert task_api.prompt(second) == "\n".join([
        "Two people, agent_1 and agent_2, are chatting about topics they have read about. You are agent_1.",
        "",
        "Knowledge agent_1 may use in the next turn:",
        "The find could help future crews. Mars is the fourth planet from the Sun. It is often called the Red "
        "Planet because of iron oxide on its surface. sunsets on Mars are blue a day on Mars is about 40 minutes "
        "longer than a day on Earth",
        "",
        "Conversation:",
        "agent_1: Hello! Do you follow space news?",
        "agent_2: A rover found signs of water ice under the dust on Mars.",
        "",
        "Write the next turn of agent_1: the message only, on one line.",
        "agent_1:",
    ])
    assert task_api.target(second) == "That could help future crews. Did you know sunsets there are blue?"
    bare_docs = task_docs(bare)
    assert [d["knowledge"] for d in bare_docs] == [None] * 3
    assert "Knowledge" not in task_api.prompt(bare_docs[1])
    assert task_api.prompt(bare_docs[1]).endswith("agent_2: A rover found signs of water ice under the dust on Mars."
                                                  "\n\nWrite the next turn of agent_1: the message only, on one line."
                                                  "\nagent_1:")


def test_targets_are_one_line():
    row = {"conversation_id": "t", "turns": [{"agent": 0, "message": "hi", "knowledge_source": []},
                                             {"agent": 1, "message": "one\ntwo\n\n three ", "knowledge_source": []}]}
    doc = task_api._flat(turn_examples(row)[0])
    assert task_api.target(doc) == "one two three" and "\n" not in task_api.target(doc)
    assert task_api.score("one two\nthree", doc)["f1"] == 1.0


@pytest.mark.quick
def test_task_oracle_gets_the_top_scores(exported):
    for split in ("test_freq", "train"):
        docs = task_docs(exported[0], split)
        result = aggregate([task_api.score(task_api.target(d), d) for d in docs])
        assert (result["f1"], result["bleu"], result["unparseable"]) == (1.0, 100.0, 0.0), split


def test_task_garbage_model_finishes_with_finite_low_scores(exported):
    docs = task_docs(exported[0])
    rows = [task_api.score(reply, doc) for reply in GARBAGE for doc in docs]
    result = aggregate(rows)
    assert all(math.isfinite(value) for value in result.values())
    assert result["unparseable"] == pytest.approx(4 / 9)
    assert result["f1"] < 0.05 and result["bleu"] < 1.0
    assert aggregate([task_api.score(None, docs[0])])["knowledge_f1"] == 0.0
    # no doc with knowledge: knowledge F1 is 0.0, not None
    assert task_api.TASKS["qahub_topical_chat_freq"].metrics["knowledge_f1"][0]([None, None]) == 0.0


def test_task_and_metric_score_alike(exported, metric):
    """One scorer, two callers: the task's per-example values and aggregates equal the metric's."""
    import datasets

    full, _ = exported
    docs = task_docs(full)
    replies = ["agent_2: a rover found ice on Mars", None, "I like pizza with cheese\nand tomatoes"]
    rows = [task_api.score(reply, doc) for reply, doc in zip(replies, docs, strict=True)]
    records = [{"conversation_id": d["conversation_id"], "turn_index": d["turn_index"], "response": r}
               for d, r in zip(docs, replies, strict=True)]
    result = metric.compute(predictions=records,
                            references=datasets.load_dataset(str(full), "conversations", split="test_freq"),
                            reading_sets=datasets.load_dataset(str(full), "reading_sets", split="test_freq"),
                            per_example=True)
    assert [(r["f1"], r["knowledge_f1"], r["unparseable"]) for r in rows] == [
        (e["f1"], e["knowledge_f1"], e["unparseable"]) for e in result["per_example"]]
    task = aggregate(rows)
    assert task["bleu"] == result["bleu"] and task["knowledge_f1"] == result["knowledge_f1"]
    assert (task["distinct_1"], task["distinct_2"]) == (result["distinct_1"], result["distinct_2"])
    assert task["f1"] == pytest.approx(result["f1"]) and task["unparseable"] == pytest.approx(1 / 3)


# how tests/test_predictions.py scores this corpus's gold replies against its sample export: the metric
# command and its options, the config and split read, the reply field, and (id fields, gold reply) of each
# prediction a row of that split gives
PREDICTION_CASE = dict(
    corpus="topical_chat", metric=["topical_chat"], config="conversations", split="test_freq", reply="response",
    items=lambda row: [({"conversation_id": row["conversation_id"], "turn_index": i}, turn["message"])
                       for i, turn in enumerate(row["turns"]) if i],
    # the harness task's docs (one per turn), which a file of replies is made from
    docs=lambda row: [task_api._flat(example) for example in turn_examples(row)], gold="response")
