"""Provider presets as versioned data: one YAML file per preset, read by ``models.presets``.

Adding a provider is adding a file here (see docs/models.md); no code branches per provider.
"""
