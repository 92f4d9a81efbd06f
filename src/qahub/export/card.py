"""The card of an export, its ``README.md``: the corpus card from ``dataset_cards/`` with ``configs:`` and
``dataset_info:`` generated from the build (``datasets``' own ``MetadataConfigs`` and ``DatasetInfosDict``), so
that ``datasets.load_dataset(folder, config)`` gives the builder's rows and features, offline or from the Hub;
validated by re-reading it as the Hub and ``load_dataset`` will. Also what a card records: a sample build, a
partial build, the training configs' decontamination counts."""

from __future__ import annotations

from pathlib import Path

from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from qahub import registry
from qahub.export import ExportError

REQUIRED_CARD_KEYS = ("license", "language", "pretty_name", "task_categories", "source_datasets")

SAMPLE_TAG = "qahub-sample"
SAMPLE_NOTE = ("> **This folder was built from qahub's small bundled sample data, not from the corpus.** "
               "Its rows are invented examples in the corpus's format, for demos and tests.\n\n")

PARTIAL_KEY = "qahub_partial"

TRAINING_KEY = "qahub_decontamination"


def config_files(infos: dict, default: str | None = None) -> MetadataConfigs:
    """The card's ``configs:``: each config's splits as ``<config>/<split>-*``, in the card's (sorted) order; the
    writer reads its half-built folder through this too (``reader.Export.described``)."""
    return MetadataConfigs({
        config: {
            "data_files": [{"split": split, "path": f"{config}/{split}-*"} for split in info.splits],
            **({"default": True} if config == default else {}),
        }
        for config, info in sorted(infos.items())
    })


def write_card(corpus: str, folder: Path, infos: dict, default: str, sample: bool = False,
               missing: list | None = None, training: dict | None = None) -> DatasetCard:
    """README.md = the corpus card plus generated ``configs`` and ``dataset_info``, validated on re-read.

    ``missing`` (see ``writer.missing_parts``) marks a partial build: the YAML key ``qahub_partial`` lists the
    missing configs and splits with the reason, and a note at the top of the text says the same. ``training``
    (``qahub.training.write_training``'s result) adds the training configs' section and counts."""
    template = registry.card_path(corpus)
    if not template.is_file():
        raise ExportError(f"{template}: the dataset card of {corpus!r} is missing")
    card = DatasetCard.load(template, repo_type="dataset")
    data = card.data
    data.size_categories = [size_category(max(sum(s.num_examples for s in info.splits.values()) for info in infos.values()))]
    config_files(infos, default).to_dataset_card_data(data)
    DatasetInfosDict(infos).to_dataset_card_data(data)
    text = _marked(data, card.text.lstrip(), sample, missing, training)
    path = folder / "README.md"
    path.write_text(f"---\n{data.to_yaml()}\n---\n{text}", encoding="utf-8", newline="")
    card = validate_card(path, infos)
    if _missing_in(card) != (missing or []):
        raise ExportError(f"{path}: the {PARTIAL_KEY} list does not survive the YAML round trip")
    return card


def _marked(data, text: str, sample: bool, missing: list | None, training: dict | None) -> str:
    """The card's text, and its YAML ``data``, with what this build is: its training configs, partial, a sample."""
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
    return text


def describe_missing(missing: list[dict]) -> str:
    """One line: ``qa/train (their source files were absent ...); extended (its source was unavailable)``."""
    parts = []
    for entry in missing:
        where = entry["config"] if entry["splits"] == "all" else \
            ", ".join(f"{entry['config']}/{split}" for split in entry["splits"])
        parts.append(f"{where} ({entry['reason']})")
    return "; ".join(parts)


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

