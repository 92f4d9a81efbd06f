"""Topical-Chat: knowledge-grounded human-human conversations over eight broad topics."""

import os
from dataclasses import dataclass
from typing import Optional

import datasets
from qahub.dataset_cards import citation

from ._rows import RowsBuilder
from ._sources import Source, SourceConfig, in_data_dir
from ._topical_chat_files import (
    AGENTS,
    ARTICLE_KEYS,
    ASR_KEYS,
    CONVERSATION_CONFIGS,
    FORMS,
    RATINGS,
    SECTIONS,
    SENTIMENTS,
    SPLIT_NAMES,
    WIKI_KINDS,
    absent_split,
    ijson_module,
    reading_set_form,
    split_files,
    split_rows,
)

_DESCRIPTION = """\
Topical-Chat is a knowledge-grounded human-human conversation dataset: pairs of crowd workers chat about
entities of eight broad topics and a Washington Post article, using reading sets of Wikipedia lead sections,
Reddit fun facts and article sections. Every turn is annotated with the sender's sentiment and knowledge
source and the partner's rating. The frequent splits hold entities often seen in training, the rare splits
entities seldom or never seen there.
"""

_COMMIT = "7c939229cbcf6f55f6977b341a5a2f2fe982d53f"

SOURCE = Source(
    corpus="topical_chat", description=_DESCRIPTION, citation=citation("topical_chat"),
    homepage="https://github.com/alexa/Topical-Chat", license="cdla-sharing-1.0",
    base_url=f"https://raw.githubusercontent.com/alexa/Topical-Chat/{_COMMIT}",
    # the upstream files at _COMMIT; the train files are not pinned (see the dataset card)
    sha256={
        "conversations/valid_freq.json": "d14e8bde94fa5556d4aad8fd3fb666df674e4fef8b4193c8c3c06c72822a366b",
        "conversations/valid_rare.json": "b0f3c59584ea4ed61e368dc94feade6ba499a207a6437573b028d1f3ff918714",
        "conversations/test_freq.json": "3c65693d59e40a1fb58ead35dcfe85fbcc88ea93a4d74557df620996f72c8f08",
        "conversations/test_rare.json": "4f21a18be16e310840280678e7bb4646852573b239b69183ddf8898f40119567",
        "reading_sets/pre-build/valid_freq.json": "64eddf122c1ce8006b7f9bb7355a2c2fefe20b8458bdb6ee6c4fa970b3b6ad95",
        "reading_sets/pre-build/valid_rare.json": "cfcde139c57f2181ef2ed633d05be6cb70117281cbf49dd9bafb07f9e29941fa",
        "reading_sets/pre-build/test_freq.json": "9fca4e9f4bebf26ffb2231d2de0614dd2e2026912f9dd4478b6f7a59c08e19ac",
        "reading_sets/pre-build/test_rare.json": "1c7ce89668cd23ee105871edfadcfce6a2d1940f1ded6cab44b3561ead84b842",
        "src/wiki/wiki.json": "497122dbce37f5e5e15b7f5da54532a0c612f8d954858f48221a84c8b4540f91",
        "TopicalChatASR/actual/test_freq_audio.json": "a549e2846c9dfc5c5a26c1a77822878cfd1226b6350d6b0f74d738d2b02d97a7",
        "TopicalChatASR/actual/test_rare_audio.json": "5178b8f005477aa3450b5fbb5b2c40410799cbffd3b78b440d78e40d63ddd7ed",
    },
)

@dataclass
class TopicalChatConfig(SourceConfig):
    """``splits``: build only these splits; ``present_splits_only``: with ``data_dir``, build the splits whose
    files are there and skip the others; ``reading_set_form``: ``auto`` (post-build when the file is in
    ``data_dir``, else pre-build), ``post-build`` or ``pre-build``.
    """

    splits: Optional[tuple] = None
    present_splits_only: bool = False
    reading_set_form: str = "auto"


