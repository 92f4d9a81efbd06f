"""The reader of exports (``writer.py`` writes them): the rows of one split of an export (a folder, read from its
Parquet shards, or a Hub dataset id, read with ``datasets.load_dataset``) or of a build of the corpus by its builder
(``qahub.load``), for every corpus. The reference rows of ``qahub evaluate``, the lm-eval tasks' documents
(``harness.py``) and the check of a folder before it is published (``publish.py``) all come from here.

An export folder is read fresh: the shards of the one split asked for, as its README's ``configs:`` lists them,
checked against its ``dataset_info`` (row count, features) and cast to those features, so the rows are the ones
``load_dataset`` gives, but never a cached copy (``datasets`` keys a local folder's cache by its name and README,
not by the shards). A damaged or foreign shard is one line naming it; other splits are not opened.

A local path that does not exist is an error here, never a Hub lookup. A build of local files goes to a temporary
cache, so an edited file is never answered from an old build. ``split`` may be a tuple of names: the first one
there is read. ``no_split`` is the message when it is not there; ``{found}`` in it lists the splits there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path

README = "README.md"

DATA_FILES = (".csv", ".tsv", ".txt", ".json", ".jsonl", ".parquet", ".arrow", ".zip")


def export_rows(location, config, split, *, cache_dir=None, no_split=None,
                what="an export folder or a Hub dataset id", corpus=None) -> list[dict]:
    """The rows of ``split`` of the export at ``location``; a failure to load it is one line, ``not {what}``.

    With ``corpus``, the export's features must hold the corpus builder's for ``config``, and its gold fields
    (the builder's ``GOLD_FIELDS``) must not be null."""
    return export_dataset(location, config, split, cache_dir=cache_dir, no_split=no_split, what=what,
                          corpus=corpus).to_list()


def export_dataset(location, config, split, *, cache_dir=None, no_split=None,
                   what="an export folder or a Hub dataset id", corpus=None):
    """``export_rows`` as a ``datasets.Dataset`` (in memory for a folder)."""
    import datasets

    location = check_location(location)
    if Path(location).is_dir():
        export = Export(location, what)
        return export.dataset(export.config(config), split, no_split, corpus)
    try:
        names = datasets.get_dataset_split_names(location, config)
    except Exception as err:  # noqa: BLE001 - datasets' and the Hub client's errors (network, HTTP) as one line
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None
    name = _pick(names, split, no_split or _no_split(location, config, split))
    try:  # only the split asked for: datasets would otherwise prepare every split of the export
        return datasets.load_dataset(location, config, split=name, cache_dir=cache_dir)
    except Exception as err:  # noqa: BLE001 - as above
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None


def export_configs(location, what="an export folder or a Hub dataset id") -> list[str]:
    """The config names of the export at ``location``."""
    import datasets

    location = check_location(location)
    if Path(location).is_dir():
        return list(Export(location, what).configs)
    try:
        return datasets.get_dataset_config_names(location)
    except Exception as err:  # noqa: BLE001 - as in export_rows
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None


def export_splits(location, config, what="an export folder or a Hub dataset id") -> list[str]:
    """The split names of ``config`` of the export at ``location``."""
    import datasets

    location = check_location(location)
    if Path(location).is_dir():
        export = Export(location, what)
        return list(export.patterns(export.config(config)))
    try:
        return datasets.get_dataset_split_names(location, config)
    except Exception as err:  # noqa: BLE001 - as in export_rows
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None



class Export:
    """An export folder as its README describes it: ``configs:`` (which shards hold each split, read with
    datasets' ``MetadataConfigs``) and ``dataset_info:`` (features and row counts, ``DatasetInfosDict``)."""

    def __init__(self, folder, what="an export folder"):
        from datasets.info import DatasetInfosDict
        from datasets.utils.metadata import MetadataConfigs
        from huggingface_hub import DatasetCard

        self.folder = Path(folder)
        readme = self.folder / README
        if not readme.is_file():
            raise ValueError(f"{self.folder}: not {what} (no {README}; an export has one)")
        try:
            data = DatasetCard.load(readme, repo_type="dataset").data
            self.configs = MetadataConfigs.from_dataset_card_data(data)
            self.infos = DatasetInfosDict.from_dataset_card_data(data)
        except Exception as err:  # noqa: BLE001 - an unreadable card, whatever huggingface_hub or datasets raises
            raise ValueError(f"{readme}: not {what} ({type(err).__name__}: {err})") from None
        if not self.configs:
            raise ValueError(f"{readme}: not {what} (its YAML lists no configs:)")

    @classmethod
    def described(cls, folder, configs, infos):
        """The export in ``folder`` as ``configs`` (``MetadataConfigs``) and ``infos`` (``{config: DatasetInfo}``)
        describe it, without a README: how the writer reads the shards it has just written."""
        export = cls.__new__(cls)
        export.folder, export.configs, export.infos = Path(folder), configs, infos
        return export

    def config(self, name) -> str:
        """``name``, or the default config when None; an error naming the configs there when it is not one."""
        if name is None:
            name = self.configs.get_default_config_name()
        if name not in self.configs:
            raise ValueError(f"{self.folder}: has no config {name!r} (configs: {', '.join(self.configs)})")
        return name

    def patterns(self, config) -> dict:
        """``{split: [data file pattern]}`` of ``config``, in the README's order."""
        from datasets.data_files import sanitize_patterns

        return sanitize_patterns(self.configs[config].get("data_files", []))

    def dataset(self, config, split, no_split=None, corpus=None):
        """The rows of the first of ``split`` there, as a ``datasets.Dataset`` held in memory."""
        import datasets
        import pyarrow as pa

        name = _pick(list(self.patterns(config)), split, no_split or _no_split(self.folder, config, split))
        info = self.info(config)
        if corpus:
            check_builder_features(self.folder / README, corpus, config, info.features)
        shards = [(shard, read_shard(shard, info.features)) for shard in self.shards(config, name)]
        counted, expected = sum(table.num_rows for _, table in shards), self.expected_rows(config, name)
        if expected is not None and counted != expected:
            raise ValueError(f"{self.folder}: config {config} split {name}: the shards ({_names(shards)}) hold "
                             f"{counted} rows, its README's dataset_info says {expected}")
        gold = gold_fields(corpus, config) if corpus else ()
        for shard, table in shards:
            check_gold(shard, table, gold)
        table = pa.concat_tables([table for _, table in shards]) if shards else info.features.arrow_schema.empty_table()
        return datasets.Dataset(datasets.table.InMemoryTable(table), info=info.copy(), split=datasets.NamedSplit(name))

    def expected_rows(self, config, split) -> int | None:
        """The rows the README's ``dataset_info`` counts in ``split`` (None where it does not say)."""
        info = self.infos.get(config)
        return info.splits[split].num_examples if info and info.splits and split in info.splits else None

    def info(self, config):
        info = self.infos.get(config)
        if info is None or info.features is None:
            raise ValueError(f"{self.folder / README}: no dataset_info features for config {config}")
        return info

    def shards(self, config, split) -> list[Path]:
        from datasets.data_files import DataFilesList

        patterns = self.patterns(config)[split]
        base = self.folder / self.configs[config].get("data_dir", "")
        try:
            return [Path(path) for path in DataFilesList.from_patterns(patterns, base_path=str(base))]
        except FileNotFoundError:
            raise ValueError(f"{self.folder}: config {config} split {split}: no shard matches "
                             f"{', '.join(map(str, patterns))}") from None


def read_shard(path: Path, features):
    """The table of one Parquet shard, cast to ``features`` as ``load_dataset`` casts it."""
    import pyarrow.parquet as pq
    from datasets.table import table_cast

    try:
        table = pq.read_table(path)
    except Exception as err:  # noqa: BLE001 - pyarrow's errors for a truncated, damaged or non-Parquet file
        raise ValueError(f"{path}: not a readable Parquet shard ({type(err).__name__}: {err})") from None
    check_columns(path, table.column_names, features)
    try:
        return table_cast(table, features.arrow_schema)
    except Exception as err:  # noqa: BLE001 - Arrow's cast errors
        raise ValueError(f"{path}: does not match the README's features ({type(err).__name__}: {err})") from None


def check_columns(path, columns, features):
    """A shard's columns are the README's features (in any order)."""
    if set(columns) != set(features):
        raise ValueError(f"{path}: its columns ({', '.join(columns)}) are not the README's features "
                         f"({', '.join(features)}): a shard of another export?")


def gold_fields(corpus, config=None) -> tuple:
    """The fields ``corpus``'s metric scores against, which must not be null in an export's rows: its builder's
    ``GOLD_FIELDS`` (a dotted name is inside a struct), none when it declares none or for a training config."""
    from qahub import registry

    if config in registry.training_configs(corpus):
        return ()
    return tuple(getattr(registry.builder_class(corpus), "GOLD_FIELDS", ()))


def check_builder_features(readme, corpus, config, features):
    """Every field qahub's ``corpus`` builder writes for ``config`` is in ``features``, with the builder's type."""
    from qahub import registry

    if config not in registry.export_config_names(corpus):
        raise ValueError(f"{readme}: config {config!r} is not a {corpus} config "
                         f"({', '.join(registry.export_config_names(corpus))})")
    expected = builder_features(corpus, config)
    problem = _feature_problem(expected, features)
    if problem:
        raise ValueError(f"{readme}: config {config}: {problem}, unlike what qahub's {corpus} builder writes: "
                         "not a qahub export of this corpus, or an old one (rebuild it with `qahub build`)")


def builder_features(corpus, config):
    """The features qahub's ``corpus`` builder writes for ``config`` (a training config: ``qahub.training``'s)."""
    from qahub import registry

    if config in registry.training_configs(corpus):
        from qahub import chat_features

        return chat_features.features(config)
    with tempfile.TemporaryDirectory(prefix=f"qahub-{corpus}-") as cache:  # the builder only looks at its cache
        return registry.builder_class(corpus)(config_name=config, cache_dir=cache).info.features


@functools.lru_cache(maxsize=None)
def dataset_fields(corpus) -> frozenset:
    """The names of the fields of ``corpus``'s rows (every config of its builder) and of its harness tasks' docs
    (a task_api's ``DOC_COLUMNS``): what a file made from the dataset holds besides a model's output."""
    from qahub import registry, tasks

    names = {name for config in registry.config_names(corpus) for name in builder_features(corpus, config)}
    return frozenset(names | set(getattr(tasks.task_api(corpus), "DOC_COLUMNS", ())))


def _feature_problem(expected, found, prefix="") -> str | None:
    """What first differs between two feature dicts (missing field, other type), nested dicts compared inside."""
    for name, feature in expected.items():
        where = f"{prefix}{name}"
        if name not in found:
            return f"field {where} is missing"
        if isinstance(feature, dict) and isinstance(found[name], dict):
            problem = _feature_problem(feature, found[name], f"{where}.")
            if problem:
                return problem
        elif feature != found[name]:
            return f"field {where} is {found[name]!r}, not {feature!r}"
    return None


def check_gold(shard: Path, table, fields):
    """No null in the ``fields`` (dotted names inside structs) of one shard's table."""
    import pyarrow.compute as pc

    for field in fields:
        column = table.column(field.split(".")[0])
        for part in field.split(".")[1:]:
            column = pc.struct_field(column, part)
        nulls = pc.indices_nonzero(pc.is_null(column, nan_is_null=True))
        if len(nulls):
            raise ValueError(f"{shard}: row {nulls[0].as_py()}: {field} is null ({len(nulls)} row(s) of the shard); "
                             "the gold answers must all be there")


def _names(shards) -> str:
    return ", ".join(shard.name for shard, _ in shards)


def check_location(location) -> str:
    """``location`` (``~`` expanded), when it is a local path that exists or has the shape of a Hub id ORG/NAME."""
    location = os.path.expanduser(str(location))
    hub_id = (location.count("/") == 1 and not location.startswith((".", "/"))
              and Path(location).suffix.lower() not in DATA_FILES)
    if not (hub_id or Path(location).exists()):
        raise FileNotFoundError(f"--references {location}: no such file or folder (nor a Hub dataset id ORG/NAME)")
    return location


def built_rows(corpus, config, split, data_dir=None, *, cache_dir=None, mirror_url=None, no_split=None,
               **options) -> list[dict]:
    """The rows of ``split`` built by the corpus's builder from the upstream files in ``data_dir`` (in a temporary
    cache), or from the downloaded ones (kept in ``cache_dir``) without it; ``options`` go to the builder."""
    import qahub

    check_split(corpus, config, split, no_split or _no_split(data_dir or corpus, config, split))
    if data_dir is not None:
        data_dir = data_folder(data_dir)
    cache = tempfile.TemporaryDirectory(prefix=f"qahub-{corpus}-") if data_dir else contextlib.nullcontext(cache_dir)
    with cache as cache_dir:
        splits = qahub.load(corpus, config, data_dir=data_dir, cache_dir=cache_dir, mirror_url=mirror_url, **options)
        return splits[_pick(list(splits), split, no_split or _no_split(data_dir or corpus, config, split))].to_list()


def data_folder(data_dir) -> Path:
    """``--data-dir`` as a folder (``~`` expanded), or a one-line error when it is absent or a file."""
    folder = Path(data_dir).expanduser()
    if not folder.exists():
        raise FileNotFoundError(f"--data-dir {folder}: no such file or folder")
    if not folder.is_dir():
        raise NotADirectoryError(f"--data-dir {folder}: not a folder")
    return folder


def check_split(corpus, config, split, no_split):
    """Refuse a split that ``config`` never has, as the catalog lists its splits, before anything is built (the
    builder would build every split first). A config the catalog does not know is left to the builder."""
    from qahub import registry

    declared = registry.catalog().get(corpus, {}).get("configs", {}).get(config)
    if declared:
        _pick(declared, split, no_split)


def _no_split(where, config, split):
    wanted = split if isinstance(split, str) else " or ".join(split)
    return f"{where}: {f'config {config} ' if config else ''}has no split {wanted!r} (splits: {{found}})"


def _pick(names, split, no_split) -> str:
    """The first of ``split`` (a name or a tuple of names) in ``names``."""
    name = next((name for name in ((split,) if isinstance(split, str) else split) if name in names), None)
    if name is None:
        raise ValueError(no_split.replace("{found}", ", ".join(names) or "none"))
    return name
