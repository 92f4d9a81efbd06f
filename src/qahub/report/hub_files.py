"""What ``qahub report --hub-dataset CORPUS=ORG/NAME`` (or ``--for-hub``) adds to a report: per run, the Hub's
``.eval_results`` entries (``eval_results/<run>/.eval_results/<task>.yaml``, made with huggingface_hub's
``EvalResultEntry``) and an Every Eval Ever record (``eee/<run>/<uuid>.json`` and ``<uuid>_samples.jsonl``,
schema 0.3.0), both from the report's own numbers and intervals.

The ``.eval_results`` format has no field for uncertainty: the interval, its method, n and the settings go in the
entry's one-line ``notes``, and in full in the Every Eval Ever record's ``score_details.uncertainty``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import qahub

EEE_SCHEMA = "0.3.0"
EVAL_RESULTS = "eval_results"  # REPORT/eval_results/<run>/.eval_results/<task>.yaml
EEE = "eee"  # REPORT/eee/<run>/<uuid>.json and <uuid>_samples.jsonl
# every record's UUID is derived from its run (uuid5 in this namespace), so a report stays byte-reproducible
NAMESPACE = uuid.UUID("5d0c7d52-8f0e-4c39-9a53-3e5b3f0c2a11")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class HubResultsError(ValueError):
    pass


@dataclass(frozen=True)
class HubDataset:
    repo_id: str
    revision: str | None = None


def check_repo_id(where: str, repo_id: str, error: type[Exception]):
    """``repo_id`` is ORG/NAME as the Hub accepts it; else ``error`` naming ``where``."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise error(f"{where}: not a Hub repo id: {err}") from None
    if "/" not in repo_id:
        raise error(f"{where}: name the repo as ORG/NAME")


def parse_hub_datasets(values) -> dict:
    """``{corpus: HubDataset}`` of ``CORPUS=ORG/NAME[@REVISION]`` arguments (a corpus given twice, an unknown
    corpus or a repo id the Hub would refuse is one line naming the argument)."""
    from qahub import tasks

    known = tasks.corpus_names()
    found = {}
    for value in values or ():
        corpus, sep, target = value.partition("=")
        repo_id, _, revision = target.partition("@")
        if not sep or not corpus or not repo_id:
            raise HubResultsError(f"--hub-dataset {value}: expected CORPUS=ORG/NAME[@REVISION]")
        if corpus not in known:
            raise HubResultsError(f"--hub-dataset {value}: no corpus {corpus!r} ({', '.join(known)})")
        if corpus in found:
            raise HubResultsError(f"--hub-dataset {value}: {corpus} is given twice")
        check_repo_id(f"--hub-dataset {value}", repo_id, HubResultsError)
        found[corpus] = HubDataset(repo_id, revision or None)
    return found


