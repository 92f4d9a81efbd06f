"""What inspect-ai loads through qahub's ``inspect_ai`` entry point: every ``qahub/<task>`` task."""

from qahub.inspect_tasks import TASKS  # noqa: F401  (importing registers them)
