"""Topical-Chat: build time and peak memory of the builder against a bare ``json.load`` of the same files.

Rows: the four real valid/test conversation files of ../shared/data/topical_chat (indented JSON, 14.5 MiB
together), and a synthetic train-sized conversations file: upstream train.json's 8,628 conversations, made of
the 2,156 real valid/test conversations cycled under new ids and written as compact JSON (no indentation, no
spaces after separators), 41.7 MiB (43.8 MB) -- about the 40 MB the issue gives for the upstream train file,
which is not in ../shared/data. The printed note gives each input's size as measured.

``BUILD`` and ``make_source``: what ``bench_builds.py`` exports of Topical-Chat, from a >= 40 MB source (and the
build's peak memory against it).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from _common import SHARED_DATA, copies_for, measure, row

REAL_SPLITS = ("valid_freq", "valid_rare", "test_freq", "test_rare")
TRAIN_CONVERSATIONS = 8628  # upstream train.json
BUILD = {"config": "conversations", "options": {"splits": ("train",)}, "peak_rss": True}


def build_conversations(data_dir, splits, cache_dir):
    import datasets

    import qahub

    datasets.disable_progress_bars()
    builder = qahub.make_builder("topical_chat", "conversations", data_dir=data_dir, cache_dir=cache_dir,
                                 splits=tuple(splits))
    builder.download_and_prepare()
    return {split: ds.num_rows for split, ds in builder.as_dataset().items()}


def import_only():
    import datasets  # noqa: F401
    import qahub.loaders.topical_chat  # noqa: F401


def load_json(data_dir, splits, cache_dir):
    counts = {}
    for split in splits:
        with open(os.path.join(data_dir, "conversations", f"{split}.json"), encoding="utf-8") as f:
            counts[split] = len(json.load(f))
    return counts


def write_train(real_dir, out_dir, conversations=TRAIN_CONVERSATIONS) -> int:
    """conversations/train.json of ``conversations`` real conversations (cycled, new ids), compact; returns bytes.

    Run in a child process: a parent's peak RSS at the fork would count in the measured children's peaks.
    """
    return _write_train(_pool(real_dir), out_dir, conversations)


def _write_train(pool, out_dir, conversations) -> int:
    train = {f"t_bench-{i:06d}": pool[i % len(pool)] for i in range(conversations)}
    path = Path(out_dir) / "conversations" / "train.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(train, separators=(",", ":")), encoding="utf-8")
    return path.stat().st_size


def _pool(real_dir) -> list:
    pool = []
    for split in REAL_SPLITS:
        pool += json.loads((Path(real_dir) / "conversations" / f"{split}.json").read_text(encoding="utf-8")).values()
    return pool


def make_source(folder, megabytes):
    """conversations/train.json of the real (else sample) conversations cycled under new ids, compact JSON."""
    from qahub.registry import samples_dir

    real = SHARED_DATA / "topical_chat"
    root = real if (real / "conversations" / "valid_freq.json").is_file() else samples_dir("topical_chat")
    pool = _pool(root)
    one = sum(len(json.dumps(c, separators=(",", ":")).encode()) for c in pool) / len(pool)
    _write_train(pool, folder, copies_for(megabytes, one))


def _side_by_side(name, data_dir, splits, scratch, note):
    ours = measure("bench_topical_chat:build_conversations", str(data_dir), list(splits), str(scratch / f"{name}-cache"))
    baseline = measure("bench_topical_chat:load_json", str(data_dir), list(splits), "")
    return row(f"topical_chat {name}", ours, baseline, note)


def run() -> list[dict]:
    real = SHARED_DATA / "topical_chat"
    if not (real / "conversations" / "valid_freq.json").is_file():
        print(f"bench_topical_chat: {real} absent, nothing measured")
        return []
    scratch = Path(tempfile.mkdtemp(prefix="bench-topical-chat-"))
    try:
        size = sum((real / "conversations" / f"{s}.json").stat().st_size for s in REAL_SPLITS)
        rows = [_side_by_side("4 real splits", real, REAL_SPLITS, scratch,
                              f"conversations config, {size / 2**20:.1f} MiB JSON; baseline json.load")]
        measure("bench_topical_chat:write_train", str(real), str(scratch / "synthetic"))
        train_bytes = (scratch / "synthetic" / "conversations" / "train.json").stat().st_size
        imports_mb = measure("bench_topical_chat:import_only")[1]
        rows.append(_side_by_side("train-sized file", scratch / "synthetic", ["train"], scratch,
                                  f"{TRAIN_CONVERSATIONS} conversations, {train_bytes / 2**20:.1f} MiB compact JSON; "
                                  f"imports alone {imports_mb:.0f} MiB"))
        return rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
