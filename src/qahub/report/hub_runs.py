"""Runs published on the Hugging Face Hub as report inputs: ``hf://datasets/ORG/NAME[/PATH][@REV]`` (also
huggingface_hub's own ``hf://datasets/ORG/NAME@REV[/PATH]``), or a local snapshot of such a repo (a folder of the
Hub cache, ``.../datasets--ORG--NAME/snapshots/<commit>``, or an ``hf download --local-dir`` folder).

Three layouts are read, each with its harness's reader:

- an lm-eval details repo (``lm_eval --hf_hub_log_args push_samples_to_hub=True,...``): per model a folder
  ``<org>__<model>/`` holding ``results_<date>.json`` and ``samples_<task>_<date>.jsonl`` (lm-eval also pushes a
  copy of the results alone to ``<org>/<model>/``, which is skipped). Each model folder is one run, named by its
  model as a local run is; ``PATH`` picks one folder (needed to give the run a ``NAME=``);
- a lighteval details repo (``lighteval ... --push-to-hub``, ``<org>/details_<model>``): ``results_<date>.json``
  and ``<date>/details_<task>|<shots>_<date>.parquet`` at its root: one run;
- a qahub details dataset (``qahub publish-results --details``): ``report/report.json`` and per run
  ``runs/<run>/`` the files the report read it from, laid out as above (lm-eval, lighteval) or inspect's logs: one
  run each, named as in the published report; ``PATH`` ``runs/<run>`` picks one.

Only the results files of the folders read and the samples or details of the qahub tasks asked for (each from the
newest results file holding it, as for a local run) are downloaded (``snapshot_download`` with exact
``allow_patterns``); the tree listing and the files stay in the Hub cache, so a second read works offline
(``HF_HUB_OFFLINE=1``). Of a qahub details dataset only ``report/report.json`` and the ``runs/`` files the report
reads are downloaded, never its ``data/`` Parquet or Every Eval Ever records."""

from __future__ import annotations

import glob
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from . import inspect_logs, lighteval_runs, lm_eval_runs
from .runs import RESULTS, ReportError, load_json, newest_holding

PREFIX = "hf://"
DATASETS = "hf://datasets/"
SAMPLES = re.compile(r"^samples_.+\.jsonl$")
DETAILS = re.compile(r"^[^/]+/details_.+\.parquet$")  # lighteval's <date>/details_<task>|<shots>_<date>.parquet
QAHUB_REPORT = "report/report.json"  # a qahub details dataset (qahub publish-results --details): its report
QAHUB_RUNS = "runs"  # and beside it runs/<run>/: the harness files the report read each run from


@dataclass(frozen=True)
class Address:
    """``hf://datasets/ORG/NAME[/PATH][@REV]`` taken apart (``text``: as given)."""

    text: str
    repo_id: str
    path: str = ""
    revision: str | None = None


def is_hub(text: str) -> bool:
    return text.startswith(PREFIX)


def split_name(argument: str) -> tuple[str | None, str]:
    """``NAME=hf://...`` -> ``(NAME, hf://...)``; any other argument -> ``(None, argument)``."""
    name, sep, rest = argument.partition("=")
    if sep and name and is_hub(rest) and not is_hub(argument):
        return name, rest
    return None, argument


def parse_address(text: str) -> Address:
    from .hub_files import check_repo_id

    if not text.startswith(DATASETS):
        raise ReportError(f"{text}: only dataset repos are read: hf://datasets/ORG/NAME[/PATH][@REV]")
    rest = text[len(DATASETS):].strip("/")
    org, _, rest = rest.partition("/")
    name, _, path = rest.partition("/")
    revision = None
    if "@" in name:  # huggingface_hub's form: ORG/NAME@REV/PATH (REV url-quoted if it holds a "/")
        name, _, revision = name.partition("@")
        revision = unquote(revision)
        if revision == "refs":  # refs/pr/N or refs/convert/NAME unquoted, as HfFileSystem takes it too
            kind, _, rest = path.partition("/")
            number, _, path = rest.partition("/")
            revision = f"refs/{kind}/{number}"
    elif "@" in path:  # the documented form: ORG/NAME/PATH@REV (REV may hold "/": refs/pr/1)
        path, _, revision = path.rpartition("@")
    if revision == "" or not org or not name:
        raise ReportError(f"{text}: not hf://datasets/ORG/NAME[/PATH][@REV]")
    check_repo_id(text, f"{org}/{name}", ReportError)
    return Address(text, f"{org}/{name}", path.strip("/"), revision)


