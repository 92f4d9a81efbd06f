"""``qahub demo``: the main job on the bundled sample data.

For every corpus with a sample folder: build all configs into ``OUT/<corpus>/`` (a Hub-ready folder), load
each config back with ``datasets.load_dataset`` from that folder, then score the sample predictions with
the corpus's metrics, as listed in the sample's ``demo.json``. ``OUT/qahub_demo.json`` (``MARKER``), written
before anything else, is how a later ``--overwrite`` knows the folder for the demo's own: a folder without it
(say, real exports named after their corpora) is refused, never replaced.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets

from qahub import registry
from qahub.export.writer import export
from qahub.files import Guard, check_folder, listed, write_output

MARKER = "qahub_demo.json"  # written first in every demo folder: proof that the demo wrote it, and what it holds


def run_demo(out: Path, overwrite: bool, evaluate, explain=str) -> int:
    """The demo, with `datasets`' progress bars off: its own lines say what is built and loaded (the bars of
    the first corpus's builds and loads were printed, those of the others not, as its first `qahub evaluate
    --quiet` turned them off for the rest of the process)."""
    were_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        return _run_demo(out, overwrite, evaluate, explain)
    finally:
        if not were_disabled:
            datasets.enable_progress_bars()


def _run_demo(out: Path, overwrite: bool, evaluate, explain) -> int:
    _check_out(out, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    marker = {"written_by": "qahub demo", "corpora": list(registry.corpus_names())}
    write_output(out / MARKER, json.dumps(marker, indent=1) + "\n", overwrite=True, option="--out")
    failures = 0
    for corpus in registry.corpus_names():
        sample = registry.samples_dir(corpus)
        if not sample.is_dir():
            print(f"== {corpus}: no bundled sample, skipped")
            continue
        print(f"== {corpus}: building every config from {sample}")
        try:
            _build_and_load(corpus, sample, out / corpus, overwrite)
        except Exception as err:  # one corpus's failure is reported; the demo goes on with the others
            print(f"   FAILED: {explain(err)}")
            failures += 1
            continue
        for argv in demo_evaluations(sample):
            print(f"== qahub evaluate {' '.join(argv)}")
            failures += evaluate(argv) != 0
    print(f"demo output in {out}/ (each folder is what a Hub dataset repo holds); {failures} step(s) failed")
    return 1 if failures else 0


def _check_out(out: Path, overwrite: bool):
    """The demo folder may only hold earlier demo output: its marker, and the folders of the corpora the marker
    names (each corpus's export then guards its own folder)."""
    check_folder(out, overwrite, Guard(not_folder=f"{out}: is a file; choose another --out",
                                       not_empty=f"{out}: not empty; pass --overwrite to replace the earlier demo output",
                                       not_ours=f"{out}: is not demo output; choose another --out",
                                       is_ours=_only_demo_output))


def _only_demo_output(out: Path) -> bool:
    corpora = _marked_corpora(out)
    if corpora is None:
        names = sorted(p.name for p in out.iterdir())
        raise FileExistsError(f"{out}: holds {listed(names)}, which is not demo output (no {MARKER}: the demo "
                              "writes it first); choose another --out")
    foreign = sorted(p.name for p in out.iterdir() if p.name != MARKER and not _is_demo_output(p.name, corpora))
    if foreign:
        raise FileExistsError(f"{out}: holds {', '.join(foreign)}, which is not demo output; choose another --out")
    return True


def _marked_corpora(out: Path) -> list | None:
    """The corpora an earlier demo's marker names, None when ``out`` has no readable marker."""
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("written_by") != "qahub demo":
        return None
    corpora = marker.get("corpora")
    if not isinstance(corpora, list):
        return None
    return [name for name in corpora if isinstance(name, str)]


def _is_demo_output(name: str, corpora: list) -> bool:
    """A corpus folder the demo wrote, or the lock / work folder of a build of one (left by a killed demo; the
    next build of that corpus removes it)."""
    if not corpora:
        return False
    return name in corpora or bool(re.fullmatch(rf"\.({'|'.join(map(re.escape, corpora))})\.(lock|partial-.+|old-.+)", name))


def _build_and_load(corpus: str, sample: Path, folder: Path, overwrite: bool):
    report = export(corpus, folder, data_dir=sample, overwrite=overwrite, sample=True)
    for config in sorted({s.config for s in report.splits}):
        loaded = datasets.load_dataset(str(report.folder), config)
        sizes = ", ".join(f"{split} {len(ds)}" for split, ds in loaded.items())
        print(f"   load_dataset({str(report.folder)!r}, {config!r}): {sizes}")


def demo_evaluations(sample: Path) -> list[list[str]]:
    """The ``qahub evaluate`` argument lists of a sample folder's ``demo.json``, ``{sample}`` filled in."""
    spec = sample / "demo.json"
    if not spec.is_file():
        return []
    entries = json.loads(spec.read_text(encoding="utf-8")).get("evaluate", [])
    return [[arg.replace("{sample}", str(sample)) for arg in argv] for argv in entries]
