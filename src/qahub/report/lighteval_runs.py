"""Reading what ``lighteval ... --custom-tasks qahub.lighteval_tasks --output-dir X --save-details`` wrote:
``X/results/<model>/results_<date>.json`` and ``X/details/<model>/<date>/details_<task>|<shots>_<date>.parquet``
(lighteval/logging/evaluation_tracker.py). Each details row's ``doc.specific`` holds lm-eval's ``doc_id`` and
``doc_hash`` of the document (``qahub.lighteval_tasks``), so a lighteval run pairs with an lm-eval run."""

from __future__ import annotations

from pathlib import Path

from qahub import tasks
from qahub.signature import run_signature

from .runs import (
    CHAT,
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
    newest_holding,
    prompt_hash,
    task_metrics,
)


def is_lighteval(path: Path) -> bool:
    """``path`` is a lighteval ``--output-dir``: its ``results`` and ``details`` folders."""
    return (path / "results").is_dir() and (path / "details").is_dir()


def read_run(name: str | None, path: Path, specs: dict) -> tuple[Run, list]:
    found = [p for p in (path / "results").rglob("results_*.json") if RESULTS.match(p.name)]
    if not found:
        raise ReportError(f"{path}: no results/**/results_*.json (is it the --output-dir of a lighteval run?)")
    models = sorted({str(p.parent.relative_to(path / "results")) for p in found})
    if len(models) > 1:
        raise ReportError(f"{path}: holds the lighteval results of several models ({', '.join(models)}); "
                          "give one --output-dir per run")
    return read_files(name, path, found, path / "details" / models[0], models[0], specs)


def read_files(name: str | None, path: Path, found: list, details: Path, model: str, specs: dict) -> tuple[Run, list]:
    """The run of the results files ``found``, whose details are ``details/<date>/details_<task>_<date>.parquet``
    (``model``: the model's name when the results do not record it). A ``--push-to-hub`` details repo lays them
    out so too, with the results and the date folders side by side (``hub_runs``)."""
    loaded = {file: read_json(file) for file in found}
    chosen = newest_holding(found, lambda file: result_keys(loaded[file]))
    newest = max(found, key=lambda p: RESULTS.match(p.name)["date"])
    results = loaded[newest]
    model = str((results["config_general"].get("model_config") or {}).get("model_name") or model)
    used = sorted({str(file) for file in chosen.values()})
    run = LightevalRun(name or model, str(path), model, str(newest), results, results_files=used,
                       sources={key.rpartition("|")[0]: (file, loaded[file]) for key, file in chosen.items()})
    found = [(key, key.rpartition("|")[0], details / details_name(key, file.name), file)
             for key, file in chosen.items()]
    return run, add_samples(run, found, specs, "details", "rerun lighteval with --save-details")


def result_keys(results: dict) -> list:
    """The tasks of a results file as lighteval names them, ``TASK|SHOTS`` (less its ``all``)."""
    return [key for key in results["results"] if key != "all"]


def details_name(key: str, results_name: str) -> str:
    """Where the details of task ``key`` (``TASK|SHOTS``) of the results file ``results_name`` are, below the
    details folder: ``<date>/details_<key>_<date>.parquet``."""
    date = RESULTS.match(results_name)["date"]
    return f"{date}/details_{key}_{date}.parquet"


def read_json(path: Path) -> dict:
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or \
            not isinstance(data.get("config_general"), dict):
        raise ReportError(f"{path}: not a lighteval results file (no \"results\" and \"config_general\" objects)")
    return data


def read_task(task: str, details: Path, results: dict, spec, results_name: str, texts: bool = True) -> TaskRun:
    key = details.name.removeprefix("details_").rsplit("_", 1)[0]  # TASK|SHOTS
    rows, keys = _read_details(details)
    docs, logged = [doc for doc, _, _ in rows], [metric for _, metric, _ in rows]
    specific = [doc["specific"] for doc in docs]
    if not logged:
        raise ReportError(f"{details}: no documents")
    if any(not isinstance(i, int) or not isinstance(h, str) for i, h in keys) or len(set(keys)) != len(keys):
        raise ReportError(f"{details}: qahub_doc_id / qahub_doc_hash missing or repeated; the details are damaged")
    # every row's metrics: a first row with no knowledge has no knowledge_f1, a later one has
    present = [m for m in task_metrics(spec) if any(row.get(m) is not None for row in logged)]
    values = aggregates(results["results"].get(key, {}), present, f"{results_name}: task {key}")
    categories = {field: [str(category(s["qahub_doc"])) for s in specific]
                  for field, category in spec.categories.items()}
    items = {metric: [row.get(metric) for row in logged] for metric in present}
    version = ((results.get("config_tasks") or {}).get(key) or {}).get("version")
    limit = results["config_general"].get("max_samples")
    ids = [tasks.document_id(spec, s["qahub_doc"], s["qahub_doc_id"]) for s in specific]
    clusters = [spec.cluster(s["qahub_doc"]) for s in specific] if spec.cluster else None
    sent, how = prompts(docs, [response.get("input") for _, _, response in rows], results)
    notes = [] if how else ["the details do not record whether lighteval applied a chat template (it does when "
                            "the tokenizer has one, unless the model config sets override_chat_template)"]
    n_shot, kind = int(key.rpartition("|")[2]), "messages" if how == CHAT else "text"
    hashes = None if sent is None else [prompt_hash(p) for p in sent]
    # lighteval's results keep no task metadata: qahub's task puts its signature fields in each row's doc.specific
    signature = run_signature(task, specific[0].get("qahub_signature"), harness="lighteval", n_shot=n_shot, ids=ids,
                              prompts=hashes, prompt_kind=kind)
    return TaskRun(task, str(details), values, keys, items, categories, version, n_shot, limit,
                   tuple(specific[0]["qahub_dataset"]), ids, notes, clusters, cluster_name(spec.cluster), hashes, how,
                   kind, signature=signature, texts=texts_of(rows) if texts else None,
                   prompts_unknown=None if sent is not None else "not recorded by lighteval")