def folder_name(run: str) -> str:
    """A run's name as one safe path component (a model name ``org/model`` becomes ``org__model``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", run.replace("/", "__")).strip("._")
    return name or "run"


def hub_files(data: dict, runs: list, specs: dict, hub_datasets: dict, read: dict) -> dict:
    """``{path in the report: bytes}`` of every run's ``.eval_results`` entries and Every Eval Ever record, from
    the report's numbers and the ``TaskRun`` each task of each run was read into for them (``read``: ``{task:
    {run: TaskRun}}``; no samples file is read again); ``data`` gets ``data["hub"]`` (what was written and what
    was left out, and why) and a note in each task a run is left out of."""
    from qahub import tasks

    names = {}
    for run in runs:
        other = names.setdefault(folder_name(run.name), run.name)
        if other != run.name:
            raise HubResultsError(f"runs {other!r} and {run.name!r} share the folder name {folder_name(run.name)!r}; "
                                  "rename one with NAME=PATH")
    corpus_of = tasks.task_corpora()
    files, summary = {}, {"eval_results": {}, "eee": {}, "left_out": []}
    for run in runs:
        facts = {task: run_facts(run, read[task][run.name], corpus_of.get(task), hub_datasets)
                 for task in sorted(run.samples) if task in data["tasks"]}
        files.update(eval_results(run, facts, data, summary))
        files.update(eee_record(run, facts, data, specs, summary))
    for item in summary["left_out"]:
        note = f"{item['run']}: {item['what']} left out: {item['reason']}"
        data["tasks"][item["task"]] = data["tasks"][item["task"]].with_notes([note])
    data["hub"] = summary
    return files


@dataclass
class Facts:
    """What the report's entry of one run's task does not hold: where its documents come from, and its texts."""

    corpus: str | None
    hub: HubDataset | None
    dataset: tuple
    n_shot: object
    instances: list | None  # the run's ``TaskRun.documents()``; None where its texts were not read


def run_facts(run, task_run, corpus, hub_datasets) -> Facts:
    """The ``Facts`` of one task of ``run``, from the ``TaskRun`` the report read it into."""
    dataset = tuple(task_run.dataset or ())
    hub = dataset_of(run.name, task_run, corpus, hub_datasets.get(corpus))
    texts = task_run.documents() if getattr(task_run, "texts", None) is not None else None
    return Facts(corpus, hub, dataset, task_run.n_shot, texts)


def dataset_of(run: str, task_run, corpus: str | None, given: HubDataset | None) -> HubDataset | None:
    """The Hub dataset the task's entries name: ``given`` (``--hub-dataset``), refused when the run recorded
    reading another Hub dataset; without it, the Hub id the run recorded when its signature says it read that id
    (its ``dataset`` the id itself, no local export's ``sha256:`` revision); never a local folder."""
    path = (tuple(task_run.dataset or ()) or (None,))[0]
    signature = getattr(task_run, "signature", None)
    logged = getattr(signature, "dataset", None)
    claims = [name for name in dict.fromkeys((path, logged)) if hub_claim(name, signature)]
    if given is not None:
        other = [name for name in claims if name != given.repo_id]
        if other:
            raise HubResultsError(f"--hub-dataset {corpus}={given.repo_id}: run {run} recorded reading "
                                  f"{task_run.task} from {other[0]}, not {given.repo_id}; an entry names the dataset "
                                  "the run read: give its own id, or report a run of that dataset")
        return given
    if path in claims and logged == path:  # the run's results and its qahub signature both name this Hub id
        return HubDataset(path, None)
    return None


def hub_claim(name, signature) -> bool:
    """``name`` (a recorded ``dataset_path`` or signature ``dataset``) names a Hub dataset: ORG/NAME, not a folder
    here, and not the local export the signature records (its folder name and a ``sha256:`` revision)."""
    if not isinstance(name, str) or not HUB_ID.match(name) or name.startswith((".", "~")) or Path(name).exists():
        return False
    revision = getattr(signature, "revision", None) or ""
    return not (revision.startswith("sha256:") and getattr(signature, "dataset", None) in (Path(name).name, None))


# --- .eval_results


def eval_results(run, facts: dict, data: dict, summary: dict) -> dict:
    """``eval_results/<run>/.eval_results/<task>.yaml``: one ``EvalResultEntry`` per task, its main metric."""
    import yaml
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    files, written = {}, []
    for task, fact in facts.items():
        entry = data["tasks"][task]
        main = entry.main_metric
        cell = entry.scores.get(run.name, {}).get(main)
        reason = None
        if fact.hub is None:
            reason = (f"no Hub dataset id for {fact.corpus or task} (pass --hub-dataset {fact.corpus or 'CORPUS'}"
                      "=ORG/NAME); a local path is never published")
        elif cell is None or cell.value is None:
            reason = f"no value of its main metric {main}"
        if reason:
            summary["left_out"].append({"run": run.name, "task": task, "what": ".eval_results", "reason": reason})
            continue
        result = EvalResultEntry(dataset_id=fact.hub.repo_id, task_id=task, value=cell.value,
                                 dataset_revision=fact.hub.revision, date=run_date(run),
                                 notes=notes_line(run, task, fact, entry, data["settings"]))
        text = yaml.safe_dump(eval_result_entries_to_yaml([result]), sort_keys=False, allow_unicode=True, width=1000)
        name = f"{EVAL_RESULTS}/{folder_name(run.name)}/.eval_results/{task}.yaml"
        files[name] = text.encode("utf-8")
        written.append(name)
    summary["eval_results"][run.name] = written
    return files


def notes_line(run, task, fact: Facts, entry, settings: dict) -> str:
    """What the ``.eval_results`` spec has no field for, in one line: metric, interval and its method, n (and
    clusters), shots, harness, qahub."""
    main = entry.main_metric
    cell = entry.scores[run.name][main]
    level = f"{settings['confidence'] * 100:g}%"
    low, high = cell.ci
    interval = (f"{level} CI [{_short(low)}, {_short(high)}] ({interval_method(cell, entry, main)})"
                if low is not None and high is not None
                else f"no {level} CI ({cell.no_interval or 'no resample had a value'})")
    units = f"n={cell.n} documents"
    cluster = entry.cluster or {}
    counted = (cluster.get("runs") or {}).get(run.name) or {}
    if cluster.get("field") and counted.get("clusters") is not None:  # None: resampled by document
        units += f" in {counted['clusters']} {cluster['field']}" + ("" if counted["clusters"] == 1 else "s")
    shots = f"{fact.n_shot}-shot" if fact.n_shot is not None else "shots not recorded"
    harness = f"{run.harness} {harness_version(run)}".strip()
    return (f"qahub {qahub.__version__}: {main} {_short(cell.value)}, {interval}; {units}; {read_from(fact)}; "
            f"{shots}; {harness}")


def read_from(fact: Facts) -> str:
    """The config and split the run read (entries of two configs, JEMHopQA v1.1 and v1.2, differ here)."""
    _, config, split = (tuple(fact.dataset) + (None, None, None))[:3]
    return f"config {config or 'not recorded'}, split {split or 'not recorded'}"


def interval_method(cell, entry, metric: str) -> str:
    """How a score's interval was made: the cell's own method where it has one (``build.flat_cell``), else its
    metric's."""
    return cell.method or entry.intervals.get(metric, "method not recorded")


def _short(value) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def harness_version(run) -> str:
    """The harness's version as its results file records it, else ''."""
    results = run.results if isinstance(run.results, dict) else {}
    version = results.get("lm_eval_version") or (results.get("config_general") or {}).get("lighteval_version")
    return str(version) if version else ""


def run_date(run) -> str | None:
    """When the run was made as it recorded it, ISO-8601 in UTC (``run_time``); None when it recorded none."""
    when = run_time(run)
    return None if when is None else datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def run_time(run) -> int | None:
    """The run's own recorded time (Unix seconds): lm-eval's ``date``, inspect's ``eval.created`` of its earliest
    log, else the date in its results file's name (``results_<date>.json``, lighteval's and lm-eval's; taken as
    UTC). A file's modification time is never used: a copied or downloaded folder has another."""
    from qahub.report.runs import RESULTS

    results = run.results if isinstance(run.results, dict) else {}
    date = results.get("date")
    if isinstance(date, int | float) and not isinstance(date, bool) and math.isfinite(date):
        return int(date)
    if run.harness == "inspect":
        return inspect_created(run.headers.values())
    named = RESULTS.match(Path(run.results_file).name)
    for layout in ("%Y-%m-%dT%H-%M-%S.%f", "%Y-%m-%dT%H-%M-%S"):
        try:
            found = datetime.datetime.strptime(named["date"], layout) if named else None
        except ValueError:
            continue
        return int(found.replace(tzinfo=datetime.timezone.utc).timestamp()) if found else None
    return None


def inspect_created(headers) -> int | None:
    """The earliest ``eval.created`` of inspect logs (the time inspect recorded when each eval started), from
    their headers as the run was read with them."""
    times = []
    for header in headers:
        created = header.eval.created
        when = datetime.datetime.fromisoformat(created)
        times.append(when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc))
    return int(min(times).timestamp()) if times else None


