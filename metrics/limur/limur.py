"""LIMUR metric: exact match of the answer letter (strict and lenient readings) and an LLM judge score."""

import os

import datasets
import evaluate

from .answers import LETTERS, read_letter
from .judge import Endpoint, JudgeConfigError, judge_all, load_cache, private_identity, save_cache
from .references import check_predictions, check_references

_CITATION = """\
@misc{limur,
    title = "{LIMUR}: reference resolution and meaning recovery on texts with non-standard lexicon",
    author = "Shevelev, Denis and Kharitonov, Alexander and Astafurov, Alexander",
    note = "A Russian multiple-choice task in the MERA task format",
}
"""

_DESCRIPTION = """\
Scores answers to LIMUR, a Russian multiple-choice task (options lettered А Б В Г Д Е Ё Ж З) whose prompts ask
the model to end with «Ответ: <буква>». Exact match reads the letter after the last «Ответ:» marker:
`strict` accepts only the nine capital Cyrillic letters, `lenient` also reads Latin look-alike capitals
(A→А, B→В, E→Е, Ë→Ё). The LLM judge score is the mean of the judge's 1 / 0.5 / 0 grades over the judged
examples (unparseable replies and failed requests are counted and reported, not scored); the judge is a
Python callable or an OpenAI-compatible chat-completions endpoint.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of the model's replies (strings; None is read as an empty reply).
    references: list of records, one per prediction, with
        `id` (int, unique), `answer` (the gold letter), `options` (the non-empty option texts, in letter order),
        `task_type` ("rwsd" or "kusdra"), `context_type` ("текст" or "диалог"),
        `prompt` (the task text shown to the model; the judge sees it).
    judge: optional callable `judge(task, reference, answer) -> reply` (text or number; must be 1, 0.5 or 0).
    judge_name: names a callable judge in cache keys; needed to use judge_cache / judge_cache_file with one.
    judge_url, judge_model: an OpenAI-compatible endpoint (`http://host:port`, `.../v1` or
        `.../v1/chat/completions`) and model name; default `$QAHUB_JUDGE_URL`, `$QAHUB_JUDGE_MODEL`
        (an explicit `judge` callable wins over these variables).
    judge_api_key: sent as a bearer token; default `$QAHUB_JUDGE_API_KEY`. Never sent over plain http to a
        host that is not loopback unless judge_allow_insecure_http=True.
    judge_concurrency (4), judge_timeout (60 s for a whole request), judge_retries (3), judge_backoff (1 s, doubling).
    judge_cache: a dict reused across calls; judge_cache_file: a JSON Lines file read and written back.
Returns:
    exact_match, exact_match_lenient: fractions in [0, 1] (None when there are no examples);
    count; unparseable, unparseable_lenient: replies with no readable letter;
    not_an_option, not_an_option_lenient: letters read that name no option of the example;
    by_task_type, by_context_type: the same scores per group;
    judge_score: the mean judge grade over the judged examples (in [0, 1]), or None;
    judge: whether the judge ran and its counts (judged, unparseable, failed, coverage, requests, cache_hits).
Raises:
    ValueError naming the record: a prediction that is not a string or None, a reference that lacks a field
    or holds a wrong value, two references with one id, predictions and references of different lengths.
    JudgeConfigError (a RuntimeError): the judge cannot work at all (configuration, HTTP 401/403/404, a redirect).
Examples:
    >>> limur = evaluate.load("limur")
    >>> refs = [{"id": 1, "answer": "Б", "options": ["кубок", "коробка", "стол", "шкаф"],
    ...          "task_type": "rwsd", "context_type": "текст", "prompt": "..."}]
    >>> result = limur.compute(predictions=["**Ответ:** Б."], references=refs)
    >>> result["exact_match"], result["unparseable"], result["judge"]["computed"]
    (1.0, 0, False)
"""

