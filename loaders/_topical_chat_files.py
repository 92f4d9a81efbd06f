"""Topical-Chat's upstream files and their rows, without `datasets`: read once here, for the builder beside it
(``topical_chat.py``, which yields these rows) and for ``qahub evaluate topical_chat --data-dir`` (or an upstream
file given to ``--references``), which scores against them without importing `datasets`, pandas or pyarrow."""

import codecs
import os

from qahub.readers import expect_utf8_start, is_str_list, open_source, read_json, record_error, utf8_problem

SPLIT_NAMES = ["train", "valid_freq", "valid_rare", "test_freq", "test_rare"]
WIKI = "src/wiki/wiki.json"
FORMS = ["post-build", "pre-build"]

# label names as spelled in the upstream files
CONVERSATION_CONFIGS = ["A", "B", "C", "D"]
AGENTS = ["agent_1", "agent_2"]
SENTIMENTS = ["Angry", "Disgusted", "Fearful", "Sad", "Happy", "Surprised", "Curious to dive deeper", "Neutral"]
RATINGS = ["Poor", "Not Good", "Passable", "Good", "Excellent"]
WIKI_KINDS = ["shortened", "summarized"]
SECTIONS = ("FS1", "FS2", "FS3")
ARTICLE_KEYS = ("url", "headline", "AS1", "AS2", "AS3", "AS4")
_CONVERSATION_KEYS = ("article_url", "config", "content", "conversation_rating")
_TURN_KEYS = ("agent", "message", "sentiment", "knowledge_source", "turn_rating")
ASR_KEYS = ("message_asr_A", "message_asr_B")



def conversation_file(split):
    return f"conversations/{split}.json"


def reading_set_file(split, form):
    return f"reading_sets/{form}/{split}.json"


def asr_file(split):
    return f"TopicalChatASR/actual/{split}_audio.json"



def split_files(config, split, form=None):
    """``{key: upstream path}`` of the files one split of ``config`` is built from (``form``: its reading sets')."""
    if config == "asr":
        return {"conversations": asr_file(split)}
    if config == "conversations":
        return {"conversations": conversation_file(split)}
    files = {"conversations": conversation_file(split), "reading_sets": reading_set_file(split, form)}
    return files | ({"wiki": WIKI} if form == "pre-build" else {})


def reading_set_form(data_dir, split, form="auto"):
    """The reading-set form of ``split``: ``form``, or with ``auto`` post-build when its file is in ``data_dir``,
    else pre-build."""
    if form not in ("auto", *FORMS):
        raise ValueError(f"topical_chat: reading_set_form must be auto, post-build or pre-build, got {form!r}")
    if form != "auto":
        return form
    post_build = bool(data_dir) and os.path.isfile(_local(data_dir, reading_set_file(split, "post-build")))
    return "post-build" if post_build else "pre-build"


def absent_split(root, config, split, rels):
    """The error of a split whose files ``rels`` are not in the folder ``root``."""
    return FileNotFoundError(
        f"{root}: split {split!r} of topical_chat/{config} needs {', '.join(rels)}, not found; "
        "pass splits=(...) to choose splits, or present_splits_only=True (on the command line: "
        "--option present_splits_only=true) to build the splits that are present"
    )


def split_rows(config, conversations, form=None, reading_sets=None, wiki=None):
    """The rows of one split of ``config`` from its files (local paths), one at a time, as the builder yields
    them."""
    if config == "reading_sets":
        return reading_set_rows(conversations, reading_sets, form, wiki)
    return conversation_rows(conversations, asr=config == "asr")


def local_rows(data_dir, config, split, form="auto"):
    """The rows of ``split`` of ``config`` in a local copy of the upstream files (the builder's ``data_dir``
    layout), as the builder yields them, without `datasets`; ``form``: the builder's ``reading_set_form``."""
    ijson_module()
    form = reading_set_form(data_dir, split, form) if config == "reading_sets" else None
    files = split_files(config, split, form)
    missing = [rel for rel in files.values() if not os.path.isfile(_local(data_dir, rel))]
    if missing:
        raise absent_split(os.path.expanduser(str(data_dir)), config, split, missing)
    return list(split_rows(config, form=form, **{key: _local(data_dir, rel) for key, rel in files.items()}))


def _local(data_dir, rel):
    return os.path.join(os.path.expanduser(str(data_dir)), rel)


# reading the JSON objects keyed by conversation id


