import json
import os
import re
import shutil
import subprocess
import sys

import datasets
import pytest
from huggingface_hub import DatasetCard
from qahub.loaders._rows import RowsBuilder

from qahub import cli, console, publish, registry
from qahub.export import ExportError
from qahub.export.card import size_category
from qahub.export.writer import export
from qahub.readers import SourceDataError
from qahub.testing import build, sample_copy

SAMPLE = registry.samples_dir("jemhopqa")


@pytest.fixture
def exported(tmp_path):
    out = tmp_path / "jemhopqa"
    export("jemhopqa", out, data_dir=sample_copy("jemhopqa", tmp_path))
    return out


def test_layout_is_a_hub_dataset_repo(exported):
    files = sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file())
    assert files == ["README.md", "sft/train-00000-of-00001.parquet"] + [
        f"{c}/{s}-00000-of-00001.parquet" for c in ("v1.0", "v1.1", "v1.2") for s in ("train", "validation")
    ]


def test_card_metadata(exported):
    card = DatasetCard.load(exported / "README.md")
    meta = card.data.to_dict()
    assert meta["license"] == "cc-by-sa-4.0" and meta["language"] == ["ja"] and meta["pretty_name"] == "JEMHopQA"
    assert meta["size_categories"] == ["n<1K"]
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert [name for name, c in configs.items() if c.get("default")] == ["v1.2"]
    assert configs["v1.1"]["data_files"] == [
        {"split": "train", "path": "v1.1/train-*"},
        {"split": "validation", "path": "v1.1/validation-*"},
    ]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert [(s["name"], s["num_examples"]) for s in infos["v1.0"]["splits"]] == [("train", 4), ("validation", 3)]
    assert "# JEMHopQA" in card.text


@pytest.mark.parametrize("corpus", registry.corpus_names())
def test_builder_citation_is_its_cards_bibtex(corpus):
    info = registry.builder_class(corpus)(config_name=registry.default_config(corpus))._info()
    bibtex = info.citation.strip()
    assert bibtex.startswith("@") and bibtex.endswith("}")
    assert f"```bibtex\n{info.citation}```" in registry.card_path(corpus).read_text(encoding="utf-8")


def test_refuses_non_empty_folder_without_overwrite(exported):
    (exported / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="not empty; pass --overwrite"):
        export("jemhopqa", exported, data_dir=SAMPLE)
    assert (exported / "keep.txt").exists()
    (exported / "keep.txt").unlink()
    export("jemhopqa", exported, data_dir=SAMPLE, configs=["v1.0"], overwrite=True)
    assert sorted(p.name for p in exported.iterdir()) == ["README.md", "v1.0"]


def test_overwrite_only_replaces_an_earlier_export(tmp_path):
    folder = tmp_path / "mine"
    (folder / "src").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(ExportError, match="not an earlier export of jemhopqa; --overwrite only replaces one"):
        export("jemhopqa", folder, data_dir=SAMPLE, overwrite=True)
    assert (folder / "notes.txt").read_text() == "keep me" and (folder / "src").is_dir()


def test_unknown_config_fails_before_any_work(tmp_path):
    with pytest.raises(KeyError, match="jemhopqa has no config 'v9'"):
        export("jemhopqa", tmp_path / "out", configs=["v9"], data_dir=SAMPLE)
    assert not (tmp_path / "out").exists()


