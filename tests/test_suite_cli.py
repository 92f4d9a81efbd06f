"""The whole suite from the command line: build --all, publish --all, publish-metric, metric-copy, and every
metric directory loading without qahub."""

import re
import shutil
import subprocess
import sys
import textwrap

import evaluate
import pytest

from qahub import cli, evaluate_cli, publish, registry


def _sample_root(tmp_path, corpora=None):
    """Copies of the bundled samples (a build of the samples themselves is a sample build, which publish refuses)."""
    root = tmp_path / "data-root"
    root.mkdir()
    for corpus in corpora or registry.corpus_names():
        shutil.copytree(registry.samples_dir(corpus), root / corpus)
    return root


def _unwrapped(text):
    """The build --all tables with each wrapped reason joined back onto its row."""
    return re.sub(r"\n +(?=\S)", " ", text)


def test_build_all_from_a_data_root(tmp_path, capsys):
    root = _sample_root(tmp_path)
    out = tmp_path / "hub"
    assert cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == sorted(registry.corpus_names())
    for corpus in registry.corpus_names():
        for config in registry.config_names(corpus):
            assert re.search(rf"^{corpus}\s+{re.escape(config)}\s", printed, re.M), f"{corpus}/{config} not in the summary"
    assert f"built {len(registry.corpus_names())} corpora" in printed and "0 skipped, 0 failed" in printed


def test_build_all_reports_missing_sources_and_failures_and_goes_on(tmp_path, capsys, http_server):
    root = _sample_root(tmp_path, ["jemhopqa"])
    broken = root / "limur"
    broken.mkdir()
    (broken / "dev.jsonl").write_text("{not json\n", encoding="utf-8")
    empty_mirror = http_server(tmp_path)  # serves nothing under <corpus>/: every download is a 404
    out = tmp_path / "hub"
    code = cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(out), "--mirror-url", empty_mirror])
    printed = _unwrapped(capsys.readouterr().out)
    assert code == 1, "a corpus that failed must set the exit status"
    assert sorted(p.name for p in out.iterdir()) == ["jemhopqa"]
    assert re.search(r"^limur\s+-\s+FAILED\s+SourceDataError: .*dev\.jsonl", printed, re.M)
    for corpus in ("doc2dial", "jeopardy", "topical_chat"):
        assert re.search(rf"^{corpus}\s+-\s+skipped: source unavailable\s+downloading {re.escape(empty_mirror)}/{corpus}/", printed, re.M)
    assert not [p for p in out.parent.iterdir() if ".partial-" in p.name]


class FakeHfApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        files = sorted(p.name for p in __import__("pathlib").Path(kwargs["folder_path"]).iterdir())
        app = (__import__("pathlib").Path(kwargs["folder_path"]) / "app.py")
        kwargs = dict(kwargs, files=files, app=app.read_text() if app.exists() else None)
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))
        return type("Info", (), {"commit_url": "https://hub.example/commit/1"})()


def test_publish_all_sends_each_built_corpus_to_org_slash_corpus(tmp_path, monkeypatch, capsys):
    root = _sample_root(tmp_path, ["jemhopqa", "limur"])
    out = tmp_path / "hub"
    assert cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(out),
                     "--mirror-url", "http://127.0.0.1:9"]) == 0
    api = FakeHfApi()
    monkeypatch.setattr(publish, "HfApi", lambda token=None: api)
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(out)]) == 0
    uploads = [(c[1], c[2]["repo_type"], c[2]["folder_path"]) for c in api.calls if c[0] == "upload_folder"]
    assert uploads == [("me/jemhopqa", "dataset", str(out / "jemhopqa")), ("me/limur", "dataset", str(out / "limur"))]


def test_publish_refuses_sample_builds_wrong_corpora_and_bad_repo_ids(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(publish, "HfApi", lambda token=None: pytest.fail("nothing may reach the Hub"))
    assert cli.main(["--quiet", "demo", "--out", str(tmp_path / "demo")]) == 0
    capsys.readouterr()
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(tmp_path / "demo"), "--dry-run"]) == 1
    assert "built from qahub's bundled sample data" in capsys.readouterr().err
    sample_card = (tmp_path / "demo" / "jemhopqa" / "README.md").read_text(encoding="utf-8")
    assert "qahub-sample" in sample_card and "not from the corpus" in sample_card
    real = tmp_path / "real"
    limur = shutil.copytree(registry.samples_dir("limur"), tmp_path / "limur-files")
    assert cli.main(["--quiet", "build", "limur", "--data-dir", str(limur), "--out", str(real)]) == 0
    assert cli.main(["publish", "jemhopqa", "--repo-id", "me/jemhopqa", "--folder", str(real), "--dry-run"]) == 1
    assert "not jemhopqa" in capsys.readouterr().err
    assert cli.main(["publish", "limur", "--repo-id", "not/a/valid", "--folder", str(real), "--dry-run"]) == 1
    assert "Repo id must be in the form" in capsys.readouterr().err