def iter_records(path):
    """``(conversation id, record)`` pairs of the top-level JSON object in ``path``, parsed incrementally.

    UTF-8, a byte-order mark allowed (the rest as ``read_json``). An empty object is an error: every upstream
    file holds conversations.
    """
    ijson = ijson_module()
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


def ijson_module():
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
    return conversation_rows(path, asr)


def read_reading_sets(path, wiki=None):
    """The rows of a post-build reading-sets file, or of a pre-build one joined with ``wiki`` (src/wiki/wiki.json)."""
    texts = _wiki_texts(wiki) if wiki else None
    form = "pre-build" if wiki else "post-build"
    for cid, record in iter_records(path):
        yield _parse_reading_set(path, cid, record, form, texts)


def conversation_rows(path, asr):
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
        "config": _label(path, cid, "config", record["config"], CONVERSATION_CONFIGS),
        "turns": [_parse_turn(path, cid, index, turn, asr) for index, turn in enumerate(content)],
        "conversation_rating": _parse_conversation_rating(path, cid, record["conversation_rating"]),
    }


def _parse_turn(path, cid, index, turn, asr):
    where = f"turn {index}"
    keys = _TURN_KEYS + (ASR_KEYS if asr else ())
    _expect_keys(path, cid, turn, keys, where)
    _expect_only(path, cid, turn, _TURN_KEYS + (ASR_KEYS if asr is not False else ()), where)
    # each message is formatted only on failure: a repr of every turn would be most of the build's time
    for key in ("message",) + tuple(key for key in ASR_KEYS if key in turn):
        if not isinstance(turn[key], str):
            raise record_error(path, cid, f"{where}: {key!r} must be a string, got {turn[key]!r}")
    if not is_str_list(turn["knowledge_source"]):
        raise record_error(path, cid, f"{where}: 'knowledge_source' must be a list of strings, got "
                                      f"{turn['knowledge_source']!r}")
    row = {
        "agent": _label(path, cid, "agent", turn["agent"], AGENTS, where),
        "message": turn["message"],
        "sentiment": _label(path, cid, "sentiment", turn["sentiment"], SENTIMENTS, where),
        "knowledge_source": turn["knowledge_source"],
        "turn_rating": _rating(path, cid, "turn_rating", turn["turn_rating"], where),
    }
    return row | ({key: turn[key] for key in ASR_KEYS} if asr else {})


def _parse_conversation_rating(path, cid, ratings):
    _expect(isinstance(ratings, dict), path, cid, f"'conversation_rating' must be an object, got {ratings!r}")
    missing = [agent for agent in AGENTS if agent not in ratings]
    _expect(not missing, path, cid, f"'conversation_rating' lacks {', '.join(missing)}")
    _expect_only(path, cid, ratings, AGENTS, "conversation_rating")
    return {agent: _rating(path, cid, f"conversation_rating of {agent}", ratings[agent]) for agent in AGENTS}


def _rating(path, cid, what, value, where=None):
    """Upstream leaves some ratings empty (""): they load as missing, -1."""
    return -1 if value == "" else _label(path, cid, what, value, RATINGS, where)


def _label(path, cid, what, value, names, where=None):
    if value not in names:
        prefix = f"{where}: " if where else ""
        raise record_error(path, cid, f"{prefix}unknown {what} {value!r} (expected one of {names})")
    return names.index(value)


# reading sets


def reading_set_rows(conversations, reading_sets, form, wiki):
    """The reading sets, checked against the conversations: the same ids, the same config."""
    configs = {row["conversation_id"]: row["config"] for row in conversation_rows(conversations, asr=False)}
    texts = _wiki_texts(wiki) if form == "pre-build" else None
    seen = set()
    for cid, record in iter_records(reading_sets):
        _expect(cid in configs, reading_sets, cid, f"no conversation with this id in {conversations}")
        row = _parse_reading_set(reading_sets, cid, record, form, texts)
        _expect(row["config"] == configs[cid], reading_sets, cid, f"config {CONVERSATION_CONFIGS[row['config']]!r} differs "
                f"from the conversation's {CONVERSATION_CONFIGS[configs[cid]]!r} in {conversations}")
        seen.add(cid)
        yield row
    missing = [cid for cid in configs if cid not in seen]
    _expect(not missing, reading_sets, missing[0] if missing else "-",
            f"no reading set for this conversation of {conversations} ({len(missing)} conversation(s) lack one)")


