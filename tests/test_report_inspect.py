"""``qahub report`` on inspect-ai logs (issue 29 item 4): the same scripted replies run through lm-eval and through
inspect's ``eval`` give the same report; a report mixing both pairs on the document ids; what it refuses."""

import shutil

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")
pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

import inspect_models  # noqa: E402, F401 - registers the scripted model
from inspect_ai import Epochs, Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from test_harness import TOP, Oracle, locations, manager, plan, task_dir  # noqa: E402, F401
from test_report import WRONG, lm_eval_run  # noqa: E402

from qahub import inspect_tasks  # noqa: E402
from qahub.report import ReportError, write_report  # noqa: E402
from qahub.report.runs import qahub_tasks  # noqa: E402

RESAMPLES = 200


def inspect_run(tasks, reply, folder, **kwargs):
    """inspect's eval of ``tasks`` with a model replying ``reply(prompt)``, its logs in ``folder``."""
    model = get_model("qahub_script/scripted", reply=reply, memoize=False)
    logs = inspect_eval(tasks, model=model, log_dir=str(folder), display="none", **kwargs)
    assert all(log.status == "success" for log in logs)
    return [log.location for log in logs]


@pytest.fixture(scope="module")
def scripts(locations):  # noqa: F811
    """The inspect tasks and two scripts ``{prompt: reply}``: the target always ("oracle"), and the target every
    third document, a wrong or unreadable reply for the others ("half")."""
    tasks = [inspect_tasks.TASKS[short](dataset=locations[corpus])
             for short, (corpus, _) in sorted(inspect_tasks.task_names().items())]
    oracle, half = {}, {}
    for task in tasks:
        for index, sample in enumerate(task.dataset):
            oracle[sample.input] = sample.target
            half[sample.input] = sample.target if index % 3 == 0 else WRONG[index % len(WRONG)]
    return tasks, {"oracle": oracle, "half": half}


class Scripted(Oracle):
    script = {}

    def generate_until(self, requests):
        return [self.script[request.args[0]] for request in requests]  # KeyError: a prompt inspect did not build


@pytest.fixture(scope="module")
def runs(scripts, manager, plan, tmp_path_factory):  # noqa: F811
    """``{(harness, script): run folder}``: each script through lm-eval and through inspect."""
    tasks, replies = scripts
    root = tmp_path_factory.mktemp("runs")
    found = {}
    for name, script in replies.items():
        model = Scripted(manager)
        model.script = script
        found["lm-eval", name] = lm_eval_run(model, manager, sorted(plan), root / f"lm-{name}").parent
        inspect_run(tasks, script.__getitem__, root / f"inspect-{name}")
        found["inspect", name] = root / f"inspect-{name}"
    return found


def report(tmp_path_factory, named: dict) -> dict:
    out = tmp_path_factory.mktemp("report") / "out"
    return write_report([f"{name}={path}" for name, path in named.items()], out, resamples=RESAMPLES,
                        progress=False, jobs=1)


@pytest.fixture(scope="module")
def reports(runs, tmp_path_factory):
    """The report of half against oracle run through lm-eval, through inspect, and lm-eval's half against
    inspect's oracle."""
    return {harness: report(tmp_path_factory, {"half": runs[harness, "half"], "oracle": runs[harness, "oracle"]})
            for harness in ("lm-eval", "inspect")} | {
        "mixed": report(tmp_path_factory, {"half": runs["lm-eval", "half"], "oracle": runs["inspect", "oracle"]})}