def test_publish_all_dry_run_touches_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "hub"
    root = _sample_root(tmp_path, ["jemhopqa"])
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(root / "jemhopqa"),
                     "--out", str(out / "jemhopqa")]) == 0
    monkeypatch.setattr(publish, "HfApi", lambda token=None: pytest.fail("dry run must not reach the Hub"))
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(out), "--dry-run"]) == 0
    assert "to dataset repo me/jemhopqa" in capsys.readouterr().out


@pytest.mark.parametrize("metric", registry.metric_names())
def test_publish_metric_uploads_a_gradio_space(metric, monkeypatch, capsys):
    api = FakeHfApi()
    monkeypatch.setattr(publish, "HfApi", lambda token=None: api)
    assert cli.main(["publish-metric", metric, "--repo-id", f"me/{metric}-qa"]) == 0
    create, upload = api.calls
    assert create[2] == {"repo_type": "space", "private": False, "exist_ok": True, "space_sdk": "gradio"}
    assert upload[2]["repo_type"] == "space" and upload[1] == f"me/{metric}-qa"
    assert {f"{metric}-qa.py", "app.py", "requirements.txt", "README.md"} <= set(upload[2]["files"])
    assert f'evaluate.load("me/{metric}-qa")' in upload[2]["app"]
    readme = (registry.metric_dir(metric) / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^sdk: gradio$", readme, re.M) and re.search(r"^app_file: app.py$", readme, re.M)


@pytest.mark.parametrize("metric", registry.metric_names())
def test_metric_copy_then_evaluate_load_by_bare_name(metric, tmp_path, monkeypatch, capsys):
    assert cli.main(["metric-copy", metric, "--out", str(tmp_path)]) == 0
    assert (tmp_path / metric / f"{metric}.py").is_file()
    monkeypatch.chdir(tmp_path)
    module = evaluate.load(metric)
    assert module.name == metric or module.name.replace("-", "_") == metric


def test_metric_copy_refuses_to_overwrite_unless_asked(tmp_path, capsys):
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path)]) == 0
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path)]) == 1
    assert "exists and is not empty; pass --overwrite" in capsys.readouterr().err
    (tmp_path / "limur" / "limur.py").write_text("stale")
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path), "--overwrite"]) == 0
    assert (tmp_path / "limur" / "limur.py").read_text() == (registry.metric_dir("limur") / "limur.py").read_text()
    mine = tmp_path / "mine" / "limur"
    mine.mkdir(parents=True)
    (mine / "paper.tex").write_text("years of work")
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path / "mine"), "--overwrite"]) == 1
    assert "is not a copy of the limur metric" in capsys.readouterr().err
    assert (mine / "paper.tex").read_text() == "years of work"


