"""A scripted inspect-ai model for the offline tests: ``get_model("qahub_script/NAME", reply=FUNCTION)`` replies
``FUNCTION(prompt)`` to each prompt (the text of its last message); without ``reply``, the text ``NAME``. It is
qahub's own ``qahub.inspect_models.Scripted`` (the model behind ``--model qahub/oracle``), scripted."""

from inspect_ai.model import modelapi

from qahub import inspect_models


@modelapi(name="qahub_script")
def scripted():
    return Scripted


class Scripted(inspect_models.Scripted):
    def default_reply(self, model_name):
        return lambda prompt: model_name
