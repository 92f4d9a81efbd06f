"""Outputs and folders (issue 19 item 5): what qahub writes never takes the user's files with it, an output file
is created once, a publish sends only the export, a full disk is one line with nothing left behind, and a batch
of unequal counts leaves no cache file. The command-line cases run the installed ``qahub`` as a user does."""

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest
from test_cli_safety import _Gate
from test_fresh_references import QAHUB, copy_export, drop_task_type, one_line, qahub, resave, truncate

from qahub import registry
from qahub.testing import sample_copy

LIMUR = registry.samples_dir("limur")


def files_under(folder):
    return sorted(Path(p).relative_to(folder).as_posix() for p in glob.glob(f"{folder}/**", recursive=True)
                  if os.path.isfile(p))


# --- harness-tasks --overwrite replaces only what it wrote


def harness_tasks(out, cache, *datasets, overwrite=True):
    argv = ["--quiet", "harness-tasks", "--out", out, *[f"--dataset={d}" for d in datasets]]
    return qahub(*argv, *(["--overwrite"] if overwrite else []), cache=cache)


def test_harness_tasks_overwrite_keeps_the_users_files(sample_exports, tmp_path):
    out, cache = tmp_path / "tasks", tmp_path / "hf-cache"
    assert harness_tasks(out, cache, f"limur={sample_exports['limur']}", overwrite=False)[0] == 0
    (out / "my_task").mkdir()
    (out / "my_task" / "my_task.yaml").write_text("task: my_task\n", encoding="utf-8")
    (out / "NOTES.md").write_text("what I ran\n", encoding="utf-8")
    export = copy_export(sample_exports, "jemhopqa", out)  # an export kept inside the folder, used below
    code, _, err = harness_tasks(out, cache, f"jemhopqa={export}")
    assert code == 0, err
    assert (out / "NOTES.md").read_text(encoding="utf-8") == "what I ran\n"
    assert (out / "my_task" / "my_task.yaml").is_file() and (export / "README.md").is_file()
    assert not (out / "qahub_limur").exists()  # the earlier run's task, replaced by this run's
    assert json.loads((out / "qahub_tasks.json").read_text(encoding="utf-8")).keys() == {
        "qahub_jemhopqa", "qahub_jemhopqa_derivations"}
    assert not list(tmp_path.glob(".tasks.*"))


def test_harness_tasks_overwrite_refuses_a_task_folder_holding_the_users_file(sample_exports, tmp_path):
    out, cache = tmp_path / "tasks", tmp_path / "hf-cache"
    assert harness_tasks(out, cache, f"limur={sample_exports['limur']}", overwrite=False)[0] == 0
    before = files_under(out)
    (out / "qahub_limur" / "mine.txt").write_text("keep me\n", encoding="utf-8")
    code, out_text, err = harness_tasks(out, cache, f"limur={sample_exports['limur']}")
    assert (code, out_text) == (1, "")
    assert "qahub_limur/mine.txt" in one_line(err)
    assert files_under(out) == sorted([*before, "qahub_limur/mine.txt"])


def test_harness_tasks_never_replaces_a_folder_of_the_users_named_like_a_task(sample_exports, tmp_path):
    out, cache = tmp_path / "tasks", tmp_path / "hf-cache"
    assert harness_tasks(out, cache, f"limur={sample_exports['limur']}", overwrite=False)[0] == 0
    (out / "qahub_jemhopqa").mkdir()
    (out / "qahub_jemhopqa" / "mine.yaml").write_text("task: mine\n", encoding="utf-8")
    code, _, err = harness_tasks(out, cache, f"jemhopqa={sample_exports['jemhopqa']}")
    assert code == 1 and "holds qahub_jemhopqa, not written by qahub harness-tasks" in one_line(err)
    assert (out / "qahub_jemhopqa" / "mine.yaml").is_file() and (out / "qahub_limur").is_dir()


# --- publish sends only the export: README.md and the listed configs' readable shards


@pytest.fixture
def publishable(tmp_path):
    """A JEMHopQA export built by the installed qahub from a copy of the sample (publishable: not a sample build)."""
    folder = tmp_path / "jemhopqa"
    code, _, err = qahub("--quiet", "build", "jemhopqa", "--data-dir", sample_copy("jemhopqa", tmp_path), "--out",
                         folder, cache=tmp_path / "hf-cache")
    assert code == 0, err
    return folder


