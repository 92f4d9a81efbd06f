"""Word n-grams of many segments at once, as integer ids (numpy), for BLEU's sufficient statistics and
distinct-n: the same numbers as sacrebleu's per-segment Counter code, without a Python loop per n-gram."""

from __future__ import annotations

import numpy as np

SEPARATOR = "\x01"  # not whitespace, no 13a rule touches it, and each segment keeps the padding spaces 13a gives it alone


def tokenize(tokenizer, segments) -> list[str]:
    """sacrebleu's 13a ``tokenizer`` of each segment, run once over the segments joined by a separator (its
    rules look one character around a match, and around a segment they see the same spaces as alone); one
    call per segment when a segment holds the separator. Returns the tokens, a separator after each segment."""
    call = getattr(type(tokenizer).__call__, "__wrapped__", None)  # past its lru_cache: one huge line
    if call is None or any(SEPARATOR in s for s in segments):
        return [tok for s in segments for tok in (*tokenizer(s).split(), SEPARATOR)]
    return call(tokenizer, f" {SEPARATOR} ".join(segments) + f" {SEPARATOR}").split()


def token_ids(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the tokens (pandas.factorize) and each segment's number of tokens, from ``tokenize``'s output."""
    import pandas

    tokens = np.array(tokens, dtype=object)
    ends = np.flatnonzero(tokens == SEPARATOR)
    words = np.delete(tokens, ends)
    return pandas.factorize(words)[0].astype(np.int64), np.diff(ends, prepend=-1) - 1


def grams(ids: np.ndarray, lengths: np.ndarray, max_order: int):
    """For each order k = 1..max_order: (segment, gram id) of every k-gram inside one segment; equal k-grams
    have equal ids."""
    segment = np.repeat(np.arange(len(lengths)), lengths)
    remaining = lengths[segment] - (np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths))
    current, width = ids, int(ids.max(initial=0)) + 1
    for k in range(1, max_order + 1):
        if k > 1:  # the k-gram at i: the (k-1)-gram at i, then token i+k-1
            current = np.unique(current[:-1] * width + ids[k - 1:], return_inverse=True)[1].astype(np.int64)
        valid = remaining[: len(current)] >= k
        yield segment[: len(current)][valid], current[valid]


def _counts(segment, gram, size):
    keys, counts = np.unique(segment * size + gram, return_counts=True)
    return keys, counts


def bleu_statistics(hypotheses, references, metric) -> np.ndarray:
    """sacrebleu ``metric``'s (BLEU, one reference each) per-segment statistics: [hyp_len, ref_len,
    correct_1..n, total_1..n] (documents x 2+2n); its ``_preprocess_segment`` is lowercasing, then the
    tokenizer of the right-stripped segment."""
    max_order = metric.max_ngram_order
    n = len(hypotheses)
    segments = [s.lower() if metric.lowercase else s for s in [*hypotheses, *references]]
    ids, lengths = token_ids(tokenize(metric.tokenizer, [s.rstrip() for s in segments]))
    stats = np.zeros((n, 2 + 2 * max_order), dtype=np.int64)
    stats[:, 0], stats[:, 1] = lengths[:n], lengths[n:]
    for k, (segment, gram) in enumerate(grams(ids, lengths, max_order)):
        size = int(gram.max(initial=0)) + 1
        hyp, ref = segment < n, segment >= n
        hyp_keys, hyp_counts = _counts(segment[hyp], gram[hyp], size)
        ref_keys, ref_counts = _counts(segment[ref] - n, gram[ref], size)
        _, ih, ir = np.intersect1d(hyp_keys, ref_keys, assume_unique=True, return_indices=True)
        matched = np.minimum(hyp_counts[ih], ref_counts[ir])
        stats[:, 2 + k] = np.bincount(hyp_keys[ih] // size, weights=matched, minlength=n).astype(np.int64)
        stats[:, 2 + max_order + k] = np.maximum(stats[:, 0] - k, 0)
    return stats


def distinct_table(tokenizer, segments, order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document, n-gram id) of each distinct n-gram of each tokenized segment, and each one's number of n-grams."""
    ids, lengths = token_ids(tokenize(tokenizer, segments))
    segment, gram = next(g for k, g in enumerate(grams(ids, lengths, order), 1) if k == order)
    size = int(gram.max(initial=0)) + 1
    keys = np.unique(segment * size + gram)
    return keys // size, keys % size, np.maximum(lengths - order + 1, 0)
