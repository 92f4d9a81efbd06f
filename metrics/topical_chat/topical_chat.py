"""Topical-Chat response metrics: unigram F1, BLEU-4, distinct-1/2 and knowledge F1."""

import datasets
import evaluate

from .responses import corpus_bleu, distinct, mean, sentence_bleus, tokens, unigram_f1

_CITATION = """\
@inproceedings{gopalakrishnan2019topical,
  author={Karthik Gopalakrishnan and Behnam Hedayatnia and Qinlang Chen and Anna Gottardi and Sanjeev Kwatra \
and Anu Venkatesh and Raefer Gabriel and Dilek Hakkani-T{\\"u}r},
  title={{Topical-Chat: Towards Knowledge-Grounded Open-Domain Conversations}},
  year={2019},
  booktitle={Proc. Interspeech 2019},
  pages={1891--1895}
}
@inproceedings{post-2018-call,
  title = "A Call for Clarity in Reporting {BLEU} Scores",
  author = "Post, Matt",
  booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
  year = "2018",
  pages = "186--191"
}
@inproceedings{li-etal-2016-diversity,
  title = "A Diversity-Promoting Objective Function for Neural Conversation Models",
  author = "Li, Jiwei and Galley, Michel and Brockett, Chris and Gao, Jianfeng and Dolan, Bill",
  booktitle = "Proceedings of NAACL-HLT 2016",
  year = "2016",
  pages = "110--119"
}
"""

_DESCRIPTION = """\
Metrics for responses generated for Topical-Chat turns. Unigram F1 between the response and the human turn,
with SQuAD's normalisation (lowercase, ASCII punctuation and the articles a/an/the removed); BLEU-4 of the
corpus with sacrebleu's defaults; distinct-1 and distinct-2 (Li et al., 2016), the distinct unigrams and
bigrams of all responses divided by all their unigrams and bigrams, on the lowercased responses split by
sacrebleu's 13a tokenizer; knowledge F1, the unigram F1 between the response and the knowledge the human turn
was grounded on, averaged over the examples that have knowledge.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated responses (strings).
    references: list of the human turns (strings), one per prediction.
    knowledge: optional keyword of compute() (not stored by add/add_batch): a list (or tuple), one per
        prediction, of the text of the knowledge the turn was grounded on, or None when there is none. A text
        with no token after the normalisation ("", "  ", "...") counts as none. Examples without knowledge
        are left out of knowledge F1.
    per_example: True to also return "per_example", one {"f1", "bleu", "knowledge_f1"} per prediction
        (default False).
Returns:
    f1: mean unigram F1, 0 to 1.
    bleu: sacrebleu corpus BLEU-4, 0 to 100 (capped: sacrebleu can give 100.00000000000004); bleu_signature: sacrebleu's signature of the settings.
    distinct_1, distinct_2: distinct unigrams / bigrams over all predictions (13a tokens of the lowercased
        text), 0 to 1.
    knowledge_f1: mean unigram F1 against the knowledge over the examples with knowledge, 0 to 1;
        None when no example has knowledge.
    num_examples, num_with_knowledge: how many predictions, and how many of them had knowledge.
    per_example (on request): f1, sentence BLEU (sacrebleu, effective order) and knowledge_f1 (None without
        knowledge) of each prediction.
Raises:
    ValueError: no predictions; a prediction or reference that is not a string ("predictions[i] must be a
        string"); predictions and references of different lengths (evaluate's own check); knowledge that is
        not a list of strings / None of the same length; per_example that is not True or False.
Examples:
    >>> metric = evaluate.load("topical_chat")
    >>> results = metric.compute(predictions=["The cat sat on the mat."],
    ...                          references=["A cat was sitting on the mat!"],
    ...                          knowledge=["A cat sat on a rug."])
    >>> round(results["f1"], 4), round(results["distinct_1"], 4), results["knowledge_f1"]
    (0.6667, 0.8571, 0.75)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TopicalChat(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            codebase_urls=["https://github.com/alexa/Topical-Chat", "https://github.com/mjpost/sacrebleu"],
            reference_urls=["https://arxiv.org/abs/2308.11995"],
        )

    # evaluate checks the type of the first example only and turns numbers, bytes or lists given later into
    # text; these checks refuse them before that
    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one example (checked to be strings)."""
        _expect_strings("prediction", [prediction])
        _expect_strings("reference", [reference])
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of examples (every one checked to be a string)."""
        _expect_strings("predictions", predictions)
        _expect_strings("references", references)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Scores of the predictions (every one checked to be a string first)."""
        _expect_strings("predictions", predictions)
        _expect_strings("references", references)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, knowledge=None, per_example=False):
        if not predictions:
            raise ValueError("topical_chat: no predictions to score")
        if not isinstance(per_example, bool):
            raise ValueError(f"topical_chat: per_example must be True or False, got {per_example!r}")
        knowledge = _knowledge_list(knowledge, len(predictions))
        f1s = [unigram_f1(p, r) for p, r in zip(predictions, references, strict=True)]
        kf1s = [unigram_f1(p, k) if k is not None else None for p, k in zip(predictions, knowledge, strict=True)]
        grounded = [score for score in kf1s if score is not None]
        bleu, signature = corpus_bleu(predictions, references)
        result = {
            "f1": mean(f1s),
            "bleu": bleu,
            "bleu_signature": signature,
            "distinct_1": distinct(predictions, 1),
            "distinct_2": distinct(predictions, 2),
            "knowledge_f1": mean(grounded) if grounded else None,
            "num_examples": len(predictions),
            "num_with_knowledge": len(grounded),
        }
        if per_example:
            bleus = sentence_bleus(predictions, references)
            result["per_example"] = [
                {"f1": f1, "bleu": b, "knowledge_f1": kf1} for f1, b, kf1 in zip(f1s, bleus, kf1s, strict=True)
            ]
        return result


def _expect_strings(name, values):
    if values is None:
        return
    if isinstance(values, (str, bytes)):
        raise ValueError(f"topical_chat: {name} must be a list of strings, got {type(values).__name__}")
    bad = next((i for i, value in enumerate(values) if not isinstance(value, str)), None)
    if bad is not None:
        raise ValueError(f"topical_chat: {name}[{bad}] must be a string, got {values[bad]!r}")


def _knowledge_list(knowledge, count):
    """One knowledge text or None per prediction; a text without a token after the normalisation becomes None."""
    if knowledge is None:
        return [None] * count
    if not isinstance(knowledge, (list, tuple)):
        raise ValueError(f"topical_chat: knowledge must be a list with one text (or None) per prediction, "
                         f"got {type(knowledge).__name__}")
    if len(knowledge) != count:
        raise ValueError(f"topical_chat: {len(knowledge)} knowledge texts for {count} predictions")
    bad = next((i for i, k in enumerate(knowledge) if k is not None and not isinstance(k, str)), None)
    if bad is not None:
        raise ValueError(f"topical_chat: knowledge[{bad}] must be a string or None, got {knowledge[bad]!r}")
    return [k if k is not None and tokens(k) else None for k in knowledge]
