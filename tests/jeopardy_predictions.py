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


# What models reply when nothing goes right: blank, a 10,000-character ramble, markdown, broken JSON, a lone
# surrogate, no reply at all.
GARBAGE = ["", "   \n\t", "слово " * 1700, "**Ответ:** *Рим*", '{"answer": "Ри', "\ud800", None]
FORMS = ["{}", " {}", "Ответ: {}", "**Ответ:** {}", "«{}».", "{}\nПояснение: это известный факт.", "Ответ: Пас"]


def replies(answers, seed=0, garbage=0.0):
    """Model-like replies to ``answers``: ``perturb``'s answers in the forms chat models use, and a share
    ``garbage`` of the replies from ``GARBAGE``."""
    rng = random.Random(seed)
    out = []
    for answer in perturb(answers, seed):
        out.append(rng.choice(GARBAGE) if rng.random() < garbage else rng.choice(FORMS).format(answer))
    return out
