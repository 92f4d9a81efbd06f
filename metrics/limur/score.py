"""One scorer for one reply, shared by the ``limur`` metric and the lm-evaluation-harness task (``task_api``)."""

from .answers import LETTERS, read_letters, reply_text
from .mera import exact_match_mera


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
