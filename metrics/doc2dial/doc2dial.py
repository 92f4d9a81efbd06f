"""DialDoc21 shared-task metric for doc2dial v1.0.1: grounding (subtask 1) and response generation (subtask 2)."""

import datasets
import evaluate

from .bleu_scoring import corpus_sacrebleu
from .checks import is_text
from .dialogues import agent_turns
from .direct_metric import DirectMetric
from .direct_score import score, score_checked
from .inputs import check_options, clean_predictions, clean_references, joined
from .replies import span_reply
from .scores import RESULTS
from .squad_v2_scoring import squad_v2_scores
from .task_api import TASKS
from .task_spec import TaskSpec

# evaluate copies only the helper modules this file imports: the scorers' and task_api's own helpers too
_HELPERS = (TASKS, TaskSpec, agent_turns, is_text, corpus_sacrebleu, span_reply, squad_v2_scores, RESULTS)

_CITATION = """\
@inproceedings{feng-etal-2020-doc2dial,
    title = "doc2dial: A Goal-Oriented Document-Grounded Dialogue Dataset",
    author = "Feng, Song and Wan, Hui and Gunasekara, Chulaka and Patel, Siva and Joshi, Sachindra and Lastras, Luis",
    booktitle = "Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)",
    year = "2020",
    publisher = "Association for Computational Linguistics",
    url = "https://www.aclweb.org/anthology/2020.emnlp-main.652",
}
@inproceedings{rajpurkar-etal-2018-know,
    title = "Know What You Don{'}t Know: Unanswerable Questions for {SQ}u{AD}",
    author = "Rajpurkar, Pranav and Jia, Robin and Liang, Percy",
    booktitle = "Proceedings of the 56th Annual Meeting of the Association for Computational Linguistics",
    year = "2018",
    pages = "784--789",
}
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
"""

_DESCRIPTION = """\
The scores of the DialDoc21 shared task on doc2dial v1.0.1 (scripts/sharedtask_utils.py of
doc2dial/sharedtask-dialdoc2021), computed locally.

Config `subtask1` (the default): predict the grounding span in the document for the next agent turn. Scored
as SQuAD v2.0: exact match and token F1 after SQuAD normalisation, unanswerable turns (no grounding) count as
correct only for an empty prediction, with HasAns/NoAns breakdown and best no-answer thresholds.

Config `subtask2`: generate the next agent turn. Scored with corpus sacreBLEU (13a tokenizer, exponential
smoothing, case-sensitive), one reference per prediction. Ids are `{dial_id}_{turn_id}` of the turn before
the agent turn.

Predictions are joined to references by id: every id must occur once on each side. References can be the rows
of the corpus as `load_dataset` yields them (`doc2dial_rc` for subtask1, `dialogue_domain` for subtask2). A
prediction's text is a model's reply: one that cannot be read (None, not a string, a lone surrogate) is scored
as empty and counted in `unparseable`. The lm-evaluation-harness tasks in `task_api.py` score with the same code.
"""

