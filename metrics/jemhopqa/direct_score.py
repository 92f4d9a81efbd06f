"""JEMHopQA's scores without ``evaluate`` around them: what ``compute(predictions=..., references=...)`` returns,
for ``qahub evaluate jemhopqa`` (which never imports ``evaluate``, nor what it pulls in) and for the metric."""

from .llm_jp_eval import aggregate, example_scores
from .records import check_solver, checked, pair
from .scoring import Similarity, score_questions, summarize
from .tokens import get_tokenizer


def score(predictions, references, **options) -> dict:
    """``compute``'s result of ``predictions`` and ``references`` given to it alone (checked here)."""
    check_solver(options.get("solver", "assignment"))
    return score_checked(*checked(predictions, references), **options)


def score_checked(preds, refs, ignore_missing=False, per_question=False, dictionary=None, synonyms="auto", user_dic=None,
          solver="assignment", cache=True) -> dict:
    """The result (see the kwargs docs) of checked predictions and references."""
    questions = pair(preds, refs, ignore_missing)
    tokenizer = get_tokenizer(dictionary, synonyms, user_dic, cache)
    rows = score_questions(questions, Similarity(tokenizer, cache), solver)
    for row, (_, gold, pred) in zip(rows, questions, strict=True):
        row.update(_llm_jp_eval_row(pred, gold))
    out = summarize(rows)
    answered = [row for row in rows if row["exact_match"] is not None]
    if answered:
        out["llm_jp_eval"] = aggregate(answered)
    replies = [pred for _, _, pred in questions if "reply" in pred]
    out.update({"replies": len(replies), "unparseable": sum(p["unparseable"] for p in replies),
                "derivations_unreadable": sum(p["derivations_unreadable"] for p in replies),
                "dictionary": tokenizer.dictionary, "synonyms": tokenizer.synonyms.description,
                "official_configuration": tokenizer.official})
    if per_question:
        out["per_question"] = rows
    return out


def _llm_jp_eval_row(pred: dict, gold: dict) -> dict:
    """llm-jp-eval's scores of a reply as a model output, or of a record's answer; None when not predicted."""
    if "reply" in pred:
        return example_scores(pred["reply"], gold["answer"])
    if "answer" in pred:
        return example_scores(pred["answer"], gold["answer"])
    return {"exact_match": None, "char_f1": None}
