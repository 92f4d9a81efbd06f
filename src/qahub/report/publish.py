"""``qahub publish-results REPORT --model RUN=ORG/MODEL ... [--details ORG/NAME [--public]] [--dry-run]
[--no-pr]``: a report's ``.eval_results`` entries to each model repo (a pull request each, or a commit to main
with ``--no-pr``), and with ``--details`` a dataset of the Every Eval Ever records, the report, the scored
documents (Parquet, one config per run and task) and each run's own harness files (``runs/<run>/``, which
``qahub report`` reads).

What is sent and in what order:

- every pushed file goes through ``qahub.outgoing.clean`` (no credential, no local path) and is checked after;
- every repo is read before anything is written: a file of the same name qahub did not write (an
  ``.eval_results`` file without qahub's first line, a details dataset file its ``.qahub/manifest.json`` does not
  list) is refused in one line naming it, and nothing is sent anywhere;
- the details dataset is pushed first (created private unless ``--public``), and the model pull requests are
  opened only when it succeeded; a pull request of an earlier run still open is updated, not opened again.

The token comes from huggingface_hub's usual sources and is never printed; a push the Hub refuses (401, 403,
404) is one line naming the repo.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import qahub
from qahub.report.hub_files import check_repo_id, folder_name

SPLIT = "scored"  # the split of each details config: the documents a run scored
MARK = "Written by `qahub publish-results`"  # in the README of every details dataset it pushes
MANIFEST = ".qahub/manifest.json"  # in a details dataset: every file qahub pushed there (only those it replaces)
YAML_MARK = "# Written by qahub publish-results"  # the first line of every .eval_results file it pushes
REFUSED = {401: "not signed in, or the token is not valid", 403: "the token may not write there",
           404: "no such repo (or the token may not see it)"}


class PublishResultsError(ValueError):
    pass


@dataclass
class Upload:
    repo_id: str
    repo_type: str  # "model" or "dataset"
    create_pr: bool
    message: str
    files: dict = field(default_factory=dict)  # path in the repo -> bytes
    owns: tuple = ()  # folders ("report/", ...) whose other files in the repo are an earlier push's: deleted
    private: bool = True  # a details dataset qahub creates: private unless --public
    revision: str | None = None  # an open pull request of an earlier run (refs/pr/N): updated, not opened again
    deletes: list = field(default_factory=list)  # an earlier push's files this push no longer holds
    exists: bool = True  # the repo is there already (else created, with ``private``)


def publish_results_command(args) -> int:
    uploads = plan(Path(args.report), args.model, args.details, args.no_pr, public=getattr(args, "public", False))
    if args.dry_run:
        for upload in uploads:
            new = f" (made {_visibility(upload)} if new)" if upload.repo_type == "dataset" else ""
            print(f"would {_what(upload)} {upload.repo_type} repo {upload.repo_id}{new}:")
            for name, body in upload.files.items():
                print(f"  {name} ({len(body)} bytes)")
            if upload.owns:
                print(f"  and delete any other file under {', '.join(upload.owns)} an earlier push of qahub's wrote "
                      f"(its {MANIFEST} lists them: a details dataset holds one report)")
        print("dry run: nothing sent")
        return 0
    return 1 if send(uploads) else 0


def _what(upload: Upload) -> str:
    return "open a pull request on" if upload.create_pr else "commit to the main branch of"


def _visibility(upload: Upload) -> str:
    return "private" if upload.private else "public"


def plan(report: Path, model_args, details: str | None, no_pr: bool, public: bool = False) -> list[Upload]:
    """Every upload, details dataset first, with its files' bytes cleaned of credentials and local paths (and
    checked); nothing is sent."""
    data = read_report(report)
    models = model_repos(model_args, data)
    if details:
        check_repo_id(f"--details {details}", details, PublishResultsError)
    uploads = [details_upload(report, data, details, public)] if details else []
    uploads += [model_upload(report, data, run, repo_id, details, no_pr) for run, repo_id in models.items()]
    local = local_paths(report, data)
    for upload in uploads:
        upload.files = {name: cleaned(name, body, local) for name, body in upload.files.items()}
    if details:
        uploads[0].files = rechecked(uploads[0].files)
        uploads[0].files[MANIFEST] = manifest(uploads[0].files)
    return uploads


def model_repos(model_args, data: dict) -> dict:
    """``{run: model repo id}`` of the ``--model RUN=ORG/MODEL`` arguments."""
    models = {}
    for value in model_args:
        run, sep, repo_id = value.partition("=")
        if not sep or not run or not repo_id:
            raise PublishResultsError(f"--model {value}: expected RUN=ORG/MODEL")
        if run not in data["runs"]:
            raise PublishResultsError(f"--model {value}: the report has no run {run!r} "
                                      f"({', '.join(data['runs'])})")
        check_repo_id(f"--model {value}", repo_id, PublishResultsError)
        if repo_id in models.values():
            raise PublishResultsError(f"--model {value}: another run goes to {repo_id} too; its .eval_results "
                                      "files would collide (publish one run per model repo)")
        models[run] = repo_id
    return models


def local_paths(report: Path, data: dict):
    """What each local path the pushed files may hold becomes (``qahub.outgoing.Local``): a run's file its place
    under ``runs/<run>/``, the run's folder ``runs/<run>``, the report folder ``.``; other paths under the home
    folder, the current folder and the folders of the report and the runs are cut to their last component."""
    from qahub.outgoing import Local, roots_of

    report = report.absolute()
    moved, seen = {report: "."}, [report]
    for run, entry in data["runs"].items():
        folder = f"runs/{folder_name(run)}"
        for path in (entry.get("path"), entry.get("results_file")):
            if isinstance(path, str) and Path(path).is_absolute():
                moved.setdefault(Path(path), folder if Path(path).is_dir() else f"{folder}/{Path(path).name}")
                seen.append(Path(path))
        for path in entry.get("files") or {}:
            moved[Path(path)] = f"{folder}/{_inside(entry, Path(path))}"
            seen.append(Path(path))
    return Local(moved, roots_of(seen))


def cleaned(name: str, body: bytes, local) -> bytes:
    """``body`` through ``qahub.outgoing.clean``; a file that still holds a credential or a local path is refused."""
    from qahub.outgoing import clean, leak

    try:
        body = clean(name, body, local)
        found = leak(name, body, local)
    except (ValueError, OSError, NotImplementedError, zipfile.BadZipFile) as err:  # not text, zip or Parquet
        raise PublishResultsError(f"{name}: cannot be checked for credentials and local paths "
                                  f"({type(err).__name__}: {err}); nothing sent") from None
    if found:
        raise PublishResultsError(f"{name}: still holds {found} after cleaning; nothing sent")
    return body


def rechecked(files: dict) -> dict:
    """Each Every Eval Ever record's ``detailed_evaluation_results.checksum`` that of its samples file as pushed
    (cleaning changes the file when a prompt or reply held a credential or a local path)."""
    import hashlib

    for name in [name for name in files if name.startswith("eee/") and name.endswith("_samples.jsonl")]:
        record_name = name.removesuffix("_samples.jsonl") + ".json"
        record = json.loads(files[record_name]) if record_name in files else {}
        detail = record.get("detailed_evaluation_results") or {}
        digest = hashlib.sha256(files[name]).hexdigest()
        if detail.get("checksum") not in (None, digest):
            detail["checksum"] = digest
            files[record_name] = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return files


def manifest(files: dict) -> bytes:
    """``.qahub/manifest.json``: every file of this push and its SHA-256, what a later push may replace or delete."""
    import hashlib

    listed = {name: hashlib.sha256(body).hexdigest() for name, body in sorted(files.items())}
    return (json.dumps({"written_by": "qahub publish-results", "files": listed}, indent=1) + "\n").encode("utf-8")


def read_report(report: Path) -> dict:
    from qahub.report import MARKER, is_report

    if not is_report(report):
        raise PublishResultsError(f"{report}: not a qahub report folder (report.json, report.md, ...)")
    data = json.loads((report / MARKER).read_text(encoding="utf-8"))
    if "hub" not in data:
        raise PublishResultsError(f"{report}: written without --hub-dataset; rerun `qahub report ... --out {report} "
                                  "--hub-dataset CORPUS=ORG/NAME` to make its .eval_results and EEE files")
    return data


def model_upload(report: Path, data: dict, run: str, repo_id: str, details: str | None, no_pr: bool) -> Upload:
    """The run's ``.eval_results/<task>.yaml`` files; with ``details``, each entry's source is that dataset."""
    names = data["hub"]["eval_results"].get(run) or []
    if not names:
        reasons = sorted({item["reason"] for item in data["hub"]["left_out"]
                          if item["run"] == run and item["what"] == ".eval_results"})
        raise PublishResultsError(f"{report}: run {run} has no .eval_results entries"
                                  + (f" ({'; '.join(reasons)})" if reasons else ""))
    files = {name.split("/", 2)[2]: marked((report / name).read_bytes(), details) for name in names}
    return Upload(repo_id, "model", not no_pr, f"Add qahub evaluation results of {run}", files)


def marked(body: bytes, details: str | None) -> bytes:
    """A ``.eval_results`` file as pushed: qahub's first line (``YAML_MARK``, what a later push checks before it
    replaces the file) and, with ``details``, each entry's ``source`` the details dataset (read and written with
    huggingface_hub's own parser and writer)."""
    import yaml
    from huggingface_hub import constants, eval_result_entries_to_yaml, parse_eval_result_entries

    entries = parse_eval_result_entries(yaml.safe_load(body.decode("utf-8")))
    for entry in entries if details else ():
        entry.source_url = f"{constants.ENDPOINT}/datasets/{details}"
        entry.source_name = "qahub evaluation details"
    text = yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True, width=1000)
    return f"{YAML_MARK} (qahub {qahub.__version__}); a later push replaces only a file with this line\n{text}".encode()


