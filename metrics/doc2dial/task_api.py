"""lm-evaluation-harness tasks of doc2dial v1.0.1 (DialDoc21 subtasks), scored by the ``doc2dial`` metric's code.

- ``qahub_doc2dial_grounding`` (subtask 1): from the document and the dialogue history, copy the span of the
  document that grounds the next agent turn, or reply ``NO ANSWER``. SQuAD v2 exact match and F1 per example
  (``squad_v2_scoring.span_scores``, what the metric's ``subtask1`` averages).
- ``qahub_doc2dial_response`` (subtask 2): from the document and the dialogue history, write the next agent turn.
  Corpus sacreBLEU over (reply, gold) pairs (``bleu_scoring.corpus_sacrebleu``, the metric's ``subtask2``).

Documents longer than ``DOC_CHARS`` characters are cut: the prompt shows the document with its whitespace
tidied (each line's whitespace runs made one space, blank lines dropped), then its first ``DOC_CHARS`` characters,
and says so. An example whose gold span lies beyond the cut is still scored.
"""

import functools
import re

from .bleu_scoring import bleu_of_statistics, corpus_sacrebleu
from .dialogues import agent_turns
from .replies import NO_ANSWER, bleu_line, one_line, read_reply, span_reply
from .squad_v2_scoring import span_scores
from .task_spec import TaskSpec

DOC_CHARS = 6000  # characters of the (tidied) document shown in a prompt
QUESTION_TOKENS = 100  # doc2dial_rc keeps the first 100 whitespace tokens of the newest-first history
_ROLE = re.compile(r"(?:^| )(user|agent): ")

# the columns of a doc; doc_features() their types (datasets is imported only when docs are made: the inspect
# entry point imports this module to list the tasks)
DOC_COLUMNS = ("id", "dial_id", "turn_id", "doc_id", "domain", "history", "document", "utterance")


@functools.cache
def doc_features():
    import datasets

    return datasets.Features({
        "id": datasets.Value("string"),
        "dial_id": datasets.Value("string"),
        "turn_id": datasets.Value("int32"),
        "doc_id": datasets.Value("string"),
        "domain": datasets.Value("string"),
        "history": datasets.List({"role": datasets.Value("string"), "utterance": datasets.Value("string")}),
        "document": datasets.Value("string"),
        "utterance": datasets.Value("string"),
    })


# --- prompts


def document_block(text):
    """The document as the prompts show it: tidied whitespace, cut to its first ``DOC_CHARS`` characters."""
    shown = "\n".join(line for line in (one_line(line) for line in text.splitlines()) if line)
    if len(shown) <= DOC_CHARS:
        return f"Document:\n{shown}"
    return f"Document (only its first {DOC_CHARS} characters; the rest is cut):\n{shown[:DOC_CHARS]}"


def dialogue_block(turns, cut=False):
    """``turns`` [(role, utterance)], oldest first, one line each."""
    lines = [f"{role}: {one_line(utterance)}" if role else one_line(utterance) for role, utterance in turns]
    if cut:
        lines.insert(0, "(earlier turns are not shown)")
    return "Dialogue (oldest turn first):\n" + ("\n".join(lines) if lines else "(no turns yet)")