LAYOUT = ["README.md", "sft/train-00000-of-00001.parquet"] + [
    f"{config}/{split}-00000-of-00001.parquet" for config in ("v1.0", "v1.1", "v1.2") for split in ("train", "validation")]


def dry_run(folder, cache):
    return qahub("publish", "jemhopqa", "--repo-id", "org/jemhopqa", "--folder", folder, "--dry-run", cache=cache)


def test_publish_dry_run_lists_only_the_export_and_names_what_it_leaves_out(publishable, tmp_path):
    (publishable / ".env").write_text("HF_TOKEN=hf_notarealtoken1234\n", encoding="utf-8")
    (publishable / "README.md.bak").write_bytes((publishable / "README.md").read_bytes())
    shard = publishable / "v1.2" / "train-00000-of-00001.parquet"
    (publishable / "v1.2" / "train-00000-of-00001.parquet.bak").write_bytes(shard.read_bytes())  # matches train-*
    (publishable / "notes").mkdir()
    (publishable / "notes" / "todo.txt").write_text("x\n", encoding="utf-8")
    code, out, err = dry_run(publishable, tmp_path / "hf-cache")
    assert code == 0, err
    listed = [line.strip() for line in out.splitlines() if line.startswith("  ") and "(" not in line]
    assert listed == LAYOUT
    assert ("not uploaded (not part of the export): .env, README.md.bak, notes/todo.txt, "
            "v1.2/train-00000-of-00001.parquet.bak") in out


def test_publish_uploads_exactly_the_export_files(publishable, monkeypatch):
    from huggingface_hub.utils import filter_repo_objects
    from test_export_publish_cli import FakeHfApi

    from qahub import publish

    (publishable / ".env").write_text("secret\n", encoding="utf-8")
    (publishable / "v1.0" / "train-00000-of-00001.parquet.bak").write_text("old\n", encoding="utf-8")
    api = FakeHfApi()
    publish.publish(publishable, "org/jemhopqa", api=api)
    upload = next(kwargs for name, _, kwargs in api.calls if name == "upload_folder")
    present = files_under(publishable)
    assert sorted(filter_repo_objects(present, allow_patterns=upload["allow_patterns"])) == LAYOUT


@pytest.mark.parametrize("damage", ["truncated", "short of rows", "another export's shard"])
def test_publish_refuses_a_damaged_shard_naming_it(publishable, sample_exports, tmp_path, damage):
    shard = publishable / "v1.1" / "validation-00000-of-00001.parquet"
    if damage == "truncated":
        truncate(shard)
        expected = f"{shard}: not a readable Parquet shard"
    elif damage == "short of rows":
        import pyarrow.parquet as pq

        pq.write_table(pq.read_table(shard).slice(0, 1), shard)
        expected = "config v1.1 split validation: its Parquet shards (validation-00000-of-00001.parquet) hold 1 rows"
    else:
        shard.write_bytes((sample_exports["limur"] / "all" / "validation-00000-of-00001.parquet").read_bytes())
        expected = f"{shard}: its columns"
    code, out, err = dry_run(publishable, tmp_path / "hf-cache")
    assert code == 1 and "would upload" not in out
    assert expected in one_line(err)


# --- add_batch with unequal counts: a clear error before evaluate writes its cache


def limur_rows(n):
    return [json.loads(line) for line in (LIMUR / "test.jsonl").read_text(encoding="utf-8").splitlines()[:n]]


def squad_reference(qid):
    return {"id": qid, "answers": {"text": ["x"], "answer_start": [0]}}


def squad_prediction(qid):
    return {"id": qid, "prediction_text": "x", "no_answer_probability": 0.0}


UNEQUAL = {  # metric (config): predictions, references and the error they give
    ("limur", None): (["А", "Б"], limur_rows(1), "limur: add_batch got 2 predictions and 1 references"),
    ("doc2dial", "subtask1"): ([squad_prediction("a_1"), squad_prediction("b_1")], [squad_reference("a_1")],
                               "doc2dial: add_batch got 2 predictions and 1 references"),
    ("doc2dial", "subtask2"): ([{"id": "a_1", "utterance": "x"}], [], "doc2dial: add_batch got 1 predictions and 0"),
    ("jeopardy_meteor", None): (["Рим", "Лима"], ["Рим"], "got 2 predictions for 1 references"),
    ("topical_chat", None): (["a", "b"], ["x"], "topical_chat: 2 predictions for 1 references"),
    ("limur", "no references"): (["А"], None, "limur: add_batch got no references"),
}


