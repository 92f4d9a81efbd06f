"""Topical-Chat: knowledge-grounded human-human conversations over eight broad topics."""

import codecs
import os
from dataclasses import dataclass
from typing import Optional

import datasets
from qahub.dataset_cards import citation

from qahub.readers import expect_utf8_start, is_str_list, open_source, read_json, record_error, utf8_problem

from ._rows import RowsBuilder
from ._sources import Source, SourceConfig, in_data_dir

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

_SPLITS = ["train", "valid_freq", "valid_rare", "test_freq", "test_rare"]
_WIKI = "src/wiki/wiki.json"
_FORMS = ["post-build", "pre-build"]

# label names as spelled in the upstream files
_CONFIGS = ["A", "B", "C", "D"]
_AGENTS = ["agent_1", "agent_2"]
_SENTIMENTS = ["Angry", "Disgusted", "Fearful", "Sad", "Happy", "Surprised", "Curious to dive deeper", "Neutral"]
_RATINGS = ["Poor", "Not Good", "Passable", "Good", "Excellent"]
_WIKI_KINDS = ["shortened", "summarized"]
_SECTIONS = ("FS1", "FS2", "FS3")
_ARTICLE_KEYS = ("url", "headline", "AS1", "AS2", "AS3", "AS4")
_CONVERSATION_KEYS = ("article_url", "config", "content", "conversation_rating")
_TURN_KEYS = ("agent", "message", "sentiment", "knowledge_source", "turn_rating")
_ASR_KEYS = ("message_asr_A", "message_asr_B")


def conversation_file(split):
    return f"conversations/{split}.json"


def reading_set_file(split, form):
    return f"reading_sets/{form}/{split}.json"


def asr_file(split):
    return f"TopicalChatASR/actual/{split}_audio.json"


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
    SPLITS = {"conversations": _SPLITS, "reading_sets": _SPLITS, "asr": ["test_freq", "test_rare"]}  # ASR: test only

    def _info(self):
        if self.config.name == "reading_sets":
            return SOURCE.info(_reading_set_features())
        return SOURCE.info(_conversation_features(asr=self.config.name == "asr"))

    def _split_generators(self, dl_manager):
        _ijson()  # fail early: errors raised while generating rows reach the user wrapped
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
        if self.config.name == "reading_sets":
            rows = _reading_set_rows(conversations, reading_sets, form, wiki)
        else:
            rows = _conversation_rows(conversations, asr=self.config.name == "asr")
        for row in rows:
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
        if self.config.name == "asr":
            return {"conversations": asr_file(split)}
        if self.config.name == "conversations":
            return {"conversations": conversation_file(split)}
        form = self._form_of(split)
        files = {"conversations": conversation_file(split), "reading_sets": reading_set_file(split, form)}
        return files | ({"wiki": _WIKI} if form == "pre-build" else {})

    def _form_of(self, split):
        """The reading-set form of ``split`` (None outside the reading_sets config)."""
        if self.config.name != "reading_sets":
            return None
        form = self.config.reading_set_form
        if form not in ("auto", *_FORMS):
            raise ValueError(f"topical_chat: reading_set_form must be auto, post-build or pre-build, got {form!r}")
        if form != "auto":
            return form
        return "post-build" if in_data_dir(self.config, reading_set_file(split, "post-build")) else "pre-build"

    def _drop_absent(self, plan):
        """With ``data_dir``: an absent split is an error naming it, or skipped with ``present_splits_only``."""
        if not self.config.data_dir:
            return plan
        root = os.path.expanduser(self.config.data_dir)
        missing = {split: [rel for rel in keys.values() if not in_data_dir(self.config, rel)] for split, keys in plan.items()}
        missing = {split: rels for split, rels in missing.items() if rels}
        if missing and not self.config.present_splits_only:
            split, rels = next(iter(missing.items()))
            raise FileNotFoundError(
                f"{root}: split {split!r} of topical_chat/{self.config.name} needs {', '.join(rels)}, not found; "
                "pass splits=(...) to choose splits, or present_splits_only=True (on the command line: "
                "--option present_splits_only=true) to build the splits that are present"
            )
        present = {split: keys for split, keys in plan.items() if split not in missing}
        if not present:
            raise FileNotFoundError(f"{root}: no split of topical_chat/{self.config.name} is present")
        return present



# features


def _conversation_features(asr):
    turn = {
        "agent": datasets.ClassLabel(names=_AGENTS),
        "message": datasets.Value("string"),
        "sentiment": datasets.ClassLabel(names=_SENTIMENTS),
        "knowledge_source": datasets.List(datasets.Value("string")),
        "turn_rating": datasets.ClassLabel(names=_RATINGS),
    }
    if asr:
        turn |= {key: datasets.Value("string") for key in _ASR_KEYS}
    return datasets.Features(
        {
            "conversation_id": datasets.Value("string"),
            "article_url": datasets.Value("string"),
            "config": datasets.ClassLabel(names=_CONFIGS),
            "turns": datasets.List(turn),
            "conversation_rating": {agent: datasets.ClassLabel(names=_RATINGS) for agent in _AGENTS},
        }
    )


