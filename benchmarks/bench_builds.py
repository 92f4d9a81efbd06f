"""Builds against their floor (issue 14): every corpus exported from a >= 40 MB input in its upstream format.

- ``<corpus> build``: ``qahub.export.writer.export`` of one config (the Parquet folder a user publishes) against the
  floor: parse the same source files with ``json`` / ``csv`` and ``pyarrow.parquet.write_table`` the same rows
  with the export's own schema. The best of 3 to 10 fresh processes each (``_common.best_in_turn``), the two
  sides in turn; imports outside the clock. Target <= 2x.
- ``<corpus> 10-row build``: the fixed cost of one export of the bundled sample, the first build in a fresh
  process after the imports. Target <= 0.3 s.
- ``<corpus> train-sized peak RSS`` (where its ``BUILD`` says ``peak_rss``: Topical-Chat): the build's peak RSS
  above the footprint of the imports alone, against the source size. Target <= 2x.

Every corpus of ``qahub.registry`` is measured, as its ``benchmarks/bench_<corpus>.py`` declares: ``BUILD`` (the
config and builder options) and ``make_source`` (untimed), a synthetic scale-up of the bundled sample or of the
real files in ../shared/data, records cycled under new ids, to >= 40 MB of upstream-format files.
"""

from __future__ import annotations

import csv
import importlib
import json
import shutil
import tempfile
from pathlib import Path

from _common import best_in_turn, measure, met, row

TARGET_MB = 40
BUILD_TARGET, OVERHEAD_TARGET, RSS_TARGET = 2.0, 0.3, 2.0


def case(corpus) -> dict:
    """What ``benchmarks/bench_<corpus>.py`` declares of its build: ``BUILD`` {config, options, peak_rss} and
    ``make_source(folder, megabytes)``, which writes a large source in the upstream format."""
    try:
        module = importlib.import_module(f"bench_{corpus}")
    except ModuleNotFoundError as err:
        if err.name != f"bench_{corpus}":
            raise
        raise SystemExit(f"benchmarks/bench_{corpus}.py: absent; it declares BUILD and make_source") from None
    return {**module.BUILD, "make": module.make_source}


def _sample(corpus) -> Path:
    from qahub.registry import samples_dir

    return samples_dir(corpus)


# --- the measured sides (each in a fresh process; prepare_* runs untimed)


def prepare_build(corpus, data_dir, out, scratch):
    import datasets

    import qahub.export.writer

    datasets.disable_progress_bars()
    qahub.registry.builder_class(corpus)  # the builder module's import, outside the clock
    declared = case(corpus)
    return corpus, data_dir, out, scratch, declared["config"], declared["options"]


def build(corpus, data_dir, out, scratch, config, options) -> int:
    from qahub.export.writer import export

    shutil.rmtree(out, ignore_errors=True)
    report = export(corpus, out, configs=[config], data_dir=data_dir, cache_dir=scratch, builder_options=options)
    return sum(split.rows for split in report.splits)


def import_only(corpus):
    import datasets  # noqa: F401

    import qahub.export.writer
    qahub.registry.builder_module(corpus)


def prepare_floor(data_dir, export_dir, scratch):
    """The rows and schema the export wrote, split by split, read back untimed."""
    import pyarrow.parquet as pq

    splits = {}
    for path in sorted(Path(export_dir).glob("*/*.parquet")):
        splits.setdefault(path.name.split("-")[0], []).append(path)
    tables = {split: [pq.read_table(p) for p in paths] for split, paths in splits.items()}
    rows = {split: [r for t in ts for r in t.to_pylist()] for split, ts in tables.items()}
    schemas = {split: ts[0].schema for split, ts in tables.items()}
    return data_dir, rows, schemas, scratch


def floor(data_dir, rows, schemas, scratch) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in sorted(Path(data_dir).rglob("*")):
        if path.is_file():
            _parse(path)
    out = Path(scratch) / "floor"
    out.mkdir(parents=True, exist_ok=True)
    for split, split_rows in rows.items():
        pq.write_table(pa.Table.from_pylist(split_rows, schema=schemas[split]), out / f"{split}.parquet")
    return sum(len(r) for r in rows.values())


def _parse(path: Path):
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    if path.suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.reader(f, delimiter="\t" if "\t" in f.readline() else ","))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# --- the table


def _verdict(value, target, unit="x"):
    return f"(target <= {target:g}{unit}: {met(value <= target)})"


def _build_rows(corpus, scratch: Path) -> list[dict]:
    declared = case(corpus)
    data = scratch / corpus / "data"
    declared["make"](data, TARGET_MB)
    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    out, work = str(scratch / corpus / "export"), str(scratch / corpus / "cache")
    ours, base, tries = best_in_turn(("bench_builds:build", corpus, str(data), out, work),
                                      ("bench_builds:floor", str(data), out, work))
    times = ours[0] / base[0]
    note = (f"{declared['config']}, {size / 1e6:.0f} MB input, {ours[2]} rows; build {times:.2f}x the floor, "
            f"best of {tries} {_verdict(times, BUILD_TARGET)}")
    rows = [row(f"{corpus} build vs json/csv+write_table", ours, base, note)]
    if declared.get("peak_rss"):
        imports = measure("bench_builds:import_only", corpus)[1]
        above = (ours[1] - imports) * 2**20 / size
        rows.append(row(f"{corpus} train-sized peak RSS", ours, None,
                        f"{ours[1]:.0f} MiB peak - {imports:.0f} MiB imports = {above:.2f}x the {size / 2**20:.0f} MiB "
                        f"source {_verdict(above, RSS_TARGET)}"))
    shutil.rmtree(data)
    return rows


def _overhead_row(corpus, scratch: Path) -> dict:
    data = _sample(corpus)
    ours = measure("bench_builds:build", corpus, str(data), str(scratch / f"{corpus}-tiny"), str(scratch / "tiny-cache"))
    return row(f"{corpus} sample build, fixed cost", ours, None,
               f"{ours[2]} rows, first build in the process {_verdict(ours[0], OVERHEAD_TARGET, ' s')}")


def run(corpora=None) -> list[dict]:
    from qahub import registry

    corpora = corpora or registry.corpus_names()
    scratch = Path(tempfile.mkdtemp(prefix="bench-builds-"))
    try:
        rows = [_overhead_row(corpus, scratch) for corpus in corpora]
        for corpus in corpora:
            rows += _build_rows(corpus, scratch)
        return rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    import sys

    from _common import print_table

    print_table(run(sys.argv[1:] or None))
