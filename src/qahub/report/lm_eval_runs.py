"""Reading what ``lm_eval --output_path X --log_samples`` wrote: ``results_<date>.json`` and
``samples_<task>_<date>.jsonl`` in X or in its model folder (lm_eval/loggers/evaluation_tracker.py). Two
``lm_eval`` calls into one ``--output_path`` leave two results files: each task is read from the newest file that
holds it."""

from __future__ import annotations

import json
import operator
from pathlib import Path

from qahub import tasks
from qahub.signature import run_signature

from .runs import (
    RAW,
    RESULTS,
    TEMPLATE,
    ReportError,
    ResultsRun,
    Run,
    TaskRun,
    Texts,
    add_samples,
    aggregates,
    cluster_name,
    first_text,
    load_json,
    load_line,
    newest_holding,
    prompt_hash,
    task_metrics,
)

RERUN = "rerun lm_eval with --log_samples"


def results_files(path: Path) -> list[Path]:
    """Every ``results_*.json`` in ``path`` or in its one model folder."""
    if not path.is_dir():
        raise ReportError(f"{path}: no such folder (give the --output_path of an lm_eval run)")
    found = sorted(p for p in path.glob("results_*.json") if RESULTS.match(p.name))
    if not found:
        folders = sorted({p.parent for p in path.glob("*/results_*.json") if RESULTS.match(p.name)})
        if len(folders) > 1:
            raise ReportError(f"{path}: holds the results of several models ({', '.join(f.name for f in folders)}); "
                              "give one model folder per run")
        found = sorted(p for p in folders[0].glob("results_*.json") if RESULTS.match(p.name)) if folders else []
    if not found:
        raise ReportError(f"{path}: no results_*.json (is it the --output_path of an lm_eval run?)")
    return found


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list]:
    files = results_files(path)
    loaded = {file: read_json(file) for file in files}
    chosen = newest_holding(files, lambda file: tasks_of(loaded[file]))
    newest = max(files, key=lambda p: RESULTS.match(p.name)["date"])
    results = loaded[newest]
    model = str(results.get("model_name") or results.get("model_name_sanitized") or newest.parent.name)
    used = sorted(set(chosen.values()), key=files.index)
    run = LmEvalRun(name or model, str(path), model, str(newest), results, results_files=[str(f) for f in used],
                    sources={task: (file, loaded[file]) for task, file in chosen.items()})
    found = [(task, task, file.parent / samples_name(task, file.name), file) for task, file in chosen.items()]
    left = add_samples(run, found, specs, "samples", RERUN,
                       check=lambda task: task_entry(loaded[chosen[task]], "results", task, chosen[task]))
    return run, left


def samples_name(task: str, results_name: str) -> str:
    """The samples file of ``task`` beside the results file ``results_name``: ``samples_<task>_<date>.jsonl``."""
    return f"samples_{task}_{RESULTS.match(results_name)['date']}.jsonl"


def tasks_of(results: dict) -> list:
    """The tasks of a results file: its ``results`` less the groups lm-eval lists there (``group_subtasks``:
    qahub's ``qahub_doc2dial`` runs its tasks, which are read one by one)."""
    groups = results.get("group_subtasks") or {}
    return [task for task in results["results"] if not groups.get(task)]


def read_json(path: Path) -> dict:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ReportError(f"{path}: not an lm-eval results file (no \"results\" object)")
    for key in ("versions", "n-shot", "config", "configs", "n-samples"):
        if key in data and not isinstance(data[key], dict | None):
            raise ReportError(f"{path}: {key!r} is not an object; the results file is damaged (rerun lm_eval)")
    return data


def task_entry(results: dict, key: str, task: str, path) -> dict:
    """``results[key][task]``, an object ({} when the file has no such entry)."""
    entry = (results.get(key) or {}).get(task, {})
    if not isinstance(entry, dict):
        raise ReportError(f"{path}: {key}.{task} is not an object; the results file is damaged (rerun lm_eval)")
    return entry


def read_task(task: str, samples: Path, results: dict, spec, results_name: str, texts: bool = True) -> TaskRun:
    present, rows, ids, cats, clusters, prompts, texts = _read_samples(task, samples, spec, task_metrics(spec),
                                                                       texts)
    columns = [list(column) for column in zip(*rows)]
    keys = list(zip(columns[0], columns[1]))
    items = dict(zip(present, columns[2:]))
    _check_keys(samples, keys)
    _check_count(samples, len(rows), task_entry(results, "n-samples", task, results_name), results_name)
    values = aggregates(task_entry(results, "results", task, results_name), present, f"{results_name}: task {task}",
                        key="{},none".format)
    config = task_entry(results, "configs", task, results_name)
    dataset = (config.get("dataset_path"), config.get("dataset_name"),
               config.get("test_split") or config.get("validation_split"))
    version, n_shot = (results.get("versions") or {}).get(task), (results.get("n-shot") or {}).get(task)
    metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    signature = run_signature(task, metadata.get("signature"), harness="lm-eval", n_shot=n_shot, ids=ids,
                              harness_version=results.get("lm_eval_version"), prompts=prompts, prompt_kind="text",
                              judge=metadata.get("judge"), task_version=version)
    return TaskRun(task, str(samples), values, keys, items, cats, version, n_shot,
                   (results.get("config") or {}).get("limit"), dataset, ids, [], clusters, cluster_name(spec.cluster),
                   prompts, TEMPLATE if results.get("chat_template_sha") or results.get("chat_template") else RAW,
                   "text", signature=signature, texts=texts)


