import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest
from jeopardy_predictions import perturb

from qahub import cli, registry
from qahub.scoring import jeopardy_meteor as scoring
from qahub.testing import shared_data

METRIC_DIR = registry.metric_dir("jeopardy_meteor")
SAMPLE = registry.samples_dir("jeopardy")
EXTENDED = "Russian_QA_Jeopardy_dataset_extended.csv"
VALIDATION = "Russian_QA_Jeopardy_dataset_extended_validation.csv"
THRESHOLD = 0.227743


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_DIR))


def _helpers():
    """The metric's helper modules, imported from its directory."""
    sys.path.insert(0, str(METRIC_DIR.parent))
    try:
        from jeopardy_meteor import russian_meteor, spacy_like
    finally:
        sys.path.pop(0)
    return russian_meteor, spacy_like


def _russian_meteor(tokenizer="regex"):
    """A fresh scorer from the metric's helper module (fresh caches)."""
    return _helpers()[0].RussianMeteor(tokenizer)


try:
    import spacy
except ImportError:
    spacy = None
needs_spacy = pytest.mark.skipif(spacy is None, reason="spaCy is not installed (pip install 'spacy>=3.7,<4')")
TOKENIZERS = ["regex", pytest.param("spacy", marks=needs_spacy)]


def by_hand(matches, hyp_len, ref_len, chunks, alpha=0.9, beta=3.0, gamma=0.5):
    """METEOR from its definition (Lavie & Agarwal 2007), with NLTK's defaults."""
    if matches == 0:
        return 0.0
    precision, recall = matches / hyp_len, matches / ref_len
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    return (1 - gamma * (chunks / matches) ** beta) * fmean


# In the official order the prediction is NLTK's reference and the gold answer its hypothesis.
@pytest.mark.parametrize(
    "prediction, gold, expected, correct",
    [
        ("Бульвар Сансет", "Бульвар Сансет", by_hand(2, 2, 2, 1), True),  # exact match: 0.9375, not 1
        ("бульвара Сансет", "Бульвар Сансет", by_hand(2, 2, 2, 1), True),  # inflected: same lemmas
        ("Рим", "Рим", by_hand(1, 1, 1, 1), True),  # one word: fragmentation penalty 0.5
        ("Сансет бульвар", "бульвар Сансет", by_hand(2, 2, 2, 2), True),  # two chunks
        ("Сансет", "Бульвар Сансет", by_hand(1, 2, 1, 1), True),  # 0.4545...
        ('"«Монгол Шуудан»"', "Монгол Шуудан", by_hand(2, 2, 2, 1), True),  # punctuation dropped
        ("Лондон", "Париж", 0.0, False),  # wrong answer
        ("знаменитый бульвар большого города", "Бульвар", by_hand(1, 1, 4, 1), False),  # 0.1351...
    ],
)
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_hand_worked_values_official_order(metric, prediction, gold, expected, correct, tokenizer):
    result = metric.compute(predictions=[prediction], references=[gold], tokenizer=tokenizer)
    assert result["meteor_per_example"][0] == pytest.approx(expected, abs=1e-12)
    assert result["correct"] == [correct]
    assert result["order"] == "official"


def test_the_standard_order_swaps_precision_and_recall(metric):
    pred, gold = "знаменитый бульвар большого города", "Бульвар"
    result = metric.compute(predictions=[pred, "Сансет"], references=[gold, "Бульвар Сансет"], order="standard")
    assert result["meteor_per_example"] == pytest.approx([by_hand(1, 4, 1, 1), by_hand(1, 1, 2, 1)], abs=1e-12)
    assert result["correct"] == [True, True]  # 0.3846 and 0.2632


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_preprocessing_lemmatizes_lowercases_and_drops_punctuation(tokenizer):
    meteor = _russian_meteor(tokenizer)
    assert meteor.preprocess("знаменитый бульвар большого города!") == ("знаменитый", "бульвар", "большой", "город")
    assert meteor.preprocess("бульвара Сансет") == ("бульвар", "сансет")
    assert meteor.preprocess("Санкт-Петербург, 1.5 кг") == ("санкт", "петербург", "1.5", "кг")
    assert meteor.preprocess("…") == ()


