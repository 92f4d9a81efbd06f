"""Judge scores are compared only between runs graded by the same judge: the judge a run used is in its results
file (``configs[task].metadata.judge``, written by a ``qahub harness-tasks --judge`` task: URL without
credentials, model, prompt, max tokens)."""

from __future__ import annotations

JUDGE_METRICS = ("judge_score", "judge_coverage")


def judge_of(run, task):
    """The judge ``run`` recorded for ``task``, or None (no judge, or a task generated before it was recorded)."""
    config = (run.results.get("configs") or {}).get(task)
    metadata = config.get("metadata") if isinstance(config, dict) else None
    return metadata.get("judge") if isinstance(metadata, dict) else None


def same_judge_only(task, base, matches, runs, entry):
    """Drop from ``matches`` (``{run name: {metric: ...}}``) the judge metrics of runs whose judge is not the
    baseline's, or is not known; a note says which judge scores were compared and which were not, and why."""
    for run in runs:
        judged = [m for m in JUDGE_METRICS if m in matches.get(run.name, {})]
        if not judged:
            continue
        mine, theirs = judge_of(run, task), judge_of(base, task)
        if mine is not None and mine == theirs:
            entry["notes"].append(f"{run.name} vs {base.name}: judge scores compared, both by {describe(mine)}")
            continue
        for metric in judged:
            del matches[run.name][metric]
        entry["notes"].append(f"{run.name} vs {base.name}: judge scores not compared: {run.name} was judged by "
                              f"{describe(mine)}, {base.name} by {describe(theirs)}")


def describe(judge) -> str:
    if not isinstance(judge, dict):
        return "an unrecorded judge"
    if judge.get("error"):
        return f"no usable judge ({judge['error']})"
    return (f"{judge.get('model')} at {judge.get('url')} (prompt {judge.get('prompt')}, "
            f"max_tokens {judge.get('max_tokens')})")
