"""Record production/spans.jsonl again: the weather agent "in production" (tests/traced_app.py: the openai
SDK in a tool loop, instrumented by the official opentelemetry-instrumentation-openai-v2, written by the
official OTLP/JSON file exporter) against the loopback chat-completions server of the test suite.

    pip install '.[test]' && python examples/traces/record.py
"""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from openai_server import OpenAIServer  # noqa: E402
from traced_app import responder  # noqa: E402

out = Path(__file__).parent / "production" / "spans.jsonl"
out.unlink(missing_ok=True)
env = dict(os.environ, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="SPAN_ONLY", PYTHONPATH=str(REPO / "tests"))
with OpenAIServer(responder) as server:
    subprocess.run([sys.executable, str(REPO / "tests" / "traced_app.py"), "openai-v2", server.url, str(out)], env=env, check=True)
print(f"wrote {out}")
