"""lm-evaluation-harness task of Topical-Chat: the next turn of a conversation, from its history (and the
knowledge the human turn was grounded on, where the export has the ``reading_sets`` config).

One doc per turn after the first (turn 0 opens the conversation and has no history). Scores come from
``replies.score_reply``, the scorer the ``topical_chat`` evaluate metric uses.
"""

import functools

from .replies import bleu_of_pairs, distinct_1, distinct_2, mean_or_zero, one_line, score_reply
from .task_spec import TaskSpec
from .turns import turn_examples

# the columns of a doc; doc_features() their types (datasets is imported only when docs are made: the inspect
# entry point imports this module to list the tasks)
DOC_COLUMNS = ("conversation_id", "turn_index", "agent", "history_agents",
               "history_messages", "response", "target", "knowledge")


@functools.cache
def doc_features():
    import datasets

    return datasets.Features({
        "conversation_id": datasets.Value("string"),
        "turn_index": datasets.Value("int32"),
        "agent": datasets.Value("string"),
        "history_agents": datasets.Sequence(datasets.Value("string")),
        "history_messages": datasets.Sequence(datasets.Value("string")),
        "response": datasets.Value("string"),
        "target": datasets.Value("string"),
        "knowledge": datasets.Value("string"),
    })


def docs(dataset, location, load=None, config_names=None, split_names=None):
    """The split's conversation rows as turn docs, with the knowledge of each turn joined from the
    ``reading_sets`` config of the same location and split when that config exists (read with
    ``load(location, config, split)``, by default ``datasets.load_dataset``; the configs and splits there
    found with ``config_names(location)`` and ``split_names(location, config)``, by default ``datasets``')."""
    import datasets  # only when docs are made (see DOC_COLUMNS)

    split = str(dataset.split) if getattr(dataset, "split", None) is not None else None
    reading = reading_sets(str(location), split, load or _load_dataset, config_names, split_names)
    rows = []
    for conversation in dataset:
        reading_set = reading.get(conversation["conversation_id"])
        rows += [_flat(example) for example in turn_examples(conversation, reading_set)]
    return datasets.Dataset.from_list(rows, features=doc_features())


def _load_dataset(location, config, split):
    import datasets  # only when docs are made (see DOC_COLUMNS)

    return datasets.load_dataset(location, config, split=split)


def reading_sets(location, split, load=_load_dataset, config_names=None, split_names=None):
    """``{conversation_id: reading-set row}`` of ``location``'s reading_sets config ({} without that config);
    every split when ``split`` is None (conversation ids are unique across splits)."""
    import datasets  # only when docs are made (see DOC_COLUMNS)

    if "reading_sets" not in (config_names or datasets.get_dataset_config_names)(location):
        return {}
    present = (split_names or datasets.get_dataset_split_names)(location, "reading_sets")
    names = [split] if split is not None else present
    return {row["conversation_id"]: row for name in names if name in present
            for row in load(location, "reading_sets", name)}


def _flat(example):
    return {
        "conversation_id": example["conversation_id"], "turn_index": example["turn_index"],
        "agent": example["agent"],
        "history_agents": [turn["agent"] for turn in example["history"]],
        "history_messages": [turn["message"] for turn in example["history"]],
        "response": example["response"], "target": one_line(example["response"]),
        "knowledge": example["knowledge"],
    }


def prompt(doc):
    agent = doc["agent"]
    lines = [f"Two people, agent_1 and agent_2, are chatting about topics they have read about. You are {agent}."]
    if doc.get("knowledge"):
        lines += ["", f"Knowledge {agent} may use in the next turn:", one_line(doc["knowledge"])]
    lines += ["", "Conversation:"]
    lines += [f"{a}: {one_line(m)}" for a, m in zip(doc["history_agents"], doc["history_messages"])]
    lines += ["", f"Write the next turn of {agent}: the message only, on one line.", f"{agent}:"]
    return "\n".join(lines)


def target(doc):
    return doc["target"]


def score(reply, doc):
    return score_reply(reply, doc["target"], doc.get("knowledge"))


