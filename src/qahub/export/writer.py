"""Export a corpus built by its builder to the layout of a Hub dataset repository: ``export()``.

The folder holds ``<config>/<split>-NNNNN-of-NNNNN.parquet`` and a ``README.md`` (``card.py``), so that
``datasets.load_dataset(folder, config)`` gives the builder's rows and features, offline or from the Hub.

`datasets` writes the Parquet shards itself (``download_and_prepare(file_format="parquet")``): one write, no
Arrow cache. The training configs are made from those shards, read back through the build's own description
(``reader.Export.described``), and the card is written once, at the end. The export is written to a temporary
sibling folder and renamed into place only when complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets import DownloadConfig
from datasets.splits import SplitDict, SplitInfo

import qahub
from qahub import registry
from qahub.export import ExportError, OutputExistsError
from qahub.export.card import config_files, looks_like_export, write_card
from qahub.export.lock import build_lock
from qahub.export.options import check_options, check_splits_option, requested_splits
from qahub.export.reader import Export
from qahub.files import Guard, made_folder, remove_leftovers, staged

MAX_SHARD_BYTES = 500 * 1024 * 1024


@dataclass
class SplitReport:
    config: str
    split: str
    rows: int
    parquet_bytes: int


@dataclass
class ConfigReport:
    config: str
    seconds: float  # building the config and writing its Parquet files
    splits: list[SplitReport]


@dataclass
class ExportReport:
    corpus: str
    folder: Path
    configs: list[ConfigReport] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (config, why its source is unavailable)
    missing: list[dict] = field(default_factory=list)  # parts of the corpus not built: {config, splits, reason}
    leftovers: list[str] = field(default_factory=list)  # work folders of a killed earlier build, removed
    sample: bool = False  # built from qahub's bundled sample data: marked so in the card
    training: dict = field(default_factory=dict)  # {training config: {split: decontamination counts}}
    empty: list[str] = field(default_factory=list)  # "config/split" built with no row, left out (``leave_out_empty``)

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    @property
    def splits(self) -> list[SplitReport]:
        return [split for config in self.configs for split in config.splits]


def export(corpus: str, out=None, *, configs=None, data_dir=None, mirror_url=None, cache_dir=None,
           overwrite: bool = False, max_shard_bytes: int = MAX_SHARD_BYTES, builder_options=None,
           skip_unavailable: bool = False, sample: bool = False) -> ExportReport:
    """Build ``configs`` (default: all) of ``corpus`` and write the Hub folder ``out`` (default ``./<corpus>``).

    The training configs (``registry.training_configs``: ``sft``, ``messages``) are made from the builder's configs
    by ``qahub.training`` once those are written; asked alone, every builder config is built for them and then
    left out of the folder.

    ``builder_options`` are config keyword arguments of the corpus's builder (e.g. Topical-Chat's
    ``present_splits_only=True``). With ``skip_unavailable``, a config whose source files are missing or
    cannot be downloaded is left out and listed in ``report.skipped``; the export fails only when no config
    could be built. ``sample`` marks a build of qahub's bundled sample data in the card (tag ``qahub-sample``),
    and ``qahub publish`` refuses such a folder; a ``data_dir`` in the bundled samples is always marked. A build
    without some configs or splits of the corpus is marked partial in the card (``qahub_partial``), and
    ``qahub publish`` refuses it unless asked.

    One build per ``out`` at a time (a lock file ``.<out>.lock`` beside it); the work folders
    ``.<out>.partial-*`` beside it are removed on any error or interrupt, and those of a killed earlier build
    are removed by the next build of the same ``out`` (``report.leftovers`` names them). A symlinked ``out``
    is written through: the link stays a link.
    """
    builder_options = dict(builder_options or {})
    # a training config asked for by name must be made; one built by default is skipped when it cannot be
    skip_training = skip_unavailable or configs is None
    given = Path(out or corpus).absolute()
    out = _resolve_out(given)
    configs = list(configs or registry.export_config_names(corpus))
    check_options(corpus, builder_options)
    for config in configs:
        registry.check_export_config(corpus, config)  # unknown names fail before any work (options: just above)
    check_splits_option(corpus, configs, builder_options)
    report = ExportReport(corpus, given, sample=sample or registry.is_sample(data_dir))
    with made_folder(out.parent, out), build_lock(out):
        report.leftovers = remove_leftovers(out)
        with staged(out, overwrite, _guard(out, corpus)) as staging:
            _build_into(corpus, staging, configs, report, data_dir=data_dir, mirror_url=mirror_url,
                        cache_dir=cache_dir, max_shard_bytes=max_shard_bytes, builder_options=builder_options,
                        skip_unavailable=skip_unavailable, sample=report.sample, skip_training=skip_training)
    return report


def _build_into(corpus, staging: Path, configs, report, *, data_dir, mirror_url, cache_dir, max_shard_bytes,
                builder_options, skip_unavailable, sample, skip_training):
    scratch = staging.with_name(f"{staging.name}-cache")  # datasets' own build, beside: a leftover if killed
    training = [c for c in configs if c in registry.training_configs(corpus)]
    asked = [c for c in configs if c not in training]
    # the training configs are made from every builder config (the tasks' documents, the evaluated ones too)
    sources = registry.config_names(corpus) if training else asked
    try:
        infos = {}
        for config in sources:
            # always a fresh build: datasets keys a prepared build by the data_dir path, not the file contents
            builder = qahub.make_builder(corpus, config, data_dir=data_dir, mirror_url=mirror_url,
                                         cache_dir=str(scratch), **builder_options)
            try:
                infos[config] = _export_config(builder, staging, scratch, max_shard_bytes, report,
                                                downloads_in(cache_dir))
            except (FileNotFoundError, ConnectionError) as err:
                if not skip_unavailable or (not infos and config == sources[-1]):
                    raise
                report.skipped.append((config, str(err)))
        made = _add_training(corpus, staging, training, asked, infos, report, max_shard_bytes, skip_training)
        leave_out_empty(corpus, staging, infos, report)
        report.missing = missing_parts(corpus, report, builder_options)
        write_card(corpus, staging, infos, default=_default_of(corpus, list(infos)), sample=sample,
                   missing=report.missing, training=made)
        _release_arrow_memory()
        check_loads(staging, infos)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _release_arrow_memory():
    """Give back to the system the memory Arrow's allocator keeps for reuse once the builds are done: the load
    check that follows (Arrow's reader threads, its first row group) would otherwise stack on it (Topical-Chat's
    train-sized build: a peak of 224 MiB, not 209)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _add_training(corpus, staging: Path, training, asked, infos, report, max_shard_bytes, skip) -> dict:
    """Make the ``training`` configs (``qahub.training``) from the builder configs whose shards are in
    ``staging``, read through this build's own description of them (no card is written for it), then drop the
    builder configs that were built for them only; ``{config: training.Made}``."""
    from qahub import training as training_configs

    if not training:
        return {}
    built = Export.described(staging, config_files(infos), infos)
    try:
        made = training_configs.write_training(corpus, built, staging, training, max_shard_bytes)
    except (ValueError, OSError) as err:  # e.g. no train split in this build (present_splits_only)
        if not skip or not asked:
            raise
        report.skipped += [(config, str(err)) for config in training]
        made = {}
    for config in [c for c in infos if c not in asked]:
        shutil.rmtree(staging / config)
        del infos[config]
    report.configs = [c for c in report.configs if c.config in asked]
    for config, entry in made.items():
        infos[config] = entry.info
        report.configs.append(ConfigReport(config, entry.seconds, [
            SplitReport(config, split, entry.counts[split].rows, _split_bytes(staging / config, split))
            for split in entry.info.splits]))
    report.training = training_configs.yaml_counts(made)
    return made


