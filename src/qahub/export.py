"""Export a corpus built by its builder to the layout of a Hub dataset repository.

The folder holds ``<config>/<split>-NNNNN-of-NNNNN.parquet`` and a ``README.md``: the corpus card from
``dataset_cards/`` with ``configs:`` and ``dataset_info:`` generated from the build, so that
``datasets.load_dataset(folder, config)`` gives the builder's rows and features, offline or from the Hub.

`datasets` writes the Parquet shards itself (``download_and_prepare(file_format="parquet")``): one write, no
Arrow cache. The export is written to a temporary sibling folder and renamed into place only when complete.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: the lock file is created exclusively instead (a killed build's lock stays)
    fcntl = None

import datasets
from datasets import DownloadConfig
from datasets.info import DatasetInfosDict
from datasets.splits import SplitDict, SplitInfo
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

import qahub
from qahub import registry
from qahub.files import Guard, made_folder, remove_leftovers, staged

MAX_SHARD_BYTES = 500 * 1024 * 1024
REQUIRED_CARD_KEYS = ("license", "language", "pretty_name", "task_categories", "source_datasets")


class ExportError(RuntimeError):
    pass


class OutputExistsError(ExportError):
    pass


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
    _check_splits_option(corpus, configs, builder_options)
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
        check_loads(staging, infos)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _add_training(corpus, staging: Path, training, asked, infos, report, max_shard_bytes, skip) -> dict:
    """Make the ``training`` configs (``qahub.training``) from the builder configs in ``staging``, then drop the
    builder configs that were built for them only; ``{config: (info, counts, evaluated documents)}``."""
    from qahub import training as training_configs

    if not training:
        return {}
    write_card(corpus, staging, infos, default=_default_of(corpus, list(infos)))  # read as an export from here
    try:
        made = training_configs.write_training(corpus, str(staging), staging, training, max_shard_bytes)
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
        loaded = datasets.load_dataset(str(folder), config, streaming=True)  # every split: resolved once
        for split in info.splits:
            rows = loaded.get(split)
            if rows is None or next(iter(rows), None) is None or rows.features != info.features:
                raise ExportError(f"{folder / config}: its {split} split does not load with its features")


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


class BuildLockedError(ExportError):
    pass


@contextmanager
def build_lock(out: Path):
    """Hold ``.<out>.lock`` beside ``out`` for the build; a second build of ``out`` fails at once."""
    lock = out.parent / f".{out.name}.lock"
    if fcntl is None:
        yield from _exclusive_lock(out, lock)
        return
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown process"
            os.close(fd)
            raise BuildLockedError(f"{out}: another qahub build is writing this folder ({holder}); wait for it to "
                                   f"end, or choose another output folder (lock file {lock})") from None
        if _same_file(fd, lock):  # else the previous holder removed it between our open and flock: retry
            break
        os.close(fd)
    try:  # from here on the lock file is removed whatever fails, writing the pid on a full disk too
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        yield lock
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)


def _exclusive_lock(out: Path, lock: Path):
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise BuildLockedError(f"{out}: another qahub build is writing this folder, or one was killed; when none "
                               f"runs, remove the lock file {lock}") from None
    os.close(fd)
    try:
        yield lock
    finally:
        lock.unlink(missing_ok=True)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


# BuilderConfig fields that are not builder options: what to use instead
RESERVED_OPTIONS = {
    "name": "--config CONFIG (configs=[...] in Python)",
    "config_name": "--config CONFIG (configs=[...] in Python)",
    "version": "nothing: the version is the builder's own",
    "description": "nothing: the description is the builder's own",
    "data_dir": "--data-dir DIR (data_dir=... in Python)",
    "data_files": "--data-dir DIR: the builder finds its files there",
    "mirror_url": "--mirror-url URL (mirror_url=... in Python)",
    "cache_dir": "--cache-dir DIR (cache_dir=... in Python)",
}


def option_kinds(corpus: str) -> dict[str, str]:
    """The builder options of ``corpus`` and their kind: ``bool``, ``str`` or ``names`` (a tuple of names)."""
    fields = getattr(registry.builder_class(corpus).BUILDER_CONFIG_CLASS, "__dataclass_fields__", {})
    kinds = {}
    for name, spec in fields.items():
        if name in RESERVED_OPTIONS:
            continue
        text = str(spec.type)
        kinds[name] = "bool" if spec.type in (bool, "bool") else "names" if "tuple" in text else "str"
    return kinds


def check_option_names(corpus: str | None, names) -> dict[str, str]:
    """``option_kinds(corpus)`` once every name is one of them (any corpus: no reserved name); else a ValueError
    naming the first that is not."""
    kinds = option_kinds(corpus) if corpus else {}
    for key in names:
        if key in RESERVED_OPTIONS:
            raise ValueError(f"option {key!r} is not a builder option; use {RESERVED_OPTIONS[key]}")
        if corpus and key not in kinds:
            raise ValueError(f"{corpus} has no builder option {key!r}; its options: {', '.join(sorted(kinds)) or 'none'}")
    return kinds


def check_options(corpus: str, options: dict):
    """Every key a builder option of ``corpus`` with a value of its kind; else a ValueError naming the key."""
    kinds = check_option_names(corpus, options)
    for key, value in options.items():
        kind = kinds[key]
        if kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"option {key}: expected true or false, got {value!r}")
        if kind == "str" and value is not None and not isinstance(value, str):
            raise ValueError(f"option {key}: expected a string, got {value!r}")
        if kind == "names" and value is not None and not _is_names(value):
            raise ValueError(f"option {key}: expected one or more names (e.g. {key}=train,valid_freq), got {value!r}")


TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


def parse_options(pairs: list[str], corpus: str | None = None) -> dict:
    """``KEY=VALUE`` pairs as builder options of ``corpus``, each VALUE read by its option's kind: booleans
    strictly (true/false/yes/no/1/0), names as a comma-separated list or JSON list, strings as given."""
    given = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        if key in given:
            raise ValueError(f"--option {key} is given twice")
        given[key] = value
    kinds = check_option_names(corpus, given)
    options = {key: _option_value(key, value, kinds.get(key, "str")) for key, value in given.items()}
    if corpus:
        check_options(corpus, options)
    return options


def _option_value(key: str, value: str, kind: str):
    text = value.strip()
    if kind == "bool":
        if text.lower() not in TRUE + FALSE:
            raise ValueError(f"--option {key}={value}: expected true/false, yes/no or 1/0")
        return text.lower() in TRUE
    if not text:
        raise ValueError(f"--option {key}=: give a value")
    if kind == "names":
        if text.startswith("["):
            try:
                names = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"--option {key}={value}: not a JSON list; write {key}=a,b") from None
        else:
            names = [name.strip() for name in text.split(",")]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"--option {key}={value}: expected names separated by commas, e.g. {key}=train,test")
        return tuple(names)
    return value


def _is_names(value) -> bool:
    items = [value] if isinstance(value, str) else value
    return isinstance(items, (list, tuple)) and bool(items) and all(isinstance(x, str) and x for x in items)


def requested_splits(builder_options: dict) -> list[str] | None:
    splits = builder_options.get("splits")
    return None if splits is None else [splits] if isinstance(splits, str) else list(splits)


def _check_splits_option(corpus, configs, builder_options):
    """``splits=...`` names splits every config built has, checked before any work."""
    wanted = requested_splits(builder_options)
    for config in configs if wanted else []:
        declared = registry.splits(corpus, config)
        unknown = [s for s in wanted if declared and s not in declared]
        if unknown:
            raise ValueError(f"{corpus}/{config} has no split {', '.join(unknown)}; its splits: {', '.join(declared)}")


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


def describe_missing(missing: list[dict]) -> str:
    """One line: ``qa/train (their source files were absent ...); extended (its source was unavailable)``."""
    parts = []
    for entry in missing:
        where = entry["config"] if entry["splits"] == "all" else \
            ", ".join(f"{entry['config']}/{split}" for split in entry["splits"])
        parts.append(f"{where} ({entry['reason']})")
    return "; ".join(parts)


def _guard(out: Path, corpus: str) -> Guard:
    """``out`` may be missing or empty; with --overwrite, an earlier export of ``corpus`` is replaced."""
    return Guard(not_folder=f"{out}: exists and is not a folder",
                 not_empty=f"{out}: folder is not empty; pass --overwrite (overwrite=True) to replace it",
                 not_ours=f"{out}: holds files that are not an earlier export of {corpus}; --overwrite only replaces one",
                 is_ours=lambda folder: looks_like_export(folder, corpus), error=ExportError,
                 exists_error=OutputExistsError)


def looks_like_export(folder: Path, corpus: str) -> bool:
    """An earlier export of ``corpus``: its card (generated ``configs`` and ``dataset_info``, the corpus's
    pretty_name) plus ``<config>/*.parquet`` files, and nothing else (``.gitattributes`` of a Hub clone aside)."""
    if not _is_export_card(folder / "README.md", corpus):
        return False
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if path.is_dir():
            if len(rel.parts) > 1 or rel.name == ".git":
                return False
        elif rel.as_posix() not in ("README.md", ".gitattributes") and not (len(rel.parts) == 2 and path.suffix == ".parquet"):
            return False
    return True


def _is_export_card(readme: Path, corpus: str) -> bool:
    if not readme.is_file():
        return False
    try:
        meta = DatasetCard.load(readme, repo_type="dataset").data.to_dict()
        expected = DatasetCard.load(registry.card_path(corpus), repo_type="dataset").data.pretty_name
    except Exception:  # not a card at all (no YAML, bad YAML): not an export
        return False
    return bool(meta.get("configs")) and bool(meta.get("dataset_info")) and meta.get("pretty_name") == expected


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


SAMPLE_TAG = "qahub-sample"
SAMPLE_NOTE = ("> **This folder was built from qahub's small bundled sample data, not from the corpus.** "
               "Its rows are invented examples in the corpus's format, for demos and tests.\n\n")


PARTIAL_KEY = "qahub_partial"


TRAINING_KEY = "qahub_decontamination"


def write_card(corpus: str, folder: Path, infos: dict, default: str, sample: bool = False,
               missing: list | None = None, training: dict | None = None) -> DatasetCard:
    """README.md = the corpus card plus generated ``configs`` and ``dataset_info``, validated on re-read.

    ``missing`` (see ``missing_parts``) marks a partial build: the YAML key ``qahub_partial`` lists the
    missing configs and splits with the reason, and a note at the top of the text says the same."""
    template = registry.card_path(corpus)
    if not template.is_file():
        raise ExportError(f"{template}: the dataset card of {corpus!r} is missing")
    card = DatasetCard.load(template, repo_type="dataset")
    data = card.data
    data.size_categories = [size_category(max(sum(s.num_examples for s in info.splits.values()) for info in infos.values()))]
    MetadataConfigs(
        {
            config: {
                "data_files": [{"split": split, "path": f"{config}/{split}-*"} for split in info.splits],
                **({"default": True} if config == default else {}),
            }
            for config, info in infos.items()
        }
    ).to_dataset_card_data(data)
    DatasetInfosDict(infos).to_dataset_card_data(data)
    text = card.text.lstrip()
    if training:  # the training configs: what they hold, the decontamination rule and this build's counts
        from qahub import training as training_configs

        setattr(data, TRAINING_KEY, training_configs.yaml_counts(training))
        text = text.rstrip() + "\n\n" + training_configs.card_section(training)
    if missing:
        setattr(data, PARTIAL_KEY, {"missing": missing})
        text = (f"> **This is a partial build of the corpus.** Missing: {describe_missing(missing)}.\n\n") + text
    if sample:
        data.tags = [*(data.get("tags") or []), SAMPLE_TAG]  # a card need not have tags
        text = SAMPLE_NOTE + text
    path = folder / "README.md"
    path.write_text(f"---\n{data.to_yaml()}\n---\n{text}", encoding="utf-8", newline="")
    card = validate_card(path, infos)
    if _missing_in(card) != (missing or []):
        raise ExportError(f"{path}: the {PARTIAL_KEY} list does not survive the YAML round trip")
    return card


def partial_of(readme: Path) -> list[dict]:
    """The missing parts a card records (``qahub_partial``); [] for a complete build."""
    return _missing_in(DatasetCard.load(readme, repo_type="dataset"))


def _missing_in(card: DatasetCard) -> list[dict]:
    return (card.data.to_dict().get(PARTIAL_KEY) or {}).get("missing", [])


def validate_card(path: Path, infos: dict):
    """Re-read the card with huggingface_hub and datasets, as the Hub and ``load_dataset`` will; the card read."""
    card = DatasetCard.load(path, repo_type="dataset")
    if not isinstance(card.data, DatasetCardData):
        raise ExportError(f"{path}: metadata is not dataset card metadata")
    meta = card.data.to_dict()
    missing = [key for key in REQUIRED_CARD_KEYS if not meta.get(key)]
    if missing:
        raise ExportError(f"{path}: card metadata lacks {', '.join(missing)}")
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    parsed = DatasetInfosDict.from_dataset_card_data(card.data)
    if set(configs) != set(infos) or set(parsed) != set(infos):
        raise ExportError(f"{path}: configs {sorted(configs)} / dataset_info {sorted(parsed)} != built {sorted(infos)}")
    defaults = [name for name, cfg in configs.items() if cfg.get("default")]
    if len(defaults) != 1:
        raise ExportError(f"{path}: expected exactly one default config, found {defaults}")
    for config, info in infos.items():
        if parsed[config].features != info.features:
            raise ExportError(f"{path}: features of {config} do not survive the YAML round trip")
    return card


def size_category(rows: int) -> str:
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
              (10**10, "1B<n<10B"), (10**11, "10B<n<100B"), (10**12, "100B<n<1T")]
    return next((label for bound, label in bounds if rows < bound), "n>1T")
