"""LIMUR metric: exact match of the answer letter (seed strict and lenient readings, MERA's recipe) and an LLM
judge score."""

import datasets
import evaluate

# evaluate copies only the helpers this file imports: direct_score's are imported here as well
from .answers import LETTERS
from .checks import is_text
from .direct_metric import DirectMetric
from .direct_score import score, score_all
from .gc_pause import gc_paused
from .judge import JudgeConfigError
from .judge_settings import keyword_docs
from .mera import answer_candidates
from .references import check_added, check_inputs, check_predictions, normalise_references, storable
from .score import ALL_CLOSED
from .task_api import TASKS
from .task_spec import TaskSpec

_CITATION = """\
@misc{limur,
    title = "{LIMUR}: reference resolution and meaning recovery on texts with non-standard lexicon",
    author = "Shevelev, Denis and Kharitonov, Alexander and Astafurov, Alexander",
    note = "A Russian multiple-choice task in the MERA task format",
}
"""

_DESCRIPTION = """\
Scores answers to LIMUR, a Russian multiple-choice task (options lettered А Б В Г Д Е Ё Ж З) whose prompts ask
the model to end with «Ответ: <буква>». `exact_match` reads the letter after the last «Ответ:» marker (or a
reply that is the letter alone) and accepts only the nine capital Cyrillic letters; `exact_match_lenient` also
reads Latin look-alike capitals (A→А, B→В, E→Е, Ë→Ё); `exact_match_mera` is MERA's own recipe (the better of
the whole reply and the text after its last «Ответ:», SQuAD exact match after removing typographic
punctuation). The LLM judge score is the mean over all examples of the judge's grade (a failed or unreadable
judgement counts 0), with the seed's 1 / 0.5 / 0 prompt or MERA's 0 / 1 / 2 prompt (divided by 2); the judge
is a Python callable or an OpenAI-compatible chat-completions endpoint.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of the model's replies: any object; None, a non-string and a lone surrogate are read,
        never an error (what holds no answer is unparseable and scores 0).
    references: the rows of the `limur` dataset as `load_dataset(...)[split]` yields them (a Dataset or a list
        of dicts: `outputs` (the gold letter, "" when closed), `meta` {`id`, `task_type`, `context_type`},
        `options`, `instruction` + `inputs` and/or `prompt`), or the older flat records (`id`, `answer`,
        `options`, `task_type`, `context_type`, `prompt`). A closed answer ("") scores 0 and is counted.
    judge: optional callable `judge(task, reference, answer) -> reply` (text or number; a grade of the prompt).
    judge_name: names a callable judge in cache keys; needed to use judge_cache / judge_cache_file with one.
    judge_cache: a dict reused across calls.
    The judge's settings, each read from its variable when not given (an explicit `judge` callable wins over
    the endpoint's variables):
{judge_settings}
Returns:
    exact_match, exact_match_lenient, exact_match_mera: fractions in [0, 1];
    count; closed: references without a gold answer (scored 0);
    unparseable, unparseable_lenient: replies with no readable letter;
    not_an_option, not_an_option_lenient: letters read that name no option of the example;
    by_task_type, by_context_type: the same scores per group;
    judge_score: the mean judge score over all examples (failed, unreadable and closed count 0), or None
        without a judge; judge_score_judged: the mean over the judged examples (None when none was judged);
        judge_coverage: the share of examples judged (a grade read from the judge);
    judge: whether the judge ran, its prompt and counts (judged, unparseable, failed, coverage, requests, cache_hits).
Raises:
    ValueError naming the record: a reference that lacks a field or holds a wrong value, two references with
    one id, predictions and references of different lengths; nothing to score (zero examples, or every answer
    closed: "limur: nothing to score"); a judge option out of range, naming it.
    JudgeConfigError (a RuntimeError): the judge cannot work at all (configuration, judge_model without
    judge_url, HTTP 401/403/404, a redirect).
Examples:
    >>> limur = evaluate.load("limur")
    >>> row = {"instruction": "{question}\\nА. {option_a}\\nБ. {option_b}\\nОтвет: (А, Б)",
    ...        "inputs": {"question": "Что?", "option_a": "кубок", "option_b": "коробка"},
    ...        "outputs": "Б", "meta": {"id": 1, "task_type": "rwsd", "context_type": "текст"},
    ...        "options": ["кубок", "коробка"]}
    >>> result = limur.compute(predictions=["**Ответ:** Б."], references=[row])
    >>> result["exact_match"], result["exact_match_mera"], result["unparseable"], result["judge"]["computed"]
    (1.0, 1.0, 0, False)
    >>> limur.compute(predictions=[], references=[])
    Traceback (most recent call last):
    ValueError: limur: nothing to score: no predictions and no references were given
"""
_KWARGS_DESCRIPTION = _KWARGS_DESCRIPTION.replace("{judge_settings}", keyword_docs(indent="    "))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Limur(DirectMetric):
    INFO = {"description": _DESCRIPTION, "citation": _CITATION, "inputs_description": _KWARGS_DESCRIPTION,
            "features": datasets.Features({
                "predictions": datasets.Value("string"),
                "references": {"id": datasets.Value("int64"), "answer": datasets.Value("string"),
                               "options": datasets.Sequence(datasets.Value("string")),
                               "task_type": datasets.Value("string"), "context_type": datasets.Value("string"),
                               "prompt": datasets.Value("string")},
            }),
            "reference_urls": ["https://github.com/MERA-Evaluation/MERA"]}

    def _score_direct(self, predictions, references, **options):
        return score(predictions, references, **options)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch: replies made storable, references (dataset rows) checked and flattened first."""
        if predictions is not None:
            predictions = check_predictions(predictions)
        if references is not None:
            references = storable(normalise_references(references))
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and reference, the reference checked first so that any error names the record."""
        if prediction is not None or reference is not None:
            prediction = check_predictions([prediction])[0]
            reference = storable(normalise_references([reference]))[0]
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, **options):
        check_added(references)  # each one was checked when added
        return score_all(predictions, references, **options)


# the harness task scores with the same code (score_reply); imported here so that evaluate copies task_api
# and the type its TASKS are
_TASKS = TASKS, TaskSpec
__all__ = ["ALL_CLOSED", "LETTERS", "JudgeConfigError", "Limur", "answer_candidates", "check_inputs", "gc_paused",
           "is_text", "score", "score_all"]