def _reading_set_features():
    section = {
        "entity": datasets.Value("string"),
        "wiki_lead_kind": datasets.ClassLabel(names=_WIKI_KINDS),
        "wiki_lead_section": datasets.Value("string"),
        "wiki_lead_id": datasets.Value("int64"),
        "fun_facts": datasets.List(datasets.Value("string")),
        "fun_fact_ids": datasets.List(datasets.Value("string")),
    }
    return datasets.Features(
        {
            "conversation_id": datasets.Value("string"),
            "config": datasets.ClassLabel(names=_CONFIGS),
            "form": datasets.ClassLabel(names=_FORMS),
            "agent_1": {name: section for name in _SECTIONS},
            "agent_2": {name: section for name in _SECTIONS},
            "article": {key: datasets.Value("string") for key in _ARTICLE_KEYS},
        }
    )


# reading the JSON objects keyed by conversation id


def iter_records(path):
    """``(conversation id, record)`` pairs of the top-level JSON object in ``path``, parsed incrementally.

    UTF-8, a byte-order mark allowed (the rest as ``read_json``). An empty object is an error: every upstream
    file holds conversations.
    """
    ijson = _ijson()
    with open_source(path, "rb") as f:
        _expect_object(path, f)
        items = ijson.kvitems(f, "", use_float=True)
        seen, last = set(), None
        while True:
            try:
                key, value = next(items)
            except StopIteration:
                break
            except (ijson.JSONError, UnicodeDecodeError, RecursionError) as err:
                where = f"after {last}" if last else "-"
                raise record_error(path, where, _json_problem(err)) from None
            if key in seen:
                raise record_error(path, key, "duplicate conversation id")
            seen.add(key)
            last = key
            yield key, value
    _expect(seen, path, "-", "no conversations (the file is an empty JSON object)")


def _ijson():
    try:
        import ijson
    except ImportError:
        raise ImportError("topical_chat needs ijson to read its files: pip install 'ijson>=3.2,<4'") from None
    return ijson


def _expect_object(path, f):
    """Leaves ``f`` at the start of the top-level object (after a byte-order mark)."""
    head = f.read(4)
    expect_utf8_start(path, head)
    start = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    f.seek(start)
    first = f.read(1)
    while first and first.isspace():
        first = f.read(1)
    if first != b"{":
        problem = "empty file" if not first else "expected a JSON object keyed by conversation id"
        raise record_error(path, "-", problem)
    f.seek(start)


def _json_problem(err):
    if isinstance(err, UnicodeDecodeError):
        return utf8_problem(err.object, err)
    if isinstance(err, RecursionError):
        return "not valid JSON (nested too deeply)"
    text = _one_line(err)
    return f"not UTF-8 text ({text})" if "UTF8" in text else f"not valid JSON ({text})"


def _one_line(err):
    text = err.args[0] if err.args else err
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return " ".join(str(text).split())


# conversations


def read_conversations(path, asr=False):
    """The rows of a conversations file (an ASR file with ``asr=True``), as the builder makes them.

    ``asr=None`` reads either kind: the ASR keys are allowed but not required, and not returned.
    """
    return _conversation_rows(path, asr)


def read_reading_sets(path, wiki=None):
    """The rows of a post-build reading-sets file, or of a pre-build one joined with ``wiki`` (src/wiki/wiki.json)."""
    texts = _wiki_texts(wiki) if wiki else None
    form = "pre-build" if wiki else "post-build"
    for cid, record in iter_records(path):
        yield _parse_reading_set(path, cid, record, form, texts)


def _conversation_rows(path, asr):
    for cid, record in iter_records(path):
        yield _parse_conversation(path, cid, record, asr)


def _parse_conversation(path, cid, record, asr):
    _expect_keys(path, cid, record, _CONVERSATION_KEYS)
    _expect_only(path, cid, record, _CONVERSATION_KEYS)
    _expect(record["article_url"] is None or isinstance(record["article_url"], str), path, cid,
            f"'article_url' must be a string, got {record['article_url']!r}")
    content = record["content"]
    _expect(isinstance(content, list), path, cid, f"'content' must be a list of turns, got {type(content).__name__}")
    return {
        "conversation_id": cid,
        "article_url": record["article_url"],
        "config": _label(path, cid, "config", record["config"], _CONFIGS),
        "turns": [_parse_turn(path, cid, index, turn, asr) for index, turn in enumerate(content)],
        "conversation_rating": _parse_conversation_rating(path, cid, record["conversation_rating"]),
    }


