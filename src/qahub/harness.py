"""Task folders for lm-evaluation-harness: ``qahub harness-tasks`` writes them, ``lm_eval --include_path`` reads them.

A task's prompt, gold target, per-example scores and aggregations are its metric's own (``qahub.planning`` plans
the task at a location and binds those functions to it, for every harness). This module writes one folder per
task: ``<task>.yaml``, the lm-eval config dumped from a dict, and ``utils.py``, which binds the functions to the
location, so that lm-eval scores each reply with qahub's code.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

import yaml

import qahub
from qahub.files import Guard, listed, staged, swap_in
from qahub.planning import TASK_VERSION, Demonstrations, plan_tasks, task_api, task_metrics
from qahub.tasks import TaskSpec

MARKER = "qahub_tasks.json"  # written in every generated folder: what it holds, and proof that qahub wrote it
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TaskSpec)}  # lm-eval's own defaults, as TaskSpec's


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
    group = {"group": f"qahub_{corpus}", "task": names, "metadata": {"version": 1.0}}
    (root / file).write_text(yaml.safe_dump(group, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _group_file(corpus: str, names: list[str]) -> str | None:
    """The group file ``_write_group`` writes for these tasks of ``corpus``, if any."""
    return None if f"qahub_{corpus}" in names or len(names) < 2 else f"_qahub_{corpus}.yaml"


class Function(str):
    """A YAML ``!function utils.NAME`` value: lm-eval binds it to that function of the task's ``utils.py``."""


class TaskDumper(yaml.SafeDumper):
    """``yaml.safe_dump``'s dumper, writing a ``Function`` as lm-eval's ``!function`` tag."""


TaskDumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
# text with a line break (a stop sequence "\n\n") double-quoted on one line, as it reads in lm-eval's own YAML
TaskDumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style='"' if "\n" in value else None))


def task_yaml(name: str, entry: dict, spec: TaskSpec, judge: bool) -> str:
    header = (f"# Generated by `qahub harness-tasks` (qahub {qahub.__version__}); regenerate rather than edit.\n"
              "# The documents are read by qahub from the export's files at each run (utils.dataset), never from a\n"
              "# datasets cache entry keyed by the folder's name: a rebuilt export is read as it is now.\n")
    config = task_config(name, entry, spec, judge)
    return header + yaml.dump(config, Dumper=TaskDumper, sort_keys=False, allow_unicode=True, width=1000)


def task_config(name: str, entry: dict, spec: TaskSpec, judge: bool) -> dict:
    """The task's lm-eval config, as its YAML holds it."""
    config = {"task": name, "custom_dataset": Function("utils.dataset"), "dataset_path": entry["location"],
              "dataset_name": entry["config"], "test_split": entry["split"], "fewshot_split": entry["fewshot_split"]}
    if spec.cluster:  # demonstrations from outside the document's conversation (utils.sampler)
        config["fewshot_config"] = {"sampler": Function("utils.sampler")}
    config["output_type"] = "generate_until"
    for key in ("target_delimiter", "fewshot_delimiter"):  # e.g. llm-jp-eval puts the answer right after its header
        if getattr(spec, key) != _DEFAULTS[key]:  # written only where it is not lm-eval's default
            config[key] = getattr(spec, key)
    if spec.docs:
        config["process_docs"] = Function("utils.process_docs")
    config.update({key: Function(f"utils.{key}") for key in ("doc_to_text", "doc_to_target", "process_results")})
    config["generation_kwargs"] = {"until": list(spec.until), "max_gen_toks": spec.max_gen_toks, "do_sample": False,
                                   "temperature": 0.0}
    config["metric_list"] = [
        {"metric": metric, "higher_is_better": higher,
         "aggregation": aggregation if isinstance(aggregation, str) else Function(f"utils.aggregate_{metric}")}
        for metric, (aggregation, higher) in task_metrics(spec, judge).items()]
    if judge and spec.judge_filter:
        config["filter_list"] = judge_filters()
    # no num_fewshot: lm-eval ignores --num_fewshot for a task whose YAML sets it (0 when neither does)
    config["metadata"] = {"version": TASK_VERSION}
    # the signature's fields known when lm-eval loads the task (qahub.signature.LOGGED: among them the scorer's
    # settings, TaskSpec.configuration): the results file keeps them in configs[task].metadata.signature
    config["metadata"]["signature"] = Function("utils.signature")
    if judge and spec.judge_record:  # the judge lm-eval's run uses, read when lm-eval loads the task
        config["metadata"]["judge"] = Function("utils.judge_record")
    return config


def judge_filters() -> list:
    """A judge task's filters: lm-eval's ``custom`` filter sees every reply of the run at once, so the judge runs
    there, concurrently (lm-eval calls process_results one document at a time); then lm-eval's default
    ``take_first``, under the default name ``none``, so the replies and the metric names stay as without it."""
    return [{"name": "none", "filter": [{"function": "custom", "filter_fn": Function("utils.judge_filter")},
                                        {"function": "take_first"}]}]


def utils_py(name: str, entry: dict, spec: TaskSpec, judge: bool) -> str:
    aggregates = [m for m, (aggregation, _) in task_metrics(spec, judge).items() if not isinstance(aggregation, str)]
    lines = [
        f'"""lm-evaluation-harness functions of task {name}, generated by `qahub harness-tasks`.',
        "",
        f"Prompt, target and scores are qahub's own: {task_api(entry['corpus']).__name__}, the code",
        'its evaluate metric scores with. Data: config {config} of {location}."""'.format(**entry),
        "",
        "from qahub.harness import lm_eval_sampler",
        "from qahub.planning import task_functions",
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
        lines.append("sampler = lm_eval_sampler(_task.cluster)")
    lines += [f"aggregate_{m} = _task.aggregate[{m!r}]" for m in aggregates]
    if judge and spec.judge_filter:
        lines.append("judge_filter = _task.judge_filter")
    # the YAML's metadata: computed at each load (lm-eval keeps the module), from the data as it is then
    lines += ["", "", "def __getattr__(name):", '    if name == "signature":', "        return _task.signature()"]
    if judge and spec.judge_record:
        lines += ['    if name == "judge_record":', "        return _task.judge_record()"]
    lines.append("    raise AttributeError(name)")
    return "\n".join(lines) + "\n"


def _task_splits(entry: dict) -> tuple:
    return (entry["split"], entry["fewshot_split"])


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