# What spaCy's Russian tokenizer gives (checked with spacy.blank("ru"), spaCy 3.8), punctuation tokens dropped.
SPACY_TOKENS = [
    ("А.С. Пушкин", ["А.С.", "Пушкин"]),  # initials stay one token, with their periods
    ("Ф. Бэкон", ["Ф.", "Бэкон"]),
    ("т.е. вот", ["т.е.", "вот"]),
    ("32-й", ["32-й"]),  # number + suffix
    ("1940-е годы", ["1940-е", "годы"]),
    ("Лед-9", ["Лед-9"]),  # letter-hyphen-digit is not split
    ("R2-D2", ["R2-D2"]),
    ("Д'Артаньян", ["Д'Артаньян"]),
    ("1/10", ["1/10"]),
    ("Рим/Париж", ["Рим", "Париж"]),
    ("Бейкер-стрит", ["Бейкер", "стрит"]),  # letter-hyphen-letter is split
    ("рок-н-ролл", ["рок", "н", "ролл"]),
    ("«Монгол Шуудан»", ["Монгол", "Шуудан"]),
    ("РИМ. Рим. Дж.", ["РИМ", "Рим", "Дж"]),
    ("-220", ["-220"]),
    ("$5 и №5", ["$", "5", "и", "№", "5"]),  # symbols are not punctuation
    ("C++", ["C++"]),
    ("Pepper's", ["Pepper", "'s"]),
    ("Рим  Париж", ["Рим", " ", "Париж"]),  # a second space is a token, not punctuation: the notebook keeps it
    (" Рим", [" ", "Рим"]),
    ("Рим\nПариж", ["Рим", "\n", "Париж"]),
    ("www.example.org", ["www.example.org"]),
]


@pytest.mark.parametrize("text, expected", SPACY_TOKENS)
def test_regex_tokenizer_follows_spacy(text, expected):
    assert _helpers()[1].regex_tokens(text) == expected


@needs_spacy
@pytest.mark.parametrize("text, expected", SPACY_TOKENS)
def test_spacy_tokenizer_is_spacy_blank_ru(text, expected):
    tokenize, name = _helpers()[1].tokenizer_for("spacy")
    assert tokenize(text) == expected
    assert name == f"spacy-blank-ru {spacy.__version__}"


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_the_output_names_the_tokenizer(metric, tokenizer):
    result = metric.compute(predictions=["А.С. Пушкин"], references=["Пушкин"], tokenizer=tokenizer)
    expected = f"spacy-blank-ru {spacy.__version__}" if tokenizer == "spacy" else _helpers()[1].REGEX_NAME
    assert result["tokenizer"] == expected
    assert expected in result["preprocessing"]


def test_without_spacy_auto_falls_back_to_regex_and_spacy_says_how_to_install(monkeypatch):
    spacy_like = _helpers()[1]
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy now raises ImportError
    assert spacy_like.tokenizer_for("auto") == (spacy_like.regex_tokens, spacy_like.REGEX_NAME)
    with pytest.raises(ImportError, match=r"tokenizer='spacy' needs spaCy: pip install 'spacy>=3.7,<4'"):
        spacy_like.tokenizer_for("spacy")


def test_auto_uses_spacy_when_installed(metric):
    result = metric.compute(predictions=["Рим"], references=["Рим"])
    assert result["tokenizer"].startswith("spacy-blank-ru" if spacy else "regex")


