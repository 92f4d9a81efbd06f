import argparse
import csv
import json
import math
import sys
import textwrap
from pathlib import Path

import evaluate
import pytest
from jeopardy_predictions import GARBAGE, perturb, replies
from qahub.metrics.jeopardy_meteor import task_api

from qahub import cli, registry
from qahub.evaluate_cli import jeopardy_meteor as scoring
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
@pytest.mark.quick
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
    assert result["status"] == ["answer", "answer", "unparseable", "abstained", "answer"]
    assert result["correct"] == [True, False, False, False, True]
    assert result["meteor_per_example"][2:4] == [0.0, 0.0]
    assert result["score"] == result["game_score"] == 4 - 2 + 0 + 0 + 5
    assert result["max_score"] == 15
    assert (result["num_questions"], result["num_answered"], result["num_abstained"]) == (5, 3, 2)
    assert (result["num_unparseable"], result["unparseable"], result["abstention_rate"]) == (1, 0.2, 0.4)
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
        ({"predictions": ["a"], "references": [None]}, TypeError,
         r"reference 0: expected a gold answer \(str\) or a row \(dict\), got NoneType"),
        ({"predictions": ["a", "b"], "references": ["a", 3.5]}, TypeError, r"reference 1: expected .* got float 3.5"),
        ({"predictions": ["a"], "references": [{"question_id": 12, "question": "q"}]}, ValueError,
         r"reference 0 \(question_id 12\): the row has no 'answer' field \(fields: question_id, question\)"),
        ({"predictions": ["a"], "references": [{"answer": None}]}, ValueError,
         r"reference 0: 'answer' must be a string, got NoneType None"),
        ({"predictions": ["a"], "references": [{"question_id": 3, "answer": " "}]}, ValueError,
         r"reference 0 \(question_id 3\): the gold answer is empty"),
        ({"predictions": ["a"], "references": [{"question_id": 3, "answer": "a", "question_number": "2"}]},
         ValueError, r"reference 0 \(question_id 3\): question_number must be an integer, got str '2'"),
        ({"predictions": ["a", "b"], "references": [{"answer": "a", "question_number": 2}, "b"]}, ValueError,
         r"reference 1: no question_number, while reference 0 has one: give every row a question_number, or pass"),
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
    metric.add_batch(predictions=[5, "\ud800"], references=[{"answer": "Рим"}, {"answer": "Лима"}])
    metric.add(prediction="Пас", reference={"answer": "Рим"})
    result = metric.compute()
    assert result["abstained"] == [True, False, True, True, True]
    assert result["status"] == ["unparseable", "answer", "unparseable", "unparseable", "abstained"]
    assert "score" not in result  # neither gold strings nor qa-like rows carry a question value


def test_a_prediction_with_no_word_is_a_wrong_answer(metric):
    result = metric.compute(predictions=["?!"], references=["Рим"], question_numbers=[2])
    assert (result["abstained"], result["correct"], result["score"]) == ([False], [False], -2)


# --- replies: the parser never raises ------------------------------------------------------------------------


ABSTENTIONS = ["", " \t\n ", "Ответ:", "****", "Пас", "Ответ: пас.", "Не знаю!", "**Я не знаю**",
               "Затрудняюсь ответить", "I don’t know."]
# bytes are not a reply; a string with a lone surrogate is not Unicode text
NOT_REPLIES = [None, 5, ["Рим"], b"\xd0\xa0\xd0\xb8\xd0\xbc", "Рим\ud800", "\udfff"]


@pytest.mark.parametrize(
    "reply, answer, status",
    [
        ("Рим", "Рим", "answer"),
        ("  Рим \n", "Рим", "answer"),
        ("Ответ: Рим.", "Рим", "answer"),  # the marker, a final period
        ("Думаю, это Лима.\nОтвет: Рим", "Рим", "answer"),  # the text after the last marker
        ("ответ: Лима. ОТВЕТ : Рим", "Рим", "answer"),
        ("**Ответ:** «Бульвар Сансет»", "Бульвар Сансет", "answer"),  # markdown emphasis, quotes
        ('"Монгол Шуудан"', "Монгол Шуудан", "answer"),
        ("`Рим`", "Рим", "answer"),
        ("### Рим\nПотому что это столица.", "Рим", "answer"),  # first non-empty line, heading mark
        ("\n\n  \n_Рим_", "Рим", "answer"),
        ("и т.д.", "и т.д.", "answer"),  # an abbreviation keeps its period (one token with it)
        ("А.С. Пушкин.", "А.С. Пушкин", "answer"),
        ('{"answer": "Ри', '{"answer": "Ри', "answer"),  # broken JSON is text: a (wrong) answer
        ("?!", "?!", "answer"),  # no word: a wrong answer, not an abstention
        *[(reply, "", "abstained") for reply in ABSTENTIONS],
        *[(reply, "", "unparseable") for reply in NOT_REPLIES],
    ],
)
def test_the_reply_parser(reply, answer, status):
    assert task_api.parse_reply(reply) == (answer, status)