@pytest.mark.parametrize("task", sorted(TOP))
def test_inspect_logs_give_the_report_lm_eval_runs_give(reports, task):
    lm_eval, inspect = reports["lm-eval"]["tasks"][task], reports["inspect"]["tasks"][task]
    assert not lm_eval["warnings"] and not inspect["warnings"], (lm_eval["warnings"], inspect["warnings"])
    assert inspect["scores"]["half"] != inspect["scores"]["oracle"]  # the script is not the target everywhere
    signatures = {harness: _signatures(entry["scores"]) for harness, entry in (("lm-eval", lm_eval),
                                                                                ("inspect", inspect))}
    for part in ("scores", "breakdown", "comparisons", "notes"):
        assert inspect[part] == lm_eval[part], part
    # issue 37: the same signature but for the harness and the prompts (chat messages hashed, not a text)
    for run, cells in signatures["inspect"].items():
        for metric, mine in cells.items():
            theirs = signatures["lm-eval"][run][metric]
            assert mine["revision"] and mine["scorer"] and mine["prompts"].startswith("messages:"), mine
            same = [k for k in mine if not k.startswith("harness") and k != "prompts"]
            assert {k: mine[k] for k in same} == {k: theirs[k] for k in same}, (mine, theirs)
    mixed = reports["mixed"]["tasks"][task]  # lm-eval's half against inspect's oracle: paired on every document
    assert not mixed["warnings"], mixed["warnings"]
    # the same numbers; but inspect sends chat messages where lm-eval sends raw text: a caveat, so no star
    _signatures(mixed["scores"])
    assert _numbers(mixed["comparisons"]) == _numbers(lm_eval["comparisons"]) and mixed["scores"] == lm_eval["scores"]
    assert mixed["caveats"] == {"oracle": ["different prompts (chat format)"]}


def _signatures(scores: dict) -> dict:
    """``{run: {metric: signature}}``, taken out of the score cells (which then hold the numbers alone)."""
    return {run: {m: cell.pop("signature") for m, cell in cells.items()} for run, cells in scores.items()}


def _numbers(comparisons: dict) -> dict:
    """The comparisons without their verdict (a star is withheld from a pair with a caveat)."""
    return {run: {m: {k: v for k, v in cell.items() if k not in ("star", "no_star")} for m, cell in cells.items()}
            for run, cells in comparisons.items()}


def test_runs_name_the_model_and_the_log(reports, runs):
    entry = reports["inspect"]["runs"]["oracle"]
    assert entry["model"] == "qahub_script/scripted" and entry["path"] == str(runs["inspect", "oracle"])
    assert entry["harness"] == "inspect" and reports["mixed"]["runs"]["half"]["harness"] == "lm-eval"


def test_a_mixed_report_pairs_on_the_document_ids(scripts, runs, tmp_path, tmp_path_factory):
    """inspect's log of each task's last two documents, in the reverse order, is paired with the same two of the
    lm-eval run, by id (doc2dial's turn ids, LIMUR's MERA ids, ...)."""
    tasks, replies = scripts
    two = [Task(dataset=list(task.dataset)[:-3:-1], solver=task.solver, scorer=task.scorer, config=task.config,
                metadata=task.metadata, name=task.name) for task in tasks]
    inspect_run(two, replies["oracle"].__getitem__, tmp_path / "two")
    data = report(tmp_path_factory, {"lm": runs["lm-eval", "oracle"], "two": tmp_path / "two"})
    specs = qahub_tasks()
    for task, entry in data["tasks"].items():
        assert not entry["warnings"], entry["warnings"]
        total = entry["scores"]["lm"][next(iter(specs[task].metrics))]["n"]
        assert f"two vs lm: paired on the 2 documents both scored (lm {total}, two 2" in " ".join(entry["notes"])
        for metric, cell in entry["comparisons"]["two"].items():
            assert cell["n"] == 2 and cell["delta"] == 0, (task, metric)


