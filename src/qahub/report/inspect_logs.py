"""Reading what ``inspect eval qahub/<task> --log-dir DIR`` wrote (``.eval`` or ``.json`` logs) as report runs,
through inspect's public log API: each log's header (status, task, model, results) with ``read_eval_log(...,
header_only=True)``, its samples streamed with ``read_eval_log_samples``.

A run is one log file, or a log folder holding one log per qahub task (a folder with two logs of one task is
refused: name the file). Each sample's values are the qahub scorer's (``inspect_tasks.document_values``); with
several epochs a document's numbers are reduced over its epochs by the epochs reducer the log names, with
inspect's own reducer (mean, median, mode, max, at_least_K, pass_at_K, pass_k_K; another one is refused), and a
value that is not a number (a corpus-BLEU pair, a distinct-n text, None) is its first epoch's, as inspect's
reducers keep it. The documents are in the dataset's order (the log's sample ids), each keyed by its id, the
task's document id an lm-eval run pairs on. A log whose samples record no cluster (written before qahub recorded
them) gets its clusters from the documents at the location the log names, when they can still be read.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from qahub.signature import run_signature

from .runs import (
    CHAT,
    RESULTS,
    TEMPLATE,
    ReportError,
    Run,
    TaskRun,
    Texts,
    cluster_name,
    finite,
    prompt_hash,
    task_metrics,
)

SUFFIXES = (".eval", ".json")
PREFIX = "qahub_"  # lm-eval's task qahub_limur is inspect's qahub/limur
# what a sample's reading leaves out (its ``output`` is kept: the reply the Every Eval Ever rows give)
SKIPPED_FIELDS = {"messages", "events", "store", "attachments", "model_usage", "role_usage"}


@dataclass
class InspectRun(Run):
    """A run read from inspect logs: ``samples`` maps each task to its log file, ``headers`` to that log's
    header (read once, when the run is read)."""

    harness = "inspect"
    headers: dict = field(default_factory=dict, repr=False)

    def read(self, task: str, spec, texts: bool = True) -> TaskRun:
        return read_task(task, self.samples[task], spec, self.headers.get(task), texts)


def is_log(path: Path) -> bool:
    """An inspect log file, or a folder holding inspect logs and no lm-eval results."""
    if path.is_file():
        return path.suffix in SUFFIXES
    if not path.is_dir() or any(RESULTS.match(p.name) for p in (*path.glob("results_*.json"),
                                                                  *path.glob("*/results_*.json"))):
        return False
    return any(p.suffix in SUFFIXES for p in path.iterdir())


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list]:
    files = [path] if path.is_file() else _log_files(path)
    found, skipped = {}, []
    for file in files:
        header = _header(file)
        task = qahub_task(header, file)
        if task not in specs:
            if path.is_file():
                raise ReportError(f"{file}: task {header.eval.task} is not a qahub task (qahub/<name>)")
            skipped.append((header.eval.task, "not a qahub task"))
            continue
        _check_finished(header, file)
        found.setdefault(task, []).append((file, header))
    if not found:
        names = sorted(task for task, _ in skipped)
        raise ReportError(f"{path}: holds no log of a qahub task (it has {', '.join(names) or 'none'})")
    for task, logs in found.items():
        if len(logs) > 1:
            raise ReportError(f"{path}: holds {len(logs)} logs of {task} ({', '.join(f.name for f, _ in logs)}); "
                              "which one? pass that file (one log per task in a folder)")
    models = sorted({header.eval.model for logs in found.values() for _, header in logs})
    if len(models) > 1:
        raise ReportError(f"{path}: holds the logs of several models ({', '.join(models)}); give one model's "
                          "logs per run")
    run = InspectRun(name or models[0], str(path), models[0], str(path), {},
                     {task: logs[0][0] for task, logs in sorted(found.items())},
                     run_ids={task: ("inspect", logs[0][1].eval.eval_id) for task, logs in found.items()},
                     headers={task: logs[0][1] for task, logs in sorted(found.items())})
    return run, skipped


def _log_files(folder: Path) -> list[Path]:
    from inspect_ai.log import list_eval_logs

    return sorted(Path(info.name.removeprefix("file://")) for info in list_eval_logs(str(folder), recursive=False))


def _header(file: Path):
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(file), header_only=True)
    except Exception as err:  # inspect raises what its zip or JSON reader raises on a file that is not a log
        raise ReportError(f"{file}: not an inspect log ({type(err).__name__}: {' '.join(str(err).split())}); "
                          "give an inspect log or an lm_eval --output_path folder") from None


def qahub_task(header, file) -> str | None:
    """lm-eval's name of the log's qahub task (``qahub/limur`` -> ``qahub_limur``), None for another task."""
    declared = (header.eval.metadata or {}).get("qahub")
    task = PREFIX + header.eval.task.rsplit("/", 1)[-1]
    if not isinstance(declared, dict) or declared.get("lm_eval_task") != task:
        return None
    return task


def _check_finished(header, file):
    if header.status != "success":
        raise ReportError(f"{file}: the eval's status is {header.status!r}, not 'success' (an unfinished, failed "
                          "or cancelled eval); finish it (inspect eval-retry) or give another log")
    if header.results is None:
        raise ReportError(f"{file}: the eval has no results (no sample was scored)")


def read_task(task: str, file: Path, spec, header=None, texts: bool = True) -> TaskRun:
    header = _header(file) if header is None else header
    metrics, fields = task_metrics(spec), list(spec.categories)
    reducer = epochs_reducer(header, task, file)
    epochs, prompts, targets, failed, first = _scored_samples(task, file, texts)
    order = [i for i in (header.eval.dataset.sample_ids or []) if i in epochs] or list(epochs)
    if not order:
        raise ReportError(f"{file}: no samples")
    per_doc = [reduced(epochs[i], reducer) for i in order]
    present = [m for m in metrics if m in per_doc[0][0]]
    if not present:
        raise ReportError(f"{file}: no score of {task} in its samples")
    items = {m: [values.get(m) for values, _ in per_doc] for m in present}
    categories = {f: [str(_category(meta, f, file)) for _, meta in per_doc] for f in fields}
    qahub = header.eval.metadata["qahub"]
    clusters, notes = log_clusters(task, spec, qahub, order, [meta for _, meta in per_doc],
                                   [targets[i] for i in order])
    most = max(len(e) for e in epochs.values())
    notes += _epoch_notes(most, reducer[0], failed)
    hashes = [prompt_hash(prompts[i]) for i in order]
    signature = run_signature(task, qahub.get("signature"), harness="inspect", n_shot=qahub.get("fewshot"),
                              harness_version=(header.eval.packages or {}).get("inspect_ai"), ids=list(order),
                              prompts=hashes, prompt_kind="messages", judge=qahub.get("judge"))
    return TaskRun(task, str(file), _values(header, present, file, task), [(i, None) for i in order], items,
                   categories, None, qahub.get("fewshot"), header.eval.config.limit,
                   (qahub.get("location"), qahub.get("config"), qahub.get("split")), list(order), notes,
                   clusters, cluster_name(spec.cluster), hashes, prompt_format(header), "messages", most, reducer[0],
                   signature, Texts(*(list(column) for column in zip(*(first[i] for i in order)))) if texts else None)


def _scored_samples(task: str, file: Path, texts: bool = True) -> tuple[dict, dict, dict, int, dict]:
    """``(epochs, prompts, targets, failed, texts)``: each sample id's ``[(epoch, Score, metadata)]``, its prompt
    and target, the number of samples that failed without a score, and (with ``texts``) each id's texts of its
    first epoch (``sample_texts``), in one pass over the log's samples."""
    epochs, prompts, targets, failed, first = {}, {}, {}, 0, {}
    for sample in _samples(file):
        if texts and (sample.id not in first or sample.epoch < first[sample.id][0]):
            first[sample.id] = (sample.epoch, sample_texts(sample, task))
        score = (sample.scores or {}).get(task)
        if score is None and sample.error:  # --no-fail-on-error: inspect leaves it out of every metric
            failed += 1
            continue
        if score is None:
            raise ReportError(f"{file}: sample {sample.id} epoch {sample.epoch} has no {task} score")
        epochs.setdefault(sample.id, []).append((sample.epoch, score, sample.metadata))
        prompts.setdefault(sample.id, input_messages(sample.input))
        targets.setdefault(sample.id, sample.target)
    return epochs, prompts, targets, failed, {i: texts for i, (_, texts) in first.items()}