def _garbage_rows():
    answers = ["Рим", "Лима", "Рим", "Рим", "Канберра", "Рим", "Париж"]
    return [{"question_id": i, "question_number": [1, 2, 3, 4, 5, 1, 2][i], "question": f"вопрос {i}",
             "answer": answer, "topic": "СТОЛИЦЫ"} for i, answer in enumerate(answers)]


def test_garbage_replies_give_finite_results_and_count_the_unparseable(metric):
    rows = _garbage_rows()
    result = metric.compute(predictions=GARBAGE, references=rows)
    assert result["status"] == ["abstained", "abstained", "answer", "answer", "answer", "unparseable", "unparseable"]
    assert result["correct"] == [False, False, False, True, False, False, False]
    # values 1 2 3 4 5 1 2: 0, 0, -3 (10,000 characters), +4 (Рим), -5 (broken JSON), 0, 0
    assert result["score"] == result["game_score"] == -4
    assert result["max_score"] == 18
    assert result["meteor"] == pytest.approx(by_hand(1, 1, 1, 1) / 7, abs=1e-12)
    assert result["accuracy"] == pytest.approx(1 / 7)
    assert (result["num_abstained"], result["num_unparseable"], result["num_wrong"]) == (4, 2, 2)
    assert result["unparseable"] == pytest.approx(2 / 7) and result["abstention_rate"] == pytest.approx(4 / 7)
    numbers = [v for v in result.values() if isinstance(v, float)]
    assert numbers and all(math.isfinite(v) for v in numbers)


@pytest.mark.quick
def test_the_harness_scores_each_reply_as_the_metric_does(metric):
    rows = _garbage_rows()
    replies = [*GARBAGE, "бульвара Сансет"]
    rows.append({**rows[0], "question_id": 7, "question_number": 4, "answer": "Бульвар Сансет"})
    result = metric.compute(predictions=replies, references=rows)
    per_example = [task_api.score(reply, row) for reply, row in zip(replies, rows, strict=True)]
    assert [e["meteor"] for e in per_example] == result["meteor_per_example"]
    assert [e["accuracy"] for e in per_example] == [float(c) for c in result["correct"]]
    assert [e["abstained"] for e in per_example] == [float(a) for a in result["abstained"]]
    assert [e["unparseable"] for e in per_example] == [float(s == "unparseable") for s in result["status"]]
    metrics = task_api.TASKS["qahub_jeopardy"].metrics
    game_total = metrics["game_score"][0]([e["game_score"] for e in per_example])
    assert game_total == result["score"] == -4 + 4
    assert isinstance(game_total, float)


def test_model_like_replies_score_the_same_in_the_metric_and_the_harness(metric, sample_rows):
    rows = sample_rows["extended"]["train"].to_list()
    answers = [row["answer"] for row in rows]
    for seed in range(3):
        model = replies(answers, seed=seed, garbage=0.3)
        result = metric.compute(predictions=model, references=rows)
        per_example = [task_api.score(reply, row) for reply, row in zip(model, rows, strict=True)]
        assert [e["meteor"] for e in per_example] == result["meteor_per_example"]
        assert task_api.total([e["game_score"] for e in per_example]) == result["game_score"]
        assert sum(e["unparseable"] for e in per_example) == result["num_unparseable"]
        assert sum(e["abstained"] for e in per_example) == result["num_abstained"]


# --- references: the builder's rows as they are --------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory):
    from qahub.testing import build

    cache = tmp_path_factory.mktemp("cache")
    return {config: build("jeopardy", config, SAMPLE, cache) for config in ("extended", "qa")}


def _sample_predictions():
    records = json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8"))
    return [r["prediction"] for r in records], [r["confidence"] for r in records]


def test_extended_rows_give_the_game_score_from_question_number(metric, sample_rows):
    dataset = sample_rows["extended"]["train"]
    predictions, confidences = _sample_predictions()
    for references in (dataset, dataset.to_list()):  # a Dataset, or a list of row dicts
        result = metric.compute(predictions=predictions, references=references, confidences=confidences,
                                confidence_threshold=0.3)
        assert (result["score"], result["max_score"]) == (15, 30)  # as the command line gives (test below)
        assert (result["num_correct"], result["num_wrong"], result["num_abstained"]) == (7, 1, 2)
    overridden = metric.compute(predictions=predictions, references=dataset, question_numbers=[1] * 10,
                                confidences=confidences, confidence_threshold=0.3)
    assert (overridden["score"], overridden["max_score"]) == (7 - 1, 10)


def test_qa_rows_have_no_game_score_unless_question_numbers_are_given(metric, sample_rows):
    validation = sample_rows["qa"]["validation"]
    assert validation.column_names == ["question_id", "question", "answer"]
    golds = validation["answer"]
    result = metric.compute(predictions=golds, references=validation)
    assert "score" not in result and result["num_correct"] == len(golds) == 4
    numbered = metric.compute(predictions=["Пас", *golds[1:]], references=validation, question_numbers=[1, 2, 3, 4])
    assert (numbered["score"], numbered["max_score"], numbered["num_abstained"]) == (2 + 3 + 4, 10, 1)


