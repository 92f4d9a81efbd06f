"""Publish an exported Hub folder as a dataset repository, in one commit.

The token comes from the usual ``huggingface_hub`` sources (``HF_TOKEN``, ``huggingface-cli login``) or the
``token`` argument; it is never printed (``console.scrub`` removes it from any message the command line prints).
"""

from __future__ import annotations

import glob
import sys
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import DatasetCard, HfApi
from huggingface_hub.utils import validate_repo_id

import qahub
from qahub import registry
from qahub.console import explain, scrub
from qahub.files import listed


class PublishError(RuntimeError):
    pass


@dataclass
class PublishPlan:
    folder: Path
    repo_id: str
    files: list[str]
    card: str
    left_out: list[str] = field(default_factory=list)  # files in the folder that are not uploaded


def plan(folder, repo_id: str, repo_type: str = "dataset", allow_partial: bool = False) -> PublishPlan:
    """What would be uploaded: from a dataset folder, an export, only README.md and the Parquet shards of the
    configs its YAML lists (each readable, each split's rows as its ``dataset_info`` counts), and a complete
    export unless ``allow_partial``; a Space folder a metric module (README.md, app.py, requirements.txt,
    <name>.py)."""
    folder = Path(folder)
    validate_repo_id(repo_id)
    if not (folder / "README.md").is_file():
        raise PublishError(f"{folder}: no README.md; build it first with `qahub build <corpus> --out {folder}`")
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    if repo_type == "dataset" and not any(name.endswith(".parquet") for name in found):
        raise PublishError(f"{folder}: no Parquet files; build it first with `qahub build <corpus> --out {folder}`")
    if repo_type == "dataset" and "qahub-sample" in (DatasetCard.load(folder / "README.md").data.get("tags") or []):
        raise PublishError(f"{folder}: built from qahub's bundled sample data (tag qahub-sample), not the corpus; "
                           "build the corpus itself to publish it")
    if repo_type == "dataset" and not allow_partial:
        _refuse_partial(folder)
    files = export_files(folder) if repo_type == "dataset" else found
    if repo_type == "space":
        needed = {"app.py", "requirements.txt", f"{repo_id.split('/')[-1]}.py"}
        if not needed <= set(files):
            raise PublishError(f"{folder}: a metric Space needs {', '.join(sorted(needed - set(files)))}")
    left_out = [name for name in found if name not in files and not name.startswith(".git/")]
    return PublishPlan(folder, repo_id, files, (folder / "README.md").read_text(encoding="utf-8"), left_out)


def export_files(folder: Path) -> list[str]:
    """README.md and the Parquet shards of every config and split its YAML lists (read as ``load_dataset``
    reads them, with datasets' ``MetadataConfigs``), each readable and together holding the rows its
    ``dataset_info`` counts; files that match a split's pattern but are not Parquet (``*.parquet.bak``) are
    left out, so the Hub never reads them as data."""
    from qahub.export.reader import Export

    try:
        export = Export(folder, "an export folder")
        splits = [(config, split, export.shards(config, split)) for config in export.configs
                  for split in export.patterns(config)]
    except ValueError as err:
        raise PublishError(str(err)) from None
    files = ["README.md"]
    for config, split, paths in splits:
        shards = [path for path in paths if path.suffix == ".parquet"]
        rows = sum(_shard_rows(shard, export.infos.get(config)) for shard in shards)
        expected = export.expected_rows(config, split)
        if not shards or (expected is not None and rows != expected):
            raise PublishError(f"{folder}: config {config} split {split}: its Parquet shards "
                               f"({', '.join(s.name for s in shards) or 'none'}) hold {rows} rows, its README's "
                               f"dataset_info says {expected}; rebuild it with `qahub build`")
        files += [shard.resolve().relative_to(folder.resolve()).as_posix() for shard in shards]
    return files


def _shard_rows(shard: Path, info) -> int:
    """The row count of a shard's Parquet footer, after checking its columns are the README's features."""
    import pyarrow.parquet as pq

    from qahub.export.reader import check_columns

    try:
        metadata = pq.read_metadata(shard)
    except Exception as err:  # noqa: BLE001 - pyarrow's errors for a truncated, damaged or non-Parquet file
        raise PublishError(f"{shard}: not a readable Parquet shard ({type(err).__name__}: {err}); "
                           "rebuild the export with `qahub build`") from None
    if info is not None and info.features is not None:
        try:
            check_columns(shard, metadata.schema.to_arrow_schema().names, info.features)
        except ValueError as err:
            raise PublishError(str(err)) from None
    return metadata.num_rows


def _refuse_partial(folder: Path):
    from qahub.export.card import describe_missing, partial_of

    missing = partial_of(folder / "README.md")
    if missing:
        raise PublishError(f"{folder}: a partial build, missing {describe_missing(missing)}; pass --allow-partial "
                           "(allow_partial=True) to publish it as it is")


def check_corpus(folder, corpus: str):
    """The folder's card must be the card of ``corpus`` (same pretty_name), so a folder is not sent to the wrong repo."""
    built = DatasetCard.load(Path(folder) / "README.md").data.pretty_name
    expected = DatasetCard.load(registry.card_path(corpus)).data.pretty_name
    if built != expected:
        raise PublishError(f"{folder}: holds {built!r}, not {corpus} ({expected!r})")


