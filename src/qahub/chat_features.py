"""The features of an export's training configs (``sft``, ``messages``): TRL's conversational columns, lists of
``{role, content}``, which the Hub's viewer shows as chats. Kept apart from ``qahub.training`` so that the export
reader checks a training config's features without importing the planning that makes its rows."""

from __future__ import annotations

SFT, MESSAGES = "sft", "messages"


def message_features():
    import datasets

    return datasets.List({"role": datasets.Value("string"), "content": datasets.Value("string")})


def features(config: str):
    import datasets

    source = {"config": datasets.Value("string"), "split": datasets.Value("string")}
    if config == SFT:
        return datasets.Features({"prompt": message_features(), "completion": message_features(),
                                  "task": datasets.Value("string"), "id": datasets.Value("string"), **source,
                                  "position": datasets.Value("int64")})
    return datasets.Features({"messages": message_features(), "task": datasets.Value("string"),
                              "id": datasets.Value("string"), **source})