def details_upload(report: Path, data: dict, repo_id: str, public: bool = False) -> Upload:
    """The EEE records, the report (report/...), a Parquet file per run and task of the scored documents, and a
    README whose ``configs`` name them (what the dataset viewer and ``load_dataset`` read)."""
    files, configs = {}, []
    for name in ("report.json", "report.md", "report.html"):
        files[f"report/{name}"] = (report / name).read_bytes()
    for png in sorted((report / "figures").glob("*.png")):
        files[f"report/figures/{png.name}"] = png.read_bytes()
    for run in data["runs"]:
        files.update(run_files(report, data, run))
        for name in data["hub"]["eee"].get(run, []):
            files[name] = (report / name).read_bytes()
            if name.endswith("_samples.jsonl"):
                for task, table in scored_tables(report / name).items():
                    path = f"data/{folder_name(run)}/{task}.parquet"
                    files[path] = table
                    configs.append({"config_name": f"{folder_name(run)}-{task}",
                                    "data_files": [{"split": SPLIT, "path": path}]})
    files = {"README.md": card(data, configs, repo_id).encode("utf-8"), **dict(sorted(files.items()))}
    # a details dataset holds one report: qahub's four folders are this push's whole (an earlier push's runs left
    # there would be data/ configs the README no longer names and runs/ the report.json read back does not list);
    # files outside them (the owner's own) are never touched
    owns = ("report/", "eee/", "data/", "runs/")
    return Upload(repo_id, "dataset", False, "Add qahub evaluation details", files, owns, private=not public)