def _parse_turn(path, cid, index, turn, asr):
    where = f"turn {index}"
    keys = _TURN_KEYS + (_ASR_KEYS if asr else ())
    _expect_keys(path, cid, turn, keys, where)
    _expect_only(path, cid, turn, _TURN_KEYS + (_ASR_KEYS if asr is not False else ()), where)
    # each message is formatted only on failure: a repr of every turn would be most of the build's time
    for key in ("message",) + tuple(key for key in _ASR_KEYS if key in turn):
        if not isinstance(turn[key], str):
            raise record_error(path, cid, f"{where}: {key!r} must be a string, got {turn[key]!r}")
    if not is_str_list(turn["knowledge_source"]):
        raise record_error(path, cid, f"{where}: 'knowledge_source' must be a list of strings, got "
                                      f"{turn['knowledge_source']!r}")
    row = {
        "agent": _label(path, cid, "agent", turn["agent"], _AGENTS, where),
        "message": turn["message"],
        "sentiment": _label(path, cid, "sentiment", turn["sentiment"], _SENTIMENTS, where),
        "knowledge_source": turn["knowledge_source"],
        "turn_rating": _rating(path, cid, "turn_rating", turn["turn_rating"], where),
    }
    return row | ({key: turn[key] for key in _ASR_KEYS} if asr else {})


def _parse_conversation_rating(path, cid, ratings):
    _expect(isinstance(ratings, dict), path, cid, f"'conversation_rating' must be an object, got {ratings!r}")
    missing = [agent for agent in _AGENTS if agent not in ratings]
    _expect(not missing, path, cid, f"'conversation_rating' lacks {', '.join(missing)}")
    _expect_only(path, cid, ratings, _AGENTS, "conversation_rating")
    return {agent: _rating(path, cid, f"conversation_rating of {agent}", ratings[agent]) for agent in _AGENTS}


def _rating(path, cid, what, value, where=None):
    """Upstream leaves some ratings empty (""): they load as missing, -1."""
    return -1 if value == "" else _label(path, cid, what, value, _RATINGS, where)


def _label(path, cid, what, value, names, where=None):
    if value not in names:
        prefix = f"{where}: " if where else ""
        raise record_error(path, cid, f"{prefix}unknown {what} {value!r} (expected one of {names})")
    return names.index(value)


# reading sets


def _reading_set_rows(conversations, reading_sets, form, wiki):
    """The reading sets, checked against the conversations: the same ids, the same config."""
    configs = {row["conversation_id"]: row["config"] for row in _conversation_rows(conversations, asr=False)}
    texts = _wiki_texts(wiki) if form == "pre-build" else None
    seen = set()
    for cid, record in iter_records(reading_sets):
        _expect(cid in configs, reading_sets, cid, f"no conversation with this id in {conversations}")
        row = _parse_reading_set(reading_sets, cid, record, form, texts)
        _expect(row["config"] == configs[cid], reading_sets, cid, f"config {_CONFIGS[row['config']]!r} differs "
                f"from the conversation's {_CONFIGS[configs[cid]]!r} in {conversations}")
        seen.add(cid)
        yield row
    missing = [cid for cid in configs if cid not in seen]
    _expect(not missing, reading_sets, missing[0] if missing else "-",
            f"no reading set for this conversation of {conversations} ({len(missing)} conversation(s) lack one)")


def _parse_reading_set(path, cid, record, form, texts):
    article_key = "article" if form == "post-build" else "article_url"
    _expect(form == "pre-build" or not isinstance(record, dict) or "article_url" not in record, path, cid,
            f"has 'article_url': a pre-build reading set, which needs {_WIKI} to be read")
    post_build_like = isinstance(record, dict) and "article" in record and "article_url" not in record
    _expect(form == "post-build" or not post_build_like, path, cid,
            f"has 'article' and no 'article_url': a post-build reading set, which is read without {_WIKI}")
    _expect_keys(path, cid, record, ("config", *_AGENTS, article_key))
    _expect_only(path, cid, record, ("config", *_AGENTS, article_key), f"{form} reading set")
    return {
        "conversation_id": cid,
        "config": _label(path, cid, "config", record["config"], _CONFIGS),
        "form": _FORMS.index(form),
        **{agent: _parse_agent(path, cid, agent, record[agent], texts) for agent in _AGENTS},
        "article": _parse_article(path, cid, record[article_key], form),
    }


