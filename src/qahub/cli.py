"""The ``qahub`` command line: build, publish, evaluate, list, demo."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import pkgutil
import re
import signal
import sys
import threading
import warnings
from pathlib import Path

from qahub import evaluate_cli, registry
from qahub.arguments import Parser


def main(argv=None) -> int:
    status = 0
    try:
        status = _main(argv)
    except BrokenPipeError:  # stdout's reader has gone (``qahub evaluate ... | head -1``): end as ``cat`` does
        pass
    finally:
        _flush_stdout()  # a closed pipe shows here (also after --help), not in the interpreter's exit
    return status


def _main(argv) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.quiet = bool(args.quiet or getattr(args, "sub_quiet", False))
    args.debug = bool(args.debug or getattr(args, "sub_debug", False))
    try:
        with _signals_interrupt(), _quiet(args.quiet):
            return args.func(args) or 0
    except Interrupted as stop:
        print(f"qahub {args.command}: interrupted by {stop.name}; its temporary files are removed", file=sys.stderr)
        return 128 + stop.signum
    except (registry.UnknownNameError, OSError, ValueError, RuntimeError, ImportError) as err:
        if isinstance(err, BrokenPipeError) and _stdout_closed():
            raise
        _say_error(args, explain(err))
        return 1
    except Exception as err:  # a bug, or a library failing in a way qahub does not expect: one line all the same
        _say_error(args, f"{type(err).__name__}: {' '.join(explain(err).split())}", unexpected=True)
        return 1


def _say_error(args, message: str, unexpected: bool = False):
    """One line on stderr; with --debug the traceback before it, else (for an unexpected error) how to get it."""
    if args.debug:
        import traceback

        traceback.print_exc()
    hint = " (rerun with --debug for the traceback)" if unexpected and not args.debug else ""
    print(f"qahub {args.command}: error: {message}{hint}", file=sys.stderr)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``qahub list | head -1``), not some other broken pipe."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no real file behind sys.stdout
        return False


def _flush_stdout():
    """Flush stdout; when its reader has gone, put /dev/null in its place, so that the interpreter's own flush
    at exit does not fail again (the recipe of Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, raised where the program is so that every ``finally`` removes its temporary files."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def _signals_interrupt():
    """SIGINT and SIGTERM raise ``Interrupted``; a second signal during the clean-up is ignored, so the clean-up
    ends. Outside the main thread (signals cannot be set there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in wanted}

    def stop(signum, frame):
        for other in wanted:
            signal.signal(other, signal.SIG_IGN)
        raise Interrupted(signum)

    for signum in wanted:
        signal.signal(signum, stop)
    try:
        yield
    except KeyboardInterrupt as err:  # raised by other code (e.g. a library's own SIGINT handling)
        if isinstance(err, Interrupted):
            raise
        raise Interrupted(signal.SIGINT) from None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def explain(err: BaseException) -> str:
    from qahub.publish import scrub

    top = (err.name or "").split(".")[0] if isinstance(err, ModuleNotFoundError) else ""
    extra = extra_of(top) if top else None
    if extra:
        return f"this needs the optional package {top!r}: pip install -e \".[{extra}]\" (in the qahub clone)"
    return scrub(str(err))


def extra_of(module: str) -> str | None:
    """The first extra of qahub's installed metadata (pyproject's optional-dependencies, in order) that installs
    the distribution of the import name ``module``; None when none does."""
    from importlib import metadata

    try:
        requires = metadata.requires("qahub") or []
    except metadata.PackageNotFoundError:
        return None
    wanted = module.lower().replace("-", "_")
    for requirement in requires:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group().lower().replace("-", "_").replace(".", "_")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if extra and name == wanted != "qahub":
            return extra.group(1)
    return None


@contextlib.contextmanager
def _quiet(quiet: bool):
    """With --quiet: no progress bars, no info logs, no warnings; only errors and the result are printed.
    Warning filters and the root log level are restored afterwards (main may run inside a longer program)."""
    if not quiet:
        yield
        return
    _silence()
    root = logging.getLogger()
    level = root.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root.setLevel(logging.ERROR)
        try:
            yield
        finally:
            root.setLevel(level)


# read by datasets and huggingface_hub when they are imported, so that a command that never needs them
# (list, --help) does not import them just to silence them
QUIET_ENV = {"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "DATASETS_VERBOSITY": "error"}


def _silence():
    os.environ.update(QUIET_ENV)
    logging.getLogger("evaluate").setLevel(logging.ERROR)
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        import huggingface_hub.utils

        huggingface_hub.utils.disable_progress_bars()


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
    return parser


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
    p.set_defaults(func=_build)


def _build(args) -> int:
    from qahub.export import export

    if args.all:
        return _build_all(args)
    if not args.corpus:
        raise ValueError("name a corpus, or pass --all")
    if args.data_root:
        raise ValueError("--data-root goes with --all; for one corpus pass --data-dir")
    options = parse_options(args.option, args.corpus)
    # asking for the splits that are present also means building the configs that are present
    report = export(args.corpus, args.out, configs=args.config, data_dir=args.data_dir, mirror_url=args.mirror_url,
                    cache_dir=args.cache_dir, overwrite=args.overwrite, builder_options=options,
                    skip_unavailable=bool(options.get("present_splits_only")))
    _say_leftovers(report, args.quiet)
    print(f"{args.corpus}: wrote {report.folder}")
    _say_sample(report)
    _print_rows(*_report_table([report]))
    for config, why in report.skipped:
        print(f"skipped config {config}: {_one_line(why)}")
    for entry in report.missing:
        if entry["splits"] != "all" and "absent" in entry["reason"]:
            print(f"{args.corpus}/{entry['config']}: built without split(s) {', '.join(entry['splits'])} "
                  "(their files are absent)")
    if report.partial:
        print("partial build: its card lists what is missing; `qahub publish` needs --allow-partial for it")
    return 0


def _say_sample(report):
    if report.sample:
        print(f"{report.corpus}: built from qahub's bundled sample data, and marked so in its card: "
              "`qahub publish` refuses it; build from the corpus's own files to publish")


def _say_leftovers(report, quiet: bool):
    if report.leftovers and not quiet:
        print(f"removed the work folders of an earlier {report.corpus} build that was killed: "
              f"{', '.join(report.leftovers)}", file=sys.stderr)


def _build_all(args) -> int:
    """Every corpus, each from DATA_ROOT/<corpus>/ when present, else its download; one summary at the end."""
    import datasets
    from tqdm.auto import tqdm

    from qahub.export import OutputExistsError, export

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
            _say_leftovers(reports[-1], args.quiet)
            _say_sample(reports[-1])
        except OutputExistsError:
            problems.append([corpus, "-", EXISTS, "an earlier build is there; pass --overwrite to rebuild it"])
        except (FileNotFoundError, ConnectionError) as err:
            problems.append([corpus, "-", UNAVAILABLE, _one_line(err)])
        except Exception as err:  # one corpus's failure must not stop the others; it is reported and counted
            problems.append([corpus, "-", "FAILED", f"{type(err).__name__}: {_one_line(err)}"])
    problems += [[r.corpus, config, UNAVAILABLE, _one_line(why)] for r in reports for config, why in r.skipped]
    problems += _absent_splits(reports)
    _print_rows(*_report_table(reports))
    if problems:
        print()
        header = ["corpus", "config", "status", "reason"]
        _print_rows(header, _wrapped(header, problems))
    statuses = [p[2] for p in problems]
    failed, exists = statuses.count("FAILED"), statuses.count(EXISTS)
    skipped = len(problems) - failed - exists
    print(f"\nbuilt {len(reports)} corpora into {out_root}/; {skipped} skipped, {failed} failed"
          + (f", {exists} not rebuilt (output exists)" if exists else ""))
    if not reports:
        print(f"nothing was built: {_why_nothing(statuses)}")
    return 1 if failed or exists or not reports else 0


EXISTS, UNAVAILABLE = "not rebuilt: output exists", "skipped: source unavailable"


def _why_nothing(statuses) -> str:
    if statuses and all(s == UNAVAILABLE for s in statuses):
        return "no corpus had a source (pass --data-root, or --mirror-url when offline)"
    if EXISTS in statuses:
        return "the output folders exist already (pass --overwrite to rebuild them)" + (
            "; others failed or had no source" if len(set(statuses)) > 1 else "")
    return "every corpus failed or had no source (see the table above)"


def _absent_splits(reports) -> list:
    """Configs built without some of their splits, so the summary says what is missing and why."""
    rows = []
    for report in reports:
        for entry in report.missing:
            if entry["splits"] == "all":
                continue  # a skipped config is listed already
            status = "partial: split(s) absent" if "absent" in entry["reason"] else "partial: not requested"
            rows.append([report.corpus, entry["config"], status, ", ".join(entry["splits"])])
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

    return scrub(" ".join(str(err).split()))


def _wrapped(header, rows) -> list:
    """``rows`` with the text of their last column wrapped to the width the terminal leaves it (at least 50),
    never cut: its further lines are rows of their own, the other cells blank."""
    import shutil
    import textwrap

    taken = sum(max(len(str(x)) for x in col) + 2 for col in list(zip(header, *rows))[:-1])
    width = max(50, shutil.get_terminal_size().columns - taken)
    lines = []
    for *cells, text in rows:
        parts = textwrap.wrap(str(text), width, break_long_words=False, break_on_hyphens=False) or [""]
        lines += [[*cells, parts[0]], *[[""] * len(cells) + [part] for part in parts[1:]]]
    return lines


TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


def parse_options(pairs: list[str], corpus: str | None = None) -> dict:
    """``KEY=VALUE`` pairs as builder options of ``corpus``, each VALUE read by its option's kind: booleans
    strictly (true/false/yes/no/1/0), names as a comma-separated list or JSON list, strings as given."""
    from qahub.export import check_option_names, check_options

    given = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        if key in given:
            raise ValueError(f"--option {key} is given twice")
        given[key] = value
    kinds = check_option_names(corpus, given)
    options = {key: _option_value(key, value, kinds.get(key, "str")) for key, value in given.items()}
    if corpus:
        check_options(corpus, options)
    return options


def _option_value(key: str, value: str, kind: str):
    text = value.strip()
    if kind == "bool":
        if text.lower() not in TRUE + FALSE:
            raise ValueError(f"--option {key}={value}: expected true/false, yes/no or 1/0")
        return text.lower() in TRUE
    if not text:
        raise ValueError(f"--option {key}=: give a value")
    if kind == "names":
        if text.startswith("["):
            try:
                names = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"--option {key}={value}: not a JSON list; write {key}=a,b") from None
        else:
            names = [name.strip() for name in text.split(",")]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"--option {key}={value}: expected names separated by commas, e.g. {key}=train,test")
        return tuple(names)
    return value


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
    if args.dry_run:
        return _dry_run_summary(targets, failures)
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    if len(targets) > 1:
        print(f"published {len(targets) - len(failures)} of {len(targets)} corpora")
    return 1 if failures else 0


def _corpus_to_publish(value: str) -> str:
    """A corpus name; a folder given in its place gets the command that publishes it."""
    if value in registry.corpus_names():
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not a corpus ({', '.join(registry.corpus_names())}); to publish a built folder, name its "
        f"corpus and pass the folder with --folder: qahub publish CORPUS --folder {value} --repo-id ORG/NAME")


def _dry_run_summary(targets, refusals) -> int:
    """A dry run uploads nothing, so it fails only when nothing at all could be published."""
    for line in refusals:
        print(f"would not publish {line}", file=sys.stderr)
    if len(targets) > 1:
        print(f"dry run: would publish {len(targets) - len(refusals)} of {len(targets)} corpora; nothing uploaded")
    return 1 if len(refusals) == len(targets) else 0


def _publish_one(folder: Path, repo_id: str, repo_type: str, args, corpus: str | None = None):
    from qahub import publish

    allow_partial = getattr(args, "allow_partial", False)
    # a folder that is not an export, or a partial build without --allow-partial, fails here with a hint
    plan = publish.plan(folder, repo_id, repo_type, allow_partial=allow_partial)
    if corpus:
        publish.check_corpus(folder, corpus)
    where = f"{' (private)' if args.private else ''}{f' at revision {args.revision}' if args.revision else ''}"
    if args.dry_run:
        print(f"would upload {len(plan.files)} files from {plan.folder} to {repo_type} repo {plan.repo_id}{where}:")
        for name in plan.files:
            print(f"  {name}")
        _say_left_out(plan)
        if args.verbose:
            print("\n--- README.md ---")
            print(plan.card)
        else:
            print(f"  (README.md: {len(plan.card.splitlines())} lines; --verbose prints it)")
        return
    url = publish.publish(folder, repo_id, private=args.private, revision=args.revision, repo_type=repo_type,
                          allow_partial=allow_partial, planned=plan)
    print(f"published {folder} to {repo_type} repo {repo_id}{where}: {url}")
    _say_left_out(plan)


def _say_left_out(plan):
    if plan.left_out:
        from qahub.files import listed

        print(f"  not uploaded (not part of the export): {listed(plan.left_out, 10)}")


def _add_publish_metric(commands):
    p = commands.add_parser("publish-metric", help="upload a metric directory as a Hub Space (gradio)")
    p.add_argument("metric", choices=registry.metric_names())
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the Space; then evaluate.load('ORG/NAME')")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to commit to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="print the file list; upload nothing")
    p.add_argument("--verbose", action="store_true", help="with --dry-run: also print the README")
    p.set_defaults(func=_publish_metric)


def _publish_metric(args) -> int:
    import tempfile

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
    """The adapters: the modules of ``evaluate_cli`` named after a metric (``references`` serves them all). One
    that does not import is left out with a warning naming it: the other commands still run."""
    modules = {}
    for name in scoring_names():
        try:
            modules[name] = importlib.import_module(f"qahub.evaluate_cli.{name}")
        except Exception as err:  # whatever a broken adapter (or what it imports) raises
            path = next(p for p in (Path(d) / f"{name}.py" for d in evaluate_cli.__path__) if p.is_file())
            logging.getLogger(__name__).warning("%s: does not import (%s: %s); `qahub evaluate %s` is left out",
                                                path, type(err).__name__, " ".join(str(err).split()), name)
    return modules


def scoring_names() -> list[str]:
    """The adapters' names, found without importing them."""
    return sorted(m.name for m in pkgutil.iter_modules(evaluate_cli.__path__) if m.name in registry.metric_names())


