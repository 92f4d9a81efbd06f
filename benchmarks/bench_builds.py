"""Builds against their floor (issue 14): every corpus exported from a >= 40 MB input in its upstream format.

- ``<corpus> build``: ``qahub.export.export`` of one config (the Parquet folder a user publishes) against the
  floor: parse the same source files with ``json`` / ``csv`` and ``pyarrow.parquet.write_table`` the same rows
  with the export's own schema. Best of 3 fresh processes each, the two sides in turn; imports outside the
  clock. Target <= 2x.
- ``<corpus> 10-row build``: the fixed cost of one export of the bundled sample, the first build in a fresh
  process after the imports. Target <= 0.3 s.
- ``topical_chat train-sized peak RSS``: the build's peak RSS above the footprint of the imports alone, against
  the source size. Target <= 2x.

The inputs are synthetic scale-ups (untimed) of the bundled samples and of the real files in ../shared/data,
records cycled under new ids, to >= 40 MB of upstream-format files.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from pathlib import Path

from _common import SHARED_DATA, measure, row

TARGET_MB = 40
BUILD_TARGET, OVERHEAD_TARGET, RSS_TARGET = 2.0, 0.3, 2.0
# corpus -> (config, builder options)
CASES = {
    "jemhopqa": ("v1.2", {}),
    "jeopardy": ("extended", {}),
    "doc2dial": ("doc2dial_rc", {}),
    "limur": ("all", {}),
    "topical_chat": ("conversations", {"splits": ("train",)}),
}


# --- the large inputs


def _sample(corpus) -> Path:
    from qahub.registry import samples_dir

    return samples_dir(corpus)


def _copies(count, size_of_one):
    """How many copies of something of ``size_of_one`` bytes make TARGET_MB (a little over)."""
    return int(TARGET_MB * 1e6 / size_of_one * 1.05) + 1


def make_jemhopqa(folder: Path):
    real = SHARED_DATA / "jemhopqa"
    root = real if real.is_dir() else _sample("jemhopqa")
    records = json.loads((root / "corpus_ver1.2/train_ver1.2.json").read_text(encoding="utf-8"))
    one = len(json.dumps(records, ensure_ascii=False).encode()) / len(records)
    many = [{**records[i % len(records)], "qid": f"bench{i:08d}"} for i in range(_copies(1, one))]
    (folder / "corpus_ver1.2").mkdir(parents=True)
    (folder / "corpus_ver1.2/train_ver1.2.json").write_text(json.dumps(many, ensure_ascii=False, indent=1), encoding="utf-8")
    shutil.copy(root / "corpus_ver1.2/dev_ver1.2.json", folder / "corpus_ver1.2/dev_ver1.2.json")


def make_jeopardy(folder: Path):
    """The extended (tab-separated) file, its questions and answers taken from the real validation file."""
    real = SHARED_DATA / "jeopardy" / "Russian_QA_Jeopardy_dataset_extended_validation.csv"
    source = real if real.is_file() else _sample("jeopardy") / "Russian_QA_Jeopardy_dataset_extended_validation.csv"
    with open(source, encoding="utf-8", newline="") as f:
        pairs = list(csv.reader(f))[1:]
    header = ["QuestionID", "QuestionNumber", "QuestionText", "Answer", "Topic", "Source", "Author Full Name",
              "TourName", "TourLink"]
    path = folder / "Russian_QA_Jeopardy_dataset_extended.csv"
    folder.mkdir(parents=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(header)
        i = 0
        while f.tell() < TARGET_MB * 1e6:
            question, answer = pairs[i % len(pairs)]
            writer.writerow([i, i % 5 + 1, question, answer, f"ТЕМА {i % 997}", "None" if i % 3 else "Источник",
                             "Иван Петров", f'"Своя игра". Тур {i // 50}', f"https://example.org/tour/{i // 50}"])
            i += 1


def make_doc2dial(folder: Path):
    from bench_doc2dial import make_release

    factor = 1
    while True:
        make_release(folder, factor)
        size = sum(p.stat().st_size for p in folder.rglob("*.json"))
        if size >= TARGET_MB * 1e6:
            return
        factor = int(factor * TARGET_MB * 1e6 / size * 1.05) + 1
        shutil.rmtree(folder)


def make_limur(folder: Path):
    sample = _sample("limur")
    lines = [line for name in ("dev.jsonl", "test.jsonl", "shots.jsonl")
             for line in (sample / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    one = sum(len(line.encode()) + 1 for line in lines) / len(lines)
    folder.mkdir(parents=True)
    with open(folder / "train.jsonl", "w", encoding="utf-8") as f:
        for i in range(_copies(1, one)):
            record = records[i % len(records)]
            f.write(json.dumps({**record, "meta": {**record["meta"], "id": i}}, ensure_ascii=False) + "\n")


def make_topical_chat(folder: Path):
    """conversations/train.json: the real (else sample) conversations cycled under new ids, compact JSON."""
    real = SHARED_DATA / "topical_chat"
    root = real if (real / "conversations" / "valid_freq.json").is_file() else _sample("topical_chat")
    pool = []
    for split in ("valid_freq", "valid_rare", "test_freq", "test_rare"):
        pool += json.loads((root / "conversations" / f"{split}.json").read_text(encoding="utf-8")).values()
    one = sum(len(json.dumps(c, separators=(",", ":")).encode()) for c in pool) / len(pool)
    train = {f"t_bench-{i:06d}": pool[i % len(pool)] for i in range(_copies(1, one))}
    path = folder / "conversations" / "train.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(train, separators=(",", ":")), encoding="utf-8")


MAKERS = {"jemhopqa": make_jemhopqa, "jeopardy": make_jeopardy, "doc2dial": make_doc2dial, "limur": make_limur,
          "topical_chat": make_topical_chat}


# --- the measured sides (each in a fresh process; prepare_* runs untimed)


def prepare_build(corpus, data_dir, out, scratch):
    import datasets

    import qahub.export

    datasets.disable_progress_bars()
    qahub.registry.builder_class(corpus)  # the builder module's import, outside the clock
    return corpus, data_dir, out, scratch


def build(corpus, data_dir, out, scratch) -> int:
    from qahub.export import export

    config, options = CASES[corpus]
    shutil.rmtree(out, ignore_errors=True)
    report = export(corpus, out, configs=[config], data_dir=data_dir, cache_dir=scratch, builder_options=options)
    return sum(split.rows for split in report.splits)


def import_only():
    import datasets  # noqa: F401
    import qahub.loaders.topical_chat  # noqa: F401

    import qahub.export  # noqa: F401


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


def _best_in_turn(ours, base, runs=3):
    """The best of ``runs`` of each side, the sides run in turn: on a shared machine whose speed drifts, both then
    meet the same stretches of it (three of one side and then three of the other may not)."""
    results = [(measure(*ours), measure(*base)) for _ in range(runs)]
    return tuple(min((pair[side] for pair in results), key=lambda result: result[0]) for side in (0, 1))


def _verdict(value, target, unit="x"):
    return f"(target <= {target:g}{unit}: {'ok' if value <= target else 'MISSED'})"


def _build_rows(corpus, scratch: Path) -> list[dict]:
    data = scratch / corpus / "data"
    MAKERS[corpus](data)
    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    out, work = str(scratch / corpus / "export"), str(scratch / corpus / "cache")
    ours, base = _best_in_turn(("bench_builds:build", corpus, str(data), out, work),
                               ("bench_builds:floor", str(data), out, work))
    times = ours[0] / base[0]
    note = (f"{CASES[corpus][0]}, {size / 1e6:.0f} MB input, {ours[2]} rows; build {times:.2f}x the floor "
            f"{_verdict(times, BUILD_TARGET)}")
    rows = [row(f"{corpus} build vs json/csv+write_table", ours, base, note)]
    if corpus == "topical_chat":
        imports = measure("bench_builds:import_only")[1]
        above = (ours[1] - imports) * 2**20 / size
        rows.append(row("topical_chat train-sized peak RSS", ours, None,
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
    scratch = Path(tempfile.mkdtemp(prefix="bench-builds-"))
    try:
        rows = [_overhead_row(corpus, scratch) for corpus in corpora or CASES]
        for corpus in corpora or CASES:
            rows += _build_rows(corpus, scratch)
        return rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    import sys

    from _common import print_table

    print_table(run(sys.argv[1:] or None))
