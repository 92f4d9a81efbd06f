"""qahub: `datasets` builders and `evaluate` metrics for five QA and dialogue corpora.

>>> import qahub
>>> dsd = qahub.load("jemhopqa", "v1.1", data_dir="path/to/JEMHopQA")   # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "make_builder", "prepare"]


def make_builder(corpus: str, config: str | None = None, *, data_dir=None, cache_dir=None, mirror_url=None, **kwargs):
    """The corpus's `datasets` builder, configured; nothing is downloaded or built yet."""
    from qahub import registry

    cls = registry.builder_class(corpus)
    config = config or registry.default_config(corpus)
    registry.check_config(corpus, config)
    if mirror_url:
        kwargs["mirror_url"] = mirror_url
    return cls(config_name=config, data_dir=str(data_dir) if data_dir else None, cache_dir=cache_dir, **kwargs)


def load(corpus: str, config: str | None = None, *, data_dir=None, cache_dir=None, mirror_url=None,
         download_mode=None, **kwargs):
    """Build ``corpus``/``config`` with its builder and return the ``DatasetDict``.

    ``data_dir`` is a local copy of the upstream files (upstream layout); without it the pinned upstream
    files are downloaded (or fetched from ``mirror_url`` / ``$QAHUB_MIRROR_URL``) and checked by sha256.
    """
    builder = make_builder(corpus, config, data_dir=data_dir, cache_dir=cache_dir, mirror_url=mirror_url, **kwargs)
    prepare(builder, download_mode=download_mode)
    return builder.as_dataset()


def prepare(builder, **kwargs):
    """``builder.download_and_prepare(**kwargs)``, raising the builder's own error about the source data.

    `datasets` wraps any error raised while generating examples in a generic ``DatasetGenerationError``;
    the builder's error (file, record, problem) is its cause, and is what the user needs to read.
    """
    from datasets.exceptions import DatasetGenerationError

    try:
        builder.download_and_prepare(**kwargs)
    except DatasetGenerationError as err:
        cause = err.__cause__
        if isinstance(cause, (ValueError, OSError)):
            raise cause.with_traceback(cause.__traceback__) from None
        raise