@pytest.mark.parametrize("metric, config", UNEQUAL)
def test_add_batch_with_unequal_counts_is_refused_before_any_cache_file(metric, config, tmp_path):
    predictions, references, message = UNEQUAL[metric, config]
    module = evaluate.load(str(registry.metric_dir(metric)), None if config == "no references" else config,
                           cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match=message):
        module.add_batch(predictions=predictions, references=references)
    assert files_under(tmp_path) == []


def test_jemhopqa_add_batch_takes_unequal_counts_as_documented(tmp_path):
    """JEMHopQA stores each batch as one row (a question without a prediction is counted, not an error)."""
    rows = json.loads((registry.samples_dir("jemhopqa") / "corpus_ver1.2/dev_ver1.2.json").read_text(encoding="utf-8"))
    module = evaluate.load(str(registry.metric_dir("jemhopqa")), cache_dir=str(tmp_path))
    module.add_batch(predictions=[{"qid": rows[0]["qid"], "answer": rows[0]["answer"]}], references=rows[:2])
    assert module.compute(ignore_missing=True)["a"]["em"] == 1.0
    assert not [name for name in files_under(tmp_path) if name.endswith(".arrow")]


TWO_PROCESSES = """
import json, sys, evaluate
from qahub import registry
process_id, cache, extra = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rows = [json.loads(line) for line in open(registry.samples_dir("limur") / "test.jsonl", encoding="utf-8")][:1]
module = evaluate.load(str(registry.metric_dir("limur")), num_process=2, process_id=process_id, cache_dir=cache,
                       experiment_id="two", timeout=3)
try:
    module.add_batch(predictions=["А"] * (1 + extra), references=rows)
    module.compute()
except ValueError as err:
    print("ValueError:", err)
"""


