"""``qahub report hf://datasets/...`` (issue 37 item 5): runs published by lm-eval (``--hf_hub_log_args``, its
``EvaluationTracker`` pushing results and samples) and by lighteval (``--push-to-hub``, its ``EvaluationTracker``)
to the Hub double, read back as report inputs. The harnesses push in a subprocess whose huggingface_hub talks to
the double (``HF_ENDPOINT`` is read at import), with the suite's model doubles; each also writes its local folder,
so the report of the published runs is compared with the report of the same runs read from disk."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
pytest.importorskip("lighteval", reason="lighteval is the [lighteval] extra")

from hub_double import HubDouble  # noqa: E402
from test_harness import GARBAGE, Oracle, locations, task_dir  # noqa: E402, F401  (fixtures)
from test_report import Half  # noqa: E402

from qahub.report import ReportError, hub_runs  # noqa: E402

TOKEN = "hf_qahubReportHubTestToken0123456789"
ORG = "qa-lab"
LM_EVAL_REPO = f"{ORG}/lm-eval-results"  # lm-eval's default details_repo_name
LIGHTEVAL_REPO = f"{ORG}/details_scripted"  # lighteval's details_<model> (the Scripted model's name)
QAHUB_REPO = f"{ORG}/qahub-details"  # qahub publish-results --details of the local report of the same runs
MODEL_REPO = f"{ORG}/half"
TASKS = ["qahub_jemhopqa", "qahub_limur", "qahub_topical_chat_freq"]
OTHER = "other_arithmetic"  # not a qahub task: the half run has it too, the report skips it, nothing downloads it
FEWSHOT = 2


# --- what runs in the pushing subprocess


def publish_runs(task_folder: str, data: str, out: str):
    """lm-eval's runs ``qa-lab/half`` (TASKS) and ``qa-lab/oracle`` (TASKS, then TASKS[0] again: two results
    files) to LM_EVAL_REPO, lighteval's ``scripted`` run to LIGHTEVAL_REPO; their local folders in ``out``."""
    _push_lm_eval(task_folder, Path(out) / "lm-eval")
    _push_lighteval(data, Path(out) / "lighteval")


