import json
import re
import shutil
from pathlib import Path

import hostile
import pytest

import qahub
from qahub import registry
from qahub.readers import SourceDataError
from qahub.testing import assert_export_roundtrip, build, shared_data

SAMPLE = registry.samples_dir("topical_chat")
SPLITS = ["train", "valid_freq", "valid_rare", "test_freq", "test_rare"]
REAL_SPLITS = SPLITS[1:]
REAL_TURNS = {"valid_freq": 11681, "valid_rare": 11692, "test_freq": 11760, "test_rare": 11770}
SAMPLE_TEST_FREQ_A = "t_2b56287d-0e03-500a-b3d9-ca835e6f11ab"
SAMPLE_TEST_FREQ_C = "t_3620a7a8-e7fc-52a6-b7f1-796880878625"
# label ids: agent_1 0, agent_2 1; Surprised 5, Curious to dive deeper 6, Neutral 7, Happy 4;
# Poor 0, Not Good 1, Passable 2, Good 3, Excellent 4; configs A 0 .. D 3
RATING = {"Poor": 0, "Not Good": 1, "Passable": 2, "Good": 3, "Excellent": 4, "": -1}


def build_with(config, data_dir, cache_dir, **kwargs):
    builder = qahub.make_builder("topical_chat", config, data_dir=data_dir, cache_dir=str(cache_dir), **kwargs)
    qahub.prepare(builder)  # raises the builder's SourceDataError, not datasets' wrapper
    return builder.as_dataset()


def test_sample_conversations(tmp_path):
    ds = build("topical_chat", "conversations", SAMPLE, tmp_path)
    assert {split: len(ds[split]) for split in ds} == {"train": 3, "valid_freq": 2, "valid_rare": 2,
                                                        "test_freq": 2, "test_rare": 2}
    assert ds["test_freq"][0] == {
        "conversation_id": SAMPLE_TEST_FREQ_A,
        "article_url": "https://www.washingtonpost.com/example/2018/09/12/rover-finds-water-ice/",
        "config": 0,
        "turns": [
            {"agent": 0, "message": "Hello! Do you follow space news?", "sentiment": 6,
             "knowledge_source": ["Personal Knowledge"], "turn_rating": 3},
            {"agent": 1, "message": "A rover found signs of water ice under the dust on Mars.", "sentiment": 4,
             "knowledge_source": ["AS1", "FS1"], "turn_rating": 4},
            {"agent": 0, "message": "That could help future crews. Did you know sunsets there are blue?",
             "sentiment": 5, "knowledge_source": ["AS2", "FS1"], "turn_rating": 3},
        ],
        "conversation_rating": {"agent_1": 4, "agent_2": 4},
    }
    features = ds["test_freq"].features
    assert features["turns"].feature["sentiment"].names == ["Angry", "Disgusted", "Fearful", "Sad", "Happy", "Surprised",
                                                      "Curious to dive deeper", "Neutral"]
    assert features["conversation_rating"]["agent_1"].names == ["Poor", "Not Good", "Passable", "Good", "Excellent"]


def test_sample_empty_ratings_load_as_missing(tmp_path):
    ds = build("topical_chat", "conversations", SAMPLE, tmp_path)
    for split in ds:
        raw = json.loads((SAMPLE / "conversations" / f"{split}.json").read_text(encoding="utf-8"))
        for row in ds[split]:
            record = raw[row["conversation_id"]]
            assert [turn["turn_rating"] for turn in row["turns"]] == [RATING[t["turn_rating"]] for t in record["content"]]
            assert row["conversation_rating"] == {a: RATING[r] for a, r in record["conversation_rating"].items()}
    assert ds["train"][1]["turns"][1]["turn_rating"] == -1
    assert ds["valid_freq"][1]["conversation_rating"] == {"agent_1": 4, "agent_2": -1}