def test_large_splits_are_sharded_and_load_back_in_order(tmp_path):
    """`datasets` writes the shards (one write): it closes a shard once it holds max_shard_bytes of Arrow data,
    checked after each table the builder yields (RowsBuilder.BATCH_ROWS rows); the export renames them to
    <split>-NNNNN-of-NNNNN.parquet."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    train = data / "corpus_ver1.2" / "train_ver1.2.json"
    records = json.loads(train.read_text(encoding="utf-8"))
    many = [{**records[i % len(records)], "qid": f"q{i:05d}"} for i in range(2 * RowsBuilder.BATCH_ROWS + 1)]
    train.write_text(json.dumps(many, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "sharded"
    export("jemhopqa", out, configs=["v1.2"], data_dir=data, max_shard_bytes=500)
    names = sorted(p.name for p in (out / "v1.2").glob("train-*"))
    assert names == [f"train-{i:05d}-of-00003.parquet" for i in range(3)]
    loaded = datasets.load_dataset(str(out), "v1.2", cache_dir=str(tmp_path / "c"))
    assert loaded["train"]["qid"] == [row["qid"] for row in many]
    assert loaded["train"].to_list() == build("jemhopqa", "v1.2", data, tmp_path / "b")["train"].to_list()


@pytest.mark.parametrize("rows, label", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (29375, "10K<n<100K")])
def test_size_category(rows, label):
    assert size_category(rows) == label


class FakeHfApi:
    def __init__(self, fail_with=None):
        self.calls = []
        self.fail_with = fail_with

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def update_repo_settings(self, repo_id, **kwargs):
        self.calls.append(("update_repo_settings", repo_id, kwargs))

    def create_branch(self, repo_id, **kwargs):
        self.calls.append(("create_branch", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))
        if self.fail_with:
            raise self.fail_with
        return type("Info", (), {"commit_url": f"https://hub.example/{kwargs['repo_id']}/commit/1"})()


def test_publish_creates_repo_and_uploads_folder_in_one_commit(exported):
    api = FakeHfApi()
    url = publish.publish(exported, "org/jemhopqa", private=True, revision="v1", api=api)
    assert url == "https://hub.example/org/jemhopqa/commit/1"
    assert [c[0] for c in api.calls] == ["create_repo", "update_repo_settings", "create_branch", "upload_folder"]
    assert api.calls[0][2] == {"repo_type": "dataset", "private": True, "exist_ok": True}
    assert api.calls[1][2] == {"repo_type": "dataset", "private": True}, "an existing public repo must become private"
    assert api.calls[2][2] == {"repo_type": "dataset", "branch": "v1", "exist_ok": True}
    upload = api.calls[3][2]
    assert upload["folder_path"] == str(exported) and upload["repo_type"] == "dataset" and upload["revision"] == "v1"
    assert upload["delete_patterns"] == "*", "files of an earlier upload must not survive next to the new shards"


def test_publish_refuses_a_folder_that_is_not_an_export(tmp_path):
    with pytest.raises(publish.PublishError, match="no README.md; build it first"):
        publish.publish(tmp_path, "org/x", api=FakeHfApi())


def test_publish_errors_never_show_the_token(exported, capsys):
    token = "hf_abcdefghijklmnopqrstuvwxyz123456"
    api = FakeHfApi(fail_with=RuntimeError(f"401 Unauthorized for token {token}"))
    with pytest.raises(publish.PublishError) as err:
        publish.publish(exported, "org/jemhopqa", api=api, token=token)
    assert token not in str(err.value) and "401 Unauthorized" in str(err.value)


def test_cli_publish_uses_hfapi_without_printing_the_token(exported, monkeypatch, capsys):
    token = "hf_zyxwvutsrqponmlkjihgfedcba654321"
    monkeypatch.setenv("HF_TOKEN", token)
    api = FakeHfApi()
    monkeypatch.setattr(publish, "HfApi", lambda token=None: api)
    assert cli.main(["publish", "jemhopqa", "--repo-id", "org/jemhopqa", "--folder", str(exported)]) == 0
    out = capsys.readouterr()
    assert "published" in out.out and token not in out.out + out.err
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder"]


def test_cli_publish_dry_run_lists_files_and_card(exported, monkeypatch, capsys):
    monkeypatch.setattr(publish, "HfApi", lambda token=None: pytest.fail("dry run must not touch the Hub"))
    assert cli.main(["publish", "jemhopqa", "--repo-id", "org/jemhopqa", "--folder", str(exported), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would upload 8 files" in out and "v1.2/validation-00000-of-00001.parquet" in out
    assert "config_name: v1.2" not in out and "--verbose prints it" in out
    assert cli.main(["publish", "jemhopqa", "--repo-id", "org/jemhopqa", "--folder", str(exported), "--dry-run",
                     "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "config_name: v1.2" in out and "# JEMHopQA" in out


def test_cli_build_default_out_then_load_dataset_by_bare_name_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(SAMPLE)]) == 0
    assert "v1.2    validation  3" in capsys.readouterr().out
    code = "import datasets; d = datasets.load_dataset('jemhopqa'); print(d['train'].num_rows, d['train'].features['type'].names)"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "4 ['compositional', 'comparison']"


def test_cli_build_bad_data_is_one_clear_line_and_no_output(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(data), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("qahub build: error: ") and "corpus/train.json: source file not found" in err
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_cli_quiet_after_the_subcommand(exported, capsys):
    assert cli.main(["publish", "jemhopqa", "--repo-id", "o/n", "--folder", str(exported), "--dry-run", "--quiet"]) == 0
    import huggingface_hub.utils

    assert huggingface_hub.utils.are_progress_bars_disabled()
    datasets.enable_progress_bars()
    huggingface_hub.utils.enable_progress_bars()


def test_cli_names_the_extra_for_a_missing_optional_package(monkeypatch, capsys):
    def needs_sacrebleu(args):
        raise ModuleNotFoundError("No module named 'sacrebleu'", name="sacrebleu")

    monkeypatch.setattr(cli, "_list", needs_sacrebleu)
    assert cli.main(["list"]) == 1
    assert "needs the optional package 'sacrebleu': pip install -e \".[bleu]\" (in the qahub clone)" in capsys.readouterr().err


def test_demo_refuses_a_folder_that_is_not_demo_output(tmp_path, capsys):
    (tmp_path / "thesis.tex").write_text("years of work")
    assert cli.main(["--quiet", "demo", "--out", str(tmp_path), "--overwrite"]) == 1
    assert "thesis.tex, which is not demo output" in capsys.readouterr().err
    assert (tmp_path / "thesis.tex").read_text() == "years of work"


def test_cli_list(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^jemhopqa\s+v1\.2 \(default\)\s+train, validation$", out, re.M)


def test_cli_demo_builds_and_loads_every_sample(tmp_path, capsys):
    assert cli.main(["--quiet", "demo", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "load_dataset(" in out and "'v1.2'): train 4, validation 3" in out
    assert "0 step(s) failed" in out
    for corpus in registry.corpus_names():
        assert (tmp_path / "demo" / corpus / "README.md").is_file()
    assert cli.main(["--quiet", "demo", "--out", str(tmp_path / "demo"), "--overwrite"]) == 0


def test_demo_prints_no_progress_bar_of_datasets_and_leaves_them_as_it_found_them(tmp_path, capsys):
    """`qahub demo` without --quiet: doc2dial, the first corpus, printed 12 "Generating ... split" bars (its
    builds' and loads'), before its first `qahub evaluate --quiet` turned them off for the other corpora."""
    import datasets

    datasets.enable_progress_bars()  # as in a fresh process
    try:
        assert cli.main(["demo", "--out", str(tmp_path / "demo")]) == 0
        captured = capsys.readouterr()
        assert "Generating" not in captured.err and "examples/s" not in captured.err
        assert "== doc2dial: building every config" in captured.out
        assert not datasets.are_progress_bars_disabled()
    finally:
        datasets.disable_progress_bars()  # as conftest.py keeps them for the suite


def test_overwrite_refuses_a_readme_and_parquet_folder_that_is_not_this_corpus_export(tmp_path):
    folder = tmp_path / "proj"
    (folder / "results").mkdir(parents=True)
    (folder / "README.md").write_text("# My thesis notes\n")
    (folder / "results" / "run1.parquet").write_bytes(b"PAR1")
    with pytest.raises(ExportError, match="not an earlier export of jemhopqa"):
        export("jemhopqa", folder, data_dir=SAMPLE, overwrite=True)
    assert (folder / "README.md").read_text() == "# My thesis notes\n"
    limur_export = tmp_path / "limur-out"
    export("limur", limur_export, data_dir=registry.samples_dir("limur"))
    with pytest.raises(ExportError, match="not an earlier export of jemhopqa"):
        export("jemhopqa", limur_export, data_dir=SAMPLE, overwrite=True)


def test_cache_dir_never_serves_an_old_build_of_changed_files(tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    cache, out = tmp_path / "cache", tmp_path / "out"
    export("jemhopqa", out, configs=["v1.1"], data_dir=data, cache_dir=str(cache))
    dev = data / "corpus_ver1.1" / "dev_ver1.1.json"
    records = json.loads(dev.read_text(encoding="utf-8"))
    records[0]["question"] = "changed"
    dev.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    export("jemhopqa", out, configs=["v1.1"], data_dir=data, cache_dir=str(cache), overwrite=True)
    assert datasets.load_dataset(str(out), "v1.1", cache_dir=str(tmp_path / "l"))["validation"][0]["question"] == "changed"
    dev.write_text('[{"broken', encoding="utf-8")
    with pytest.raises(SourceDataError, match="not valid JSON"):
        export("jemhopqa", out, configs=["v1.1"], data_dir=data, cache_dir=str(cache), overwrite=True)


def test_rebuild_uses_cached_downloads_when_the_mirror_is_gone(tmp_path, http_server, monkeypatch):
    import shutil

    from qahub.loaders import jemhopqa
    from qahub.loaders._sources import sha256_of

    mirror = tmp_path / "mirror"
    shutil.copytree(SAMPLE, mirror / "jemhopqa")
    monkeypatch.setattr(jemhopqa.SOURCE, "sha256", {rel: sha256_of(SAMPLE / rel) for rel in jemhopqa.SOURCE.sha256})
    base = http_server(mirror)
    cache = tmp_path / "cache"
    export("jemhopqa", tmp_path / "a", configs=["v1.2"], mirror_url=base, cache_dir=str(cache))
    shutil.rmtree(mirror)  # the server now answers 404 for everything
    export("jemhopqa", tmp_path / "b", configs=["v1.2"], mirror_url=base, cache_dir=str(cache))
    assert sorted(p.name for p in (tmp_path / "b" / "v1.2").iterdir()) == sorted(p.name for p in (tmp_path / "a" / "v1.2").iterdir())


def test_download_errors_say_404_or_unreachable(tmp_path, http_server):
    from qahub.loaders._sources import SourceUnavailableError

    base = http_server(tmp_path)
    with pytest.raises(SourceUnavailableError, match=r"train_ver1\.2\.json failed: not found on the server \(HTTP 404\)"):
        export("jemhopqa", tmp_path / "o1", configs=["v1.2"], mirror_url=base)
    with pytest.raises(SourceUnavailableError, match=r"failed: the server could not be reached \(ConnectionRefusedError"):
        export("jemhopqa", tmp_path / "o2", configs=["v1.2"], mirror_url="http://127.0.0.1:9")


def test_failed_build_leaves_no_folders_it_created(tmp_path, capsys):
    out = tmp_path / "x" / "y" / "z"
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(tmp_path / "nothing"), "--out", str(out)]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_quiet_anywhere_on_the_evaluate_line():
    parser = cli._parser()
    before = parser.parse_args(["evaluate", "--quiet", "limur", "--predictions", "p", "--references", "r"])
    after = parser.parse_args(["evaluate", "limur", "--predictions", "p", "--references", "r", "--quiet"])
    assert before.sub_quiet is True and after.sub_quiet is True


def test_import_errors_that_are_not_a_missing_extra_keep_their_message():
    assert 'pip install -e ".[bleu]"' in console.explain(ModuleNotFoundError("x", name="sacrebleu"))
    internal = ImportError("cannot import name 'x' from 'scipy.optimize'", name="scipy.optimize")
    assert console.explain(internal) == "cannot import name 'x' from 'scipy.optimize'"
    assert "pip install" not in console.explain(ModuleNotFoundError("no qahub.evaluate_cli._x", name="qahub.evaluate_cli._x"))


@pytest.mark.parametrize("module, extra", [
    ("sacrebleu", "bleu"), ("nltk", "jeopardy"), ("pymorphy3", "jeopardy"), ("spacy", "jeopardy"),
    ("sudachipy", "jemhopqa"), ("sudachidict_core", "jemhopqa"), ("Levenshtein", "jemhopqa"), ("scipy", "jemhopqa"),
    ("pulp", "ilp"), ("statsmodels", "report"), ("matplotlib", "report"), ("tqdm", "report"), ("lm_eval", "harness"),
])
def test_a_missing_optional_package_names_the_extra_pyproject_lists_it_in(module, extra):
    """The extra is read from qahub's metadata (pyproject's optional-dependencies), never from a second table."""
    hint = console.explain(ModuleNotFoundError(f"No module named {module!r}", name=module))
    assert hint == f"this needs the optional package {module!r}: pip install -e \".[{extra}]\" (in the qahub clone)"


@pytest.mark.parametrize("module", ["numpy", "qahub"])
def test_a_missing_package_no_extra_installs_gets_no_install_hint(module):
    assert "pip install" not in console.explain(ModuleNotFoundError(f"No module named {module!r}", name=module))


def test_single_build_says_which_splits_are_absent(tmp_path, capsys):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(registry.samples_dir("jeopardy"), data)
    (data / "Russian_QA_Jeopardy_dataset_extended_training.csv").unlink()
    assert cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(data), "--config", "qa",
                     "--option", "present_splits_only=true", "--out", str(tmp_path / "out")]) == 0
    assert "jeopardy/qa: built without split(s) train (their files are absent)" in capsys.readouterr().out


def test_publish_all_reports_a_broken_folder_and_publishes_the_rest(exported, tmp_path, monkeypatch, capsys):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(exported, root / "jemhopqa")
    (root / "limur").mkdir()
    api = FakeHfApi()
    monkeypatch.setattr(publish, "HfApi", lambda token=None: api)
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(root)]) == 1
    captured = capsys.readouterr()
    assert "FAILED me/limur:" in captured.err and "no README.md; build it first" in captured.err
    assert [c[1] for c in api.calls if c[0] == "upload_folder"] == ["me/jemhopqa"]


def test_scrub_accepts_token_true():
    assert publish.scrub("boom", token=True) == "boom"


def test_datasets_writes_the_parquet_once_without_an_arrow_cache(tmp_path, monkeypatch):
    """One write: `datasets` writes the Parquet shards itself; no Arrow file is written and none copied."""
    import datasets.builder

    def refuse(*args, **kwargs):
        raise AssertionError("an Arrow cache or an Arrow-to-Parquet copy was written")

    monkeypatch.setattr(datasets.builder, "ArrowWriter", refuse)
    monkeypatch.setattr(datasets.Dataset, "to_parquet", refuse)
    report = export("jemhopqa", tmp_path / "out", configs=["v1.2"], data_dir=SAMPLE, cache_dir=str(tmp_path / "cache"))
    assert {(s.split, s.rows) for s in report.splits} == {("train", 4), ("validation", 3)}
    assert not list(tmp_path.rglob("*.arrow"))
    monkeypatch.undo()  # loading the folder back makes datasets' own Arrow cache of it
    loaded = datasets.load_dataset(str(tmp_path / "out"), "v1.2", cache_dir=str(tmp_path / "load"))
    assert loaded["train"].to_list() == build("jemhopqa", "v1.2", SAMPLE, tmp_path / "b")["train"].to_list()
