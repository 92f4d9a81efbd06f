"""LIMUR's scores without ``evaluate`` around them: what ``compute(predictions=..., references=...)`` returns,
for ``qahub evaluate limur`` (which never imports ``evaluate``, nor what it pulls in) and for the metric."""

from collections import Counter
from operator import itemgetter

from .answers import LETTERS
from .gc_pause import gc_paused
from .judge import (
    Endpoint,
    JudgeConfigError,
    check_cache_file,
    check_prompt,
    grade_parser,
    judge_all,
    private_identity,
    save_cache,
)
from .judge_settings import BY_NAME, check_options, resolve
from .mera import answer_candidates
from .references import check_inputs, task_text
from .score import ALL_CLOSED, all_closed, score_reply

CALLABLE_RECORD = {"url": None, "model": None, "max_tokens": None}  # a callable judge: only its name and prompt
_NO_JUDGE = ("no judge configured: pass judge=<callable>, or judge_url and judge_model "
             "(or set QAHUB_JUDGE_URL and QAHUB_JUDGE_MODEL)")


def score(predictions, references, **options):
    """``compute``'s result of ``predictions`` and ``references`` given to it alone (checked here)."""
    with gc_paused():
        checked = check_inputs(predictions, references)
    return score_all(*checked, **options)


def score_all(predictions, references, judge=None, judge_name=None, judge_cache=None, **options):
    """The result of checked replies and references (internal records); the judge's options (``judge_<setting>``
    of ``judge_settings.SETTINGS``) checked first."""
    if all_closed(ref["answer"] for ref in references):
        raise ValueError("limur: " + ALL_CLOSED.format(
            answers="the answers", where=f"these {len(references)} references (every outputs is \"\", as in MERA's test split)"))
    given = _judge_options(options)
    check_options(**given)
    endpoint = resolve(given)
    check_prompt(endpoint["prompt"])
    judge_prompt = endpoint["prompt"]
    judge, name, identity = _make_judge(judge, judge_name, given, endpoint)
    with gc_paused():
        tally, rows = _scored(predictions, references, keep_rows=judge is not None)
    if judge is None:
        judge_info = {"computed": False, "reason": _NO_JUDGE}
    else:
        if identity is None:
            if judge_cache is not None or endpoint["cache_file"]:
                raise JudgeConfigError("judge_cache / judge_cache_file with a callable judge need judge_name=..., "
                                       "the name its replies are cached under (two callables cannot be told apart)")
            identity = private_identity()
        identity = f"{identity}|{judge_prompt}" if judge_prompt != "seed" else identity
        judge_info = _run_judge(rows, predictions, references, judge, (name, identity, judge_prompt),
                                endpoint["concurrency"], judge_cache, endpoint["cache_file"])
        judge_info.update(judge.record if isinstance(judge, Endpoint) else CALLABLE_RECORD)
    result = _summaries(tally, rows, references)
    result.pop("judged", None)  # in judge_info
    result["judge"] = judge_info
    return result


def _judge_options(options):
    """``{setting: value}`` of the ``judge_<setting>`` keywords; any other keyword is a TypeError."""
    given = {}
    for keyword, value in options.items():
        name = keyword.removeprefix("judge_")
        if name not in BY_NAME or keyword == name:
            raise TypeError(f"limur: unexpected keyword argument {keyword!r}")
        given[name] = value
    return given


def _make_judge(judge, judge_name, given, endpoint):
    """``(callable, name, cache identity)``; ``(None, None, None)`` when no judge is configured.

    ``given``: the settings passed to compute; ``endpoint``: every setting resolved (given, variable, default).
    A callable without ``judge_name`` gets identity None: the caller gives it a private one.
    """
    if judge is not None:
        if given.get("url") or given.get("model"):
            raise JudgeConfigError("pass either judge (a callable) or judge_url and judge_model, not both")
        name = judge_name or getattr(judge, "__qualname__", type(judge).__name__)
        return judge, name, (f"callable:{judge_name}" if judge_name else None)
    if not endpoint["url"]:
        if endpoint["model"]:
            raise JudgeConfigError(f"judge_model {endpoint['model']!r} is set but no judge_url "
                                   f"(pass judge_url, --judge-url, or set {BY_NAME['url'].env})")
        return None, None, None
    if not endpoint["model"]:
        raise JudgeConfigError(f"judge_url is set but no judge model: pass judge_model or set {BY_NAME['model'].env}")
    client = Endpoint(endpoint["url"], endpoint["model"], api_key=endpoint["api_key"], timeout=endpoint["timeout"],
                      retries=endpoint["retries"], backoff=endpoint["backoff"],
                      allow_insecure_http=endpoint["allow_insecure_http"], prompt=endpoint["prompt"])
    return client, client.name, client.identity