def test_abstention_game_score_and_counts(metric):
    result = metric.compute(
        predictions=["бульвара Сансет", "Рим", None, "  ", "Канберра"],
        references=["Бульвар Сансет", "Уругвай", "Танка", "Аншлюс", "Канберра"],
        question_numbers=[4, 2, 1, 3, 5],
    )
    assert result["abstained"] == [False, False, True, True, False]
    assert result["correct"] == [True, False, False, False, True]
    assert result["meteor_per_example"][2:4] == [0.0, 0.0]
    assert result["score"] == 4 - 2 + 0 + 0 + 5
    assert result["max_score"] == 15
    assert (result["num_questions"], result["num_answered"], result["num_abstained"]) == (5, 3, 2)
    assert (result["num_correct"], result["num_wrong"]) == (2, 1)
    assert result["accuracy"] == pytest.approx(2 / 5)
    assert result["meteor"] == pytest.approx((by_hand(2, 2, 2, 1) + by_hand(1, 1, 1, 1)) / 5)
    assert "pymorphy3" in result["preprocessing"] and "no synsets" in result["preprocessing"]


def test_confidence_threshold_and_tv_values(metric):
    result = metric.compute(
        predictions=["Рим", "Париж", "Лондон"], references=["Рим", "Париж", "Берлин"], question_numbers=[1, 2, 3],
        confidences=[0.9, 0.2, 0.6], confidence_threshold=0.5, value_multiplier=10,
    )
    assert result["abstained"] == [False, True, False]
    assert result["score"] == 10 - 30


def test_threshold_is_strict(metric):
    at = by_hand(1, 1, 1, 1)  # 0.5
    result = metric.compute(predictions=["Рим"], references=["Рим"], threshold=at)
    assert result["correct"] == [False]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"predictions": ["a"], "references": ["a", "b"]}, ValueError, "got 1 predictions for 2 references"),
        ({"predictions": [5], "references": ["a"]}, TypeError, "prediction 0: expected a string or None, got int 5"),
        ({"predictions": ["a", 5], "references": ["a", "b"]}, TypeError, "prediction 1: expected a string or None"),
        ({"predictions": ["a"], "references": [None]}, TypeError, "reference 0: expected a string, got NoneType"),
        ({"predictions": ["a", "b"], "references": ["a", 3.5]}, TypeError, "reference 1: expected a string, got float"),
        ({"predictions": ["a"], "references": [" "]}, ValueError, "reference 0: the gold answer is empty"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": [1, 2]}, ValueError, "2 question numbers for 1"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": ["3"]}, TypeError, "question number 0"),
        ({"predictions": ["a"], "references": ["a"], "confidences": [0.5]}, ValueError, "give both or neither"),
        ({"predictions": ["a"], "references": ["a"], "order": "reverse"}, ValueError, "order must be one of"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": [1], "value_multiplier": 0}, ValueError,
         "value_multiplier must be a finite positive number, got 0"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": [1], "value_multiplier": float("inf")},
         ValueError, "value_multiplier must be a finite positive number, got inf"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": [2.5]}, TypeError,
         r"question number 0: expected an integer, got float 2.5"),
        ({"predictions": ["a"], "references": ["a"], "question_numbers": [float("nan")]}, TypeError,
         r"question number 0: expected an integer, got float nan"),
        ({"predictions": ["a"], "references": ["a"], "threshold": "0.5"}, TypeError,
         r"threshold must be a number, got str '0.5'"),
        ({"predictions": ["a"], "references": ["a"], "threshold": float("nan")}, ValueError,
         r"threshold must be a finite number, got nan"),
        ({"predictions": ["a"], "references": ["a"], "confidences": [0.5], "confidence_threshold": "high"},
         TypeError, r"confidence_threshold must be a number, got str 'high'"),
        ({"predictions": ["a"], "references": ["a"], "confidences": [0.5], "confidence_threshold": float("nan")},
         ValueError, r"confidence_threshold must be a finite number, got nan"),
        ({"predictions": ["a"], "references": ["a"], "confidences": ["x"], "confidence_threshold": 0.5},
         TypeError, r"confidence 0: expected a number, got 'x'"),
        ({"predictions": ["a"], "references": ["a"], "tokenizer": "nltk"}, ValueError, "tokenizer must be one of"),
    ],
)
def test_bad_input_is_a_clear_error(metric, kwargs, error, message):
    with pytest.raises(error, match=message):
        metric.compute(**kwargs)