def sample_texts(sample, task: str) -> tuple:
    """(prompt text, [targets], reply, scored answer) of one sample: its input (messages joined by a blank
    line), target(s), the output's completion and the scorer's answer (the reply where it gives none)."""
    reply = sample.output.completion if sample.output else ""
    score = (sample.scores or {}).get(task)
    answer = score.answer if score is not None and score.answer is not None else reply
    targets = sample.target if isinstance(sample.target, list) else [sample.target]
    text = sample.input if isinstance(sample.input, str) else "\n\n".join(m.text for m in sample.input)
    return text, [str(t) for t in targets], reply, str(answer)


# what inspect's sample reader raises on a damaged log: its zip reader, its JSON parsers (ijson's JSONError, the
# standard library's ValueError), pydantic's validation (a ValueError), the file system
READER_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)


def _samples(file: Path):
    """The log's samples, streamed by inspect's reader. Only the reader's own errors become a ReportError naming
    the file, with the reader's error kept as its cause; what the caller's code raises is not caught here."""
    from ijson import JSONError
    from inspect_ai.log import read_eval_log_samples

    samples = read_eval_log_samples(str(file), all_samples_required=False, exclude_fields=SKIPPED_FIELDS)
    while True:
        try:
            sample = next(samples)
        except StopIteration:
            return
        except (*READER_ERRORS, JSONError) as err:
            raise ReportError(f"{file}: its samples cannot be read ({type(err).__name__}: "
                              f"{' '.join(str(err).split())})") from err
        yield sample