_KWARGS_DESCRIPTION = """
Args (config `subtask1`):
    predictions: list of dicts (or a datasets.Dataset) with `id` (str), `prediction_text` (the span, "" for no
        answer; None, a non-string or a lone surrogate counts as "" and as unparseable) and optionally
        `no_answer_probability` (a finite number, default 0.0; stored as float32).
    references: list of dicts (or a datasets.Dataset) with `id` (str) and `answers` ({"text": [str],
        "answer_start": [int]}; empty lists for an unanswerable turn). Rows of the `doc2dial_rc` config can be
        passed as they are: keys other than `id` and `answers` are ignored.
    no_answer_threshold: a prediction whose no_answer_probability exceeds this counts as "no answer"
        (a finite number, default 1.0, as in the shared task).
    no_answer_text: None (default, as the shared task) or a phrase, e.g. "NO ANSWER": a prediction_text that
        SQuAD-normalises to it counts as "" (how the harness task reads its replies).
Args (config `subtask2`):
    predictions: list of dicts (or a datasets.Dataset) with `id` (str) and `utterance` (the generated agent
        turn; None, a non-string or a lone surrogate counts as "" and as unparseable).
    references: rows of the `dialogue_domain` config as they are (a datasets.Dataset or a list of dicts: each
        agent turn is a reference, id `{dial_id}_{turn_id - 1}`), or per-turn dicts with `id` (str) and
        `utterance` (str, the actual agent turn); other keys are ignored.
Args (both configs):
    ignore_missing: False (default): every reference needs a prediction. True: references without a prediction
        are left out (the shared task's scorer filters the references by the predicted ids) and the result
        counts them in `missing_ignored`.
Returns (subtask1): `exact`, `f1` (0-100), `total`; `HasAns_exact`, `HasAns_f1`, `HasAns_total` when some
    turns are answerable; `NoAns_exact`, `NoAns_f1`, `NoAns_total` when some are not; `best_exact`,
    `best_exact_thresh`, `best_f1`, `best_f1_thresh`; `unparseable` (number of unreadable predictions).
Returns (subtask2): `score` (sacreBLEU, 0-100 up to float rounding), `counts`, `totals`, `precisions`, `bp`,
    `sys_len`, `ref_len`, `signature` (the installed sacreBLEU's signature; when no unigram matches, it ends in
    `|zero-match:sacrebleu-1.4.3-exp-smoothing`), `zero_match_1_4_3` (true when `score` and `precisions` are
    sacreBLEU 1.4.3's smoothed values, which sacreBLEU 2 replaces by 0), `total`, `unparseable`.
Raises ValueError (naming the record, its id and the field) when a prediction is not a dict, lacks `id` or its
    text field, has a non-string id or a no_answer_probability that is not a finite float32 number; when a
    reference is malformed (missing or wrongly typed field, lone surrogate, malformed answers, a dialogue row
    whose turns lack turn_id/role/utterance); when a keyword argument is unknown or no_answer_threshold is not
    a finite number; when the ids of predictions and references differ or repeat (listing them); and when
    nothing is scored (no predictions and no references, or all references ignored as missing): never a score
    of 0.0 for an empty input.

Examples:
    >>> import evaluate
    >>> grounding = evaluate.load("doc2dial", "subtask1")
    >>> predictions = [
    ...     {"id": "d1_1", "prediction_text": "Turn in your plates.", "no_answer_probability": 0.1},
    ...     {"id": "d1_3", "prediction_text": "", "no_answer_probability": 0.9},
    ... ]
    >>> references = [
    ...     {"id": "d1_1", "answers": {"text": ["turn in your plates"], "answer_start": [12]}},
    ...     {"id": "d1_3", "answers": {"text": [], "answer_start": []}},
    ... ]
    >>> result = grounding.compute(predictions=predictions, references=references)
    >>> result["exact"], result["f1"], result["HasAns_total"], result["NoAns_exact"]
    (100.0, 100.0, 1, 100.0)
    >>> generation = evaluate.load("doc2dial", "subtask2")
    >>> result = generation.compute(
    ...     predictions=[{"id": "d1_1", "utterance": "the cat sat on the mat"}],
    ...     references=[{"id": "d1_1", "utterance": "the cat sat on a mat"}],
    ... )
    >>> round(result["score"], 2), result["counts"], result["totals"]
    (53.73, [5, 3, 2, 1], [6, 5, 4, 3])
    >>> dialogue = {"dial_id": "d1", "doc_id": "doc", "domain": "dmv", "turns": [
    ...     {"turn_id": 1, "role": "user", "da": "query", "references": [], "utterance": "Plates?"},
    ...     {"turn_id": 2, "role": "agent", "da": "respond", "references": [], "utterance": "Turn them in."},
    ... ]}
    >>> result = generation.compute(predictions=[{"id": "d1_1", "utterance": None}], references=[dialogue])
    >>> result["score"], result["unparseable"]
    (0.0, 1)
    >>> result = grounding.compute(predictions=predictions[:1], references=references, ignore_missing=True)
    >>> result["total"], result["missing_ignored"]
    (1, 1)
    >>> grounding.compute(predictions=[], references=[])
    Traceback (most recent call last):
        ...
    ValueError: doc2dial: nothing to score: no predictions and no references
"""

_SUBTASK1 = datasets.Features(
    {
        "predictions": {
            "id": datasets.Value("string"),
            "prediction_text": datasets.Value("string"),
            "no_answer_probability": datasets.Value("float32"),
            "unparseable": datasets.Value("int8"),
        },
        "references": {
            "id": datasets.Value("string"),
            "answers": {
                "text": datasets.List(datasets.Value("string")),
                "answer_start": datasets.List(datasets.Value("int32")),
            },
        },
    }
)
_SUBTASK2 = datasets.Features(
    {
        "predictions": {"id": datasets.Value("string"), "utterance": datasets.Value("string"),
                        "unparseable": datasets.Value("int8")},
        "references": {"id": datasets.Value("string"), "utterance": datasets.Value("string")},
    }
)
_CONFIGS = {"default": _SUBTASK1, "subtask1": _SUBTASK1, "subtask2": _SUBTASK2}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Doc2dial(DirectMetric):
    def _info(self):
        if self.config_name not in _CONFIGS:
            raise KeyError(f"doc2dial metric: unknown config {self.config_name!r}; use 'subtask1' or 'subtask2'")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_CONFIGS[self.config_name],
            codebase_urls=["https://github.com/doc2dial/sharedtask-dialdoc2021"],
            reference_urls=["https://doc2dial.github.io/workshop2021/shared.html"],
        )

    @property
    def _task(self):
        return "subtask2" if self.config_name == "subtask2" else "subtask1"

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score ``predictions`` against ``references``, joined by id (given here, added before, or both)."""
        if predictions is None and references is None and self.writer is None and self.num_process == 1:
            check_options(self._task, kwargs)
            raise ValueError("doc2dial: nothing to score: no predictions and no references were given or added")
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _check_options(self, options):
        check_options(self._task, options)

    def _score_direct(self, predictions, references, **options):
        return score(self._task, predictions, references, **options)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predictions and references (their fields checked)."""
        if predictions is not None:
            predictions = clean_predictions(predictions, self._task)
        if references is not None:
            references = clean_references(references, self._task)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and its (per-turn) reference (their fields checked)."""
        if prediction is not None:
            prediction = clean_predictions([prediction], self._task)[0]
        if reference is not None:
            references = clean_references([reference], self._task)
            if len(references) != 1:
                raise ValueError(f"doc2dial: add() takes one per-turn reference, got a dialogue with {len(references)} "
                                 "agent turns; pass dialogue rows to compute() or add_batch()")
            reference = references[0]
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, ignore_missing=False, **options):
        return score_checked(self._task, predictions, *joined(predictions, references, ignore_missing), options)
