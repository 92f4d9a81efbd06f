"""jeopardy_meteor: the official correctness test and game score of the Russian QA Jeopardy! data set."""

import datasets
import evaluate

from .game import abstentions, check_number, check_texts, checked_numbers, game_score, question_values
from .russian_meteor import ORDERS, THRESHOLD, shared
from .spacy_like import TOKENIZERS

_CITATION = """\
@inproceedings{mikhalkova-khlyupin-2022-russian,
    title = "{R}ussian Jeopardy! Data Set for Question-Answering Systems",
    author = "Mikhalkova, Elena and Khlyupin, Alexander",
    booktitle = "Proceedings of the Thirteenth Language Resources and Evaluation Conference (LREC 2022)",
    year = "2022",
    address = "Marseille, France",
    publisher = "European Language Resources Association",
    note = "arXiv:2112.02325",
}
"""

_DESCRIPTION = """\
The evaluation of the Russian QA Jeopardy! ("Своя игра") data set, as its `evaluate_QA_system.ipynb` does it:
both answers are tokenized as spaCy's Russian tokenizer does, without punctuation, and lemmatized (pymorphy3), METEOR is computed with NLTK's
`meteor_score`, and an answer is correct when METEOR > 0.227743. With question numbers (a question's
position 1-5 in its topic is its value) the game score adds the value of each correct answer, subtracts that
of each wrong one and leaves abstentions (no answer, or a confidence below a threshold) at 0.

By default METEOR is called as the notebook calls it, `meteor_score([prediction], gold)`: the prediction is
NLTK's reference and the gold answer its hypothesis. `order="standard"` gives `meteor_score([gold],
prediction)`. No NLTK data is needed: WordNet is replaced by a stand-in with no synsets.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of answers (str); None or a blank string is an abstention.
    references: list of gold answers (non-empty str).
    question_numbers: optional list of int (or integral floats such as 2.0), each question's number in its
        topic (1-5): its value. Numbers outside 1-5 warn and are scored as given.
    confidences: optional list of float; with `confidence_threshold`, an answer whose confidence is
        below the threshold is an abstention.
    confidence_threshold: optional float, see `confidences`.
    order: "official" (default, `meteor_score([prediction], gold)` as the notebook) or "standard"
        (`meteor_score([gold], prediction)`).
    threshold: METEOR above which an answer is correct (default 0.227743).
    value_multiplier: value of a question = number x multiplier (default 1; 10 for TV-style 10-50 points).
    tokenizer: "auto" (default: spaCy's Russian tokenizer when spaCy is installed, else "regex"), "spacy"
        (`spacy.blank("ru")`, as the notebook's model tokenizes) or "regex" (an imitation without spaCy).
Returns:
    meteor: mean METEOR over all questions (an abstention counts 0),
    accuracy: correct answers / questions,
    num_questions, num_answered, num_abstained, num_correct, num_wrong: counts,
    score: the game score (only with `question_numbers`), max_score: the score if all were correct,
    meteor_per_example: METEOR of each question (0.0 for an abstention),
    correct: per question, True when answered and METEOR > threshold,
    abstained: per question, True for an abstention,
    order, threshold, tokenizer, preprocessing: what was computed.
Examples:
    >>> metric = evaluate.load("jeopardy_meteor")
    >>> results = metric.compute(predictions=["бульвара Сансет", "Рим", None],
    ...                          references=["Бульвар Сансет", "Уругвай", "Танка"],
    ...                          question_numbers=[4, 2, 1])
    >>> results["correct"], results["score"], results["num_abstained"]
    ([True, False, False], 2, 1)
    >>> round(results["meteor_per_example"][0], 4)
    0.9375
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class JeopardyMeteor(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            codebase_urls=["https://github.com/evrog/Russian-QA-Jeopardy"],
            reference_urls=["https://arxiv.org/abs/2112.02325", "https://www.nltk.org/api/nltk.translate.meteor_score.html"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the predictions; every argument is checked before `evaluate` opens its cache file (an error
        raised later, in `_compute`, would leave that file locked and slow the next call down by a second)."""
        if predictions is not None and references is not None:
            check_inputs(list(predictions), list(references), **kwargs)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predictions (str or None) and references (str).

        `evaluate` checks only the first prediction's type, so [None, "Рим"] would fail and ["Рим", 5] pass:
        every text is checked here, with its index, and an abstention (None) is handed on as "".
        """
        if predictions is not None and references is not None:
            predictions, references = list(predictions), list(references)
            check_texts(predictions, references)
            predictions = ["" if prediction is None else prediction for prediction in predictions]
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction (str or None) and its reference (str)."""
        if reference is not None:
            check_texts([prediction], [reference])
            prediction = "" if prediction is None else prediction
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, question_numbers=None, confidences=None,
                 confidence_threshold=None, order="official", threshold=THRESHOLD, value_multiplier=1,
                 tokenizer="auto"):
        return score_answers(predictions, references, question_numbers, confidences, confidence_threshold,
                             order, threshold, value_multiplier, tokenizer)


def check_inputs(predictions, references, question_numbers=None, confidences=None, confidence_threshold=None,
                 order="official", threshold=THRESHOLD, value_multiplier=1, tokenizer="auto"):
    """Every documented error of `compute`, raised before any scoring."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}")
    check_number("threshold", threshold)
    check_texts(predictions, references)
    abstentions(predictions, confidences, confidence_threshold)
    if question_numbers is not None:
        checked_numbers(question_numbers, len(predictions), value_multiplier)


def score_answers(predictions, references, question_numbers=None, confidences=None, confidence_threshold=None,
                  order="official", threshold=THRESHOLD, value_multiplier=1, tokenizer="auto"):
    """The metric without `evaluate` around it (same arguments and result as `compute`)."""
    predictions, references = list(predictions), list(references)
    check_inputs(predictions, references, question_numbers, confidences, confidence_threshold, order, threshold,
                 value_multiplier, tokenizer)
    abstained = abstentions(predictions, confidences, confidence_threshold)
    meteor = shared(tokenizer)
    scores = [0.0 if skip else meteor.score(pred, gold, order) for pred, gold, skip in zip(predictions, references, abstained, strict=True)]
    correct = [not skip and value > threshold for value, skip in zip(scores, abstained, strict=True)]
    total, num_correct, num_abstained = len(scores), sum(correct), sum(abstained)
    result = {
        "meteor": sum(scores) / total if total else 0.0,
        "accuracy": num_correct / total if total else 0.0,
        "num_questions": total,
        "num_answered": total - num_abstained,
        "num_abstained": num_abstained,
        "num_correct": num_correct,
        "num_wrong": total - num_abstained - num_correct,
    }
    if question_numbers is not None:
        values = question_values(question_numbers, total, value_multiplier)
        result["score"] = game_score(values, correct, abstained)
        result["max_score"] = sum(values)
    result.update(meteor_per_example=scores, correct=correct, abstained=abstained,
                  order=order, threshold=threshold, tokenizer=meteor.tokenizer, preprocessing=meteor.description)
    return result