def test_epochs_are_averaged_per_document(scripts, tmp_path, tmp_path_factory):
    """Two epochs, the target in the first and a wrong reply in the second: each document scores their mean."""
    tasks, replies = scripts
    limur = tasks[sorted(inspect_tasks.task_names()).index("limur")]
    asked = {}

    def reply(prompt):
        asked[prompt] = asked.get(prompt, 0) + 1
        return replies["oracle"][prompt] if asked[prompt] == 1 else "no idea"

    inspect_run([limur], reply, tmp_path / "logs", epochs=Epochs(2, "mean"), max_samples=1)
    entry = report(tmp_path_factory, {"two": tmp_path / "logs"})["tasks"]["qahub_limur"]
    assert not entry["warnings"], entry["warnings"]  # inspect's own numbers: its reduction is the mean too
    assert entry["scores"]["two"]["exact_match"]["value"] == pytest.approx(0.5)
    cell = entry["scores"]["two"]["exact_match"]  # 0.5 on every document: no variance, so no interval (not [0.5, 0.5])
    assert cell["ci"] == [None, None] and cell["no_interval"].startswith("every value is 0.5 (no variance)")
    assert "two: 2 epochs: each document's numbers are the mean over its epochs" in " ".join(entry["notes"])


def test_failed_samples_of_an_eval_that_tolerates_them_are_left_out(scripts, tmp_path, tmp_path_factory):
    tasks, replies = scripts
    limur = tasks[sorted(inspect_tasks.task_names()).index("limur")]
    broken = next(iter(limur.dataset)).input

    def reply(prompt):
        if prompt == broken:
            raise RuntimeError("the model is down")
        return replies["oracle"][prompt]

    inspect_run([limur], reply, tmp_path / "logs", fail_on_error=False)
    entry = report(tmp_path_factory, {"some": tmp_path / "logs"})["tasks"]["qahub_limur"]
    assert not entry["warnings"], entry["warnings"]
    assert entry["scores"]["some"]["exact_match"]["n"] == len(limur.dataset) - 1
    assert "some: 1 sample(s) failed (an eval run with --no-fail-on-error): left out" in " ".join(entry["notes"])


def _one_line(err) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.fixture(scope="module")
def limur_log(runs):
    return next(runs["inspect", "oracle"].glob("*_limur_*.eval"))


@pytest.mark.parametrize("status", ["started", "error", "cancelled"])
def test_an_unfinished_failed_or_cancelled_eval_is_refused(limur_log, tmp_path, status):
    log = read_eval_log(str(limur_log))
    log.status = status
    bad = tmp_path / f"bad{limur_log.suffix}"
    write_eval_log(log, str(bad))
    with pytest.raises(ReportError) as err:
        write_report([str(bad)], tmp_path / "out", progress=False)
    assert _one_line(err) == (f"{bad}: the eval's status is {status!r}, not 'success' (an unfinished, failed or "
                              "cancelled eval); finish it (inspect eval-retry) or give another log")


def test_a_log_of_another_task_is_refused(tmp_path):
    other = Task(dataset=[Sample(input="2+2?", target="4", id=1)], scorer=match(), name="arithmetic")
    (location,) = inspect_run([other], lambda prompt: "4", tmp_path / "logs")
    with pytest.raises(ReportError) as err:
        write_report([location], tmp_path / "out", progress=False)
    assert _one_line(err) == f"{location}: task arithmetic is not a qahub task (qahub/<name>)"
    with pytest.raises(ReportError) as err:  # a folder of none
        write_report([str(tmp_path / "logs")], tmp_path / "out", progress=False)
    assert _one_line(err) == f"{tmp_path / 'logs'}: holds no log of a qahub task (it has arithmetic)"


