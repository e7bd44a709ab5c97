"""Provider presets: versioned data that says how one provider speaks a protocol (000 §4).

A preset is a YAML file in ``models/preset_data/`` (one per preset, ``version:`` bumped on every
change). It names the protocol (``chat`` | ``responses``), the endpoints by variant, the model
capabilities, how think parameters map into the body, where reasoning arrives, what history must
echo back, the max-tokens parameter, whether ``stream_options.include_usage`` is sent, the usage
field mapping and the provider's finish reasons. No code branches on a provider's name: every
difference is data, read here and by ``history`` / ``reasoning``.

``Preset.check`` runs at release compile time and refuses a capability the preset lacks (never
silently ignored); ``Preset.build_body`` produces the provider request body. A ``models:`` entry
in the file overrides sections for model ids matching its glob patterns (``Preset.for_model``)
and may state the window and output limit the provider documents for those models
(``Preset.descriptor``). ``discovery:`` declares that the provider's ``GET /models`` listing
may state a model's window, and in which fields (``models.discovery``).

Owns: loading, validating and applying presets, in private modules re-exported here:

- ``_sections``: the file's shape (closed vocabularies, frozen pydantic sections);
- ``_body``: the capabilities a request needs and the body-fragment helpers;
- ``_preset``: ``Preset`` (selection, the capability check, ``build_body``, connection wiring,
  the response-side mappings);
- ``_loading``: ``list_presets`` / ``load_preset`` / ``load_preset_file`` / ``parse_preset``.

Does not own: HTTP, SSE parsing, aggregation (``models/adapters``), or where the release keeps
the preset name (``config``).
"""

from __future__ import annotations

from agentloom.models.presets._body import capabilities_for
from agentloom.models.presets._loading import list_presets, load_preset, load_preset_file, parse_preset
from agentloom.models.presets._preset import Preset
from agentloom.models.presets._sections import (
    CAPABILITIES,
    FORMAT_VERSION,
    Capability,
    DiscoveryRules,
    EffortMapping,
    Endpoint,
    ErrorRules,
    HistoryRules,
    ReasoningRules,
    RequestRules,
    StreamRules,
    ThinkMapping,
    ThinkTags,
    UsageMapping,
)

__all__ = [
    "CAPABILITIES",
    "FORMAT_VERSION",
    "Capability",
    "DiscoveryRules",
    "EffortMapping",
    "Endpoint",
    "ErrorRules",
    "HistoryRules",
    "Preset",
    "ReasoningRules",
    "RequestRules",
    "StreamRules",
    "ThinkMapping",
    "ThinkTags",
    "UsageMapping",
    "capabilities_for",
    "list_presets",
    "load_preset",
    "load_preset_file",
    "parse_preset",
]
