"""Where a builder's source files come from: a local copy, a mirror, or the pinned upstream URL.

Shared by the builders in this folder; it needs only the standard library, `datasets` and ``qahub.readers``.

A source file is named by its path relative to the corpus root (``corpus_ver1.2/dev_ver1.2.json``):
- with ``data_dir`` the file is ``<data_dir>/<path>``;
- with a mirror base URL (config ``mirror_url`` or the ``QAHUB_MIRROR_URL`` environment variable) it is
  downloaded from ``<mirror>/<corpus>/<path>``, so a mirror is an HTTP-served data root;
- otherwise it is downloaded from the builder's canonical base URL, pinned to an upstream commit.

Downloaded files go through the `datasets` download manager (its cache) and are checked against the
pinned sha256; a mismatch removes the cached copy so that a retry downloads again.

Each corpus declares its ``Source`` once (what it is, its upstream base URL, its files and their sha256) and
gives its builder config class ``SourceConfig`` (the ``mirror_url`` option). The builders read the files with
the strict readers of ``qahub.readers``.
"""

import hashlib
import os
from dataclasses import dataclass, field
from typing import Mapping, Optional

import datasets

from qahub.readers import SourceDataError, open_source, source_file

MIRROR_ENV = "QAHUB_MIRROR_URL"


class SourceUnavailableError(ConnectionError):
    """A source file could not be downloaded (network, proxy or mirror trouble)."""


@dataclass
class Source:
    """What a corpus is and where its files come from, declared once in its builder module.

    ``files`` is ``{config: {split: path}}`` for a corpus stored as one file per split (else empty);
    ``sha256`` maps a path to its pinned checksum (a path not listed is downloaded unchecked).
    """

    corpus: str  # also the corpus folder under a mirror: <mirror>/<corpus>/<path>
    description: str
    citation: str
    homepage: str
    license: str
    base_url: Optional[str] = None  # upstream, pinned to a commit where upstream allows; None: no public download
    sha256: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def info(self, features):
        return datasets.DatasetInfo(description=self.description, features=datasets.Features(features),
                                    homepage=self.homepage, license=self.license, citation=self.citation)

    def splits(self):
        """``{config: [split, ...]}`` of ``files``."""
        return {config: list(by_split) for config, by_split in self.files.items()}

    def resolve(self, config, dl_manager, files):
        """``{key: local path}`` of ``{key: path}``: from ``data_dir``, a mirror, or upstream (see the module)."""
        return resolve_sources(config, dl_manager, self.corpus, self.base_url, files, self.sha256)


@dataclass
class SourceConfig(datasets.BuilderConfig):
    """A builder config whose source files can come from a mirror: ``mirror_url`` replaces the upstream base URL."""

    mirror_url: Optional[str] = None


def in_data_dir(config, path):
    """Whether ``config.data_dir`` is given and holds ``path``."""
    return bool(config.data_dir) and os.path.isfile(os.path.join(os.path.expanduser(str(config.data_dir)), path))


# --- downloading


def sha256_of(path):
    """sha256 of a local file, or of a URL's content (streaming mode hands builders URLs, not files)."""
    digest = hashlib.sha256()
    with open_source(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve_sources(config, dl_manager, corpus, canonical_base, files, sha256=None):
    """Map ``{key: relative path}`` to local file paths, downloading when there is no ``data_dir``."""
    if config.data_dir:
        return {key: source_file(config.data_dir, rel) for key, rel in files.items()}
    base = (getattr(config, "mirror_url", None) or os.environ.get(MIRROR_ENV) or "").rstrip("/")
    if not base and not canonical_base:
        raise FileNotFoundError(f"{corpus} has no public download: pass data_dir (a local copy) or a mirror")
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


def _verify(path, url, expected):
    got = sha256_of(path)
    if got != expected:
        for leftover in (path, path + ".json", path + ".lock"):
            if os.path.isfile(leftover):
                os.remove(leftover)
        raise SourceDataError(f"{url}: checksum mismatch: expected sha256 {expected}, got {got}")
