"""Only like with like: which documents two runs of a task both scored, and what makes the pair not alike (other
prompts, another number of shots, another field of their signatures: ``qahub.signature.COMPARED``). ``pairing``
decides it once per pair and returns a frozen ``Pairing``; the comparisons with the baseline, the ranking, the
leader test and the star rule read its fields (``Pairing.record`` writes a baseline pair's verdict into the task's
report entry: ``caveats[run]``, compared, marked, never starred; ``not_compared[run]``, no comparison)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import eq, itemgetter

import numpy as np

from qahub.signature import COMPARED, differences

# the signature fields a caveat compares as they are: the shots are the runs' own (any harness, any age of run),
# the prompts are compared on the paired documents below (a signature's prompts hash covers all the documents a
# run scored), and a judge metric of another judge is not compared at all (judges.same_judge_only)
SIGNED = tuple(name for name in COMPARED if name not in ("n_shot", "prompts", "judge"))


@dataclass(frozen=True)
class Pairing:
    """Two runs of a task paired: ``base_index``/``run_index`` the documents both scored (None: not compared,
    ``not_compared`` says why), ``same_order`` (the same documents in the same order: each run's own arrays
    serve), ``same_design`` (resampled alike: the same clusters, or none for both), ``caveats`` (why the pair is
    not like with like, or not known to be: prompts a harness did not record, ``prompts_differ``), and what the
    report's notes and warnings say of the pair."""

    base: str
    run: str
    base_index: np.ndarray | None = None
    run_index: np.ndarray | None = None
    same_order: bool = False
    same_design: bool = True
    caveats: tuple = ()
    not_compared: str | None = None
    notes: tuple = ()
    warnings: tuple = ()

    @property
    def compared(self) -> bool:
        return self.not_compared is None

    @property
    def alike(self) -> bool:
        """Compared, and like with like: what a rank or a star needs."""
        return self.compared and not self.caveats

    @property
    def pairs(self) -> tuple:
        return self.base_index, self.run_index

    def record(self, entry):
        """The pair's verdict in the task's report entry (a comparison with the baseline)."""
        entry["notes"] += list(self.notes)
        entry["warnings"] += list(self.warnings)
        if self.not_compared is not None:
            entry.setdefault("not_compared", {})[self.run] = self.not_compared
        if self.caveats:
            entry.setdefault("caveats", {})[self.run] = list(self.caveats)


def same_design(ours, theirs) -> bool:
    """Whether two runs' documents are resampled alike (``Clusters`` or None each): the one design-key check."""
    return (ours and ours.key) == (theirs and theirs.key)


class Same:
    """``same(ours, theirs)``: whether two runs' lists (document keys, prompt hashes) are equal, each list made a
    tuple and interned once, so that equal lists are one object: a leaderboard pairs every two of its runs, and
    comparing their thousands of keys pair by pair was most of its pairings' time."""

    def __init__(self):
        self._interned, self._of = {}, {}

    def _canonical(self, values):
        found = self._of.get(id(values))
        if found is None or found[0] is not values:
            as_tuple = tuple(values)
            found = self._of[id(values)] = (values, self._interned.setdefault(as_tuple, as_tuple))
        return found[1]

    def __call__(self, ours: list, theirs: list) -> bool:
        return self._canonical(ours) is self._canonical(theirs)


def pairing(task, base, run, designs=None, same=eq) -> Pairing:
    """The ``Pairing`` of ``run`` with ``base`` on ``task``: the documents both scored (same doc_id and doc_hash;
    the task's document id where a run is an inspect log, which has no doc_hash); ``designs``: ``{run name:
    Clusters or None}`` of the task, for ``same_design`` (not given: alike); ``same``: how two lists are found
    equal (``==``; ``Same`` for many pairs)."""
    b, r = base.tasks.get(task), run.tasks[task]
    names = {"base": base.name, "run": run.name}
    if b is None:
        return Pairing(**names, not_compared=f"{base.name} did not run {task}")
    if r.dataset != b.dataset:
        reason = (f"a different dataset, config or split ({dataset_name(r.dataset)} against "
                  f"{dataset_name(b.dataset)})")
        return Pairing(**names, not_compared=reason, warnings=(f"{run.name}: not compared with {base.name}: {reason}",))
    lm_eval = b.keys[0][1] is not None and r.keys[0][1] is not None  # an inspect log has no doc_hash
    # an inspect task has no version of lm-eval's task file to compare
    checks = (("task version", r.version, b.version),) * lm_eval + (("number of shots", r.n_shot, b.n_shot),)
    warnings = tuple(f"{run.name}: {what} {mine} differs from {base.name}'s {theirs}"
                     for what, mine, theirs in checks if mine != theirs)
    designs = designs or {}
    alike = same_design(designs.get(base.name), designs.get(run.name))
    base_keys, run_keys = (b.keys, r.keys) if lm_eval else (b.ids, r.ids)
    if same(base_keys, run_keys):
        index = np.arange(len(base_keys))
        return Pairing(**names, base_index=index, run_index=index, same_order=True, same_design=alike,
                       caveats=tuple(caveats(b, r, None, None, same)), warnings=warnings)
    position = {key: i for i, key in enumerate(run_keys)}
    found = [(i, position[key]) for i, key in enumerate(base_keys) if key in position]
    if not found:
        return Pairing(**names, not_compared="no document in common", warnings=warnings + (
            f"{run.name}: no document in common with {base.name}; not compared",))
    note = (f"{run.name} vs {base.name}: paired on the {len(found)} documents both scored ({base.name} "
            f"{len(b.keys)}, {run.name} {len(r.keys)}): {why_fewer(base, run)}")
    ib, ir = (np.array(side) for side in zip(*found))
    return Pairing(**names, base_index=ib, run_index=ir, same_design=alike, caveats=tuple(caveats(b, r, ib, ir)),
                   notes=(note,), warnings=warnings)


