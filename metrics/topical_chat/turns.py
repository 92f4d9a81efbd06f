"""The only place where Topical-Chat rows become per-turn examples.

A conversation row is one row of the ``conversations`` (or ``asr``) config as ``load_dataset`` yields it; a
reading-set row is one row of the ``reading_sets`` config. An example is one turn of a conversation with a
history: turns 1, 2, ... (turn 0 opens the conversation and is not an example).
"""

from .checks import record_id

AGENTS = ("agent_1", "agent_2")
FACTUAL = ("FS1", "FS2", "FS3")
ARTICLE = ("AS1", "AS2", "AS3", "AS4")


def turn_examples(conversation_row, reading_set_row=None):
    """One dict per turn after the first: {conversation_id, turn_index, agent, history: [{agent, message}],
    response (the gold message), knowledge (text of the turn's knowledge sources, or None)}."""
    check_conversation(conversation_row)
    if reading_set_row is not None:
        check_reading_set(reading_set_row)
    return examples_of(conversation_row, reading_set_row)


def examples_of(conversation_row, reading_set_row=None):
    """``turn_examples`` of rows already checked (check_conversation, check_reading_set)."""
    cid = conversation_row["conversation_id"]
    turns = [(agent_name(turn["agent"]), turn["message"], turn["knowledge_source"] or [])
             for turn in conversation_row["turns"]]
    examples = []
    for index in range(1, len(turns)):
        agent, message, sources = turns[index]
        knowledge = turn_knowledge(reading_set_row, agent, sources) if reading_set_row is not None else None
        examples.append({
            "conversation_id": cid, "turn_index": index, "agent": agent,
            "history": [{"agent": a, "message": m} for a, m, _ in turns[:index]],
            "response": message, "knowledge": knowledge,
        })
    return examples


def turn_knowledge(reading_set, agent, sources):
    """The text of the sections a turn names as its knowledge source, from its agent's reading set: for FSn the
    Wikipedia lead section and the fun facts, for ASn the article section; None when there is none."""
    parts = []
    for source in sources:
        if source in FACTUAL and (reading_set.get(agent) or {}).get(source):
            section = reading_set[agent][source]
            parts += [section.get("wiki_lead_section") or "", *(section.get("fun_facts") or [])]
        elif source in ARTICLE and (reading_set.get("article") or {}).get(source):
            parts.append(reading_set["article"][source])
    return " ".join(part for part in parts if part) or None


def agent_name(agent):
    """The ClassLabel integer (0, 1) or the name ("agent_1", "agent_2") of a turn's agent, as its name."""
    if isinstance(agent, int) and not isinstance(agent, bool) and agent in (0, 1):
        return AGENTS[agent]
    if agent in AGENTS:
        return agent
    raise ValueError(f"agent must be 0, 1, 'agent_1' or 'agent_2', got {agent!r}")


def check_conversation(row, where="conversation row"):
    """Raise ValueError naming the record when ``row`` is not a conversation row."""
    cid = record_id(row, "conversation_id", where, "a conversation row (a dict)")
    turns = row.get("turns")
    if not isinstance(turns, list):
        raise ValueError(f"{where} {cid!r}: 'turns' must be a list, got {type(turns).__name__}")
    for index, turn in enumerate(turns):
        problem = _turn_problem(turn)
        if problem:
            raise ValueError(f"{where} {cid!r}: turn {index}: {problem}")


def _turn_problem(turn):
    if not isinstance(turn, dict):
        return f"expected a dict, got {type(turn).__name__}"
    if not isinstance(turn.get("message"), str):
        return f"'message' must be a string, got {turn.get('message')!r}"
    try:
        agent_name(turn.get("agent"))
    except ValueError as err:
        return str(err)
    sources = turn.get("knowledge_source")
    if sources is not None and not (isinstance(sources, list) and all(isinstance(s, str) for s in sources)):
        return f"'knowledge_source' must be a list of strings, got {sources!r}"
    return None


def check_reading_set(row, where="reading set row"):
    """Raise ValueError naming the record when ``row`` is not a reading-set row."""
    if not isinstance(row, dict) or not isinstance(row.get("conversation_id"), str):
        raise ValueError(f"{where}: expected a reading-set row with a string 'conversation_id', got {row!r:.200}")
    cid = row["conversation_id"]
    for key in (*AGENTS, "article"):
        if key not in row:
            raise ValueError(f"{where} {cid!r}: no {key!r}")
        value = row[key]
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{where} {cid!r}: {key!r} must be a dict or None, got {type(value).__name__}")
        for name, section in (value or {}).items():
            if key == "article" and name in ARTICLE and section is not None and not isinstance(section, str):
                raise ValueError(f"{where} {cid!r}: article {name} must be a string or None, got {section!r}")
            if key != "article" and section is not None and not _factual_ok(section):
                raise ValueError(f"{where} {cid!r}: {key} {name} must have a string 'wiki_lead_section' and a "
                                 f"list of strings 'fun_facts', got {section!r:.200}")


def _factual_ok(section):
    facts = section.get("fun_facts") if isinstance(section, dict) else None
    return (isinstance(section, dict) and isinstance(section.get("wiki_lead_section") or "", str)
            and (facts is None or (isinstance(facts, list) and all(isinstance(f, str) for f in facts))))
