"""doc2dial: building `doc2dial_rc` and scoring subtask 1 / subtask 2 on a synthetic release of the real size.

The release zip is not available here, so the sample release is scaled up (untimed) to the size of v1.0.1:
488 documents and 3,474 + 661 dialogues, copies of the sample ones under new ids.
- build: qahub's export (validation, datasets writing the Parquet) vs a bare json.load + row loop + Parquet write
  (no checks). benchmarks/bench_builds.py measures the same build on a >= 40 MB release against the floor
  (``BUILD``, ``make_source``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from _common import copies_for, measure, row

DOCS, TRAIN, VALIDATION = 488, 3474, 661
RELEASE = "doc2dial/v1.0.1"
BUILD = {"config": "doc2dial_rc", "options": {}}


def make_release(folder: Path, factor: int = 1) -> Path:
    """The sample release scaled to ``factor`` times the size of v1.0.1 (documents and dialogues)."""
    from qahub.registry import samples_dir

    docs_count, counts = DOCS * factor, (("train", TRAIN * factor), ("validation", VALIDATION * factor))

    sample = samples_dir("doc2dial") / RELEASE
    docs = json.loads((sample / "doc2dial_doc.json").read_text(encoding="utf-8"))["doc_data"]
    originals = [(domain, doc_id, doc) for domain, by_id in docs.items() for doc_id, doc in by_id.items()]
    dials = []
    for name in ("doc2dial_dial_train.json", "doc2dial_dial_validation.json"):
        data = json.loads((sample / name).read_text(encoding="utf-8"))["dial_data"]
        dials += [d for by_doc in data.values() for ds in by_doc.values() for d in ds]
    index = {(domain, doc_id): j for j, (domain, doc_id, _) in enumerate(originals)}
    copies = {}
    for n in range(docs_count):
        domain, doc_id, doc = originals[n % len(originals)]
        copies.setdefault(domain, {})[f"{doc_id}~{n}"] = dict(doc, doc_id=f"{doc_id}~{n}")
    out = folder / RELEASE
    out.mkdir(parents=True)
    (out / "doc2dial_doc.json").write_text(json.dumps({"doc_data": copies}), encoding="utf-8")
    start = 0
    for name, count in counts:
        data = {}
        for n in range(start, start + count):
            dial = dials[n % len(dials)]
            copy = index[dial["domain"], dial["doc_id"]] + len(originals) * (n % (docs_count // len(originals)))
            doc_id = f"{dial['doc_id']}~{copy}"
            data.setdefault(dial["domain"], {}).setdefault(doc_id, []).append(
                dict(dial, dial_id=f"{dial['dial_id']}{n:05d}", doc_id=doc_id))
        (out / f"doc2dial_dial_{name}.json").write_text(json.dumps({"dial_data": data}), encoding="utf-8")
        start += count
    return folder


def make_source(folder: Path, megabytes: float):
    """The sample release scaled up to at least ``megabytes`` MB of JSON."""
    factor = 1
    while True:
        make_release(folder, factor)
        size = sum(p.stat().st_size for p in folder.rglob("*.json"))
        if size >= megabytes * 1e6:
            return
        factor = copies_for(megabytes, size / factor)  # copies of the sample release
        shutil.rmtree(folder)


def prepare_build_ours(source: str):
    import datasets

    import qahub.export.writer  # noqa: F401  imports are not what is measured

    datasets.disable_progress_bars()
    return (source,)


def build_ours(source: str) -> int:
    from qahub.export.writer import export

    with tempfile.TemporaryDirectory() as tmp:
        report = export("doc2dial", Path(tmp) / "out", configs=["doc2dial_rc"], data_dir=source,
                        cache_dir=str(Path(tmp) / "cache"))
        return sum(split.rows for split in report.splits)


def prepare_build_baseline(source: str):
    import pyarrow.parquet  # noqa: F401

    return (source,)


def build_baseline(source: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(source) / RELEASE
    docs = json.loads((root / "doc2dial_doc.json").read_text(encoding="utf-8"))["doc_data"]
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for split in ("train", "validation"):
            data = json.loads((root / f"doc2dial_dial_{split}.json").read_text(encoding="utf-8"))["dial_data"]
            rows = [r for domain, by_doc in data.items() for doc_id, ds in by_doc.items() for d in ds
                    for r in _bare_rc(domain, doc_id, docs[domain][doc_id], d)]
            pq.write_table(pa.Table.from_pylist(rows), Path(tmp) / f"{split}.parquet")
            total += len(rows)
    return total


def _bare_rc(domain, doc_id, doc, dial):
    turns, history = dial["turns"], []
    for i, turn in enumerate(turns):
        history.append(f"\t{turn['role']}: {turn['utterance']}")
        if turn["role"] == "user" and i + 1 < len(turns) and turns[i + 1]["role"] == "agent":
            spans = [doc["spans"][r["sp_id"]] for r in turns[i + 1]["references"]]
            start = min((s["start_sp"] for s in spans), default=0)
            end = max((s["end_sp"] for s in spans), default=0)
            answers = {"text": [doc["doc_text"][start:end]] if spans else [], "answer_start": [start] if spans else []}
            yield {"id": f"{dial['dial_id']}_{turn['turn_id']}", "title": doc_id, "context": doc["doc_text"],
                   "question": " ".join(" ".join(reversed(history)).split()[:100]), "answers": answers,
                   "is_impossible": not spans, "domain": domain}


def run() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        source = str(make_release(Path(tmp)))
        build = (measure("bench_doc2dial:build_ours", source), measure("bench_doc2dial:build_baseline", source))
    return [row("doc2dial rc build (synthetic full size)", *build, f"rows {build[0][2]} / {build[1][2]}")]
