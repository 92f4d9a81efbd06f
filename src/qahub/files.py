"""Reading the user's files strictly and writing outputs safely.

``check_output`` refuses an output path that is one of the command's inputs (after resolving symlinks and
``sub/../`` spellings) or that exists without ``overwrite``; ``write_output`` writes a temporary file beside
the target and puts it in place, so a reader never sees half a file: renamed over it with ``overwrite`` (a
symlinked path is written through, the link stays a link), else only if the name is still free (two runs never
both write it). ``loads_strict`` is
``json.loads`` with duplicate object keys an error naming the key.

Output folders (an export, a metric copy, lm-eval task folders, a report) are written one way: ``staged``
checks the target with the command's ``Guard`` (how it recognises its own earlier output, and what it says when
it refuses a folder), yields a work folder ``.<name>.partial-<hex>`` beside the target, and swaps it in when the
block ends; on any error or interrupt the work folder is removed and the old folder stays as it was.
``remove_leftovers`` removes the work folders a killed run left.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Guard:
    """How one command treats an existing output folder: the message of each refusal (a None check is not made)
    and how it recognises its own earlier output."""

    not_folder: str  # the target exists and is not a folder
    not_empty: str  # a folder holding files, without overwrite
    not_ours: str | None = None  # with overwrite, a folder is_ours refuses; None: overwrite replaces any folder
    is_ours: Callable[[Path], bool] = lambda folder: False  # may raise the command's own error, naming what is wrong
    ours_without_overwrite: bool = False  # the command's own earlier output is replaced without asking
    symlink: str | None = None  # a symlinked target refused with this; None: written through
    is_cwd: str | None = None  # the current folder, or a folder holding it, refused with this
    near_input: Callable[[str], str] | None = None  # a target that is, holds or is inside an input: the message
    error: type[Exception] = FileExistsError
    exists_error: type[Exception] | None = None  # not_empty's error, when not ``error``


def check_folder(target: Path, overwrite: bool, guard: Guard, inputs=()):
    """Raise ``guard.error`` (with the guard's message) unless ``target`` may be written: missing, empty, the
    command's own earlier output (with ``overwrite``, unless ``guard.ours_without_overwrite``), or any folder with
    ``overwrite`` when the guard has no ``not_ours``."""
    if guard.symlink and target.is_symlink():
        raise guard.error(guard.symlink)
    real = Path(os.path.realpath(target))
    if guard.is_cwd and Path.cwd().is_relative_to(real):
        raise guard.error(guard.is_cwd)
    for given in inputs if guard.near_input else ():
        where = Path(os.path.realpath(given))
        if real.is_relative_to(where) or where.is_relative_to(real):
            raise guard.error(guard.near_input(given))
    if target.exists() and not target.is_dir():
        raise guard.error(guard.not_folder)
    if not target.is_dir() or not any(target.iterdir()):
        return
    if guard.ours_without_overwrite and guard.is_ours(target):
        return
    if not overwrite:
        raise (guard.exists_error or guard.error)(guard.not_empty)
    if guard.not_ours is not None and not guard.is_ours(target):
        raise guard.error(guard.not_ours)


@contextlib.contextmanager
def staged(target: Path, overwrite: bool = False, guard: Guard | None = None, inputs=(), swap=None):
    """``check_folder`` (unless no ``guard``: the caller checked before its long work), then a new work folder
    beside ``target`` for the block, put in place by ``swap(work, target)`` (default ``swap_in``) when the block
    ends; removed on any error or interrupt, with the parent folders made for it."""
    if guard:
        check_folder(target, overwrite, guard, inputs)
    target = Path(os.path.realpath(target))  # a symlinked target (one not refused) is written through
    with made_folder(target.parent, target), staging(target) as work:
        yield work
        (swap or swap_in)(work, target)


@contextlib.contextmanager
def staging(target: Path):
    """An empty work folder ``.<name>.partial-<hex>`` beside ``target``, removed when the block ends."""
    work = target.parent / f".{target.name}.partial-{os.urandom(4).hex()}"
    try:
        work.mkdir()
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def swap_in(work: Path, target: Path):
    """``work`` renamed to ``target``; an existing ``target`` is first moved aside to ``.<name>.old-<hex>`` (put
    back if the rename fails) and removed after."""
    if not target.exists():
        work.rename(target)
        return
    old = target.parent / f".{target.name}.old-{os.urandom(4).hex()}"
    target.rename(old)
    try:
        work.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def remove_leftovers(target: Path) -> list[str]:
    """Remove the work folders (``.<name>.partial-*``, ``.<name>.old-*``) of an earlier run that was killed
    (SIGKILL, power loss); only safe while no other run can be writing ``target`` (export's build lock)."""
    found = sorted([*target.parent.glob(f".{target.name}.partial-*"), *target.parent.glob(f".{target.name}.old-*")])
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return [str(path) for path in found]


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
