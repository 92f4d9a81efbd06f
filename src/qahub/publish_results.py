"""``qahub publish-results REPORT --model RUN=ORG/MODEL ... [--details ORG/NAME] [--dry-run] [--no-pr]``: a
report's ``.eval_results`` entries to each model repo (a pull request each, or a commit to main with ``--no-pr``),
and with ``--details`` a dataset of the Every Eval Ever records, the report, the scored documents (Parquet,
one config per run and task) and each run's own harness files (``runs/<run>/``, which ``qahub report`` reads).

The token comes from huggingface_hub's usual sources and is never printed; a push the Hub refuses (401, 403,
404) is one line naming the repo, and the other repos are still tried.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from qahub.hub_results import check_repo_id, folder_name

SPLIT = "scored"  # the split of each details config: the documents a run scored
MARK = "Written by `qahub publish-results`"  # in the README of every details dataset it pushes
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


def publish_results_command(args) -> int:
    uploads = plan(Path(args.report), args.model, args.details, args.no_pr)
    if args.dry_run:
        for upload in uploads:
            print(f"would {_what(upload)} {upload.repo_type} repo {upload.repo_id}:")
            for name, body in upload.files.items():
                print(f"  {name} ({len(body)} bytes)")
            if upload.owns:
                print(f"  and delete any other file under {', '.join(upload.owns)} (an earlier push's: a details "
                      "dataset holds one report)")
        print("dry run: nothing sent")
        return 0
    return 1 if send(uploads) else 0


def _what(upload: Upload) -> str:
    return "open a pull request on" if upload.create_pr else "commit to the main branch of"


def plan(report: Path, model_args, details: str | None, no_pr: bool) -> list[Upload]:
    """Every upload, with its files' bytes; nothing is sent."""
    data = read_report(report)
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
    if details:
        check_repo_id(f"--details {details}", details, PublishResultsError)
    uploads = [model_upload(report, data, run, repo_id, details, no_pr) for run, repo_id in models.items()]
    if details:
        uploads.append(details_upload(report, data, details))
    return uploads


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
    files = {}
    for name in names:
        body = (report / name).read_bytes()
        files[name.split("/", 2)[2]] = with_source(body, details) if details else body
    return Upload(repo_id, "model", not no_pr, f"Add qahub evaluation results of {run}", files)


def with_source(body: bytes, details: str) -> bytes:
    """The entries of a ``.eval_results`` file with ``source`` the details dataset (read and written with
    huggingface_hub's own parser and writer)."""
    import yaml
    from huggingface_hub import constants, eval_result_entries_to_yaml, parse_eval_result_entries

    entries = parse_eval_result_entries(yaml.safe_load(body.decode("utf-8")))
    for entry in entries:
        entry.source_url = f"{constants.ENDPOINT}/datasets/{details}"
        entry.source_name = "qahub evaluation details"
    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True, width=1000).encode("utf-8")


def details_upload(report: Path, data: dict, repo_id: str) -> Upload:
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
    return Upload(repo_id, "dataset", False, "Add qahub evaluation details", files, owns)


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
        inside = f"{file.parent.name}/{file.name}" if entry.get("harness") == "lighteval" and \
            file.suffix == ".parquet" else file.name  # lighteval's details: in their <date>/ folder
        files[f"runs/{folder_name(run)}/{inside}"] = body
    if len(files) < len(entry["files"]):
        raise PublishResultsError(f"{report}: run {run} was read from two files of one name "
                                  f"({', '.join(entry['files'])}); they cannot share runs/{folder_name(run)}/")
    return files


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
    """Each upload in one commit; returns the one-line failures (the others are sent all the same)."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api, failures = HfApi(), []
    for upload in uploads:
        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=body)
                      for name, body in upload.files.items()]
        try:
            if upload.repo_type == "dataset":
                api.create_repo(upload.repo_id, repo_type="dataset", exist_ok=True)
            operations += stale(api, upload)
            info = api.create_commit(upload.repo_id, operations, commit_message=upload.message,
                                     repo_type=upload.repo_type, create_pr=upload.create_pr)
        except Exception as err:  # noqa: BLE001 - the Hub's errors are many: one line each, without secrets
            failures.append(refusal(upload, err))
            print(f"qahub publish-results: {failures[-1]}", file=sys.stderr)
            continue
        where = f"pull request {info.pr_url}" if upload.create_pr else f"commit {info.commit_url}"
        deleted = len(operations) - len(upload.files)
        gone = f", {deleted} earlier files deleted" if deleted else ""
        print(f"{upload.repo_type} repo {upload.repo_id}: {len(upload.files)} files{gone}, {where}")
    return failures


def stale(api, upload: Upload) -> list:
    """A delete operation for each file of the repo's main branch under a folder the upload owns that the upload
    does not hold (an earlier push's). A repo whose README qahub did not write is someone else's dataset: its
    README would be replaced and its files under those folders deleted, so nothing is sent to it."""
    from huggingface_hub import CommitOperationDelete

    if not upload.owns:
        return []
    present = api.list_repo_files(upload.repo_id, repo_type=upload.repo_type)
    if "README.md" in present:
        card_path = api.hf_hub_download(upload.repo_id, "README.md", repo_type=upload.repo_type)
        if MARK not in Path(card_path).read_text(encoding="utf-8", errors="replace"):
            raise PublishResultsError("its README.md is not one qahub publish-results wrote (another dataset?); "
                                      "nothing sent: give a new details dataset, or qahub's own")
    return [CommitOperationDelete(path_in_repo=path) for path in sorted(present)
            if path.startswith(upload.owns) and path not in upload.files]


def refusal(upload: Upload, err: Exception) -> str:
    from qahub.publish import scrub

    if isinstance(err, PublishResultsError):
        return f"{upload.repo_type} repo {upload.repo_id}: {err}"
    status = getattr(getattr(err, "response", None), "status_code", None)
    if status in REFUSED:
        return f"{upload.repo_type} repo {upload.repo_id}: refused ({status}: {REFUSED[status]})"
    first = scrub(" ".join(str(err).split()))[:300]  # scrubbed whole: a token cut in two is no longer found
    return f"{upload.repo_type} repo {upload.repo_id}: failed ({type(err).__name__}: {first})"