# --- Every Eval Ever


def record_uuid(run) -> str:
    """A UUID of the run, the same in every report of it: uuid5's hash of its name, model and results file,
    marked version 4 as Every Eval Ever's file paths require."""
    digest = uuid.uuid5(NAMESPACE, "\0".join((run.name, run.model, Path(run.results_file).name)))
    return str(uuid.UUID(bytes=digest.bytes, version=4))


def eee_record(run, facts: dict, data: dict, specs: dict, summary: dict) -> dict:
    """``eee/<run>/<uuid>.json`` (one ``evaluation_results`` entry per task and metric, with its interval) and,
    where the run's samples hold the texts (lm-eval), ``<uuid>_samples.jsonl`` (a row per document and metric)."""
    from qahub.report.runs import task_metrics

    when = run_time(run)
    # the run's recorded time, not the report's: the record is the same in every report of this run; a run that
    # recorded none has no evaluation_timestamp, and the required retrieved_timestamp is its results file's time
    stamp = str(when if when is not None else int(Path(run.results_file).stat().st_mtime))
    evaluation_id = f"qahub/{run.model}/{stamp}"
    results, rows = [], []
    for task, fact in facts.items():
        results += task_results(run, task, fact, data, specs[task], summary, when)
        if fact.instances is None:
            summary["left_out"].append({"run": run.name, "task": task, "what": "EEE instance rows",
                                        "reason": f"a {run.harness} run's documents are not converted yet"})
        else:
            rows += instance_rows(run, task, fact, task_metrics(specs[task]), evaluation_id, specs[task])
    record = {"schema_version": EEE_SCHEMA, "evaluation_id": evaluation_id,
              **({"evaluation_timestamp": str(when)} if when is not None else {}), "retrieved_timestamp": stamp,
              "source_metadata": {"source_name": "qahub report", "source_type": "evaluation_run",
                                  "source_organization_name": "unknown", "evaluator_relationship": "other",
                                  "additional_details": {"report_intervals": data["settings"]["intervals"],
                                                         "resamples": str(data["settings"]["resamples"]),
                                                         "seed": str(data["settings"]["seed"])}},
              "model_info": model_info(run.model),
              "eval_library": {"name": "qahub", "version": qahub.__version__,
                               "additional_details": {"harness": run.harness,
                                                      "harness_version": harness_version(run) or "unknown"}},
              "evaluation_results": results}
    files = record_files(run, record, rows)
    summary["eee"][run.name] = sorted(files)
    return files


