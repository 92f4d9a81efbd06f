"""The reference rows of ``qahub evaluate``, for every corpus: the rows of one split of an export (a folder or a
Hub dataset id, read with ``datasets.load_dataset``) or of a build of the corpus by its builder (``qahub.load``).

A local path that does not exist is an error here, never a Hub lookup. A build of local files goes to a temporary
cache, so an edited file is never answered from an old build. ``split`` may be a tuple of names: the first one
there is read. ``no_split`` is the message when it is not there; ``{found}`` in it lists the splits there.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from pathlib import Path

DATA_FILES = (".csv", ".tsv", ".txt", ".json", ".jsonl", ".parquet", ".arrow", ".zip")


def export_rows(location, config, split, *, cache_dir=None, no_split=None,
                what="an export folder or a Hub dataset id") -> list[dict]:
    """The rows of ``split`` of the export at ``location``; a failure to load it is one line, ``not {what}``."""
    import datasets

    location = check_location(location)
    try:
        names = datasets.get_dataset_split_names(location, config)
    except Exception as err:  # noqa: BLE001 - datasets' and the Hub client's errors (network, HTTP) as one line
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None
    name = _pick(names, split, no_split or _no_split(location, config, split))
    try:  # only the split asked for: datasets would otherwise prepare every split of the export
        return datasets.load_dataset(location, config, split=name, cache_dir=cache_dir).to_list()
    except Exception as err:  # noqa: BLE001 - as above
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None


def export_configs(location, what="an export folder or a Hub dataset id") -> list[str]:
    """The config names of the export at ``location``."""
    import datasets

    location = check_location(location)
    try:
        return datasets.get_dataset_config_names(location)
    except Exception as err:  # noqa: BLE001 - as in export_rows
        raise ValueError(f"{location}: not {what} ({type(err).__name__}: {err})") from None


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

    if data_dir is not None:
        data_dir = Path(data_dir).expanduser()
        if not data_dir.exists():
            raise FileNotFoundError(f"--data-dir {data_dir}: no such file or folder")
        if not data_dir.is_dir():
            raise NotADirectoryError(f"--data-dir {data_dir}: not a folder")
    cache = tempfile.TemporaryDirectory(prefix=f"qahub-{corpus}-") if data_dir else contextlib.nullcontext(cache_dir)
    with cache as cache_dir:
        splits = qahub.load(corpus, config, data_dir=data_dir, cache_dir=cache_dir, mirror_url=mirror_url, **options)
        return splits[_pick(list(splits), split, no_split or _no_split(data_dir or corpus, config, split))].to_list()


def built_file_rows(corpus, config, split, path, name, **options) -> list[dict]:
    """``built_rows`` of one upstream file, whatever its name: linked as ``name`` in a temporary folder and built
    there; errors and the builder's warnings name ``path``."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix=f"qahub-{corpus}-") as folder:
        link = Path(folder, name)
        link.symlink_to(path.resolve())
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return built_rows(corpus, config, split, folder, **options)
        except (ValueError, OSError) as err:
            raise _renamed(err, str(link), str(path)) from None
        finally:
            for warning in caught:
                warnings.warn(str(warning.message).replace(str(link), str(path)), warning.category, stacklevel=2)


def _renamed(err, old, new):
    """``err`` of the same type (else a ValueError) with ``old`` in its message replaced by ``new``."""
    message = str(err).replace(old, new)
    try:
        return type(err)(message)
    except TypeError:
        return ValueError(message)


def _no_split(where, config, split):
    wanted = split if isinstance(split, str) else " or ".join(split)
    return f"{where}: {f'config {config} ' if config else ''}has no split {wanted!r} (splits: {{found}})"


def _pick(names, split, no_split) -> str:
    """The first of ``split`` (a name or a tuple of names) in ``names``."""
    name = next((name for name in ((split,) if isinstance(split, str) else split) if name in names), None)
    if name is None:
        raise ValueError(no_split.replace("{found}", ", ".join(names) or "none"))
    return name
