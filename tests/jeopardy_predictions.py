"""Realistic noisy predictions for Russian QA Jeopardy answers, shared by the tests and the benchmark."""

import random


def perturb(answers, seed=0):
    """One prediction per answer: exact, reordered, shortened, or another answer; half of them lowercased."""
    rng = random.Random(seed)
    out = []
    for gold in answers:
        words, kind = gold.split(), rng.randrange(4)
        if kind == 1 and len(words) > 1:
            words = words[::-1]
        elif kind == 2 and len(words) > 1:
            words = words[1:]
        elif kind == 3:
            words = rng.choice(answers).split()
        out.append(" ".join(words).lower() if rng.random() < 0.5 else " ".join(words))
    return out