def _push_lm_eval(task_folder, out):
    """As ``lm_eval --output_path out --log_samples --hf_hub_log_args hub_results_org=qa-lab,
    push_results_to_hub=True,push_samples_to_hub=True,public_repo=True`` calls the tracker (lm_eval/_cli/run.py)."""
    from huggingface_hub import HfFileSystem
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=[task_folder, str(_other_task(out.parent / "other-task"))])
    runs = (("half", Half, [*TASKS, OTHER]), ("oracle", Oracle, TASKS), ("oracle", Oracle, TASKS[:1]))
    for model, kind, tasks in runs:
        HfFileSystem.clear_instance_cache()  # each lm_eval command is a process: no listing of the one before
        tracker = EvaluationTracker(output_path=str(out), hub_results_org=ORG, push_results_to_hub=True,
                                    push_samples_to_hub=True, public_repo=True, token=os.environ["HF_TOKEN"])
        result = simple_evaluate(model=kind(manager), model_args=f"pretrained={ORG}/{model}", tasks=tasks,
                                 task_manager=manager, bootstrap_iters=0, log_samples=True,
                                 evaluation_tracker=tracker)
        samples = result.pop("samples")
        tracker.save_results_aggregated(results=result, samples=samples)
        for task in result["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
        tracker.recreate_metadata_card()


def _other_task(folder: Path) -> Path:
    """An lm-eval task of another benchmark (two questions in a local JSON file), run beside the qahub tasks."""
    folder.mkdir(parents=True)
    (folder / "questions.jsonl").write_text('{"question": "2+2?", "answer": "4"}\n'
                                            '{"question": "3+3?", "answer": "6"}\n', encoding="utf-8")
    (folder / f"{OTHER}.yaml").write_text(
        f"task: {OTHER}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {folder / 'questions.jsonl'}\n"
        "test_split: test\noutput_type: generate_until\ndoc_to_text: '{{question}}'\ndoc_to_target: '{{answer}}'\n"
        "generation_kwargs:\n  until: ['\\n']\nmetric_list:\n  - metric: exact_match\n", encoding="utf-8")
    return folder


def _push_lighteval(data, out):
    """As ``lighteval custom ... --custom-tasks qahub.lighteval_tasks --output-dir out --save-details
    --push-to-hub --results-org qa-lab --public-run`` (the pipeline and tracker of test_lighteval_tasks)."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters
    from test_lighteval_tasks import Scripted

    from qahub import lighteval_tasks

    os.environ[lighteval_tasks.ENV] = data
    with lighteval_tasks.custom_tasks_only():
        lighteval_tasks.tasks_table(data)
        script = {}
        for name in TASKS:
            for index, sample in enumerate(lighteval_tasks._LOADED[name].samples(FEWSHOT)):
                script[sample.input] = sample.target if index % 3 == 0 else GARBAGE[index % len(GARBAGE)]
        tracker = EvaluationTracker(output_dir=str(out), save_details=True, push_to_hub=True, hub_results_org=ORG,
                                    public=True)
        parameters = PipelineParameters(launcher_type=ParallelismManager.NONE, bootstrap_iters=0,
                                        custom_tasks_directory="qahub.lighteval_tasks")
        pipeline = Pipeline(tasks=",".join(f"{n}|{FEWSHOT}" for n in TASKS), pipeline_parameters=parameters,
                            evaluation_tracker=tracker, model=Scripted(script, out))
        pipeline.evaluate()
        pipeline.save_and_push_results()


# --- fixtures


def hub_env(hub, home: Path, token=TOKEN, **more) -> dict:
    """The environment of a process whose huggingface_hub talks to the double, with its cache in ``home``."""
    env = {name: value for name, value in os.environ.items() if name not in ("HF_HUB_OFFLINE", "HF_TOKEN")}
    return {**env, "HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_DISABLE_XET": "1", "MPLBACKEND": "Agg",
            "HF_TOKEN": token, **more}


@pytest.fixture(scope="module")
def hub():
    double = HubDouble({TOKEN: {LM_EVAL_REPO, LIGHTEVAL_REPO, QAHUB_REPO}})
    double.add_repo("model", MODEL_REPO, {"README.md": b"# half\n"})  # publish-results' pull request goes there
    yield double
    double.close()


@pytest.fixture(scope="module")
def published(hub, task_dir, sample_exports, tmp_path_factory):  # noqa: F811
    """The local folders of the runs the harnesses pushed to the double."""
    root = tmp_path_factory.mktemp("published")
    data = ",".join(f"{corpus}={folder}" for corpus, folder in sample_exports.items())
    tests = str(Path(__file__).parent)
    code = (f"import sys; sys.path.insert(0, {tests!r}); import test_report_hub as t; "
            f"t.publish_runs({str(task_dir)!r}, {data!r}, {str(root)!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=hub_env(hub, root / "push-home", QAHUB_LIGHTEVAL_DATA=data))
    assert done.returncode == 0, done.stderr[-4000:]
    return root


def qahub(*argv, env):
    return subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", *argv], capture_output=True, text=True,
                          env=env)


def report(out: Path, runs: list, env=None) -> dict:
    done = qahub("report", *runs, "--out", str(out), "--resamples", "200", "--jobs", "1",
                 env=env or {**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert TOKEN not in done.stdout + done.stderr
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def comparable(data: dict) -> dict:
    """report.json less where each run was read from."""
    data = copy.deepcopy(data)
    for run in data["runs"].values():
        for key in ("path", "results_file", "results_files", "source", "files"):
            run.pop(key)
    return data


def local_runs(published: Path) -> list:
    lm_eval = published / "lm-eval"
    return [str(lm_eval / f"{ORG}__half"), str(lm_eval / f"{ORG}__oracle"), str(published / "lighteval")]


@pytest.fixture(scope="module")
def local_report(published, tmp_path_factory):
    return report(tmp_path_factory.mktemp("local") / "out", local_runs(published))


def publish(hub, home: Path, *argv):
    return qahub("publish-results", *map(str, argv), env=hub_env(hub, home))


@pytest.fixture(scope="module")
def qahub_details(hub, published, tmp_path_factory):
    """A report of the local runs (--hub-dataset: what publish-results needs) published with --details to
    QAHUB_REPO, then the report of hf://datasets/QAHUB_REPO, online and offline (and the requests the double
    received during the offline call); ``(online, offline, requests, home, published report)``."""
    root = tmp_path_factory.mktemp("qahub-details")
    out = root / "published"
    done = qahub("report", *local_runs(published), "--out", str(out), "--resamples", "200", "--jobs", "1",
                 "--hub-dataset", "jemhopqa=qa-lab/jemhopqa", "--hub-dataset", "limur=qa-lab/limur",
                 "--hub-dataset", "topical_chat=qa-lab/topical-chat", env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-4000:]
    done = publish(hub, root / "push-home", out, "--model", f"{ORG}/half={MODEL_REPO}", "--details", QAHUB_REPO)
    assert done.returncode == 0, done.stderr[-4000:]
    runs = [f"hf://datasets/{QAHUB_REPO}"]
    online = report(root / "online", runs, hub_env(hub, root / "home"))
    before = len(hub.requests)
    offline = report(root / "offline", runs, hub_env(hub, root / "home", HF_HUB_OFFLINE="1"))
    return online, offline, hub.requests[before:], root / "home", out


@pytest.fixture(scope="module")
def hub_reports(hub, published, tmp_path_factory):
    """The report of the two details repos read from the double, then again offline (HF_HUB_OFFLINE=1), and
    the requests the double received during the offline call (none expected)."""
    root = tmp_path_factory.mktemp("from-hub")
    runs = [f"hf://datasets/{LM_EVAL_REPO}", f"hf://datasets/{LIGHTEVAL_REPO}"]
    online = report(root / "online", runs, hub_env(hub, root / "home"))
    before = len(hub.requests)
    offline = report(root / "offline", runs, hub_env(hub, root / "home", HF_HUB_OFFLINE="1"))
    return online, offline, hub.requests[before:], root / "home"


# --- the published runs read back


def test_the_harnesses_pushed_their_details_repos(hub, published):
    lm_eval = hub.repos[("dataset", LM_EVAL_REPO)].branches["main"]
    for model in ("half", "oracle"):
        assert any(p.startswith(f"{ORG}__{model}/samples_{TASKS[1]}_") for p in lm_eval), sorted(lm_eval)
        assert any(p.startswith(f"{ORG}/{model}/results_") for p in lm_eval)  # lm-eval's copy of the results
    assert len([p for p in lm_eval if p.startswith(f"{ORG}__oracle/samples_{TASKS[0]}_")]) == 2  # two runs
    assert any(p.startswith(f"{ORG}__half/samples_{OTHER}_") for p in lm_eval)
    lighteval = hub.repos[("dataset", LIGHTEVAL_REPO)].branches["main"]
    assert {p for p in lighteval if p.endswith(".parquet") and "/details_" in p} and "README.md" in lighteval


def test_published_runs_report_as_their_local_folders_online_and_offline(local_report, hub_reports):
    online, offline, requests, _ = hub_reports
    assert list(online["runs"]) == [f"{ORG}/half", f"{ORG}/oracle", "scripted"]
    assert set(online["tasks"]) == set(TASKS)
    assert online["skipped"] == [{"run": f"{ORG}/half", "task": OTHER, "reason": "not a qahub task"}]
    assert comparable(online) == comparable(local_report)
    assert comparable(offline) == comparable(local_report) and not requests  # from the cache alone
    sources = {name: run["path"] for name, run in online["runs"].items()}  # the commit read is pinned
    assert sources[f"{ORG}/half"].startswith(f"hf://datasets/{LM_EVAL_REPO}/{ORG}__half@"), sources
    assert sources["scripted"].startswith(f"hf://datasets/{LIGHTEVAL_REPO}@")


def _cached(home: Path, repo_id: str) -> set:
    (snapshot,) = (home / "hub" / f"datasets--{repo_id.replace('/', '--')}" / "snapshots").iterdir()
    return {p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if not p.is_dir()}


def test_only_the_files_the_report_reads_are_downloaded(hub, hub_reports):
    home = hub_reports[3]
    lm_eval = hub.repos[("dataset", LM_EVAL_REPO)].branches["main"]
    folder = f"{ORG}__oracle"
    dates = sorted(p.split("results_")[1][:-5] for p in lm_eval if p.startswith(f"{folder}/results_"))
    wanted = {p for p in lm_eval if p.startswith(f"{ORG}__") and "/results_" in p}  # the results of each model
    wanted |= {f"{ORG}__half/samples_{task}_{_date(lm_eval, 'half')}.jsonl" for task in TASKS}
    wanted |= {f"{folder}/samples_{TASKS[0]}_{dates[1]}.jsonl"}  # the newest run of TASKS[0]
    wanted |= {f"{folder}/samples_{task}_{dates[0]}.jsonl" for task in TASKS[1:]}
    assert _cached(home, LM_EVAL_REPO) == wanted  # not the older TASKS[0] samples, OTHER's, README, qa-lab/<model>/
    lighteval = hub.repos[("dataset", LIGHTEVAL_REPO)].branches["main"]
    wanted = {p for p in lighteval if p.startswith("results_") and p.endswith(".json")}
    wanted |= {p for p in lighteval if "/details_" in p}
    assert _cached(home, LIGHTEVAL_REPO) == wanted  # not the results' parquet copy nor the README
    assert {p for p in lighteval if p.endswith(".parquet") and p.startswith("results_")}


def _date(files, model):
    (date,) = {p.split("results_")[1][:-5] for p in files if p.startswith(f"{ORG}__{model}/results_")}
    return date


def test_a_path_picks_one_model_folder_which_a_name_may_name(hub, published, tmp_path):
    env = hub_env(hub, tmp_path / "home")
    data = report(tmp_path / "one", [f"oracle=hf://datasets/{LM_EVAL_REPO}/{ORG}__oracle"], env)
    assert list(data["runs"]) == ["oracle"]
    assert {p.split("/")[0] for p in _cached(tmp_path / "home", LM_EVAL_REPO)} == {f"{ORG}__oracle"}
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    done = qahub("report", f"mine=hf://datasets/{LM_EVAL_REPO}", "--out", str(tmp_path / "two"), env=offline)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].endswith(
        f"mine=hf://datasets/{LM_EVAL_REPO}: holds 2 models ({ORG}__half, {ORG}__oracle); name one run by giving "
        "its folder: hf://datasets/ORG/NAME/FOLDER")
    # offline, the whole repo needs qa-lab__half's files, which this cache does not hold
    done = qahub("report", f"hf://datasets/{LM_EVAL_REPO}", "--out", str(tmp_path / "three"), env=offline)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(
        f"hf://datasets/{LM_EVAL_REPO}: not in the Hub cache ({tmp_path / 'home' / 'hub'}), or not every file the "
        "report reads, and HF_HUB_OFFLINE is set; read it once online first")


def test_a_local_snapshot_of_a_details_repo_reads_as_the_repo(hub_reports, tmp_path):
    """The lighteval repo as the Hub cache's snapshot folder, the lm-eval one as ``hf download --local-dir``."""
    online, _, _, home = hub_reports
    (snapshot,) = (home / "hub" / f"datasets--{LM_EVAL_REPO.replace('/', '--')}" / "snapshots").iterdir()
    (lighteval,) = (home / "hub" / f"datasets--{LIGHTEVAL_REPO.replace('/', '--')}" / "snapshots").iterdir()
    local_dir = tmp_path / "local-dir"
    shutil.copytree(snapshot, local_dir)  # the files themselves, not the cache's links
    (local_dir / ".cache" / "huggingface" / "download").mkdir(parents=True)
    data = report(tmp_path / "out", [str(local_dir), str(lighteval)])
    assert comparable(data) == comparable(online)
    assert data["runs"][f"{ORG}/half"]["path"] == str(local_dir / f"{ORG}__half")


