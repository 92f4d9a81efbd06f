"""JEMHopQA build: `qahub` export of all three configs vs a bare json.load + pyarrow Parquet write of the same records."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _common import SHARED_DATA, measure, row

SHARED = SHARED_DATA / "jemhopqa"


def data_dir() -> Path:
    if SHARED.is_dir():
        return SHARED
    from qahub.registry import samples_dir

    return samples_dir("jemhopqa")


def prepare_ours(source: str):
    import datasets

    import qahub.export  # noqa: F401  imports are not what is measured

    datasets.disable_progress_bars()
    return (source,)


def ours(source: str) -> int:
    from qahub.export import export

    with tempfile.TemporaryDirectory() as tmp:
        report = export("jemhopqa", Path(tmp) / "out", data_dir=source)
    return sum(s.rows for s in report.splits)


def prepare_baseline(source: str):
    import pyarrow.parquet  # noqa: F401
    import qahub.loaders.jemhopqa  # noqa: F401

    return (source,)


def baseline(source: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from qahub.loaders.jemhopqa import _FILES

    rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        for config, files in _FILES.items():
            for split, rel in files.items():
                records = json.loads((Path(source) / rel).read_text(encoding="utf-8"))
                for record in records:  # pyarrow cannot type the mixed [str, str, list] triples
                    record["derivations"] = [{"subject": s, "relation": r, "objects": o} for s, r, o in record["derivations"]]
                pq.write_table(pa.Table.from_pylist(records), Path(tmp) / f"{config}-{split}.parquet")
                rows += len(records)
    return rows


def run() -> list[dict]:
    source = str(data_dir())
    ours_m = measure("bench_jemhopqa_build:ours", source)
    base_m = measure("bench_jemhopqa_build:baseline", source)
    assert ours_m[2] == base_m[2], f"row counts differ: {ours_m[2]} vs {base_m[2]}"
    note = f"{ours_m[2]} rows, 3 configs, from {'../shared/data' if source == str(SHARED) else 'the bundled sample'}"
    return [row("jemhopqa build (export / json+parquet)", ours_m, base_m, note)]


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
