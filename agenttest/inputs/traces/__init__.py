"""``agent-test import``: recorded conversations — OpenTelemetry GenAI traces (OTLP/JSON) and chat-completions
logs — turned into case files: the history as input, production's tool results as mocks, proposed checks,
secrets and personal data replaced (FORMATS §20, docs/traces.md).

    files → otlp (spans and log records, located) / chatlogs (request/response pairs)
          → genai (the GenAI conventions: model calls and tool runs) → stitching (one conversation each)
          → redaction → cases (one case per conversation) → importing (the file written, the summary)"""