def test_a_dataset_without_an_answer_column_is_an_error(metric, sample_rows):
    dataset = sample_rows["extended"]["train"].remove_columns("answer")
    with pytest.raises(ValueError, match=r"references: the dataset has no 'answer' column \(columns: question_id, "):
        metric.compute(predictions=[""] * len(dataset), references=dataset)


# --- the lm-evaluation-harness task ---------------------------------------------------------------------------


def test_the_task_definition():
    task = task_api.TASKS["qahub_jeopardy"]
    assert task.configs == ("extended", "qa") and task.splits == ("validation", "train")
    assert task.fewshot_split == "train" and task.until == ("\n",)
    assert {name: metric.higher_is_better for name, metric in task.metrics.items()} == {
        "meteor": True, "accuracy": True, "game_score": True, "abstained": False, "unparseable": False}
    assert [metric.aggregation for metric in task.metrics.values()] == ["mean", "mean", task_api.total, "mean", "mean"]
    assert task_api.total([]) == 0.0 and task_api.total([3.0, -2.0]) == 1.0


def test_the_prompt_says_how_to_answer_and_abstain(sample_rows):
    row = sample_rows["extended"]["train"][0]
    text = task_api.prompt(row)
    assert "«Ответ: <краткий ответ>»" in text and "«Ответ: Пас»" in text
    assert text.endswith(f"Тема: СТОЛИЦЫ\nСтоимость вопроса: 1\nВопрос: {row['question']}\nОтвет:")
    qa_text = task_api.prompt(sample_rows["qa"]["validation"][0])
    assert "Тема" not in qa_text and "Стоимость" not in qa_text and qa_text.endswith("\nОтвет:")
    assert task_api.target({"answer": "Рим\nи Ватикан"}) == "Рим и Ватикан"  # never the stop sequence


@pytest.mark.parametrize("config, split", [("extended", "train"), ("qa", "validation"), ("qa", "train")])
def test_an_oracle_replying_the_target_gets_the_top_score(metric, sample_rows, config, split):
    rows = list(sample_rows[config][split])
    task = task_api.TASKS["qahub_jeopardy"]
    scores = [task.score(task.target(row), row) for row in rows]
    assert all(task.usable(row) and "\n" not in task.target(row) for row in rows)
    assert [s["accuracy"] for s in scores] == [1.0] * len(rows)
    assert [s["game_score"] for s in scores] == [float(row.get("question_number", 1)) for row in rows]
    golds = [row["answer"] for row in rows]
    top = metric.compute(predictions=golds, references=golds)["meteor_per_example"]  # gold against itself
    assert [s["meteor"] for s in scores] == top
    assert sum(s["abstained"] + s["unparseable"] for s in scores) == 0


def test_chat_style_replies_score_as_the_bare_target(sample_rows):
    row = sample_rows["extended"]["train"][7]  # Бульвар Сансет, value 3
    bare = task_api.score(task_api.target(row), row)
    for reply in [" Бульвар Сансет", "Ответ: Бульвар Сансет", "**Ответ:** «Бульвар Сансет».", "Ответ: бульвара Сансет"]:
        assert task_api.score(reply, row) == bare == {
            "meteor": by_hand(2, 2, 2, 1), "accuracy": 1.0, "game_score": 3.0, "abstained": 0.0, "unparseable": 0.0}
    assert task_api.score("Ответ: Пас", row) == {
        "meteor": 0.0, "accuracy": 0.0, "game_score": 0.0, "abstained": 1.0, "unparseable": 0.0}
    assert task_api.score("Ответ: Бродвей", row)["game_score"] == -3.0


def test_the_task_names_its_resources():
    used = task_api.resources()
    assert used["threshold"] == THRESHOLD and "pymorphy3" in used["preprocessing"]
    assert used["tokenizer"].startswith("spacy-blank-ru" if spacy else "regex")


# run in a process where qahub cannot be imported, with the other checks of this metric (tests/metric_alone.py)
_WITHOUT_QAHUB_CODE = textwrap.dedent(
    """
    import evaluate

    m = evaluate.load(source)
    r = m.compute(predictions=['бульвара Сансет'], references=['Бульвар Сансет'])
    print(r['meteor'])
    """
)
WITHOUT_QAHUB = {"jeopardy_meteor_offline": _WITHOUT_QAHUB_CODE}


def test_metric_loads_offline_without_qahub_or_nltk_data(metric_alone):
    """No network, no NLTK data (NLTK_DATA and HOME point at empty folders), and the metric never tries to import
    qahub (tests/metric_alone.py records every attempt)."""
    check = metric_alone("jeopardy_meteor")["jeopardy_meteor_offline"]
    assert check["ok"], check["error"][-3000:]
    assert not check["qahub_imports"], "the metric imported qahub"
    assert float(check["stdout"].split()[-1]) == pytest.approx(0.9375)