def _epoch_notes(most: int, reducer: str, failed: int) -> list[str]:
    notes = []
    if most > 1:
        notes.append(f"{most} epochs: each document's numbers are the {reducer} over its epochs (inspect's "
                     "epochs reducer), any other value (a BLEU pair, a distinct-n reply) its first epoch's, as "
                     "inspect reduces them")
    if failed:
        notes.append(f"{failed} sample(s) failed (an eval run with --no-fail-on-error): left out, as inspect's "
                     "metrics leave them out")
    return notes


REDUCERS = "mean, median, mode, max, at_least_K, pass_at_K, pass_k_K"  # the ones a report applies


def epochs_reducer(header, task: str, file) -> tuple:
    """``(name, reducer)``: inspect's reducer of the log's epochs (its results name it; ``mean`` when none is
    named), made by inspect's public reducer functions; another reducer is refused in one line."""
    named = {score.reducer for score in header.results.scores if task in (score.scorer, score.name)}
    named.discard(None)
    if not named and header.eval.config.epochs_reducer:
        named = set(header.eval.config.epochs_reducer)
    if len(named) > 1:
        raise ReportError(f"{file}: task {task} has several epochs reducers ({', '.join(sorted(named))}); "
                          "qahub report reads a log of one (inspect eval --epochs-reducer NAME)")
    name = named.pop() if named else "mean"
    made = inspect_reducer(name)
    if made is None:
        raise ReportError(f"{file}: task {task}: the epochs reducer {name!r} cannot be applied by qahub report "
                          f"(it applies {REDUCERS})")
    return name, made


def inspect_reducer(name: str):
    """inspect's own reducer of a logged reducer name (``reducer_log_name``: ``max``, ``at_least_2``,
    ``pass_at_3``), None for one without a public function here."""
    from inspect_ai.scorer import at_least, max_score, mean_score, median_score, mode_score, pass_at, pass_k

    fixed = {"mean": mean_score, "median": median_score, "mode": mode_score, "max": max_score}
    if name in fixed:
        return fixed[name]()
    found = re.fullmatch(r"(at_least|pass_at|pass_k)_(\d+)", name)
    if found is None:
        return None
    return {"at_least": at_least, "pass_at": pass_at, "pass_k": pass_k}[found[1]](int(found[2]))


