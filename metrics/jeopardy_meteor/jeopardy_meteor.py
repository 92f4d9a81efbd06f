"""jeopardy_meteor: the official correctness test and game score of the Russian QA Jeopardy! data set."""

import evaluate

# evaluate copies only the helpers this file imports: direct_score's are imported here as well
from .checks import is_text
from .direct_metric import JSON_TEXT, DirectMetric
from .direct_score import score_answers, score_checked
from .examples import score_questions
from .inputs import check_options, decode_pairs, encode_pairs, read_pairs
from .replies import parse_reply
from .russian_meteor import THRESHOLD
from .spacy_like import TOKENIZERS
from .task_api import TASKS
from .task_spec import TaskSpec

__all__ = ["TASKS", "TaskSpec", "TOKENIZERS", "JeopardyMeteor", "is_text", "parse_reply", "score_answers", "score_questions"]

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
`meteor_score`, and an answer is correct when METEOR > 0.227743. With question values (a question's number
1-5 in its topic, the `question_number` of the builder's `extended` rows) the game score adds the value of each
correct answer, subtracts that of each wrong one and leaves abstentions at 0.

A prediction is a model's reply, read by a parser that never raises: the text after the last «Ответ:», its
first non-empty line, without markdown emphasis, enclosing quotes or a final period. An empty reply or an
abstention phrase («Пас», «не знаю», ...) is an abstention; None, a non-string or text with a lone surrogate
is counted `unparseable` and scored as an abstention.

By default METEOR is called as the notebook calls it, `meteor_score([prediction], gold)`: the prediction is
NLTK's reference and the gold answer its hypothesis. `order="standard"` gives `meteor_score([gold],
prediction)`. No NLTK data is needed: WordNet is replaced by a stand-in with no synsets.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of replies, any objects: str replies are parsed (see above); None or a non-string is
        unparseable (an abstention).
    references: the gold answers: the builder's rows as `load_dataset(...)[split]` yields them (a
        `datasets.Dataset` or a list of dicts with `answer`, and `question_number` in the `extended` config),
        or plain gold strings (non-empty).
    question_numbers: optional list of int (or integral floats such as 2.0), each question's number in its
        topic (1-5): its value. Default: the rows' `question_number` when the rows have one. Numbers outside
        1-5 warn and are scored as given.
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
    num_questions, num_answered, num_abstained, num_unparseable, num_correct, num_wrong: counts (an
        unparseable reply is also an abstention),
    abstention_rate, unparseable: num_abstained and num_unparseable / questions,
    score (= game_score): the game score, the sum over questions (only with question values),
    max_score: the score if all were correct,
    meteor_per_example: METEOR of each question (0.0 for an abstention),
    correct: per question, True when answered and METEOR > threshold,
    abstained: per question, True for an abstention,
    status: per question, "answer", "abstained" or "unparseable"; answers: the answer read from each reply,
    order, threshold, tokenizer, preprocessing: what was computed.
Raises:
    ValueError or TypeError naming the reference or option at fault; ValueError "nothing to score" for zero
    predictions and references (no score is given for nothing: 0.0 would look like a model that got all wrong).
Examples:
    >>> metric = evaluate.load("jeopardy_meteor")
    >>> results = metric.compute(predictions=["Ответ: бульвара Сансет", "Рим.", "Пас"],
    ...                          references=["Бульвар Сансет", "Уругвай", "Танка"],
    ...                          question_numbers=[4, 2, 1])
    >>> results["correct"], results["score"], results["num_abstained"]
    ([True, False, False], 2, 1)
    >>> round(results["meteor_per_example"][0], 4)
    0.9375
    >>> rows = [{"question_id": 7, "question_number": 3, "question": "Столица Италии.", "answer": "Рим"},
    ...         {"question_id": 8, "question_number": 5, "question": "Столица Перу.", "answer": "Лима"}]
    >>> results = metric.compute(predictions=["**Рим**", None], references=rows)
    >>> results["score"], results["num_unparseable"], results["status"]
    (3, 1, ['answer', 'unparseable'])
    >>> metric.compute(predictions=[], references=[])
    Traceback (most recent call last):
    ...
    ValueError: nothing to score: no predictions and no references were given
"""

@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class JeopardyMeteor(DirectMetric):
    # both stored as JSON text (see inputs.py): a reply may be any object, a reference a row
    INFO = {"description": _DESCRIPTION, "citation": _CITATION, "inputs_description": _KWARGS_DESCRIPTION,
            "features": JSON_TEXT, "codebase_urls": ["https://github.com/evrog/Russian-QA-Jeopardy"],
            "reference_urls": ["https://arxiv.org/abs/2112.02325",
                               "https://www.nltk.org/api/nltk.translate.meteor_score.html"]}

    def _check_options(self, options):
        check_options(options.get("order", "official"), options.get("threshold", THRESHOLD),
                      options.get("tokenizer", "auto"))

    def _score_direct(self, predictions, references, **options):
        return score_answers(predictions, references, **options)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of replies (any objects) and references (rows or gold strings), checked first."""
        if predictions is not None and references is not None:
            predictions, references = encode_pairs(*read_pairs(predictions, references))
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one reply (any object) and its reference (a row or a gold string)."""
        if reference is not None:
            (prediction,), (reference,) = encode_pairs(*read_pairs([prediction], [reference]))
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, **options):
        """The stored replies and references, decoded; the options were checked by `compute`."""
        return score_checked(*decode_pairs(predictions, references), **options)
