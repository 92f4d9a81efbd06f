"""``qahub metric-copy``: a metric's evaluate module folder copied to ``DIR/NAME/``, so that
``evaluate.load("NAME")`` finds it there."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from qahub import registry
from qahub.files import Guard, listed, staged

COPY_MANIFEST = ".qahub-metric-copy.json"


def copy_metric(metric: str, out_dir: Path, name: str | None = None, overwrite: bool = False,
                manifest: bool = True) -> Path:
    """Copy the metric's directory to ``out_dir/<name>/`` (module renamed to ``<name>.py``), caches left out.

    ``overwrite`` replaces only a folder that is an earlier copy: every file in it one that a copy of this
    metric writes (now, or by its manifest ``.qahub-metric-copy.json`` when it was copied); a folder with any
    other file is refused, naming the files. The new copy is written beside the target and renamed into place.
    """
    name = name or metric
    target = out_dir / name
    not_folder = f"{target}: exists and is not a folder (or is a symlink); choose another --out"
    guard = Guard(not_folder=not_folder, symlink=not_folder,
                  not_empty=f"{target}: exists and is not empty; pass --overwrite to replace it",
                  not_ours=f"{target}: is not a copy of the {metric} metric (no {name}.py); "
                           "--overwrite only replaces an earlier copy",
                  is_ours=lambda folder: (folder / f"{name}.py").is_file() and _only_copied_files(folder, metric, name))
    with staged(target, overwrite, guard) as staging:
        files = _copy_files(metric, staging, name)
        if manifest:
            (staging / COPY_MANIFEST).write_text(json.dumps({"metric": metric, "files": files}, indent=1) + "\n",
                                                 encoding="utf-8")
    return target


def _copy_files(metric: str, staging: Path, name: str) -> list[str]:
    try:
        shutil.copytree(registry.metric_dir(metric), staging, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                        dirs_exist_ok=True)
    except shutil.Error as err:  # one entry per file that failed, each with its message: the first says why
        failed = err.args[0] if err.args and isinstance(err.args[0], list) else []
        why = failed[0][2] if failed and len(failed[0]) == 3 else str(err)
        raise OSError(f"copying the {metric} metric to {staging.parent}: {why}"
                      + (f" ({len(failed)} files not copied)" if len(failed) > 1 else "")) from None
    if name != metric:
        (staging / f"{metric}.py").rename(staging / f"{name}.py")
    return sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())


def _only_copied_files(target: Path, metric: str, name: str) -> bool:
    """True, or a FileExistsError naming the files in ``target`` that are not part of a copy of ``metric``."""
    foreign = _foreign_files(target, metric, name)
    if foreign:
        raise FileExistsError(f"{target}: is not a copy of the {metric} metric: it holds {listed(foreign)}; "
                              "--overwrite only replaces an earlier copy")
    return True


def _foreign_files(target: Path, metric: str, name: str) -> list[str]:
    """Files in ``target`` that no copy of ``metric`` writes (Python caches aside)."""
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