def test_a_folder_with_two_logs_of_one_task_asks_which(limur_log, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("a", "b"):
        shutil.copy(limur_log, folder / f"{name}_limur.eval")
    with pytest.raises(ReportError) as err:
        write_report([str(folder)], tmp_path / "out", progress=False)
    assert _one_line(err) == (f"{folder}: holds 2 logs of qahub_limur (a_limur.eval, b_limur.eval); which one? "
                              "pass that file (one log per task in a folder)")


def test_a_file_that_is_no_log_is_refused(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("{}", encoding="utf-8")
    with pytest.raises(ReportError) as err:
        write_report([str(bad)], tmp_path / "out", progress=False)
    assert _one_line(err).startswith(f"{bad}: not an inspect log (")


def test_inspect_logs_give_the_every_eval_ever_rows_lm_eval_runs_give(runs, tmp_path, eee_schemas):
    import json

    from jsonschema import Draft7Validator

    rows = {}
    for harness in ("lm-eval", "inspect"):
        out = tmp_path / harness
        write_report([f"half={runs[harness, 'half']}"], out, resamples=200, progress=False, jobs=1, hub_datasets={})
        (record,) = (out / "eee" / "half").glob("*[0-9a-f].json")
        Draft7Validator(eee_schemas["eval"]).validate(json.loads(record.read_text(encoding="utf-8")))
        lines = record.with_name(f"{record.stem}_samples.jsonl").read_text(encoding="utf-8").splitlines()
        found = [json.loads(line) for line in lines]
        for row in found:
            Draft7Validator(eee_schemas["instance_level_eval"]).validate(row)
        rows[harness] = {(r["evaluation_result_id"], r["sample_id"]): (r["evaluation"]["score"], r["output"]["raw"])
                         for r in found}
    assert rows["inspect"] == rows["lm-eval"] and len(rows["inspect"]) > 50


def test_inspect_logs_published_with_details_report_as_read_from_disk(runs, tmp_path):
    """``qahub publish-results --details`` pushes the logs to ``runs/<run>/`` on the Hub double, and ``qahub report
    hf://datasets/...`` reads them with this reader (subprocesses: huggingface_hub reads HF_ENDPOINT at import)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from hub_double import HubDouble

    token, repo = "hf_inspectDetailsToken0123", "org/inspect-details"
    hub = HubDouble({token: {repo, "org/model"}})
    hub.add_repo("model", "org/model", {"README.md": b"# m\n"})
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": token, "HF_HOME": str(tmp_path / "home"),
           "HF_HUB_DISABLE_XET": "1", "MPLBACKEND": "Agg"}

    def qahub(*argv):
        done = subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", *map(str, argv)], capture_output=True,
                              text=True, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads((argv[argv.index("--out") + 1] / "report.json").read_text(encoding="utf-8")) \
            if "--out" in argv else None

    try:
        local = qahub("report", f"half={runs['inspect', 'half']}", "--resamples", "200", "--jobs", "1",
                      "--hub-dataset", "limur=org/limur", "--out", tmp_path / "local")
        qahub("publish-results", tmp_path / "local", "--model", "half=org/model", "--details", repo)
        logs = {p for p in hub.repos["dataset", repo].branches["main"] if p.startswith("runs/")}
        assert logs == {f"runs/half/{Path(p).name}" for p in local["runs"]["half"]["files"]}
        read = qahub("report", f"hf://datasets/{repo}", "--resamples", "200", "--jobs", "1",
                     "--hub-dataset", "limur=org/limur", "--out", tmp_path / "read")
    finally:
        hub.close()
    assert read["runs"]["half"]["path"].startswith(f"hf://datasets/{repo}/runs/half@")
    for data in (local, read):
        for key in ("path", "results_file", "results_files", "source", "files"):
            data["runs"]["half"].pop(key)
    assert read["tasks"] == local["tasks"] and read["runs"] == local["runs"] and read["skipped"] == local["skipped"]


def test_an_inspect_run_is_dated_by_its_logs_never_by_its_folder_s_time(runs, tmp_path):
    """Main dated an inspect run's ``.eval_results`` entries and Every Eval Ever record by its log folder's
    modification time: a copied or downloaded folder got a false date. The time is inspect's ``eval.created``."""
    import datetime
    import json
    import os

    import yaml
    from huggingface_hub import parse_eval_result_entries

    from qahub.report.hub_files import HubDataset

    copy = shutil.copytree(runs["inspect", "half"], tmp_path / "copied")
    for path in [copy, *copy.iterdir()]:
        os.utime(path, (1e9, 1e9))  # 2001-09-09, the day the folder was "copied"
    created = min(datetime.datetime.fromisoformat(read_eval_log(str(log), header_only=True).eval.created)
                  for log in copy.iterdir())
    out = tmp_path / "out"
    write_report([f"half={copy}"], out, resamples=200, progress=False, jobs=1,
                 hub_datasets={"limur": HubDataset("org/limur")})
    (entry,) = parse_eval_result_entries(yaml.safe_load(
        (out / "eval_results" / "half" / ".eval_results" / "qahub_limur.yaml").read_text(encoding="utf-8")))
    assert entry.date == created.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    (record,) = [json.loads(p.read_text(encoding="utf-8")) for p in (out / "eee" / "half").glob("*[0-9a-f].json")]
    assert record["evaluation_timestamp"] == str(int(created.timestamp())) == record["retrieved_timestamp"]


def test_each_samples_file_is_parsed_once_by_a_report_with_its_hub_files(runs, tmp_path, monkeypatch):
    """Issue 44 item 1: the report, its ranking, the Hub files and the Every Eval Ever rows read one ``TaskRun``
    per task of each run. Main parsed every samples file a second time for the Hub files (with another reader
    per harness), an lm-eval file's first line twice, and each inspect log's header three times. Counted per
    file at the one parse function of each harness (lm-eval's ``samples_of``, whose lines are each parsed once,
    inspect's ``read_eval_log_samples`` and header ``read_eval_log``, pyarrow's ``read_table`` of lighteval's
    details), on a report of an lm-eval, an inspect and a lighteval run with its Hub files."""
    import json
    from collections import Counter
    from pathlib import Path

    import inspect_ai.log
    import pyarrow.parquet as pq
    from test_report_inputs import lighteval_copy

    from qahub.report import lm_eval_runs
    from qahub.report import runs as report_runs

    light = lighteval_copy(runs["lm-eval", "oracle"], tmp_path / "light", "qahub_limur")
    calls = {name: Counter() for name in ("lm-eval", "lines", "inspect", "headers", "lighteval")}

    def counting(name, function, key=str):
        def wrapped(path, *args, **kwargs):
            calls[name][key(path)] += 1
            return function(path, *args, **kwargs)
        return wrapped

    monkeypatch.setattr(lm_eval_runs, "samples_of", counting("lm-eval", lm_eval_runs.samples_of))
    for module in (lm_eval_runs, report_runs):  # every line of every samples file, parsed by whatever reads it
        monkeypatch.setattr(module, "load_line", counting("lines", report_runs.load_line, key=lambda line: "all"))
    monkeypatch.setattr(inspect_ai.log, "read_eval_log_samples", counting("inspect", inspect_ai.log.read_eval_log_samples))
    monkeypatch.setattr(inspect_ai.log, "read_eval_log", counting("headers", inspect_ai.log.read_eval_log))
    monkeypatch.setattr(pq, "read_table", counting("lighteval", pq.read_table))
    out = tmp_path / "out"
    data = write_report([f"lm={runs['lm-eval', 'half']}", f"inspect={runs['inspect', 'oracle']}", f"light={light}"],
                        out, resamples=RESAMPLES, progress=False, jobs=1, hub_datasets={})
    read = {run: sorted(facts["files"]) for run, facts in data["runs"].items()}
    lm_samples = [p for p in read["lm"] if p.endswith(".jsonl")]
    assert sorted(calls["lm-eval"]) == lm_samples and len(lm_samples) == len(data["tasks"])
    assert calls["lines"]["all"] == sum(len(Path(p).read_bytes().splitlines()) for p in lm_samples)
    logs = sorted(str(p) for p in Path(runs["inspect", "oracle"]).glob("*.eval"))
    assert sorted(calls["inspect"]) == sorted(calls["headers"]) == logs
    assert sorted(calls["lighteval"]) == [p for p in read["light"] if p.endswith(".parquet")]
    assert {count for name in calls if name != "lines" for count in calls[name].values()} == {1}
    for run in ("lm", "inspect", "light"):  # its Every Eval Ever rows came from that one reading
        (rows,) = (out / "eee" / run).glob("*_samples.jsonl")
        found = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
        assert found and all(row["input"]["raw"] and row["sample_id"] for row in found)