class TopicalChat(RowsBuilder):
    """Topical-Chat conversations, reading sets and ASR test conversations."""

    VERSION = datasets.Version("1.1.0")
    BATCH_ROWS = 500  # a conversation is ~5 KB of JSON, several times that as Python objects: small tables
    BUILDER_CONFIG_CLASS = TopicalChatConfig
    BUILDER_CONFIGS = [
        TopicalChatConfig(name="conversations", version=VERSION, description="One row per conversation."),
        TopicalChatConfig(name="reading_sets", version=VERSION, description="The knowledge each agent saw."),
        TopicalChatConfig(name="asr", version=VERSION, description="Test conversations with ASR hypotheses."),
    ]
    DEFAULT_CONFIG_NAME = "conversations"
    SPLITS = {"conversations": SPLIT_NAMES, "reading_sets": SPLIT_NAMES, "asr": ["test_freq", "test_rare"]}  # ASR: test only

    def _info(self):
        if self.config.name == "reading_sets":
            return SOURCE.info(_reading_set_features())
        return SOURCE.info(_conversation_features(asr=self.config.name == "asr"))

    def _split_generators(self, dl_manager):
        ijson_module()  # fail early: errors raised while generating rows reach the user wrapped
        plan = {split: self._files_of(split) for split in self._requested_splits()}
        plan = self._drop_absent(plan)
        files = {f"{split}/{key}": rel for split, keys in plan.items() for key, rel in keys.items()}
        paths = SOURCE.resolve(self.config, dl_manager, files)
        return [
            datasets.SplitGenerator(
                name=split,
                gen_kwargs={key: paths[f"{split}/{key}"] for key in keys} | {"form": self._form_of(split)},
            )
            for split, keys in plan.items()
        ]

    def _generate_examples(self, conversations, form, reading_sets=None, wiki=None):
        for row in split_rows(self.config.name, conversations, form, reading_sets, wiki):
            yield row["conversation_id"], row

    def _requested_splits(self):
        available = self.SPLITS[self.config.name]
        wanted = self.config.splits or available
        wanted = (wanted,) if isinstance(wanted, str) else tuple(wanted)
        unknown = [split for split in wanted if split not in available]
        if unknown:
            raise ValueError(f"topical_chat/{self.config.name}: unknown split(s) {unknown}; its splits: {list(available)}")
        return wanted

    def _files_of(self, split):
        return split_files(self.config.name, split, self._form_of(split))

    def _form_of(self, split):
        """The reading-set form of ``split`` (None outside the reading_sets config)."""
        if self.config.name != "reading_sets":
            return None
        return reading_set_form(self.config.data_dir, split, self.config.reading_set_form)

    def _drop_absent(self, plan):
        """With ``data_dir``: an absent split is an error naming it, or skipped with ``present_splits_only``."""
        if not self.config.data_dir:
            return plan
        root = os.path.expanduser(self.config.data_dir)
        missing = {split: [rel for rel in keys.values() if not in_data_dir(self.config, rel)] for split, keys in plan.items()}
        missing = {split: rels for split, rels in missing.items() if rels}
        if missing and not self.config.present_splits_only:
            split, rels = next(iter(missing.items()))
            raise absent_split(root, self.config.name, split, rels)
        present = {split: keys for split, keys in plan.items() if split not in missing}
        if not present:
            raise FileNotFoundError(f"{root}: no split of topical_chat/{self.config.name} is present")
        return present



# features


def _conversation_features(asr):
    turn = {
        "agent": datasets.ClassLabel(names=AGENTS),
        "message": datasets.Value("string"),
        "sentiment": datasets.ClassLabel(names=SENTIMENTS),
        "knowledge_source": datasets.List(datasets.Value("string")),
        "turn_rating": datasets.ClassLabel(names=RATINGS),
    }
    if asr:
        turn |= {key: datasets.Value("string") for key in ASR_KEYS}
    return datasets.Features(
        {
            "conversation_id": datasets.Value("string"),
            "article_url": datasets.Value("string"),
            "config": datasets.ClassLabel(names=CONVERSATION_CONFIGS),
            "turns": datasets.List(turn),
            "conversation_rating": {agent: datasets.ClassLabel(names=RATINGS) for agent in AGENTS},
        }
    )


def _reading_set_features():
    section = {
        "entity": datasets.Value("string"),
        "wiki_lead_kind": datasets.ClassLabel(names=WIKI_KINDS),
        "wiki_lead_section": datasets.Value("string"),
        "wiki_lead_id": datasets.Value("int64"),
        "fun_facts": datasets.List(datasets.Value("string")),
        "fun_fact_ids": datasets.List(datasets.Value("string")),
    }
    return datasets.Features(
        {
            "conversation_id": datasets.Value("string"),
            "config": datasets.ClassLabel(names=CONVERSATION_CONFIGS),
            "form": datasets.ClassLabel(names=FORMS),
            "agent_1": {name: section for name in SECTIONS},
            "agent_2": {name: section for name in SECTIONS},
            "article": {key: datasets.Value("string") for key in ARTICLE_KEYS},
        }
    )
