"""``qahub report``'s inputs (issue 36 items 2, 3, 5, 6, 10): inspect's epochs reducer applied as inspect applies
it; clusters of an old inspect log recovered or said to be missing; every results file, group and details row
accounted for; only like with like compared (prompts, shots, documents in common); ``qahub pick-docs``; no import
circle among the readers."""

import ast
import json
import shlex
import shutil
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")
pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

import inspect_models  # noqa: E402, F401 - registers the scripted model
from inspect_ai import Epochs  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.scorer import Score, score_reducer  # noqa: E402
from test_harness import Oracle, locations, manager, plan, task_dir  # noqa: E402, F401
from test_report import Half, lm_eval_run  # noqa: E402
from test_report_inspect import inspect_run  # noqa: E402

from qahub import cli, inspect_tasks, pick_docs  # noqa: E402
from qahub.report import ReportError, write_report  # noqa: E402
from qahub.report import inspect_logs as inspect_reader  # noqa: E402

RESAMPLES = 200  # the least qahub report accepts
LIMUR = "qahub_limur"
CHAT_TASK = "qahub_topical_chat_freq"  # clustered by conversation


def report(tmp_path, named: dict, **kwargs) -> dict:
    out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}"
    return write_report([f"{name}={path}" for name, path in named.items()], out, resamples=RESAMPLES,
                        progress=False, jobs=1, **kwargs)


def _task(locations, name):  # noqa: F811
    short = name.removeprefix("qahub_")
    corpus, _ = inspect_tasks.task_names()[short]
    return inspect_tasks.TASKS[short](dataset=locations[corpus])


def _targets(task):
    return {sample.input: sample.target for sample in task.dataset}


# --- item 5: every input accounted for


def test_two_lm_eval_calls_into_one_output_path_each_task_from_the_newest_file_holding_it(manager, tmp_path):  # noqa: F811
    out = lm_eval_run(Half(manager), manager, [LIMUR, "qahub_jemhopqa"], tmp_path / "first").parent
    second = lm_eval_run(Oracle(manager), manager, [LIMUR], tmp_path / "second").parent
    for file in second.iterdir():  # the model folder `lm_eval --model hf` gives both calls (a custom LM: two)
        shutil.move(file, out / file.name)
    files = sorted(out.glob("results_*.json"))
    assert len(files) == 2
    data = report(tmp_path, {"a": out})
    assert set(data["tasks"]) == {LIMUR, "qahub_jemhopqa"} and data["skipped"] == []
    assert sorted(data["runs"]["a"]["results_files"]) == [str(f) for f in files]
    newest = json.loads(files[1].read_text(encoding="utf-8"))["results"][LIMUR]
    assert data["tasks"][LIMUR]["scores"]["a"]["exact_match"]["value"] == newest["exact_match,none"] == 1.0
    assert not data["tasks"][LIMUR]["warnings"]
    assert f"a: read from {files[1].name}, the newest of its results files holding {LIMUR}" in \
        data["tasks"][LIMUR]["notes"]
    assert any(files[0].name in note for note in data["tasks"]["qahub_jemhopqa"]["notes"])


def test_qahub_s_own_group_is_not_skipped_its_tasks_are_reported(manager, tmp_path):  # noqa: F811
    out = lm_eval_run(Oracle(manager), manager, ["qahub_doc2dial"], tmp_path / "out").parent
    assert "qahub_doc2dial" in json.loads(next(out.glob("results_*.json")).read_text(encoding="utf-8"))["results"]
    data = report(tmp_path, {"a": out})
    assert data["skipped"] == []
    assert set(data["tasks"]) == {"qahub_doc2dial_grounding", "qahub_doc2dial_response"}


