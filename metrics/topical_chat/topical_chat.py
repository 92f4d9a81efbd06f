"""Topical-Chat response metrics: unigram F1, BLEU-4, distinct-1/2 and knowledge F1."""

import json

import evaluate

# evaluate copies only the helpers this file imports: task_spec (the type of task_api.TASKS) too
from .checks import is_text
from .direct_metric import JSON_TEXT, DirectMetric
from .direct_score import score, score_checked
from .inputs import check_options, encode, examples
from .replies import summary
from .responses import unigram_f1
from .task_api import TASKS
from .task_spec import TaskSpec
from .turns import turn_examples

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
was grounded on, averaged over the examples that have knowledge. The references may be the conversation rows
of the corpus as load_dataset yields them (predictions are then records naming a conversation and a turn).
A response is any object: what is not a readable string is counted as unparseable and scored as empty.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the generated responses. With conversation rows as references: records
        {"conversation_id": str, "turn_index": int (1 or more), "response": the generated text}, in any number
        and order. Otherwise one response per reference. A response (reply) may be any object: None, a
        non-string or a string with lone surrogates is unparseable and scored as an empty response (0).
        Replies are read on one line (whitespace collapsed) without a leading speaker label ("agent_2:").
    references: one of (all of the same kind)
        - conversation rows of the `conversations` or `asr` config, as load_dataset yields them (a Dataset
          or a list of dicts): every turn from turn 1 on is an example (turn 0 opens the conversation);
        - turn examples as turns.turn_examples makes them ({"history", "response", "knowledge", ...}), one
          per prediction;
        - the human turns as strings, one per prediction.
    reading_sets: optional keyword of compute() with conversation rows: the rows of the `reading_sets` config
        of the same split (Dataset or list of dicts), for knowledge F1.
    knowledge: optional keyword of compute() with string references: a list (or tuple), one per prediction,
        of the text of the knowledge the turn was grounded on, or None when there is none. A text with no
        token after the normalisation ("", "  ", "...") counts as none. Examples without knowledge are left
        out of knowledge F1.
    per_example: True to also return "per_example", one {"f1", "bleu", "knowledge_f1", "unparseable"} per
        prediction (plus "conversation_id" and "turn_index" when the references say them) (default False).
Returns:
    f1: mean unigram F1, 0 to 1.
    bleu: sacrebleu corpus BLEU-4, 0 to 100 (capped: sacrebleu can give 100.00000000000004); bleu_signature: sacrebleu's signature of the settings.
    distinct_1, distinct_2: distinct unigrams / bigrams over all predictions (13a tokens of the lowercased
        text), 0 to 1.
    knowledge_f1: mean unigram F1 against the knowledge over the examples with knowledge, 0 to 1;
        None when no example has knowledge.
    num_examples, num_with_knowledge: how many predictions, and how many of them had knowledge.
    unparseable: how many replies could not be read (scored as empty responses).
    reference_turns, turns_without_prediction: the example turns of the references, and how many of them
        have no prediction (not scored; 0 unless the references are conversation rows).
    per_example (on request): f1, sentence BLEU (sacrebleu, effective order), knowledge_f1 (None without
        knowledge) and unparseable (0/1) of each prediction.
Raises:
    ValueError: no predictions (zero examples: nothing is scored, so no score is given); a reference of the wrong shape (naming it and the problem); a prediction
        record that is not {"conversation_id", "turn_index", "response"} or names a turn the references do not
        have (all such records are named); numbers of predictions and references that differ (strings or turn
        examples); knowledge or reading_sets of the wrong shape or for the wrong kind of references;
        per_example that is not True or False.
Examples:
    >>> metric = evaluate.load("topical_chat")
    >>> results = metric.compute(predictions=["The cat sat on the mat."],
    ...                          references=["A cat was sitting on the mat!"],
    ...                          knowledge=["A cat sat on a rug."])
    >>> round(results["f1"], 4), round(results["distinct_1"], 4), results["knowledge_f1"]
    (0.6667, 0.8571, 0.75)
"""

# evaluate copies only the helper modules this file imports: each is imported here, and these names exported
__all__ = ["TASKS", "TaskSpec", "TopicalChat", "examples", "is_text", "score", "summary", "turn_examples", "unigram_f1"]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TopicalChat(DirectMetric):
    """``compute(predictions=..., references=...)`` with nothing added before checks and scores directly;
    add/add_batch store each batch as one row of JSON in evaluate's cache (ASCII, so lone surrogates survive):
    predictions and references may then differ in number (conversation rows)."""

    INFO = {"description": _DESCRIPTION, "citation": _CITATION, "inputs_description": _KWARGS_DESCRIPTION,
            "features": JSON_TEXT,
            "codebase_urls": ["https://github.com/alexa/Topical-Chat", "https://github.com/mjpost/sacrebleu"],
            "reference_urls": ["https://arxiv.org/abs/2308.11995"]}

    def _score_direct(self, predictions, references, **options):
        return score(predictions, references, **options)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Check and add a batch of predictions and references (their numbers may differ for conversation rows)."""
        kind, preds, refs = encode(predictions, references)
        super().add_batch(predictions=[json.dumps(preds, default=str)],
                          references=[json.dumps({"kind": kind, "items": refs}, default=str)], **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Check and add one prediction and one reference."""
        self.add_batch(predictions=[prediction], references=[reference], **kwargs)

    def _compute(self, predictions, references, knowledge=None, reading_sets=None, per_example=False):
        """The batches add_batch checked and stored, decoded and scored."""
        options = check_options({"knowledge": knowledge, "reading_sets": reading_sets, "per_example": per_example})
        batches = [json.loads(batch) for batch in references]
        kinds = {batch["kind"] for batch in batches}
        if len(kinds) > 1:
            raise ValueError(f"topical_chat: references of different kinds in one evaluation: {sorted(kinds)}")
        preds = [p for batch in predictions for p in json.loads(batch)]
        refs = [r for batch in batches for r in batch["items"]]
        return score_checked(kinds.pop(), preds, refs, options)