def _parse_reading_set(path, cid, record, form, texts):
    article_key = "article" if form == "post-build" else "article_url"
    _expect(form == "pre-build" or not isinstance(record, dict) or "article_url" not in record, path, cid,
            f"has 'article_url': a pre-build reading set, which needs {WIKI} to be read")
    post_build_like = isinstance(record, dict) and "article" in record and "article_url" not in record
    _expect(form == "post-build" or not post_build_like, path, cid,
            f"has 'article' and no 'article_url': a post-build reading set, which is read without {WIKI}")
    _expect_keys(path, cid, record, ("config", *AGENTS, article_key))
    _expect_only(path, cid, record, ("config", *AGENTS, article_key), f"{form} reading set")
    return {
        "conversation_id": cid,
        "config": _label(path, cid, "config", record["config"], CONVERSATION_CONFIGS),
        "form": FORMS.index(form),
        **{agent: _parse_agent(path, cid, agent, record[agent], texts) for agent in AGENTS},
        "article": _parse_article(path, cid, record[article_key], form),
    }


def _parse_agent(path, cid, agent, sections, texts):
    _expect(isinstance(sections, dict), path, cid, f"{agent}: expected an object of factual sections, got {sections!r}")
    unknown = sorted(set(sections) - set(SECTIONS))
    _expect(not unknown, path, cid, f"{agent}: unknown section(s) {', '.join(unknown)} (expected {list(SECTIONS)})")
    return {
        name: _parse_section(path, cid, f"{agent} {name}", sections[name], texts) if name in sections else None
        for name in SECTIONS
    }


def _parse_section(path, cid, where, section, texts):
    _expect(isinstance(section, dict), path, cid, f"{where}: expected an object, got {section!r}")
    kinds = [kind for kind in WIKI_KINDS if f"{kind}_wiki_lead_section" in section]
    _expect(len(kinds) == 1, path, cid, f"{where}: expected one of shortened_wiki_lead_section, "
            f"summarized_wiki_lead_section, found {len(kinds)}")
    _expect_keys(path, cid, section, ("entity", "fun_facts"), where)
    _expect_only(path, cid, section, ("entity", "fun_facts", f"{kinds[0]}_wiki_lead_section"), where)
    _expect(isinstance(section["entity"], str), path, cid, f"{where}: 'entity' must be a string")
    _expect(is_str_list(section["fun_facts"]), path, cid, f"{where}: 'fun_facts' must be a list of strings")
    kind = kinds[0]
    lead = section[f"{kind}_wiki_lead_section"]
    row = {"entity": section["entity"], "wiki_lead_kind": WIKI_KINDS.index(kind)}
    if texts is None:
        _expect(isinstance(lead, str), path, cid, f"{where}: the {kind} wiki lead section must be text, got {lead!r}")
        return row | {"wiki_lead_section": lead, "wiki_lead_id": None, "fun_facts": section["fun_facts"],
                      "fun_fact_ids": None}
    _expect(isinstance(lead, int) and lead in texts[kind], path, cid,
            f"{where}: {kind} wiki lead section id {lead!r} is not in {WIKI}")
    return row | {"wiki_lead_section": texts[kind][lead], "wiki_lead_id": lead, "fun_facts": None,
                  "fun_fact_ids": section["fun_facts"]}


def _parse_article(path, cid, article, form):
    if form == "pre-build":
        _expect(article is None or isinstance(article, str), path, cid, f"'article_url' must be a string, got {article!r}")
        return {key: article if key == "url" else None for key in ARTICLE_KEYS}
    _expect(isinstance(article, dict), path, cid, f"'article' must be an object, got {article!r}")
    _expect_only(path, cid, article, ARTICLE_KEYS, "article")
    for key, value in article.items():
        _expect(value is None or isinstance(value, str), path, cid, f"article: {key!r} must be text, got {value!r}")
    return {key: article.get(key) for key in ARTICLE_KEYS}


def _wiki_texts(path):
    """``src/wiki/wiki.json`` maps text to id per kind; build.py looks texts up by id."""
    data = read_json(path)
    _expect(isinstance(data, dict), path, "-", f"expected a JSON object, got {type(data).__name__}")
    extra = sorted(set(data) - {f"{kind}_wiki_lead_section" for kind in WIKI_KINDS})
    _expect(not extra, path, "-", f"unexpected key(s) {', '.join(map(repr, extra))}")
    return {kind: _wiki_ids(path, f"{kind}_wiki_lead_section", data.get(f"{kind}_wiki_lead_section"))
            for kind in WIKI_KINDS}


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
