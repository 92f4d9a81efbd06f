"""The guides' code blocks, for the tests that run them.

The guides are `docs/*.md` (the docs site; `docs/incoming/` is left out of it) and README.md. Each fenced code block
follows an HTML comment that says how the suite covers it:

- `<!-- run -->`: tests/test_docs.py runs it, in one shared working folder, in the page's order;
- `<!-- test: ID -->`: a test elsewhere runs it, reading it with `block("ID")` or `commands("ID")`;
- `<!-- same as: ID -->`: the same text as the block `test: ID` (README's examples of a guide's block);
- `<!-- not run: REASON -->`: not run, and why (a placeholder, a model or the Hub it needs, an output shown).
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SKIPPED = ("incoming", "hooks")  # mkdocs.yml's exclude_docs: not pages of the site

FENCE = re.compile(r"(?:^<!-- (?P<marker>[^\n]*?) -->\n)?^```(?P<lang>[^\n]*)\n(?P<code>.*?)^```", re.M | re.S)
KINDS = ("run", "test", "same as", "not run")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the project root
    line: int  # of the opening fence
    lang: str
    code: str
    kind: str | None  # one of KINDS, None without a marker
    value: str  # the ID or the reason

    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """README.md and every page of the docs site, relative to the project root."""
    found = sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md")
                   if p.relative_to(DOCS).parts[0] not in SKIPPED)
    return ["README.md", *found]


def text(page: str) -> str:
    """A page's text, each run of whitespace one space (sentences wrap anywhere)."""
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def _marker(comment: str | None) -> tuple[str | None, str]:
    if comment is None:
        return None, ""
    kind, _, value = comment.partition(":")
    return (kind.strip(), value.strip()) if kind.strip() in KINDS else (None, comment)


def blocks(page: str | None = None) -> list[Block]:
    """Every fenced block of one page, or of every page, in order."""
    found = []
    for name in [page] if page else pages():
        source = (ROOT / name).read_text(encoding="utf-8")
        for match in FENCE.finditer(source):
            kind, value = _marker(match["marker"])
            line = source.count("\n", 0, match.start("lang")) + 1
            found.append(Block(name, line, match["lang"].strip(), match["code"], kind, value))
    return found


def block(block_id: str) -> Block:
    """The one block marked `<!-- test: ID -->`."""
    [found] = [b for b in blocks() if b.kind == "test" and b.value == block_id]
    return found


def commands(block_id: str) -> list[str]:
    """The shell commands of the block ``ID``, continuation lines joined, blank lines left out."""
    return [line for line in block(block_id).code.replace("\\\n", " ").splitlines() if line.strip()]
