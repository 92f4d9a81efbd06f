"""The command line with hostile use (issue 15): outputs over inputs, bad --option values, partial builds,
concurrent builds, signals, symlinked outputs, messages, metric-copy over the user's files, --quiet."""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import datasets
import pytest
from huggingface_hub import DatasetCard
from hypothesis import given, settings
from hypothesis import strategies as st

from qahub import cli, publish, registry
from qahub.export import ExportError
from qahub.export.options import parse_options
from qahub.export.writer import export
from qahub.files import DuplicateKeyError, check_output, loads_strict, write_output
from qahub.testing import sample_copy

LIMUR = registry.samples_dir("limur")
JEMHOPQA = registry.samples_dir("jemhopqa")


def partial_of(readme):
    """The card's qahub_partial list, read back from the YAML as the Hub reads it."""
    return (DatasetCard.load(readme).data.to_dict().get("qahub_partial") or {}).get("missing", [])


def _evaluate_limur(*extra, predictions=LIMUR / "predictions.json", references=LIMUR / "test.jsonl"):
    return cli.main(["--quiet", "evaluate", "limur", "--predictions", str(predictions),
                     "--references", str(references), *extra])


@pytest.fixture
def limur_inputs(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("predictions.json", "test.jsonl"):
        shutil.copy(LIMUR / name, folder / name)
    return folder / "predictions.json", folder / "test.jsonl"


# finding 2: --output


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink"])
def test_output_over_an_input_file_is_refused_in_every_spelling(spelling, limur_inputs, tmp_path, capsys):
    predictions, references = limur_inputs
    before = predictions.read_bytes(), references.read_bytes()
    (tmp_path / "sub").mkdir()
    output = {"same": references, "dotdot": tmp_path / "sub" / ".." / "in" / "test.jsonl",
              "symlink": tmp_path / "link.json"}[spelling]
    if spelling == "symlink":
        output.symlink_to(predictions)
    code = _evaluate_limur("--output", str(output), "--overwrite", predictions=predictions, references=references)
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert re.fullmatch(r"qahub evaluate: error: --output .*: is the input file .*; choose another output file\n",
                        captured.err)
    assert (predictions.read_bytes(), references.read_bytes()) == before


def test_output_exists_needs_overwrite_and_is_replaced_whole(limur_inputs, tmp_path, capsys):
    predictions, references = limur_inputs
    output = tmp_path / "result.json"
    output.write_text("my earlier result", encoding="utf-8")
    assert _evaluate_limur("--output", str(output), predictions=predictions, references=references) == 1
    assert "exists; pass --overwrite to replace it" in capsys.readouterr().err
    assert output.read_text(encoding="utf-8") == "my earlier result"
    assert _evaluate_limur("--output", str(output), "--overwrite", predictions=predictions, references=references) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(output.read_text(encoding="utf-8")) == printed and printed["count"] == 8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "result.json"], "no temporary file is left"


def test_output_inside_an_input_folder_over_a_file_there_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "gold.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="is a file inside the input folder"):
        check_output(data / "gold.json", [str(data)], overwrite=True)
    assert check_output(data / "new.json", [str(data)]) == (data / "new.json").resolve()


def test_per_question_and_output_are_checked_before_scoring(limur_inputs, tmp_path, capsys):
    predictions, _ = limur_inputs
    before = predictions.read_bytes()
    code = cli.main(["--quiet", "evaluate", "jemhopqa", "--predictions", str(predictions),
                     "--references", str(JEMHOPQA / "corpus_ver1.2" / "dev_ver1.2.json"),
                     "--per-question", str(predictions)])
    assert code == 1 and "--per-question" in capsys.readouterr().err and predictions.read_bytes() == before
    same = tmp_path / "out.json"
    code = cli.main(["--quiet", "evaluate", "jemhopqa", "--predictions", str(JEMHOPQA / "predictions.json"),
                     "--references", str(JEMHOPQA / "corpus_ver1.2" / "dev_ver1.2.json"),
                     "--per-question", str(same), "--output", str(tmp_path / "." / "out.json")])
    assert code == 1 and "--output and --per-question: two of them name the same file" in capsys.readouterr().err
    assert not same.exists()


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "result.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_output(target, "new \ud800", overwrite=True)  # a lone surrogate cannot be written as UTF-8
    assert target.read_text(encoding="utf-8") == "old" and [p.name for p in tmp_path.iterdir()] == ["result.json"]
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_output(link, "new", overwrite=True)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "new"