def test_sample_reading_sets_post_build(tmp_path):
    ds = build("topical_chat", "reading_sets", SAMPLE, tmp_path)
    assert {split: len(ds[split]) for split in ds} == {"train": 3, "valid_freq": 2, "valid_rare": 2,
                                                        "test_freq": 2, "test_rare": 2}
    row = ds["test_freq"][0]
    assert (row["conversation_id"], row["config"], row["form"]) == (SAMPLE_TEST_FREQ_A, 0, 0)
    assert row["agent_2"]["FS1"] == {
        "entity": "Mars", "wiki_lead_kind": 1,
        "wiki_lead_section": "Mars is the fourth planet from the Sun and is called the Red Planet.",
        "wiki_lead_id": None,
        "fun_facts": ["sunsets on Mars are blue", "a day on Mars is about 40 minutes longer than a day on Earth"],
        "fun_fact_ids": None,
    }
    assert row["article"] == {
        "url": "https://www.washingtonpost.com/example/2018/09/12/rover-finds-water-ice/",
        "headline": "Rover finds signs of water ice",
        "AS1": "Scientists said the rover detected ice under the dust.", "AS2": "The find could help future crews.",
        "AS3": "The mission was planned for ten years.", "AS4": "A new rover will launch in 2020.",
    }
    config_c = ds["test_freq"][1]
    assert config_c["config"] == 2 and config_c["article"]["headline"] is None
    assert config_c["article"]["url"] == "https://www.washingtonpost.com/example/2018/03/20/pizza-contest/"


def test_sample_reading_sets_pre_build(tmp_path):
    ds = build_with("reading_sets", SAMPLE, tmp_path, reading_set_form="pre-build")
    row = ds["test_freq"][0]
    assert row["form"] == 1
    assert row["agent_1"]["FS2"] == {
        "entity": "Chess", "wiki_lead_kind": 0,
        "wiki_lead_section": "Chess is a board game for two players played on a checkered board of 64 squares.",
        "wiki_lead_id": 900002, "fun_facts": None, "fun_fact_ids": ["t3_bb01", "t3_bb02"],
    }
    assert row["article"] == {"url": "https://www.washingtonpost.com/example/2018/09/12/rover-finds-water-ice/",
                              "headline": None, "AS1": None, "AS2": None, "AS3": None, "AS4": None}


def test_sample_asr(tmp_path):
    ds = build("topical_chat", "asr", SAMPLE, tmp_path)
    assert sorted(ds) == ["test_freq", "test_rare"]
    turn = ds["test_freq"][0]["turns"][1]
    assert turn["message"] == "A rover found signs of water ice under the dust on Mars."
    assert turn["message_asr_A"] == "A rover found signs of water I under the dust on Mars."
    assert turn["message_asr_B"] == "a rover found signs of water ice under the dust on mars"
    conversations = build("topical_chat", "conversations", SAMPLE, tmp_path / "c")
    plain = {key: value for key, value in ds["test_freq"][0].items() if key != "turns"}
    assert plain == {key: value for key, value in conversations["test_freq"][0].items() if key != "turns"}


@pytest.mark.quick
def test_sample_export_roundtrip(tmp_path):
    counts = assert_export_roundtrip("topical_chat", SAMPLE, tmp_path)
    assert counts["conversations"]["train"] == 3
    assert counts["reading_sets"]["test_rare"] == 2
    assert counts["asr"] == {"test_freq": 1, "test_rare": 1}


# choosing splits


def test_absent_split_is_an_error_naming_it(tmp_path):
    data = copy_sample(tmp_path, without=["conversations/train.json"])
    with pytest.raises(FileNotFoundError, match=r"split 'train' of topical_chat/conversations needs conversations/train\.json"):
        build("topical_chat", "conversations", data, tmp_path / "cache")


def test_present_splits_only_and_splits(tmp_path):
    data = copy_sample(tmp_path, without=["conversations/train.json", "reading_sets/post-build/valid_rare.json"])
    ds = build_with("conversations", data, tmp_path / "c1", present_splits_only=True)
    assert sorted(ds) == sorted(REAL_SPLITS)
    ds = build_with("reading_sets", data, tmp_path / "c2", splits=("valid_rare", "test_rare"))
    assert sorted(ds) == ["test_rare", "valid_rare"]
    assert ds["valid_rare"][0]["form"] == 1  # auto: post-build absent, pre-build + wiki used
    assert ds["test_rare"][0]["form"] == 0
    assert list(build_with("asr", data, tmp_path / "c5", splits="test_rare")) == ["test_rare"]
    with pytest.raises(ValueError, match=r"reading_set_form must be auto, post-build or pre-build, got 'built'"):
        build_with("reading_sets", data, tmp_path / "c6", reading_set_form="built")
    with pytest.raises(ValueError, match=r"unknown split\(s\) \['valid'\]"):
        build_with("conversations", data, tmp_path / "c3", splits=("valid",))
    with pytest.raises(ValueError, match=r"unknown split\(s\) \['train'\]"):
        build_with("asr", data, tmp_path / "c4", splits=("train",))


