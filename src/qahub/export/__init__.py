"""Exports: a corpus built by its builder, in the layout of a Hub dataset repository, and read back.

- ``writer``: ``export()``, which builds the corpus and writes ``<config>/<split>-NNNNN-of-NNNNN.parquet`` and the
  card, staged beside the output folder and renamed into place when complete (``qahub build``);
- ``card``: the ``README.md``: the corpus card plus ``configs:`` and ``dataset_info:``, validated on re-read;
- ``options``: the builder options (``--option KEY=VALUE``), parsed and checked against the corpus's builder;
- ``lock``: one build per output folder at a time;
- ``reader``: the rows of an export (a folder, fresh from its shards, or a Hub id) or of a build, for
  ``qahub evaluate``, the harnesses, training and publishing.

This module imports nothing: ``qahub evaluate`` imports the reader without paying for ``datasets``.
"""


class ExportError(RuntimeError):
    pass


class OutputExistsError(ExportError):
    pass
