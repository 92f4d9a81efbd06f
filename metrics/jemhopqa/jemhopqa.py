"""JEMHopQA metric: answer exact match and similarity, derivation precision/recall/F1, as the official script."""

import json

import evaluate

# evaluate copies only the helpers imported here: so also replies (used by records) and task_api (harness tasks)
# with its task_spec
from .checks import is_text
from .direct_metric import JSON_TEXT, DirectMetric
from .direct_score import score, score_checked
from .llm_jp_eval import aggregate
from .records import JemhopqaInputError, check_solver, checked
from .replies import parse_reply
from .scoring import Similarity
from .task_api import TASKS
from .task_spec import TaskSpec
from .tokens import get_tokenizer

__all__ = ["Jemhopqa", "JemhopqaInputError", "Similarity", "TASKS", "TaskSpec", "aggregate", "get_tokenizer", "is_text",
           "parse_reply", "score"]

_CITATION = """\
@inproceedings{ishii-etal-2024-jemhopqa-dataset,
    title = "{JEMHopQA}: Dataset for {J}apanese Explainable Multi-Hop Question Answering",
    author = "Ishii, Ai and Inoue, Naoya and Suzuki, Hisami and Sekine, Satoshi",
    booktitle = "Proceedings of the 2024 Joint International Conference on Computational Linguistics, \
Language Resources and Evaluation (LREC-COLING 2024)",
    year = "2024",
    pages = "9515--9525",
}
"""

_DESCRIPTION = """\
The scores of the official JEMHopQA evaluation script (evaluate.py of aiishii/JEMHopQA): for answers, exact
match after normalization and a token-level similarity (Sudachi mode C tokens, synonyms, Levenshtein ratio);
for derivations, triples (one per object) are aligned one-to-one to maximise the summed similarity, giving
precision, recall and F1 for entities (e), relations (r) and both (er). Each score is a mean over questions.
Beside them, llm-jp-eval v1.3.0's JEMHopQA scores of the answers: exact_match and char_f1 (fuzzywuzzy's
token_sort_ratio / 100 after NFKC). Predictions may be records or a model's free-form replies.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of records {"qid": str, "answer": str, "derivations": [[subject, relation, [objects]]]},
        paired with the references by qid (leave "answer" or "derivations" out when that part is missing;
        empty or non-string answers score 0), or of model replies (a string, None or any non-dict object),
        paired with the reference at the same position and read as "回答: ...\\n導出: [[s, r, [o...]], ...]"
        (a plain answer is read too); what cannot be read scores 0 and is counted, a reply never raises.
    references: list (or datasets.Dataset) of JEMHopQA rows {"qid", "answer", "derivations", ...} (upstream
        nested derivations or the qahub builder's records {"subject", "relation", "objects"}).
    ignore_missing: score only the predicted parts of questions (default False: a question without a predicted
        answer or derivations is an error); a null answer scores 0, as official, but null answers alone are
        nothing to score.
    per_question: also return "per_question", one row per reference question with the official -o columns.
    dictionary: Sudachi dictionary "full", "core" or "small" (default: the best one installed).
    synonyms: "auto" (chikkarpy, with user_dic when given, when installed; else none), "chikkarpy", "none",
        a mapping {word: [synonyms]}, a synonym source file (Sudachi CSV format), a callable word -> list of synonyms, or a list of these.
    user_dic: path of JEMHopQA's compiled user.dic, added to chikkarpy's system dictionary.
    solver: "assignment" (exact, default) or "ilp" (pulp/CBC, as the official script).
    cache: cache tokenization and similarities (default True).
Returns:
    a: {"em", "score"}: answer exact match and similarity.
    e, r, er: {"prec", "recall", "f1"}: derivation scores for entities, relations and both.
        With ignore_missing, a (and llm_jp_eval) or e, r, er are left out when no question's answer or
        derivations were predicted.
    dictionary, synonyms: the Sudachi dictionary and the synonym source that were used.
    official_configuration: True when they are the official ones (full dictionary, chikkarpy + user.dic).
    llm_jp_eval: {"exact_match", "char_f1"}: llm-jp-eval v1.3.0's scores of the answers (of a reply: its
        first paragraph, as llm-jp-eval reads a model output; of a record: its answer).
    replies: the number of predictions that were replies; unparseable: replies without a readable answer;
        derivations_unreadable: replies without readable derivations.
    per_question (on request): list of {"qid", "a_em", "a_score", "e_p", ..., "er_f", "exact_match",
        "char_f1"}; None for ignored parts.
Raises:
    ValueError (JemhopqaInputError) for inputs the official scorer could not score, naming the record, and
    when there is nothing to score: no references, or no question with a reply, derivations or a string answer.
Examples:
    >>> metric = evaluate.load("jemhopqa")
    >>> row = {"qid": "q1", "answer": "794年", "derivations": [["平安京", "遷都された年", ["794年"]]]}
    >>> results = metric.compute(predictions=[row], references=[row], synonyms="none")
    >>> results["a"], results["er"], results["llm_jp_eval"]
    ({'em': 1.0, 'score': 1.0}, {'prec': 1.0, 'recall': 1.0, 'f1': 1.0}, {'exact_match': 1.0, 'char_f1': 1.0})
    >>> reply = '回答: 794年\\n導出: [["平安京", "遷都", ["794年"]]]'
    >>> results = metric.compute(predictions=[reply, None], references=[row, row], synonyms="none")
    >>> results["a"], results["unparseable"], results["derivations_unreadable"]
    ({'em': 0.5, 'score': 0.5}, 1, 1)
    >>> try:
    ...     metric.compute(predictions=[], references=[], synonyms="none")
    ... except ValueError as err:
    ...     print(err)
    nothing to score: there are no references
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Jemhopqa(DirectMetric):
    """Each add/add_batch call is stored as one row of JSON lists, so predictions and references may differ
    in number (missing questions) and keep their exact values (non-string answers)."""

    INFO = {"description": _DESCRIPTION, "citation": _CITATION, "inputs_description": _KWARGS_DESCRIPTION,
            "features": JSON_TEXT, "codebase_urls": ["https://github.com/aiishii/JEMHopQA"]}

    def _check_options(self, options):
        check_solver(options.get("solver", "assignment"))

    def _score_direct(self, predictions, references, **options):
        return score(predictions, references, **options)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Check and add a batch of predictions (records or replies) and reference rows (their numbers may
        differ; replies are paired by position over all batches)."""
        predictions, references = checked(predictions, references)
        # ASCII JSON: a reply may hold lone surrogates, which Arrow cannot store as text
        encoded = {"predictions": [json.dumps(predictions)],
                   "references": [json.dumps(references, ensure_ascii=False)]}
        super().add_batch(**encoded, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Check and add one prediction record and one reference row."""
        self.add_batch(predictions=[prediction], references=[reference], **kwargs)

    def _compute(self, predictions, references, **options):
        """The batches add_batch checked and stored, scored."""
        preds = [record for batch in predictions for record in json.loads(batch)]
        refs = [record for batch in references for record in json.loads(batch)]
        return score_checked(preds, refs, **options)