@pytest.fixture(scope="module")
def inspect_logs(locations, tmp_path_factory):  # noqa: F811
    """An inspect log folder: qahub_limur's (every reply its target) and a task that is not qahub's."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    limur = _task(locations, LIMUR)
    other = Task(dataset=[Sample(input="2+2?", target="4", id=1)], scorer=match(), name="arithmetic")
    targets = _targets(limur)
    folder = tmp_path_factory.mktemp("inspect") / "logs"
    inspect_run([limur, other], lambda prompt: targets.get(prompt, "4"), folder)
    return folder


def test_a_task_that_is_not_qahub_s_is_skipped_with_its_run_and_reason(inspect_logs, tmp_path):
    data = report(tmp_path, {"a": inspect_logs})
    assert data["skipped"] == [{"run": "a", "task": "arithmetic", "reason": "not a qahub task"}]
    assert "Skipped: a: arithmetic (not a qahub task)" in (tmp_path / "report-0" / "report.md").read_text("utf-8")


@pytest.fixture(scope="module")
def lm_limur(manager, tmp_path_factory):  # noqa: F811
    return lm_eval_run(Oracle(manager), manager, [LIMUR, CHAT_TASK], tmp_path_factory.mktemp("lm") / "out").parent


def lighteval_copy(lm_run: Path, out: Path, task: str, edit=None, date="2026-01-01T00-00-00.000000") -> Path:
    """A lighteval ``--output-dir`` (results and ``--save-details`` parquet, as lighteval 0.13 lays them out)
    holding the lm-eval run's documents, prompts and per-document values of ``task`` (``edit(rows)``: changes to
    its metric rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = json.loads(next(lm_run.glob("results_*.json")).read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in next(lm_run.glob(f"samples_{task}_*.jsonl")).read_text("utf-8").splitlines()]
    config = results["configs"][task]
    metrics = [m for m in results["results"][task] if m.endswith(",none") and "_stderr" not in m]
    rows = [{m.split(",")[0]: s[m.split(",")[0]] for m in metrics} for s in samples]
    if edit:
        edit(rows)
    key = f"{task}|0"
    (out / "results" / "model").mkdir(parents=True, exist_ok=True)
    (out / "details" / "model" / date).mkdir(parents=True)
    scores = {m.split(",")[0]: results["results"][task][m] for m in metrics}
    (out / "results" / "model" / f"results_{date}.json").write_text(json.dumps(
        {"results": {key: scores, "all": scores}, "config_general": {"model_config": {"model_name": "model"}},
         "config_tasks": {key: {"version": 1}}}), encoding="utf-8")
    dataset = [config["dataset_path"], config["dataset_name"], config["test_split"]]
    docs = [{"query": s["arguments"]["gen_args_0"]["arg_0"],  # the prompt, as lm-eval saves it
             "specific": {"qahub_doc_id": s["doc_id"], "qahub_doc_hash": s["doc_hash"],
                          "qahub_doc": s["doc"], "qahub_dataset": dataset}} for s in samples]
    responses = [{"input": doc["query"]} for doc in docs]
    table = pa.table({"doc": docs, "metric": rows, "model_response": responses})
    pq.write_table(table, out / "details" / "model" / date / f"details_{key}_{date}.parquet")
    return out


def test_a_lighteval_run_s_metrics_come_from_every_details_row(lm_limur, tmp_path):
    """The first document has no knowledge (knowledge_f1 None there): knowledge_f1 is still reported."""
    def no_first_knowledge(rows):
        rows[0]["knowledge_f1"] = None

    run = lighteval_copy(lm_limur, tmp_path / "le", CHAT_TASK, edit=no_first_knowledge)
    entry = report(tmp_path, {"le": run})["tasks"][CHAT_TASK]
    assert "knowledge_f1" in entry["scores"]["le"]



