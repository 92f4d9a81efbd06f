"""Where a builder's source files come from: a local copy, a mirror, or the pinned upstream URL.

Shared by the builders in this folder; it needs only the standard library and `datasets`.

A source file is named by its path relative to the corpus root (``corpus_ver1.2/dev_ver1.2.json``):
- with ``data_dir`` the file is ``<data_dir>/<path>``;
- with a mirror base URL (config ``mirror_url`` or the ``QAHUB_MIRROR_URL`` environment variable) it is
  downloaded from ``<mirror>/<corpus>/<path>``, so a mirror is an HTTP-served data root;
- otherwise it is downloaded from the builder's canonical base URL, pinned to an upstream commit.

Downloaded files go through the `datasets` download manager (its cache) and are checked against the
pinned sha256; a mismatch removes the cached copy so that a retry downloads again.
"""

import hashlib
import os

from datasets.utils.file_utils import xopen

MIRROR_ENV = "QAHUB_MIRROR_URL"


class SourceDataError(ValueError):
    """A source file is corrupt, or holds a record the builder cannot accept."""


class SourceUnavailableError(ConnectionError):
    """A source file could not be downloaded (network, proxy or mirror trouble)."""


def record_error(path, record, problem):
    """The builders' one error shape: which file, which record, what is wrong."""
    return SourceDataError(f"{path}: record {record}: {problem}")


def sha256_of(path):
    """sha256 of a local file, or of a URL's content (streaming mode hands builders URLs, not files)."""
    digest = hashlib.sha256()
    opener = open if os.path.exists(path) else xopen
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_sources(config, dl_manager, corpus, canonical_base, files, sha256=None):
    """Map ``{key: relative path}`` to local file paths, downloading when there is no ``data_dir``."""
    if config.data_dir:
        return {key: _local(config.data_dir, rel) for key, rel in files.items()}
    base = (getattr(config, "mirror_url", None) or os.environ.get(MIRROR_ENV) or "").rstrip("/")
    base = f"{base}/{corpus}" if base else canonical_base.rstrip("/")
    urls = {key: f"{base}/{rel}" for key, rel in files.items()}
    paths = {}
    for key, url in urls.items():
        try:
            paths[key] = dl_manager.download(url)
        except (OSError, ValueError) as err:  # requests/fsspec raise both kinds for network and HTTP errors
            raise SourceUnavailableError(
                f"downloading {url} failed: {_why(err)}; "
                f"use a local copy (data_dir=, --data-dir) or a mirror (mirror_url=, --mirror-url, ${MIRROR_ENV})"
            ) from err
    for key, rel in files.items():
        expected = (sha256 or {}).get(rel)
        if expected:
            _verify(paths[key], urls[key], expected)
    return paths


def _why(err) -> str:
    """What went wrong, from the exception chain: fsspec reports a 404 and a dead host alike as FileNotFoundError."""
    causes, cause = [], err
    while cause is not None and len(causes) < 6:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any("404" in f"{type(c).__name__} {c}" for c in causes):
        return "not found on the server (HTTP 404)"
    root = causes[-1]
    return f"the server could not be reached ({type(root).__name__}: {root})"


def _local(data_dir, rel):
    path = os.path.join(os.path.expanduser(str(data_dir)), rel)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: source file not found (data_dir={data_dir!r} must hold {rel})")
    return path


def _verify(path, url, expected):
    got = sha256_of(path)
    if got != expected:
        for leftover in (path, path + ".json", path + ".lock"):
            if os.path.isfile(leftover):
                os.remove(leftover)
        raise SourceDataError(f"{url}: checksum mismatch: expected sha256 {expected}, got {got}")
