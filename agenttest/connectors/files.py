"""Connector IDs → ConnectorSpecs: ``connectors/<a>/<b>.conn.yao`` files with ``$ENV`` values, the
implicit ``openai.<model>``, and Yao's role connectors ``use::NAME`` (FORMATS §1)."""

from __future__ import annotations

import os

from agenttest.app.folders import App
from agenttest.errors import AgentTestError, Location, did_you_mean
from agenttest.util.secrets import Secrets
from agenttest.app.credentials import credentials
from agenttest.app.yaofiles import read_jsonc, substitute_env
from agenttest.connectors.base import ConnectorSpec

LIFTED = ("max_concurrency", "rpm", "pricing")  # top-level keys of a connector file that count as options


def spec_for(app: App, connector_id: str, secrets: Secrets, offline: bool = False) -> ConnectorSpec:
    """The spec behind a connector ID; its credentials (``app.credentials``) join ``secrets``. ``offline``
    (every call replayed from cassettes): an unset ``$ENV`` variable is no error, as no call is made."""
    if connector_id.startswith("use::"):
        return spec_for(app, role_connector(app, connector_id[len("use::"):]), secrets, offline)
    path = app.connector_path(connector_id)
    if os.path.isfile(path):
        data = read_jsonc(path)
        if not isinstance(data, dict) or "type" not in data:
            raise AgentTestError("a connector file needs a 'type'", Location(path), "e.g. {\"type\": \"openai\", \"options\": {...}}")
        found: dict[str, str] = {}
        raw, data = data, substitute_env(data, f"connector {connector_id}", found, required=not offline)
        hidden = credentials(raw, data, found)  # keys, tokens, passwords, headers: not a model name from $ENV
        for value, name in hidden:
            secrets.add(value, name)
        options = dict(data.get("options") or {})
        for key in LIFTED:  # may be given beside "options" as well as inside it
            if key in data and key not in options:
                options[key] = data[key]
        return ConnectorSpec(connector_id, data["type"], options, path, tuple(value for value, _ in hidden))
    if connector_id.startswith("openai.") and len(connector_id) > len("openai."):
        if "OPENAI_API_KEY" not in os.environ and not offline:
            raise AgentTestError(f"connector {connector_id}: environment variable OPENAI_API_KEY is not set", hint="export OPENAI_API_KEY=…")
        key = os.environ.get("OPENAI_API_KEY", "")
        secrets.add(key, "OPENAI_API_KEY")
        options = {"model": connector_id[len("openai."):], "key": key}
        if os.environ.get("OPENAI_BASE_URL"):
            options["base_url"] = os.environ["OPENAI_BASE_URL"]
        return ConnectorSpec(connector_id, "openai", options, None, (key,))
    known = app.connector_ids()
    hint = did_you_mean(connector_id, known)
    listing = ", ".join(known) or "none"
    create = os.path.relpath(path, os.getcwd()) if path.startswith(os.getcwd()) else path
    example = '{"type": "openai",\n "options": {"model": "gpt-4o-mini", "key": "$ENV.OPENAI_API_KEY"}}'
    raise AgentTestError(f"unknown connector '{connector_id}'", hint=(hint + " " if hint else "")
                         + f"known connectors: {listing}" + (f" (run with one of them: -c {known[0]})" if known else "")
                         + f"; or openai.<model>; or create {create}:\n{example}")


def hide_every_credential(app: App, secrets: Secrets) -> None:
    """The credentials of every connector file of the app join ``secrets``, used in this run or not: a tool or a
    model that prints ``$FAKE_KEY`` under ``-c mock`` shows ``***``. Hiding is for display only (identity is matched
    before it), so hiding more never changes a verdict. A file that does not read is skipped here: it is an error
    only where a run uses it."""
    for connector_id in app.connector_ids():
        try:
            raw = read_jsonc(app.connector_path(connector_id))  # a file that leads outside the app is not read
        except AgentTestError:
            continue
        found: dict[str, str] = {}
        data = substitute_env(raw, f"connector {connector_id}", found, required=False)
        for value, _ in credentials(raw, data, found):
            secrets.add(value)  # unnamed: a value too short to hide is said only for a connector the run uses


def role_connector(app: App, role: str) -> str:
    """``use::NAME`` → the connector ID that ``<root>/agent/agent.yml`` gives the role: ``system.NAME``, else
    ``system.default`` (a string, or ``{connector: ID}``)."""
    path = os.path.join(app.root, "agent", "agent.yml")
    example = "system:\n  default: openai.gpt-4o-mini" + ("" if role == "default" else f"\n  {role}: deepseek.v3")
    wanted = "system.default" if role == "default" else f"system.{role} or system.default"
    if not os.path.isfile(path):
        raise AgentTestError(f"connector use::{role} needs {path}", hint=f"create it with e.g.\n{example}")
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except yaml.YAMLError as exc:
        raise AgentTestError(f"invalid YAML: {getattr(exc, 'problem', exc)}", Location(path)) from None
    system = data.get("system") if isinstance(data, dict) else None
    chosen = (system or {}).get(role) or (system or {}).get("default") if isinstance(system, dict) else None
    if isinstance(chosen, dict):
        chosen = chosen.get("connector")
    if not isinstance(chosen, str) or not chosen or chosen.startswith("use::"):
        raise AgentTestError(f"connector use::{role}: {path} has no {wanted} connector", Location(path), f"add e.g.\n{example}")
    return chosen
