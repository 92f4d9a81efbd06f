"""Only like with like: which documents two runs of a task both scored, and what makes the pair not alike (other
prompts, another number of shots, another field of their signatures: ``qahub.signature.COMPARED``), written in the task's report entry: ``caveats[run]`` (compared, marked, never
starred) and ``not_compared[run]`` (no comparison: no document in common, another dataset)."""

from __future__ import annotations

import numpy as np

from qahub.signature import COMPARED, differences

# the signature fields a caveat compares as they are: the shots are the runs' own (any harness, any age of run),
# the prompts are compared on the paired documents below (a signature's prompts hash covers all the documents a
# run scored), and a judge metric of another judge is not compared at all (judges.same_judge_only)
SIGNED = tuple(name for name in COMPARED if name not in ("n_shot", "prompts", "judge"))


def pairing(task, base, run, entry):
    """(baseline indices, run indices) of the documents both scored (same doc_id and doc_hash; the task's document
    id where a run is an inspect log, which has no doc_hash), or None; what makes the pair not alike goes to
    ``entry["caveats"][run]``, a run not compared to ``entry["not_compared"][run]``."""
    b, r = base.tasks.get(task), run.tasks[task]
    if b is None:
        return None
    if r.dataset != b.dataset:
        reason = (f"a different dataset, config or split ({dataset_name(r.dataset)} against "
                  f"{dataset_name(b.dataset)})")
        entry["warnings"].append(f"{run.name}: not compared with {base.name}: {reason}")
        entry.setdefault("not_compared", {})[run.name] = reason
        return None
    lm_eval = b.keys[0][1] is not None and r.keys[0][1] is not None  # an inspect log has no doc_hash
    # an inspect task has no version of lm-eval's task file to compare
    checks = (("task version", r.version, b.version),) * lm_eval + (("number of shots", r.n_shot, b.n_shot),)
    for what, mine, theirs in checks:
        if mine != theirs:
            entry["warnings"].append(f"{run.name}: {what} {mine} differs from {base.name}'s {theirs}")
    base_keys, run_keys = (b.keys, r.keys) if lm_eval else (b.ids, r.ids)
    if base_keys == run_keys:
        index = np.arange(len(base_keys))
        pairs = index, index
    else:
        position = {key: i for i, key in enumerate(run_keys)}
        found = [(i, position[key]) for i, key in enumerate(base_keys) if key in position]
        if not found:
            entry["warnings"].append(f"{run.name}: no document in common with {base.name}; not compared")
            entry.setdefault("not_compared", {})[run.name] = "no document in common"
            return None
        entry["notes"].append(f"{run.name} vs {base.name}: paired on the {len(found)} documents both scored "
                              f"({base.name} {len(b.keys)}, {run.name} {len(r.keys)}): {why_fewer(base, run)}")
        pairs = tuple(np.array(side) for side in zip(*found))
    found = caveats(b, r, *pairs)
    if found:
        entry.setdefault("caveats", {})[run.name] = found
    return pairs


def why_fewer(*runs) -> str:
    """Why two runs of a task scored other documents: lighteval's ``--max-samples N`` draws N documents it
    shuffles itself, so two such runs share few; lm-eval's ``--limit N`` takes the first N."""
    drawn = [run.name for run in runs if getattr(run, "harness", "") == "lighteval"]
    if drawn:
        return (f"lighteval draws --max-samples documents at random ({', '.join(drawn)}): give lighteval no "
                "--max-samples to compare it on every document")
    return "another --limit, --samples or --sample-id?"


def caveats(b, r, base_index, run_index) -> list:
    """Why the runs ``b`` and ``r`` of a task are not like with like on the paired documents: another number of
    shots; each other field of ``SIGNED`` both runs' signatures record, with different values (another scorer,
    revision, task version...); prompts sent another way (raw text, chat messages, a chat template); other
    prompts on a paired document (each run's prompt hashes, when both hashed the same thing)."""
    found = []
    if r.n_shot != b.n_shot:
        found.append(f"different number of shots {b.n_shot}/{r.n_shot}")
    for name in differences(b.signature, r.signature, SIGNED):
        found.append(f"different {name.replace('_', ' ')} {getattr(b.signature, name)}/{getattr(r.signature, name)}")
    if b.prompt_format and r.prompt_format and b.prompt_format != r.prompt_format:
        found.append("different prompts (chat format)")
    elif b.prompts is not None and r.prompts is not None and b.prompt_hashed == r.prompt_hashed:
        differ = any(b.prompts[i] != r.prompts[j] for i, j in zip(base_index, run_index)
                     if b.prompts[i] is not None and r.prompts[j] is not None)
        if differ:
            kind = "few-shot" if r.n_shot != b.n_shot else "few-shot or template" if r.n_shot else "template"
            found.append(f"different prompts ({kind})")
    return found


def dataset_name(dataset) -> str:
    return "/".join(str(part) for part in dataset) or "not recorded"