def test_two_processes_a_batch_of_unequal_counts_is_a_clear_error_in_both(tmp_path):
    """Process 1 adds two replies for one reference: it says so and writes nothing; process 0, waiting for it,
    ends with evaluate's own ValueError (not an Arrow error on an empty file)."""
    runs = [subprocess.Popen([sys.executable, "-c", TWO_PROCESSES, str(pid), str(tmp_path / "cache"), str(pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for pid in (0, 1)]
    (out0, err0), (out1, _) = (run.communicate(timeout=120) for run in runs)
    assert "ValueError: limur: add_batch got 2 predictions and 1 references" in out1
    assert out0.startswith("ValueError:") and "Arrow" not in out0 + err0, out0 + err0
    assert not [name for name in files_under(tmp_path) if name.endswith(".arrow")]


# --- --output: created once, and the scores printed even when it cannot be written


def held_judge():
    """A judge on 127.0.0.1 that holds every request until ``release``, then grades 1: a ``qahub evaluate limur``
    using it is held mid-scoring, after its --output was checked."""
    return _Gate(reply={"choices": [{"message": {"role": "assistant", "content": "1"}}]})


@pytest.fixture
def judges():
    made = []

    def make():
        made.append(held_judge())
        return made[-1]

    yield make
    for judge in made:
        judge.close()


def held_evaluate(judge, output, tmp_path):
    """``qahub evaluate limur --output OUTPUT`` on the sample, held at ``judge`` until it is released."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "QAHUB_JUDGE_API_KEY": "k", "HF_HUB_OFFLINE": "1"}
    return judge.hold([*QAHUB, "--quiet", "evaluate", "limur", "--predictions", str(LIMUR / "predictions.json"),
                       "--references", str(LIMUR / "test.jsonl"), "--judge-url", judge.url + "/v1",
                       "--judge-model", "m", "--judge-retries", "0", "--output", str(output)], env, "the judge")


def scores(printed):
    result = json.loads(printed)
    # the judge's timings aside, and the signature, which names each run's judge (its URL)
    return {key: value for key, value in result.items() if key not in ("judge", "qahub_signature")}


def test_two_runs_with_one_output_write_it_once(judges, tmp_path):
    output = tmp_path / "scores.json"
    first, second = judges(), judges()
    runs = [held_evaluate(first, output, tmp_path), held_evaluate(second, output, tmp_path)]
    first.release.set()
    out1, err1 = runs[0].communicate(timeout=120)
    assert runs[0].returncode == 0, err1
    written = output.read_text(encoding="utf-8")
    assert json.loads(written) == json.loads(out1)
    second.release.set()
    out2, err2 = runs[1].communicate(timeout=120)
    assert runs[1].returncode == 1
    assert scores(out2) == scores(out1)  # its scores are printed, not lost
    assert f"--output {output}: exists" in one_line(err2) and "--overwrite" in err2
    assert output.read_text(encoding="utf-8") == written
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".scores")) == []


def test_a_failed_output_write_still_prints_the_scores(judges, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    judge = judges()
    run = held_evaluate(judge, folder / "scores.json", tmp_path)
    folder.rmdir()  # gone while scoring: the write fails
    judge.release.set()
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1
    assert scores(out)["exact_match"] == 0.625
    assert "scores.json" in one_line(err) and not folder.exists()


def test_write_output_never_replaces_a_file_without_overwrite(tmp_path):
    from qahub.files import write_output

    target = tmp_path / "out.json"
    write_output(target, "first\n")
    with pytest.raises(FileExistsError, match="--output .*out.json: exists"):
        write_output(target, "second\n")
    assert target.read_text(encoding="utf-8") == "first\n"
    write_output(target, "third\n", overwrite=True)
    assert target.read_text(encoding="utf-8") == "third\n" and files_under(tmp_path) == ["out.json"]


# --- files.staged: the one way an output folder is written (export, metric-copy, harness-tasks, report)


def _guard(**changes):
    from qahub.files import Guard

    fields = dict(not_folder="is a file", not_empty="not empty", not_ours="not ours",
                  is_ours=lambda folder: (folder / "MINE").is_file())
    return Guard(**{**fields, **changes})


def _write(target, text, **kwargs):
    from qahub.files import staged

    with staged(target, guard=kwargs.pop("guard", _guard()), **kwargs) as work:
        (work / "MINE").write_text(text, encoding="utf-8")


def _folder_of(text, folder):
    folder.mkdir(parents=True)
    (folder / "MINE").write_text(text, encoding="utf-8")
    return folder


def test_staged_writes_a_missing_folder_and_its_parents_and_leaves_nothing_beside(tmp_path):
    _write(tmp_path / "a" / "b" / "out", "new")
    assert files_under(tmp_path) == ["a/b/out/MINE"]
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out"]


def test_staged_replaces_only_its_own_output_and_only_with_overwrite(tmp_path):
    out = _folder_of("old", tmp_path / "out")
    with pytest.raises(FileExistsError, match="not empty"):
        _write(out, "new")
    _write(out, "new", overwrite=True)
    assert (out / "MINE").read_text(encoding="utf-8") == "new" and files_under(tmp_path) == ["out/MINE"]
    (out / "MINE").unlink()
    (out / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError, match="not ours"):
        _write(out, "new", overwrite=True)
    assert files_under(tmp_path) == ["out/notes.txt"]


def test_staged_replaces_its_own_output_without_asking_when_the_guard_says_so(tmp_path):
    out = _folder_of("old", tmp_path / "out")
    _write(out, "new", guard=_guard(ours_without_overwrite=True, not_ours=None))
    assert (out / "MINE").read_text(encoding="utf-8") == "new"
    (out / "notes.txt").write_text("x", encoding="utf-8")
    (out / "MINE").unlink()
    with pytest.raises(FileExistsError, match="not empty"):
        _write(out, "new", guard=_guard(ours_without_overwrite=True, not_ours=None))
    _write(out, "newer", overwrite=True, guard=_guard(ours_without_overwrite=True, not_ours=None))
    assert files_under(tmp_path) == ["out/MINE"]


def test_staged_refuses_a_target_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("a file", encoding="utf-8")
    with pytest.raises(FileExistsError, match="is a file"):
        _write(tmp_path / "out", "new", overwrite=True)
    assert (tmp_path / "out").read_text(encoding="utf-8") == "a file" and files_under(tmp_path) == ["out"]


def test_staged_refuses_a_symlinked_target_or_writes_through_it(tmp_path):
    real = _folder_of("old", tmp_path / "disk" / "out")
    link = tmp_path / "out"
    link.symlink_to(real, target_is_directory=True)
    with pytest.raises(FileExistsError, match="a link"):
        _write(link, "new", overwrite=True, guard=_guard(symlink="a link"))
    assert (real / "MINE").read_text(encoding="utf-8") == "old"
    _write(link, "new", overwrite=True)
    assert link.is_symlink() and (real / "MINE").read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["disk", "out"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["out"]


def test_staged_refuses_the_current_folder_and_a_folder_near_an_input(tmp_path, monkeypatch):
    run = _folder_of("a run", tmp_path / "experiment" / "run")
    guard = _guard(is_cwd="the current folder", near_input=lambda given: f"near {given}", not_ours=None)
    monkeypatch.chdir(run)
    for out, says in ((run, "the current folder"), (run.parent, "the current folder"),
                      (tmp_path / "elsewhere" / "..", "the current folder")):
        with pytest.raises(FileExistsError, match=says):
            _write(out, "new", overwrite=True, guard=guard)
    monkeypatch.chdir(tmp_path)
    for out in (run, run.parent, run / "report"):
        with pytest.raises(FileExistsError, match=f"near {run}"):
            _write(out, "new", overwrite=True, guard=guard, inputs=[str(run)])
    assert files_under(tmp_path) == ["experiment/run/MINE"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_staged_interrupted_mid_write_keeps_the_old_folder_and_no_work_folder(tmp_path, stop):
    from qahub.files import staged

    out = _folder_of("old", tmp_path / "out")
    with pytest.raises(stop), staged(out, True, _guard()) as work:
        (work / "MINE").write_text("half", encoding="utf-8")
        raise stop()
    assert files_under(tmp_path) == ["out/MINE"] and (out / "MINE").read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_swap_in_that_fails_puts_the_old_folder_back(tmp_path):
    from qahub.files import swap_in

    out = _folder_of("old", tmp_path / "out")
    with pytest.raises(FileNotFoundError):
        swap_in(tmp_path / ".out.partial-gone", out)
    assert files_under(tmp_path) == ["out/MINE"] and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_remove_leftovers_removes_only_the_targets_work_folders(tmp_path):
    from qahub.files import remove_leftovers

    for name in (".out.partial-1a2b3c4d", ".out.partial-1a2b3c4d-cache", ".out.old-5e6f7a8b", ".other.partial-x",
                 ".outside.partial-x", "out"):
        _folder_of("x", tmp_path / name)
    (tmp_path / ".out.partial-file").write_text("x", encoding="utf-8")
    removed = remove_leftovers(tmp_path / "out")
    assert sorted(Path(p).name for p in removed) == [".out.old-5e6f7a8b", ".out.partial-1a2b3c4d",
                                                     ".out.partial-1a2b3c4d-cache", ".out.partial-file"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.partial-x", ".outside.partial-x", "out"]


# --- a full disk: one line, nothing left behind


class FullDisk:
    """A small filesystem to fill: a 1 MiB tmpfs where this process may mount one (root), else a folder whose
    commands run with a file-size limit (RLIMIT_FSIZE), so that their writes fail in the same way."""

    def __init__(self, folder):
        self.folder = folder
        folder.mkdir()
        self.mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                                      capture_output=True).returncode == 0 if hasattr(os, "geteuid") and \
            os.geteuid() == 0 else False
        self.filler = folder / "filler"

    def fill(self, room):
        """Leave ``room`` bytes free (on the tmpfs; with a file-size limit, a file fails past 2,000 bytes, or any
        write when ``room`` is 0)."""
        self.room = min(room, 2000)
        if self.mounted:
            self.filler.unlink(missing_ok=True)
            stat = os.statvfs(self.folder)
            with open(self.filler, "wb") as handle:
                handle.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - room))

    def qahub(self, *argv, tmp_path):
        env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
        limit = None if self.mounted else self._limit
        done = subprocess.run([*QAHUB, *map(str, argv)], capture_output=True, text=True, env=env, timeout=300,
                              preexec_fn=limit)
        return done.returncode, done.stdout, done.stderr

    def _limit(self):
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.room, self.room))

    def left(self):
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p != self.filler)

    def close(self):
        if self.mounted:
            subprocess.run(["umount", str(self.folder)], check=False)


@pytest.fixture
def full_disk(tmp_path):
    disk = FullDisk(tmp_path / "disk")
    yield disk
    disk.close()


@pytest.mark.parametrize("room", [0, 20_000])
def test_metric_copy_on_a_full_disk_is_one_line_and_leaves_no_folder(full_disk, tmp_path, room):
    full_disk.fill(room)
    code, out, err = full_disk.qahub("metric-copy", "limur", "--out", full_disk.folder / "a" / "b",
                                     tmp_path=tmp_path)
    line = one_line(err)
    assert (code, out) == (1, "")
    assert len(line) < 400 and f"copying the limur metric to {full_disk.folder / 'a' / 'b'}: [Errno" in line
    assert full_disk.left() == []


@pytest.mark.parametrize("room", [0, 40_000])
def test_build_on_a_full_disk_is_one_line_and_leaves_no_lock_or_folder(full_disk, tmp_path, room):
    full_disk.fill(room)
    code, out, err = full_disk.qahub("--quiet", "build", "jemhopqa", "--data-dir", registry.samples_dir("jemhopqa"),
                                     "--out", full_disk.folder / "hub" / "jemhopqa", tmp_path=tmp_path)
    assert code == 1 and "[Errno" in one_line(err)
    assert full_disk.left() == []


@pytest.mark.parametrize("option", ["--output", "--per-question"])
def test_an_output_on_a_full_disk_still_prints_the_scores_and_names_the_file(full_disk, tmp_path, option):
    if not full_disk.mounted:  # a file-size limit would stop evaluate's own temporary files before any scoring
        pytest.skip("needs a tmpfs (root); test_a_failed_output_write_still_prints_the_scores covers it without")
    full_disk.fill(0)
    target = full_disk.folder / "scores.out"
    jemhopqa = registry.samples_dir("jemhopqa")
    code, out, err = full_disk.qahub("--quiet", "evaluate", "jemhopqa", "--predictions", jemhopqa / "predictions.json",
                                     "--references", jemhopqa / "corpus_ver1.2" / "dev_ver1.2.json", option, target,
                                     tmp_path=tmp_path)
    assert code == 1
    assert json.loads(out)["a"]["em"] > 0  # the scores, printed before the write
    assert one_line(err).startswith(f"qahub evaluate: error: {option} {target}: ")
    assert full_disk.left() == []


def test_write_output_names_the_file_in_an_error_without_an_errno(tmp_path, monkeypatch):
    from qahub import files

    def fail(*args, **kwargs):
        raise OSError("the link could not be made")

    monkeypatch.setattr(files.os, "link", fail)
    monkeypatch.setattr(files, "open", fail, raising=False)  # the fallback's exclusive create fails too
    with pytest.raises(OSError) as caught:
        files.write_output(tmp_path / "out.json", "x\n")
    assert str(caught.value) == f"--output {tmp_path / 'out.json'}: the link could not be made"
    assert list(tmp_path.iterdir()) == []


# --- damaged exports: harness-tasks names them too (evaluate's cases are in test_fresh_references.py)


DAMAGED = {
    "limur null outputs": ("limur", "all", lambda rows: rows.map(
        lambda row, i: {"outputs": None if i == 1 else row["outputs"]}, with_indices=True),
        "all/test-00000-of-00001.parquet: row 1: outputs is null"),
    "limur without meta.task_type": ("limur", "all", drop_task_type, "field meta.task_type is missing"),
    "jeopardy without answer": ("jeopardy", "extended", lambda rows: rows.remove_columns("answer"),
                                "field answer is missing"),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_harness_tasks_on_a_damaged_export_is_one_line_and_writes_nothing(sample_exports, tmp_path, case):
    corpus, config, change, message = DAMAGED[case]
    folder = copy_export(sample_exports, corpus, tmp_path)
    resave(folder, config, change, tmp_path / "c")
    code, out, err = harness_tasks(tmp_path / "tasks", tmp_path / "hf-cache", f"{corpus}={folder}", overwrite=False)
    assert (code, out) == (1, "")
    assert message in one_line(err)
    assert not (tmp_path / "tasks").exists()