# downloads (from a mirror served on 127.0.0.1)


def test_download_from_mirror(tmp_path, http_server):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "topical_chat").symlink_to(SAMPLE, target_is_directory=True)
    base = http_server(tmp_path / "root")
    ds = build_with("conversations", None, tmp_path / "c1", mirror_url=base, splits=("train",))
    assert len(ds["train"]) == 3
    # the sample's valid_freq is not the pinned upstream file
    with pytest.raises(SourceDataError, match=r"conversations/valid_freq\.json: checksum mismatch"):
        build_with("conversations", None, tmp_path / "c2", mirror_url=base, splits=("valid_freq",))


def test_download_real_files_from_mirror(tmp_path, http_server):
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "topical_chat").symlink_to(real, target_is_directory=True)
    base = http_server(tmp_path / "root")
    ds = build_with("reading_sets", None, tmp_path / "c", mirror_url=base, splits=("test_rare",))
    assert len(ds["test_rare"]) == 539 and ds["test_rare"][0]["form"] == 1


# real data


def real_dir(tmp_path):
    """../shared/data/topical_chat plus the sample train files (absent there); train reading sets post-build."""
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    root = tmp_path / "real"
    for path in real.rglob("*.json"):
        target = root / path.relative_to(real)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(path)
    for rel in ("conversations/train.json", "reading_sets/post-build/train.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / rel, root / rel)
    return root


@pytest.mark.slow
def test_real_counts(tmp_path):
    data = real_dir(tmp_path)
    ds = build("topical_chat", "conversations", data, tmp_path / "c")
    assert {split: len(ds[split]) for split in REAL_SPLITS} == dict.fromkeys(REAL_SPLITS, 539)
    turns = {split: [turn for conv in ds[split]["turns"] for turn in conv] for split in REAL_SPLITS}
    assert {split: len(turns[split]) for split in REAL_SPLITS} == REAL_TURNS
    assert sum(turn["turn_rating"] == -1 for split in REAL_SPLITS for turn in turns[split]) == 455
    ratings = [r[agent] for split in REAL_SPLITS for r in ds[split]["conversation_rating"] for agent in r]
    assert sum(rating == -1 for rating in ratings) == 6
    reading = build("topical_chat", "reading_sets", data, tmp_path / "r")
    assert {split: len(reading[split]) for split in REAL_SPLITS} == dict.fromkeys(REAL_SPLITS, 539)
    assert set(reading["valid_freq"]["form"]) == {1}
    asr = build("topical_chat", "asr", data, tmp_path / "a")
    assert [sum(len(conv) for conv in asr[split]["turns"]) for split in ("test_freq", "test_rare")] == [880, 893]
    for split in ("test_freq", "test_rare"):  # the ASR conversations are test conversations, same messages
        messages = {row["conversation_id"]: [t["message"] for t in row["turns"]] for row in ds[split]}
        assert all([t["message"] for t in row["turns"]] == messages[row["conversation_id"]] for row in asr[split])


def test_real_data_without_train(tmp_path):
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    with pytest.raises(FileNotFoundError, match=r"split 'train' of topical_chat/reading_sets needs conversations/train\.json, "
                                                r"reading_sets/pre-build/train\.json"):
        build("topical_chat", "reading_sets", real, tmp_path / "c1")
    ds = build_with("conversations", real, tmp_path / "c2", present_splits_only=True)
    assert {split: len(rows) for split, rows in ds.items()} == dict.fromkeys(REAL_SPLITS, 539)


def label_names(features):
    """Decode a row's ClassLabel ids back to the upstream strings (-1, a missing rating, back to "")."""
    turn = features["turns"].feature
    rating = turn["turn_rating"].names

    def name(names, value):
        return "" if value == -1 else names[value]

    def decode(row):
        turns = [{**t, "agent": name(turn["agent"].names, t["agent"]),
                  "sentiment": name(turn["sentiment"].names, t["sentiment"]),
                  "turn_rating": name(rating, t["turn_rating"])} for t in row["turns"]]
        return {**row, "config": features["config"].names[row["config"]], "turns": turns,
                "conversation_rating": {a: name(rating, r) for a, r in row["conversation_rating"].items()}}
    return decode


def upstream_row(cid, record):
    """What a row must hold, straight from the upstream record (every key of it)."""
    return {"conversation_id": cid, "article_url": record["article_url"], "config": record["config"],
            "turns": record["content"], "conversation_rating": record["conversation_rating"]}


@pytest.mark.slow
def test_real_rows_match_the_files(tmp_path):
    """Every field of every row of the four real splits and of the two ASR files equals the upstream record."""
    data = real_dir(tmp_path)
    for config, rel_of in (("conversations", lambda s: f"conversations/{s}.json"),
                           ("asr", lambda s: f"TopicalChatASR/actual/{s}_audio.json")):
        splits = REAL_SPLITS if config == "conversations" else ["test_freq", "test_rare"]
        ds = build_with(config, data, tmp_path / config, splits=tuple(splits))
        for split in splits:
            raw = json.loads((data / rel_of(split)).read_text(encoding="utf-8"))
            decode = label_names(ds[split].features)
            assert len(ds[split]) == len(raw) == (539 if config == "conversations" else 40)
            assert [decode(row) for row in ds[split]] == [upstream_row(cid, record) for cid, record in raw.items()]


def upstream_reading_set(cid, record, wiki):
    """A pre-build record resolved as upstream build.py resolves it (text looked up by id), in the row's shape."""
    by_id = {kind: {wiki_id: text for text, wiki_id in wiki[f"{kind}_wiki_lead_section"].items()}
             for kind in ("shortened", "summarized")}

    def section(fs):
        (kind,) = [k for k in ("shortened", "summarized") if f"{k}_wiki_lead_section" in fs]
        wiki_id = fs[f"{kind}_wiki_lead_section"]
        return {"entity": fs["entity"], "wiki_lead_kind": kind, "wiki_lead_section": by_id[kind][wiki_id],
                "wiki_lead_id": wiki_id, "fun_facts": None, "fun_fact_ids": fs["fun_facts"]}

    return {"conversation_id": cid, "config": record["config"], "form": "pre-build",
            **{agent: {name: section(record[agent][name]) for name in ("FS1", "FS2", "FS3")}
               for agent in ("agent_1", "agent_2")},
            "article": {"url": record["article_url"], "headline": None, "AS1": None, "AS2": None, "AS3": None,
                        "AS4": None}}


@pytest.mark.slow
def test_real_reading_sets_match_the_files_and_wiki(tmp_path):
    data = real_dir(tmp_path)
    wiki = json.loads((data / "src/wiki/wiki.json").read_text(encoding="utf-8"))
    ds = build_with("reading_sets", data, tmp_path / "r", splits=tuple(REAL_SPLITS))
    for split in REAL_SPLITS:
        raw = json.loads((data / f"reading_sets/pre-build/{split}.json").read_text(encoding="utf-8"))
        assert len(ds[split]) == len(raw) == 539
        rows = [decode_reading_set(row, ds[split].features) for row in ds[split]]
        assert rows == [upstream_reading_set(cid, record, wiki) for cid, record in raw.items()]


def decode_reading_set(row, features):
    kinds = features["agent_1"]["FS1"]["wiki_lead_kind"].names
    sections = {agent: {name: {**fs, "wiki_lead_kind": kinds[fs["wiki_lead_kind"]]} for name, fs in row[agent].items()}
                for agent in ("agent_1", "agent_2")}
    return {**row, **sections, "config": features["config"].names[row["config"]],
            "form": features["form"].names[row["form"]]}


def test_card_example_is_the_real_first_row():
    """The card's example: the first valid_freq row as the builder makes it, first turn only."""
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    from qahub.loaders._topical_chat_files import read_conversations

    card = registry.card_path("topical_chat").read_text(encoding="utf-8")
    block = card.split("## Example (`conversations`, abridged)")[1].split("```json\n")[1].split("```")[0]
    example = json.loads(block)
    row = next(iter(read_conversations(real / "conversations/valid_freq.json")))
    assert example == {**row, "turns": [row["turns"][0], "..."]}


@pytest.mark.slow
def test_real_export_roundtrip(tmp_path):
    counts = assert_export_roundtrip("topical_chat", real_dir(tmp_path), tmp_path)
    assert counts["conversations"] == {"train": 3, **dict.fromkeys(REAL_SPLITS, 539)}
    assert counts["reading_sets"] == {"train": 3, **dict.fromkeys(REAL_SPLITS, 539)}
    assert counts["asr"] == {"test_freq": 40, "test_rare": 40}


# bad input


def copy_sample(tmp_path, without=()):
    data = hostile.sample_copy("topical_chat", tmp_path)
    for rel in without:
        (data / rel).unlink()
    return data


def edit(data, rel, change):
    path = data / rel
    records = json.loads(path.read_text(encoding="utf-8"))
    change(records)
    path.write_text(json.dumps(records), encoding="utf-8")


def assert_bad(tmp_path, data, config, match, **kwargs):
    """The build fails with a SourceDataError matching ``match`` and leaves no dataset files behind."""
    cache = tmp_path / "cache"
    with pytest.raises(SourceDataError, match=match):
        build_with(config, data, cache, **kwargs)
    assert hostile.half_written(cache) == []


def test_unknown_rating_and_agent(tmp_path):
    data = copy_sample(tmp_path)
    edit(data, "conversations/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_A]["conversation_rating"].update(agent_2="Great"))
    assert_bad(tmp_path, data, "conversations",
               rf"record {SAMPLE_TEST_FREQ_A}: unknown conversation_rating of agent_2 'Great'", splits=("test_freq",))
    edit(data, "conversations/test_rare.json", lambda r: next(iter(r.values()))["content"][1].update(agent="agent_3"))
    assert_bad(tmp_path, data, "conversations", r"test_rare\.json: record t_\S+: turn 1: unknown agent 'agent_3'",
               splits=("test_rare",))
    data_asr = data / "TopicalChatASR/actual/test_freq_audio.json"
    data_asr.write_text(data_asr.read_text().replace('"message_asr_B"', '"message_asr_b"'))
    assert_bad(tmp_path, data, "asr", rf"test_freq_audio\.json: record {SAMPLE_TEST_FREQ_A}: turn 0: missing key\(s\) message_asr_B",
               splits=("test_freq",))


def test_reading_set_problems(tmp_path):
    data = copy_sample(tmp_path)
    edit(data, "reading_sets/pre-build/test_freq.json",
         lambda r: r[SAMPLE_TEST_FREQ_A]["agent_2"]["FS3"].update(summarized_wiki_lead_section=123))
    assert_bad(tmp_path, data, "reading_sets",
               rf"pre-build/test_freq\.json: record {SAMPLE_TEST_FREQ_A}: agent_2 FS3: summarized wiki lead section id 123 is not in src/wiki/wiki\.json",
               splits=("test_freq",), reading_set_form="pre-build")
    edit(data, "reading_sets/post-build/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_C].update(config="D"))
    assert_bad(tmp_path, data, "reading_sets",
               rf"record {SAMPLE_TEST_FREQ_C}: config 'D' differs from the conversation's 'C'", splits=("test_freq",))
    edit(data, "reading_sets/post-build/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_A]["article"].update(message="Forbidden"))
    assert_bad(tmp_path, data, "reading_sets", rf"record {SAMPLE_TEST_FREQ_A}: article: unexpected key\(s\) 'message'",
               splits=("test_freq",))


def test_malformed_files(tmp_path):
    data = copy_sample(tmp_path)
    path = data / "conversations/test_rare.json"
    path.write_text(path.read_text(encoding="utf-8")[:-40], encoding="utf-8")
    assert_bad(tmp_path, data, "conversations", r"test_rare\.json: record after t_\S+: not valid JSON \(parse error",
               splits=("test_rare",))
    path.write_text("[]", encoding="utf-8")
    assert_bad(tmp_path, data, "conversations", r"test_rare\.json: record -: expected a JSON object keyed by conversation id",
               splits=("test_rare",))
    text = (SAMPLE / "conversations/test_rare.json").read_text(encoding="utf-8")
    path.write_text(text[:-2] + "," + text[1:], encoding="utf-8")  # the same ids twice
    assert_bad(tmp_path, data, "conversations", r"test_rare\.json: record t_\S+: duplicate conversation id",
               splits=("test_rare",))


def test_wiki_ids_must_be_integers_used_once(tmp_path):
    data = copy_sample(tmp_path)
    edit(data, "src/wiki/wiki.json", lambda r: r["shortened_wiki_lead_section"].update({"zzz": [1]}))
    assert_bad(tmp_path, data, "reading_sets",
               r"src/wiki/wiki\.json: record shortened_wiki_lead_section\['zzz'\]: the id must be an integer, got \[1\]",
               splits=("test_freq",), reading_set_form="pre-build")
    data = copy_sample(tmp_path / "second")
    edit(data, "src/wiki/wiki.json", lambda r: r["summarized_wiki_lead_section"].update({"Another text.": 900101}))
    assert_bad(tmp_path, data, "reading_sets", r"src/wiki/wiki\.json: record summarized_wiki_lead_section\['Another "
               r"text\.'\]: id 900101 is also the id of 'Jazz is a music genre", splits=("test_freq",), reading_set_form="pre-build")


def first_turn(records):
    return records[SAMPLE_TEST_FREQ_A]["content"][0]


def first_section(records):
    return records[SAMPLE_TEST_FREQ_A]["agent_1"]["FS1"]


UNKNOWN_KEYS = [  # (config, file, where the key goes, expected message after the record id)
    ("conversations", "conversations/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_A],
     r"unexpected key\(s\) 'extra_field'"),
    ("conversations", "conversations/test_freq.json", first_turn, r"turn 0: unexpected key\(s\) 'extra_field'"),
    ("conversations", "conversations/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_A]["conversation_rating"],
     r"conversation_rating: unexpected key\(s\) 'extra_field'"),
    ("asr", "TopicalChatASR/actual/test_freq_audio.json", first_turn, r"turn 0: unexpected key\(s\) 'extra_field'"),
    ("reading_sets", "reading_sets/post-build/test_freq.json", first_section,
     r"agent_1 FS1: unexpected key\(s\) 'extra_field'"),
    ("reading_sets", "reading_sets/post-build/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_A],
     r"post-build reading set: unexpected key\(s\) 'extra_field'"),
]


@pytest.mark.parametrize("config, rel, where, match", UNKNOWN_KEYS)
def test_unknown_keys_are_errors_not_dropped(tmp_path, config, rel, where, match):
    data = copy_sample(tmp_path)
    edit(data, rel, lambda records: where(records).update(extra_field="x"))
    assert_bad(tmp_path, data, config, rf"{re.escape(rel)}: record {SAMPLE_TEST_FREQ_A}: {match}", splits=("test_freq",))


ONE_EDIT = [  # (config, file, change of its records, expected message, build options)
    pytest.param("conversations", "conversations/test_freq.json", lambda r: r[SAMPLE_TEST_FREQ_C].pop("content"),
                 rf"conversations/test_freq\.json: record {SAMPLE_TEST_FREQ_C}: missing key\(s\) content", {},
                 id="conversation_without_content"),
    pytest.param("conversations", "conversations/test_freq.json",
                 lambda r: r[SAMPLE_TEST_FREQ_A]["content"][2].update(sentiment="Curious to Dive Deeper"),
                 rf"test_freq\.json: record {SAMPLE_TEST_FREQ_A}: turn 2: unknown sentiment 'Curious to Dive Deeper'", {},
                 id="unknown_sentiment"),
    pytest.param("reading_sets", "reading_sets/post-build/test_freq.json",
                 lambda r: r.update({"t_no-such-conversation": r[SAMPLE_TEST_FREQ_A]}),
                 r"post-build/test_freq\.json: record t_no-such-conversation: no conversation with this id in "
                 r".*conversations/test_freq\.json", {}, id="reading_set_for_unknown_conversation"),
    pytest.param("conversations", "conversations/test_freq.json",
                 lambda r: first_turn(r).update(message_sim_asr="hello do you"),
                 rf"test_freq\.json: record {SAMPLE_TEST_FREQ_A}: turn 0: unexpected key\(s\) 'message_sim_asr'", {},
                 id="synthetic_asr_key_is_refused_in_conversations"),
    pytest.param("reading_sets", "reading_sets/pre-build/test_freq.json",
                 lambda r: first_section(r).update(topic="space"),
                 rf"pre-build/test_freq\.json: record {SAMPLE_TEST_FREQ_A}: agent_1 FS1: unexpected key\(s\) 'topic'",
                 {"reading_set_form": "pre-build"}, id="pre_build_section_with_unknown_key"),
    pytest.param("reading_sets", "reading_sets/post-build/test_freq.json", lambda r: r.pop(SAMPLE_TEST_FREQ_A),
                 rf"post-build/test_freq\.json: record {SAMPLE_TEST_FREQ_A}: no reading set for this conversation of "
                 r".*conversations/test_freq\.json \(1 conversation\(s\) lack one\)", {},
                 id="conversation_without_reading_set"),
    pytest.param("reading_sets", "conversations/test_freq.json", lambda r: r.update({SAMPLE_TEST_FREQ_A: []}),
                 rf"conversations/test_freq\.json: record {SAMPLE_TEST_FREQ_A}: expected an object, got list", {},
                 id="conversation_record_not_an_object_in_reading_sets_config"),
]


@pytest.mark.parametrize("config, rel, change, match, options", ONE_EDIT)
def test_one_bad_edit_is_a_named_error(tmp_path, config, rel, change, match, options):
    data = copy_sample(tmp_path)
    edit(data, rel, change)
    assert_bad(tmp_path, data, config, match, splits=("test_freq",), **options)


def test_empty_split_file(tmp_path):
    data = copy_sample(tmp_path)
    (data / "conversations/test_freq.json").write_text("{}\n", encoding="utf-8")
    assert_bad(tmp_path, data, "conversations", r"conversations/test_freq\.json: record -: no conversations",
               splits=("test_freq",))
    (data / "conversations/test_freq.json").write_text("", encoding="utf-8")
    assert_bad(tmp_path, data, "conversations", r"conversations/test_freq\.json: record -: empty file",
               splits=("test_freq",))


@pytest.mark.parametrize("encode, problem", [
    (lambda text: text.encode("utf-16"), r"not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    (lambda text: text.encode("utf-16-le"), r"not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    (lambda text: text.replace("Hello", "H\u00e9llo").encode("cp1252"), r"not UTF-8 text \("),
])
def test_wrong_encodings_are_named(tmp_path, encode, problem):
    data = copy_sample(tmp_path)
    path = data / "conversations/test_freq.json"
    path.write_bytes(encode(path.read_text(encoding="utf-8")))
    assert_bad(tmp_path, data, "conversations", rf"conversations/test_freq\.json: record [^:]+: {problem}",
               splits=("test_freq",))


@pytest.mark.parametrize("encode, problem", [
    (lambda text: text.encode("utf-16"), r"not UTF-8 text \(UTF-16 or UTF-32 encoded\)"),
    (lambda text: text.replace("Jazz is a music genre from", "Le jazz, caf\u00e9").encode("latin-1"),
     r"not UTF-8 text \(invalid continuation byte at byte \d+, line \d+\)"),
])
def test_wiki_encoding_problems_are_named(tmp_path, encode, problem):
    data = copy_sample(tmp_path)
    wiki = data / "src/wiki/wiki.json"
    wiki.write_bytes(encode(wiki.read_text(encoding="utf-8")))
    assert_bad(tmp_path, data, "reading_sets", rf"src/wiki/wiki\.json: record -: {problem}",
               splits=("test_freq",), reading_set_form="pre-build")


def test_a_utf8_byte_order_mark_is_allowed(tmp_path):
    """As in every qahub reader (RFC 8259 lets a parser ignore it): the rows are those of the file without one."""
    data = copy_sample(tmp_path)
    for rel in ("conversations/test_freq.json", "reading_sets/pre-build/test_freq.json", "src/wiki/wiki.json"):
        (data / rel).write_bytes(b"\xef\xbb\xbf" + (data / rel).read_bytes())
    for config, options in [("conversations", {}), ("reading_sets", {"reading_set_form": "pre-build"})]:
        marked = build_with(config, data, tmp_path / "marked", splits=("test_freq",), **options)
        plain = build_with(config, SAMPLE, tmp_path / "plain", splits=("test_freq",), **options)
        assert marked["test_freq"].to_list() == plain["test_freq"].to_list()


def test_duplicate_keys_in_wiki_are_an_error(tmp_path):
    data = copy_sample(tmp_path)
    wiki = data / "src/wiki/wiki.json"
    wiki.write_text(wiki.read_text(encoding="utf-8").replace("{", '{"shortened_wiki_lead_section": {}, ', 1),
                    encoding="utf-8")
    assert_bad(tmp_path, data, "reading_sets",
               r"src/wiki/wiki\.json: record -: not valid JSON \(an object names the key "
               r"'shortened_wiki_lead_section' twice\)", splits=("test_freq",), reading_set_form="pre-build")


def test_post_build_file_read_as_pre_build(tmp_path):
    data = copy_sample(tmp_path)
    shutil.copy(data / "reading_sets/post-build/test_freq.json", data / "reading_sets/pre-build/test_freq.json")
    assert_bad(tmp_path, data, "reading_sets", rf"pre-build/test_freq\.json: record {SAMPLE_TEST_FREQ_A}: has 'article' "
               r"and no 'article_url': a post-build reading set, which is read without src/wiki/wiki\.json",
               splits=("test_freq",), reading_set_form="pre-build")


def test_missing_ijson_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ijson", None)
    with pytest.raises(ImportError, match=r"pip install 'ijson>=3.2,<4'"):
        build_with("conversations", SAMPLE, tmp_path, splits=("train",))


def test_sample_files_are_in_the_upstream_layout():
    rels = sorted(str(p.relative_to(SAMPLE)) for p in SAMPLE.rglob("*.json") if p.name != "demo.json"
                  and p.parent != SAMPLE)
    expected = [f"conversations/{s}.json" for s in SPLITS] + [f"reading_sets/{form}/{s}.json" for form in
                                                              ("post-build", "pre-build") for s in SPLITS]
    expected += ["TopicalChatASR/actual/test_freq_audio.json", "TopicalChatASR/actual/test_rare_audio.json",
                 "src/wiki/wiki.json"]
    assert rels == sorted(expected)
    assert Path(SAMPLE / "conversations/train.json").stat().st_size < 10_000


def test_pinned_checksums_match_the_shared_copies():
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    from qahub.loaders import topical_chat
    from qahub.loaders._sources import sha256_of

    assert len(topical_chat.SOURCE.sha256) == 11
    assert {rel: sha256_of(real / rel) for rel in topical_chat.SOURCE.sha256} == topical_chat.SOURCE.sha256


# --- the rows `qahub evaluate topical_chat --data-dir` reads without `datasets` are the built ones (issue 44)


def _local_equals_built(folder, cache):
    """Every config the adapter reads (conversations, asr, reading_sets in both forms, each split whose files are
    there): the reader's rows are what the builder gives after `datasets` cast them, values, None and key order."""
    from qahub.loaders import _topical_chat_files as files

    compared = []
    for config, form in (("conversations", "auto"), ("asr", "auto"), ("reading_sets", "post-build"),
                         ("reading_sets", "pre-build")):
        splits = [split for split in registry.catalog()["topical_chat"]["configs"][config]
                  if all((folder / rel).is_file() for rel in files.split_files(config, split, form).values())]
        if not splits:
            continue
        built = qahub.load("topical_chat", config, data_dir=str(folder), cache_dir=str(cache / f"{config}-{form}"),
                           splits=tuple(splits), reading_set_form=form)
        assert list(built) == splits
        for split in splits:
            local, rows = files.local_rows(folder, config, split, form), built[split].to_list()
            assert local == rows and local, (config, form, split)
            assert [list(row) for row in local] == [list(row) for row in rows]
            compared.append((config, form, split))
    return compared


def test_the_rows_read_without_datasets_are_the_built_rows(tmp_path):
    compared = _local_equals_built(SAMPLE, tmp_path)
    assert len(compared) == 5 + 2 + 5 + 5


@pytest.mark.slow
def test_the_rows_read_without_datasets_are_the_built_rows_of_the_shared_data(tmp_path):
    real = shared_data("topical_chat")
    if real is None:
        pytest.skip("../shared/data/topical_chat absent")
    compared = _local_equals_built(real, tmp_path)
    assert len(compared) == 4 + 2 + 4  # no train files nor post-build reading sets are mirrored


def test_the_reader_without_datasets_imports_neither_datasets_pandas_nor_pyarrow():
    import subprocess
    import sys

    code = ("import sys; from qahub.loaders import _topical_chat_files as f; f.local_rows(sys.argv[1], 'reading_sets',"
            " 'test_freq'); print(sorted({m.split('.')[0] for m in sys.modules} & {'datasets', 'pandas', 'pyarrow'}))")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
