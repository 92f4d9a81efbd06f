"""MkDocs hook: the page `reference/metrics.md`, each metric's `compute` inputs.

A metric's inputs are documented once, in its module's `_KWARGS_DESCRIPTION` (what `evaluate.load(...).inputs_description`
shows, and what the metric's class docstring is made from). The metric modules live in `metrics/<name>/<name>.py`,
loaded by `evaluate` as files, not as documented packages; LIMUR's text is built at import (its judge settings), so the
page reads each module's value as imported (`qahub.metrics.<name>.<name>`, the installed namespace package) rather
than its source text.
"""

import importlib
import textwrap

from mkdocs.structure.files import File

PAGE = "reference/metrics.md"


def metric_page() -> str:
    from qahub import registry

    parts = ["# Metric inputs\n",
             "Each metric's `compute(predictions=..., references=..., **options)` as its module documents it "
             "(`_KWARGS_DESCRIPTION`, shown by `evaluate.load(...).inputs_description`). "
             "How to load a metric: [Scoring](../scoring.md#metrics-with-evaluate).\n"]
    for name in registry.metric_names():
        module = importlib.import_module(f"qahub.metrics.{name}.{name}")
        inputs = textwrap.dedent(module._KWARGS_DESCRIPTION).strip("\n")
        parts += [f"## `{name}`\n", module._DESCRIPTION.strip() + "\n",
                  f"Source: `metrics/{name}/{name}.py`.\n", "```text", inputs, "```\n"]
    return "\n".join(parts)


def on_files(files, config):
    files.append(File.generated(config, PAGE, content=metric_page()))
    return files