def test_the_readmes_metric_example_runs_from_the_clone(tmp_path, monkeypatch, capsys):
    """README's `evaluate.load("metrics/jemhopqa")` example as written, in a folder where that path is the clone's
    (run here, where `evaluate` is imported already)."""
    from guides import block

    (tmp_path / "metrics").symlink_to(registry.metrics_root())
    monkeypatch.chdir(tmp_path)
    exec(compile(block("readme-metric").code, "README.md", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.startswith("{'em': 1.0")

@pytest.mark.parametrize("metric", registry.metric_names())
def test_metric_loads_without_qahub_and_runs_its_readme_example(metric, metric_alone):
    """The README's example, pasted by a user who has only ``qahub metric-copy``'s copy, no qahub, no NLTK data
    and no network (tests/metric_alone.py: one process per metric for all its checks)."""
    result = metric_alone(metric)["readme"]
    assert result["ok"], result["error"][-3000:]
    assert result["stdout"].strip().endswith("EXAMPLE-OK") and not result["qahub_imports"]


def test_the_blocker_really_blocks_qahub(metric_alone):
    result = metric_alone("limur")["blocker"]
    assert not result["ok"] and "qahub is not installed here" in result["error"]
    assert result["qahub_imports"] == ["qahub"]


def test_mirror_credentials_never_reach_the_error_output(tmp_path, capsys, http_server):
    base = http_server(tmp_path)  # an empty mirror: every file is a 404
    secret = "s3cr3t-mirror-password"
    url = base.replace("http://", f"http://reader:{secret}@")
    assert cli.main(["--quiet", "build", "jemhopqa", "--mirror-url", url, "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "downloading http://***@127.0.0.1" in captured.err
    assert secret not in captured.out + captured.err


def test_hub_tokens_are_scrubbed_from_cli_errors(monkeypatch, capsys):
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"

    def leaky(args):
        raise RuntimeError(f"request with Authorization: Bearer {token} failed")

    monkeypatch.setattr(cli, "_list", leaky)
    assert cli.main(["list"]) == 1
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err and "Bearer hf_***" in captured.err


def test_build_all_over_the_real_shared_data(tmp_path, capsys, http_server):
    from qahub.testing import shared_data

    real = [name for name in ("jemhopqa", "topical_chat", "jeopardy") if shared_data(name)]
    if len(real) < 3:
        pytest.skip("../shared/data lacks jemhopqa, topical_chat or jeopardy")
    root = tmp_path / "data-root"
    root.mkdir()
    for name in real:
        (root / name).symlink_to(shared_data(name), target_is_directory=True)
    out = tmp_path / "hub"
    code = cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(out),
                     "--mirror-url", http_server(tmp_path / "empty-mirror")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert sorted(p.name for p in out.iterdir()) == ["jemhopqa", "jeopardy", "topical_chat"]
    assert re.search(r"^jemhopqa\s+v1\.1\s+train\s+1,059\s", printed, re.M)
    # Topical-Chat's train file is not in ../shared/data: the four other splits build, and the summary says so
    assert re.search(r"^topical_chat\s+conversations\s+valid_rare\s+539\s", printed, re.M)
    assert not re.search(r"^topical_chat\s+conversations\s+train\s", printed, re.M)
    assert re.search(r"^topical_chat\s+conversations\s+partial: split\(s\) absent\s+train$", printed, re.M)
    # the Jeopardy folder has only the validation file: qa/validation builds, extended is reported
    assert re.search(r"^jeopardy\s+qa\s+validation\s+3,376\s", printed, re.M)
    assert re.search(r"^jeopardy\s+extended\s+skipped: source unavailable", printed, re.M)
    # LIMUR and doc2dial have no local copy and no mirror
    for corpus in ("limur", "doc2dial"):
        assert re.search(rf"^{corpus}\s+-\s+skipped: source unavailable", printed, re.M)


def test_configured_token_is_scrubbed_even_without_the_hf_prefix(tmp_path, monkeypatch, capsys):
    token = "api_org_SeCrEtTokenValue123"
    monkeypatch.setenv("HF_TOKEN", token)
    out = tmp_path / "jemhopqa"
    root = _sample_root(tmp_path, ["jemhopqa"])
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(root / "jemhopqa"), "--out", str(out)]) == 0

    class EchoingHfApi(FakeHfApi):
        def upload_folder(self, **kwargs):
            raise RuntimeError(f"403 Forbidden: denied for Bearer {token}")

    monkeypatch.setattr(publish, "HfApi", lambda token=None: EchoingHfApi())
    assert cli.main(["publish", "jemhopqa", "--repo-id", "me/jemhopqa", "--folder", str(out)]) == 1
    captured = capsys.readouterr()
    assert "403 Forbidden: denied for Bearer ***" in captured.err
    assert token not in captured.out + captured.err


def test_build_all_with_nothing_to_build_fails(tmp_path, capsys, http_server):
    empty_root = tmp_path / "empty-root"
    empty_root.mkdir()
    code = cli.main(["--quiet", "build", "--all", "--data-root", str(empty_root), "--out", str(tmp_path / "hub"),
                     "--mirror-url", http_server(tmp_path / "no-mirror")])
    assert code == 1
    assert "nothing was built" in capsys.readouterr().out


def test_publish_all_goes_on_after_a_failure_and_says_so(tmp_path, monkeypatch, capsys):
    root = _sample_root(tmp_path, ["jemhopqa", "limur"])
    out = tmp_path / "hub"
    assert cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(out),
                     "--mirror-url", "http://127.0.0.1:9"]) == 0

    class FailsOnJemhopqa(FakeHfApi):
        def upload_folder(self, **kwargs):
            if kwargs["repo_id"].endswith("jemhopqa"):
                raise RuntimeError("503 Service Unavailable")
            return super().upload_folder(**kwargs)

    api = FailsOnJemhopqa()
    monkeypatch.setattr(publish, "HfApi", lambda token=None: api)
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(out)]) == 1
    captured = capsys.readouterr()
    assert "FAILED me/jemhopqa: publishing" in captured.err and "503 Service Unavailable" in captured.err
    assert "published 1 of 2 corpora" in captured.out
    assert [c[1] for c in api.calls if c[0] == "upload_folder"] == ["me/limur"]


