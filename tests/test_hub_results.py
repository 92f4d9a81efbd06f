"""Results on the Hub: ``qahub report --hub-dataset`` writes each run's ``.eval_results`` entries (read back with
huggingface_hub's ``parse_eval_result_entries``) and Every Eval Ever records (validated against the schemas of
the released every-eval-ever 0.3.0 wheel); ``qahub publish-results`` opens pull requests and pushes a details
dataset to a double of the Hub on 127.0.0.1, through the real huggingface_hub client, over HTTP."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

from hub_double import HubDouble  # noqa: E402
from huggingface_hub import parse_eval_result_entries  # noqa: E402
from jsonschema import Draft7Validator  # noqa: E402
from test_harness import Oracle, locations, manager, plan, task_dir  # noqa: E402, F401
from test_report import Half, lm_eval_run  # noqa: E402

from qahub import cli  # noqa: E402

TASKS = ("qahub_limur", "qahub_topical_chat_freq", "qahub_jemhopqa")  # 0/1 (Wilson), clustered BLEU/distinct, F1
TOKEN = "hf_doubleWRITEtoken1234"  # may write org/* repos on the double; opens pull requests anywhere
READER = "hf_doubleREADtoken5678"  # may write nothing


@pytest.fixture(scope="module")
def runs(plan, manager, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("hub-runs")
    tasks = [task for task in TASKS if task in plan]
    return {"oracle": lm_eval_run(Oracle(manager), manager, tasks, root / "oracle").parent,
            "half": lm_eval_run(Half(manager), manager, tasks, root / "half").parent}


def qahub(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "qahub.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg", **(env or {})})


def hub_args(runs):
    return [f"half={runs['half']}", f"oracle={runs['oracle']}", "--resamples", "200",
            "--hub-dataset", "limur=qahub/limur@0123456789abcdef0123456789abcdef01234567",
            "--hub-dataset", "topical_chat=qahub/topical_chat"]


@pytest.fixture(scope="module")
def hub_report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("hub-report") / "out"
    assert cli.main(["--quiet", "report", *hub_args(runs), "--out", str(out), "--jobs", "1"]) == 0
    return out, json.loads((out / "report.json").read_text(encoding="utf-8"))


def _entries(path):
    return parse_eval_result_entries(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_eval_results_read_back_with_the_report_s_values(hub_report):
    out, data = hub_report
    for run in ("half", "oracle"):
        for task, repo, revision in (("qahub_limur", "qahub/limur", "0123456789abcdef0123456789abcdef01234567"),
                                     ("qahub_topical_chat_freq", "qahub/topical_chat", None)):
            (entry,) = _entries(out / "eval_results" / run / ".eval_results" / f"{task}.yaml")
            report = data["tasks"][task]
            cell = report["scores"][run][report["main_metric"]]
            assert (entry.dataset_id, entry.task_id, entry.dataset_revision) == (repo, task, revision)
            assert entry.value == cell["value"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry.date)
            low, high = cell["ci"]
            method = cell.get("method", report["intervals"][report["main_metric"]])  # a cell's own, or its metric's
            interval = f"95% CI [{low:.4g}, {high:.4g}] ({method})" if low is not None else \
                f"no 95% CI ({cell['no_interval']})"  # e.g. a percentile bootstrap over 3 conversations
            assert entry.notes.startswith(f"qahub 0.1.0: {report['main_metric']} {cell['value']:.4g}, {interval}")
            assert f"n={cell['n']} documents" in entry.notes and "-shot; lm-eval " in entry.notes
            assert "\n" not in entry.notes and entry.source_url is None
    clustered = _entries(out / "eval_results" / "half" / ".eval_results" / "qahub_topical_chat_freq.yaml")[0]
    assert re.search(r"n=\d+ documents in \d+ conversations", clustered.notes)


def test_a_task_without_a_hub_dataset_is_left_out_with_a_note_never_a_local_path(hub_report, runs):
    out, data = hub_report
    assert not (out / "eval_results" / "half" / ".eval_results" / "qahub_jemhopqa.yaml").exists()
    notes = data["tasks"]["qahub_jemhopqa"]["notes"]
    assert "half: .eval_results left out: no Hub dataset id for jemhopqa (pass --hub-dataset jemhopqa=ORG/NAME); " \
           "a local path is never published" in notes
    assert {"run": "half", "task": "qahub_jemhopqa", "what": ".eval_results"}.items() <= \
        next(i for i in data["hub"]["left_out"] if i["task"] == "qahub_jemhopqa" and i["run"] == "half").items()
    written = [p.read_text(encoding="utf-8") for p in (out / "eval_results").rglob("*.yaml")]
    results = json.loads(Path(data["runs"]["half"]["results_file"]).read_text(encoding="utf-8"))
    local = {config["dataset_path"] for config in results["configs"].values()}  # the sample exports' folders
    assert len(written) == 4 and not any(path in text for path in local for text in written)
    assert "left out: no Hub dataset id for jemhopqa" in (out / "report.md").read_text(encoding="utf-8")


def _record(out, run):
    (aggregate,) = (out / "eee" / run).glob("*[0-9a-f].json")
    return aggregate, json.loads(aggregate.read_text(encoding="utf-8"))


def test_eee_records_validate_against_the_released_0_3_0_schemas(hub_report, eee_schemas):
    out, data = hub_report
    aggregate_schema = Draft7Validator(eee_schemas["eval"])
    instance_schema = Draft7Validator(eee_schemas["instance_level_eval"])
    for run in ("half", "oracle"):
        path, record = _record(out, run)
        aggregate_schema.validate(record)
        samples = path.with_name(f"{path.stem}_samples.jsonl")
        rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
        for row in rows:
            instance_schema.validate(row)
        detail = record["detailed_evaluation_results"]
        assert detail["total_rows"] == len(rows) and detail["file_path"].endswith(samples.name)
        assert {row["evaluation_id"] for row in rows} == {record["evaluation_id"]}
        results = {r["evaluation_result_id"]: r for r in record["evaluation_results"]}
        for task, entry in data["tasks"].items():
            for metric, cell in entry["scores"][run].items():
                got = results[f"{task}/{metric}"]["score_details"]
                assert got["score"] == cell["value"]
                method = cell.get("method", entry["intervals"][metric])  # a cell's own (Clopper-Pearson), or its metric's
                if cell["ci"] == [None, None]:  # the oracle's BLEU: every resample 100, and no interval says why
                    assert "confidence_interval" not in got["uncertainty"]
                    assert got["details"]["no_interval"] == cell["no_interval"]
                else:
                    ci = got["uncertainty"]["confidence_interval"]
                    assert [ci["lower"], ci["upper"]] == cell["ci"] and ci["method"] == method
                assert got["uncertainty"]["num_samples"] == cell["n"]
                resampled = "method" not in cell and "Wilson" not in method  # neither Wilson's nor the cell's own
                assert ("num_bootstrap_samples" in got["uncertainty"]) == resampled
        assert record["eval_library"]["additional_details"]["harness"] == "lm-eval"
        # a row per document and per-document metric: its score is the one lm-eval logged
        limur = [r for r in rows if r["evaluation_result_id"] == "qahub_limur/exact_match"]
        logged = _samples(run, "qahub_limur", out)
        assert [r["evaluation"]["score"] for r in limur] == [float(s["exact_match"]) for s in logged]
        assert not any(r["evaluation_result_id"].endswith(("/bleu", "/distinct_1")) for r in rows)


def _samples(run, task, out):
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    folder = Path(data["runs"][run]["results_file"]).parent
    path = next(folder.glob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_second_report_of_the_same_runs_writes_the_same_hub_files(hub_report, runs, tmp_path):
    out, _ = hub_report
    again = tmp_path / "again"
    assert cli.main(["--quiet", "report", *hub_args(runs), "--out", str(again), "--jobs", "1"]) == 0
    for folder in ("eval_results", "eee"):
        first = {p.relative_to(out): p.read_bytes() for p in (out / folder).rglob("*") if p.is_file()}
        second = {p.relative_to(again): p.read_bytes() for p in (again / folder).rglob("*") if p.is_file()}
        assert first == second and first
    # a report with its Hub files is a report: written again in place without --overwrite; a stray file is not
    assert cli.main(["--quiet", "report", *hub_args(runs), "--out", str(again), "--jobs", "1"]) == 0
    (again / "eee" / "notes.txt").write_text("mine", encoding="utf-8")
    assert cli.main(["--quiet", "report", *hub_args(runs), "--out", str(again), "--jobs", "1"]) == 1
    assert (again / "eee" / "notes.txt").exists()


@pytest.mark.parametrize("value, message", [("nocorpus=org/x", "no corpus 'nocorpus'"),
                                            ("limur=org", "name the repo as ORG/NAME"),
                                            ("limur", "expected CORPUS=ORG/NAME[@REVISION]")])
def test_a_bad_hub_dataset_argument_is_one_line_and_nothing_is_written(runs, tmp_path, capsys, value, message):
    argv = ["report", f"half={runs['half']}", "--hub-dataset", value, "--out", str(tmp_path / "o")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


def _task_run(path, signature=None):
    from types import SimpleNamespace

    return SimpleNamespace(task="qahub_jemhopqa", dataset=(path, "v1.1", "validation"), n_shot=0, signature=signature)


def _facts(task_run, given):
    """The Hub facts of a run's task, as ``hub_files`` makes them from the ``TaskRun`` the report read."""
    from types import SimpleNamespace

    from qahub.report import hub_files

    return hub_files.run_facts(SimpleNamespace(name="r", harness="another harness", samples={}), task_run,
                               "jemhopqa", given)


