"""A newcomer's first hour (issue 22): a command line that answers at once and ends quietly on a closed pipe,
refusals that name their fix, sample builds marked, clean Jeopardy targets, READMEs naming only real commands."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import guides
import pytest
from huggingface_hub import DatasetCard

from qahub import cli, publish, registry
from qahub.export.card import SAMPLE_TAG
from qahub.testing import sample_copy

ROOT = Path(__file__).resolve().parents[1]
QAHUB = str(Path(sys.executable).with_name("qahub"))
HEAVY = {"datasets", "evaluate", "pandas", "lm_eval"}


def _qahub(*argv, stdout=subprocess.PIPE, env=None, **kwargs):
    """The installed ``qahub`` command, as a user runs it."""
    return subprocess.run([QAHUB, *argv], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, **kwargs)


def _commands() -> list[str]:
    return sorted(re.search(r"\{([a-z,-]+)\}", _qahub("--help").stdout).group(1).split(","))


# --- 1. --help and list import none of the heavy libraries


def _help_commands():
    return [["--help"], ["list"], *[[c, "--help"] for c in _commands()],
            *[["evaluate", m, "--help"] for m in registry.metric_names()]]


@pytest.mark.parametrize("argv", _help_commands(), ids=" ".join)
def test_help_and_list_import_no_heavy_library(argv):
    done = _qahub(*argv, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {name.split(".")[0] for name in re.findall(r"^import time:.*\|\s*([\w.]+)$", done.stderr, re.M)}
    assert "qahub" in imported, "the import-time profile was not read"
    assert not imported & HEAVY, sorted(imported & HEAVY)


def test_list_catalog_is_what_the_builders_declare():
    written = json.loads((ROOT / "src" / "qahub" / registry.CATALOG).read_text(encoding="utf-8"))
    declared = {corpus: registry.describe(corpus) for corpus in registry.corpus_names()}
    assert written == declared, "a builder's configs or splits changed: run registry.write_catalog()"


def test_list_prints_each_builders_configs_and_splits():
    printed = _qahub("list").stdout
    for corpus in registry.corpus_names():
        for config in registry.config_names(corpus):
            default = r" \(default\)" if config == registry.default_config(corpus) else ""
            splits = ", ".join(registry.splits(corpus, config))
            assert re.search(rf"^{corpus}\s+{re.escape(config)}{default}\s+{re.escape(splits)}$", printed, re.M)
    for metric in registry.metric_names():
        assert re.search(rf"^{metric}\s+yes$", printed, re.M)


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["evaluate", "jeopardy_meteor", "--help"]],
                         ids=["help", "list", "evaluate-help"])
def test_help_and_list_import_no_data_library(argv):
    """The 0.3 s start (benchmarks/bench_cli.py) holds only while these never import pyarrow, numpy or datasets: a
    module-level import in any adapter or builder helper would cost 0.1 s and more, unseen by a timing-free test."""
    code = ("import contextlib, io, sys; from qahub import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        cli.main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('pyarrow', 'numpy', 'datasets', 'pandas') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr[-2000:]


# --- 5. a closed pipe ends quietly


@pytest.mark.parametrize("argv", [
    ["list"],
    ["--help"],
    ["--quiet", "evaluate", "jeopardy_meteor", "--predictions", str(registry.samples_dir("jeopardy") / "replies.json"),
     "--data-dir", str(registry.samples_dir("jeopardy")), "--config", "qa", "--split", "validation", "--per-example"],
], ids=["list", "help", "evaluate"])
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_closed_pipe_ends_quietly_with_exit_0(argv, buffered, tmp_path):
    """As `qahub ... | head -1` once head has gone: stdout is a pipe nobody reads. Buffered, the first write to
    fail is the last flush; unbuffered (PYTHONUNBUFFERED), the first print."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {"HF_HOME": str(tmp_path / "hf"), "PYTHONUNBUFFERED": "" if buffered else "1"}
    try:
        done = _qahub(*argv, stdout=write_end, env=env)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Broken pipe" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr[-2000:]


def test_head_reads_the_first_line_and_the_pipeline_succeeds():
    done = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{QAHUB}' list | head -1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["corpus", "config", "splits"], done.stderr


