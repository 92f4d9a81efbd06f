"""A newcomer's first stumbles (issue 36, items 8 and 9): ``qahub demo --overwrite`` replaces only its own earlier
output; the README's install lines are the ones that work; a predictions file without the reply field, or with
part of a composite id, is told what it has and what to pass."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import guides
import pytest

from qahub import cli, demo
from qahub.evaluate_cli import jeopardy_meteor, predictions, topical_chat

ROOT = Path(__file__).resolve().parents[1]


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_demo_overwrite_refuses_a_folder_of_real_exports_named_after_corpora(sample_exports, tmp_path, capsys):
    """A JEMHopQA export made by `qahub build` in exports/jemhopqa looks like the demo's own corpus folder; without
    the demo's marker it is refused in one line and left as it was (it was replaced by the 3-question sample)."""
    exports = tmp_path / "exports"
    shutil.copytree(sample_exports["jemhopqa"], exports / "jemhopqa")
    before = _tree(exports)
    assert cli.main(["--quiet", "demo", "--out", str(exports), "--overwrite"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{exports}: holds jemhopqa, which is not demo output (no {demo.MARKER}" in err, err
    assert _tree(exports) == before


def test_demo_overwrite_accepts_its_own_marked_output_only(tmp_path):
    out = tmp_path / "demo"
    (out / "jemhopqa").mkdir(parents=True)
    (out / demo.MARKER).write_text(json.dumps({"written_by": "qahub demo", "corpora": ["jemhopqa"]}), encoding="utf-8")
    demo._check_out(out, overwrite=True)
    (out / "limur").mkdir()  # a corpus the marker does not name: not written by that demo
    with pytest.raises(FileExistsError, match="holds limur, which is not demo output"):
        demo._check_out(out, overwrite=True)
    (out / "limur").rmdir()
    for damaged in ("[]", "{", json.dumps({"written_by": "me", "corpora": ["jemhopqa"]}), '{"written_by": "qahub demo"}'):
        (out / demo.MARKER).write_text(damaged, encoding="utf-8")
        with pytest.raises(FileExistsError, match="is not demo output"):
            demo._check_out(out, overwrite=True)


def test_demo_writes_its_marker_before_anything_else(tmp_path, monkeypatch):
    """A demo killed during its first build leaves a folder a later --overwrite recognises."""
    out = tmp_path / "demo"

    def stop(corpus, sample, folder, overwrite):
        assert json.loads((out / demo.MARKER).read_text(encoding="utf-8"))["written_by"] == "qahub demo"
        raise RuntimeError("stopped")

    monkeypatch.setattr(demo, "_build_and_load", stop)
    assert demo.run_demo(out, overwrite=False, evaluate=lambda argv: 0) == 1
    assert json.loads((out / demo.MARKER).read_text(encoding="utf-8"))["corpora"] == list(cli.registry.corpus_names())
    demo._check_out(out, overwrite=True)


def _install_lines(text: str) -> list[str]:
    """Every `pip install` of a code block (its comment cut off) and of inline code."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and "pip install" in line:
            found.append(line.split("#")[0].strip())
    return found + re.findall(r"`([^`\n]*pip install[^`\n]*)`", text)


def test_every_install_line_of_the_guides_and_contributing_installs_from_the_clone():
    """qahub is not on PyPI: `pip install "qahub[...]"` fails. Each line installs the clone (`-e ".[extras]"`,
    extras that pyproject.toml declares) or a package by its own name; the messages of the code say the same."""
    extras = set(metadata.metadata("qahub").get_all("Provides-Extra"))
    docs = [*guides.pages(), "CONTRIBUTING.md"]
    lines = [line for doc in docs for line in _install_lines((ROOT / doc).read_text("utf-8"))]
    assert any('-e ".[harness,report]"' in line for line in lines)
    for line in lines:
        assert not re.search(r"""pip install\s+(-\S+\s+)*["']?qahub""", line), line
        for named in re.findall(r"""-e\s+["']?\.\[([^\]]*)\]""", line):
            assert set(named.split(",")) <= extras, line
    sources = [*ROOT.glob("src/qahub/**/*.py"), *ROOT.glob("loaders/*.py"), *ROOT.glob("metrics/*/*.py")]
    wrong = [f"{p.relative_to(ROOT)}: {m}" for p in sources for m in re.findall(r"pip install ['\"]?qahub\S*",
                                                                                p.read_text(encoding="utf-8"))]
    assert wrong == []


def _read(tmp_path, text, fields, name="predictions.json", **kwargs):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return predictions.read(path, fields, **kwargs)


def test_a_record_without_the_reply_field_names_its_fields_and_reply_field(tmp_path):
    with pytest.raises(ValueError) as caught:
        _read(tmp_path, '[{"question_id": 1, "pred": "Москва"}]', jeopardy_meteor.FIELDS)
    message = str(caught.value)
    assert "record 0: no reply (a field 'prediction' or 'answer' or 'Answer')" in message
    assert "it has the field 'pred'" in message and "--reply-field pred" in message
    assert len(_read(tmp_path, '[{"question_id": 1, "pred": "Москва"}]', jeopardy_meteor.FIELDS,
                     reply_field="pred")) == 1
    with pytest.raises(ValueError, match=r"fields 'pred', 'score': name the reply's field with --reply-field NAME"):
        _read(tmp_path, '[{"question_id": 1, "pred": "a", "score": 1}]', jeopardy_meteor.FIELDS)


@pytest.mark.parametrize("record, missing", [({"conversation_id": "t_1", "response": "hi"}, "field 'turn_index' is"),
                                             ({"turn_index": 3, "response": "hi"}, "field 'conversation_id' is")])
def test_a_composite_id_names_its_missing_part(tmp_path, record, missing):
    with pytest.raises(ValueError) as caught:
        _read(tmp_path, json.dumps([record]), topical_chat.FIELDS)
    assert f"record 0: no id: the {missing} missing (the id is 'conversation_id + turn_index')" in str(caught.value)


def test_a_record_with_no_id_at_all_names_the_fields_it_has(tmp_path):
    with pytest.raises(ValueError, match=r"no id: expected the field 'question_id' or 'id' or 'QuestionID'; "
                                         r"the record has field 'prediction'"):
        _read(tmp_path, '[{"prediction": "a"}]', jeopardy_meteor.FIELDS)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """qahub's wheel built from a copy of the checkout (pip builds in the source folder), and pip's output."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "qahub"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("src", "loaders", "metrics", "dataset_cards"):
        shutil.copytree(ROOT / name, source / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(root / "out"), str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (root / "out").glob("qahub-*.whl")
    return path, done.stdout + done.stderr


def test_the_wheel_builds_without_setuptools_warnings_and_ships_every_metric_directory(wheel):
    """The metric directories and samples are package data (setuptools warned "Package would be ignored" 17
    times, once per such folder); the wheel still holds every file of each one."""
    path, output = wheel
    assert "would be ignored" not in output and "absent from the `packages`" not in output, output[-3000:]
    names = set(zipfile.ZipFile(path).namelist())
    for folder in sorted(p for p in (ROOT / "metrics").iterdir() if p.is_dir() and p.name != "__pycache__"):
        for file in sorted(folder.iterdir()):
            if file.is_file():
                assert f"qahub/metrics/{folder.name}/{file.name}" in names, file
    samples = [p for p in (ROOT / "src" / "qahub" / "samples").rglob("*") if p.is_file()]
    assert samples and all(f"qahub/{p.relative_to(ROOT / 'src' / 'qahub').as_posix()}" in names for p in samples)
    assert {"qahub/corpora.json", "qahub/loaders/jemhopqa.py", "qahub/dataset_cards/jemhopqa.md"} <= names
    modules = [p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src" / "qahub").rglob("*.py")
               if "samples" not in p.parts]  # every subpackage listed in pyproject's packages (qahub.export, ...)
    assert modules and {name for name in modules if name not in names} == set()


def test_each_metric_directory_of_the_wheel_loads_with_evaluate_without_qahub(wheel, tmp_path):
    path, _ = wheel
    with zipfile.ZipFile(path) as archive:
        archive.extractall(tmp_path, [n for n in archive.namelist() if n.startswith("qahub/metrics/")])
    dirs = [str(p) for p in sorted((tmp_path / "qahub" / "metrics").iterdir()) if (p / f"{p.name}.py").is_file()]
    code = ("import sys; sys.modules['qahub'] = None  # any import of qahub fails\n"
            "import evaluate\n"
            "for folder in sys.argv[1:]:\n"
            "    print(evaluate.load(folder).name)\n")
    done = subprocess.run([sys.executable, "-c", code, *dirs], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert dirs and len(done.stdout.splitlines()) == len(dirs)