RESPONSE = ("input", "text", "text_post_processed")  # what is read of a model response: never its tokens, logits


def _read_details(details: Path) -> list:
    """(doc, metric, the model response's input, text and post-processed text) of each row of a details Parquet,
    in lm-eval's order (doc_id), and each row's (qahub_doc_id, qahub_doc_hash): the one place a details file is
    read, once per report."""
    import pyarrow.parquet as pq

    try:
        logged = _response_fields(pq.read_schema(details))
        # the model response's texts alone: its other fields (tokens, logits) can be most of the file
        table = pq.read_table(details, columns=["doc", "metric"] + [f"model_response.{f}" for f in logged])
        columns = {f: table.column(f).to_pylist() for f in logged}
        responses = [{f: columns[f][i] for f in logged} for i in range(table.num_rows)]
        # lighteval shuffles the documents; in lm-eval's order (doc_id) the bootstrap draws the same resamples
        rows = sorted(zip(table.column("doc").to_pylist(), table.column("metric").to_pylist(), responses,
                          strict=True), key=lambda row: row[0]["specific"]["qahub_doc_id"])
        keys = [(doc["specific"]["qahub_doc_id"], doc["specific"]["qahub_doc_hash"]) for doc, _, _ in rows]
    except Exception as err:  # whatever pyarrow raises on a damaged or foreign file
        raise ReportError(f"{details}: not the details of a qahub task ({type(err).__name__}: "
                          f"{' '.join(str(err).split())})") from None
    return rows, keys


def _response_fields(schema) -> list:
    """Which of ``RESPONSE`` the details' ``model_response`` has (``input``, the prompt as sent: some backends
    log it)."""
    if "model_response" not in schema.names:
        return []
    kind = schema.field("model_response").type
    return [f for f in RESPONSE if hasattr(kind, "get_field_index") and kind.get_field_index(f) >= 0]


def texts_of(rows: list) -> Texts:
    """Each document's prompt as sent (the query where the response does not log it), gold choices, reply and
    post-processed reply (the reply where there is none)."""
    texts = Texts([], [], [], [])
    for doc, _, response in rows:
        gold = doc.get("gold_index")
        golds = gold if isinstance(gold, list) else [gold]
        choices = doc.get("choices") or []
        texts.targets.append([str(choices[i]) for i in golds if isinstance(i, int) and i < len(choices)])
        sent = response.get("input")
        texts.prompts.append(sent if isinstance(sent, str) else str(doc.get("query") or ""))
        reply = first_text(response.get("text"))
        texts.replies.append(reply)
        processed = response.get("text_post_processed")
        texts.answers.append(first_text(processed) if processed else reply)
    return texts


def prompts(docs: list, inputs: list, results: dict) -> tuple[list | None, str | None]:
    """Each document's prompt as sent and how: the model response's ``input`` where the backend logs it (the
    query itself: raw text; another text: the chat template applied; messages: chat messages). Where it does not
    (lighteval 0.13's transformers backend), the query is the prompt sent only when the model config sets
    ``override_chat_template: false`` and no ``system_prompt`` and the documents have no instruction and no
    lighteval few-shot samples (its plain text is then the query: ``PromptManager._prepare_plain_text``). Else
    the prompts are not known (None; how they were sent where the config says: True, template; unset, not known):
    the unrendered query never stands in for a rendered prompt, which would make equal prompts look different."""
    if all(isinstance(i, str) for i in inputs):
        same = all(i == doc["query"] for i, doc in zip(inputs, docs))
        return inputs, RAW if same else TEMPLATE
    if all(isinstance(i, list) and i for i in inputs):
        return [[(m.get("role"), m.get("content")) for m in i] for i in inputs], CHAT
    config = results["config_general"].get("model_config") or {}
    override = config.get("override_chat_template")
    plain = all(not doc.get("fewshot_samples") and not doc.get("instruction") for doc in docs)
    if override is False and plain and not config.get("system_prompt"):
        return [doc["query"] for doc in docs], RAW
    return None, {True: TEMPLATE, False: RAW}.get(override)


class LightevalRun(ResultsRun):
    """A run read from a lighteval ``--output-dir``."""

    harness = "lighteval"
    reader = staticmethod(read_task)