def samples_of(samples: Path):
    """``(line number, sample)`` of each line of an lm-eval samples file: the one place it is parsed, once per
    report (a line that is not JSON is one line naming the file and the line)."""
    with open(samples, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if number == 1 and not line.strip():
                raise ReportError(f"{samples}: no samples")
            yield number, _sample(samples, number, line)


def _read_samples(task: str, samples: Path, spec, metrics: dict, with_texts: bool = True):
    """(the metrics logged, rows of doc_id, doc_hash and those metrics, document ids, category columns, clusters
    or None, prompt hashes, ``Texts`` or None without ``with_texts``) of each line of a samples file, in its
    order, in one pass."""
    categories, cluster = spec.categories, spec.cluster
    rows, ids, cats, clusters = [], [], {f: [] for f in categories}, [] if cluster else None
    fields = [(categories[f], column) for f, column in cats.items()]
    number, present, prompts, texts = 0, None, [], Texts([], [], [], []) if with_texts else None
    try:
        for number, sample in samples_of(samples):  # noqa: B007 - the line an error names
            if present is None:
                present = _metrics_logged(samples, task, metrics, sample)
                get = operator.itemgetter("doc_id", "doc_hash", *present)
            rows.append(get(sample))
            prompts.append(prompt_hash(sent_prompt(sample.get("arguments"))))
            if texts is not None:
                _add_texts(texts, sample)
            doc = sample["doc"]
            ids.append(tasks.document_id(spec, doc, sample["doc_id"]))
            for category, column in fields:
                column.append(str(category(doc)))
            if cluster:
                clusters.append(cluster(doc))
    except ReportError:
        raise
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as err:
        raise ReportError(f"{samples}: line {number}: not a logged sample of {task} "
                          f"({type(err).__name__}: {err})") from None
    if present is None:
        raise ReportError(f"{samples}: no samples")
    return present, rows, ids, cats, clusters, prompts, texts


def _add_texts(texts: Texts, sample: dict):
    """A sample's prompt as sent, its target, the model's reply and the filtered reply that was scored."""
    texts.prompts.append(prompt_text(sample.get("arguments")))
    texts.targets.append([str(sample.get("target", ""))])
    texts.replies.append(first_text(sample.get("resps")))
    texts.answers.append(first_text(sample.get("filtered_resps")))


def prompt_text(arguments) -> str:
    """The prompt lm-eval sent (``arguments``: ``{"gen_args_0": {"arg_0": prompt, ...}}``, or a list in older
    versions), "" when none is logged."""
    if isinstance(arguments, dict):
        arguments = list(arguments.values())
    first = arguments[0] if isinstance(arguments, list) and arguments else None
    if isinstance(first, dict):
        first = first.get("arg_0")
    elif isinstance(first, list):
        first = first[0] if first else None
    return "" if first is None else str(first)


def sent_prompt(arguments):
    """The prompt of a logged sample's ``arguments``: ``{"gen_args_0": {"arg_0": prompt, ...}}`` as lm-eval saves
    it (evaluation_tracker.py), ``[[prompt, generation kwargs]]`` as its evaluator logs it; None when absent."""
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        return first.get("arg_0") if isinstance(first, dict) else None
    if isinstance(arguments, list | tuple) and arguments and isinstance(arguments[0], list | tuple):
        return arguments[0][0] if arguments[0] else None
    return None


def _check_count(samples: Path, count: int, n_samples: dict, results_name: str):
    """As many samples as the results file scored (its ``n-samples`` effective count)."""
    effective = n_samples.get("effective")
    if not isinstance(effective, int) or isinstance(effective, bool):
        raise ReportError(f"{results_name}: no n-samples effective count for {samples.name}; the results file is "
                          "damaged (rerun lm_eval)")
    if count != effective:
        raise ReportError(f"{samples}: {count} samples, but the results file scored {effective} (n-samples); the "
                          "samples file is cut or from another run")


def _sample(samples: Path, number: int, line: bytes):
    try:
        return load_line(line)
    except UnicodeDecodeError as err:
        raise ReportError(f"{samples}: line {number}: not UTF-8 ({err.reason}); the samples file is damaged") from None
    except json.JSONDecodeError as err:
        raise ReportError(f"{samples}: line {number}: not JSON ({err.msg}); the samples file is damaged") from None


def _metrics_logged(samples: Path, task: str, metrics: dict, sample) -> list:
    """The task's metrics the first sample has (a judge score only when the run had a judge)."""
    if not isinstance(sample, dict):
        raise ReportError(f"{samples}: line 1: not a JSON object")
    present = [m for m in metrics if m in sample]
    if not present:
        raise ReportError(f"{samples}: no score of {task} logged (an lm_eval --predict_only run?); rerun lm_eval "
                          "without --predict_only")
    return present


def _check_keys(samples: Path, keys: list):
    first = {}
    for number, (doc_id, doc_hash) in enumerate(keys, 1):
        if not isinstance(doc_id, int) or not isinstance(doc_hash, str):
            raise ReportError(f"{samples}: line {number}: doc_id / doc_hash are not an integer and a hash")
        if first.setdefault(doc_id, number) != number:
            raise ReportError(f"{samples}: line {number}: doc_id {doc_id} again (first on line {first[doc_id]}); "
                              "each document is logged once: the samples file is damaged")


class LmEvalRun(ResultsRun):
    """A run read from an lm-eval ``--output_path``."""

    harness = "lm-eval"
    reader = staticmethod(read_task)