def publish(folder, repo_id: str, *, private: bool = False, revision: str | None = None, token=None,
            api: HfApi | None = None, repo_type: str = "dataset", commit_message: str | None = None,
            allow_partial: bool = False, planned: PublishPlan | None = None) -> str:
    """Create the repo if needed and upload ``folder`` in one commit; return the commit URL. A partial build
    (the card's ``qahub_partial``) is refused unless ``allow_partial``. ``planned``: the ``plan`` of these
    arguments, when the caller has made it already."""
    chosen = planned or plan(folder, repo_id, repo_type, allow_partial)  # refuses a folder not an export or metric
    api = api or HfApi(token=token)
    message = commit_message or f"Upload {Path(folder).name} with qahub {qahub.__version__}"
    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True,
                        **({"space_sdk": "gradio"} if repo_type == "space" else {}))
        if private:  # create_repo leaves an existing repo's visibility as it was
            api.update_repo_settings(repo_id, private=True, repo_type=repo_type)
        if revision:
            api.create_branch(repo_id, repo_type=repo_type, branch=revision, exist_ok=True)
        # the repo must end up holding exactly the folder: shards or configs of an earlier upload would be
        # read as extra data files (huggingface_hub never deletes .gitattributes)
        info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                                 revision=revision, commit_message=message, delete_patterns="*",
                                 allow_patterns=[glob.escape(name) for name in chosen.files])
    except Exception as err:  # the Hub's errors are many; pass on what they say, without secrets
        raise PublishError(f"publishing {folder} to {repo_id} failed: {scrub(str(err), token)}") from None
    return str(getattr(info, "commit_url", info))


def publish_command(args) -> int:
    """``qahub publish``: one corpus's folder to --repo-id, or with --all every corpus built under --root to
    ORG/<corpus>; with --dry-run only what would be uploaded."""
    if args.all:
        if not args.org or args.corpus or args.repo_id:
            raise ValueError("--all takes --org ORG (each corpus goes to ORG/<corpus>), not a corpus or --repo-id")
        built = [c for c in registry.corpus_names() if (Path(args.root) / c).is_dir()]
        if not built:
            raise FileNotFoundError(f"{args.root}: no built corpus; run `qahub build --all --out {args.root}` first")
        targets = [(Path(args.root) / c, f"{args.org}/{c}", c) for c in built]
    elif args.corpus and args.repo_id:
        targets = [(Path(args.folder or args.corpus), args.repo_id, args.corpus)]
    else:
        raise ValueError("name a corpus and --repo-id ORG/NAME, or pass --all --org ORG")
    failures = []
    for folder, repo_id, corpus in targets:
        try:
            _publish_one(folder, repo_id, "dataset", args, corpus=corpus)
        except (OSError, ValueError, RuntimeError) as err:
            if len(targets) == 1:
                raise
            failures.append(f"{repo_id}: {explain(err)}")
    if args.dry_run:
        return _dry_run_summary(targets, failures)
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    if len(targets) > 1:
        print(f"published {len(targets) - len(failures)} of {len(targets)} corpora")
    return 1 if failures else 0


def _dry_run_summary(targets, refusals) -> int:
    """A dry run uploads nothing, so it fails only when nothing at all could be published."""
    for line in refusals:
        print(f"would not publish {line}", file=sys.stderr)
    if len(targets) > 1:
        print(f"dry run: would publish {len(targets) - len(refusals)} of {len(targets)} corpora; nothing uploaded")
    return 1 if len(refusals) == len(targets) else 0


def _publish_one(folder: Path, repo_id: str, repo_type: str, args, corpus: str | None = None):
    allow_partial = getattr(args, "allow_partial", False)
    # a folder that is not an export, or a partial build without --allow-partial, fails here with a hint
    planned = plan(folder, repo_id, repo_type, allow_partial=allow_partial)
    if corpus:
        check_corpus(folder, corpus)
    where = f"{' (private)' if args.private else ''}{f' at revision {args.revision}' if args.revision else ''}"
    if args.dry_run:
        print(f"would upload {len(planned.files)} files from {planned.folder} to {repo_type} repo "
              f"{planned.repo_id}{where}:")
        for name in planned.files:
            print(f"  {name}")
        _say_left_out(planned)
        if args.verbose:
            print("\n--- README.md ---")
            print(planned.card)
        else:
            print(f"  (README.md: {len(planned.card.splitlines())} lines; --verbose prints it)")
        return
    url = publish(folder, repo_id, private=args.private, revision=args.revision, repo_type=repo_type,
                  allow_partial=allow_partial, planned=planned)
    print(f"published {folder} to {repo_type} repo {repo_id}{where}: {url}")
    _say_left_out(planned)


def _say_left_out(planned: PublishPlan):
    if planned.left_out:
        print(f"  not uploaded (not part of the export): {listed(planned.left_out, 10)}")


def publish_metric_command(args) -> int:
    """``qahub publish-metric``: a copy of the metric's folder, its module named after the Space, as a Space."""
    import tempfile

    from qahub.metric_copy import copy_metric

    with tempfile.TemporaryDirectory() as tmp:
        # a Space named ORG/NAME loads NAME.py: the module file takes the Space's name
        folder = copy_metric(args.metric, Path(tmp), name=args.repo_id.split("/")[-1], manifest=False)
        _point_app_at(folder / "app.py", args.metric, args.repo_id)
        _publish_one(folder, args.repo_id, "space", args)
    return 0


def _point_app_at(app: Path, metric: str, repo_id: str):
    """The Space's app.py loads the module from the Hub by the Space's own id, as the official metric Spaces do."""
    text = app.read_text(encoding="utf-8")
    call = f'evaluate.load("{metric}")'
    if call not in text:
        raise RuntimeError(f"{app}: expected the line module = {call}")
    app.write_text(text.replace(call, f'evaluate.load("{repo_id}")'), encoding="utf-8")