def run_files(report: Path, data: dict, run: str) -> dict:
    """``{runs/<run>/<name>: bytes}``: the files the report read ``run`` from (report.json's ``files``), laid out
    as the harness lays out what it pushes: lm-eval's results and samples side by side, lighteval's results beside
    ``<date>/details_<task>|<shots>_<date>.parquet``, inspect's logs; ``qahub report hf://datasets/...`` reads
    them again. A file gone or changed since the report (its size and SHA-256) is refused, naming it."""
    import hashlib

    entry = data["runs"][run]
    if "files" not in entry:
        raise PublishResultsError(f"{report}: report.json does not record the files run {run} was read from "
                                  "(written by an earlier qahub); write the report again")
    files = {}
    for path, seen in entry["files"].items():
        file = Path(path)
        try:
            body = file.read_bytes()
        except OSError as err:
            raise PublishResultsError(f"{path}: run {run}'s file cannot be read ({err.strerror or err}); it is "
                                      "gone since the report: publish the run as reported, or report it again") from None
        if len(body) != seen["bytes"] or hashlib.sha256(body).hexdigest() != seen["sha256"]:
            raise PublishResultsError(f"{path}: run {run}'s file changed since the report ({seen['bytes']} bytes "
                                      f"then, {len(body)} now, or another SHA-256); write the report again")
        files[f"runs/{folder_name(run)}/{_inside(entry, file)}"] = body
    if len(files) < len(entry["files"]):
        raise PublishResultsError(f"{report}: run {run} was read from two files of one name "
                                  f"({', '.join(entry['files'])}); they cannot share runs/{folder_name(run)}/")
    return files


def _inside(entry: dict, file: Path) -> str:
    """Where a run's file goes in its ``runs/<run>/`` folder: lighteval's details in their ``<date>/`` folder."""
    if entry.get("harness") == "lighteval" and file.suffix == ".parquet":
        return f"{file.parent.name}/{file.name}"
    return file.name


