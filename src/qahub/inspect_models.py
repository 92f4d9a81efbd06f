"""Scripted inspect-ai models, registered through qahub's ``inspect_ai`` entry point (``qahub._registry``), for a
run without a network or a model: ``inspect eval qahub/<task> --model qahub/oracle -T dataset=...`` replies each
sample's target (what a perfect model says), a smoke test of any task offline. (inspect's own ``mockllm/model``
counts tokens with a tiktoken file it downloads.)

``Scripted`` replies ``reply(prompt)`` to each prompt (the text of its last message); the tests script it with
their own replies.
"""

from __future__ import annotations

from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi

ORACLE = "oracle"
TARGETS = {}  # {prompt: target} of every qahub sample built in this process (inspect_tasks.task_samples)


@modelapi(name="qahub")
def qahub_models():
    return Scripted


class Scripted(ModelAPI):
    """A model replying ``reply(prompt)``, by default ``default_reply(model_name)``; it reports its token usage
    itself. ``requests`` holds the (prompt, config) of every generate call."""

    def __init__(self, model_name, base_url=None, api_key=None, config=None, reply=None, **_args):
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.reply = reply or self.default_reply(model_name)
        self.requests = []

    def default_reply(self, model_name):
        if model_name != ORACLE:
            raise ValueError(f"qahub/{model_name}: no such model; qahub/{ORACLE} replies each qahub sample's target")
        return oracle_reply

    async def generate(self, input, tools, tool_choice, config):
        prompt = input[-1].text
        self.requests.append((prompt, config))
        output = ModelOutput.from_content(model=self.model_name, content=self.reply(prompt))
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output


def remember(samples):
    """Keep the target of each sample, which ``qahub/oracle`` replies to its prompt."""
    TARGETS.update((sample.input, sample.target) for sample in samples)


def oracle_reply(prompt: str) -> str:
    """The target of the qahub sample whose prompt this is; "" for a prompt of no qahub sample (scored 0)."""
    return TARGETS.get(prompt, "")