class Pairings:
    """Each pair of a task's runs paired once (``pairing``), whoever asks: the comparisons with the baseline, the
    ranking and the leader test read the same ``Pairing``."""

    def __init__(self, task, designs=None):
        self.task, self.designs, self._done, self._same = task, designs or {}, {}, Same()

    def __call__(self, base, run) -> Pairing:
        key = (base.name, run.name)
        if key not in self._done:
            self._done[key] = pairing(self.task, base, run, self.designs, self._same)
        return self._done[key]


def why_fewer(*runs) -> str:
    """Why two runs of a task scored other documents: lighteval's ``--max-samples N`` draws N documents it
    shuffles itself, so two such runs share few; lm-eval's ``--limit N`` takes the first N."""
    drawn = [run.name for run in runs if getattr(run, "harness", "") == "lighteval"]
    if drawn:
        return (f"lighteval draws --max-samples documents at random ({', '.join(drawn)}): give lighteval no "
                "--max-samples to compare it on every document")
    return "another --limit, --samples or --sample-id?"


def caveats(b, r, base_index, run_index, same=eq) -> list:
    """Why the runs ``b`` and ``r`` of a task are not like with like on the paired documents (both indexes None:
    every document, in the same order in both runs; ``same`` finds two lists equal): another number of
    shots; each other field of ``SIGNED`` both runs' signatures record, with different values (another scorer,
    revision, task version...); and what ``prompts_differ`` finds of their prompts."""
    found = []
    if r.n_shot != b.n_shot:
        found.append(f"different number of shots {b.n_shot}/{r.n_shot}")
    for name in differences(b.signature, r.signature, SIGNED):
        found.append(f"different {name.replace('_', ' ')} {getattr(b.signature, name)}/{getattr(r.signature, name)}")
    verdict = prompts_differ(b, r, base_index, run_index, same)
    return found + [verdict] * bool(verdict)


def prompts_differ(b, r, base_index, run_index, same=eq) -> str | None:
    """The prompts' outcome of a pair: "different prompts (chat format)" when the runs sent them another way
    (raw text, chat messages, a chat template); "different prompts (...)" when a paired document's recorded
    prompts differ (each run's prompt hashes, when both hashed the same thing); "prompts not recorded by
    HARNESS: not compared" when a run's reader could not know its prompts (``TaskRun.prompts_unknown``), and
    "prompts recorded as messages and as text: not compared" when the runs hashed other things (chat messages,
    the text sent): not known is never called different; None when alike or not read (runs built by hand)."""
    if b.prompt_format and r.prompt_format and b.prompt_format != r.prompt_format:
        return "different prompts (chat format)"
    unknown = list(dict.fromkeys(run.prompts_unknown for run in (b, r) if run.prompts_unknown))
    if unknown:
        return f"prompts {' and '.join(unknown)}: not compared"
    if b.prompts is None or r.prompts is None or None in (b.prompt_hashed, r.prompt_hashed):
        return None
    if b.prompt_hashed != r.prompt_hashed:  # e.g. inspect's chat messages against lm-eval's rendered template
        return f"prompts recorded as {r.prompt_hashed} and as {b.prompt_hashed}: not compared"
    if base_index is None and same(b.prompts, r.prompts):  # every document, in the same order
        return None
    if _differ(_at(b.prompts, base_index), _at(r.prompts, run_index)):
        kind = "few-shot" if r.n_shot != b.n_shot else "few-shot or template" if r.n_shot else "template"
        return f"different prompts ({kind})"
    return None


def _at(values: list, index) -> list:
    """``values`` at ``index`` (None: all of them), picked in C (a leaderboard pairs every two runs: millions of
    documents)."""
    if index is None:
        return values
    index = index.tolist() if isinstance(index, np.ndarray) else list(index)
    if index == list(range(len(values))):
        return values
    return list(itemgetter(*index)(values)) if len(index) > 1 else [values[i] for i in index]


def _differ(ours: list, theirs: list) -> bool:
    """Whether two runs' prompts of the same documents differ where both recorded one (None: not recorded)."""
    return ours != theirs and any(a != b for a, b in zip(ours, theirs) if a is not None and b is not None)


def dataset_name(dataset) -> str:
    return "/".join(str(part) for part in dataset) or "not recorded"
