"""``qahub metric-copy``: a metric's evaluate module folder copied to ``DIR/NAME/``, so that
``evaluate.load("NAME")`` finds it there."""

from __future__ import annotations

import json
from pathlib import Path

from qahub import registry

COPY_MANIFEST = ".qahub-metric-copy.json"


def copy_metric(metric: str, out_dir: Path, name: str | None = None, overwrite: bool = False,
                manifest: bool = True) -> Path:
    """Copy the metric's directory to ``out_dir/<name>/`` (module renamed to ``<name>.py``), caches left out.

    ``overwrite`` replaces only a folder that is an earlier copy: every file in it one that a copy of this
    metric writes (now, or by its manifest ``.qahub-metric-copy.json`` when it was copied); a folder with any
    other file is refused, naming the files. The new copy is written beside the target and renamed into place.
    """
    import shutil
    import uuid

    from qahub.files import listed, made_folder

    name = name or metric
    target = out_dir / name
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise FileExistsError(f"{target}: exists and is not a folder (or is a symlink); choose another --out")
    if target.exists() and any(target.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{target}: exists and is not empty; pass --overwrite to replace it")
        if not (target / f"{name}.py").is_file():
            raise FileExistsError(f"{target}: is not a copy of the {metric} metric (no {name}.py); "
                                  "--overwrite only replaces an earlier copy")
        foreign = _foreign_files(target, metric, name)
        if foreign:
            raise FileExistsError(f"{target}: is not a copy of the {metric} metric: it holds {listed(foreign)}; "
                                  "--overwrite only replaces an earlier copy")
    staging = out_dir / f".{name}.partial-{uuid.uuid4().hex[:8]}"
    with made_folder(out_dir, target):
        try:
            files = _copy_files(metric, staging, name)
            if manifest:
                (staging / COPY_MANIFEST).write_text(json.dumps({"metric": metric, "files": files}, indent=1) + "\n",
                                                     encoding="utf-8")
            _swap_in(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _copy_files(metric: str, staging: Path, name: str) -> list[str]:
    import shutil

    try:
        shutil.copytree(registry.metric_dir(metric), staging, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    except shutil.Error as err:  # one entry per file that failed, each with its message: the first says why
        failed = err.args[0] if err.args and isinstance(err.args[0], list) else []
        why = failed[0][2] if failed and len(failed[0]) == 3 else str(err)
        raise OSError(f"copying the {metric} metric to {staging.parent}: {why}"
                      + (f" ({len(failed)} files not copied)" if len(failed) > 1 else "")) from None
    if name != metric:
        (staging / f"{metric}.py").rename(staging / f"{name}.py")
    return sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())


def _foreign_files(target: Path, metric: str, name: str) -> list[str]:
    """Files in ``target`` that no copy of ``metric`` writes (Python caches aside)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        known = set(_copy_files(metric, Path(tmp) / "copy", name))
    known |= {COPY_MANIFEST, *_manifest_files(target / COPY_MANIFEST, metric)}
    found = [p for p in target.rglob("*") if p.is_file() or p.is_symlink()]
    rel = [p.relative_to(target).as_posix() for p in found]
    return sorted(r for r in rel if r not in known and "__pycache__/" not in r and not r.endswith(".pyc"))


def _manifest_files(manifest: Path, metric: str) -> list[str]:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    files = data.get("files") if isinstance(data, dict) and data.get("metric") == metric else None
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


def _swap_in(staging: Path, target: Path):
    import shutil
    import uuid

    if not target.exists():
        staging.rename(target)
        return
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)