def _run_judge(rows, predictions, references, judge, naming, concurrency, cache, cache_file):
    """Judge every example with an answer; each row gets ``judge`` (a score, or None) and ``judge_status``."""
    name, identity, prompt = naming
    items, owners = _judge_items(predictions, references, prompt)
    stored = check_cache_file(cache_file) if cache_file else {}  # before the first request
    cache = stored if cache is None else cache
    try:
        scores, stats = judge_all(items, judge, identity, concurrency=concurrency, cache=cache,
                                  parse=grade_parser(prompt))
    finally:  # what was judged before a fatal error is kept
        if cache_file:
            save_cache(cache_file, cache)
    failed = set(stats.pop("failures"))
    for row in rows:
        row["judge"], row["judge_status"] = None, "closed" if row["closed"] else "unparseable"
    for index, (owner, score) in enumerate(zip(owners, scores, strict=True)):
        row = rows[owner]
        if score is not None:
            row["judge"], row["judge_status"] = max(score, row["judge"] or 0.0), "judged"
        elif index in failed and row["judge_status"] != "judged":
            row["judge_status"] = "failed"
    count = len(rows)
    judged = sum(row["judge_status"] == "judged" for row in rows)
    return {"computed": True, "judge": name, "prompt": prompt, "judged": judged,
            "unparseable": sum(row["judge_status"] == "unparseable" for row in rows),
            "failed": sum(row["judge_status"] == "failed" for row in rows),
            "closed": sum(row["judge_status"] == "closed" for row in rows),
            "coverage": judged / count if count else None,
            "requests": stats["requests"], "cache_hits": stats["cache_hits"],
            "unparseable_replies": stats["unparseable_replies"], "errors": stats["errors"]}


def _judge_items(predictions, references, prompt):
    """``([(task, reference answer, answer)], [example index of each])``: the seed prompt judges the whole
    reply against «letter. option text»; MERA's judges each answer candidate against ``outputs``."""
    items, owners = [], []
    for index, (pred, ref) in enumerate(zip(predictions, references, strict=True)):
        letter = ref["answer"].strip()
        if not letter:
            continue
        if prompt == "mera":
            answers, reference = answer_candidates(pred), ref["answer"]
        else:
            answers, reference = [pred], f"{letter}. {ref['options'][LETTERS.index(letter)]}"
        task = task_text(ref["prompt"])
        for answer in answers:
            items.append((task, reference, answer))
            owners.append(index)
    return items, owners


# per-example values of score_reply counted where true, and the counts made of them
_TRUE_COUNTED = ("strict", "lenient", "mera", "closed", "strict_offered", "lenient_offered")
_TALLIED = ("strict_unread", "lenient_unread", *_TRUE_COUNTED)  # what a tally's key holds after the two groups
_COUNTED = ("count", *_TALLIED)


def _scored(predictions, references, keep_rows):
    """``(tally, rows)``: how many examples have each combination of task type, context type and the values a
    summary counts (whether a letter was read, then _TRUE_COUNTED), counted as each example is scored; and every
    example's values when the judge needs them (else None): 100,000 examples' values need not all be kept."""
    tally = Counter()
    rows = [] if keep_rows else None
    flags = itemgetter(*_TRUE_COUNTED)
    for pred, ref in zip(predictions, references, strict=True):
        row = score_reply(pred, ref["answer"], len(ref["options"]))
        tally[(ref["task_type"], ref["context_type"], row["strict_letter"] is None, row["lenient_letter"] is None,
               *flags(row))] += 1
        if keep_rows:
            rows.append(row)
    return tally, rows


def _summaries(tally, rows, references):
    """The summary of all examples and of each task type and context type; the counts of all examples are the
    sums of the task types' counts. ``rows``: each example's values with its judgement, or None (no judge)."""
    by_task, by_context = _grouped(rows, references) if rows is not None else ({}, {})
    task_counts, context_counts = _group_counts(tally, 0), _group_counts(tally, 1)
    total = {key: sum(counts[key] for counts in task_counts.values()) for key in _COUNTED}
    result = _summary(total, rows)
    result["by_task_type"] = {name: _summary(task_counts[name], by_task.get(name)) for name in sorted(task_counts)}
    result["by_context_type"] = {name: _summary(context_counts[name], by_context.get(name))
                                 for name in sorted(context_counts)}
    return result


def _grouped(rows, references):
    """The rows of each task type and of each context type."""
    by_task, by_context = {}, {}
    for row, ref in zip(rows, references, strict=True):
        by_task.setdefault(ref["task_type"], []).append(row)
        by_context.setdefault(ref["context_type"], []).append(row)
    return by_task, by_context


def _group_counts(tally, position):
    """The counts (_COUNTED) of each group: the task types (``position`` 0) or the context types (1)."""
    groups = {}
    for key, number in tally.items():
        counts = groups.setdefault(key[position], dict.fromkeys(_COUNTED, 0))
        counts["count"] += number
        for name, value in zip(_TALLIED, key[2:], strict=True):
            if value == True:  # noqa: E712 - a 0/1 value or a bool, counted as list.count(True) would
                counts[name] += number
    return groups


def _summary(counts, rows):
    """The scores of a group from its counts; the judge's from its ``rows`` (None when no judge ran)."""
    count = counts["count"]
    summary = {"exact_match": counts["strict"] / count, "exact_match_lenient": counts["lenient"] / count,
               "exact_match_mera": counts["mera"] / count, "count": count, "closed": counts["closed"],
               "unparseable": counts["strict_unread"], "unparseable_lenient": counts["lenient_unread"],
               # a letter is read and offered, read and not offered, or not read
               "not_an_option": count - counts["strict_unread"] - counts["strict_offered"],
               "not_an_option_lenient": count - counts["lenient_unread"] - counts["lenient_offered"]}
    if rows is not None:  # the judge ran: every row has its judgement
        judged = [row["judge"] for row in rows if row["judge_status"] == "judged"]
        summary["judge_score"] = _mean([row["judge"] or 0.0 for row in rows])
        summary["judge_score_judged"] = _mean(judged)  # None when nothing was judged: no mean of nothing
        summary["judge_coverage"] = len(judged) / count
        summary["judged"] = len(judged)
    else:
        summary["judge_score"] = None
    return summary


def _mean(values):
    return sum(values) / len(values) if values else None
