"""The ``qahub`` command line: build, publish, evaluate, list, demo."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import pkgutil
import sys
from pathlib import Path

from qahub import registry, scoring

# optional dependency -> the extra that installs it
EXTRAS = {"sacrebleu": "bleu", "nltk": "jeopardy", "pymorphy3": "jeopardy", "sudachipy": "jemhopqa",
          "sudachidict_core": "jemhopqa", "Levenshtein": "jemhopqa", "scipy": "jemhopqa", "pulp": "ilp"}


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.quiet or getattr(args, "sub_quiet", False):
        args.quiet = True
        _silence()
    try:
        return args.func(args) or 0
    except (registry.UnknownNameError, OSError, ValueError, RuntimeError, ImportError) as err:
        print(f"qahub {args.command}: error: {explain(err)}", file=sys.stderr)
        return 1


def explain(err: BaseException) -> str:
    from qahub.publish import scrub

    top = (err.name or "").split(".")[0] if isinstance(err, ModuleNotFoundError) else ""
    if top in EXTRAS:
        return f"this needs the optional package {top!r}: pip install 'qahub[{EXTRAS[top]}]'"
    return scrub(str(err))


def _silence():
    import datasets
    import huggingface_hub.utils

    datasets.disable_progress_bars()
    huggingface_hub.utils.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.getLogger("evaluate").setLevel(logging.ERROR)
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qahub", description=__doc__)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser = _with_quiet(commands.add_parser)
    _add_build(commands)
    _add_publish(commands)
    _add_publish_metric(commands)
    _add_metric_copy(commands)
    _add_evaluate(commands)
    _add_list(commands)
    _add_demo(commands)
    return parser


def _with_quiet(add_parser):
    def add(name, **kwargs):
        sub = add_parser(name, **kwargs)
        # SUPPRESS: a nested parser's default must not undo a --quiet given to its parent command
        sub.add_argument("--quiet", dest="sub_quiet", action="store_true", default=argparse.SUPPRESS,
                         help="no progress bars or info logs")
        return sub

    return add


def _add_build(commands):
    p = commands.add_parser("build", help="build a corpus (or --all) into a Hub-ready folder (Parquet + README card)")
    p.add_argument("corpus", nargs="?", choices=registry.corpus_names(), help="the corpus (or --all)")
    p.add_argument("--all", action="store_true", help="every config of every corpus, into OUT/<corpus>/")
    p.add_argument("--data-root", help="with --all: folder holding <corpus>/ local copies (others are downloaded)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--config", action="append", help="config to build (repeatable; default: all configs)")
    which.add_argument("--all-configs", action="store_true", help="build every config (the default)")
    p.add_argument("--data-dir", help="local copy of the upstream files (upstream layout) instead of downloading")
    p.add_argument("--mirror-url", help="base URL serving <corpus>/<upstream path> (default: $QAHUB_MIRROR_URL)")
    p.add_argument("--out", help="output folder (default: ./<corpus>; with --all: ./qahub-hub)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
    p.add_argument("--cache-dir", help="datasets cache to build in (default: a temporary one)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="builder config option, VALUE read as JSON when it parses (e.g. present_splits_only=true)")
    p.set_defaults(func=_build)


def _build(args) -> int:
    from qahub.export import export

    if args.all:
        return _build_all(args)
    if not args.corpus:
        raise ValueError("name a corpus, or pass --all")
    if args.data_root:
        raise ValueError("--data-root goes with --all; for one corpus pass --data-dir")
    options = parse_options(args.option)
    # asking for the splits that are present also means building the configs that are present
    report = export(args.corpus, args.out, configs=args.config, data_dir=args.data_dir, mirror_url=args.mirror_url,
                    cache_dir=args.cache_dir, overwrite=args.overwrite, builder_options=options,
                    skip_unavailable=bool(options.get("present_splits_only")))
    print(f"{args.corpus}: wrote {report.folder}")
    _print_rows(*_report_table([report]))
    for config, why in report.skipped:
        print(f"skipped config {config}: {_one_line(why)}")
    for corpus, config, _, splits in _absent_splits([report]):
        print(f"{corpus}/{config}: built without split(s) {splits} (their files are absent)")
    return 0


def _build_all(args) -> int:
    """Every corpus, each from DATA_ROOT/<corpus>/ when present, else its download; one summary at the end."""
    import datasets
    from tqdm.auto import tqdm

    from qahub.export import export

    if args.corpus or args.config or args.data_dir or args.option:
        raise ValueError("--all builds every config of every corpus: drop the corpus name, --config, --data-dir and --option")
    if args.data_root and not Path(args.data_root).is_dir():
        raise FileNotFoundError(f"{args.data_root}: --data-root is not a folder")
    out_root = Path(args.out or "qahub-hub")
    datasets.disable_progress_bars()
    reports, problems = [], []
    bar = tqdm(registry.corpus_names(), desc="qahub build --all", unit="corpus", disable=args.quiet)
    for corpus in bar:
        bar.set_postfix_str(corpus)
        local = Path(args.data_root) / corpus if args.data_root else None
        try:
            reports.append(export(corpus, out_root / corpus, data_dir=local if local and local.is_dir() else None,
                                  mirror_url=args.mirror_url, overwrite=args.overwrite, skip_unavailable=True,
                                  cache_dir=args.cache_dir, builder_options=_partial_split_option(corpus)))
        except (FileNotFoundError, ConnectionError) as err:
            problems.append([corpus, "-", "skipped: source unavailable", _one_line(err)])
        except Exception as err:  # one corpus's failure must not stop the others; it is reported and counted
            problems.append([corpus, "-", "FAILED", f"{type(err).__name__}: {_one_line(err)}"])
    problems += [[r.corpus, config, "skipped: source unavailable", _one_line(why)] for r in reports for config, why in r.skipped]
    problems += _absent_splits(reports)
    _print_rows(*_report_table(reports))
    if problems:
        print()
        _print_rows(["corpus", "config", "status", "reason"], problems)
    failed = sum(1 for p in problems if p[2] == "FAILED")
    print(f"\nbuilt {len(reports)} corpora into {out_root}/; {len(problems) - failed} skipped, {failed} failed")
    if not reports:
        print("nothing was built: no corpus had a source (pass --data-root, or --mirror-url when offline)")
    return 1 if failed or not reports else 0


def _absent_splits(reports) -> list:
    """Configs built without some of their splits (present_splits_only), so the summary says what is missing."""
    rows = []
    for report in reports:
        declared = getattr(registry.builder_module(report.corpus), "SPLITS", {})
        for config in report.configs:
            absent = [s for s in declared.get(config.config, []) if s not in {x.split for x in config.splits}]
            if absent and report.corpus != "limur":  # LIMUR's splits are whichever files the task has
                rows.append([report.corpus, config.config, "partial: split(s) absent", ", ".join(absent)])
    return rows


def _partial_split_option(corpus) -> dict:
    """Builders that can build the splits present (Topical-Chat without its large train file) do so under --all."""
    fields = getattr(registry.builder_class(corpus).BUILDER_CONFIG_CLASS, "__dataclass_fields__", {})
    return {"present_splits_only": True} if "present_splits_only" in fields else {}


def _report_table(reports):
    rows = []
    for report in reports:
        for config in report.configs:
            for i, s in enumerate(config.splits):
                seconds = f"{config.seconds:.2f}" if i == 0 else ""
                rows.append([report.corpus, s.config, s.split, f"{s.rows:,}", _size(s.parquet_bytes), seconds])
    return ["corpus", "config", "split", "rows", "parquet", "seconds (config)"], rows


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _one_line(err) -> str:
    from qahub.publish import scrub

    text = scrub(" ".join(str(err).split()))
    return text if len(text) <= 160 else text[:157] + "..."


def parse_options(pairs: list[str]) -> dict:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _add_publish(commands):
    p = commands.add_parser("publish", help="upload a built folder (or --all) to Hub dataset repos, one commit each")
    p.add_argument("corpus", nargs="?", choices=registry.corpus_names())
    p.add_argument("--repo-id", help="ORG/NAME of the dataset repo")
    p.add_argument("--all", action="store_true", help="every corpus built under --root, each to ORG/<corpus>")
    p.add_argument("--org", help="with --all: the Hub organisation or user")
    p.add_argument("--root", default="qahub-hub", help="with --all: the `qahub build --all` output (default ./qahub-hub)")
    p.add_argument("--folder", help="the built folder (default: ./<corpus>)")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print the file list and card; upload nothing")
    p.set_defaults(func=_publish)


def _publish(args) -> int:
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
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    if len(targets) > 1:
        print(f"published {len(targets) - len(failures)} of {len(targets)} corpora")
    return 1 if failures else 0


def _publish_one(folder: Path, repo_id: str, repo_type: str, args, corpus: str | None = None):
    from qahub import publish

    publish.plan(folder, repo_id, repo_type)  # a folder that is not an export fails here, with a hint
    if corpus:
        publish.check_corpus(folder, corpus)
    where = f"{' (private)' if args.private else ''}{f' at revision {args.revision}' if args.revision else ''}"
    if args.dry_run:
        plan = publish.plan(folder, repo_id, repo_type)
        print(f"would upload {len(plan.files)} files from {plan.folder} to {repo_type} repo {plan.repo_id}{where}:")
        for name in plan.files:
            print(f"  {name}")
        print("\n--- README.md ---")
        print(plan.card)
        return
    url = publish.publish(folder, repo_id, private=args.private, revision=args.revision, repo_type=repo_type)
    print(f"published {folder} to {repo_type} repo {repo_id}{where}: {url}")


def _add_publish_metric(commands):
    p = commands.add_parser("publish-metric", help="upload a metric directory as a Hub Space (gradio)")
    p.add_argument("metric", choices=registry.metric_names())
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the Space; then evaluate.load('ORG/NAME')")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print the file list and README; upload nothing")
    p.set_defaults(func=_publish_metric)


def _publish_metric(args) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        # a Space named ORG/NAME loads NAME.py: the module file takes the Space's name
        folder = copy_metric(args.metric, Path(tmp), name=args.repo_id.split("/")[-1])
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


def copy_metric(metric: str, out_dir: Path, name: str | None = None, overwrite: bool = False) -> Path:
    """Copy the metric's directory to ``out_dir/<name>/`` (module renamed to ``<name>.py``), caches left out."""
    import shutil

    name = name or metric
    source = registry.metric_dir(metric)
    target = out_dir / name
    if target.exists() and any(target.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{target}: exists and is not empty; pass --overwrite to replace it")
        if not (target / f"{name}.py").is_file():
            raise FileExistsError(f"{target}: is not a copy of the {metric} metric; --overwrite only replaces one")
        shutil.rmtree(target)
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if name != metric:
        (target / f"{metric}.py").rename(target / f"{name}.py")
    return target


def _add_metric_copy(commands):
    p = commands.add_parser("metric-copy", help="write a metric's evaluate module directory to DIR/NAME/")
    p.add_argument("metric", choices=registry.metric_names())
    p.add_argument("--out", default=".", help="parent folder (default: .), so that evaluate.load('NAME') works there")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier copy of this metric")
    p.set_defaults(func=_metric_copy)


def _metric_copy(args) -> int:
    target = copy_metric(args.metric, Path(args.out), overwrite=args.overwrite)
    print(f"wrote {target}; from {Path(args.out).absolute()}: evaluate.load({args.metric!r})")
    return 0


def scoring_modules() -> dict:
    names = [m.name for m in pkgutil.iter_modules(scoring.__path__) if not m.name.startswith("_")]
    return {name: importlib.import_module(f"qahub.scoring.{name}") for name in sorted(names)}


def _add_evaluate(commands):
    p = commands.add_parser("evaluate", help="score predictions with a metric")
    metrics = p.add_subparsers(dest="metric", required=True)
    metrics.add_parser = _with_quiet(metrics.add_parser)
    for name, module in scoring_modules().items():
        sub = metrics.add_parser(name, help=getattr(module, "HELP", None))
        module.add_arguments(sub)
        sub.add_argument("--output", help="also write the result as JSON to this file")
        sub.set_defaults(func=_evaluate, scorer=module)


def _evaluate(args) -> int:
    """Print the scores; a scorer's ``exit_status(result)`` may flag an incomplete result (e.g. failed judge calls)."""
    result = args.scorer.run(args)
    text = json.dumps(result, ensure_ascii=False, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return getattr(args.scorer, "exit_status", lambda _: 0)(result)


def _add_list(commands):
    p = commands.add_parser("list", help="corpora, configs, splits and metrics")
    p.set_defaults(func=_list)


def _list(args) -> int:
    rows = []
    for corpus in registry.corpus_names():
        for config in registry.builder_class(corpus).BUILDER_CONFIGS:
            default = " (default)" if config.name == registry.default_config(corpus) else ""
            rows.append([corpus, config.name + default, ", ".join(_splits_of(corpus, config.name))])
    _print_rows(["corpus", "config", "splits"], rows)
    print()
    _print_rows(["metric", "command line"], [[m, "yes" if m in scoring_modules() else "no"] for m in registry.metric_names()])
    return 0


def _splits_of(corpus, config):
    return getattr(registry.builder_module(corpus), "SPLITS", {}).get(config, ["(from the source files)"])


def _add_demo(commands):
    p = commands.add_parser("demo", help="build every corpus from its bundled sample, load it back, score sample predictions")
    p.add_argument("--out", default="demo-output", help="folder for the built corpora (default: ./demo-output)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier demo output")
    p.set_defaults(func=_demo)


def _demo(args) -> int:
    from qahub.demo import run_demo

    return run_demo(Path(args.out), overwrite=args.overwrite, evaluate=lambda argv: main(["--quiet", "evaluate", *argv]),
                    explain=explain)


def _print_rows(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
