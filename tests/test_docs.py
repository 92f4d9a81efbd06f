"""The guides (docs/*.md, README.md): every code block is run by the suite or says why not; the blocks marked
`<!-- run -->` run here, as written, in one working folder; the site's navigation holds every guide; the README
stays short. The site itself is built by `.ci/run` (`mkdocs build --strict`)."""

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest
import yaml
from guides import KINDS, ROOT, blocks, pages

from qahub import cli

TESTS = Path(__file__).parent
RUN = [b for b in blocks() if b.kind == "run"]


def test_every_code_block_is_run_or_says_why_not():
    unmarked = [b.where() for b in blocks() if b.kind is None]
    assert not unmarked, f"a code block needs <!-- {' | '.join(KINDS)}: ... --> before it: {unmarked}"
    assert not [b.where() for b in blocks() if b.kind == "not run" and len(b.value) < 10], "say why it is not run"
    assert all(b.lang for b in blocks()), [b.where() for b in blocks() if not b.lang]


def test_each_block_a_test_runs_is_read_by_a_test():
    ids = [b.value for b in blocks() if b.kind == "test"]
    assert len(ids) == len(set(ids)), ids
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.glob("test_*.py"))
    unread = [i for i in ids if not re.search(rf"""(?:block|commands)\(["']{re.escape(i)}["']\)""", sources)]
    assert not unread, f"no test reads these blocks with block(ID) or commands(ID): {unread}"


def test_a_copy_of_a_block_is_that_block_word_for_word():
    tested = {b.value: b.code for b in blocks() if b.kind == "test"}
    for copy in (b for b in blocks() if b.kind == "same as"):
        assert copy.code == tested.get(copy.value), f"{copy.where()} is not the block {copy.value!r}"


def test_the_block_check_catches_an_unmarked_block(tmp_path, monkeypatch):
    import guides

    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- run -->\n```bash\nqahub list\n```\n\n```bash\nqahub nosuch\n```\n")
    monkeypatch.setattr(guides, "ROOT", tmp_path)
    monkeypatch.setattr(guides, "DOCS", tmp_path / "docs")
    assert [(b.kind, b.line) for b in guides.blocks()] == [("run", 2), (None, 6)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """One folder for every runnable block, in page order (a page's later block reads what an earlier one
    wrote), with the clone's sample and metric folders where the blocks name them."""
    folder = tmp_path_factory.mktemp("guides")
    for name in ("src", "metrics"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def _run_shell(code: str):
    """Each `qahub ...` line, in this process (as the `qahub` script runs it); nothing else is allowed here."""
    for line in code.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        if not argv:
            continue
        assert argv[0] == "qahub", f"only qahub commands run in-process here: {line}"
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(argv[1:]) == 0, line


@pytest.mark.parametrize("block", RUN, ids=[b.where() for b in RUN])
def test_the_runnable_blocks_run_as_written(block, workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    if block.lang == "bash":
        _run_shell(block.code)
    else:
        assert block.lang == "python", block.where()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block.code, block.where(), "exec"), {"__name__": "__guide__"})


def test_the_site_s_navigation_holds_every_guide():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def listed(nav):
        for entry in nav:
            for value in entry.values() if isinstance(entry, dict) else [entry]:
                yield from listed(value) if isinstance(value, list) else [value]

    generated = {"reference/metrics.md"}  # docs/hooks/metrics_reference.py makes it
    site = {page.removeprefix("docs/") for page in pages() if page != "README.md"}
    assert set(listed(config["nav"])) == site | generated


def test_the_readme_is_short_and_links_every_guide():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    linked = set(re.findall(r"\]\((docs/[\w/-]+\.md)", readme))
    guides = {page for page in pages() if page.startswith("docs/") and "/reference/" not in page}
    assert guides - {"docs/index.md"} <= linked, guides - linked
    assert os.path.isfile(ROOT / "docs" / "report-first-screen.png")