def test_integral_floats_and_a_pandas_series_are_question_numbers(metric):
    import pandas as pd

    numbers = pd.Series([2.0, 5], index=[10, 20], dtype=object)  # not 0..n-1: positions, not labels, count
    result = metric.compute(predictions=["Рим", "Рим"], references=["Рим", "Париж"], question_numbers=numbers)
    assert (result["score"], result["max_score"]) == (2 - 5, 7)
    assert isinstance(result["score"], int)


def test_values_outside_one_to_five_warn_and_still_score(metric):
    with pytest.warns(UserWarning, match=r"1 question number\(s\) outside 1-5, scored as given: 1 \(7\)"):
        result = metric.compute(predictions=["Рим", "Рим"], references=["Рим", "Рим"], question_numbers=[2, 7])
    assert result["score"] == 9


def test_abstentions_anywhere_and_through_add_batch(metric):
    # evaluate alone checks only the first prediction's type: None first must work as None later does
    result = metric.compute(predictions=[None, "Рим"], references=["Рим", "Рим"], question_numbers=[3, 1])
    assert (result["abstained"], result["score"]) == ([True, False], 1)
    assert metric.compute(predictions=[None], references=["Рим"])["num_abstained"] == 1
    metric.add_batch(predictions=[None], references=["Париж"])
    metric.add(prediction="Рим", reference="Рим")
    assert metric.compute()["abstained"] == [True, False]


def test_a_prediction_with_no_word_is_a_wrong_answer(metric):
    result = metric.compute(predictions=["?!"], references=["Рим"], question_numbers=[2])
    assert (result["abstained"], result["correct"], result["score"]) == ([False], [False], -2)


