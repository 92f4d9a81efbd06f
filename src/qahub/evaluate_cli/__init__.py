"""Command-line adapters of the metrics: one module per metric, used by ``qahub evaluate NAME``."""

from __future__ import annotations

import importlib
import logging
import pkgutil
from pathlib import Path

from qahub import registry


def scoring_modules() -> dict:
    """The adapters: the modules of ``evaluate_cli`` named after a metric. One
    that does not import is left out with a warning naming it: the other commands still run."""
    modules = {}
    for name in scoring_names():
        try:
            modules[name] = importlib.import_module(f"qahub.evaluate_cli.{name}")
        except Exception as err:  # whatever a broken adapter (or what it imports) raises
            path = next(p for p in (Path(d) / f"{name}.py" for d in __path__) if p.is_file())
            logging.getLogger(__name__).warning("%s: does not import (%s: %s); `qahub evaluate %s` is left out",
                                                path, type(err).__name__, " ".join(str(err).split()), name)
    return modules


def scoring_names() -> list[str]:
    """The adapters' names, found without importing them."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name in registry.metric_names())

