"""The builders' base class: rows handed to `datasets` as Arrow tables.

Its own module, not ``_sources``: in streaming mode `datasets` patches ``open`` and ``os.path`` in the modules
of a builder's base classes, and ``_sources`` (like ``qahub.readers``, which opens URLs itself) must keep the real
ones.
"""

import sys

import datasets
import pyarrow as pa

from qahub.gc_pause import gc_paused

# see RowsBuilder.__init__
_patched_for_streaming = True


class RowsBuilder(datasets.ArrowBasedBuilder):
    """A builder whose ``_generate_examples`` yields ``(key, row)`` with each row already in its stored form
    (a ClassLabel as its number), handed to `datasets` as Arrow tables of ``BATCH_ROWS`` rows: `datasets`
    then encodes no row one by one, which is most of the time of a ``GeneratorBasedBuilder`` build. A builder
    whose source is a table may yield the tables itself (``_generate_tables``, as Jeopardy's does)."""

    BATCH_ROWS = 5_000
    # a Parquet row group holds up to this many rows, so each table the builder yields is one row group: at
    # `datasets`' default (1,000) writing the groups took up to a fifth of a large build
    DEFAULT_WRITER_BATCH_SIZE = 100_000

    def __init__(self, *args, **kwargs):
        # the builders open every source file with qahub.readers.open_source, which reads URLs itself, and use
        # os.path only on local folders: datasets' streaming patches of open and os.path in their module are not
        # needed, and making them costs the first build of a process ~0.6 s (they import scipy.io, pandas, ... to
        # look for them). A module that says it is patched is left alone.
        sys.modules[type(self).__module__]._patched_for_streaming = True
        super().__init__(*args, **kwargs)

    def download_and_prepare(self, *args, **kwargs):
        # half the time of a large build was the collector walking the parsed source again and again
        with gc_paused():
            return super().download_and_prepare(*args, **kwargs)

    def _generate_tables(self, **gen_kwargs):
        schema = self.info.features.arrow_schema
        batch, index = [], 0
        for _, row in self._generate_examples(**gen_kwargs):
            batch.append(row)
            if len(batch) == self.BATCH_ROWS:
                yield index, pa.Table.from_pylist(batch, schema=schema)
                batch, index = [], index + 1
        if batch or not index:
            yield index, pa.Table.from_pylist(batch, schema=schema)

    def _generate_examples(self, **gen_kwargs):
        raise NotImplementedError