# --- where the files are: the Hub (through its cache) or a local snapshot


class Snapshot:
    """A snapshot on disk: ``root``, every file of the repo (``files``, paths relative to the repo root) and
    ``fetch(paths)`` making those files present under ``root``. ``where(folder)``: the run's source to report."""

    def __init__(self, root: Path, files: list, label: str):
        self.root, self.files, self.label = root, files, label

    def fetch(self, paths: list):
        """A local snapshot's files are all on disk already."""

    def where(self, folder: str) -> str:
        return str(self.root / folder) if folder else str(self.root)


class HubSnapshot(Snapshot):
    """A dataset repo at one commit, read through the Hub cache: a first ``snapshot_download`` of no file
    resolves the revision to its commit and lists the commit's tree, which huggingface_hub caches with the
    revision (``get_cached_repo_tree``), so the same calls work offline; ``fetch`` downloads at that commit."""

    def __init__(self, address: Address):
        from huggingface_hub import get_cached_repo_tree

        self.address = address
        root = Path(self._download(address.revision or "main", []))  # snapshots/<commit>: where files land
        self.commit = root.name
        files = [entry.path for entry in get_cached_repo_tree(address.repo_id, repo_type="dataset",
                                                               revision=self.commit)]
        super().__init__(root, files, address.text)

    def fetch(self, paths: list):
        if paths:  # at the commit already resolved: the files land in the same snapshot folder
            self._download(self.commit, [glob.escape(p) for p in paths])

    def where(self, folder: str) -> str:
        inside = f"/{folder}" if folder else ""
        return f"{DATASETS}{self.address.repo_id}{inside}@{self.commit}"

    def _download(self, revision: str, patterns: list) -> str:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

        quiet = logging.getLogger("huggingface_hub._snapshot_download")  # "No files matched" of the listing
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            return snapshot_download(self.address.repo_id, repo_type="dataset", revision=revision,
                                     allow_patterns=patterns)
        except (HfHubHTTPError, EntryNotFoundError, OSError) as err:  # the Hub's or the cache's: one line
            raise ReportError(refusal(self.address, err)) from None
        finally:
            quiet.setLevel(level)