def test_strict_json_names_a_duplicate_key():
    with pytest.raises(DuplicateKeyError, match=r"preds\.json: key 'q1' appears twice"):
        loads_strict('{"q1": "a", "q2": "b", "q1": "c"}', "preds.json")
    assert loads_strict('[{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]


# finding 3: --option


@pytest.mark.parametrize("option, message", [
    ("data_dir=/x", "not a builder option; use --data-dir DIR"),
    ("mirror_url=http://x", "not a builder option; use --mirror-url URL"),
    ("version=1", "not a builder option; use nothing: the version is the builder's own"),
    ("name=qa", "not a builder option; use --config CONFIG"),
    ("data_files=a.csv", "use --data-dir DIR"),
    ("cache_dir=/tmp", "use --cache-dir DIR"),
    ("description=x", "the description is the builder's own"),
    ("nope=1", "jeopardy has no builder option 'nope'; its options: present_splits_only"),
    ("present_splits_only=maybe", "--option present_splits_only=maybe: expected true/false, yes/no or 1/0"),
    ("present_splits_only=2", "--option present_splits_only=2: expected true/false"),
    ("present_splits_only=", "--option present_splits_only=: expected true/false"),
    ("present_splits_only", "expected KEY=VALUE"),
])
def test_bad_options_are_one_line_errors(option, message, tmp_path, capsys):
    code = cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(registry.samples_dir("jeopardy")),
                     "--option", option, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_unknown_option_lists_the_valid_ones(tmp_path, capsys):
    assert cli.main(["build", "jeopardy", "--option", "nope=1", "--out", str(tmp_path / "o")]) == 1
    assert "jeopardy has no builder option 'nope'; its options: present_splits_only" in capsys.readouterr().err


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["present_splits_only", "splits", "reading_set_form", "task_type", "name", "x"]),
       value=st.text())
def test_any_option_value_is_parsed_or_a_named_error(key, value):
    try:
        options = parse_options([f"{key}={value}"], "topical_chat")
    except ValueError as err:
        assert key in str(err)
        return
    parsed = options[key]
    if key == "present_splits_only":
        assert parsed is (value.strip().lower() in ("true", "yes", "1"))
    elif key == "splits":
        assert isinstance(parsed, tuple) and parsed and all(isinstance(x, str) and x for x in parsed)
    else:
        assert key == "reading_set_form" and parsed == value and value.strip()


