"""JEMHopQA metric: answer exact match and similarity, derivation precision/recall/F1, as the official script."""

import contextlib
import json
import os

import datasets
import evaluate

from .records import JemhopqaInputError, check_prediction, check_reference, pair
from .scoring import Similarity, score_questions, summarize
from .tokens import get_tokenizer

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
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of records {"qid": str, "answer": str, "derivations": [[subject, relation, [objects]]]}.
        Leave "answer" or "derivations" out when that part is missing. Empty or non-string answers score 0.
    references: list of JEMHopQA rows {"qid", "answer", "derivations", ...} (upstream nested derivations or the
        qahub builder's records {"subject", "relation", "objects"}).
    ignore_missing: score only the predicted questions (default False: missing questions are an error).
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
    dictionary, synonyms: the Sudachi dictionary and the synonym source that were used.
    official_configuration: True when they are the official ones (full dictionary, chikkarpy + user.dic).
    per_question (on request): list of {"qid", "a_em", "a_score", "e_p", ..., "er_f"}; None for ignored parts.
Examples:
    >>> metric = evaluate.load("jemhopqa")
    >>> row = {"qid": "q1", "answer": "794年", "derivations": [["平安京", "遷都された年", ["794年"]]]}
    >>> results = metric.compute(predictions=[row], references=[row], synonyms="none")
    >>> results["a"], results["er"]
    ({'em': 1.0, 'score': 1.0}, {'prec': 1.0, 'recall': 1.0, 'f1': 1.0})
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Jemhopqa(evaluate.Metric):
    """Each add/add_batch call is stored as one row of JSON lists, so predictions and references may differ
    in number (missing questions) and keep their exact values (non-string answers)."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            codebase_urls=["https://github.com/aiishii/JEMHopQA"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Check the inputs and options first, so that bad input fails before evaluate writes its cache file;
        a failure after that (inputs added earlier with add_batch) removes the cache file."""
        _check_solver(kwargs.get("solver", "assignment"))
        if predictions is not None and references is not None and self.writer is None:
            preds = [check_prediction(p, i) for i, p in enumerate(_as_list(predictions, "predictions"))]
            refs = [check_reference(r, i) for i, r in enumerate(_as_list(references, "references"))]
            pair(preds, refs, kwargs.get("ignore_missing", False))
        try:
            return super().compute(predictions=predictions, references=references, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is the one to report
                self._discard_cache()
            raise

    def _discard_cache(self):
        """What evaluate does after a successful compute: close the writer, delete the cache files, unlock."""
        self.data = None
        if self.writer is not None:
            self.writer.finalize()
            self.writer = None
        for path in [*(getattr(self, "file_paths", None) or []), self.cache_file_name]:
            if path and os.path.exists(path):
                os.remove(path)
        for lock in [*(getattr(self, "filelocks", None) or []), self.filelock]:
            if lock is not None:
                lock.release()
        self.file_paths = self.filelocks = self.cache_file_name = self.filelock = None

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Check and add a batch of prediction records and reference rows (their numbers may differ)."""
        predictions = [check_prediction(p, i) for i, p in enumerate(_as_list(predictions, "predictions"))]
        references = [check_reference(r, i) for i, r in enumerate(_as_list(references, "references"))]
        encoded = {"predictions": [json.dumps(predictions, ensure_ascii=False)],
                   "references": [json.dumps(references, ensure_ascii=False)]}
        super().add_batch(**encoded, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Check and add one prediction record and one reference row."""
        self.add_batch(predictions=[prediction], references=[reference], **kwargs)

    def _compute(self, predictions, references, ignore_missing=False, per_question=False, dictionary=None,
                 synonyms="auto", user_dic=None, solver="assignment", cache=True):
        _check_solver(solver)
        preds = [record for batch in predictions for record in json.loads(batch)]
        refs = [record for batch in references for record in json.loads(batch)]
        questions = pair(preds, refs, ignore_missing)
        tokenizer = get_tokenizer(dictionary, synonyms, user_dic, cache)
        rows = score_questions(questions, Similarity(tokenizer, cache), solver)
        out = summarize(rows)
        out.update({"dictionary": tokenizer.dictionary, "synonyms": tokenizer.synonyms.description,
                    "official_configuration": tokenizer.official})
        if per_question:
            out["per_question"] = rows
        return out


def _check_solver(solver):
    if solver not in ("assignment", "ilp"):
        raise ValueError(f"solver must be 'assignment' or 'ilp', got {solver!r}")


def _as_list(values, name):
    if values is None:
        return []
    if isinstance(values, (str, bytes, dict)):
        hint = " (convert the official {answer: {qid: ...}, derivations: {qid: ...}} format to records)"
        raise JemhopqaInputError(f"{name} must be a list of records, got {type(values).__name__}"
                                 + (hint if isinstance(values, dict) else ""))
    return list(values)