def test_a_task_run_holds_each_document_s_texts_as_its_harness_logged_them(lm_limur, tmp_path):
    """Issue 44 item 1: a reader's ``TaskRun`` is frozen and holds, beside the numbers, each document's prompt,
    targets, reply and scored answer, read in the same pass: an lm-eval run's as its samples file logs them, and
    a lighteval run's (its details made from those samples) the same prompts, documents and values."""
    import dataclasses

    from qahub.report import lighteval_runs, lm_eval_runs
    from qahub.report.runs import qahub_tasks

    spec = qahub_tasks()[LIMUR]
    run, _ = lm_eval_runs.read_run("lm", lm_limur, {LIMUR: spec})
    task_run = run.read(LIMUR, spec)
    logged = [json.loads(line) for line in run.samples[LIMUR].read_text(encoding="utf-8").splitlines()]
    documents = task_run.documents()
    assert [(d.prompt, d.targets, d.reply, d.answer) for d in documents] == [
        (s["arguments"]["gen_args_0"]["arg_0"], [str(s["target"])], s["resps"][0][0], s["filtered_resps"][0])
        for s in logged]
    assert [d.key for d in documents] == [(s["doc_id"], s["doc_hash"]) for s in logged]
    assert [d.scores["exact_match"] for d in documents] == [s["exact_match"] for s in logged]
    with pytest.raises(dataclasses.FrozenInstanceError):
        task_run.notes = []
    light, _ = lighteval_runs.read_run("le", lighteval_copy(lm_limur, tmp_path / "le", LIMUR), {LIMUR: spec})
    read = light.read(LIMUR, spec).documents()
    assert [(d.id, d.key, d.prompt, d.scores) for d in read] == [(d.id, d.key, d.prompt, d.scores) for d in documents]


# --- item 2: the epochs reducer inspect used


@pytest.fixture(scope="module")
def limur_task(locations):  # noqa: F811
    return _task(locations, LIMUR)


def _right_then_wrong(task):
    """The target in a document's first epoch, a wrong reply in its second."""
    targets, asked = _targets(task), {}

    def reply(prompt):
        asked[prompt] = asked.get(prompt, 0) + 1
        return targets[prompt] if asked[prompt] == 1 else "no idea"

    return reply


@pytest.mark.parametrize(("reducer", "value"), [("max", 1.0), ("at_least_2", 0.0), ("pass_at_1", 0.5), ("mode", None)])
def test_epochs_are_reduced_by_inspect_s_own_reducer(limur_task, tmp_path, reducer, value):
    """``--epochs 2 --epochs-reducer max``: each document's exact_match is 1.0 (inspect's value), its interval
    holds it, and no warning blames the samples."""
    inspect_run([limur_task], _right_then_wrong(limur_task), tmp_path / "logs", epochs=Epochs(2, reducer),
                max_samples=1)
    entry = report(tmp_path, {"two": tmp_path / "logs"})["tasks"][LIMUR]
    assert not entry["warnings"], entry["warnings"]  # inspect's results: the same reduction
    cell = entry["scores"]["two"]["exact_match"]
    if value is not None:
        assert cell["value"] == pytest.approx(value)
    if value == 0.5:  # pass@1 of one right epoch in two: 0.5 on every document, no variance: no interval
        assert cell["ci"] == [None, None] and cell["no_interval"].startswith("every value is 0.5 (no variance)")
    else:
        assert cell["ci"][0] <= cell["value"] <= cell["ci"][1]
    assert f"two: 2 epochs: each document's numbers are the {reducer} over its epochs" in " ".join(entry["notes"])


@score_reducer(name="qahub_test_last")
def last_epoch():
    def reduce(scores: list[Score]) -> Score:
        return scores[-1]

    return reduce


def test_a_reducer_the_report_cannot_apply_refuses_the_task_naming_it(limur_task, tmp_path):
    inspect_run([limur_task], _right_then_wrong(limur_task), tmp_path / "logs",
                epochs=Epochs(2, last_epoch()), max_samples=1)
    with pytest.raises(ReportError) as err:
        report(tmp_path, {"two": tmp_path / "logs"})
    message = str(err.value)
    assert "\n" not in message and "epochs reducer 'qahub_test_last' cannot be applied" in message


# --- issue 44: inspect's reader's errors are the log's, qahub's own are not


def _limur_log(folder, tmp_path):
    """A copy of the folder's qahub_limur log in its own folder."""
    log = next(f for f in folder.iterdir() if read_eval_log(str(f), header_only=True).eval.task.endswith("limur"))
    (tmp_path / "one").mkdir()
    return Path(shutil.copy(log, tmp_path / "one" / log.name))


