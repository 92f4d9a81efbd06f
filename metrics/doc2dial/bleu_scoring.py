"""Corpus sacreBLEU, with the defaults of the `sacrebleu` metric the DialDoc21 scorer loads."""

import collections
import itertools
import math

# appended to the installed sacreBLEU's signature when score and precisions are not its own numbers
ZERO_MATCH_SIGNATURE = "|zero-match:sacrebleu-1.4.3-exp-smoothing"


def corpus_sacrebleu(predictions, references):
    """``predictions`` and ``references`` are aligned lists of strings (one reference per prediction)."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU()  # 13a tokenizer, exponential smoothing, case-sensitive, no effective order
    sys_len, ref_len, counts, totals = corpus_statistics(bleu.tokenizer, predictions, references)
    score, precisions, result, zero_match = _scored(counts, totals, sys_len, ref_len)
    bleu.num_refs = 1  # what corpus_score records; the signature says nrefs:1
    signature = str(bleu.get_signature()) + (ZERO_MATCH_SIGNATURE if zero_match else "")
    return {
        "score": score,
        "counts": counts,
        "totals": totals,
        "precisions": precisions,
        "bp": result.bp,
        "sys_len": result.sys_len,
        "ref_len": result.ref_len,
        "signature": signature,
        "zero_match_1_4_3": zero_match,
    }


def bleu_of_statistics(stats):
    """sacreBLEU's corpus BLEU (13a, exp smoothing), with sacreBLEU 1.4.3's smoothing where no unigram matches
    (signature ...|zero-match:sacrebleu-1.4.3-exp-smoothing). From summed segment statistics ``[sys_len, ref_len,
    4 matches, 4 totals]`` (sacreBLEU's ``_extract_corpus_statistics`` rows): the score ``corpus_sacrebleu`` gives
    those segments; what ``qahub report`` scores each resample of the documents with."""
    return _scored(list(stats[2:6]), list(stats[6:10]), int(stats[0]), int(stats[1]))[0]


def _scored(counts, totals, sys_len, ref_len):
    """(score, precisions, sacreBLEU's result, whether no unigram matched) of corpus statistics."""
    from sacrebleu.metrics import BLEU

    result = BLEU.compute_bleu(counts, totals, sys_len, ref_len, smooth_method="exp")
    zero_match = counts[0] == 0 and totals[0] > 0
    if zero_match:
        return (*smoothed_without_matches(counts, totals, result.sys_len, result.ref_len), result, True)
    return result.score, list(result.precisions), result, False


def corpus_statistics(tokenizer, predictions, references):
    """``(sys_len, ref_len, counts, totals)`` of sacreBLEU's ``corpus_score`` with one reference per prediction
    (the same tokens and n-grams; matches counted over the n-grams both sides share)."""
    sys_len = ref_len = 0
    counts, totals = [0] * 4, [0] * 4
    for prediction, reference in zip(predictions, references, strict=True):
        hyp, hyp_len = _ngrams(tokenizer(prediction.rstrip()))
        ref, length = _ngrams(tokenizer(reference.rstrip()))
        sys_len, ref_len = sys_len + hyp_len, ref_len + length
        for n in range(min(hyp_len, 4)):
            totals[n] += hyp_len - n
        for gram in hyp.keys() & ref.keys():
            counts[len(gram) - 1] += min(hyp[gram], ref[gram])
    return sys_len, ref_len, counts, totals


def _ngrams(line):
    """The 1- to 4-grams of a tokenized line (as tuples) and its number of tokens."""
    t = line.split()
    grams = itertools.chain(zip(t), zip(t, t[1:]), zip(t, t[1:], t[2:]), zip(t, t[1:], t[2:], t[3:]))
    return collections.Counter(grams), len(t)


def smoothed_without_matches(counts, totals, sys_len, ref_len):
    """Score and precisions when no unigram matches at all.

    sacreBLEU 2 returns 0 there; sacreBLEU 1.4.3, the version the shared task pins, still applies exponential
    smoothing: each n-gram order without matches gets precision 100 / (2**k * total) for its k-th such order.
    """
    precisions = [0.0] * len(totals)
    factor = 1.0
    for n, (correct, total) in enumerate(zip(counts, totals, strict=True)):
        if total == 0:
            break
        if correct == 0:
            factor *= 2
            precisions[n] = 100.0 / (factor * total)
        else:
            precisions[n] = 100.0 * correct / total
    penalty = 1.0
    if sys_len < ref_len:
        penalty = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    logs = sum(math.log(p) if p else -9999999999 for p in precisions)
    return penalty * math.exp(logs / len(precisions)), precisions
