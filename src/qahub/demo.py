"""``qahub demo``: the main job on the bundled sample data.

For every corpus with a sample folder: build all configs into ``OUT/<corpus>/`` (a Hub-ready folder), load
each config back with ``datasets.load_dataset`` from that folder, then score the sample predictions with
the corpus's metrics, as listed in the sample's ``demo.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets

from qahub import registry
from qahub.export import export


def run_demo(out: Path, overwrite: bool, evaluate) -> int:
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out}: not empty; pass --overwrite to replace the earlier demo output")
    if out.exists():
        shutil.rmtree(out)
    failures = 0
    for corpus in registry.corpus_names():
        sample = registry.samples_dir(corpus)
        if not sample.is_dir():
            print(f"== {corpus}: no bundled sample, skipped")
            continue
        print(f"== {corpus}: building every config from {sample}")
        report = export(corpus, out / corpus, data_dir=sample)
        for config in sorted({s.config for s in report.splits}):
            loaded = datasets.load_dataset(str(report.folder), config)
            sizes = ", ".join(f"{split} {len(ds)}" for split, ds in loaded.items())
            print(f"   load_dataset({str(report.folder)!r}, {config!r}): {sizes}")
        for argv in _demo_evaluations(sample):
            print(f"== qahub evaluate {' '.join(argv)}")
            failures += evaluate(argv) != 0
    print(f"demo output in {out}/ (each folder is what a Hub dataset repo holds)")
    return 1 if failures else 0


def _demo_evaluations(sample: Path) -> list[list[str]]:
    spec = sample / "demo.json"
    if not spec.is_file():
        return []
    entries = json.loads(spec.read_text(encoding="utf-8")).get("evaluate", [])
    return [[arg.replace("{sample}", str(sample)) for arg in argv] for argv in entries]