def test_a_log_whose_samples_are_damaged_is_one_line_keeping_the_reader_s_error(inspect_logs, tmp_path):
    log = _limur_log(inspect_logs, tmp_path)
    whole = zipfile.ZipFile(log).infolist()
    members = {info.filename: zipfile.ZipFile(log).read(info) for info in whole}
    with zipfile.ZipFile(log, "w") as damaged:  # every sample's JSON cut short; the header still reads
        for name, data in members.items():
            damaged.writestr(name, data[:20] if name.startswith("samples/") else data)
    with pytest.raises(ReportError) as err:
        report(tmp_path, {"a": log})
    message = str(err.value)
    assert message.startswith(f"{log}: its samples cannot be read (") and "\n" not in message
    assert err.value.__cause__ is not None and not isinstance(err.value.__cause__, ReportError)


def test_a_bug_in_qahub_while_reading_a_log_is_not_blamed_on_the_log(inspect_logs, tmp_path, monkeypatch):
    def broken(value):
        raise TypeError("a bug in qahub")

    monkeypatch.setattr(inspect_reader, "input_messages", broken)
    with pytest.raises(TypeError, match="a bug in qahub"):
        report(tmp_path, {"a": _limur_log(inspect_logs, tmp_path)})


# --- item 3: clusters of an old inspect log


@pytest.fixture(scope="module")
def old_log(locations, tmp_path_factory):  # noqa: F811
    """An inspect log of a clustered task whose samples carry no qahub_cluster (as written before it was
    recorded), and the number of conversations of its documents."""
    task = _task(locations, CHAT_TASK)
    folder = tmp_path_factory.mktemp("old")
    (location,) = inspect_run([task], _targets(task).__getitem__, folder / "new")
    log = read_eval_log(location)
    for sample in log.samples:
        sample.metadata.pop(inspect_tasks.CLUSTER)
    old = folder / "old.eval"
    write_eval_log(log, str(old))
    conversations = {sample.metadata[inspect_tasks.CLUSTER] for sample in task.dataset}
    return old, len(conversations), len(task.dataset)


def test_an_old_log_s_clusters_are_recovered_from_the_documents(old_log, tmp_path):
    old, conversations, documents = old_log
    entry = report(tmp_path, {"old": old})["tasks"][CHAT_TASK]
    assert entry["cluster"]["runs"]["old"] == {**entry["cluster"]["runs"]["old"], "clusters": conversations,
                                              "documents": documents}
    assert conversations < documents
    assert any("its log records no conversation of its documents: recovered from the documents at" in note
               for note in entry["notes"])


def test_an_old_log_of_other_documents_under_the_same_ids_gets_no_cluster_from_them(old_log, tmp_path):
    """The location now holds other documents under the log's ids (a corpus rebuilt, ids by position): main took
    their clusters as the log's; each id's target must be the log's for the clusters to be recovered."""
    from qahub.report.inspect_logs import InspectRun
    from qahub.report.runs import qahub_tasks

    old, _, documents = old_log
    log = read_eval_log(str(old))
    changed = log.samples[-1]
    for sample in log.samples:
        if sample.id == changed.id:
            sample.target = f"{sample.target} (another document)"
    other = tmp_path / "other.eval"
    write_eval_log(log, str(other))
    task_run = InspectRun("m", str(other), "m", str(other), {}, {CHAT_TASK: other}).read(
        CHAT_TASK, qahub_tasks()[CHAT_TASK])
    assert task_run.clusters is None and len(task_run.ids) == documents
    assert any("nor can they be recovered" in note and f"document {changed.id} has another target there" in note
               for note in task_run.notes), task_run.notes


def test_an_old_log_whose_documents_are_gone_records_no_cluster(old_log, tmp_path):
    old, _, documents = old_log
    log = read_eval_log(str(old))
    log.eval.metadata["qahub"]["location"] = str(tmp_path / "gone")
    moved = tmp_path / "moved.eval"
    write_eval_log(log, str(moved))
    from qahub.report.inspect_logs import InspectRun
    from qahub.report.runs import qahub_tasks

    task_run = InspectRun("m", str(moved), "m", str(moved), {}, {CHAT_TASK: moved}).read(
        CHAT_TASK, qahub_tasks()[CHAT_TASK])
    assert task_run.clusters is None and task_run.cluster_name == "conversation"
    assert any("nor can they be recovered" in note and "gone" in note for note in task_run.notes)
    entry = report(tmp_path, {"moved": moved})["tasks"][CHAT_TASK]
    cluster = entry["cluster"]["runs"]["moved"]  # resampled document by document, and said so
    assert cluster["documents"] == documents and cluster["by_document"] == "the run records no conversation"