@pytest.mark.parametrize("argument, offline, token, line", [
    ("hf://datasets/qa-lab/missing", False, TOKEN,
     "hf://datasets/qa-lab/missing: no dataset repo qa-lab/missing on {url} (or it is private and the token may "
     "not read it)"),
    (f"hf://datasets/{LM_EVAL_REPO}@v9", False, TOKEN,
     f"hf://datasets/{LM_EVAL_REPO}@v9: dataset repo {LM_EVAL_REPO} has no revision 'v9'"),
    (f"hf://datasets/{LM_EVAL_REPO}/qa-lab__nobody", False, TOKEN,
     f"hf://datasets/{LM_EVAL_REPO}/qa-lab__nobody: no folder 'qa-lab__nobody' in the repo"),
    (f"hf://datasets/{LM_EVAL_REPO}", False, "hf_notAtokenTheDoubleKnows99",
     f"hf://datasets/{LM_EVAL_REPO}: refused (401: no valid token for dataset repo {LM_EVAL_REPO}; set HF_TOKEN "
     "or log in)"),
    (f"hf://datasets/{LIGHTEVAL_REPO}", True, TOKEN,
     f"hf://datasets/{LIGHTEVAL_REPO}: not in the Hub cache"),
    ("hf://models/qa-lab/model", False, TOKEN,
     "hf://models/qa-lab/model: only dataset repos are read: hf://datasets/ORG/NAME[/PATH][@REV]"),
])
def test_a_repo_path_or_revision_that_cannot_be_read_is_one_line(hub, published, tmp_path, argument, offline, token,
                                                                  line):
    env = hub_env(hub, tmp_path / "home", token=token, **({"HF_HUB_OFFLINE": "1"} if offline else {}))
    done = qahub("report", argument, "--out", str(tmp_path / "out"), env=env)
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    assert "Traceback" not in done.stderr and token not in done.stdout + done.stderr
    (said,) = [text for text in done.stderr.splitlines() if argument in text]
    assert line.format(url=hub.url) in said, done.stderr