def test_output_in_a_missing_folder_is_refused_before_scoring(tmp_path, capsys):
    assert _evaluate_limur("--output", str(tmp_path / "no" / "such" / "r.json")) == 1
    assert "does not exist" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def _jeopardy_without_training(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(registry.samples_dir("jeopardy"), data)
    (data / "Russian_QA_Jeopardy_dataset_extended_training.csv").unlink()
    return data


@pytest.mark.parametrize("value", ["no", "false", "0", "NO"])
def test_a_false_boolean_is_false(value, tmp_path, capsys):
    data = _jeopardy_without_training(tmp_path)
    code = cli.main(["--quiet", "build", "jeopardy", "--config", "qa", "--data-dir", str(data),
                     "--option", f"present_splits_only={value}", "--out", str(tmp_path / "out")])
    assert code == 1 and "training.csv" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option, message", [
    ("splits=1", "topical_chat/conversations has no split 1; its splits: train, valid_freq"),
    ("splits=[1]", "--option splits=[1]: expected names separated by commas"),
    ("splits=[", "--option splits=[: not a JSON list"),
    ("splits=", "--option splits=: give a value"),
    ("reading_set_form=", "--option reading_set_form=: give a value"),
])
def test_topical_chat_splits_option_errors(option, message, tmp_path, capsys):
    code = cli.main(["--quiet", "build", "topical_chat", "--config", "conversations", "--option", option,
                     "--data-dir", str(registry.samples_dir("topical_chat")), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err


def test_python_options_are_checked_too(tmp_path):
    with pytest.raises(ValueError, match="option present_splits_only: expected true or false, got 'no'"):
        export("jeopardy", tmp_path / "o", data_dir=registry.samples_dir("jeopardy"),
               builder_options={"present_splits_only": "no"})
    with pytest.raises(ValueError, match="'name' is not a builder option; use --config"):
        export("jeopardy", tmp_path / "o", builder_options={"name": "qa"})
    assert not (tmp_path / "o").exists()


# finding 4 and 9: partial builds


def test_partial_build_is_marked_in_the_card_and_publish_refuses_it(tmp_path, monkeypatch, capsys):
    data = _jeopardy_without_training(tmp_path)
    out = tmp_path / "root" / "jeopardy"
    assert cli.main(["--quiet", "build", "jeopardy", "--config", "qa", "--data-dir", str(data),
                     "--option", "present_splits_only=yes", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "jeopardy/qa: built without split(s) train (their files are absent)" in printed
    assert "partial build" in printed
    missing = [{"config": "extended", "splits": "all", "reason": "not requested: built with --config"},
               {"config": "qa", "splits": ["train"],
                "reason": "their source files were absent: built with present_splits_only"},
               {"config": "sft", "splits": "all", "reason": "not requested: built with --config"}]
    assert partial_of(out / "README.md") == missing
    card = DatasetCard.load(out / "README.md")
    assert card.data.to_dict()["qahub_partial"] == {"missing": missing}
    assert card.text.startswith("> **This is a partial build of the corpus.** Missing: extended (not requested: "
                                "built with --config); qa/train (their source files were absent")
    assert list(datasets.load_dataset(str(out), "qa", cache_dir=str(tmp_path / "c"))) == ["validation"]

    monkeypatch.setattr(publish, "HfApi", lambda token=None: pytest.fail("a partial build must not be uploaded"))
    assert cli.main(["publish", "jeopardy", "--repo-id", "me/jeopardy", "--folder", str(out), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "a partial build, missing extended (not requested: built with --config); qa/train" in err
    assert "pass --allow-partial" in err
    with pytest.raises(publish.PublishError, match="a partial build"):
        publish.publish(out, "me/jeopardy")
    assert cli.main(["publish", "jeopardy", "--repo-id", "me/jeopardy", "--folder", str(out), "--dry-run",
                     "--allow-partial"]) == 0
    assert "would upload 2 files" in capsys.readouterr().out


def test_publish_all_counts_a_partial_build_as_not_published(tmp_path, monkeypatch, capsys):
    data = _jeopardy_without_training(tmp_path)
    root = tmp_path / "root"
    export("jeopardy", root / "jeopardy", data_dir=data, configs=["qa"], builder_options={"present_splits_only": True})
    export("jemhopqa", root / "jemhopqa", data_dir=sample_copy("jemhopqa", tmp_path))
    uploaded = []

    class Api:
        def create_repo(self, repo_id, **kwargs):
            pass

        def upload_folder(self, **kwargs):
            uploaded.append(kwargs["repo_id"])
            return "https://hub.example/commit/1"

    monkeypatch.setattr(publish, "HfApi", lambda token=None: Api())
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(root)]) == 1
    captured = capsys.readouterr()
    assert "published 1 of 2 corpora" in captured.out and uploaded == ["me/jemhopqa"]
    assert "FAILED me/jeopardy:" in captured.err and "qa/train" in captured.err
    assert partial_of(root / "jemhopqa" / "README.md") == []


def test_splits_option_build_does_not_say_files_are_absent(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["--quiet", "build", "topical_chat", "--config", "conversations", "--option", "splits=test_freq",
                     "--data-dir", str(registry.samples_dir("topical_chat")), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "absent" not in printed and re.search(r"^topical_chat\s+conversations\s+test_freq\s", printed, re.M)
    entries = {e["config"]: e for e in partial_of(out / "README.md")}
    assert entries["conversations"]["reason"] == "not requested: built with splits=test_freq"
    assert entries["conversations"]["splits"] == ["train", "valid_freq", "valid_rare", "test_rare"]


def test_rerun_of_build_all_says_the_output_exists(tmp_path, capsys):
    root = tmp_path / "data-root"
    root.mkdir()
    (root / "jemhopqa").symlink_to(JEMHOPQA, target_is_directory=True)
    argv = ["--quiet", "build", "--all", "--data-root", str(root), "--out", str(tmp_path / "hub"),
            "--mirror-url", "http://127.0.0.1:9"]
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main(argv) == 1
    printed = capsys.readouterr().out
    assert "no corpus had a source" not in printed
    assert re.search(r"^jemhopqa\s+-\s+not rebuilt: output exists\s+an earlier build is there; pass --overwrite",
                     printed, re.M)
    assert "nothing was built: the output folders exist already (pass --overwrite to rebuild them)" in printed
    assert cli.main([*argv, "--overwrite"]) == 0


# findings 5 and 6: one build per --out, signals, leftovers of a killed build


class _Gate:
    """An HTTP mirror whose every request waits until ``release`` (then answers 404, or 200 with the JSON
    ``reply``): a build downloading from it is held mid-build, with its work folders and lock in place, until the
    test lets it go (and a judge's caller mid-scoring)."""

    def __init__(self, reply=None):
        self.arrived, self.release = threading.Event(), threading.Event()
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                gate.arrived.set()
                gate.release.wait(120)
                if reply is None:
                    self.send_error(404)
                    return
                body = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # the judge's requests

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def hold(self, argv, env, waits_for, timeout=180):
        """``argv`` started with ``env``; returned once it has reached the gate (``waits_for`` says what for)."""
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not self.arrived.wait(timeout):
            proc.kill()
            pytest.fail(f"never reached {waits_for}: {proc.communicate()[1][-2000:]}")
        return proc

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gate():
    held = _Gate()
    yield held
    held.close()


def _held_build(gate, out, tmp_path):
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "PYTHONUNBUFFERED": "1"}
    return gate.hold([sys.executable, "-m", "qahub.cli", "build", "jemhopqa", "--config", "v1.2",
                      "--mirror-url", gate.url, "--out", str(out)], env, "the mirror")


def _work_files(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_removes_the_work_folders_and_prints_one_line(signum, code, gate, tmp_path):
    out = tmp_path / "hub" / "jemhopqa"
    proc = _held_build(gate, out, tmp_path)
    during = _work_files(out.parent)
    assert ".jemhopqa.lock" in during and any(re.fullmatch(r"\.jemhopqa\.partial-[0-9a-f]{8}", n) for n in during)
    proc.send_signal(signum)
    gate.release.set()
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    name = signal.Signals(signum).name
    assert stderr == f"qahub build: interrupted by {name}; its temporary files are removed\n"
    assert "Traceback" not in stdout + stderr
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_a_second_build_of_the_same_out_fails_at_once(gate, tmp_path, capsys):
    out = tmp_path / "jemhopqa"
    proc = _held_build(gate, out, tmp_path)
    start = time.monotonic()
    code = cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(JEMHOPQA), "--out", str(out), "--overwrite"])
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 1 and elapsed < 60 and not gate.release.is_set()
    assert f"another qahub build is writing this folder (pid {proc.pid})" in err
    gate.release.set()
    proc.communicate(timeout=120)
    assert proc.returncode == 1  # the held build then fails on the mirror's 404
    assert _work_files(tmp_path) == []
    assert not out.exists()


def test_leftovers_of_a_killed_build_are_removed_and_named(gate, tmp_path, capsys):
    out = tmp_path / "jemhopqa"
    proc = _held_build(gate, out, tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    left = [n for n in _work_files(tmp_path) if n.startswith(".jemhopqa.partial-")]
    assert left, "SIGKILL leaves the work folder behind"
    gate.release.set()
    assert cli.main(["build", "jemhopqa", "--data-dir", str(JEMHOPQA), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "removed the work folders of an earlier jemhopqa build that was killed" in err
    assert all(name in err for name in left)
    assert _work_files(tmp_path) == [] and (out / "README.md").is_file()


def test_ctrl_c_while_evaluate_waits_for_the_judge_is_one_line(gate, tmp_path):
    output = tmp_path / "result.json"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "QAHUB_JUDGE_API_KEY": "k"}
    proc = gate.hold([sys.executable, "-m", "qahub.cli", "evaluate", "limur", "--predictions",
                      str(LIMUR / "predictions.json"), "--references", str(LIMUR / "test.jsonl"),
                      "--judge-url", gate.url + "/v1", "--judge-model", "m", "--judge-retries", "0",
                      "--judge-timeout", "100", "--output", str(output)], env, "the judge", timeout=120)
    proc.send_signal(signal.SIGINT)
    gate.release.set()
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr == "qahub evaluate: interrupted by SIGINT; its temporary files are removed\n" and stdout == ""
    assert not output.exists()


# finding 7: symlinked --out


def test_symlinked_out_is_written_through(tmp_path, capsys):
    real = tmp_path / "disk" / "jemhopqa"
    real.mkdir(parents=True)
    link = tmp_path / "jemhopqa"
    link.symlink_to(real, target_is_directory=True)
    for extra in ([], ["--overwrite"]):
        assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(JEMHOPQA), "--out", str(link), *extra]) == 0
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert (real / "README.md").is_file() and (real / "v1.2").is_dir()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["disk", "jemhopqa"]
        assert sorted(p.name for p in real.parent.iterdir()) == ["jemhopqa"]
    capsys.readouterr()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(JEMHOPQA), "--out", str(dangling)]) == 1
    assert "is a symlink to" in capsys.readouterr().err and not (tmp_path / "nowhere").exists()


def test_export_through_a_sub_dotdot_spelling(tmp_path):
    (tmp_path / "sub").mkdir()
    report = export("jemhopqa", tmp_path / "sub" / ".." / "out", data_dir=JEMHOPQA, configs=["v1.0"])
    assert (tmp_path / "out" / "README.md").is_file() and report.partial
    with pytest.raises(ExportError, match="not empty"):
        export("jemhopqa", tmp_path / "out", data_dir=JEMHOPQA)


# finding 12: metric-copy --overwrite


def test_metric_copy_overwrite_never_deletes_the_users_files(tmp_path, capsys):
    mine = tmp_path / "limur"
    mine.mkdir()
    (mine / "limur.py").write_text("my own module", encoding="utf-8")
    (mine / "paper.tex").write_text("years of work", encoding="utf-8")
    (mine / "notes").mkdir()
    (mine / "notes" / "a.md").write_text("notes", encoding="utf-8")
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "is not a copy of the limur metric: it holds notes/a.md, paper.tex" in err
    assert (mine / "paper.tex").read_text(encoding="utf-8") == "years of work"
    assert (mine / "limur.py").read_text(encoding="utf-8") == "my own module"


def test_metric_copy_overwrite_replaces_an_earlier_copy_with_its_old_files(tmp_path, capsys):
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path)]) == 0
    copy = tmp_path / "limur"
    manifest = json.loads((copy / ".qahub-metric-copy.json").read_text(encoding="utf-8"))
    manifest["files"].append("old_helper.py")  # a helper an earlier qahub version copied
    (copy / ".qahub-metric-copy.json").write_text(json.dumps(manifest), encoding="utf-8")
    (copy / "old_helper.py").write_text("x = 1", encoding="utf-8")
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "limur.cpython-311.pyc").write_bytes(b"\0")
    assert cli.main(["metric-copy", "limur", "--out", str(tmp_path), "--overwrite"]) == 0
    assert not (copy / "old_helper.py").exists() and (copy / "limur.py").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["limur"]