def reduced(epochs: list, reducer: tuple) -> tuple[dict, dict]:
    """One document's values and metadata: its epochs' Scores reduced by inspect's own reducer, as inspect
    reduced them for its results (any value that is not a number is its first epoch's)."""
    from qahub.inspect_tasks import document_values

    epochs = sorted(epochs, key=lambda e: e[0])
    return document_values(reducer[1]([score for _, score, _ in epochs])), epochs[0][2] or {}


def input_messages(value) -> list:
    """The messages a sample's input sends: ``[(role, content)]`` (a text input is one user message)."""
    if isinstance(value, str):
        return [("user", value)]
    return [(message.role, message.text) for message in value]


def prompt_format(header) -> str:
    """How the log's model was sent its messages: inspect's ``hf/`` provider renders them with the tokenizer's
    chat template (``-M use_chat_template=false``: as ``role: content`` lines, which are not raw text either);
    every other provider sends chat messages."""
    args = header.eval.model_args or {}
    if header.eval.model.startswith("hf/") and args.get("use_chat_template") is not False:
        return TEMPLATE
    return CHAT


def log_clusters(task: str, spec, qahub: dict, order: list, metadata: list, targets: list) -> tuple[list | None, list]:
    """Each document's cluster as its sample records it; for a log whose samples record none (written before
    qahub recorded them), recovered from the documents at the location the log names when they are the log's
    (each id there, with the target the log holds for it), else None; and the notes saying so."""
    from qahub.inspect_tasks import CLUSTER

    if not spec.cluster:
        return None, []
    if all(CLUSTER in meta for meta in metadata):
        return [meta[CLUSTER] for meta in metadata], []
    name, location = cluster_name(spec.cluster), qahub.get("location")
    found, why = document_clusters(task, qahub)
    if found is not None and all(i in found for i in order):
        other = next((i for i, target in zip(order, targets, strict=True) if found[i][1] != target), None)
        if other is None:
            return [found[i][0] for i in order], [f"its log records no {name} of its documents: recovered from "
                                                  f"the documents at {location}"]
        why = f"{location} holds other documents than the log's (document {other} has another target there)"
    why = why or f"{location} holds other documents than the log's"
    return None, [f"its log records no {name} of its documents, nor can they be recovered: {why}"]


def document_clusters(task: str, qahub: dict) -> tuple[dict | None, str | None]:
    """``{document id: (cluster, target)}`` of the task's documents at the log's location, config and split (the
    task built again, as inspect built it), or None and why not."""
    from qahub import tasks
    from qahub.inspect_tasks import CLUSTER, build_task

    corpus = tasks.task_corpora().get(task)
    try:
        built = build_task(corpus, task, qahub.get("location"), qahub.get("config"), qahub.get("split"))
    except (ValueError, OSError, TypeError) as err:
        return None, " ".join(str(err).split())
    return {sample.id: ((sample.metadata or {}).get(CLUSTER), sample.target) for sample in built.dataset}, None


def _category(metadata: dict, field: str, file):
    if field not in metadata:
        raise ReportError(f"{file}: a sample's metadata has no {field!r} (not a log of qahub's task?)")
    return metadata[field]


def _values(header, present: list, file, task) -> dict:
    """Each metric's value over all documents, as inspect's results give it (the scorer's first metric of each
    score; the others are the category breakdowns)."""
    found = {score.name: next(iter(score.metrics.values())).value
             for score in header.results.scores if score.metrics}
    missing = [m for m in present if not isinstance(found.get(m), int | float)]
    if missing:
        raise ReportError(f"{file}: the results of {task} have no number for {', '.join(missing)}")
    return {m: finite(float(found[m]), f"{file}: the results of {task}", m) for m in present}