# --- without the Hub


@pytest.mark.parametrize("text, repo, path, revision", [
    ("hf://datasets/org/name", "org/name", "", None),
    ("hf://datasets/org/name/", "org/name", "", None),
    ("hf://datasets/org/name/org__model", "org/name", "org__model", None),
    ("hf://datasets/org/name/org__model@v1", "org/name", "org__model", "v1"),
    ("hf://datasets/org/name@v1", "org/name", "", "v1"),
    ("hf://datasets/org/name@refs/pr/1", "org/name", "", "refs/pr/1"),
    ("hf://datasets/org/name@refs%2Fpr%2F1/org__model", "org/name", "org__model", "refs/pr/1"),  # HfFileSystem's
])
def test_an_address_names_repo_path_and_revision(text, repo, path, revision):
    assert hub_runs.parse_address(text) == hub_runs.Address(text, repo, path, revision)


@pytest.mark.parametrize("text", ["hf://datasets/org", "hf://datasets/org/name@", "hf://datasets/org/na me"])
def test_a_malformed_address_is_one_line(text):
    with pytest.raises(ReportError, match=f"^{text}: "):
        hub_runs.parse_address(text)


def test_a_qahub_details_dataset_without_the_runs_files_is_refused(tmp_path):
    """The layout an earlier ``qahub publish-results --details`` pushed: the report and its Parquet, no runs/."""
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.json").write_text("{}", encoding="utf-8")
    (tmp_path / "data" / "half").mkdir(parents=True)
    (tmp_path / "data" / "half" / "qahub_limur.parquet").write_bytes(b"PAR1")
    with pytest.raises(ReportError, match=f"^{tmp_path}: a qahub details dataset without the runs' own files "):
        hub_runs.read_local(None, tmp_path, {})
    assert hub_runs.is_snapshot(tmp_path)


