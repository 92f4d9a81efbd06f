"""A card without ``tags:`` exports; an unexpected exception in any ``qahub`` command is one line with the way to
see its traceback (``--debug``); CONTRIBUTING names only tests that exist."""

import re
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard

from qahub import cli, registry
from qahub.export.card import SAMPLE_TAG

ROOT = Path(__file__).resolve().parents[1]
HINT = " (rerun with --debug for the traceback)"


@pytest.fixture
def card_without_tags(tmp_path, monkeypatch):
    """JEMHopQA's card with its ``tags:`` key taken out (CONTRIBUTING calls it optional), used by the export."""
    text = registry.card_path("jemhopqa").read_text(encoding="utf-8")
    card = tmp_path / "jemhopqa.md"
    card.write_text(re.sub(r"^tags:\n(?:- .*\n)+", "", text, flags=re.M), encoding="utf-8")
    assert DatasetCard.load(card).data.get("tags") is None
    real = registry.card_path
    monkeypatch.setattr(registry, "card_path", lambda corpus: card if corpus == "jemhopqa" else real(corpus))
    return card


def test_a_card_without_tags_builds_and_its_sample_build_is_still_refused_by_publish(card_without_tags, tmp_path,
                                                                                     capsys):
    out = tmp_path / "jemhopqa"
    assert cli.main(["--quiet", "build", "jemhopqa", "--data-dir", str(registry.samples_dir("jemhopqa")),
                     "--out", str(out)]) == 0
    assert DatasetCard.load(out / "README.md").data.tags == [SAMPLE_TAG]
    capsys.readouterr()
    assert cli.main(["publish", "jemhopqa", "--folder", str(out), "--repo-id", "org/jemhopqa", "--dry-run"]) == 1
    assert "built from qahub's bundled sample data (tag qahub-sample)" in capsys.readouterr().err


def test_the_demo_of_a_corpus_whose_card_has_no_tags_builds_and_scores(card_without_tags, tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.setattr(registry, "corpus_names", lambda: ("jemhopqa",))
    assert cli.main(["--quiet", "demo", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "FAILED" not in out and "demo output in" in out and "0 step(s) failed" in out
    assert DatasetCard.load(tmp_path / "demo" / "jemhopqa" / "README.md").data.tags == [SAMPLE_TAG]


def _fails(monkeypatch, error):
    def raise_it():
        raise error

    monkeypatch.setattr(registry, "catalog", raise_it)


def test_an_unexpected_exception_is_one_line_naming_debug(monkeypatch, capsys):
    _fails(monkeypatch, AttributeError("'DatasetCardData' object has no attribute 'tags'"))
    assert cli.main(["list"]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"qahub list: error: AttributeError: 'DatasetCardData' object has no attribute 'tags'{HINT}\n"


@pytest.mark.parametrize("argv", [["--debug", "list"], ["list", "--debug"]])
def test_debug_prints_the_traceback_then_the_line(monkeypatch, capsys, argv):
    _fails(monkeypatch, KeyError("tags"))
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n") and "in raise_it" in err
    assert err.endswith("\nKeyError: 'tags'\nqahub list: error: KeyError: 'tags'\n")


def test_an_expected_error_stays_one_line_and_debug_shows_its_traceback(capsys, tmp_path):
    argv = ["harness-tasks", "--out", str(tmp_path / "t"), "--dataset", "jemhopqa"]
    assert cli.main(argv) == 1
    line = "qahub harness-tasks: error: --dataset 'jemhopqa': expected CORPUS=LOCATION (an exported folder or ORG/NAME)\n"
    assert capsys.readouterr().err == line
    assert cli.main(["--debug", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n") and err.endswith(line)


def test_contributing_names_only_tests_that_exist():
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")  # CONTRIBUTING.md points there
    files = set(re.findall(r"tests/(test_\w+\.py)(?!\w)", text))
    functions = set(re.findall(r"::(test_\w+)", text))
    assert "test_readmes_name_only_qahub_commands_that_exist" in functions
    assert not [f for f in files if "NAME" not in f and "METRIC" not in f and not (ROOT / "tests" / f).is_file()]
    defined = {name for path in (ROOT / "tests").glob("test_*.py")
               for name in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M)}
    assert functions <= defined, functions - defined