def question_turns(question):
    """A doc2dial_rc ``question`` ("user: ... agent: ...", newest turn first) as [(role, utterance)], oldest first."""
    parts = _ROLE.split(question)
    turns = [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    if parts[0].strip():
        turns.insert(0, ("", parts[0]))
    return turns[::-1]


def grounding_prompt(doc):
    cut = len(doc["question"].split()) >= QUESTION_TOKENS
    return (
        "Below are a document and a dialogue between a user and an agent who answers from the document. "
        "Find the span of the document that the agent's next turn should be based on.\n\n"
        f"{document_block(doc['context'])}\n\n"
        f"{dialogue_block(question_turns(doc['question']), cut)}\n\n"
        "Reply with that span copied exactly from the document, on one line, and nothing else. "
        f"If no part of the document answers the user, reply {NO_ANSWER}.\n"
        "Span:"
    )


def grounding_target(doc):
    """The gold span on one line (whitespace does not count in the SQuAD scores), or ``NO ANSWER``."""
    texts = doc["answers"]["text"]
    return one_line(texts[0]) if texts else NO_ANSWER


def response_prompt(doc):
    turns = [(turn["role"], turn["utterance"]) for turn in doc["history"]]
    return (
        "Below are a document and a dialogue between a user and an agent who answers from the document. "
        "You are the agent.\n\n"
        f"{document_block(doc['document'])}\n\n"
        f"{dialogue_block(turns)}\n\n"
        "Write the agent's next turn, on one line, without the \"agent:\" prefix, and nothing else.\n"
        "agent:"
    )


def response_target(doc):
    """The gold agent turn on one line, tokenized by sacreBLEU exactly as the gold itself (so it scores 100)."""
    return bleu_line(doc["utterance"])


# --- scores: the metric's own per-example code


def grounding_score(reply, doc):
    """Exact match and F1 (0-100) of a reply as the grounding span; ``unparseable`` 0/1. Never raises."""
    span, unparseable = span_reply(reply)
    exact, f1 = span_scores(span, doc["answers"]["text"])
    return {"exact": 100.0 * exact, "f1": 100.0 * f1, "unparseable": int(unparseable)}


def response_score(reply, doc):
    """The (reply, gold) pair for corpus BLEU; ``unparseable`` 0/1 (an unreadable reply is empty). Never raises."""
    text, unparseable = read_reply(reply)
    return {"bleu": (text, doc["utterance"]), "unparseable": int(unparseable)}


def corpus_bleu(items):
    """Corpus sacreBLEU of (reply, gold) pairs, as the metric's ``subtask2`` computes it; 0.0 for no pairs."""
    pairs = [tuple(item) for item in items]
    if not pairs:
        return 0.0
    return float(corpus_sacrebleu([reply for reply, _ in pairs], [gold for _, gold in pairs])["score"])


def domain(doc):
    return doc.get("domain") or ""


def doc_id(doc):
    """A grounding or response doc's id: the dialogue id and the turn it answers."""
    return doc["id"]


def grounding_dialogue(doc):
    """A grounding doc's cluster: its dialogue (``id`` is ``{dial_id}_{turn_id}``; a later turn's history holds
    this turn's reply)."""
    return doc["id"].rsplit("_", 1)[0]


def response_dialogue(doc):
    """A response doc's cluster: its dialogue."""
    return doc["dial_id"]


# --- subtask 2 docs: agent turns of the dialogue rows, with their document


def response_docs(dataset, location, load=None, config_names=None, split_names=None):
    """One doc per agent turn of the split's ``dialogue_domain`` rows, its document text joined by ``doc_id``
    from the ``document_domain`` config (split train) of the same ``location`` (read with
    ``load(location, config, split)``, by default ``datasets.load_dataset``; the configs there found with
    ``config_names(location)``, by default ``datasets``'; ``split_names`` is not needed)."""
    import datasets  # only when docs are made (see DOC_COLUMNS)

    documents = document_texts(str(location), load or _load_dataset, config_names)
    rows = []
    for index, dialogue in enumerate(dataset):
        where = f"doc2dial: {location}: dialogue_domain row {index}"
        turns = agent_turns(dialogue, where)
        document = _document(documents, dialogue, where, location)
        rows += [{**turn, "doc_id": dialogue["doc_id"], "domain": dialogue.get("domain") or "", "document": document}
                 for turn in turns]
    return datasets.Dataset.from_list(rows, features=doc_features())


def _document(documents, dialogue, where, location):
    doc_id = dialogue.get("doc_id")
    if doc_id not in documents:
        raise ValueError(f"{where} (dialogue {dialogue['dial_id']!r}): document {doc_id!r} is not in the "
                         f"document_domain config of {location}")
    return documents[doc_id]


def _load_dataset(location, config, split):
    import datasets  # only when docs are made (see DOC_COLUMNS)

    return datasets.load_dataset(location, config, split=split)


def document_texts(location, load=_load_dataset, config_names=None):
    """``{doc_id: doc_text}`` of the ``document_domain`` config of ``location``."""
    import datasets  # only when docs are made (see DOC_COLUMNS)

    if "document_domain" not in (config_names or datasets.get_dataset_config_names)(location):
        raise ValueError(f"doc2dial: {location}: has no document_domain config; the response task reads the "
                         "documents from it (export the corpus with all its configs)")
    rows = load(location, "document_domain", "train").select_columns(["doc_id", "doc_text"])
    return dict(zip(rows["doc_id"], rows["doc_text"], strict=True))


def grounding_configuration():
    """The scorer's settings (the task's signature): DialDoc21's SQuAD v2 exact match and F1 of one span."""
    return {"scorer": "squad_v2", "normalize": ["lower", "no-punctuation", "no-articles", "whitespace"], "scale": 100}


def response_configuration():
    """The scorer's settings: sacreBLEU's corpus BLEU as its signature records it, with sacreBLEU 1.4.3's
    smoothing where no unigram matches (bleu_scoring.ZERO_MATCH_SIGNATURE)."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU()
    bleu.num_refs = 1
    return {"bleu": bleu.get_signature().info, "zero_match": "sacrebleu-1.4.3-exp-smoothing"}


# what the two tasks share: splits, demonstrations from train, a reply ending at a blank line, the domain
# breakdown, the turn's id
_COMMON = {"splits": ["validation", "train"], "fewshot_split": "train", "until": ["\n\n"],
           "categories": {"domain": domain}, "doc_id": doc_id}

# the corpus these tasks run on (qahub.harness finds the tasks of every corpus by it)
CORPUS = "doc2dial"

TASKS = {
    "qahub_doc2dial_grounding": TaskSpec(
        **_COMMON,
        configs=["doc2dial_rc"],
        prompt=grounding_prompt,
        target=grounding_target,
        max_gen_toks=512,  # grounding spans can be a few paragraphs long
        score=grounding_score,
        metrics={"exact": ("mean", True), "f1": ("mean", True), "unparseable": ("mean", False)},
        oracle={"exact": 100.0, "f1": 100.0, "unparseable": 0.0},
        binary=["exact", "unparseable"],  # exact: 0/100 per document
        # few-shot demonstrations never come from the document's own dialogue (qahub.harness.Demonstrations)
        cluster=grounding_dialogue,
        configuration=grounding_configuration,  # SQuAD v2 scores
    ),
    "qahub_doc2dial_response": TaskSpec(
        **_COMMON,
        configs=["dialogue_domain"],
        docs=response_docs,
        prompt=response_prompt,
        target=response_target,
        max_gen_toks=128,
        score=response_score,
        metrics={"bleu": (corpus_bleu, True), "unparseable": ("mean", False)},
        # `qahub report` scores each bootstrap resample with it: corpus_bleu's own BLEU, from summed statistics
        bleu_of_statistics=bleu_of_statistics,
        oracle={"bleu": 100.0, "unparseable": 0.0},
        binary=["unparseable"],
        cluster=response_dialogue,
        configuration=response_configuration,  # sacreBLEU's settings
    ),
}


# --- training rows (qahub.training, issue 38): each task's non-template text of a doc, which decontamination
# compares with the evaluated docs': (doc -> its question or turns, whether it is a dialogue turn, whose question is
# then the conversation with the reply); the reply is the task's target
TRAINING_TEXTS = {
    "qahub_doc2dial_grounding": (lambda doc: [doc["question"]], True),
    "qahub_doc2dial_response": (lambda doc: [turn["utterance"] for turn in doc["history"]], True),
}


def whole_conversation(docs):
    """The agent-turn docs of one training dialogue -> (system, [(role, content)]) for the ``messages`` config: the
    agent is the assistant, the user the user; the system message the document as the prompts show it."""
    last = max(docs, key=lambda doc: doc["turn_id"])
    turns = [(turn["role"], turn["utterance"]) for turn in last["history"]] + [("agent", last["utterance"])]
    system = "You are the agent: answer the user from the document below.\n\n" + document_block(last["document"])
    return system, [("assistant" if role == "agent" else "user", text) for role, text in turns]


# the messages config: the task whose docs are the dialogues' agent turns, and how they make one dialogue
CONVERSATION = ("qahub_doc2dial_response", whole_conversation)