# --- a qahub details dataset (qahub publish-results --details) read back


def test_a_qahub_details_dataset_reports_as_the_runs_it_was_published_from(hub, local_report, qahub_details):
    online, offline, requests, home, _ = qahub_details
    assert list(online["runs"]) == [f"{ORG}/half", f"{ORG}/oracle", "scripted"]  # the published report's names
    assert comparable(online) == comparable(local_report)
    assert comparable(offline) == comparable(local_report) and not requests  # from the cache alone
    sources = {name: run["path"] for name, run in online["runs"].items()}
    assert sources[f"{ORG}/half"].startswith(f"hf://datasets/{QAHUB_REPO}/runs/{ORG}__half@"), sources
    pushed = set(hub.repos[("dataset", QAHUB_REPO)].branches["main"])
    runs = {p for p in pushed if p.startswith("runs/")}
    # each harness's layout: lm-eval's results and samples side by side, lighteval's <date>/details_*.parquet
    assert len([p for p in runs if p.startswith(f"runs/{ORG}__oracle/results_")]) == 2, sorted(runs)
    assert any(p.startswith(f"runs/{ORG}__half/samples_{TASKS[1]}_") for p in runs)
    assert not any(OTHER in p for p in runs)  # the report skipped it: its samples are not pushed
    assert any(re.fullmatch(r"runs/scripted/[^/]+/details_qahub_limur\|2_[^/]+\.parquet", p) for p in runs)
    assert _cached(home, QAHUB_REPO) == runs | {"report/report.json"}  # not data/, eee/ nor the README


