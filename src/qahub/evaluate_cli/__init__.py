"""Command-line adapters of the metrics: one module per metric, used by ``qahub evaluate NAME``."""