def _plain_meteor():
    """The benchmark's uncached path, ``plain_meteor(morph, tokenize, prediction, gold)``: fresh tokenizing,
    pymorphy3 parsing and NLTK objects for every pair."""
    sys.path.append(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_jeopardy_meteor import plain_meteor

    return plain_meteor


REAL = shared_data("jeopardy")
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/data/jeopardy is absent")


def _real_answers():
    with open(REAL / VALIDATION, encoding="utf-8", newline="") as f:
        return [row["Answer"] for row in csv.DictReader(f)]


@needs_real
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_cached_scores_equal_the_plain_nltk_path_on_real_answers(metric, tokenizer):
    import pymorphy3

    answers = _real_answers()[:400]
    predictions = perturb(answers)
    result = metric.compute(predictions=predictions, references=answers, tokenizer=tokenizer)
    morph, plain_meteor = pymorphy3.MorphAnalyzer(), _plain_meteor()
    tokenize, _ = _helpers()[1].tokenizer_for(tokenizer)
    expected = [plain_meteor(morph, tokenize, p, g) for p, g in zip(predictions, answers, strict=True)]
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
def test_an_oracle_gets_the_top_score_on_every_real_validation_answer():
    docs = [{"question": "?", "answer": answer} for answer in _real_answers()]
    scorer = task_api.meteor()
    scores = [task_api.score(doc["answer"], doc) for doc in docs]
    assert [s["meteor"] for s in scores] == [scorer.score(d["answer"], d["answer"]) for d in docs]
    assert sum(s["accuracy"] for s in scores) == len(docs) == 3376
    assert sum(s["game_score"] for s in scores) == 3376  # qa rows: each question is worth 1


@needs_real
def test_the_clean_target_scores_the_top_wherever_the_gold_has_no_annotation():
    """The target drops the gold's annotations; the official recipe scores against the whole gold, so a short
    right answer can fall below the threshold only where the gold carries an annotation or a comment."""
    docs = [{"question": "?", "answer": answer} for answer in _real_answers()]
    scorer = task_api.meteor()
    scores = [task_api.score(task_api.target(doc), doc) for doc in docs]
    assert [s["meteor"] for s in scores] == [scorer.score(task_api.target(d), d["answer"]) for d in docs]
    missed = [d["answer"] for d, s in zip(docs, scores) if not s["accuracy"]]
    assert all(task_api.target({"answer": answer}) != answer for answer in missed)
    assert any(task_api.target(d) == d["answer"] for d in docs) and len(missed) < len(docs) / 50


@needs_real
def test_official_notebook_score_when_the_extended_file_is_present():
    if not (REAL / EXTENDED).is_file():
        pytest.skip(f"{EXTENDED} is not in ../shared/data/jeopardy (too large to mirror)")
    result = _run(predictions=str(REAL / "deeppavlov_0_99_answers.csv"), references=str(REAL / EXTENDED))
    assert result["num_questions"] == 100
    assert result["score"] == -290  # the SCORE printed by evaluate_QA_system.ipynb


# --- command line -------------------------------------------------------------------------------------------


@pytest.fixture
def rome_preds(tmp_path):
    """``tmp_path / "p.json"``: predictions answering question 0 with «Рим»."""
    path = tmp_path / "p.json"
    path.write_text('{"0": "Рим"}', encoding="utf-8")
    return path


def _run(**overrides):
    parser = argparse.ArgumentParser()
    scoring.add_arguments(parser)
    argv = []
    for key, value in overrides.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return scoring.run(parser.parse_args(argv))


@pytest.mark.quick
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
    with pytest.raises(ValueError, match=r"answers\.csv: no prediction for 2 of the 4 rows \(question_id '1', '2'\); "
                                         r"pass --missing skip .* or --missing abstain"):
        _run(predictions=preds, references=refs)


def test_cli_missing_error_lists_the_first_ids_and_the_count(tmp_path, rome_preds):
    refs = tmp_path / "qa.csv"
    refs.write_text("QuestionText,Answer\n" + "".join(f"q{i},Рим\n" for i in range(9)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"no prediction for 8 of the 9 rows \(question_id '1', '2', '3', '4', '5' "
                                         r"\.\.\. \(8 in all\)\)"):
        _run(predictions=rome_preds, references=refs)


@pytest.mark.parametrize(
    "name, data, message",
    [
        # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
        ("p.csv", "0,Рим\n".encode("cp1251"), r"p\.csv: not UTF-8 text \(invalid continuation byte at byte 2, line 1\)"),
        ("p.csv", "question_id,prediction\n0,Рим\n1,Р".encode() + "им".encode("utf-16"),
         r"p\.csv: not UTF-8 text \(.*, line 3\)"),
        ("p.json", '{"0": "Рим"}'.encode("utf-16"), r"p\.json: not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
        ("p.jsonl", '{"id": 0, "answer": "Рим"}\n{"id": 1, "answer": "П'.encode() + b"\xff\"}\n",
         r"p\.jsonl: record line 2: not UTF-8 text"),
        ("p.csv", 'question_id,prediction\n0,"Рим\n'.encode(),
         r"p\.csv: record line 2: malformed CSV \(unexpected end of data\)"),
        ("p.csv", 'question_id,prediction\n0,"Рим"x\n'.encode(), r"p\.csv: record line 2: malformed CSV"),
    ],
)
def test_cli_unreadable_predictions_name_the_file_and_line(tmp_path, name, data, message):
    preds = tmp_path / name
    preds.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        _run(predictions=preds, references=SAMPLE / EXTENDED, missing="skip")


HEADER = "QuestionID\tQuestionNumber\tQuestionText\tAnswer\tTopic\tSource\tAuthor Full Name\tTourName\tTourLink\n"


def _extended(*rows):
    """An upstream extended table: ``rows`` of (id, number, answer) and placeholder text columns."""
    return HEADER + "".join(f"{qid}\t{number}\tвопрос\t{answer}\tТЕМА\tNone\tNone\tNone\tNone\n"
                            for qid, number, answer in rows)


def test_cli_unreadable_references_name_the_file_and_line(tmp_path, rome_preds):
    refs = tmp_path / "refs.tsv"  # any name: the file is built as the builder's extended table
    refs.write_bytes(_extended((0, 1, "Рим")).encode("cp1251"))
    with pytest.raises(ValueError, match=r"refs\.tsv: record line 2: not UTF-8 text"):
        _run(predictions=rome_preds, references=refs)
    refs.write_text('QuestionText,Answer\n"q,Рим\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.tsv: record line 2: malformed CSV \(unexpected end of data\)"):
        _run(predictions=rome_preds, references=refs)
    refs.write_text(_extended((0, 1, "Рим")) + "1\t2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.tsv: record line 3: expected 9 columns, got 2"):
        _run(predictions=rome_preds, references=refs)
    refs.write_text(_extended((0, 1, "Рим"), (0, 2, "Лима")), encoding="utf-8")
    with pytest.raises(ValueError, match=r"refs\.tsv: record line 3: duplicate QuestionID 0"):
        _run(predictions=rome_preds, references=refs)


@pytest.mark.parametrize(
    "number, expected",
    [("2", 2), ("-0", 0), ("2.0", None), ("2.5", None), ("nan", None), ("inf", None), ("1e400", None), ("x", None)],
)
def test_cli_question_numbers_are_read_by_the_builder(tmp_path, rome_preds, number, expected):
    refs = tmp_path / "refs.tsv"
    refs.write_text(_extended((0, number, "Рим")), encoding="utf-8")
    if expected is None:
        with pytest.raises(ValueError, match=rf"refs\.tsv: record line 2: question_number must be an integer, got '{number}'"):
            _run(predictions=rome_preds, references=refs)
    elif expected == 0:
        with pytest.warns(UserWarning, match=r"refs\.tsv: 1 row\(s\) with a QuestionNumber outside 1-5, kept as given"):
            assert _run(predictions=rome_preds, references=refs)["score"] == expected
    else:
        assert _run(predictions=rome_preds, references=refs)["score"] == expected


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
        # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
        ('[{"question_id": 99, "prediction": "Рим"}]', r"preds\.json: record 0: the id '99' is not a row of .*refs\.jsonl"),
        ('[{"question_id": 10, "prediction": "a"}, {"id": 10, "answer": "b"}]',
         r"record 1: the id '10' is given twice \(first in record 0\)"),
        ('[{"prediction": "a"}]', r"record 0: no id: expected the field 'question_id' or 'id' or 'QuestionID'"),
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


def test_cli_replies_of_any_json_type_are_counted_not_refused(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_text('{"question_id": 10, "answer": "Рим", "question_number": 2}\n'
                    '{"question_id": 11, "answer": "Лима", "question_number": 3}\n'
                    '{"question_id": 12, "answer": "Париж", "question_number": 4}\n', encoding="utf-8")
    preds = tmp_path / "preds.json"
    preds.write_text('[{"question_id": 10, "prediction": 3}, {"id": 11, "answer": "Ответ: **Лима**"},'
                     ' {"id": 12, "answer": {"x": 1}}]', encoding="utf-8")
    result = _run(predictions=preds, references=refs, per_example=True)
    assert [e["status"] for e in result["examples"]] == ["unparseable", "answer", "unparseable"]
    assert (result["score"], result["num_unparseable"], result["examples"][1]["answer"]) == (3, 2, "Лима")


def test_cli_reads_an_exported_folder_and_a_folder_of_upstream_files(sample_exports, tmp_path):
    out = sample_exports["jeopardy"]
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"0": "Париж", "2": "Ответ: бульвара Сансет"}, ensure_ascii=False), encoding="utf-8")
    for folder in (out, SAMPLE):  # qa validation: Париж, Канберра, Бульвар Сансет, "Бейкер-стрит, Лондон"
        result = _run(predictions=preds, references=folder, config="qa", split="validation", missing="skip")
        assert (result["num_questions"], result["num_correct"], "score" in result) == (2, 2, False)
    extended = _run(predictions=SAMPLE / "predictions.json", references=out, confidence_threshold=0.3)
    assert extended["score"] == 15  # config extended, its only split (train)
    with pytest.raises(ValueError, match=r"config qa has no split 'test' \(splits: "):
        _run(predictions=preds, references=out, config="qa", split="test")


def test_cli_needs_confidences_for_a_confidence_threshold(rome_preds):
    with pytest.raises(ValueError, match=r"needs a confidence for every prediction; none for id\(s\) 0"):
        _run(predictions=rome_preds, references=SAMPLE / EXTENDED, confidence_threshold=0.5, missing="skip")


@pytest.mark.parametrize("table, message", [
    pytest.param("QuestionText,Answer\nq0,\n", r"refs\.csv: question 0: the gold answer is missing or empty \(None\)",
                 id="empty_gold_answer"),
    pytest.param("QuestionID\tQuestionNumber\tQuestionText\n0\t1\tq\n",
                 r"refs\.csv: record line 1: expected the tab-separated header", id="no_answer_column"),
])
def test_cli_bad_reference_table_is_an_error(tmp_path, rome_preds, table, message):
    refs = tmp_path / "refs.csv"
    refs.write_text(table, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        _run(predictions=rome_preds, references=refs)


def test_qahub_evaluate_command_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    code = cli.main(["--quiet", "evaluate", "jeopardy_meteor", "--predictions", str(SAMPLE / "predictions.json"),
                     "--references", str(SAMPLE / EXTENDED), "--confidence-threshold", "0.3", "--output", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8"))
    assert printed["score"] == 15


def test_demo_json_runs_the_sample_evaluations(capsys):
    demo = json.loads((SAMPLE / "demo.json").read_text(encoding="utf-8"))
    results = []
    for argv in demo["evaluate"]:
        argv = [arg.replace("{sample}", str(SAMPLE)) for arg in argv]
        assert Path(argv[argv.index("--predictions") + 1]).is_file()
        assert cli.main(["--quiet", "evaluate", *argv]) == 0
        results.append(json.loads(capsys.readouterr().out))
    assert (results[0]["num_questions"], results[0]["score"]) == (10, 15)
    # chat-model replies to the qa validation rows: Париж, Канберра, бульвара Сансет correct; null
    replies = results[1]
    assert [e["status"] for e in replies["examples"]] == ["answer"] * 3 + ["unparseable"]
    assert [e["answer"] for e in replies["examples"][:3]] == ["Париж", "Канберра", "бульвара Сансет"]
    assert (replies["num_correct"], replies["num_unparseable"], "score" in replies) == (3, 1, False)


# --- round 2: nothing scored, one check per input, references from rows, strict JSON -------------------------


def test_nothing_to_score_is_a_value_error_not_zero(metric):
    with pytest.raises(ValueError, match=r"^nothing to score: no predictions and no references were given$"):
        metric.compute(predictions=[], references=[])
    with pytest.raises(ValueError, match="nothing to score"):
        task_api_free_score_answers()([], [])


def task_api_free_score_answers():
    """``score_answers`` from the metric directory (the metric without evaluate)."""
    sys.path.insert(0, str(METRIC_DIR.parent))
    try:
        from jeopardy_meteor.jeopardy_meteor import score_answers
    finally:
        sys.path.pop(0)
    return score_answers


def test_direct_compute_skips_the_cache_and_equals_add_batch(metric, monkeypatch):
    predictions = ["Ответ: бульвара Сансет", None, "Рим", 5, "\ud800", "Пас"]
    references = [{"answer": "Бульвар Сансет", "question_number": 4}, {"answer": "Лима", "question_number": 1},
                  {"answer": "Уругвай", "question_number": 2}, {"answer": "Рим", "question_number": 3},
                  {"answer": "Рим", "question_number": 5}, {"answer": "Танка", "question_number": 2}]
    metric.add_batch(predictions=predictions[:3], references=references[:3])
    metric.add_batch(predictions=predictions[3:], references=references[3:])
    through_cache = metric.compute()
    monkeypatch.setattr(evaluate.Metric, "add_batch", lambda *a, **k: pytest.fail("compute wrote evaluate's cache"))
    direct = metric.compute(predictions=predictions, references=references)
    assert direct == through_cache
    assert (direct["score"], direct["max_score"], direct["num_unparseable"]) == (4 - 2, 17, 3)


def test_each_input_is_checked_once(metric):
    """compute reads each input once (the previous version checked question numbers and confidences in
    compute, then again while scoring)."""
    reads = []

    class Counted(list):
        def __iter__(self):
            reads.append(self.name)
            return super().__iter__()

    def counted(name, values):
        values = Counted(values)
        values.name = name
        return values

    result = metric.compute(predictions=counted("predictions", ["Рим", "Лима"]),
                            references=counted("references", ["Рим", "Париж"]),
                            question_numbers=counted("question_numbers", [2, 3]),
                            confidences=counted("confidences", [0.9, 0.8]), confidence_threshold=0.5)
    assert result["score"] == 2 - 3
    assert sorted(reads) == ["confidences", "predictions", "question_numbers", "references"]


def test_options_are_checked_before_evaluate_reads_its_cache(metric):
    metric.add(prediction="Рим", reference="Рим")
    with pytest.raises(ValueError, match="order must be one of"):
        metric.compute(order="reverse")
    assert metric.compute()["num_questions"] == 1  # the added example is still there, the cache not locked


def _cli(argv, capsys):
    code = cli.main(["evaluate", "jeopardy_meteor", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
EMPTY = "empty: no predictions, nothing to score"
NO_RECORD = "holds no predictions: nothing to score"


@pytest.mark.parametrize("name, text, problem", [
    ("p.csv", "", EMPTY), ("p.csv", "question_id,prediction\n", NO_RECORD), ("p.json", "{}", NO_RECORD),
    ("p.json", "[]", NO_RECORD), ("p.jsonl", "\n\n", EMPTY)])
def test_cli_nothing_predicted_is_an_error_even_with_missing_abstain(tmp_path, capsys, name, text, problem):
    preds = tmp_path / name
    preds.write_text(text, encoding="utf-8")
    code, out, err = _cli(["--predictions", preds, "--references", SAMPLE / EXTENDED, "--missing", "abstain"], capsys)
    assert (code, out) == (1, "")
    assert err == f"qahub evaluate: error: {preds}: {problem}\n"


@pytest.mark.parametrize(
    "name, text, where, key",
    [("p.json", '{"0": "Рим", "0": "Париж"}', "", "0"),
     ("p.json", '[{"question_id": 0, "prediction": "Рим", "prediction": "Париж"}]', "", "prediction"),
     ("p.jsonl", '{"id": 0, "answer": "Рим"}\n{"id": 1, "id": 2, "answer": "Рим"}\n', ": record line 2", "id")],
)
def test_cli_duplicate_json_keys_are_an_error_naming_the_key(tmp_path, capsys, name, text, where, key):
    preds = tmp_path / name
    preds.write_text(text, encoding="utf-8")
    code, out, err = _cli(["--predictions", preds, "--references", SAMPLE / EXTENDED, "--missing", "skip"], capsys)
    assert (code, out) == (1, "")
    assert err == f"qahub evaluate: error: {preds}{where}: not valid JSON (an object names the key {key!r} twice)\n"


def test_cli_duplicate_keys_in_json_references(tmp_path, rome_preds, capsys):
    refs = tmp_path / "refs.jsonl"
    refs.write_text('{"question_id": 0, "answer": "Рим", "answer": "Лима"}\n', encoding="utf-8")
    code, _, err = _cli(["--predictions", rome_preds, "--references", refs], capsys)
    assert (code, err) == (1, f"qahub evaluate: error: {refs}: record line 1: not valid JSON (an object names the key "
                              "'answer' twice)\n")


def test_cli_a_lone_surrogate_id_is_a_one_line_error_naming_the_file(tmp_path, capsys):
    refs = tmp_path / "refs.jsonl"
    refs.write_text('{"question_id": "\\ud800", "answer": "Рим"}\n', encoding="utf-8")
    preds = tmp_path / "p.json"
    preds.write_text('{"\\ud800": "Рим"}', encoding="utf-8")
    code, out, err = _cli(["--predictions", preds, "--references", refs, "--per-example"], capsys)
    assert (code, out) == (1, "")
    assert err == (f"qahub evaluate: error: {refs}: record line 1: the id 'question_id' ('\\ud800') holds a lone "
                   "surrogate, which is not text\n")
    assert "codec" not in err


def test_cli_a_lone_surrogate_reply_is_counted_unparseable(tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text('{"0": "Рим\\ud800", "1": "Петербург"}', encoding="utf-8")
    code, out, _ = _cli(["--predictions", preds, "--references", SAMPLE / EXTENDED, "--missing", "skip",
                         "--per-example"], capsys)
    result = json.loads(out)
    assert code == 0 and [e["status"] for e in result["examples"]] == ["unparseable", "answer"]
    assert (result["num_unparseable"], result["score"]) == (1, 2)


def test_cli_data_dir_builds_the_references(tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"0": "Париж", "2": "Ответ: бульвара Сансет"}, ensure_ascii=False), encoding="utf-8")
    code, out, _ = _cli(["--predictions", preds, "--data-dir", SAMPLE, "--config", "qa", "--split", "validation",
                         "--missing", "skip"], capsys)
    assert code == 0 and (json.loads(out)["num_questions"], json.loads(out)["num_correct"]) == (2, 2)
    code, out, _ = _cli(["--quiet", "--predictions", SAMPLE / "predictions.json", "--data-dir", SAMPLE,
                         "--confidence-threshold", "0.3"], capsys)
    assert code == 0 and json.loads(out)["score"] == 15  # extended, its only split (train)


def test_cli_a_split_whose_file_is_absent_names_the_file(tmp_path, rome_preds, capsys):
    folder = tmp_path / "upstream"
    folder.mkdir()
    (folder / VALIDATION).write_bytes((SAMPLE / VALIDATION).read_bytes())
    code, out, err = _cli(["--quiet", "--predictions", rome_preds, "--data-dir", folder, "--config", "qa", "--split",
                           "train"], capsys)
    assert (code, out) == (1, "")
    assert err == (f"qahub evaluate: error: {folder}: config qa split 'train' needs "
                   "Russian_QA_Jeopardy_dataset_extended_training.csv, which is not there (splits built from the "
                   "folder: validation)\n")


@pytest.mark.parametrize("option, value, message", [
    ("--references", "{tmp}/absent.csv", "--references {tmp}/absent.csv: no such file or folder (nor a Hub dataset id ORG/NAME)"),
    ("--references", "{tmp}/absent", "--references {tmp}/absent: no such file or folder (nor a Hub dataset id ORG/NAME)"),
    ("--data-dir", "{tmp}/absent", "--data-dir {tmp}/absent: no such file or folder"),
    ("--data-dir", "{tmp}/p.json", "--data-dir {tmp}/p.json: not a folder"),
])
def test_cli_a_missing_reference_location_is_named(tmp_path, rome_preds, capsys, option, value, message):
    code, _, err = _cli(["--predictions", rome_preds, option, value.format(tmp=tmp_path)], capsys)
    assert (code, err) == (1, f"qahub evaluate: error: {message.format(tmp=tmp_path)}\n")


def test_cli_quiet_prints_only_the_result(tmp_path, capsys):
    refs = tmp_path / "refs.tsv"
    refs.write_text(_extended((0, 0, "Рим"), (1, 2, "Лима")), encoding="utf-8")  # 0: outside 1-5, a warning
    preds = tmp_path / "p.json"
    preds.write_text('{"0": "Рим", "1": "Лима"}', encoding="utf-8")
    argv = ["evaluate", "jeopardy_meteor", "--predictions", str(preds), "--references", str(refs)]
    with pytest.warns(UserWarning, match="outside 1-5"):
        assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main(["--quiet", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["score"] == 2


def test_the_adapter_has_no_reference_csv_parser():
    """References come from the builder or an export; the adapter has no file reader of its own (prediction files,
    and JSON rows of references, are read by the one prediction reader, qahub.evaluate_cli.predictions)."""
    import inspect

    from qahub.export import reader

    assert (scoring.export_rows, scoring.built_rows) == (reader.export_rows, reader.built_rows)
    reader = inspect.getsource(scoring.read_references)
    assert "export_rows(" in reader and "built_rows(" in reader
    source = inspect.getsource(scoring)
    assert not any(name in source for name in ("import csv", "import json", "read_text(", "read_bytes("))


# how tests/test_predictions.py scores this corpus's gold replies against its sample export: the metric
# command and its options, the config and split read, the reply field, and (id fields, gold reply) of each
# prediction a row of that split gives
PREDICTION_CASE = dict(
    corpus="jeopardy", metric=["jeopardy_meteor"], config="qa", split="validation", reply="prediction",
    items=lambda row: [({"question_id": row["question_id"]}, f"Ответ: {row['answer']}")], gold="answer")


@needs_spacy
def test_a_cli_score_imports_neither_scipy_sklearn_nor_chardet():
    """NLTK's package imports scipy (its stats and, for a dependency parser, its sparse matrices) and scikit-learn,
    spaCy's imports requests, which imports chardet: all inside ``except ImportError``, none used by METEOR or the
    tokenizer, made unimportable while ``qahub evaluate jeopardy_meteor`` scores (issue 44). The printed result is
    byte for byte the one of a run where they are importable (and imported)."""
    import subprocess

    argv = ["--quiet", "evaluate", "jeopardy_meteor", "--predictions", str(SAMPLE / "predictions.json"),
            "--references", str(SAMPLE / "Russian_QA_Jeopardy_dataset_extended.csv"), "--confidence-threshold", "0.3",
            "--per-example"]
    code = ("import json, sys; from qahub import cli; from qahub.evaluate_cli import jeopardy_meteor as scoring; "
            "scoring.ADAPTER.unimportable = tuple(json.loads(sys.argv[2])) or scoring.ADAPTER.unimportable; "
            "status = cli.main(json.loads(sys.argv[1])); print(json.dumps([status, sorted({m.split('.')[0] for m in "
            "sys.modules} & {'scipy', 'sklearn', 'chardet', 'torch'})]))")

    def run(unimportable):
        done = subprocess.run([sys.executable, "-c", code, json.dumps(argv), json.dumps(unimportable)],
                              capture_output=True, text=True, check=True)
        *printed, last = done.stdout.splitlines()
        return "\n".join(printed), json.loads(last), done.stderr

    guarded, (status, imported), stderr = run([])
    assert (status, imported) == (0, []), stderr[-2000:]
    unguarded, (status, imported), stderr = run(["torch"])
    assert status == 0 and {"scipy", "sklearn", "chardet"} <= set(imported), stderr[-2000:]
    assert guarded == unguarded and '"meteor_per_example"' not in guarded and '"examples"' in guarded