def test_publishing_refuses_a_run_whose_files_changed_or_went_and_dry_run_lists_them(hub, qahub_details, tmp_path):
    out = qahub_details[4]
    model = ("--model", f"{ORG}/half={MODEL_REPO}")
    done = publish(hub, tmp_path / "home", out, *model, "--details", QAHUB_REPO, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert re.search(rf"^  runs/{ORG}__oracle/samples_{TASKS[0]}_[^ ]+\.jsonl \(\d+ bytes\)$", done.stdout, re.M)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    requests = len(hub.requests)
    for change, said in (("changed", "changed since the report"), ("gone", "cannot be read")):
        folder = shutil.copytree(out, tmp_path / change)
        edited = copy.deepcopy(data)
        files = edited["runs"]["scripted"]["files"]
        path = next(p for p in files if p.endswith(".parquet"))
        if change == "changed":
            files[path]["sha256"] = "0" * 64
        else:
            files[path.replace("details_", "gone_")] = files.pop(path)
            path = path.replace("details_", "gone_")
        (folder / "report.json").write_text(json.dumps(edited), encoding="utf-8")
        for dry in ([], ["--dry-run"]):
            done = publish(hub, tmp_path / "home", folder, *model, "--details", QAHUB_REPO, *dry)
            assert done.returncode == 1 and "Traceback" not in done.stderr
            assert done.stderr.count("\n") == 1 and f"{path}: run scripted's file {said}" in done.stderr, done.stderr
    assert len(hub.requests) == requests  # nothing sent