def task_results(run, task, fact: Facts, data: dict, spec, summary: dict, when) -> list:
    """The record's ``evaluation_results`` of one task: one per metric with a value (the others left out, said)."""
    from qahub.report.runs import task_metrics

    metrics = task_metrics(spec)
    declared = {**spec.metrics, **spec.judge_metrics}
    results = []
    for metric, cell in data["tasks"][task].scores.get(run.name, {}).items():
        if cell.value is None:
            summary["left_out"].append({"run": run.name, "task": task, "what": f"EEE result {metric}",
                                        "reason": "its value is not a finite number"})
            continue
        results.append({"evaluation_result_id": f"{task}/{metric}", "evaluation_name": task,
                        "source_data": source_data(task, fact, cell.n),
                        **({"evaluation_timestamp": str(when)} if when is not None else {}),
                        "metric_config": metric_config(task, metric, metrics[metric], declared[metric][1], spec),
                        "score_details": score_details(cell, data["tasks"][task], metric, data["settings"], run.name),
                        **generation(run, task)})
    return results


def record_files(run, record: dict, rows: list) -> dict:
    """``{eee/<run>/<uuid>.json: bytes}`` and, with ``rows``, its ``<uuid>_samples.jsonl`` (named in the record
    with its checksum)."""
    file_uuid = record_uuid(run)
    folder = f"{EEE}/{folder_name(run.name)}"
    files = {}
    if rows:
        body = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows).encode("utf-8")
        record["detailed_evaluation_results"] = {
            "format": "jsonl", "file_path": datastore_path(run.model, f"{file_uuid}_samples.jsonl"),
            "hash_algorithm": "sha256", "checksum": hashlib.sha256(body).hexdigest(), "total_rows": len(rows)}
        files[f"{folder}/{file_uuid}_samples.jsonl"] = body
    files[f"{folder}/{file_uuid}.json"] = (json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False)
                                           + "\n").encode("utf-8")
    return files


def model_info(model: str) -> dict:
    info = {"name": model, "id": model,
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}}
    if "/" in model:
        info["developer"] = model.split("/")[0]
    return info


def datastore_path(model: str, file_name: str) -> str:
    """Where Every Eval Ever's datastore keeps a record of ``model``: data/<collection>/<developer>/<model>/."""
    parts = [part for part in model.split("/") if part]
    developer, name = (parts[0], "_".join(parts[1:])) if len(parts) > 1 else ("unknown", parts[0] if parts else "model")
    return f"data/qahub/{folder_name(developer)}/{folder_name(name)}/{file_name}"


def metric_config(task, name, metric, higher_is_better, spec) -> dict:
    """Bounds where qahub knows them (the task declares them: ``TaskSpec.range_of``): 0 to the task's oracle
    value (the score of replies equal to the gold) for a mean or BLEU, 0 to 1 for distinct-n and METEOR; a sum
    (game score, counts) is unbounded."""
    config = {"evaluation_description": f"{name} of {task} (qahub)", "metric_id": f"qahub.{task}.{name}",
              "metric_name": name, "lower_is_better": not higher_is_better,
              "score_type": "binary" if metric.binary else "continuous"}
    config["min_score"], config["max_score"] = metric.range or (None, None)  # the task's (TaskSpec.range_of)
    return config