# --quiet


def _jeopardy_with_odd_value(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(registry.samples_dir("jeopardy"), data)
    table = data / "Russian_QA_Jeopardy_dataset_extended.csv"
    lines = table.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1].replace("0\t1\t", "0\t7\t", 1)
    table.write_text("".join(lines), encoding="utf-8")
    return data


def test_quiet_prints_only_the_result(tmp_path):
    data = _jeopardy_with_odd_value(tmp_path)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}

    def run(*flags, out):
        return subprocess.run([sys.executable, "-m", "qahub.cli", *flags, "build", "jeopardy", "--config", "extended",
                               "--data-dir", str(data), "--out", str(tmp_path / out)],
                              env=env, capture_output=True, text=True, timeout=300)

    loud, quiet = run(out="loud"), run("--quiet", out="quiet")
    assert loud.returncode == quiet.returncode == 0, quiet.stderr
    assert "QuestionNumber outside 1-5" in loud.stderr
    assert quiet.stderr == ""
    assert quiet.stdout.startswith("jeopardy: wrote ") and re.search(r"^jeopardy\s+extended\s+train\s", quiet.stdout, re.M)


def test_demo_overwrite_accepts_the_work_files_of_a_killed_demo(tmp_path):
    from qahub.demo import MARKER, _check_out

    (tmp_path / MARKER).write_text(json.dumps({"written_by": "qahub demo", "corpora": ["jemhopqa"]}))
    (tmp_path / "jemhopqa").mkdir()
    (tmp_path / ".jemhopqa.partial-0123abcd").mkdir()
    (tmp_path / ".jemhopqa.partial-0123abcd-cache").mkdir()
    (tmp_path / ".jemhopqa.lock").write_text("pid 1")
    _check_out(tmp_path, overwrite=True)
    (tmp_path / ".thesis.partial-x").mkdir()
    with pytest.raises(FileExistsError, match=r"holds \.thesis\.partial-x, which is not demo output"):
        _check_out(tmp_path, overwrite=True)
