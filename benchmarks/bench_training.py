"""The training configs (issue 38): making ``sft`` (and ``messages``) of an export against rendering the same
documents' prompts alone.

Ours: ``qahub.training.write_training`` on an export of the real corpus built beforehand (untimed): reading every
task's training and evaluated documents, indexing the evaluated ones' 13-grams, checking and rendering each
training document, writing the Parquet shards. Baseline: reading the same documents the same way
(``training.Docs``, each set once: the evaluated ones too), and calling each task's ``prompt`` on each of its
training documents, nothing else: no target, no check, no row, no writing. The modules both import are imported
before either clock starts. Each side runs in its own process, in turn, the best of 3 to 10 tries
(``_common.best_in_turn``: a short build's best needs more tries on a shared machine). Target: at most 2x.

Real data with a train split: JEMHopQA (all three versions). Topical-Chat's train file is not in
``../shared/data``: its test_rare file stands in as the train split (linked as ``train.json``, test_rare itself
left out), so the row is a real-sized Topical-Chat build of 539 conversations. Jeopardy's shared file is the qa
validation split alone, and doc2dial and LIMUR have no real data here: no row for them.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from _common import SHARED_DATA, best_in_turn, met, row

TARGET = 2.0


def _topical_chat_files(root: Path) -> Path | None:
    source = SHARED_DATA / "topical_chat"
    if not source.is_dir():
        return None
    files = root / "topical_chat-files"
    shutil.copytree(source, files, symlinks=True, ignore=shutil.ignore_patterns("TopicalChatASR"))
    for kind in ("conversations", "reading_sets/pre-build"):
        folder = files / kind
        (folder / "test_rare.json").rename(folder / "train.json")
    return files


def _exports(root: Path) -> dict:
    """{corpus: export folder} of the real corpora, builder configs only."""
    from qahub import registry
    from qahub.export.writer import export

    found = {}
    if (SHARED_DATA / "jemhopqa").is_dir():
        export("jemhopqa", root / "jemhopqa", configs=registry.config_names("jemhopqa"),
               data_dir=SHARED_DATA / "jemhopqa", cache_dir=root / "cache")
        found["jemhopqa"] = root / "jemhopqa"
    files = _topical_chat_files(root)
    if files:
        export("topical_chat", root / "topical_chat", configs=["conversations", "reading_sets"], data_dir=files,
               cache_dir=root / "cache", builder_options={"present_splits_only": True}, skip_unavailable=True)
        found["topical_chat"] = root / "topical_chat"
    return found


def _imported(corpus, *args):
    """Untimed, before either side: the modules both import (datasets, pyarrow, the corpus's tasks), so that the
    seconds compared are the work on the documents."""
    import datasets  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    from qahub import planning, registry, training  # noqa: F401

    planning.task_api(corpus)
    return (corpus, *args)


def prepare_build(corpus, location, out):
    shutil.rmtree(out, ignore_errors=True)  # the last try's rows
    return _imported(corpus, location, out)


prepare_render = _imported


def build(corpus, location, out):
    from qahub import registry, training

    made = training.write_training(corpus, str(location), Path(out), registry.training_configs(corpus), 1 << 29)
    return {config: {split: c.rows for split, c in entry.counts.items()} for config, entry in made.items()}


def render(corpus, location):
    """The baseline: the same documents as ``build`` reads, read the same way (``training.Docs``: each set of
    documents once; the evaluated ones too, though nothing is done with them here), and each task's prompt
    rendered on each of its training documents: nothing else (no decontamination, no rows, no writing)."""
    from qahub import planning, training

    location = training.export_at(str(location))  # its card read once, as ``build`` reads it
    layout = training.Layout.of(corpus, location)
    specs = planning.task_api(corpus).TASKS
    docs = training.Docs(corpus, location)
    for name, config, split in layout.evaluated:
        docs(name, config, split)
    rendered = 0
    for name, (config, splits) in layout.sources.items():
        for split in splits.values():
            for doc in training.each(docs(name, config, split)):
                specs[name].prompt(doc)
                rendered += 1
    return rendered


def run() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="qahub-bench-training-") as tmp:
        root = Path(tmp)
        for corpus, location in _exports(root).items():
            out = str(root / f"out-{corpus}")
            ours, base, tries = best_in_turn(("bench_training:build", corpus, str(location), out),
                                             ("bench_training:render", corpus, str(location)))
            ratio = ours[0] / base[0]
            rows.append(row(f"{corpus} sft/messages vs rendering the prompts alone", ours, base,
                            f"{ours[2][:60]}; {ratio:.2f}x the rendering, best of {tries} (target <= {TARGET:g}x: "
                            f"{met(ratio <= TARGET)})"))
    return rows