def refusal(address: Address, err: Exception) -> str:
    """One line naming the argument and why it cannot be read (never the token)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    cause = err.__cause__ if isinstance(err, LocalEntryNotFoundError) and err.__cause__ else err
    status = cause.response.status_code if isinstance(cause, HfHubHTTPError) and cause.response is not None \
        else None
    text, repo = address.text, address.repo_id
    if isinstance(cause, RevisionNotFoundError):
        return f"{text}: dataset repo {repo} has no revision {address.revision or 'main'!r}"
    if status == 401:
        return f"{text}: refused (401: no valid token for dataset repo {repo}; set HF_TOKEN or log in)"
    if status == 403:
        return f"{text}: refused (403: the token may not read dataset repo {repo})"
    if isinstance(cause, RepositoryNotFoundError) or status == 404:
        return f"{text}: no dataset repo {repo} on {constants.ENDPOINT} (or it is private and the token may not read it)"
    if isinstance(err, LocalEntryNotFoundError) and constants.HF_HUB_OFFLINE:
        return (f"{text}: not in the Hub cache ({constants.HF_HUB_CACHE}), or not every file the report reads, and "
                "HF_HUB_OFFLINE is set; read it once online first")
    if isinstance(err, LocalEntryNotFoundError):
        return f"{text}: the Hub at {constants.ENDPOINT} cannot be reached and the revision is not in the Hub cache"
    if status is not None:
        return f"{text}: refused ({status} from {constants.ENDPOINT})"
    return f"{text}: cannot be read from {constants.ENDPOINT} ({type(err).__name__})"


# --- a local snapshot


def is_snapshot(path: Path) -> bool:
    """``path`` is a downloaded snapshot of a dataset repo (the Hub cache's, or an ``hf download --local-dir``),
    or a folder laid out as a lighteval or qahub details repo."""
    if not path.is_dir():
        return False
    cached = path.parent.name == "snapshots" and path.parent.parent.name.startswith("datasets--")
    if cached or (path / ".cache" / "huggingface").is_dir():
        return True
    top = [p.name for p in path.iterdir()]
    lighteval = any(RESULTS.match(name) for name in top) and any(path.glob("*/details_*.parquet"))
    return lighteval or (path / "report" / "report.json").is_file() and (path / "data").is_dir()


def local_snapshot(path: Path) -> Snapshot:
    files = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()
             and ".cache" not in p.relative_to(path).parts[:1]]
    return Snapshot(path, files, str(path))


# --- reading the runs of a snapshot


def read_hub(name: str | None, text: str, specs: dict) -> list:
    """``[(run, [(task, reason), ...])]`` of ``hf://datasets/...``."""
    address = parse_address(text)
    return read_snapshot(name, HubSnapshot(address), address.path, specs)


def read_local(name: str | None, path: Path, specs: dict) -> list:
    return read_snapshot(name, local_snapshot(path), "", specs)


def read_snapshot(name: str | None, snapshot: Snapshot, path: str, specs: dict) -> list:
    """The runs of the repo's folder ``path`` ("" the whole repo): one per model folder."""
    inside = f"{path}/" if path else ""
    files = [f[len(inside):] for f in snapshot.files if f.startswith(inside)]
    if not files:
        raise ReportError(f"{snapshot.label}: no folder {path!r} in the repo")
    if QAHUB_REPORT in snapshot.files:
        return qahub_runs(name, snapshot, path, specs)
    return harness_runs(name, snapshot, path, files, specs)


def harness_runs(name: str | None, snapshot: Snapshot, path: str, files: list, specs: dict) -> list:
    """The runs of an lm-eval or lighteval details repo's folder ``path`` (``files``: its files, relative to it)."""
    if any(RESULTS.match(f) for f in files) and any(DETAILS.match(f) for f in files):
        return [_lighteval(name, snapshot, path, files, specs)]
    folders = model_folders(files)
    if not folders:
        raise ReportError(f"{snapshot.label}: neither an lm-eval details repo (<model>/results_<date>.json and "
                          "samples_<task>_<date>.jsonl) nor a lighteval one (results_<date>.json and "
                          "<date>/details_<task>_<date>.parquet)")
    if name and len(folders) > 1:
        raise ReportError(f"{name}={snapshot.label}: holds {len(folders)} models ({', '.join(folders)}); name one "
                          "run by giving its folder: hf://datasets/ORG/NAME/FOLDER")
    return [_lm_eval(name, snapshot, _join(path, folder), files, folder, specs) for folder in folders]


def qahub_runs(name: str | None, snapshot: Snapshot, path: str, specs: dict) -> list:
    """A qahub details dataset: each ``runs/<run>/`` folder (``path``: one of them, or "" all) read by its
    harness's reader, under the run's name and model in the published report."""
    from .hub_files import folder_name

    folders = sorted({f.split("/")[1] for f in snapshot.files if f.startswith(f"{QAHUB_RUNS}/") and f.count("/") > 1})
    if not folders:
        raise ReportError(f"{snapshot.label}: a qahub details dataset without the runs' own files ({QAHUB_RUNS}/<run>/"
                          "), pushed by an earlier qahub publish-results --details; publish the report again")
    if path:
        if path.split("/")[0] != QAHUB_RUNS or path.count("/") != 1:
            raise ReportError(f"{snapshot.label}: {path!r} is not a run's folder of a qahub details dataset "
                              f"({QAHUB_RUNS}/<run>, one of {', '.join(folders)})")
        folders = [path.split("/")[1]]
    if name and len(folders) > 1:
        raise ReportError(f"{name}={snapshot.label}: holds {len(folders)} runs ({', '.join(folders)}); name one run "
                          f"by giving its folder: hf://datasets/ORG/NAME/{QAHUB_RUNS}/RUN")
    snapshot.fetch([QAHUB_REPORT])
    data = load_json(snapshot.root / QAHUB_REPORT)
    published = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(published, dict) or not all(isinstance(e, dict) for e in published.values()):
        raise ReportError(f"{snapshot.label}: {QAHUB_REPORT} is not a qahub report (no \"runs\" object of objects)")
    runs = {folder_name(run): (run, entry.get("model")) for run, entry in published.items()}
    found = []
    for folder in folders:
        run_name, model = runs.get(folder, (folder, None))
        found.append(_published_run(name or run_name, snapshot, _join(QAHUB_RUNS, folder), model, specs))
    return found


def _published_run(name, snapshot, folder, model, specs):
    """One ``runs/<run>/`` folder: inspect's logs, or an lm-eval or lighteval run laid out as they push one."""
    files = [f[len(folder) + 1:] for f in snapshot.files if f.startswith(f"{folder}/")]
    if not files:
        raise ReportError(f"{snapshot.label}: no folder {folder!r} in the repo")
    if all(PurePosixPath(f).suffix in inspect_logs.SUFFIXES and not RESULTS.match(f) for f in files):
        snapshot.fetch([_join(folder, f) for f in files])
        run, left = _inspect_logs(name, snapshot, folder, files, specs), []
    else:
        ((run, left),) = harness_runs(name, snapshot, folder, files, specs)
    run.model = str(model) if model else run.model  # as the report read it (lighteval's may come from a folder)
    return run, left


def _inspect_logs(name, snapshot, folder, files, specs):
    """The inspect logs of ``runs/<run>/`` as one run: each log read by itself (inspect lists a folder's regular
    files only, and the Hub cache's are links), one model, one log per task, as for a local log folder."""
    logs = [inspect_logs.read_run(name, snapshot.root / folder / f, specs)[0] for f in sorted(files)]
    run = logs[0]
    for log in logs[1:]:
        if log.model != run.model or set(log.samples) & set(run.samples):
            raise ReportError(f"{snapshot.where(folder)}: holds logs of two models or two logs of one task "
                              f"({', '.join(sorted(files))}); publish one run's logs per folder")
        run.samples.update(log.samples)
        run.run_ids.update(log.run_ids)
        run.headers.update(log.headers)
    run.samples = dict(sorted(run.samples.items()))
    run.path, run.results_file = snapshot.where(folder), str(snapshot.root / folder)  # as a local log folder's
    return run


def model_folders(files: list) -> list:
    """The folders holding lm-eval results files ("" the top), less lm-eval's copy of the results alone under
    the model's unsanitized name (``org/model`` beside ``org__model``, which has the samples too)."""
    results = {_parent(f) for f in files if RESULTS.match(PurePosixPath(f).name)}
    samples = {_parent(f) for f in files if SAMPLES.match(PurePosixPath(f).name)}
    return sorted(f for f in results if f in samples or f.replace("/", "__") not in results)


def _lm_eval(name, snapshot, folder, files, local, specs):
    """One lm-eval model folder: its results files, then the samples of the qahub tasks they hold."""
    inside = f"{local}/" if local else ""
    found = [f for f in files if _parent(f) == local and RESULTS.match(PurePosixPath(f).name)]
    snapshot.fetch([_join(folder, f[len(inside):]) for f in found])
    base = snapshot.root / folder
    paths = [base / f[len(inside):] for f in found]
    loaded = {p: lm_eval_runs.read_json(p) for p in paths}
    chosen = newest_holding(paths, lambda p: lm_eval_runs.tasks_of(loaded[p]))
    wanted = [lm_eval_runs.samples_name(task, p.name) for task, p in chosen.items() if task in specs]
    listed = set(files)
    snapshot.fetch([_join(folder, w) for w in wanted if inside + w in listed])
    run, left = lm_eval_runs.read_run(name, base, specs)
    run.path = snapshot.where(folder)
    return run, left


def _lighteval(name, snapshot, folder, files, specs):
    """A lighteval details repo: its results files, then the details of the qahub tasks they hold."""
    found = [f for f in files if RESULTS.match(f)]
    snapshot.fetch([_join(folder, f) for f in found])
    base = snapshot.root / folder
    paths = [base / f for f in found]
    loaded = {p: lighteval_runs.read_json(p) for p in paths}
    chosen = newest_holding(paths, lambda p: lighteval_runs.result_keys(loaded[p]))
    wanted = [lighteval_runs.details_name(key, p.name) for key, p in chosen.items()
              if key.rpartition("|")[0] in specs]
    listed = set(files)
    snapshot.fetch([_join(folder, w) for w in wanted if w in listed])
    model = snapshot.label.rstrip("/").rsplit("/", 1)[-1].split("@")[0].removeprefix("details_")
    run, left = lighteval_runs.read_files(name, base, paths, base, model, specs)
    run.path = snapshot.where(folder)
    return run, left


def _parent(path: str) -> str:
    return os.path.dirname(path)


def _join(*parts: str) -> str:
    """Repo paths joined ("" the repo's top)."""
    return "/".join(part for part in parts if part)
