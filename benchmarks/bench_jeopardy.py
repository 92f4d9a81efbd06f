"""Russian QA Jeopardy: ``BUILD`` and ``make_source``, what ``bench_builds.py`` exports of it from a >= 40 MB source
(the metric's own benchmark is ``bench_jeopardy_meteor.py``)."""

from __future__ import annotations

import csv
from pathlib import Path

from _common import SHARED_DATA

BUILD = {"config": "extended", "options": {}}
VALIDATION = "Russian_QA_Jeopardy_dataset_extended_validation.csv"
HEADER = ["QuestionID", "QuestionNumber", "QuestionText", "Answer", "Topic", "Source", "Author Full Name",
          "TourName", "TourLink"]


def make_source(folder: Path, megabytes: float):
    """The extended (tab-separated) file, its questions and answers taken from the real validation file."""
    from qahub.registry import samples_dir

    real = SHARED_DATA / "jeopardy" / VALIDATION
    source = real if real.is_file() else samples_dir("jeopardy") / VALIDATION
    with open(source, encoding="utf-8", newline="") as f:
        pairs = list(csv.reader(f))[1:]
    folder.mkdir(parents=True)
    with open(folder / "Russian_QA_Jeopardy_dataset_extended.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(HEADER)
        i = 0
        while f.tell() < megabytes * 1e6:
            question, answer = pairs[i % len(pairs)]
            writer.writerow([i, i % 5 + 1, question, answer, f"ТЕМА {i % 997}", "None" if i % 3 else "Источник",
                             "Иван Петров", f'"Своя игра". Тур {i // 50}', f"https://example.org/tour/{i // 50}"])
            i += 1
