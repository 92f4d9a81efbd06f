"""Reading the user's files strictly and writing outputs safely.

``check_output`` refuses an output path that is one of the command's inputs (after resolving symlinks and
``sub/../`` spellings) or that exists without ``overwrite``; ``write_output`` writes a temporary file beside
the target and puts it in place, so a reader never sees half a file: renamed over it with ``overwrite`` (a
symlinked path is written through, the link stays a link), else only if the name is still free (two runs never
both write it). ``loads_strict`` is
``json.loads`` with duplicate object keys an error naming the key.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


class DuplicateKeyError(ValueError):
    pass


def check_output(path, inputs=(), overwrite: bool = False, option: str = "--output") -> Path:
    """The resolved output path, or a ValueError/FileExistsError saying why it may not be written."""
    target = Path(os.path.realpath(Path(path).expanduser()))
    for given in inputs:
        source = Path(os.path.realpath(Path(given).expanduser()))
        if source == target:
            raise ValueError(f"{option} {path}: is the input file {given}; choose another output file")
        if source.is_dir() and target.is_relative_to(source) and target.exists():
            raise ValueError(f"{option} {path}: is a file inside the input folder {given}; choose another output file")
    if target.is_dir():
        raise IsADirectoryError(f"{option} {path}: is a folder; name a file")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"{option} {path}: the folder {target.parent} does not exist")
    if target.exists() and not overwrite:
        raise FileExistsError(f"{option} {path}: exists; pass --overwrite to replace it")
    return target


def write_output(path, text: str, overwrite: bool = False, option: str = "--output", encoding: str = "utf-8") -> Path:
    """``text`` written whole to a temporary file beside ``path``, then put in place: renamed over it with
    ``overwrite``, else hard-linked to the name, which fails when the name exists (e.g. another run wrote it
    since it was checked). Where hard links are not supported the file is created exclusively instead."""
    target = Path(os.path.realpath(Path(path).expanduser()))
    try:
        _put(target, text, overwrite, encoding)
    except FileExistsError:
        raise FileExistsError(f"{option} {path}: exists (written since this run began?); pass --overwrite to "
                              "replace it") from None
    except OSError as err:  # e.g. a full disk: the errno alone would not say which file
        named = OSError(f"{option} {path}: {err.strerror or err}")
        named.errno = err.errno  # kept for callers, out of the message ("[Errno 28] ...")
        raise named from None
    return target


def _put(target: Path, text: str, overwrite: bool, encoding: str):
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding, errors="strict", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if overwrite:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target, text, encoding)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _link_new(tmp: str, target: Path, text: str, encoding: str):
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError:  # no hard links on this filesystem: create the name exclusively and write it
        with open(target, "x", encoding=encoding, newline="") as handle:
            try:
                handle.write(text)
                handle.flush()
            except BaseException:
                target.unlink(missing_ok=True)
                raise


def listed(names, limit: int = 5) -> str:
    """The first ``limit`` names, comma-separated, and how many more there are."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


@contextlib.contextmanager
def made_folder(folder: Path, result: Path):
    """``folder`` made, with its parents, for the block; the folders it made are removed again, while empty,
    when the block ends without ``result`` existing (a failed command, on a full disk for instance)."""
    created = _first_missing(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        yield
    finally:
        if created and not result.exists():
            _remove_empty(folder, created)


def _first_missing(folder: Path) -> Path | None:
    """The outermost ancestor of ``folder`` (or itself) that does not exist yet."""
    missing = None
    while not folder.exists():
        missing, folder = folder, folder.parent
    return missing


def _remove_empty(folder: Path, stop: Path):
    """Remove ``folder`` and its parents up to ``stop`` while they are empty."""
    while True:
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == stop:
            return
        folder = folder.parent


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def reject_duplicate_keys(pairs):
    """``object_pairs_hook`` for ``json.loads``: a key given twice in one object is an error."""
    result = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(f"key {key!r} appears twice in one JSON object")
        result[key] = value
    return result


def loads_strict(text: str, where: str = "") -> object:
    """``json.loads(text)`` that refuses duplicate keys (the last would silently win), naming ``where``."""
    try:
        return json.loads(text, object_pairs_hook=reject_duplicate_keys)
    except DuplicateKeyError as err:
        raise DuplicateKeyError(f"{where}: {err}" if where else str(err)) from None