def scored_tables(samples: Path) -> dict:
    """``{task: Parquet bytes}``: an EEE samples file's rows, one row per document with a column per metric."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs, metrics = {}, {}
    with open(samples, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                row = json.loads(line)
                task, metric = row["evaluation_name"], row["evaluation_result_id"].rsplit("/", 1)[1]
                doc = docs.setdefault(task, {}).setdefault(row["sample_id"], {
                    "sample_id": row["sample_id"], "input": row["input"]["raw"],
                    "reference": row["input"]["reference"], "reply": row["output"]["raw"][0],
                    "extracted": row["answer_attribution"][0]["extracted_value"]})
                doc[metric] = row["evaluation"]["score"]
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
                raise PublishResultsError(f"{samples}: line {number}: not an instance row qahub wrote "
                                          f"({type(err).__name__}: {err}); write the report again") from None
            metrics.setdefault(task, {})[metric] = None
    tables = {}
    for task, rows in docs.items():
        columns = ["sample_id", "input", "reference", "reply", "extracted", *metrics[task]]
        schema = pa.schema([("sample_id", pa.string()), ("input", pa.string()), ("reference", pa.list_(pa.string())),
                            ("reply", pa.string()), ("extracted", pa.string())]
                           + [(m, pa.float64()) for m in metrics[task]])
        table = pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows.values()], schema=schema)
        out = io.BytesIO()
        pq.write_table(table, out)
        tables[task] = out.getvalue()
    return tables


def card(data: dict, configs: list, repo_id: str) -> str:
    from huggingface_hub import DatasetCardData

    meta = DatasetCardData(pretty_name=f"qahub evaluation details ({repo_id})", tags=["qahub", "evaluation"],
                           configs=configs or None)
    runs = ", ".join(data["runs"])
    return (f"---\n{meta.to_yaml()}\n---\n\n# qahub evaluation details\n\n"
            f"Runs: {runs}. {MARK} from a `qahub report`.\n\n"
            "- `report/`: the report (report.json, report.md, report.html, figures): every score with its "
            f"{data['settings']['confidence'] * 100:g}% interval and paired comparisons.\n"
            "- `eee/<run>/`: Every Eval Ever records (schema 0.3.0); `score_details.uncertainty` holds each score's "
            "interval and its method.\n"
            f"- `data/<run>/<task>.parquet`: the documents each run scored (config `<run>-<task>`, split "
            f"`{SPLIT}`), one column per metric.\n"
            "- `runs/<run>/`: the harness's own files the report read the run from (lm-eval's results and samples, "
            "lighteval's results and details, inspect's logs); `qahub report hf://datasets/ORG/NAME` reads them.\n")


def send(uploads: list[Upload]) -> list[str]:
    """Every repo read and checked first (one refusal: nothing sent anywhere); then the details dataset, then, only
    when it was pushed, each model's pull request (or commit). Returns the one-line failures, each printed."""
    from huggingface_hub import HfApi

    api = HfApi()
    for upload in uploads:
        try:
            (check_details if upload.repo_type == "dataset" else check_model)(api, upload)
        except Exception as err:  # noqa: BLE001 - the Hub's errors are many: one line each, without secrets
            return [_failed(upload, err, " (nothing sent)")]
    failures = []
    for upload in uploads:
        try:
            print(push(api, upload))
        except Exception as err:  # noqa: BLE001
            failures.append(_failed(upload, err))
            if upload.repo_type == "dataset":  # no entry may point at a details dataset that is not there
                print("qahub publish-results: no model pull request opened (the details dataset was not pushed); "
                      "run the command again", file=sys.stderr)
                break
    return failures


def _failed(upload: Upload, err: Exception, after: str = "") -> str:
    line = refusal(upload, err) + after
    print(f"qahub publish-results: {line}", file=sys.stderr)
    return line


