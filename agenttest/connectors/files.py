"""Connector IDs → ConnectorSpecs: ``connectors/<a>/<b>.conn.yao`` files with ``$ENV`` values, and the
implicit ``openai.<model>`` (FORMATS §1)."""

from __future__ import annotations

import os

from ..app import App
from ..errors import AgentTestError, Location, did_you_mean
from ..secrets import Secrets
from ..userfiles import read_jsonc, substitute_env
from .base import ConnectorSpec

LIFTED = ("max_concurrency", "rpm", "pricing")  # top-level keys of a connector file that count as options


def spec_for(app: App, connector_id: str, secrets: Secrets) -> ConnectorSpec:
    """The spec behind a connector ID; every value substituted from ``$ENV`` joins ``secrets``."""
    path = app.connector_path(connector_id)
    if os.path.isfile(path):
        data = read_jsonc(path)
        if not isinstance(data, dict) or "type" not in data:
            raise AgentTestError("a connector file needs a 'type'", Location(path), "e.g. {\"type\": \"openai\", \"options\": {...}}")
        found: dict[str, str] = {}
        data = substitute_env(data, f"connector {connector_id}", found)  # anywhere in the file: every value is a secret
        for name, value in found.items():
            secrets.add(value, name)
        options = dict(data.get("options") or {})
        for key in LIFTED:  # may be given beside "options" as well as inside it
            if key in data and key not in options:
                options[key] = data[key]
        return ConnectorSpec(connector_id, data["type"], options, path, tuple(found.values()))
    if connector_id.startswith("openai.") and len(connector_id) > len("openai."):
        if "OPENAI_API_KEY" not in os.environ:
            raise AgentTestError(f"connector {connector_id}: environment variable OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=…")
        key = os.environ["OPENAI_API_KEY"]
        secrets.add(key, "OPENAI_API_KEY")
        options = {"model": connector_id[len("openai."):], "key": key}
        if os.environ.get("OPENAI_BASE_URL"):
            options["base_url"] = os.environ["OPENAI_BASE_URL"]
        return ConnectorSpec(connector_id, "openai", options, None, (key,))
    known = app.connector_ids()
    hint = did_you_mean(connector_id, known)
    listing = ", ".join(known) or "none"
    raise AgentTestError(f"unknown connector '{connector_id}'", hint=(hint + " " if hint else "") + f"known connectors: {listing}; or openai.<model>")
