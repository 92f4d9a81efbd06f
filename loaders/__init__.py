"""Dataset builders, one module per corpus (installed as ``qahub.loaders``)."""