def test_metric_loads_offline_without_qahub_or_nltk_data(tmp_path):
    code = (
        "import sys, evaluate\n"
        f"m = evaluate.load({str(METRIC_DIR)!r})\n"
        "r = m.compute(predictions=['бульвара Сансет'], references=['Бульвар Сансет'])\n"
        "assert 'qahub' not in sys.modules, 'the metric imported qahub'\n"
        "print(r['meteor'])\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "NLTK_DATA": str(tmp_path / "none"),
           "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.split()[-1]) == pytest.approx(0.9375)


def _plain_meteor(prediction, gold, tokenize):
    """The uncached path: fresh tokenizing, pymorphy3 parsing and NLTK objects for every pair."""
    import pymorphy3
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    morph = _plain_meteor.morph = getattr(_plain_meteor, "morph", None) or pymorphy3.MorphAnalyzer()

    def lemmas(text):
        out = []
        for word in tokenize(text):
            known = [p.normal_form for p in morph.parse(word.lower()) if p.is_known]
            out.append(known[0] if known else word.lower())
        return out

    class NoWordNet:
        def synsets(self, word):
            return []

    return meteor_score([lemmas(prediction)], lemmas(gold), stemmer=PorterStemmer(), wordnet=NoWordNet())


REAL = shared_data("jeopardy")
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/data/jeopardy is absent")


def _real_answers():
    with open(REAL / VALIDATION, encoding="utf-8", newline="") as f:
        return [row["Answer"] for row in csv.DictReader(f)]


@needs_real
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_cached_scores_equal_the_plain_nltk_path_on_real_answers(metric, tokenizer):
    answers = _real_answers()[:400]
    predictions = perturb(answers)
    result = metric.compute(predictions=predictions, references=answers, tokenizer=tokenizer)
    tokenize, _ = _helpers()[1].tokenizer_for(tokenizer)
    expected = [_plain_meteor(p, g, tokenize) for p, g in zip(predictions, answers, strict=True)]
    assert result["meteor_per_example"] == expected


@needs_real
@needs_spacy
def test_spacy_tokenizer_equals_a_plain_spacy_blank_ru_on_real_texts():
    nlp = spacy.blank("ru")  # untouched: lexical attributes and is_punct as spaCy computes them
    tokenize, _ = _helpers()[1].tokenizer_for("spacy")
    with open(REAL / VALIDATION, encoding="utf-8", newline="") as f:
        texts = [text for row in csv.DictReader(f) for text in row.values()]
    texts += [" Рим", "Рим  Париж", "\t\n", "$5 №5 100% C++ 5°C"]
    assert [tokenize(t) for t in texts] == [[tok.text for tok in nlp(t) if not tok.is_punct] for t in texts]


@needs_real
@needs_spacy
def test_regex_tokenizer_equals_spacy_on_every_real_answer():
    spacy_like = _helpers()[1]
    tokenize, _ = spacy_like.tokenizer_for("spacy")
    differing = [a for a in _real_answers() if spacy_like.regex_tokens(a) != tokenize(a)]
    assert differing == []


@needs_real
def test_fast_lemmas_equal_the_first_known_pymorphy3_parse_on_real_words():
    import re

    import pymorphy3

    morph, meteor = pymorphy3.MorphAnalyzer(), _russian_meteor()
    with open(REAL / VALIDATION, encoding="utf-8", newline="") as f:
        texts = [text for row in csv.DictReader(f) for text in row.values()]  # questions too: ~20,000 words
    words = sorted({w.lower() for text in texts for w in re.findall(r"\w+", text)})
    for word in words:
        known = [p.normal_form for p in morph.parse(word) if p.is_known]
        assert meteor.lemma(word) == (known[0] if known else word), word


@needs_real
def test_every_real_validation_answer_is_correct_against_itself(metric):
    answers = _real_answers()
    result = metric.compute(predictions=answers, references=answers)
    assert result["num_correct"] == len(answers) == 3376


@needs_real
def test_official_notebook_score_when_the_extended_file_is_present():
    if not (REAL / EXTENDED).is_file():
        pytest.skip(f"{EXTENDED} is not in ../shared/data/jeopardy (too large to mirror)")
    result = _run(predictions=str(REAL / "deeppavlov_0_99_answers.csv"), references=str(REAL / EXTENDED))
    assert result["num_questions"] == 100
    assert result["score"] == -290  # the SCORE printed by evaluate_QA_system.ipynb


# --- command line -------------------------------------------------------------------------------------------


def _run(**overrides):
    parser = argparse.ArgumentParser()
    scoring.add_arguments(parser)
    argv = []
    for key, value in overrides.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return scoring.run(parser.parse_args(argv))


def test_cli_scores_the_bundled_sample():
    result = _run(predictions=SAMPLE / "predictions.json", references=SAMPLE / EXTENDED, confidence_threshold=0.3,
                  per_example=True)
    # +1 Рим, +2 Петербург (0.4545), -3 Лондон, 0 null, +5 Ла-Пас, +1 Старый Арбат (0.263), +2, +3 бульвара Сансет,
    # +4 Бейкер-стрит, 0 Бродвей (confidence 0.1 < 0.3)
    assert result["score"] == 1 + 2 - 3 + 0 + 5 + 1 + 2 + 3 + 4 + 0
    assert (result["num_correct"], result["num_wrong"], result["num_abstained"]) == (7, 1, 2)
    assert [e["question_id"] for e in result["examples"]] == [str(i) for i in range(10)]
    assert result["examples"][1]["meteor"] == pytest.approx(by_hand(1, 2, 1, 1))
    assert result["examples"][5]["meteor"] == pytest.approx(by_hand(1, 1, 2, 1))


def test_cli_headerless_answers_against_a_qa_file(tmp_path):
    preds = tmp_path / "answers.csv"
    preds.write_text("3,бульвара Сансет\n0,Рим\n", encoding="utf-8")
    refs = tmp_path / "qa.csv"
    refs.write_text("QuestionText,Answer\nq0,Париж\nq1,Канберра\nq2,Ла-Пас\nq3,Бульвар Сансет\n", encoding="utf-8")
    result = _run(predictions=preds, references=refs, missing="skip")
    assert (result["num_questions"], result["num_correct"], result["num_references_without_prediction"]) == (2, 1, 2)
    assert result["missing"] == "skip"
    assert "score" not in result  # no question numbers in a QuestionText,Answer file
    abstain = _run(predictions=preds, references=refs, missing="abstain")
    assert (abstain["num_abstained"], abstain["missing"]) == (2, "abstain")
    # the default: unmatched references are an error listing them
    with pytest.raises(ValueError, match=r"answers\.csv: no prediction for 2 question id\(s\) of .*qa\.csv: 1, 2; pass --missing skip .* or --missing abstain"):
        _run(predictions=preds, references=refs)


def test_cli_missing_error_lists_the_first_ids_and_the_count(tmp_path):
    refs = tmp_path / "qa.csv"
    refs.write_text("QuestionText,Answer\n" + "".join(f"q{i},Рим\n" for i in range(9)), encoding="utf-8")
    preds = tmp_path / "p.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"no prediction for 8 question id\(s\) of .*: 1, 2, 3, 4, 5 \.\.\. \(8 in all\)"):
        _run(predictions=preds, references=refs)


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("p.csv", "0,Рим\n".encode("cp1251"), r"p\.csv: line 1: not UTF-8 text \(invalid continuation byte at byte 2\)"),
        ("p.csv", "question_id,prediction\n0,Рим\n1,Р".encode() + "им".encode("utf-16"),
         r"p\.csv: line 3: not UTF-8 text"),
        ("p.json", '{"0": "Рим"}'.encode("utf-16"), r"p\.json: line 1: not UTF-8 text"),
        ("p.jsonl", '{"id": 0, "answer": "Рим"}\n{"id": 1, "answer": "П'.encode() + b"\xff\"}\n",
         r"p\.jsonl: line 2: not UTF-8 text"),
        ("p.csv", 'question_id,prediction\n0,"Рим\n'.encode(), r"p\.csv: line 2: malformed CSV \(unexpected end of data\)"),
        ("p.csv", 'question_id,prediction\n0,"Рим"x\n'.encode(), r"p\.csv: line 2: malformed CSV"),
    ],
)
def test_cli_unreadable_predictions_name_the_file_and_line(tmp_path, name, data, message):
    preds = tmp_path / name
    preds.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        _run(predictions=preds, references=SAMPLE / EXTENDED, missing="skip")