def push(api, upload: Upload) -> str:
    """One commit of the upload (its earlier files deleted); the line saying what was made."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=body) for name, body in upload.files.items()]
    operations += [CommitOperationDelete(path_in_repo=path) for path in upload.deletes]
    if upload.repo_type == "dataset" and not upload.exists:
        api.create_repo(upload.repo_id, repo_type="dataset", private=upload.private, exist_ok=True)
    info = api.create_commit(upload.repo_id, operations, commit_message=upload.message, repo_type=upload.repo_type,
                             create_pr=upload.create_pr and upload.revision is None, revision=upload.revision)
    gone = f", {len(upload.deletes)} earlier files deleted" if upload.deletes else ""
    if upload.revision:
        where = f"its open pull request {upload.revision} updated: commit {info.commit_url}"
    else:
        where = f"pull request {info.pr_url}" if upload.create_pr else f"commit {info.commit_url}"
    if upload.repo_type == "dataset":
        made = "an existing repo: its visibility left as it is" if upload.exists else "made now"
        return f"dataset repo {upload.repo_id} ({_visibility(upload)}, {made}): {len(upload.files)} files{gone}, {where}"
    return f"model repo {upload.repo_id}: {len(upload.files)} files{gone}, {where}"


def check_model(api, upload: Upload):
    """An ``.eval_results`` file of the same name on the main branch that qahub did not write (its first line is
    not ``YAML_MARK``) is refused; an open pull request of an earlier run of this command is the one updated."""
    present = set(api.list_repo_files(upload.repo_id, repo_type="model"))
    for name in sorted(set(upload.files) & present):
        if not _read(api, upload, name).startswith(YAML_MARK.encode()):
            raise PublishResultsError(f"{name} is already there and qahub did not write it (another tool's "
                                      "results?); qahub never replaces it: remove or rename it on the Hub first")
    if upload.create_pr:
        upload.revision = own_pull_request(api, upload)


def own_pull_request(api, upload: Upload) -> str | None:
    """``refs/pr/N`` of the open pull request an earlier run of this command opened (its title), else None."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        for found in api.get_repo_discussions(upload.repo_id, repo_type="model", discussion_type="pull_request",
                                              discussion_status="open"):
            if found.title == upload.message:
                return found.git_reference
    except HfHubHTTPError as err:  # a repo whose discussions cannot be listed: a new pull request is opened
        if getattr(err.response, "status_code", None) not in (403, 404):
            raise
    return None


def check_details(api, upload: Upload):
    """What an existing details dataset holds: qahub's files (its manifest's list; an earlier qahub's, before
    manifests, its README and the four folders) may be replaced, the others of them no longer pushed deleted; a
    dataset holding anything else qahub would write over, or with no sign of qahub at all, is refused."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.repo_info(upload.repo_id, repo_type="dataset")
    except RepositoryNotFoundError:
        upload.exists = False
        return
    upload.private = bool(info.private)
    present = set(api.list_repo_files(upload.repo_id, repo_type="dataset")) - {".gitattributes"}
    ours = ours_of(api, upload, present)
    foreign = sorted(name for name in upload.files if name in present and name not in ours)
    if foreign:
        raise PublishResultsError(f"{foreign[0]} is already there and qahub did not write it (its {MANIFEST} "
                                  "does not list it); qahub never replaces it: give a new details dataset")
    upload.deletes = sorted(ours & present - set(upload.files))


def ours_of(api, upload: Upload, present: set) -> set:
    """The files of the dataset an earlier qahub push wrote."""
    if MANIFEST in present:
        listed = json.loads(_read(api, upload, MANIFEST)).get("files") or {}
        return {*listed, MANIFEST}
    if "README.md" in present:
        if MARK not in _read(api, upload, "README.md").decode("utf-8", "replace"):
            raise PublishResultsError("its README.md is not one qahub publish-results wrote (another dataset?); "
                                      "nothing sent: give a new details dataset, or qahub's own")
        return {"README.md", *(path for path in present if path.startswith(upload.owns))}  # before manifests
    if present:
        raise PublishResultsError(f"holds files qahub publish-results did not write ({listed_names(present)}) and no "
                                  f"{MANIFEST}; nothing sent: give a new details dataset, or qahub's own")
    return set()


def listed_names(names) -> str:
    from qahub.files import listed

    return listed(sorted(names), 3)


def _read(api, upload: Upload, name: str) -> bytes:
    """A file of the repo's main branch (through the Hub cache)."""
    return Path(api.hf_hub_download(upload.repo_id, name, repo_type=upload.repo_type)).read_bytes()


def refusal(upload: Upload, err: Exception) -> str:
    from qahub.publish import scrub

    if isinstance(err, PublishResultsError):
        return f"{upload.repo_type} repo {upload.repo_id}: {err}"
    status = getattr(getattr(err, "response", None), "status_code", None)
    if status in REFUSED:
        return f"{upload.repo_type} repo {upload.repo_id}: refused ({status}: {REFUSED[status]})"
    first = scrub(" ".join(str(err).split()))[:300]  # scrubbed whole: a token cut in two is no longer found
    return f"{upload.repo_type} repo {upload.repo_id}: failed ({type(err).__name__}: {first})"
