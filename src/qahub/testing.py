"""Checks shared by the test suites of every corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets

import qahub
from qahub import registry
from qahub.export import writer

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def shared_data(corpus_folder: str) -> Path | None:
    """``../shared/data/<folder>`` beside the project root, or None when absent (tests skip on None)."""
    path = Path(os.environ.get("QAHUB_SHARED_DATA", SHARED_DATA)) / corpus_folder
    return path if path.is_dir() else None


def sample_copy(corpus: str, parent: Path) -> Path:
    """A copy of the corpus's bundled sample in ``parent/<corpus>-files``: stands in for the corpus's own files
    where a test publishes the build (a build of the bundled samples themselves is a sample build)."""
    import shutil

    return Path(shutil.copytree(registry.samples_dir(corpus), Path(parent) / f"{corpus}-files"))


def build(corpus, config, data_dir, cache_dir) -> datasets.DatasetDict:
    builder = qahub.make_builder(corpus, config, data_dir=data_dir, cache_dir=str(cache_dir))
    qahub.prepare(builder)
    return builder.as_dataset()


def assert_export_roundtrip(corpus: str, data_dir, tmp_path: Path, configs=None) -> dict:
    """Export ``configs`` (default all), then, in a fresh process with the Hub switched off
    (``HF_HUB_OFFLINE=1``), load the folder back with ``load_dataset``, plain and streaming, and check rows,
    order and features against the builder's. Returns the row counts, ``{config: {split: number of rows}}``.
    """
    configs = list(configs or registry.config_names(corpus))
    out = tmp_path / f"{corpus}-hub"
    writer.export(corpus, out, configs=configs, data_dir=data_dir, cache_dir=str(tmp_path / "export-cache"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = [sys.executable, "-m", "qahub.testing", corpus, str(data_dir or ""), str(out), str(tmp_path), *configs]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"round trip of {corpus} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_export(corpus: str, data_dir, out: Path, scratch: Path, configs) -> dict:
    counts = {}
    for config in configs:
        built = build(corpus, config, data_dir, scratch / "builder-cache")
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(scratch / "load-cache"))
        streamed = datasets.load_dataset(str(out), config, streaming=True)
        assert set(loaded) == set(built) == set(streamed), f"{config}: splits {sorted(loaded)} != {sorted(built)}"
        for split, ds in built.items():
            assert loaded[split].features == ds.features, f"{config}/{split}: features differ"
            assert streamed[split].features == ds.features, f"{config}/{split}: streamed features differ"
            rows = ds.to_list()
            assert loaded[split].to_list() == rows, f"{config}/{split}: rows differ"
            assert list(streamed[split]) == rows, f"{config}/{split}: streamed rows differ"
        counts[config] = {split: len(ds) for split, ds in built.items()}
    return counts


if __name__ == "__main__":
    datasets.disable_progress_bars()
    corpus_arg, data_arg, out_arg, scratch_arg, *config_args = sys.argv[1:]
    print(json.dumps(compare_export(corpus_arg, data_arg or None, Path(out_arg), Path(scratch_arg), config_args)),
          flush=True)
    # every check has passed: skip the interpreter's teardown, where a native thread of the streaming reader
    # sometimes aborts the process ("terminate called without an active exception", seen 2 in 8 runs of -m quick)
    os._exit(0)
