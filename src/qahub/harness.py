"""Task folders for lm-evaluation-harness: ``qahub harness-tasks`` writes them, ``lm_eval --include_path`` reads them.

A task's prompt, gold target, per-example scores and aggregations are its metric's own: the ``TASKS`` table
(``TaskSpec``s) of ``qahub.metrics.<metric>.task_api``, the code the ``evaluate`` metric scores with. This module only chooses the
dataset config and splits a location has, writes one folder per task (``<task>.yaml`` + ``utils.py``), and binds
those functions to the location in ``utils.py``, so that lm-eval scores each reply with qahub's code.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import qahub
from qahub import tasks
from qahub.files import Guard, listed, staged, swap_in
from qahub.tasks import TaskSpec

logger = logging.getLogger(__name__)
MARKER = "qahub_tasks.json"  # written in every generated folder: what it holds, and proof that qahub wrote it
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TaskSpec)}  # lm-eval's own defaults, as TaskSpec's


class HarnessError(ValueError):
    pass


def task_api(corpus: str):
    """The ``task_api`` module of the metric that declares ``CORPUS = corpus`` (``qahub.tasks``)."""
    try:
        return tasks.task_api(corpus)
    except tasks.TaskError as err:
        raise HarnessError(str(err)) from None


corpora, all_tasks = tasks.corpora, tasks.all_tasks  # what the harness has: every corpus whose tasks import


def write_task_folder(out, locations: dict, judge: bool = False, overwrite: bool = False) -> dict:
    """Write ``out/<task>/`` for every task of every corpus in ``locations`` ({corpus: folder or Hub id}).

    Returns ``{task: {"corpus", "location", "config", "split", "fewshot_split"}}`` (also saved as
    ``out/qahub_tasks.json``). The folder is written beside ``out`` and renamed into place when complete. With
    ``overwrite``, what an earlier run wrote there (the entries its ``qahub_tasks.json`` lists) is replaced and
    every other file is kept; a task folder of that run holding other files is refused, naming them.
    """
    out = Path(out).absolute()
    guard = Guard(not_folder=f"{out}: exists and is not a folder; choose another --out",
                  not_empty=f"{out}: exists and is not empty; pass --overwrite to replace an earlier task folder",
                  not_ours=f"{out}: is not a folder written by qahub harness-tasks (no {MARKER}); "
                           "--overwrite only replaces one",
                  is_ours=_written_by_us)
    with staged(out, overwrite, guard, swap=_swap_tasks) as staging:
        plan = {}
        for corpus, location in locations.items():
            plan.update(plan_tasks(corpus, location))
        for name, entry in plan.items():
            _write_task(staging / name, name, entry, judge)
        for corpus in locations:
            _write_group(staging, corpus, [name for name, e in plan.items() if e["corpus"] == corpus])
        (staging / MARKER).write_text(json.dumps(plan, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return plan


def _written_by_us(out: Path) -> bool:
    """Whether ``out`` holds an earlier ``harness-tasks`` run (its marker), which ``overwrite`` replaces while
    keeping everything else (the user's own tasks, notes, data); a qahub task folder holding other files is
    refused, naming them."""
    if not (out / MARKER).is_file():
        return False
    earlier = _written_before(out)
    foreign = [f"{name}/{rel}" for name in earlier if (out / name).is_dir() for rel in _foreign_in_task(out / name)]
    if foreign:
        raise FileExistsError(f"{out}: the task folders qahub wrote there now hold other files ({listed(foreign)}); "
                              "move them out of those folders, then rerun with --overwrite (it replaces the task folders)")
    return True


def _swap_tasks(staging: Path, out: Path):
    """Into an existing ``out``, entry by entry: what the earlier run wrote is replaced, the rest kept."""
    if not out.exists():
        swap_in(staging, out)
        return
    earlier = _written_before(out) if (out / MARKER).is_file() else []
    _refuse_clashes(out, staging, earlier)
    _swap_entries(staging, out, earlier)


def _written_before(out: Path) -> list[str]:
    """What the marker of an earlier run says it wrote: its task folders and group files, and the marker."""
    try:
        plan = json.loads((out / MARKER).read_text(encoding="utf-8"))
        names = [name for name in plan if _plain_name(name)]
        corpora = {entry["corpus"] for entry in plan.values()}
        groups = [_group_file(c, [n for n, e in plan.items() if e["corpus"] == c]) for c in sorted(corpora)]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        raise FileExistsError(f"{out / MARKER}: not the list of an earlier harness-tasks run; "
                              "--overwrite only replaces what qahub wrote, and cannot tell what that is") from None
    return [name for name in dict.fromkeys([*names, *filter(None, groups), MARKER])
            if _plain_name(name) and (out / name).exists()]


def _plain_name(name) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name


def _foreign_in_task(folder: Path) -> list[str]:
    """Files in a task folder that harness-tasks does not write (its YAML and utils.py; Python's caches aside)."""
    known = {f"{folder.name}.yaml", "utils.py"}
    found = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir() or p.is_symlink()]
    return sorted(r for r in found if r not in known and not r.startswith("__pycache__/"))


def _refuse_clashes(out: Path, staging: Path, earlier: list[str]):
    """A new entry whose name the user's own file or folder in ``out`` has: refused, never replaced."""
    clashes = sorted(p.name for p in staging.iterdir() if p.name not in earlier and (out / p.name).exists())
    if clashes:
        raise FileExistsError(f"{out}: holds {', '.join(clashes)}, not written by qahub harness-tasks, where it "
                              "would write its own; move or rename it")


def _swap_entries(staging: Path, out: Path, earlier: list[str]):
    """Move the earlier run's entries out of ``out`` and the new ones in; on failure put the earlier ones back."""
    trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    removed, added = [], []
    try:
        for name in earlier:
            (out / name).rename(trash / name)
            removed.append(name)
        for entry in sorted(staging.iterdir()):
            entry.rename(out / entry.name)
            added.append(entry.name)
    except BaseException:
        for name in added:
            (out / name).rename(staging / name)
        for name in removed:
            (trash / name).rename(out / name)
        raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def plan_tasks(corpus: str, location) -> dict:
    """``{task: entry}``: the config, evaluation split and few-shot split each task of ``corpus`` uses there."""
    tasks = task_api(corpus).TASKS
    location = resolve_location(location)
    available = _configs(location)
    plan = {}
    for name, spec in tasks.items():
        config = next((c for c in spec.configs if c in available), None)
        if config is None:
            raise HarnessError(f"{location}: has none of the configs task {name} runs on "
                               f"({', '.join(spec.configs)}); it has {', '.join(available) or 'none'}")
        present = _splits(location, config)
        split = _eval_split(location, config, present, spec, name, corpus)
        fewshot = fewshot_split(spec, present, split)
        if fewshot != split:
            _reference_rows(location, config, fewshot, corpus)  # a damaged few-shot shard stops here, not inside lm-eval
        if spec.docs:  # the configs its docs join (e.g. Topical-Chat's reading_sets) are read now too
            _reading(spec.docs, _reference_rows(location, config, split, corpus), location, load=_reference_rows)
        plan[name] = {"corpus": corpus, "location": location, "config": config, "split": split,
                      "fewshot_split": fewshot}
    return plan


def fewshot_split(spec: TaskSpec, present: list[str], split: str) -> str:
    """The task's own few-shot split where the export has it, else the evaluated split itself: lm-eval 0.4 leaves
    the document out of its own demonstrations only when ``fewshot_split`` equals ``test_split`` (without a
    ``fewshot_split`` it samples the test docs with no exclusion)."""
    return spec.fewshot_split if spec.fewshot_split in present else split


def resolve_location(location) -> str:
    """An existing folder as an absolute path; anything else must look like a Hub dataset id ``ORG/NAME``."""
    path = Path(str(location)).expanduser()
    if path.is_dir():
        if not (path / "README.md").is_file():
            raise HarnessError(f"{path}: not an exported corpus (no README.md); build one with `qahub build`")
        return str(path.absolute())
    if str(location).count("/") != 1 or str(location).startswith((".", "/")):
        raise HarnessError(f"{location}: neither a folder nor a Hub dataset id ORG/NAME")
    return str(location)


def _configs(location: str) -> list[str]:
    from qahub import exports

    return _reading(exports.export_configs, location)


def _splits(location: str, config: str) -> list[str]:
    from qahub import exports

    return _reading(exports.export_splits, location, config)


def _reference_rows(location: str, config: str, split: str, corpus: str | None = None):
    """The rows of one split as a ``datasets.Dataset``, read as ``qahub evaluate`` reads them (from a folder:
    fresh from its shards, checked against its README, and against ``corpus``'s builder when given)."""
    from qahub import exports

    return _reading(exports.export_dataset, location, config, split, what="an exported corpus", corpus=corpus)


def _reading(read, *args, **kwargs):
    """``read(...)``, its one-line errors as HarnessErrors."""
    try:
        return read(*args, **kwargs)
    except (ValueError, OSError) as err:
        raise HarnessError(str(err)) from None


def _eval_split(location: str, config: str, present: list[str], spec: TaskSpec, name: str, corpus: str) -> str:
    """The first preferred split present whose rows have gold (``usable``), e.g. LIMUR's test only when open."""
    candidates = [s for s in spec.splits if s in present]
    for split in candidates:
        rows = _reference_rows(location, config, split, corpus)  # read even when not needed: a damaged shard stops here
        if spec.usable is None or any(spec.usable(row) for row in rows):
            return split
    raise HarnessError(f"{location}: config {config} has no split with gold answers for task {name} "
                       f"(tried {', '.join(candidates) or 'none'} of {', '.join(present)})")


def _write_task(folder: Path, name: str, entry: dict, judge: bool):
    spec = task_api(entry["corpus"]).TASKS[name]
    folder.mkdir(parents=True)
    (folder / f"{name}.yaml").write_text(task_yaml(name, entry, spec, judge), encoding="utf-8")
    (folder / "utils.py").write_text(utils_py(name, entry, spec, judge), encoding="utf-8")


def _write_group(root: Path, corpus: str, names: list[str]):
    """Several tasks and none named ``qahub_<corpus>``: a group of that name runs them all."""
    file = _group_file(corpus, names)
    if file is None:
        return
    text = f"group: qahub_{corpus}\ntask:\n" + "".join(f"  - {n}\n" for n in names) + "metadata:\n  version: 1.0\n"
    (root / file).write_text(text, encoding="utf-8")


def _group_file(corpus: str, names: list[str]) -> str | None:
    """The group file ``_write_group`` writes for these tasks of ``corpus``, if any."""
    return None if f"qahub_{corpus}" in names or len(names) < 2 else f"_qahub_{corpus}.yaml"


def task_metrics(spec: TaskSpec, judge: bool) -> dict:
    return {**spec.metrics, **spec.judge_metrics} if judge else dict(spec.metrics)


def task_yaml(name: str, entry: dict, spec: TaskSpec, judge: bool) -> str:
    q = json.dumps  # a JSON string is a valid YAML double-quoted scalar
    lines = [
        f"# Generated by `qahub harness-tasks` (qahub {qahub.__version__}); regenerate rather than edit.",
        f"task: {name}",
        # the documents are read by qahub from the export's files at each run (utils.dataset), never from a
        # datasets cache entry keyed by the folder's name: a rebuilt export is read as it is now
        "custom_dataset: !function utils.dataset",
        f"dataset_path: {q(entry['location'])}",
        f"dataset_name: {q(entry['config'])}",
        f"test_split: {q(entry['split'])}",
        f"fewshot_split: {q(entry['fewshot_split'])}",
    ]
    if spec.cluster:  # demonstrations from outside the document's conversation (utils.sampler)
        lines += ["fewshot_config:", "  sampler: !function utils.sampler"]
    lines.append("output_type: generate_until")
    for key in ("target_delimiter", "fewshot_delimiter"):  # e.g. llm-jp-eval puts the answer right after its header
        if getattr(spec, key) != _DEFAULTS[key]:  # written only where it is not lm-eval's default
            lines.append(f"{key}: {q(getattr(spec, key))}")
    if spec.docs:
        lines.append("process_docs: !function utils.process_docs")
    lines += [
        "doc_to_text: !function utils.doc_to_text",
        "doc_to_target: !function utils.doc_to_target",
        "process_results: !function utils.process_results",
        "generation_kwargs:",
        f"  until: {q(list(spec.until), ensure_ascii=False)}",
        f"  max_gen_toks: {spec.max_gen_toks}",
        "  do_sample: false",
        "  temperature: 0.0",
        "metric_list:",
    ]
    for metric, (aggregation, higher) in task_metrics(spec, judge).items():
        how = aggregation if isinstance(aggregation, str) else f"!function utils.aggregate_{metric}"
        lines += [f"  - metric: {metric}", f"    aggregation: {how}", f"    higher_is_better: {str(higher).lower()}"]
    lines += judge_filter_yaml(spec, judge)
    # no num_fewshot: lm-eval ignores --num_fewshot for a task whose YAML sets it (0 when neither does)
    lines += ["metadata:", "  version: 1.0"]
    if judge and spec.judge_record:  # the judge lm-eval's run uses, read when lm-eval loads the task
        lines.append("  judge: !function utils.judge_record")
    if spec.configuration:  # what the scorer runs with here (e.g. which tokenizer dictionary)
        lines.append(f"  scorer: {q(spec.configuration(), ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def judge_filter_yaml(spec: TaskSpec, judge: bool) -> list[str]:
    """A judge task's filters: lm-eval's ``custom`` filter sees every reply of the run at once, so the judge runs
    there, concurrently (lm-eval calls process_results one document at a time); then lm-eval's default
    ``take_first``, under the default name ``none``, so the replies and the metric names stay as without it."""
    if not (judge and spec.judge_filter):
        return []
    return ["filter_list:", '  - name: "none"', "    filter:", "      - function: custom",
            "        filter_fn: !function utils.judge_filter", "      - function: take_first"]


def utils_py(name: str, entry: dict, spec: TaskSpec, judge: bool) -> str:
    aggregates = [m for m, (aggregation, _) in task_metrics(spec, judge).items() if not isinstance(aggregation, str)]
    lines = [
        f'"""lm-evaluation-harness functions of task {name}, generated by `qahub harness-tasks`.',
        "",
        f"Prompt, target and scores are qahub's own: {task_api(entry['corpus']).__name__}, the code",
        'its evaluate metric scores with. Data: config {config} of {location}."""'.format(**entry),
        "",
        "from qahub.harness import task_functions",
        "",
        f"_task = task_functions({entry['corpus']!r}, {name!r}, {entry['location']!r}, judge={judge!r},",
        f"                       config={entry['config']!r}, splits={_task_splits(entry)!r})",
        "dataset = _task.dataset",
        "doc_to_text = _task.doc_to_text",
        "doc_to_target = _task.doc_to_target",
        "process_results = _task.process_results",
    ]
    if spec.docs:
        lines.append("process_docs = _task.process_docs")
    if spec.cluster:
        lines.append("sampler = _task.sampler()")
    lines += [f"aggregate_{m} = _task.aggregate[{m!r}]" for m in aggregates]
    if judge and spec.judge_filter:
        lines.append("judge_filter = _task.judge_filter")
    if judge and spec.judge_record:  # the YAML's metadata: computed at each load (lm-eval keeps the module)
        lines += ["", "", "def __getattr__(name):", '    if name == "judge_record":', "        return _task.judge_record()",
                  "    raise AttributeError(name)"]
    return "\n".join(lines) + "\n"


def _task_splits(entry: dict) -> tuple:
    return (entry["split"], entry["fewshot_split"])


def task_functions(corpus: str, name: str, location: str, judge: bool = False, config: str | None = None,
                   splits: tuple = ()) -> SimpleNamespace:
    """The functions a generated ``utils.py`` hands to lm-eval, bound to one task and dataset location;
    ``dataset()`` reads ``splits`` of ``config`` there."""
    spec = task_api(corpus).TASKS[name]
    metrics = task_metrics(spec, judge)
    if judge and spec.judge and spec.judge_configured and not spec.judge_configured():
        logger.warning("%s: the task reports judge_score but no judge is set (QAHUB_JUDGE_URL and _MODEL, or "
                       "LM_EVAL_JUDGE_API_BASE and LM_EVAL_JUDGE_MODEL): every judge_score will be 0", name)
    scorers = [spec.score] + ([spec.judge] if judge and spec.judge else [])

    def process_results(doc, results):
        reply = results[0] if results else ""
        values = {}
        for score in scorers:
            values.update(score(reply, doc))
        return {metric: values[metric] for metric in metrics}

    def process_docs(dataset):
        return spec.docs(dataset, location, load=_reference_rows)  # joined configs read fresh too

    def dataset(**_metadata):  # lm-eval's custom_dataset hook; it passes the task's metadata, unused here
        return {split: _reference_rows(location, config, split, corpus) for split in dict.fromkeys(splits)}

    aggregate = {m: finite(a) for m, (a, _) in metrics.items() if not isinstance(a, str)}
    return SimpleNamespace(doc_to_text=spec.prompt, doc_to_target=spec.target, process_docs=process_docs,
                           process_results=process_results, aggregate=aggregate, dataset=dataset,
                           judge_filter=spec.judge_filter,
                           judge_record=spec.judge_record if judge else None,
                           sampler=lambda: lm_eval_sampler(spec.cluster))


class Demonstrations:
    """The few-shot demonstrations of each document, drawn from ``pool`` as lm-eval's default ``ContextSampler``
    draws them (``rnd.sample`` of n; of n + 1 with the document left out when the pool is the evaluated split),
    except that with a ``cluster`` (a task's ``cluster``: the conversation a turn belongs to) every document of
    the document's cluster is left out: a later turn of the same conversation holds the document's gold reply in
    its history. lm-eval (``lm_eval_sampler``) and inspect draw with this one class, so one seed gives one draw."""

    def __init__(self, pool, cluster=None):
        self.pool = list(pool)
        self.cluster = cluster
        self.clusters = [cluster(doc) for doc in self.pool] if cluster else [None] * len(self.pool)
        self.sizes = Counter(self.clusters)

    def draw(self, rnd, n: int, doc=None) -> list:
        """``n`` demonstrations; ``doc``: the evaluated document when the pool is its own split, else None."""
        if n == 0:
            return []
        if doc is None:
            return rnd.sample(self.pool, n)
        own = self.cluster(doc) if self.cluster else None

        def allowed(index):
            return (own is None or self.clusters[index] != own) and self.pool[index] != doc

        extra = 1 + (self.sizes[own] if own is not None else 0)  # room for the document and its cluster
        picks = [i for i in rnd.sample(range(len(self.pool)), min(n + extra, len(self.pool))) if allowed(i)][:n]
        if len(picks) < n:  # copies of the document beyond its cluster: draw again without them (as lm-eval)
            rest = [i for i in range(len(self.pool)) if allowed(i)]
            if len(rest) < n:
                beside = "the document" if own is None else f"the document's cluster {own!r}"
                raise HarnessError(f"the few-shot split has only {len(rest)} document(s) besides {beside}")
            picks = rnd.sample(rest, n)
        return [self.pool[i] for i in picks]


def lm_eval_sampler(cluster):
    """lm-eval's ``ContextSampler`` drawing with ``Demonstrations`` (a task YAML's ``fewshot_config.sampler``)."""
    from lm_eval.api.samplers import ContextSampler

    class ClusterSampler(ContextSampler):
        demonstrations = None

        def sample(self, n, eval_doc=None, df=None, **kwargs):
            if df:
                self.replace_df(df)
                self.demonstrations = None
            if self.demonstrations is None:
                self.demonstrations = Demonstrations(self.fewshot_docs(), cluster)
            return self.demonstrations.draw(self.rnd, n, eval_doc)

    return ClusterSampler


def finite(aggregation):
    """An aggregation whose result is checked: a NaN or infinite aggregate is a bug in qahub, not a score."""
    def aggregate(items):
        value = float(aggregation(items))
        if not math.isfinite(value):
            raise RuntimeError(f"{getattr(aggregation, '__name__', aggregation)} aggregated to {value}")
        return value

    aggregate.__name__ = getattr(aggregation, "__name__", "aggregate")
    return aggregate