@pytest.mark.parametrize("metric", registry.metric_names())
def test_docstring_examples_give_their_stated_results_without_qahub(metric, metric_alone):
    """The kwargs docstring's examples (as in the official metrics) run and print what they say they print."""
    result = metric_alone(metric)["docstrings"]
    assert result["ok"], result["error"][-3000:]
    summary = result["stdout"].strip().splitlines()[-1]
    tries = int(summary.split()[-1])
    assert summary == f"DOCTEST 0 failed of {tries}" and tries >= 2, result["stdout"][-3000:]


# --- qahub evaluate: every metric's references are read by qahub/export/reader.py

def _first_evaluation(corpus):
    """``(metric, its sample predictions, the options it needs)``: the first ``qahub evaluate`` line of the
    corpus's demo.json, its references left out."""
    from qahub.demo import demo_evaluations

    metric, *args = demo_evaluations(registry.samples_dir(corpus))[0]
    predictions, needed = None, []
    pairs = iter(args)
    for option in pairs:
        if option == "--predictions":
            predictions = next(pairs)
        elif option in ("--references", "--data-dir"):
            next(pairs)
        else:
            needed.append(option)
    return metric, predictions, needed


EVALUATE = {metric: rest for metric, *rest in map(_first_evaluation, registry.corpus_names())}


def test_every_metric_has_a_reference_reader_and_nothing_else_is_a_command():
    assert sorted(EVALUATE) == sorted(evaluate_cli.scoring_modules()) == sorted(registry.metric_names())


@pytest.mark.parametrize("option, message", [
    ("--references", "--references {}: no such file or folder (nor a Hub dataset id ORG/NAME)"),
    ("--data-dir", "--data-dir {}: no such file or folder"),
])
@pytest.mark.parametrize("metric", sorted(EVALUATE))
def test_a_missing_local_path_is_an_error_never_a_hub_lookup(metric, option, message, tmp_path, capsys, monkeypatch):
    import datasets

    for name in ("load_dataset", "get_dataset_config_names"):
        monkeypatch.setattr(datasets, name, lambda *a, **k: pytest.fail("looked up on the Hub"))
    predictions, needed = EVALUATE[metric]
    absent = tmp_path / "absent"
    code = cli.main(["--quiet", "evaluate", metric, "--predictions", predictions,
                     *needed, option, str(absent)])
    assert (code, capsys.readouterr().err) == (1, f"qahub evaluate: error: {message.format(absent)}\n")


def test_a_build_of_local_files_reads_them_as_they_are_now(tmp_path):
    """Each build of a data folder is made in a temporary cache: an edited file is never answered from an old build."""
    import json
    import shutil

    from qahub.export.reader import built_rows

    folder = shutil.copytree(registry.samples_dir("jemhopqa"), tmp_path / "jemhopqa")
    dev = folder / "corpus_ver1.2" / "dev_ver1.2.json"
    before = built_rows("jemhopqa", "v1.2", "validation", folder)
    records = json.loads(dev.read_text(encoding="utf-8"))
    records[0]["answer"] = "edited"
    dev.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    after = built_rows("jemhopqa", "v1.2", "validation", folder)
    assert after[0]["answer"] == "edited" != before[0]["answer"] and after[1:] == before[1:]


# --- qahub evaluate scores through the metric's direct_score: evaluate (and torch) are not imported for a CLI score