def test_cli_unreadable_references_name_the_file_and_line(tmp_path):
    preds = tmp_path / "p.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    refs = tmp_path / "refs.tsv"
    refs.write_bytes("QuestionID\tQuestionNumber\tAnswer\n0\t1\tРим\n".encode("cp1251"))
    with pytest.raises(ValueError, match=r"refs\.tsv: line 2: not UTF-8 text"):
        _run(predictions=preds, references=refs)
    refs.write_text('QuestionText,Answer\n"q,Рим\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.tsv: line 2: malformed CSV \(unexpected end of data\)"):
        _run(predictions=preds, references=refs)
    refs.write_text("QuestionID\tQuestionNumber\tAnswer\n0\t1\tРим\n1\t2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.tsv: line 3: expected 3 columns"):
        _run(predictions=preds, references=refs)


@pytest.mark.parametrize(
    "number, expected",
    [("2.0", 2), ("2", 2), ("2.5", None), ("nan", None), ("inf", None), ("1e400", None), ("x", None)],
)
def test_cli_question_numbers_like_the_metric(tmp_path, number, expected):
    refs = tmp_path / "refs.tsv"
    refs.write_text(f"QuestionID\tQuestionNumber\tAnswer\n0\t{number}\tРим\n", encoding="utf-8")
    preds = tmp_path / "p.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    if expected is None:
        with pytest.raises(ValueError, match=rf"refs\.tsv: line 2: question number must be an integer, got '{number}'"):
            _run(predictions=preds, references=refs)
    else:
        assert _run(predictions=preds, references=refs)["score"] == expected


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--value-multiplier", "1e400", "must be a finite number, got '1e400'"),
        ("--value-multiplier", "0", "must be above 0, got '0'"),
        ("--value-multiplier", "-10", "must be above 0, got '-10'"),
        ("--threshold", "nan", "must be a finite number, got 'nan'"),
        ("--confidence-threshold", "NaN", "must be a finite number, got 'NaN'"),
        ("--confidence-threshold", "high", "not a number: 'high'"),
    ],
)
def test_cli_refuses_non_finite_numbers(flag, value, message, capsys):
    parser = argparse.ArgumentParser()
    scoring.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--predictions", "p", "--references", "r", flag, value])
    assert f"argument {flag}: {message}" in capsys.readouterr().err


