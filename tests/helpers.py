"""Imports for test modules (conftest is not importable by name everywhere)."""

from conftest import REPO, Answer, AppBuilder, OpenAIServer, alive, cli, last_user, report, seed_document, survivors, tool_app  # noqa: F401