def leave_out_empty(corpus: str, staging: Path, infos: dict, report: ExportReport):
    """Leave out of the export each split built with no row (``datasets`` cannot load one: "Instruction 'train'
    corresponds to no data"), and each config left with none; ``report.empty`` names them. An export left with no
    config at all is an error."""
    for config, info in list(infos.items()):
        for split in [name for name, split in info.splits.items() if not split.num_examples]:
            for shard in (staging / config).glob(f"{split}-*.parquet"):
                shard.unlink()
            del info.splits[split]
            report.empty.append(f"{config}/{split}")
        if not info.splits:
            shutil.rmtree(staging / config, ignore_errors=True)
            del infos[config]
    for entry in report.configs:
        entry.splits = [s for s in entry.splits if f"{s.config}/{s.split}" not in report.empty]
    report.configs = [entry for entry in report.configs if entry.splits]
    if not infos:
        raise ExportError(f"{corpus}: nothing to export: every split built has no row ({', '.join(report.empty)})")


def check_loads(folder: Path, infos: dict):
    """Check each shard's row groups (none empty: ``datasets`` fails on one, "BatchSize must be greater than 0";
    their rows the split's), then load every split of every config written as a user will
    (``datasets.load_dataset``, streaming its first row) with its features."""
    for config, info in infos.items():
        for split, expected in info.splits.items():
            _check_shards(folder / config, split, expected.num_examples)
        with _torch_unused():
            loaded = datasets.load_dataset(str(folder), config, streaming=True)  # every split: resolved once
            for split in info.splits:
                rows = loaded.get(split)
                if rows is None or next(iter(rows), None) is None or rows.features != info.features:
                    raise ExportError(f"{folder / config}: its {split} split does not load with its features")


