"""evaluate metric modules, one directory per metric (installed as data under ``qahub.metrics``)."""