def source_data(task, fact: Facts, n: int) -> dict:
    _, config, split = (tuple(fact.dataset) + (None, None, None))[:3]
    details = {key: str(value) for key, value in (("config", config), ("revision", fact.hub and fact.hub.revision))
               if value}
    name = f"{fact.corpus or task}" + (f"/{config}" if config else "")
    if fact.hub is None:
        return {"dataset_name": name, "source_type": "other", "additional_details": details}
    found = {"dataset_name": name, "source_type": "hf_dataset", "hf_repo": fact.hub.repo_id, "samples_number": n,
             "additional_details": details}
    if split:
        found["hf_split"] = str(split)
    return found


def score_details(cell, entry, metric: str, settings: dict, run: str) -> dict:
    """A score's Every Eval Ever details (``cell``: a ``model.Cell`` of the ``model.TaskReport`` ``entry``)."""
    method = interval_method(cell, entry, metric)
    uncertainty = {"num_samples": int(cell.n)}
    low, high = cell.ci
    if low is not None and high is not None:
        uncertainty["confidence_interval"] = {"lower": low, "upper": high, "confidence_level": settings["confidence"],
                                              "method": method}
    if "bootstrap" in method or "half-samples" in method:
        uncertainty["num_bootstrap_samples"] = int(settings["resamples"])
    cluster = entry.cluster or {}
    counted = (cluster.get("runs") or {}).get(run) or {}
    details = {"interval_method": method,  # a run of a clustered task may be resampled by document (no clusters)
               "resampled_by": cluster.get("field") if counted.get("clusters") is not None else "document"}
    if cell.no_interval:  # the schema has no field for why a score has no interval: a detail says it
        details["no_interval"] = cell.no_interval
    return {"score": cell.value, "details": details, "uncertainty": uncertainty}


def generation(run, task) -> dict:
    """The generation settings an lm-eval run logged for the task (its config's ``generation_kwargs``)."""
    results = run.results if isinstance(run.results, dict) else {}
    kwargs = (((results.get("configs") or {}).get(task) or {}).get("generation_kwargs")) or {}
    if not isinstance(kwargs, dict) or not kwargs:
        return {}
    args = {}
    if isinstance(kwargs.get("temperature"), int | float):
        args["temperature"] = float(kwargs["temperature"])
    if isinstance(kwargs.get("max_gen_toks"), int) and kwargs["max_gen_toks"] >= 1:
        args["max_tokens"] = kwargs["max_gen_toks"]
    other = {key: json.dumps(value, ensure_ascii=False) for key, value in sorted(kwargs.items())
             if key not in ("temperature", "max_gen_toks")}
    return {"generation_config": {"generation_args": args, "additional_details": other}}


def instance_rows(run, task, fact: Facts, metrics: dict, evaluation_id: str, spec) -> list:
    """A row per document and per-document metric (a corpus BLEU or distinct-n has no per-document score)."""
    # metric values are lm-eval's logged ones, or an inspect document's as the report averages its epochs
    rows = []
    for document in fact.instances:
        doc_id, values, prompt, target = str(document.id), document.scores, document.prompt, document.targets
        reply, extracted, doc_hash = document.reply, document.answer, str(document.key[1] or "")
        sample_hash = hashlib.sha256(json.dumps({"raw": prompt, "reference": target}, sort_keys=True,
                                                ensure_ascii=False).encode("utf-8")).hexdigest()
        extraction = "lm-eval filter" if run.harness == "lm-eval" else f"{run.harness} scorer"
        for name, value in values.items():
            metric = metrics.get(name)
            if metric is None or metric.kind not in ("mean", "sum") or not _number(value):
                continue
            best = spec.oracle.get(name) if {**spec.metrics, **spec.judge_metrics}[name][1] else 0.0
            rows.append({"schema_version": EEE_SCHEMA, "evaluation_id": evaluation_id, "model_id": run.model,
                         "evaluation_name": task, "evaluation_result_id": f"{task}/{name}", "sample_id": doc_id,
                         "sample_hash": sample_hash, "interaction_type": "single_turn",
                         "input": {"raw": prompt, "reference": target}, "output": {"raw": [reply]},
                         "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": extracted,
                                                 "extraction_method": extraction, "is_terminal": True}],
                         # is_correct: the document scores the metric's best value (the oracle's)
                         "evaluation": {"score": float(value),
                                        "is_correct": best is not None and float(value) == float(best)},
                         **({"metadata": {"doc_hash": doc_hash}} if doc_hash else {})})
    return rows


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