@contextlib.contextmanager
def _torch_unused():
    """`datasets` (5.x) imports torch for every IterableDataset when torch is installed, to share its epoch with
    torch's DataLoader workers: ~2 s and ~250 MiB for a check that reads one row. Not here."""
    saved = datasets.config.TORCH_AVAILABLE
    datasets.config.TORCH_AVAILABLE = False
    try:
        yield
    finally:
        datasets.config.TORCH_AVAILABLE = saved


def _check_shards(folder: Path, split: str, expected: int):
    import pyarrow.parquet as pq

    shards = sorted(folder.glob(f"{split}-*.parquet"))
    metas = [pq.read_metadata(shard) for shard in shards]
    for shard, meta in zip(shards, metas):
        if any(not meta.row_group(i).num_rows for i in range(meta.num_row_groups)):
            raise ExportError(f"{shard}: holds an empty row group, which datasets cannot read")
    if sum(meta.num_rows for meta in metas) != expected:
        raise ExportError(f"{folder}: the {split} shards hold {sum(m.num_rows for m in metas)} rows, not the "
                          f"{expected} built")


def _split_bytes(folder: Path, split: str) -> int:
    return sum(path.stat().st_size for path in folder.glob(f"{split}-*.parquet"))


def _resolve_out(out: Path) -> Path:
    """The real folder to write: symlinks and ``sub/../`` resolved, so a symlinked ``out`` stays a link."""
    real = Path(os.path.realpath(out))
    if out.is_symlink() and not real.exists():
        raise ExportError(f"{out}: is a symlink to {real}, which does not exist; create that folder or choose "
                          "another output folder")
    return real



def missing_parts(corpus: str, report: ExportReport, builder_options: dict) -> list[dict]:
    """The configs and splits of the corpus this build lacks, each with why: ``{config, splits, reason}``."""
    wanted = requested_splits(builder_options)
    built = {config.config: {s.split for s in config.splits} for config in report.configs}
    for config, _, split in (entry.partition("/") for entry in report.empty):  # built, with no row
        built.setdefault(config, set()).add(split)
    missing = []
    for config in registry.export_config_names(corpus):
        if config not in built:
            skipped = any(name == config for name, _ in report.skipped)
            missing.append({"config": config, "splits": "all",
                            "reason": "its source was unavailable" if skipped else "not requested: built with --config"})
            continue
        absent = registry.absent_splits(corpus, config, built[config])
        unasked = [s for s in absent if wanted is not None and s not in wanted]
        if unasked:
            missing.append({"config": config, "splits": unasked,
                            "reason": f"not requested: built with splits={','.join(wanted)}"})
        if len(absent) > len(unasked):
            missing.append({"config": config, "splits": [s for s in absent if s not in unasked],
                            "reason": "their source files were absent: built with present_splits_only"})
    return missing