_NO_JUDGE = ("no judge configured: pass judge=<callable>, or judge_url and judge_model "
             "(or set QAHUB_JUDGE_URL and QAHUB_JUDGE_MODEL)")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Limur(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": {
                        "id": datasets.Value("int64"),
                        "answer": datasets.Value("string"),
                        "options": datasets.Sequence(datasets.Value("string")),
                        "task_type": datasets.Value("string"),
                        "context_type": datasets.Value("string"),
                        "prompt": datasets.Value("string"),
                    },
                }
            ),
            reference_urls=["https://github.com/MERA-Evaluation/MERA"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predictions and references, checked first so that any error names the record."""
        if predictions is not None:
            predictions = check_predictions(predictions)
        if references is not None:
            check_references(references, unique=False)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and reference, checked first so that any error names the record."""
        if prediction is not None or reference is not None:
            prediction = check_predictions([prediction])[0]
            check_references([reference], unique=False)
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, judge=None, judge_name=None, judge_url=None, judge_model=None,
                 judge_api_key=None, judge_allow_insecure_http=False, judge_concurrency=4, judge_timeout=60.0,
                 judge_retries=3, judge_backoff=1.0, judge_cache=None, judge_cache_file=None):
        check_references(references, unique=True)
        predictions = check_predictions(predictions)
        rows = [_score_one(pred, ref) for pred, ref in zip(predictions, references, strict=True)]
        endpoint = {"url": judge_url, "model": judge_model, "api_key": judge_api_key, "timeout": judge_timeout,
                    "retries": judge_retries, "backoff": judge_backoff, "allow_insecure_http": judge_allow_insecure_http}
        judge, name, identity = _make_judge(judge, judge_name, endpoint)
        if judge is None:
            judge_info = {"computed": False, "reason": _NO_JUDGE}
        else:
            if identity is None:
                if judge_cache is not None or judge_cache_file:
                    raise JudgeConfigError("judge_cache / judge_cache_file with a callable judge need judge_name=..., "
                                           "the name its replies are cached under (two callables cannot be told apart)")
                identity = private_identity()
            judge_info = _run_judge(rows, predictions, references, judge, (name, identity),
                                    judge_concurrency, judge_cache, judge_cache_file)
        result = _summary(rows)
        result["by_task_type"] = _groups(rows, references, "task_type")
        result["by_context_type"] = _groups(rows, references, "context_type")
        result.pop("judged", None)
        result["judge_score"] = result.pop("judge_score", None)
        result["judge"] = judge_info
        return result


def _score_one(prediction, ref):
    row = {}
    for mode, lenient in (("strict", False), ("lenient", True)):
        letter, _ = read_letter(prediction, lenient=lenient)
        row[f"{mode}_letter"] = letter
        row[f"{mode}_offered"] = letter is not None and LETTERS.index(letter) < len(ref["options"])
        row[mode] = int(letter == ref["answer"])
    return row


def _make_judge(judge, judge_name, endpoint):
    """``(callable, name, cache identity)``; ``(None, None, None)`` when no judge is configured.

    A callable without ``judge_name`` gets identity None: the caller gives it a private one.
    """
    if judge is not None:
        if endpoint["url"]:
            raise JudgeConfigError("pass either judge (a callable) or judge_url, not both")
        name = judge_name or getattr(judge, "__qualname__", type(judge).__name__)
        return judge, name, (f"callable:{judge_name}" if judge_name else None)
    url = endpoint["url"] or os.environ.get("QAHUB_JUDGE_URL")
    if not url:
        return None, None, None
    model = endpoint["model"] or os.environ.get("QAHUB_JUDGE_MODEL")
    if not model:
        raise JudgeConfigError("judge_url is set but no judge model: pass judge_model or set QAHUB_JUDGE_MODEL")
    key = endpoint["api_key"] or os.environ.get("QAHUB_JUDGE_API_KEY")
    client = Endpoint(url, model, api_key=key, timeout=endpoint["timeout"], retries=endpoint["retries"],
                      backoff=endpoint["backoff"], allow_insecure_http=endpoint["allow_insecure_http"])
    return client, client.name, client.identity


def _run_judge(rows, predictions, references, judge, naming, concurrency, cache, cache_file):
    name, identity = naming
    cache = load_cache(cache_file) if cache is None and cache_file else cache
    cache = {} if cache is None else cache
    items = [(ref["prompt"], _reference_text(ref), pred) for pred, ref in zip(predictions, references, strict=True)]
    try:
        scores, stats = judge_all(items, judge, identity, concurrency=concurrency, cache=cache)
    finally:  # what was judged before a fatal error is kept
        if cache_file:
            save_cache(cache_file, cache)
    for row, score in zip(rows, scores, strict=True):
        row["judge"] = score
    return {"computed": True, "judge": name, **stats}


def _reference_text(ref):
    """The gold letter with its option text, e.g. «Г. самолёты»."""
    letter = ref["answer"]
    return f"{letter}. {ref['options'][LETTERS.index(letter)]}"


def _summary(rows):
    count = len(rows)
    summary = {
        "exact_match": _mean([row["strict"] for row in rows]),
        "exact_match_lenient": _mean([row["lenient"] for row in rows]),
        "count": count,
        "unparseable": sum(row["strict_letter"] is None for row in rows),
        "unparseable_lenient": sum(row["lenient_letter"] is None for row in rows),
        "not_an_option": sum(row["strict_letter"] is not None and not row["strict_offered"] for row in rows),
        "not_an_option_lenient": sum(row["lenient_letter"] is not None and not row["lenient_offered"] for row in rows),
    }
    if any("judge" in row for row in rows):
        summary["judge_score"] = _mean([row["judge"] for row in rows if row["judge"] is not None])
        summary["judged"] = sum(row["judge"] is not None for row in rows)
    return summary


def _groups(rows, references, field):
    names = sorted({ref[field] for ref in references})
    return {name: _summary([row for row, ref in zip(rows, references, strict=True) if ref[field] == name]) for name in names}


def _mean(values):
    return sum(values) / len(values) if values else None