SCORE_IN_A_FRESH_PROCESS = textwrap.dedent(
    """
    import json, sys
    from qahub import cli

    status = cli.main(["--quiet", "evaluate", *json.loads(sys.argv[1])])
    heavy = sorted(name for name in ("evaluate", "transformers", "torch", "datasets", "pandas", "pyarrow",
                                     "scipy.stats", "sklearn") if name in sys.modules)
    print(json.dumps({"status": status, "imported": heavy}))
    """
)


def _evaluate_in_a_fresh_process(argv):
    """``(the printed result, exit status, which of evaluate, transformers, torch, datasets, pandas, pyarrow,
    scipy.stats, sklearn were imported)``."""
    import json

    done = subprocess.run([sys.executable, "-c", SCORE_IN_A_FRESH_PROCESS, json.dumps([str(a) for a in argv])],
                          capture_output=True, text=True, timeout=300)
    *result, last = done.stdout.strip().splitlines() or [""]
    about = json.loads(last)
    return "\n".join(result), about["status"], about["imported"], done.stderr


def _demo_lines():
    from qahub.demo import demo_evaluations

    return [argv for corpus in registry.corpus_names() for argv in demo_evaluations(registry.samples_dir(corpus))]


@pytest.mark.parametrize("argv", _demo_lines(), ids=lambda argv: " ".join(a.rsplit("/", 1)[-1] for a in argv))
def test_a_cli_score_is_the_evaluate_modules_own_without_importing_evaluate(argv, monkeypatch, capsys):
    """Each demo.json evaluation: its scores in a fresh process, which never imports evaluate, transformers,
    torch, nor (for METEOR, through NLTK's package) scipy.stats and scikit-learn, are those of
    ``evaluate.load(metric_dir).compute(...)`` given the same inputs. An upstream Jeopardy! file as references is
    read by the builder's own reader, without ``datasets`` (nor pandas, pyarrow), and so is the ``--data-dir`` of
    JEMHopQA, LIMUR, Topical-Chat and doc2dial (issue 44); Jeopardy!'s ``--data-dir`` is built through it."""
    printed, status, imported, stderr = _evaluate_in_a_fresh_process(argv)
    upstream_file = "--references" in argv if argv[0] == "jeopardy_meteor" else "--data-dir" in argv
    assert (status, imported) == (0, [] if upstream_file else ["datasets", "pandas", "pyarrow"]), stderr[-2000:]

    adapter = evaluate_cli.scoring_modules()[argv[0]].ADAPTER

    def through_evaluate(self, args, **inputs):
        config = {"config_name": args.task} if hasattr(args, "task") else {}
        return evaluate.load(str(registry.metric_dir(self.metric)), **config).compute(**inputs)

    monkeypatch.setattr(type(adapter), "score", through_evaluate)
    assert cli.main(["--quiet", "evaluate", *argv]) == 0
    assert capsys.readouterr().out.strip() == printed


@pytest.mark.parametrize("metric", sorted(EVALUATE))
def test_a_missing_predictions_file_is_said_before_anything_heavy_is_imported(metric, tmp_path):
    _, needed = EVALUATE[metric]
    absent = tmp_path / "absent.json"
    printed, status, imported, stderr = _evaluate_in_a_fresh_process(
        [metric, "--predictions", absent, *needed, "--data-dir", registry.samples_dir(_corpus_of(metric))])
    assert (printed, status, imported) == ("", 1, [])
    assert stderr == f"qahub evaluate: error: {absent}: cannot be read (No such file or directory)\n"


def _corpus_of(metric):
    return next(corpus for corpus in registry.corpus_names() if _first_evaluation(corpus)[0] == metric)


@pytest.mark.parametrize("metric", sorted(EVALUATE))
def test_a_split_that_the_config_never_has_is_refused_before_any_build(metric, monkeypatch, capsys):
    import qahub

    monkeypatch.setattr(qahub, "prepare", lambda *a, **k: pytest.fail("built before the split was checked"))
    predictions, needed = EVALUATE[metric]
    needed = [arg for arg, before in zip(needed, [None, *needed]) if "--split" not in (arg, before)]
    code = cli.main(["--quiet", "evaluate", metric, "--predictions", predictions, *needed, "--split", "tset",
                     "--data-dir", str(registry.samples_dir(_corpus_of(metric)))])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("qahub evaluate: error: ") and "tset" in err, err
