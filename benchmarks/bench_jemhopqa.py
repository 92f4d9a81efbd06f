"""JEMHopQA build: `qahub` export of all three configs vs a bare json.load + pyarrow Parquet write of the same records.

``BUILD`` and ``make_source``: what ``bench_builds.py`` exports of JEMHopQA, from a >= 40 MB source."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from _common import SHARED_DATA, copies_for, measure, row

SHARED = SHARED_DATA / "jemhopqa"
BUILD = {"config": "v1.2", "options": {}}


def data_dir() -> Path:
    if SHARED.is_dir():
        return SHARED
    from qahub.registry import samples_dir

    return samples_dir("jemhopqa")


def make_source(folder: Path, megabytes: float):
    """corpus_ver1.2: the real (else sample) train records cycled under new ids, and the dev file as it is."""
    root = data_dir()
    records = json.loads((root / "corpus_ver1.2/train_ver1.2.json").read_text(encoding="utf-8"))
    one = len(json.dumps(records, ensure_ascii=False).encode()) / len(records)
    many = [{**records[i % len(records)], "qid": f"bench{i:08d}"} for i in range(copies_for(megabytes, one))]
    (folder / "corpus_ver1.2").mkdir(parents=True)
    (folder / "corpus_ver1.2/train_ver1.2.json").write_text(json.dumps(many, ensure_ascii=False, indent=1),
                                                           encoding="utf-8")
    shutil.copy(root / "corpus_ver1.2/dev_ver1.2.json", folder / "corpus_ver1.2/dev_ver1.2.json")


def prepare_ours(source: str):
    import datasets

    import qahub.export.writer  # noqa: F401  imports are not what is measured

    datasets.disable_progress_bars()
    return (source,)


def ours(source: str) -> int:
    from qahub import registry
    from qahub.export.writer import export

    with tempfile.TemporaryDirectory() as tmp:  # the builder's configs: the training ones are bench_training's
        report = export("jemhopqa", Path(tmp) / "out", data_dir=source, configs=registry.config_names("jemhopqa"))
    return sum(s.rows for s in report.splits)


def prepare_baseline(source: str):
    import pyarrow.parquet  # noqa: F401
    import qahub.loaders.jemhopqa  # noqa: F401

    return (source,)


def baseline(source: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from qahub.loaders.jemhopqa import SOURCE

    rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        for config, files in SOURCE.files.items():
            for split, rel in files.items():
                records = json.loads((Path(source) / rel).read_text(encoding="utf-8"))
                for record in records:  # pyarrow cannot type the mixed [str, str, list] triples
                    record["derivations"] = [{"subject": s, "relation": r, "objects": o} for s, r, o in record["derivations"]]
                pq.write_table(pa.Table.from_pylist(records), Path(tmp) / f"{config}-{split}.parquet")
                rows += len(records)
    return rows


def run() -> list[dict]:
    source = str(data_dir())
    ours_m = measure("bench_jemhopqa:ours", source)
    base_m = measure("bench_jemhopqa:baseline", source)
    assert ours_m[2] == base_m[2], f"row counts differ: {ours_m[2]} vs {base_m[2]}"
    note = f"{ours_m[2]} rows, 3 configs, from {'../shared/data' if source == str(SHARED) else 'the bundled sample'}"
    return [row("jemhopqa build (export / json+parquet)", ours_m, base_m, note)]


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
