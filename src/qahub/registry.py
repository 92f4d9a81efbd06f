"""What qahub has: corpora (builder modules in ``qahub.loaders``) and metrics (directories in ``qahub.metrics``).

Both are discovered by ``qahub.tasks``: a corpus is registered with its loader ``loaders/<name>.py``, its metric
``metrics/<metric>/<metric>.py`` and that metric's ``task_api.py`` declaring ``CORPUS = "<name>"`` (and, for the
command line, ``src/qahub/evaluate_cli/<metric>.py``).
"""

from __future__ import annotations

import importlib
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from qahub import tasks

if TYPE_CHECKING:
    import datasets


class UnknownNameError(KeyError):
    def __str__(self):
        return str(self.args[0])


def corpus_names() -> tuple[str, ...]:
    """Every registered corpus (``qahub.tasks``: a loader, a metric and a task declaration)."""
    return tasks.corpus_names()


def builder_module(corpus: str):
    if corpus not in corpus_names():
        raise UnknownNameError(f"unknown corpus {corpus!r}; qahub has: {', '.join(corpus_names())}")
    return importlib.import_module(f"qahub.loaders.{corpus}")


def builder_class(corpus: str) -> type[datasets.DatasetBuilder]:
    """The loader's builder class: the one ``qahub.tasks``' scan found in its module."""
    module = builder_module(corpus)
    names = tasks.scan().builders[corpus]
    if len(names) != 1:
        raise RuntimeError(f"{module.__file__}: expected one dataset builder class, found {len(names)} "
                           f"({', '.join(names)})")
    return getattr(module, names[0])


def config_names(corpus: str) -> list[str]:
    return [config.name for config in builder_class(corpus).BUILDER_CONFIGS]


# what a corpus's task_api declares for the configs qahub.training makes of its exports (read by qahub.tasks'
# scanner, as it reads CORPUS: no task_api is imported to list them)
TRAINING_DECLARATIONS = (("sft", "TRAINING_TEXTS"), ("messages", "CONVERSATION"))


def training_configs(corpus: str) -> list[str]:
    """The configs ``qahub.training`` makes of ``corpus``'s export: ``sft`` when its task_api declares
    ``TRAINING_TEXTS``, ``messages`` when it also declares a ``CONVERSATION``."""
    if corpus not in corpus_names():
        return []
    names = tasks.scan().names[corpus]
    found = [config for config, name in TRAINING_DECLARATIONS if name in names]
    return found if "sft" in found else []


def export_config_names(corpus: str) -> list[str]:
    """Every config of an export of ``corpus``: its builder's, then its training configs."""
    return [*config_names(corpus), *training_configs(corpus)]


def default_config(corpus: str) -> str:
    cls = builder_class(corpus)
    return cls.DEFAULT_CONFIG_NAME or cls.BUILDER_CONFIGS[0].name


def splits(corpus: str, config: str) -> list[str]:
    """The splits of ``config`` as its builder declares them (its ``SPLITS``, which ``_split_generators`` uses).

    Empty when the builder does not declare them.
    """
    return list(getattr(builder_class(corpus), "SPLITS", {}).get(config, []))


CATALOG = "corpora.json"


def describe(corpus: str) -> dict:
    """What ``qahub list`` shows of a corpus, read from its builder: the default config and each config's splits."""
    return {"default": default_config(corpus),
            "configs": {**{config: splits(corpus, config) for config in config_names(corpus)},
                        **{config: ["train"] for config in training_configs(corpus)}}}


def catalog() -> dict:
    """``describe`` of every corpus as written to ``qahub/corpora.json`` by ``write_catalog`` (a test checks it
    against the builders), so that ``qahub list`` imports no builder (nor ``datasets``)."""
    written = json.loads(resources.files("qahub").joinpath(CATALOG).read_text(encoding="utf-8"))
    return {corpus: written.get(corpus) or describe(corpus) for corpus in corpus_names()}


def write_catalog() -> Path:
    """Rewrite ``qahub/corpora.json`` from the builders; run after changing a builder's configs or splits."""
    path = Path(str(resources.files("qahub").joinpath(CATALOG)))
    text = json.dumps({corpus: describe(corpus) for corpus in corpus_names()}, indent=1)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def absent_splits(corpus: str, config: str, built) -> list[str]:
    """The declared splits of ``config`` missing from ``built``; none for a builder that declares
    ``SPLITS_FROM_FILES = True`` (its splits are whichever its source files hold, e.g. LIMUR's)."""
    if getattr(builder_class(corpus), "SPLITS_FROM_FILES", False):
        return []
    return [split for split in splits(corpus, config) if split not in set(built)]


def check_config(corpus: str, config: str) -> None:
    """Fail early, naming what exists, on an unknown config (builder options: ``export.check_options``)."""
    if config not in config_names(corpus):
        raise UnknownNameError(f"{corpus} has no config {config!r}; its configs: {', '.join(config_names(corpus))}"
                               + (f" (and {', '.join(training_configs(corpus))}, which only an export makes)"
                                  if config in training_configs(corpus) else ""))


def check_export_config(corpus: str, config: str) -> None:
    """``check_config`` for an export, whose configs include the training configs."""
    if config not in export_config_names(corpus):
        raise UnknownNameError(f"{corpus} has no config {config!r}; its configs: "
                               f"{', '.join(export_config_names(corpus))}")


def card_path(corpus: str) -> Path:
    return Path(str(resources.files("qahub.dataset_cards").joinpath(f"{corpus}.md")))


def samples_dir(corpus: str | None = None) -> Path:
    """The bundled sample data (upstream layout), used by ``qahub demo`` and the tests."""
    root = Path(str(resources.files("qahub").joinpath("samples")))
    return root / corpus if corpus else root


def is_sample(path) -> bool:
    """Whether ``path`` is the bundled sample data or inside it, also when reached through a symlink."""
    return bool(path) and Path(path).expanduser().resolve().is_relative_to(samples_dir().resolve())


def metric_dirs() -> dict[str, Path]:
    """``{name: directory}`` of every registered corpus's metric: its ``<name>/<name>.py`` on ``qahub.metrics``'s
    path."""
    return tasks.metric_dirs()


# what a caller that changes loaders' or metrics' __path__ clears (the scan was once cached in these two)
corpus_names.cache_clear = metric_dirs.cache_clear = tasks.clear


def metric_names() -> tuple[str, ...]:
    return tuple(sorted(metric_dirs()))


def metrics_root() -> Path:
    return Path(str(resources.files("qahub.metrics")))


def metric_dir(name: str) -> Path:
    if name not in metric_dirs():
        raise UnknownNameError(f"unknown metric {name!r}; qahub has: {', '.join(metric_names()) or 'none'}")
    return metric_dirs()[name]


def load_metric(name: str, **kwargs):
    """``evaluate.load`` of the metric's directory, as a user would load it."""
    import evaluate

    return evaluate.load(str(metric_dir(name)), **kwargs)