def test_cli_integral_value_multiplier_gives_integer_scores(tmp_path):
    result = _run(predictions=SAMPLE / "predictions.json", references=SAMPLE / EXTENDED, confidence_threshold=0.3,
                  value_multiplier="10.0")
    assert result["score"] == 150 and isinstance(result["score"], int)


def test_cli_json_and_jsonl(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text('{"question_id": 10, "answer": "Рим", "question_number": 2}\n'
                    '{"question_id": 11, "answer": "Париж", "question_number": 5}\n', encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"11": "Париж", "10": "Милан"}, ensure_ascii=False), encoding="utf-8")
    assert _run(predictions=preds, references=refs)["score"] == -2 + 5


@pytest.mark.parametrize(
    "predictions, message",
    [
        ('[{"question_id": 99, "prediction": "Рим"}]', r"preds\.json: 1 prediction id\(s\) not in .*refs\.jsonl: 99"),
        ('[{"question_id": 10, "prediction": 3}]', r"preds\.json: record 0: question 10: the prediction must be a string"),
        ('[{"question_id": 10, "prediction": "a"}, {"id": 10, "answer": "b"}]', r"record 1: duplicate prediction .* 10"),
        ('[{"prediction": "a"}]', r"record 0: no question id"),
        ("[1, 2", r"preds\.json: not valid JSON"),
    ],
)
def test_cli_bad_predictions_name_the_file_and_record(tmp_path, predictions, message):
    refs = tmp_path / "refs.jsonl"
    refs.write_text('{"question_id": 10, "answer": "Рим", "question_number": 2}\n', encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text(predictions, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        _run(predictions=preds, references=refs)


def test_cli_needs_confidences_for_a_confidence_threshold(tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"needs a confidence for every prediction; none for id\(s\) 0"):
        _run(predictions=preds, references=SAMPLE / EXTENDED, confidence_threshold=0.5, missing="skip")


def test_cli_empty_gold_answer_is_an_error(tmp_path):
    refs = tmp_path / "refs.csv"
    refs.write_text("QuestionText,Answer\nq0,\n", encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.csv: line 2: question 0: the gold answer is missing or empty"):
        _run(predictions=preds, references=refs)


def test_cli_reference_table_without_answer_column_is_an_error(tmp_path):
    refs = tmp_path / "refs.csv"
    refs.write_text("QuestionID\tQuestionNumber\tQuestionText\n0\t1\tq\n", encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text('{"0": "Рим"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.csv: line 1: the header has QuestionID but not Answer"):
        _run(predictions=preds, references=refs)


def test_qahub_evaluate_command_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    code = cli.main(["--quiet", "evaluate", "jeopardy_meteor", "--predictions", str(SAMPLE / "predictions.json"),
                     "--references", str(SAMPLE / EXTENDED), "--confidence-threshold", "0.3", "--output", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["score"] == 15


def test_demo_json_runs_the_sample_evaluation(capsys):
    spec = json.loads((SAMPLE / "demo.json").read_text(encoding="utf-8"))
    (argv,) = spec["evaluate"]
    argv = [arg.replace("{sample}", str(SAMPLE)) for arg in argv]
    assert Path(argv[argv.index("--predictions") + 1]).is_file()
    assert cli.main(["--quiet", "evaluate", *argv]) == 0
    assert json.loads(capsys.readouterr().out)["num_questions"] == 10
