"""A scripted inspect-ai model for the offline tests: ``get_model("qahub_script/NAME", reply=FUNCTION)`` replies
``FUNCTION(prompt)`` to each prompt (the text of its last message); without ``reply``, the text ``NAME``. It
reports its token usage itself (inspect's mockllm counts tokens with a tiktoken file it downloads)."""

from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi


@modelapi(name="qahub_script")
def scripted():
    return Scripted


class Scripted(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=None, reply=None, **_args):
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.reply = reply or (lambda prompt: model_name)
        self.requests = []  # (prompt, config) of every generate call

    async def generate(self, input, tools, tool_choice, config):
        prompt = input[-1].text
        self.requests.append((prompt, config))
        output = ModelOutput.from_content(model=self.model_name, content=self.reply(prompt))
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output
