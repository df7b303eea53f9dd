"""Imports for test modules (conftest is not importable by name everywhere)."""

from conftest import REPO, Answer, AppBuilder, OpenAIServer, cli, last_user, report  # noqa: F401
