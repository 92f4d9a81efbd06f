"""One build per output folder at a time: a lock file ``.<out>.lock`` beside it, held for the build."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: the lock file is created exclusively instead (a killed build's lock stays)
    fcntl = None

from qahub.export import ExportError


class BuildLockedError(ExportError):
    pass


@contextmanager
def build_lock(out: Path):
    """Hold ``.<out>.lock`` beside ``out`` for the build; a second build of ``out`` fails at once."""
    lock = out.parent / f".{out.name}.lock"
    if fcntl is None:
        yield from _exclusive_lock(out, lock)
        return
    fd = _locked(out, lock)
    try:  # from here on the lock file is removed whatever fails, writing the pid on a full disk too
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        yield lock
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)


def _locked(out: Path, lock: Path) -> int:
    """A descriptor of ``lock``, flocked; a BuildLockedError naming the holder when another build holds it."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown process"
            os.close(fd)
            raise BuildLockedError(f"{out}: another qahub build is writing this folder ({holder}); wait for it to "
                                   f"end, or choose another output folder (lock file {lock})") from None
        if _same_file(fd, lock):  # else the previous holder removed it between our open and flock: retry
            return fd
        os.close(fd)


def _exclusive_lock(out: Path, lock: Path):
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise BuildLockedError(f"{out}: another qahub build is writing this folder, or one was killed; when none "
                               f"runs, remove the lock file {lock}") from None
    os.close(fd)
    try:
        yield lock
    finally:
        lock.unlink(missing_ok=True)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