def _add_evaluate(commands):
    p = commands.add_parser("evaluate", help="score predictions with a metric")
    metrics = p.add_subparsers(dest="metric", required=True)
    metrics.add_parser = _with_quiet(metrics.add_parser)
    for name, module in scoring_modules().items():
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
    _print_rows(["corpus", "config", "splits"], rows)
    print()
    _print_rows(["metric", "command line"], [[m, "yes" if m in scoring_names() else "no"] for m in registry.metric_names()])
    _say_left_out_modules()
    return 0


def _say_left_out_modules():
    """The footer: each module in loaders/ or metrics/ that is part of no complete corpus, and why."""
    from qahub import tasks

    if tasks.left_out():
        print("\nnot registered (not a complete corpus: a loader, a metric and its task_api.py):")
        for line in tasks.left_out():
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
    _print_rows(["task", "dataset", "config", "split", "few-shot split"], rows)
    print(f"\nwrote {len(plan)} tasks to {Path(args.out).absolute()}; run them with "
          f"lm_eval --include_path {args.out} --tasks {','.join(plan)} ...")
    return 0


def _add_report(commands):
    p = commands.add_parser("report", help="scores with confidence intervals, breakdowns and paired comparisons "
                                           "of lm_eval --log_samples runs and inspect logs")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="an lm_eval --output_path folder (or its model folder), or an inspect log file or "
                        "--log-dir folder; optionally NAME=PATH")
    p.add_argument("--out", required=True, help="folder to write report.json, report.md, report.html, figures/ to")
    p.add_argument("--baseline", help="the run the others are compared with (default: the first)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    p.add_argument("--seed", type=int, default=12345, help="random seed (default: 12345, sacrebleu's)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default: 0.95)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing folder that is not a report")
    p.add_argument("--jobs", type=int, help="tasks reported side by side, one process each (default: one per CPU "
                                            "on Linux, 1 elsewhere); the numbers are the same for any --jobs")
    p.set_defaults(func=_report)


def _report(args) -> int:
    from qahub.report import write_report

    data = write_report(args.runs, args.out, baseline=args.baseline, resamples=args.resamples, seed=args.seed,
                        confidence=args.confidence, overwrite=args.overwrite, progress=not args.quiet,
                        jobs=args.jobs)
    print(Path(args.out, "report.md").read_text(encoding="utf-8"))
    print(f"wrote {Path(args.out).absolute()} ({len(data['tasks'])} tasks, {len(data['runs'])} runs)")
    return 0


def _print_rows(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