def test_a_run_that_loaded_its_corpus_from_the_hub_names_its_dataset_a_local_folder_never(tmp_path, monkeypatch):
    """Main took any recorded ORG/NAME that is not a folder here for a Hub id: a run made on a local export
    (``dataset_path: exports/jemhopqa``) reported from another folder was published as ``dataset.id:
    exports/jemhopqa``. A recorded id is taken only when the run's qahub signature names that id too."""
    from qahub.report import hub_files
    from qahub.signature import Signature

    hub = Signature(dataset="org/jemhopqa")
    facts = _facts(_task_run("org/jemhopqa", hub), {})
    assert facts.hub == hub_files.HubDataset("org/jemhopqa") and facts.instances is None
    given = {"jemhopqa": hub_files.HubDataset("org/jemhopqa", "v1")}
    assert _facts(_task_run("org/jemhopqa", hub), given).hub == given["jemhopqa"]
    local = Signature(dataset="jemhopqa", revision="sha256:0123456789abcdef")
    for signature in (local, None, Signature(dataset="org/jemhopqa")):  # the export's, none, another id's
        run = _task_run("exports/jemhopqa", signature)
        assert _facts(run, {}).hub is None
    # the local export named by --hub-dataset: its entries are that dataset's
    run = _task_run("exports/jemhopqa", local)
    assert _facts(run, given).hub == given["jemhopqa"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exports" / "jemhopqa").mkdir(parents=True)  # a local folder that looks like ORG/NAME
    run = _task_run("exports/jemhopqa", Signature(dataset="exports/jemhopqa"))
    assert _facts(run, {}).hub is None
    assert _facts(_task_run("/data/jemhopqa", local), {}).hub is None


@pytest.mark.parametrize("signature", [None, "local", "hub"])
def test_a_hub_dataset_other_than_the_one_the_run_read_is_refused_naming_both(signature):
    """Main published a run that read other-org/jemhopqa-fork under --hub-dataset org/jemhopqa without a word."""
    from qahub.report import hub_files
    from qahub.signature import Signature

    signed = {None: None, "local": Signature(dataset="jemhopqa", revision="sha256:0123456789abcdef"),
              "hub": Signature(dataset="other-org/jemhopqa-fork")}[signature]
    given = {"jemhopqa": hub_files.HubDataset("org/jemhopqa")}
    with pytest.raises(hub_files.HubResultsError) as caught:
        _facts(_task_run("other-org/jemhopqa-fork", signed), given)
    assert "org/jemhopqa" in str(caught.value) and "other-org/jemhopqa-fork" in str(caught.value)


def test_a_report_refuses_a_hub_dataset_its_run_did_not_read_in_one_line(runs, tmp_path, capsys):
    import shutil

    copy = shutil.copytree(runs["half"], tmp_path / "half")
    (results,) = copy.glob("results_*.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    data["configs"]["qahub_jemhopqa"]["dataset_path"] = "other-org/jemhopqa-fork"
    results.write_text(json.dumps(data), encoding="utf-8")
    argv = ["report", f"half={copy}", "--resamples", "200", "--hub-dataset", "jemhopqa=org/jemhopqa",
            "--out", str(tmp_path / "o"), "--jobs", "1"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "other-org/jemhopqa-fork" in err and "jemhopqa=org/jemhopqa" in err
    assert not (tmp_path / "o").exists()


def test_each_entry_names_the_config_and_split_its_run_read(hub_report):
    """Main's notes named neither: a JEMHopQA v1.1 and a v1.2 run gave entries no reader could tell apart."""
    out, data = hub_report
    results = json.loads(Path(data["runs"]["half"]["results_file"]).read_text(encoding="utf-8"))
    config = results["configs"]["qahub_limur"]
    (entry,) = _entries(out / "eval_results" / "half" / ".eval_results" / "qahub_limur.yaml")
    assert f"; config {config['dataset_name']}, split {config['test_split']};" in entry.notes


def test_a_run_s_date_is_the_one_it_recorded_never_a_file_s_time(tmp_path):
    """Main dated a run without lm-eval's ``date`` by its results file's (an inspect run: its log folder's)
    modification time: a copied or downloaded folder got a false date."""
    import os
    from types import SimpleNamespace

    from qahub.report import hub_files

    results = tmp_path / "results_2025-03-04T05-06-07.123456.json"
    results.write_text("{}", encoding="utf-8")
    os.utime(results, (1e9, 1e9))  # 2001
    lighteval = SimpleNamespace(harness="lighteval", results={}, results_file=str(results))
    assert hub_files.run_date(lighteval) == "2025-03-04T05:06:07Z"
    lm_eval = SimpleNamespace(harness="lm-eval", results={"date": 1700000000.5}, results_file=str(results))
    assert hub_files.run_date(lm_eval) == "2023-11-14T22:13:20Z"
    unnamed = SimpleNamespace(harness="lm-eval", results={}, results_file=str(tmp_path / "other.json"))
    assert hub_files.run_date(unnamed) is None


# --- publish-results, over HTTP against the Hub double


@pytest.fixture
def hub():
    double = HubDouble({TOKEN: {"org/details", "org/model-b"}, READER: set()})
    double.add_repo("model", "org/model-a", {"README.md": b"# a\n"})
    double.add_repo("model", "org/model-b", {"README.md": b"# b\n"})
    yield double
    double.close()


def publish(hub, out, *argv, token=TOKEN, tmp):
    env = {"HF_ENDPOINT": hub.url, "HF_TOKEN": token, "HF_HOME": str(tmp / "hf-home"), "HF_HUB_DISABLE_XET": "1"}
    return qahub("publish-results", str(out), *argv, env=env)


def test_publish_results_opens_pull_requests_and_pushes_details_load_dataset_reads(hub_report, hub, tmp_path):
    out, data = hub_report
    done = publish(hub, out, "--model", "half=org/model-a", "--model", "oracle=org/model-b",
                   "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    for repo_id, run in (("org/model-a", "half"), ("org/model-b", "oracle")):
        repo = hub.repos[("model", repo_id)]
        assert repo.pulls == ["refs/pr/1"] and set(repo.branches["main"]) == {"README.md"}  # main untouched
        added = {p: b for p, b in repo.branches["refs/pr/1"].items() if p.startswith(".eval_results/")}
        assert set(added) == {".eval_results/qahub_limur.yaml", ".eval_results/qahub_topical_chat_freq.yaml"}
        for path, body in added.items():
            (entry,) = parse_eval_result_entries(yaml.safe_load(body))
            task = Path(path).stem
            assert entry.value == data["tasks"][task]["scores"][run][data["tasks"][task]["main_metric"]]["value"]
            assert entry.source_url == f"{hub.url}/datasets/org/details"
        assert f"{hub.url}/org/{repo_id.split('/')[1]}/discussions/1" in done.stdout
    details = hub.repos[("dataset", "org/details")].branches["main"]
    assert {"README.md", "report/report.json", "report/report.html"} <= set(details)
    assert any(p.startswith("eee/half/") and p.endswith("_samples.jsonl") for p in details)
    assert "data/half/qahub_limur.parquet" in details
    # the details configs, read by datasets' own load_dataset from the double
    code = ("import datasets, json, sys; d = datasets.load_dataset('org/details', 'half-qahub_limur', "
            "split='scored'); print(json.dumps(d.to_list()))")
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN, "HF_HOME": str(tmp_path / "load-home"),
           "HF_HUB_DISABLE_XET": "1"}
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    rows = json.loads(loaded.stdout.splitlines()[-1])
    logged = _samples("half", "qahub_limur", out)
    assert [r["exact_match"] for r in rows] == [float(s["exact_match"]) for s in logged]
    assert all(r["input"] and r["reference"] is not None for r in rows)


def test_no_pr_commits_to_main_where_the_token_may_write_and_the_hub_reads_the_entries(hub_report, hub, tmp_path):
    from huggingface_hub import HfApi

    out, data = hub_report
    done = publish(hub, out, "--model", "oracle=org/model-b", "--no-pr", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    repo = hub.repos[("model", "org/model-b")]
    assert repo.pulls == [] and ".eval_results/qahub_limur.yaml" in repo.branches["main"]
    info = HfApi(endpoint=hub.url, token=TOKEN).model_info("org/model-b", expand=["evalResults"])
    values = {e.task_id: e.value for e in info.eval_results}
    assert values["qahub_limur"] == data["tasks"]["qahub_limur"]["scores"]["oracle"]["exact_match"]["value"]


@pytest.mark.parametrize("argv, token, line", [
    (["--model", "half=org/model-a", "--no-pr"], TOKEN,
     "model repo org/model-a: refused (403: the token may not write there)"),
    (["--model", "half=org/missing"], TOKEN, "model repo org/missing: refused (404: no such repo"),
    (["--model", "half=org/model-a"], "hf_notAtokenTheDoubleKnows99", "model repo org/model-a: refused (401: "),
    (["--model", "half=org/model-a", "--details", "org/details"], READER,
     "dataset repo org/details: refused (403: the token may not write there)"),
])
def test_a_refused_push_is_one_line_without_the_token(hub_report, hub, tmp_path, argv, token, line):
    out, _ = hub_report
    done = publish(hub, out, *argv, token=token, tmp=tmp_path)
    assert done.returncode == 1
    errors = [text for text in done.stderr.splitlines() if "refused" in text or "Traceback" in text]
    assert len(errors) == 1 and line in errors[0], done.stderr
    assert token not in done.stdout + done.stderr


def test_dry_run_lists_every_file_and_destination_and_sends_nothing(hub_report, hub, tmp_path):
    out, _ = hub_report
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", "--dry-run", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hub.requests == []
    assert "would open a pull request on model repo org/model-a:" in done.stdout
    assert "  .eval_results/qahub_limur.yaml (" in done.stdout
    assert "would commit to the main branch of dataset repo org/details (made private if new):" in done.stdout
    for name in ("README.md", "report/report.json", "data/half/qahub_limur.parquet"):
        assert f"  {name} (" in done.stdout
    assert done.stdout.rstrip().endswith("dry run: nothing sent")


def test_publish_results_refuses_a_report_without_hub_files_and_an_unknown_run(runs, hub_report, tmp_path, hub):
    plain = tmp_path / "plain"
    assert cli.main(["--quiet", "report", f"half={runs['half']}", "--resamples", "200", "--out", str(plain),
                     "--jobs", "1"]) == 0
    done = publish(hub, plain, "--model", "half=org/model-a", tmp=tmp_path)
    assert done.returncode == 1 and "written without --hub-dataset" in done.stderr
    done = publish(hub, hub_report[0], "--model", "nobody=org/model-a", tmp=tmp_path)
    assert done.returncode == 1 and "the report has no run 'nobody'" in done.stderr
    assert hub.requests == []


def test_a_damaged_samples_file_is_one_line_naming_it_and_nothing_is_sent(hub_report, hub, tmp_path):
    import shutil

    copy = shutil.copytree(hub_report[0], tmp_path / "copy")
    (samples,) = (copy / "eee" / "half").glob("*_samples.jsonl")
    lines = samples.read_text(encoding="utf-8").splitlines()
    samples.write_text("\n".join([lines[0], lines[1][:40], *lines[2:]]) + "\n", encoding="utf-8")
    done = publish(hub, copy, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 1 and hub.requests == []
    assert done.stderr.count("\n") == 1 and f"{samples}: line 2: not an instance row qahub wrote" in done.stderr


def test_a_re_push_deletes_the_earlier_push_s_files_in_the_folders_it_owns_only(hub_report, hub, tmp_path):
    """The details dataset holds an earlier push (a task since dropped, an old figure, a run no longer reported)
    and files of its owner outside qahub's folders. Main: the old ones stayed beside the new, and a run of an
    earlier report kept its data/ while the README's configs no longer named it."""
    out, _ = hub_report
    earlier = {"data/half/qahub_dropped.parquet": b"old", "eee/half/0000-old.json": b"{}",
               "report/figures/dropped.png": b"png", "runs/half/results_2000-01-01T00-00-00.json": b"{}",
               "data/someone/qahub_limur.parquet": b"theirs", "eee/someone/1111.json": b"{}",
               "runs/someone/results_2000-01-01T00-00-00.json": b"{}", "data/half-2/x.parquet": b"not data/half/"}
    others = {"notes.md": b"mine", "reporting/z.txt": b"not report/"}
    card = b"# qahub evaluation details\n\nRuns: half. Written by `qahub publish-results` from a `qahub report`.\n"
    repo = hub.add_repo("dataset", "org/details", {"README.md": card, **earlier, **others})
    dry = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", "--dry-run", tmp=tmp_path)
    assert "  and delete any other file under report/, eee/, data/, runs/ an earlier push of qahub's wrote (its " \
           ".qahub/manifest.json lists them: a details dataset holds one report)" in dry.stdout and hub.requests == []
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    files = repo.branches["main"]
    assert not set(earlier) & set(files) and sorted(path for _, path in repo.deleted) == sorted(earlier)
    assert {path: files[path] for path in others} == others  # never a file outside qahub's folders
    assert "data/half/qahub_limur.parquet" in files and "report/report.json" in files and files["README.md"] != card
    assert "dataset repo org/details (public, an existing repo: " in done.stdout
    assert ", 8 earlier files deleted, commit " in done.stdout


def test_a_failure_message_is_scrubbed_before_it_is_cut_so_no_piece_of_the_token_is_printed(monkeypatch):
    """Main cut the message to 300 characters and then scrubbed it: a token cut in two was not recognised and
    its first characters were printed."""
    from qahub.report.publish import Upload, refusal

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    upload = Upload("org/details", "dataset", False, "message")
    for before in range(280, 300):  # the token cut anywhere: main printed "hf_doubl" and the like
        line = refusal(upload, RuntimeError("x" * before + f" {TOKEN} rest"))
        assert "hf_d" not in line, line


def test_eval_results_notes_and_eee_details_of_a_run_resampled_by_document_name_no_cluster():
    """A run of a clustered task that records no conversation (an old inspect log): main wrote "n=20 documents in
    None conversations", "no 95% CI (too few documents)" and resampled_by "conversation"."""
    from types import SimpleNamespace

    from qahub.report import hub_files
    from qahub.report.model import Cell

    entry = SimpleNamespace(  # the parts of a model.TaskReport the Hub files read
        main_metric="f1", intervals={"f1": "percentile bootstrap over conversations"},
        scores={"old": {"f1": Cell(0.5, (None, None), 20)},
                "new": {"f1": Cell(0.5, (None, None), 20, no_interval="1 conversation: no interval")}},
        cluster={"field": "conversation",
                 "runs": {"old": {"clusters": None, "documents": 20, "design_effect": {},
                                  "by_document": "the run records no conversation"},
                          "new": {"clusters": 1, "documents": 20, "design_effect": {}, "by_document": None}}})
    settings = {"confidence": 0.95, "resamples": 50}
    fact = hub_files.Facts("topical_chat", None, (), 0, None)
    notes = {name: hub_files.notes_line(SimpleNamespace(name=name, harness="inspect", results={}), "t", fact, entry,
                                          settings) for name in ("old", "new")}
    assert "n=20 documents;" in notes["old"] and "None" not in notes["old"]
    assert "no 95% CI (no resample had a value)" in notes["old"]
    assert "n=20 documents in 1 conversation;" in notes["new"] and "no 95% CI (1 conversation: no interval)" in notes["new"]
    details = {name: hub_files.score_details(entry.scores[name]["f1"], entry, "f1", settings, name)["details"]
               for name in ("old", "new")}
    assert details["old"]["resampled_by"] == "document" and details["new"]["resampled_by"] == "conversation"


def test_a_cell_s_own_interval_method_is_the_one_published(hub_report):
    """A score whose values are all 0 or all the scale (the oracle's Topical-Chat f1: 1 on every turn) has a
    Clopper-Pearson interval, its own method: the EEE record and the notes name it, not the metric's bootstrap."""
    out, data = hub_report
    entry = data["tasks"]["qahub_topical_chat_freq"]
    cell = entry["scores"]["oracle"][entry["main_metric"]]
    assert cell["method"].startswith("Clopper-Pearson") and cell["ci"][0] < cell["value"] == cell["ci"][1]
    _, record = _record(out, "oracle")
    (result,) = [r for r in record["evaluation_results"]
                 if r["evaluation_result_id"] == f"qahub_topical_chat_freq/{entry['main_metric']}"]
    uncertainty = result["score_details"]["uncertainty"]
    assert uncertainty["confidence_interval"]["method"] == cell["method"] and "num_bootstrap_samples" not in uncertainty
    (notes,) = _entries(out / "eval_results" / "oracle" / ".eval_results" / "qahub_topical_chat_freq.yaml")
    assert f"({cell['method']})" in notes.notes


def test_a_details_dataset_qahub_did_not_write_is_left_as_it_is(hub_report, hub, tmp_path):
    """An existing dataset with its own card: main replaced its README with qahub's (and would delete its files
    under report/ now). Nothing is sent to it, nor to the model (whose entries would point at it)."""
    out, _ = hub_report
    theirs = {"README.md": b"---\nlicense: mit\n---\n# My own dataset\n", "report/mine.txt": b"mine"}
    repo = hub.add_repo("dataset", "org/details", dict(theirs))
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 1
    assert "qahub publish-results: dataset repo org/details: its README.md is not one qahub publish-results wrote " \
           "(another dataset?); nothing sent" in done.stderr
    assert repo.branches["main"] == theirs and repo.commits == []
    assert hub.repos[("model", "org/model-a")].pulls == []


# --- publish-results: only what is ours, in order, nothing secret, private unless asked (issue 42)


FOREIGN = b"- dataset:\n    id: someone/limur\n    task_id: qahub_limur\n  value: 0.9\n"  # another tool's entry


@pytest.mark.parametrize("no_pr", [False, True])
def test_another_tool_s_eval_results_file_is_refused_naming_it_and_nothing_is_sent(hub_report, hub, tmp_path, no_pr):
    """Main replaced it, in a commit to main with --no-pr or in the pull request."""
    out, _ = hub_report
    repo = hub.repos[("model", "org/model-b")]
    repo.branches["main"][".eval_results/qahub_limur.yaml"] = FOREIGN
    done = publish(hub, out, "--model", "oracle=org/model-b", "--details", "org/details",
                   *(["--no-pr"] if no_pr else []), tmp=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "model repo org/model-b: .eval_results/qahub_limur.yaml is already there and qahub did not write it " \
           "(another tool's results?)" in done.stderr and "(nothing sent)" in done.stderr
    assert repo.branches["main"][".eval_results/qahub_limur.yaml"] == FOREIGN and repo.commits == []
    assert ("dataset", "org/details") not in hub.repos  # not even the details dataset was made


def test_a_file_qahub_pushed_is_replaced_by_its_next_push(hub_report, hub, tmp_path):
    out, _ = hub_report
    for _ in range(2):
        done = publish(hub, out, "--model", "oracle=org/model-b", "--no-pr", tmp=tmp_path)
        assert done.returncode == 0, done.stderr
    repo = hub.repos[("model", "org/model-b")]
    assert len(repo.commits) == 2
    assert repo.branches["main"][".eval_results/qahub_limur.yaml"].startswith(b"# Written by qahub publish-results")
    (entry,) = parse_eval_result_entries(yaml.safe_load(repo.branches["main"][".eval_results/qahub_limur.yaml"]))
    assert entry.task_id == "qahub_limur"  # qahub's first line is a YAML comment: the Hub's parser reads past it


def test_someone_else_s_dataset_without_a_readme_is_neither_emptied_nor_written(hub_report, hub, tmp_path):
    """Main's check looked at the README only: a dataset without one lost its
    data/train-00000-of-00001.parquet ("1 earlier files deleted")."""
    out, _ = hub_report
    theirs = {"data/train-00000-of-00001.parquet": b"PAR1 theirs"}
    repo = hub.add_repo("dataset", "org/details", dict(theirs))
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "dataset repo org/details: holds files qahub publish-results did not write " \
           "(data/train-00000-of-00001.parquet) and no .qahub/manifest.json" in done.stderr
    assert repo.branches["main"] == theirs and repo.commits == [] and repo.deleted == []
    assert hub.repos[("model", "org/model-a")].pulls == []


def test_a_re_push_replaces_and_deletes_only_the_files_its_manifest_lists(hub_report, hub, tmp_path):
    out, _ = hub_report
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    repo = hub.repos[("dataset", "org/details")]
    listed = json.loads(repo.branches["main"][".qahub/manifest.json"])["files"]
    assert set(listed) == set(repo.branches["main"]) - {".qahub/manifest.json"}
    # the owner adds a file of their own; an earlier push's file is one this push no longer makes
    repo.branches["main"]["data/half/mine.parquet"] = b"mine"
    repo.branches["main"]["eee/half/old.json"] = b"{}"
    manifest = json.loads(repo.branches["main"][".qahub/manifest.json"])
    manifest["files"]["eee/half/old.json"] = "0" * 64
    repo.branches["main"][".qahub/manifest.json"] = json.dumps(manifest).encode()
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [path for _, path in repo.deleted] == ["eee/half/old.json"]
    assert repo.branches["main"]["data/half/mine.parquet"] == b"mine"
    # a file of the owner's where this push would write one of its own: refused, naming it
    repo.branches["main"]["report/report.md"] = b"# the owner's notes"
    manifest = json.loads(repo.branches["main"][".qahub/manifest.json"])
    del manifest["files"]["report/report.md"]
    repo.branches["main"][".qahub/manifest.json"] = json.dumps(manifest).encode()
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 1 and "report/report.md is already there and qahub did not write it" in done.stderr
    assert repo.branches["main"]["report/report.md"] == b"# the owner's notes"


def test_a_failed_details_push_opens_no_pull_request_and_a_re_run_updates_its_own(hub_report, hub, tmp_path):
    """Main opened the model's pull request first: when the details commit failed (500) its source.url pointed at
    an empty dataset, and a re-run opened a second pull request."""
    out, _ = hub_report
    hub.add_repo("dataset", "org/details").failing = True
    argv = ("--model", "half=org/model-a", "--details", "org/details")
    done = publish(hub, out, *argv, tmp=tmp_path)
    assert done.returncode == 1 and "dataset repo org/details: failed (" in done.stderr
    assert "no model pull request opened" in done.stderr
    model = hub.repos[("model", "org/model-a")]
    assert model.pulls == [] and model.commits == []
    hub.repos[("dataset", "org/details")].failing = False
    for attempt in range(2):
        done = publish(hub, out, *argv, tmp=tmp_path)
        assert done.returncode == 0, done.stderr
        assert model.pulls == ["refs/pr/1"] and len(model.commits) == attempt + 1
    assert "model repo org/model-a: 2 files, its open pull request refs/pr/1 updated" in done.stdout
    assert [ref for ref, _, _ in model.commits] == ["refs/pr/1", "refs/pr/1"]


def test_the_details_dataset_is_private_unless_public_is_given_and_the_command_says_which(hub_report, hub, tmp_path):
    """Main made it public, with every prompt, reference and reply; there was no way to ask otherwise."""
    out, _ = hub_report
    hub.tokens[TOKEN] |= {"org/open-details"}
    done = publish(hub, out, "--model", "half=org/model-a", "--details", "org/details", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hub.repos[("dataset", "org/details")].private is True
    assert "dataset repo org/details (private, made now): " in done.stdout
    done = publish(hub, out, "--model", "oracle=org/model-b", "--details", "org/open-details", "--public",
                   tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hub.repos[("dataset", "org/open-details")].private is False
    assert "dataset repo org/open-details (public, made now): " in done.stdout


def _pushed_text(hub) -> str:
    """Every byte pushed to the double, raw and (a zip's members, a Parquet file's values) as text."""
    from qahub.outgoing import readable

    found = []
    for repo in hub.repos.values():
        for files in repo.branches.values():
            for name, body in files.items():
                found += [body.decode("latin-1"), readable(name, body)]
    return "\n".join(found)


def test_nothing_published_holds_a_credential_or_a_local_path(runs, hub, tmp_path):
    """Main pushed ``model_args`` with ``token=hf_...`` and a URL's password verbatim in runs/<run>/results_*.json,
    and report.json / report.md / report.html with the runs' absolute paths (the user's and project's names)."""
    import hashlib
    import shutil

    home = tmp_path / "home" / "alice"
    planted = {"half": f"pretrained={home}/models/my-model,token=hf_PLANTEDtoken0123456789,"
                       "base_url=https://bob:hunter2pw@mirror.example/v1",
               "oracle": {"pretrained": f"{home}/models/deep/er/m", "api_key": "sk-PLANTEDkey987",
                          "endpoint": "https://bob:hunter2pw@mirror.example"}}  # a dict, a URL in another field
    args = []
    for run, model_args in planted.items():
        folder = shutil.copytree(runs[run], home / "projects" / "secret-project" / run)
        (results,) = folder.glob("results_*.json")
        data = json.loads(results.read_text(encoding="utf-8"))
        data["config"]["model_args"] = model_args
        results.write_text(json.dumps(data), encoding="utf-8")
        args.append(f"{run}={folder}")
    # a prompt holding a URL with a password: the samples file, and so the EEE rows, change when cleaned
    (samples,) = (home / "projects" / "secret-project" / "half").glob("samples_qahub_limur_*.jsonl")
    text = samples.read_text(encoding="utf-8")
    samples.write_text(text.replace('"arg_0": "', '"arg_0": "https://bob:hunter2pw@mirror.example/x ', 1),
                       encoding="utf-8")
    assert "hunter2pw" in samples.read_text(encoding="utf-8")
    out = home / "reports" / "out"
    assert cli.main(["--quiet", "report", *args, "--resamples", "200", "--hub-dataset", "limur=qahub/limur",
                     "--out", str(out), "--jobs", "1"]) == 0
    assert str(home) in (out / "report.json").read_text(encoding="utf-8")  # the local report keeps them
    env = {"HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_XET": "1",
           "HOME": str(home)}
    done = qahub("publish-results", str(out), "--model", "half=org/model-a", "--model", "oracle=org/model-b",
                 "--details", "org/details", env=env)
    assert done.returncode == 0, done.stderr
    pushed = _pushed_text(hub)
    assert "runs/half/results_" in pushed and "my-model" in pushed  # the files went, their paths made relative
    for secret in ("hf_PLANTEDtoken0123456789", "sk-PLANTEDkey987", "hunter2pw", str(home), "alice",
                   "secret-project", str(tmp_path), TOKEN):
        assert secret not in pushed, secret
    details = hub.repos[("dataset", "org/details")].branches["main"]
    for name, body in details.items():  # each EEE record's checksum is its samples file's as pushed
        if name.startswith("eee/") and name.endswith("_samples.jsonl"):
            record = json.loads(details[name.removesuffix("_samples.jsonl") + ".json"])
            assert record["detailed_evaluation_results"]["checksum"] == hashlib.sha256(body).hexdigest()
