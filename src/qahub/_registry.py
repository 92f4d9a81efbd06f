"""What inspect-ai loads through qahub's ``inspect_ai`` entry point: every ``qahub/<task>`` task, and the
scripted models ``qahub/...`` (``qahub/oracle``: each sample's target, for a smoke test offline)."""

from qahub.inspect_models import Scripted  # noqa: F401  (importing registers the qahub/ models)
from qahub.inspect_tasks import TASKS  # noqa: F401  (importing registers them)