# --- 3. refusals name their fix


def _jeopardy_without_extended(tmp_path) -> Path:
    data = sample_copy("jeopardy", tmp_path)
    (data / "Russian_QA_Jeopardy_dataset_extended.csv").unlink()
    return data


def test_missing_jeopardy_extended_file_names_the_flags_that_build_the_rest(tmp_path, capsys):
    data = _jeopardy_without_extended(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(data), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "none of Russian_QA_Jeopardy_dataset_extended.csv is there" in err
    assert "--config qa" in err and "--option present_splits_only=true" in err
    # each fix it names works
    assert cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(data), "--out", str(out), "--config", "qa"]) == 0
    assert cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(data), "--out", str(tmp_path / "out2"),
                     "--option", "present_splits_only=true"]) == 0
    assert "skipped config extended" in capsys.readouterr().out


def test_build_all_wraps_a_long_reason_instead_of_cutting_it(tmp_path, capsys, http_server, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    deep = tmp_path / ("a-long-folder-name-" * 6) / "mirror"
    deep.mkdir(parents=True)
    mirror = http_server(deep)  # serves nothing under <corpus>/: every download is a 404
    root = tmp_path / "data-root"
    root.mkdir()
    assert cli.main(["--quiet", "build", "--all", "--data-root", str(root), "--out", str(tmp_path / "hub"),
                     "--mirror-url", mirror]) == 1
    printed = capsys.readouterr().out
    table = printed[printed.index("reason\n"):].split("\n\n")[0]
    rows = table.splitlines()[2:]
    assert any(not line.startswith(" ") and line.startswith("jeopardy") for line in rows)
    assert not any(line.rstrip().endswith("...") for line in rows)
    # joined back, each reason is whole: the mirror URL of the file it could not download, with the HTTP status
    joined = re.sub(r"\n +(?=\S)", " ", table)
    reason = next(line for line in joined.splitlines() if line.startswith("jeopardy"))
    assert f"{mirror}/jeopardy/" in reason and "404" in reason, reason
    # every line fits the 100 columns, but a single word longer than the space left is never broken
    for line in rows:
        assert len(line) <= 100 or max(len(word) for word in line.split()) > 40, line


def _built(tmp_path, corpus, *, sample=False, partial=False) -> Path:
    out = tmp_path / "hub" / corpus
    data = registry.samples_dir(corpus) if sample else sample_copy(corpus, tmp_path)
    argv = ["--quiet", "build", corpus, "--data-dir", str(data), "--out", str(out)]
    assert cli.main(argv + (["--config", registry.config_names(corpus)[0]] if partial else [])) == 0
    return out


def test_publish_all_dry_run_says_what_it_would_publish_and_exits_0(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(publish, "HfApi", lambda token=None: pytest.fail("a dry run must not reach the Hub"))
    _built(tmp_path, "jemhopqa")
    _built(tmp_path, "limur")
    _built(tmp_path, "doc2dial", partial=True)
    capsys.readouterr()
    argv = ["publish", "--all", "--org", "me", "--root", str(tmp_path / "hub"), "--dry-run"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "dry run: would publish 2 of 3 corpora; nothing uploaded" in captured.out
    assert "would not publish me/doc2dial:" in captured.err and "--allow-partial" in captured.err
    assert "to dataset repo me/jemhopqa" in captured.out and "to dataset repo me/limur" in captured.out
    assert "config_name:" not in captured.out and "--verbose prints it" in captured.out
    assert cli.main([*argv, "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert verbose.count("\n--- README.md ---\n") == 2 and "# JEMHopQA" in verbose and "config_name:" in verbose


def test_publish_all_dry_run_fails_when_it_would_publish_nothing(tmp_path, capsys):
    _built(tmp_path, "jemhopqa", partial=True)
    _built(tmp_path, "limur", sample=True)
    assert cli.main(["publish", "--all", "--org", "me", "--root", str(tmp_path / "hub"), "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "would not publish me/jemhopqa: " in captured.err and "would not publish me/limur: " in captured.err
    assert "dry run: would publish 0 of 2 corpora" in captured.out


def test_publish_given_a_folder_in_place_of_a_corpus_names_folder(tmp_path):
    done = _qahub("publish", str(tmp_path / "jemhopqa"), "--repo-id", "me/jemhopqa")
    assert done.returncode == 2
    assert f"to publish a built folder, name its corpus and pass the folder with --folder: qahub publish CORPUS " \
           f"--folder {tmp_path / 'jemhopqa'}" in done.stderr
    assert "Traceback" not in done.stderr


# --- 4. a build of a bundled sample folder is a sample build


@pytest.mark.parametrize("how", ["the folder", "a symlink to it", "a subfolder path"])
def test_a_build_of_a_sample_folder_is_marked_and_refused_by_publish(how, tmp_path, capsys):
    sample = registry.samples_dir("limur")
    data = {"the folder": sample, "a subfolder path": sample / ".." / "limur"}.get(how)
    if data is None:
        data = tmp_path / "link"
        data.symlink_to(sample, target_is_directory=True)
    out = tmp_path / "limur"
    assert cli.main(["build", "limur", "--data-dir", str(data), "--out", str(out)]) == 0
    assert "built from qahub's bundled sample data" in capsys.readouterr().out
    card = DatasetCard.load(out / "README.md")
    assert SAMPLE_TAG in card.data.tags and "not from the corpus" in card.text
    assert cli.main(["publish", "limur", "--repo-id", "me/limur", "--folder", str(out), "--dry-run"]) == 1
    assert "built from qahub's bundled sample data (tag qahub-sample)" in capsys.readouterr().err


def test_a_build_of_other_files_is_not_a_sample_build(tmp_path, capsys):
    out = _built(tmp_path, "limur")
    assert "bundled sample" not in capsys.readouterr().out
    assert SAMPLE_TAG not in (DatasetCard.load(out / "README.md").data.tags or [])
    assert cli.main(["publish", "limur", "--repo-id", "me/limur", "--folder", str(out), "--dry-run"]) == 0


# --- 6. Jeopardy's clean targets, the doc2dial no-answer rule, the READMEs' commands, the harness-tasks hint


@pytest.mark.parametrize("answer, clean", [
    ('"Defence of the Ancients" {зачет: "DotA"}', '"Defence of the Ancients"'),
    ("Пятиборец {зачет: (так уж и быть) многоборец}", "Пятиборец"),
    ("Черновицкий [национальный] университет [имени Юрия Федьковича]", "Черновицкий университет"),
    ("[Публий] Овидий [Назон] (вот такая метаморфоза)", "Овидий"),
    ("Ур (зиккурат (скорее всего, культового); Ур)", "Ур"),
    ("[Евгений Гришковец]", "Евгений Гришковец"),
    ("(Стивен) Кинг", "(Стивен) Кинг"),
    ("Рим", "Рим"),
    ("Рим\n{зачет: Roma}", "Рим"),
])
def test_jeopardy_target_is_the_clean_answer(answer, clean):
    from qahub.metrics.jeopardy_meteor import task_api

    assert task_api.target({"answer": answer}) == clean


JEOPARDY_QA = {
    "Russian_QA_Jeopardy_dataset_extended_training.csv": [
        ("ЭТА ИГРА — модификация Warcraft III.", '"Defence of the Ancients" {зачет: ""DotA""}'),
        ("ОН получил звание сержанта после демобилизации.", "[Евгений] Гришковец (за пропаганду флота)"),
    ],
    "Russian_QA_Jeopardy_dataset_extended_validation.csv": [("Столица Италии.", "Рим {зачет: Roma}")],
}


def _jeopardy_qa_export(tmp_path) -> Path:
    import csv

    data = tmp_path / "jeopardy-files"
    data.mkdir()
    for name, rows in JEOPARDY_QA.items():
        with open(data / name, "w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([("QuestionText", "Answer"), *rows])
    out = tmp_path / "exports" / "jeopardy"
    assert cli.main(["--quiet", "build", "jeopardy", "--data-dir", str(data), "--out", str(out), "--config", "qa"]) == 0
    return out


def test_jeopardy_fewshot_demonstrations_show_the_clean_answer_and_the_rows_keep_theirs(tmp_path):
    pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    export = _jeopardy_qa_export(tmp_path)
    tasks = tmp_path / "tasks"
    assert cli.main(["--quiet", "harness-tasks", "--out", str(tasks), "--dataset", f"jeopardy={export}"]) == 0

    class Abstains(LM):
        def generate_until(self, requests):
            return ["Ответ: Пас" for _ in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    result = simple_evaluate(model=Abstains(), tasks=["qahub_jeopardy"], task_manager=TaskManager(include_path=str(tasks)),
                             num_fewshot=2, log_samples=True, bootstrap_iters=0)
    [sample] = result["samples"]["qahub_jeopardy"]
    context = sample["arguments"][0][0]
    assert "Ответ: Гришковец\n\n" in context and 'Ответ: "Defence of the Ancients"\n\n' in context, context
    assert "{" not in context and "[" not in context and "(за пропаганду" not in context
    assert sample["doc"]["answer"] == "Рим {зачет: Roma}"
    import datasets

    train = datasets.load_dataset(str(export), "qa", split="train")
    assert [row["answer"] for row in train] == [answer for _, answer in JEOPARDY_QA[
        "Russian_QA_Jeopardy_dataset_extended_training.csv"]]


def test_the_guide_states_doc2dial_no_answer_rule_and_the_scores_follow_it():
    from qahub.metrics.doc2dial.task_api import TASKS

    text = guides.text("docs/harnesses.md")
    assert "an empty reply and a punctuation-only reply (`\".\"`, `\"...\"`) all normalise to the empty span and " \
           "score `exact` 100 and `f1` 100 there" in text
    score = TASKS["qahub_doc2dial_grounding"].score
    no_answer = {"answers": {"text": [], "answer_start": []}}
    for reply in ("", ".", "...", "NO ANSWER", "**no answer**"):
        assert score(reply, no_answer)["exact"] == score(reply, no_answer)["f1"] == 100.0, reply
    assert score("the office", no_answer)["exact"] == 0.0


# `qahub WORD` where a shell runs it (not Python's `from qahub import ...`)
COMMAND = r"(?:^|[\s;&|(])(?<!from )qahub (?:--quiet )?([a-z][a-z_-]*)"


def _code_spans(text: str) -> list[str]:
    """The fenced code blocks and inline code of a Markdown text."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


@pytest.mark.parametrize("readme", [*guides.pages(), "CONTRIBUTING.md", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "metrics").glob("*/README.md"))])
def test_readmes_name_only_qahub_commands_that_exist(readme):
    commands = _commands()
    named = [word for span in _code_spans((ROOT / readme).read_text(encoding="utf-8"))
             for word in re.findall(COMMAND, span, re.M)]
    assert named or readme in ("CONTRIBUTING.md", "docs/index.md") or readme.startswith("docs/reference/")
    assert not [word for word in named if word not in commands], (readme, commands)


def test_readme_command_check_catches_a_command_that_does_not_exist():
    named = [w for span in _code_spans("see `qahub export DIR`, `from qahub import x` and\n```bash\nqahub list\n```\n")
             for w in re.findall(COMMAND, span, re.M)]
    assert sorted(named) == ["export", "list"] and "export" not in _commands()


def test_harness_tasks_hint_names_every_task_it_wrote(tmp_path):
    exports = {}
    for corpus in ("jemhopqa", "limur"):
        exports[corpus] = tmp_path / "exports" / corpus
        assert cli.main(["--quiet", "build", corpus, "--data-dir", str(registry.samples_dir(corpus)),
                         "--out", str(exports[corpus])]) == 0
    out = tmp_path / "qahub-tasks"
    done = _qahub("--quiet", "harness-tasks", "--out", str(out),
                  *[arg for corpus, path in exports.items() for arg in ("--dataset", f"{corpus}={path}")],
                  env={"HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 0, done.stderr[-2000:]
    hinted = re.search(r"--tasks (\S+) \.\.\.$", done.stdout, re.M).group(1).split(",")
    written = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert sorted(hinted) == written == sorted(json.loads((out / "qahub_tasks.json").read_text(encoding="utf-8")))
    assert "qahub_jemhopqa_derivations" in hinted
