"""``qahub build``: one corpus, or every corpus with ``--all``, and the table of what was built."""

from __future__ import annotations

import sys
from pathlib import Path

from qahub import registry
from qahub.console import print_rows, scrub
from qahub.export import OutputExistsError
from qahub.export.options import option_kinds, parse_options
from qahub.export.writer import export


def build(args) -> int:
    """``qahub build CORPUS``: one export and its table; with --all, ``build_all``."""
    if args.all:
        return build_all(args)
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
    print_rows(*_report_table([report]))
    _say_training(report)
    for config, why in report.skipped:
        print(f"skipped config {config}: {_one_line(why)}")
    for entry in report.missing:
        if entry["splits"] != "all" and "absent" in entry["reason"]:
            print(f"{args.corpus}/{entry['config']}: built without split(s) {', '.join(entry['splits'])} "
                  "(their files are absent)")
    if report.partial:
        print("partial build: its card lists what is missing; `qahub publish` needs --allow-partial for it")
    return 0


def _say_training(report):
    """What decontamination dropped from each training config (the card states the same counts), and each split
    left out for having no row."""
    for config, splits in report.training.items():
        for split, c in splits.items():
            print(f"{report.corpus}/{config}/{split}: {c['rows']:,} rows of {c['documents']:,} training documents; "
                  f"dropped as overlapping an evaluated document: {c['exact']:,} exact, {c['ngram']:,} n-gram; "
                  f"{c['duplicates']:,} duplicates")
    written = {entry.config for entry in report.configs}
    for empty in report.empty:
        config = empty.partition("/")[0]
        whole = "" if config in written else f"; so is the {config} config, which has no other split"
        print(f"{report.corpus}/{empty}: left out of the export and its card: it has no row (datasets cannot load "
              f"an empty split){whole}")


def _say_sample(report):
    if report.sample:
        print(f"{report.corpus}: built from qahub's bundled sample data, and marked so in its card: "
              "`qahub publish` refuses it; build from the corpus's own files to publish")


def _say_leftovers(report, quiet: bool):
    if report.leftovers and not quiet:
        print(f"removed the work folders of an earlier {report.corpus} build that was killed: "
              f"{', '.join(report.leftovers)}", file=sys.stderr)


def build_all(args) -> int:
    """Every corpus, each from DATA_ROOT/<corpus>/ when present, else its download; one summary at the end."""
    import datasets
    from tqdm.auto import tqdm

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
        problem = _build_one(corpus, args, out_root, reports)
        problems += [problem] if problem else []
    problems += [[r.corpus, config, UNAVAILABLE, _one_line(why)] for r in reports for config, why in r.skipped]
    problems += _absent_splits(reports)
    print_rows(*_report_table(reports))
    return _summary(reports, problems, out_root)


def _build_one(corpus, args, out_root: Path, reports: list) -> list | None:
    """Export ``corpus`` for ``build --all``, its report appended to ``reports``; the summary row of a failure."""
    local = Path(args.data_root) / corpus if args.data_root else None
    try:
        reports.append(export(corpus, out_root / corpus, data_dir=local if local and local.is_dir() else None,
                              mirror_url=args.mirror_url, overwrite=args.overwrite, skip_unavailable=True,
                              cache_dir=args.cache_dir, builder_options=_partial_split_option(corpus)))
    except OutputExistsError:
        return [corpus, "-", EXISTS, "an earlier build is there; pass --overwrite to rebuild it"]
    except (FileNotFoundError, ConnectionError) as err:
        return [corpus, "-", UNAVAILABLE, _one_line(err)]
    except Exception as err:  # one corpus's failure must not stop the others; it is reported and counted
        return [corpus, "-", "FAILED", f"{type(err).__name__}: {_one_line(err)}"]
    _say_leftovers(reports[-1], args.quiet)
    _say_sample(reports[-1])
    if not args.quiet:
        _say_training(reports[-1])
    return None


def _summary(reports, problems, out_root: Path) -> int:
    """The table of what was not built, the closing line, and the exit status of ``build --all``."""
    if problems:
        print()
        header = ["corpus", "config", "status", "reason"]
        print_rows(header, _wrapped(header, problems))
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
    return {"present_splits_only": True} if "present_splits_only" in option_kinds(corpus) else {}


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

