"""Reading a model's reply: never raises. What cannot be read as text is ``unparseable`` and scored as empty."""

from .checks import is_text
from .squad_v2_scoring import normalize_answer

NO_ANSWER = "NO ANSWER"  # the reply the grounding prompt asks for when the document has no span


def read_reply(reply):
    """``(text, unparseable)``: a string without lone surrogates as it is, anything else ``("", True)``."""
    if not is_text(reply):
        return "", True
    return reply, False


def one_line(text):
    """``text`` with every run of whitespace (line breaks included) made one space, stripped."""
    return " ".join(text.split())


def bleu_line(text):
    """``text`` on one line, tokenized by sacreBLEU's 13a exactly as ``text`` itself: 13a strips the right end,
    deletes ``<skipped>`` and a hyphen before a line break, then splits on whitespace."""
    return one_line(text.rstrip().replace("<skipped>", "").replace("-\n", ""))


def span_reply(reply, no_answer_text=NO_ANSWER):
    """``(span, unparseable)`` of a grounding reply: ``read_reply``, and a reply that SQuAD-normalises to
    ``no_answer_text`` (e.g. "No answer.") is the empty span. ``no_answer_text=None`` keeps every text as is."""
    text, unparseable = read_reply(reply)
    if no_answer_text is not None and len(text) < 4 * len(no_answer_text) + 40:  # a long reply is no such phrase
        if normalize_answer(text) == normalize_answer(no_answer_text):
            return "", unparseable
    return text, unparseable
