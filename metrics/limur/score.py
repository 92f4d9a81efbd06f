"""One scorer for one reply, shared by the ``limur`` metric and the lm-evaluation-harness task (``task_api``)."""

from .answers import LETTERS, read_letters, reply_text
from .mera import exact_match_mera

# what the metric, `qahub evaluate limur` and the inspect task say when every answer is closed
ALL_CLOSED = "nothing to score: {answers} are closed in {where}; score validation, or pass the open answers"


def all_closed(golds) -> bool:
    """Whether there are gold answers (raw ``outputs``) and every one is closed (``""`` or None), as in MERA's
    public test split: then nothing can be scored (a score of it would be 0.0 for nothing)."""
    golds = list(golds)
    return bool(golds) and not any((gold or "").strip() for gold in golds)


def score_reply(reply, gold, n_options):
    """Per-example values of one reply against the raw gold ``outputs`` string (``""``: closed answer).

    Never raises on the reply: None or a non-string is an empty reply. ``strict`` / ``lenient`` are the seed's
    exact match (0 for a closed answer); ``mera`` is MERA's ``exact_match``.
    """
    text = reply_text(reply)
    letter = gold.strip()
    row = {"closed": not letter}
    for mode, (read, _) in zip(("strict", "lenient"), read_letters(text), strict=True):
        row[f"{mode}_letter"] = read
        row[f"{mode}_offered"] = read is not None and LETTERS.index(read) < n_options
        row[mode] = int(bool(letter) and read == letter)
    row["mera"] = exact_match_mera(text, gold)
    return row