def _parse_agent(path, cid, agent, sections, texts):
    _expect(isinstance(sections, dict), path, cid, f"{agent}: expected an object of factual sections, got {sections!r}")
    unknown = sorted(set(sections) - set(_SECTIONS))
    _expect(not unknown, path, cid, f"{agent}: unknown section(s) {', '.join(unknown)} (expected {list(_SECTIONS)})")
    return {
        name: _parse_section(path, cid, f"{agent} {name}", sections[name], texts) if name in sections else None
        for name in _SECTIONS
    }


def _parse_section(path, cid, where, section, texts):
    _expect(isinstance(section, dict), path, cid, f"{where}: expected an object, got {section!r}")
    kinds = [kind for kind in _WIKI_KINDS if f"{kind}_wiki_lead_section" in section]
    _expect(len(kinds) == 1, path, cid, f"{where}: expected one of shortened_wiki_lead_section, "
            f"summarized_wiki_lead_section, found {len(kinds)}")
    _expect_keys(path, cid, section, ("entity", "fun_facts"), where)
    _expect_only(path, cid, section, ("entity", "fun_facts", f"{kinds[0]}_wiki_lead_section"), where)
    _expect(isinstance(section["entity"], str), path, cid, f"{where}: 'entity' must be a string")
    _expect(is_str_list(section["fun_facts"]), path, cid, f"{where}: 'fun_facts' must be a list of strings")
    kind = kinds[0]
    lead = section[f"{kind}_wiki_lead_section"]
    row = {"entity": section["entity"], "wiki_lead_kind": _WIKI_KINDS.index(kind)}
    if texts is None:
        _expect(isinstance(lead, str), path, cid, f"{where}: the {kind} wiki lead section must be text, got {lead!r}")
        return row | {"wiki_lead_section": lead, "wiki_lead_id": None, "fun_facts": section["fun_facts"],
                      "fun_fact_ids": None}
    _expect(isinstance(lead, int) and lead in texts[kind], path, cid,
            f"{where}: {kind} wiki lead section id {lead!r} is not in {_WIKI}")
    return row | {"wiki_lead_section": texts[kind][lead], "wiki_lead_id": lead, "fun_facts": None,
                  "fun_fact_ids": section["fun_facts"]}


def _parse_article(path, cid, article, form):
    if form == "pre-build":
        _expect(article is None or isinstance(article, str), path, cid, f"'article_url' must be a string, got {article!r}")
        return {key: article if key == "url" else None for key in _ARTICLE_KEYS}
    _expect(isinstance(article, dict), path, cid, f"'article' must be an object, got {article!r}")
    _expect_only(path, cid, article, _ARTICLE_KEYS, "article")
    for key, value in article.items():
        _expect(value is None or isinstance(value, str), path, cid, f"article: {key!r} must be text, got {value!r}")
    return {key: article.get(key) for key in _ARTICLE_KEYS}


def _wiki_texts(path):
    """``src/wiki/wiki.json`` maps text to id per kind; build.py looks texts up by id."""
    data = read_json(path)
    _expect(isinstance(data, dict), path, "-", f"expected a JSON object, got {type(data).__name__}")
    extra = sorted(set(data) - {f"{kind}_wiki_lead_section" for kind in _WIKI_KINDS})
    _expect(not extra, path, "-", f"unexpected key(s) {', '.join(map(repr, extra))}")
    return {kind: _wiki_ids(path, f"{kind}_wiki_lead_section", data.get(f"{kind}_wiki_lead_section"))
            for kind in _WIKI_KINDS}


def _wiki_ids(path, key, by_text):
    """``{id: text}`` from ``{text: id}``; every id an integer, used once."""
    _expect(isinstance(by_text, dict), path, key, "missing or not an object")
    texts = {}
    for text, wiki_id in by_text.items():
        where = f"{key}[{_short(text)}]"
        _expect(type(wiki_id) is int, path, where, f"the id must be an integer, got {_short(wiki_id)}")
        _expect(wiki_id not in texts, path, where, f"id {wiki_id} is also the id of {_short(texts.get(wiki_id))}")
        texts[wiki_id] = text
    return texts


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# checks


def _expect_keys(path, cid, record, keys, where=None):
    prefix = f"{where}: " if where else ""
    if not isinstance(record, dict):
        raise record_error(path, cid, f"{prefix}expected an object, got {type(record).__name__}")
    if not record.keys() >= set(keys):
        missing = [key for key in keys if key not in record]
        raise record_error(path, cid, f"{prefix}missing key(s) {', '.join(missing)}")


def _expect_only(path, cid, record, keys, where=None):
    """Nothing is dropped silently: a key the builder does not keep is an error naming it."""
    extra = sorted(set(record) - set(keys))
    if extra:
        prefix = f"{where}: " if where else ""
        raise record_error(path, cid, f"{prefix}unexpected key(s) {', '.join(map(repr, extra))} (expected {list(keys)})")


def _expect(condition, path, cid, problem):
    if not condition:
        raise record_error(path, cid, problem)