# --- item 6: only like with like


def test_inspect_s_chat_messages_against_lm_eval_s_raw_text_is_a_caveat(lm_limur, inspect_logs, tmp_path):
    entry = report(tmp_path, {"lm": lm_limur, "inspect": inspect_logs})["tasks"][LIMUR]
    assert entry["caveats"] == {"inspect": ["different prompts (chat format)"]}
    assert entry["comparisons"]["inspect"]  # compared, marked


def test_the_same_prompts_in_lm_eval_and_lighteval_have_no_caveat(lm_limur, tmp_path):
    run = lighteval_copy(lm_limur, tmp_path / "le", LIMUR)
    entry = report(tmp_path, {"lm": lm_limur, "le": run})["tasks"][LIMUR]
    assert "le" not in entry.get("caveats", {}) and "le" not in entry.get("not_compared", {})
    assert entry["comparisons"]["le"]


def relog(run: Path, change) -> None:
    """Rewrites the details of a ``lighteval_copy``: ``change(docs)`` gives each row's model response (and may
    change the docs in place)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    details = next(run.rglob("*.parquet"))
    table = pq.read_table(details)
    docs = table.column("doc").to_pylist()
    responses = change(docs)
    pq.write_table(pa.table({"doc": docs, "metric": table.column("metric"), "model_response": responses}), details)


def test_a_chat_template_in_lighteval_against_raw_text_is_a_caveat(lm_limur, tmp_path):
    run = lighteval_copy(lm_limur, tmp_path / "le", LIMUR)
    relog(run, lambda docs: [{"input": f"<|user|>{doc['query']}<|assistant|>"} for doc in docs])
    entry = report(tmp_path, {"lm": lm_limur, "le": run})["tasks"][LIMUR]
    assert entry["caveats"] == {"le": ["different prompts (chat format)"]}


def test_lighteval_details_with_no_prompt_text_say_the_prompts_were_not_compared(lm_limur, tmp_path):
    """lighteval 0.13's transformers backend logs no ``input``, and its query is not what it sent with a chat
    template (SmolLM2's run: every value equal to lm-eval's, once marked "different prompts (template)"): the
    report says the prompts were not compared ("? prompts"), never that they differ."""
    def unrendered(docs):
        for doc in docs:  # the query before lighteval's chat template: not lm-eval's prompt as sent
            doc["query"] = doc["query"].removesuffix("\n").rsplit("\n", 1)[-1]
        return [{"text": ["reply"]} for _ in docs]

    run = lighteval_copy(lm_limur, tmp_path / "le", LIMUR)
    relog(run, unrendered)
    data = report(tmp_path, {"lm": lm_limur, "le": run})
    entry = data["tasks"][LIMUR]
    assert entry["caveats"] == {"le": ["prompts not recorded by lighteval: not compared"]}
    assert entry["comparisons"]["le"] and "le" not in entry.get("not_compared", {})  # compared, never starred
    summary = (tmp_path / "report-0" / "report.md").read_text(encoding="utf-8")
    assert "? prompts le against lm: prompts not recorded by lighteval: not compared" in summary
    assert "≠ prompts" not in summary and "different prompts" not in summary
    assert "? prompts: compared, but a harness did not record the prompts it sent" in summary  # the legend


def test_a_recorded_lighteval_prompt_that_differs_on_one_document_is_marked(lm_limur, tmp_path):
    """lighteval left-truncates a batch to its first prompt's length: a prompt it records without its first
    characters differs from lm-eval's on that document, and is marked."""
    def truncated(docs):
        docs[1]["query"] = docs[1]["query"][5:]  # sent as raw text (input == query), one prompt cut
        return [{"input": doc["query"]} for doc in docs]

    run = lighteval_copy(lm_limur, tmp_path / "le", LIMUR)
    relog(run, truncated)
    data = report(tmp_path, {"lm": lm_limur, "le": run})
    assert data["tasks"][LIMUR]["caveats"] == {"le": ["different prompts (template)"]}
    summary = (tmp_path / "report-0" / "report.md").read_text(encoding="utf-8")
    assert "≠ prompts le against lm: different prompts (template)" in summary


