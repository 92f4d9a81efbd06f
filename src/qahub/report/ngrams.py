"""Word n-grams of many segments at once, as integer ids (numpy), for BLEU's sufficient statistics and
distinct-n: the same numbers as sacrebleu's per-segment Counter code, without a Python loop per n-gram."""

from __future__ import annotations

import functools
import re

import numpy as np

SEPARATOR = "\x01"  # not whitespace, no 13a rule touches it, and each segment keeps the padding spaces 13a gives it alone


def tokenize(tokenizer, segments) -> tuple[np.ndarray, np.ndarray]:
    """``_tokenize`` of the segments, the last few results kept: distinct-1 and distinct-2 read the same
    replies, and every run the same references."""
    return _tokenize(tokenizer, tuple(segments))


@functools.lru_cache(maxsize=4)
def _tokenize(tokenizer, segments: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The tokens (an object array) of sacrebleu's 13a ``tokenizer`` over all segments and each one's number of
    tokens. The tokenizer runs once over the segments joined by a separator (its rules look one character
    around a match, and around a segment they see the same spaces as alone); once per segment when a segment
    holds the separator."""
    if any(SEPARATOR in s for s in segments):
        split = [tokenizer(s).split() for s in segments]
        return np.array([tok for toks in split for tok in toks], dtype=object), np.array([len(x) for x in split])
    tokens = np.array(_13a(tokenizer)(f" {SEPARATOR} ".join(segments) + f" {SEPARATOR}").split(), dtype=object)
    ends = np.flatnonzero(tokens == SEPARATOR)
    return np.delete(tokens, ends), np.diff(ends, prepend=-1) - 1


def _13a(tokenizer):
    """A 13a ``tokenizer`` without its lru_cache (the joined line is huge), its rules run as ``re.split`` with the
    replacement put around the split-out groups (Python 3.11 runs Python code for every match of a template with
    group references): the same tokens. Any tokenizer but sacrebleu 2's 13a runs as it is."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    rules = getattr(getattr(tokenizer, "_post_tokenizer", None), "_re", None)
    if type(tokenizer) is not Tokenizer13a or [(rule.pattern, template) for rule, template in rules or ()] != _RULES:
        return getattr(type(tokenizer).__call__, "__wrapped__", tokenizer.__call__).__get__(tokenizer)
    # rule 1 leaves out the space (padding it only adds spaces, which the last step collapses): a match per space else
    pad = re.compile("([" + re.escape("".join(c for c in map(chr, range(33, 128)) if rules[0][0].fullmatch(c))) + "])")
    steps = [_split_sub(pad, rules[0][1])] + [_split_sub(rule, template) for rule, template in rules[1:]]

    def call(line):
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
        line = f" {line} "
        for step in steps:
            line = step(line)
        return " ".join(line.split())

    return call


def _split_sub(rule, template):
    """``rule.sub(template, line)`` for a template that names each of the rule's groups once, in order, with text
    around them (no group of these rules can be unmatched)."""
    pieces = re.split(r"\\([1-9])", template)  # text, group number, text, ..., text
    texts, width = pieces[::2], rule.groups + 1
    formats = [texts[i] + "{}" + (texts[-1] if i == rule.groups - 1 else "") for i in range(rule.groups)]

    def sub(line):
        parts = rule.split(line)
        for i, form in enumerate(formats, 1):
            parts[i::width] = map(form.format, parts[i::width])
        return "".join(parts)

    return sub


# sacrebleu 2's 13a rules (sacrebleu/tokenizers/tokenizer_re.py): pad ASCII punctuation; split off a period or
# comma unless a digit is before it, or after it; a dash after a digit
_RULES = [(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 "), (r"([^0-9])([\.,])", r"\1 \2 "),
          (r"([\.,])([^0-9])", r" \1 \2"), (r"([0-9])(-)", r"\1 \2 ")]


def token_ids(tokenized: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Ids of ``tokenize``'s tokens (pandas.factorize: equal tokens, equal ids) and the segments' lengths."""
    import pandas

    tokens, lengths = tokenized
    return pandas.factorize(tokens)[0].astype(np.int64), lengths.astype(np.int64)


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
    hyps, refs = ([(s.lower() if metric.lowercase else s).rstrip() for s in side] for side in (hypotheses, references))
    (hyp_tokens, hyp_lengths), (ref_tokens, ref_lengths) = tokenize(metric.tokenizer, hyps), tokenize(metric.tokenizer, refs)
    ids, lengths = token_ids((np.concatenate([hyp_tokens, ref_tokens]), np.concatenate([hyp_lengths, ref_lengths])))
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