def _guard(out: Path, corpus: str) -> Guard:
    """``out`` may be missing or empty; with --overwrite, an earlier export of ``corpus`` is replaced."""
    return Guard(not_folder=f"{out}: exists and is not a folder",
                 not_empty=f"{out}: folder is not empty; pass --overwrite (overwrite=True) to replace it",
                 not_ours=f"{out}: holds files that are not an earlier export of {corpus}; --overwrite only replaces one",
                 is_ours=lambda folder: looks_like_export(folder, corpus), error=ExportError,
                 exists_error=OutputExistsError)



def _default_of(corpus, configs):
    default = registry.default_config(corpus)
    return default if default in configs else configs[0]


def downloads_in(cache_dir) -> DownloadConfig:
    """Downloads are kept (in ``cache_dir``/downloads, or the user's datasets download cache) while builds are
    not; ``use_etag=False`` as `datasets` itself uses, so a cached, checksummed file is reused offline."""
    folder = Path(cache_dir) / "downloads" if cache_dir else datasets.config.DOWNLOADED_DATASETS_PATH
    return DownloadConfig(cache_dir=folder, use_etag=False)


def _export_config(builder, staging: Path, scratch: Path, max_shard_bytes: int, report: ExportReport,
                   downloads: DownloadConfig) -> datasets.DatasetInfo:
    """Let `datasets` write the config's Parquet shards (one write, no Arrow cache), then move them into the
    export layout ``<config>/<split>-NNNNN-of-NNNNN.parquet``; the config's info for the card."""
    config = builder.config.name
    start = time.perf_counter()
    built = scratch / f"parquet-{config}"
    qahub.prepare(builder, output_dir=str(built), file_format="parquet", max_shard_size=max_shard_bytes,
                  download_config=downloads)
    splits = SplitDict(dataset_name=builder.dataset_name)
    written = []
    for split, info in builder.info.splits.items():
        size = _move_shards(built, builder.dataset_name, split, staging / config)
        written.append(SplitReport(config, split, info.num_examples, size))
        splits.add(SplitInfo(name=split, num_bytes=info.num_bytes, num_examples=info.num_examples,
                             dataset_name=builder.dataset_name))
    report.configs.append(ConfigReport(config, time.perf_counter() - start, written))
    info = datasets.DatasetInfo(features=builder.info.features, config_name=config, splits=splits)
    info.download_size = sum(s.parquet_bytes for s in written)
    info.dataset_size = sum(s.num_bytes for s in splits.values())
    return info


def _move_shards(built: Path, dataset_name: str, split: str, folder: Path) -> int:
    """Rename the shards `datasets` wrote for ``split`` (``<name>-<split>.parquet``, or
    ``<name>-<split>-NNNNN-of-NNNNN.parquet`` when several) to ``<folder>/<split>-NNNNN-of-NNNNN.parquet``;
    their total size."""
    single = built / f"{dataset_name}-{split}.parquet"
    shards = [single] if single.is_file() else sorted(built.glob(f"{dataset_name}-{split}-[0-9]*-of-[0-9]*.parquet"))
    if not shards:
        raise ExportError(f"{built}: datasets wrote no Parquet file for split {split!r}")
    folder.mkdir(parents=True, exist_ok=True)
    size = 0
    for index, shard in enumerate(shards):
        size += shard.stat().st_size
        shard.rename(folder / f"{split}-{index:05d}-of-{len(shards):05d}.parquet")
    return size