def test_another_number_of_shots_is_a_caveat(manager, lm_limur, tmp_path):  # noqa: F811
    shots = lm_eval_run(Oracle(manager), manager, [LIMUR], tmp_path / "shots", num_fewshot=1).parent
    entry = report(tmp_path, {"lm": lm_limur, "shots": shots})["tasks"][LIMUR]
    assert entry["caveats"] == {"shots": ["different number of shots 0/1", "different prompts (few-shot)"]}


def test_runs_with_no_document_in_common_are_not_compared(manager, tmp_path):  # noqa: F811
    first = lm_eval_run(Oracle(manager), manager, [LIMUR], tmp_path / "first", limit=2).parent
    last = lm_eval_run(Oracle(manager), manager, [LIMUR], tmp_path / "last", samples={LIMUR: [3, 4]}).parent
    entry = report(tmp_path, {"first": first, "last": last})["tasks"][LIMUR]
    assert entry["not_compared"] == {"last": "no document in common"}
    assert "last" not in entry["comparisons"]


# --- qahub pick-docs: the same documents in every harness


def test_pick_docs_spreads_over_conversations_and_lm_eval_and_inspect_score_those_documents(
        manager, locations, capsys, tmp_path):  # noqa: F811
    location, task_name = locations["doc2dial"], "qahub_doc2dial_grounding"
    assert cli.main(["pick-docs", task_name, "--n", "4", "--location", location, "--seed", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    picked, documents, conversations = pick_docs.pick(task_name, 4, location, seed=3)
    assert len({cluster for _, _, cluster in picked}) == min(4, conversations)
    assert printed[0] == f"{task_name}: 4 of {documents} documents, {min(4, conversations)} of {conversations} " \
                         "clusters (seed 3)"
    samples = json.loads(printed[1].removeprefix("lm_eval --samples ").strip("'"))
    ids = printed[2].removeprefix(f"inspect eval qahub/{task_name.removeprefix('qahub_')} --sample-id ").strip("'")
    assert samples == {task_name: [index for index, _, _ in picked]}
    assert ids.split(",") == [str(doc_id) for _, doc_id, _ in picked]
    assert printed[3].startswith(f"QAHUB_LIGHTEVAL_SAMPLES={shlex.quote(json.dumps(samples))} ")

    lm = lm_eval_run(Oracle(manager), manager, [task_name], tmp_path / "lm", samples=samples).parent
    task = _task(locations, task_name)
    inspect_run([task], _targets(task).__getitem__, tmp_path / "logs", sample_id=ids.split(","))
    entry = report(tmp_path, {"lm": lm, "inspect": tmp_path / "logs"})["tasks"][task_name]
    assert entry["scores"]["lm"]["exact"]["n"] == entry["scores"]["inspect"]["exact"]["n"] == 4
    assert not entry.get("not_compared") and not any("paired on" in note for note in entry["notes"])
    assert entry["comparisons"]["inspect"]["exact"]["n"] == 4


def test_pick_docs_refuses_more_documents_than_the_task_has(locations, capsys):  # noqa: F811
    assert cli.main(["pick-docs", "limur", "--n", "100000", "--location", locations["limur"]]) == 1
    err = capsys.readouterr().err
    assert "--n 100000: " in err and "documents of qahub_limur" in err and len(err.strip().splitlines()) == 1


def test_pick_docs_at_most_gives_every_document_of_a_smaller_task_as_asking_for_that_many(locations):  # noqa: F811
    """``pick(..., at_most=True)``: what benchmarks/reference.py asks (up to --docs of each task), with no error
    text to parse; fewer asked than the task has: the same documents as without it."""
    everything, documents, _ = pick_docs.pick("qahub_limur", 100000, locations["limur"], seed=2, at_most=True)
    assert len(everything) == documents
    assert everything == pick_docs.pick("qahub_limur", documents, locations["limur"], seed=2)[0]
    assert pick_docs.pick("qahub_limur", 2, locations["limur"], seed=2, at_most=True) == \
        pick_docs.pick("qahub_limur", 2, locations["limur"], seed=2)


# --- item 10: no import circle among the report's modules


def _imports(path: Path) -> set:
    """The report modules ``path`` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qahub.report."):
            found.add(node.module.rsplit(".", 1)[1])
    return found


def test_the_report_s_modules_import_no_circle():
    import qahub.report

    folder = Path(qahub.report.__file__).parent
    graph = {p.stem: _imports(p) for p in folder.glob("*.py") if p.stem != "__init__"}

    def reaches(start, goal, seen=()):
        return any(n == goal or (n in graph and n not in seen and reaches(n, goal, (*seen, n)))
                   for n in graph.get(start, ()))

    assert [m for m in graph if reaches(m, m)] == []


def test_a_lighteval_output_dir_with_two_results_files_reports_both_tasks(lm_limur, tmp_path):
    run = lighteval_copy(lm_limur, tmp_path / "le", LIMUR)
    lighteval_copy(lm_limur, run, CHAT_TASK, date="2026-01-02T00-00-00.000000")
    data = report(tmp_path, {"le": run})
    assert set(data["tasks"]) == {LIMUR, CHAT_TASK} and data["skipped"] == []
    assert len(data["runs"]["le"]["results_files"]) == 2


def _task_run(**fields):
    from qahub.report.runs import TaskRun

    base = {"task": "t", "file": "f", "values": {}, "keys": [(0, "a"), (1, "b")], "items": {}, "categories": {},
            "n_shot": 0, "dataset": ("loc", "cfg", "test"), "ids": [0, 1], "prompts": ["p0", "p1"],
            "prompt_format": "raw text", "prompt_hashed": "text"}
    return TaskRun(**{**base, **fields})


def _paired(base, other):
    from types import SimpleNamespace

    from qahub.report.alike import pairing

    entry = {"warnings": [], "notes": []}
    pair = pairing("t", SimpleNamespace(name="a", tasks={"t": base}), SimpleNamespace(name="b", tasks={"t": other}))
    pair.record(entry)
    pairs = pair.pairs if pair.compared else None
    return pairs, entry


@pytest.mark.parametrize(("other", "caveats"), [
    ({}, None),
    ({"prompts": ["p0", "changed"]}, ["different prompts (template)"]),
    ({"prompts": ["m0", "m1"], "prompt_hashed": "messages", "prompt_format": "chat template applied"},
     ["different prompts (chat format)"]),
    ({"prompts": ["m0", "m1"], "prompt_hashed": "messages"},  # hashes of other things: not compared, said so
     ["prompts recorded as messages and as text: not compared"]),
    ({"prompts": None, "prompt_format": None}, None),  # not read (a run built by hand)
    ({"prompts": None, "prompt_format": None, "prompts_unknown": "not recorded by lighteval"},
     ["prompts not recorded by lighteval: not compared"]),  # not known: never "different prompts"
    ({"prompts": None, "prompt_format": "chat template applied", "prompts_unknown": "not recorded by lighteval"},
     ["different prompts (chat format)"]),  # sent another way: known to differ
    ({"n_shot": 3, "prompts": ["q0", "q1"]}, ["different number of shots 0/3", "different prompts (few-shot)"]),
])
def test_pairs_that_are_not_like_with_like_are_marked(other, caveats):
    pairs, entry = _paired(_task_run(), _task_run(**other))
    assert pairs is not None and entry.get("caveats", {}).get("b") == caveats


def test_runs_of_another_dataset_are_not_compared_and_say_why():
    pairs, entry = _paired(_task_run(), _task_run(dataset=("loc", "cfg", "validation")))
    assert pairs is None and entry["not_compared"] == {"b": "a different dataset, config or split (loc/cfg/validation "
                                                             "against loc/cfg/test)"}
