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


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.quiet:
        _silence()
    try:
        return args.func(args) or 0
    except (registry.UnknownNameError, OSError, ValueError, RuntimeError) as err:
        from qahub.publish import scrub

        print(f"qahub {args.command}: error: {scrub(str(err))}", file=sys.stderr)
        return 1


def _silence():
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.getLogger("evaluate").setLevel(logging.ERROR)
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qahub", description=__doc__)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_build(commands)
    _add_publish(commands)
    _add_evaluate(commands)
    _add_list(commands)
    _add_demo(commands)
    return parser


def _add_build(commands):
    p = commands.add_parser("build", help="build a corpus into a Hub-ready folder (Parquet + README card)")
    p.add_argument("corpus", choices=registry.corpus_names())
    which = p.add_mutually_exclusive_group()
    which.add_argument("--config", action="append", help="config to build (repeatable; default: all configs)")
    which.add_argument("--all-configs", action="store_true", help="build every config (the default)")
    p.add_argument("--data-dir", help="local copy of the upstream files (upstream layout) instead of downloading")
    p.add_argument("--mirror-url", help="base URL serving <corpus>/<upstream path> (default: $QAHUB_MIRROR_URL)")
    p.add_argument("--out", help="output folder (default: ./<corpus>)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
    p.add_argument("--cache-dir", help="datasets cache to build in (default: a temporary one)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="builder config option, VALUE read as JSON when it parses (e.g. present_splits_only=true)")
    p.set_defaults(func=_build)


def _build(args) -> int:
    from qahub.export import export

    report = export(args.corpus, args.out, configs=args.config, data_dir=args.data_dir, mirror_url=args.mirror_url,
                    cache_dir=args.cache_dir, overwrite=args.overwrite, builder_options=parse_options(args.option))
    print(f"{args.corpus}: wrote {report.folder}")
    _print_rows(["config", "split", "rows", "parquet bytes", "seconds"],
                [[s.config, s.split, s.rows, s.parquet_bytes, f"{s.seconds:.2f}"] for s in report.splits])
    return 0


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
    p = commands.add_parser("publish", help="upload a built folder to a Hub dataset repo in one commit")
    p.add_argument("corpus", choices=registry.corpus_names())
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repo")
    p.add_argument("--folder", help="the built folder (default: ./<corpus>)")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print the file list and card; upload nothing")
    p.set_defaults(func=_publish)


def _publish(args) -> int:
    from qahub import publish

    folder = Path(args.folder or args.corpus)
    if args.dry_run:
        plan = publish.plan(folder, args.repo_id)
        print(f"would upload {len(plan.files)} files from {plan.folder} to dataset repo {plan.repo_id}"
              f"{' (private)' if args.private else ''}{f' at revision {args.revision}' if args.revision else ''}:")
        for name in plan.files:
            print(f"  {name}")
        print("\n--- README.md ---")
        print(plan.card)
        return 0
    url = publish.publish(folder, args.repo_id, private=args.private, revision=args.revision)
    print(f"published {folder} to {args.repo_id}: {url}")
    return 0


def scoring_modules() -> dict:
    names = [m.name for m in pkgutil.iter_modules(scoring.__path__) if not m.name.startswith("_")]
    return {name: importlib.import_module(f"qahub.scoring.{name}") for name in sorted(names)}


def _add_evaluate(commands):
    p = commands.add_parser("evaluate", help="score predictions with a metric")
    metrics = p.add_subparsers(dest="metric", required=True)
    for name, module in scoring_modules().items():
        sub = metrics.add_parser(name, help=getattr(module, "HELP", None))
        module.add_arguments(sub)
        sub.add_argument("--output", help="also write the result as JSON to this file")
        sub.set_defaults(func=_evaluate, scorer=module)


def _evaluate(args) -> int:
    result = args.scorer.run(args)
    text = json.dumps(result, ensure_ascii=False, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


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

    return run_demo(Path(args.out), overwrite=args.overwrite, evaluate=lambda argv: main(["--quiet", "evaluate", *argv]))


def _print_rows(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