def doc_id(doc):
    """A turn doc's id: its conversation and turn, ``CONVERSATION_ID:TURN_INDEX``."""
    return f"{doc['conversation_id']}:{doc['turn_index']}"


def conversation(doc):
    """A turn doc's cluster: its conversation (a later turn's history holds this turn's reply)."""
    return doc["conversation_id"]


def configuration():
    """The scorer's settings (the task's signature): sacreBLEU's corpus BLEU as its signature records it, unigram
    F1 of SQuAD-normalised words, distinct-n of lowercased 13a tokens."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU()
    bleu.num_refs = 1
    return {"bleu": bleu.get_signature().info, "f1": "unigram,squad-normalize", "distinct": "13a,lowercase"}


def _task(splits):
    return TaskSpec(
        configs=["conversations"],
        splits=splits,
        fewshot_split="train",
        docs=docs,
        prompt=prompt,
        target=target,
        # the reply is one line: a base model's next line is the other agent's turn (issue 43)
        until=["\n"],
        # the longest gold turn of test_freq/test_rare is 157 tokens with SmolLM2's tokenizer (p99 67): 64 cut
        # one reply in a hundred
        max_gen_toks=176,
        score=score,
        doc_id=doc_id,
        # few-shot demonstrations never come from the document's own cluster (qahub.harness.Demonstrations)
        cluster=conversation,
        configuration=configuration,  # sacreBLEU's settings, F1 and distinct-n tokens
        metrics={
            "f1": ("mean", True),
            "knowledge_f1": (mean_or_zero, True),
            "bleu": (bleu_of_pairs, True),
            "distinct_1": (distinct_1, True),
            "distinct_2": (distinct_2, True),
            "unparseable": ("mean", False),
        },
        oracle={"f1": 1.0, "bleu": 100.0, "unparseable": 0.0},
        binary=["unparseable"],
        ranges={"knowledge_f1": (0.0, 1.0), "distinct_1": (0.0, 1.0), "distinct_2": (0.0, 1.0)},
    )


# the corpus these tasks run on (qahub.harness finds the tasks of every corpus by it)
CORPUS = "topical_chat"

# frequent and rare entities apart (the test splits, or the valid ones where test is absent); the task folder
# groups them as `qahub_topical_chat`
TASKS = {
    "qahub_topical_chat_freq": _task(["test_freq", "valid_freq"]),
    "qahub_topical_chat_rare": _task(["test_rare", "valid_rare"]),
}


# --- training rows (qahub.training, issue 38): each task's non-template text of a doc, which decontamination
# compares with the evaluated docs': (doc -> its question or turns, whether it is a dialogue turn, whose question is
# then the conversation with the reply); the reply is the task's target
def _history(doc):
    return list(doc["history_messages"])


# one function for both tasks: their training documents (the same train split) are checked once
TRAINING_TEXTS = {name: (_history, True) for name in ("qahub_topical_chat_freq", "qahub_topical_chat_rare")}


def whole_conversation(docs):
    """The turn docs of one training conversation -> (system, [(role, content)]) for the ``messages`` config:
    agent_2 is the assistant (the conversation up to its last turn), agent_1 the user; the system message the
    knowledge agent_2's turns were grounded on."""
    last = max((doc for doc in docs if doc["agent"] == "agent_2"), key=lambda doc: doc["turn_index"])
    turns = [*zip(last["history_agents"], last["history_messages"]), (last["agent"], last["response"])]
    knowledge = [d["knowledge"] for d in docs if d["agent"] == "agent_2" and d["knowledge"]]
    lines = ["Two people, agent_1 (the user) and agent_2 (you), are chatting about topics they have read about."]
    if knowledge:
        lines += ["", "Knowledge you may use:", *dict.fromkeys(knowledge)]
    return "\n".join(lines), [("assistant" if agent == "agent_2" else "user", text) for agent, text in turns]


# the messages config: the task whose docs are the conversations' turns, and how they make one conversation
CONVERSATION = ("qahub_topical_chat_freq", whole_conversation)
