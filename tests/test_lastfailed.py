"""``--lf``'s memory: a case whose id holds a secret is written hidden and found again by its digest; the
rest as ``[file, id]``; a run that reran a remembered case forgets it if it passed."""

from __future__ import annotations

import json

from agenttest.model import CaseKey, CaseResult
from agenttest.selection import lastfailed
from agenttest.util.secrets import Secrets

KEY = "sk-live-0123456789abcdefghijklmnop"


def _ran(*cases: tuple[str, str]) -> list[CaseResult]:
    return [CaseResult(key=CaseKey(file="t.jsonl", id=i), status=status, name=i, input="hi") for i, status in cases]


def test_an_id_that_holds_a_secret_is_remembered_hidden_and_found_again(tmp_path):
    secrets = Secrets([KEY])
    lastfailed.save(str(tmp_path), ["t.jsonl"], _ran((f"leak-{KEY}", "failed"), ("plain", "failed"), ("fine", "passed")), secrets=secrets)
    text = (tmp_path / ".agent-test" / "lastfailed.json").read_text()
    assert KEY[:12] not in text and "leak-***" in text
    remembered = lastfailed.load(str(tmp_path), ["t.jsonl"])
    assert ("t.jsonl", f"leak-{KEY}") in remembered and ("t.jsonl", "plain") in remembered
    assert ("t.jsonl", "leak-***") not in remembered and ("t.jsonl", "fine") not in remembered and len(remembered) == 2


def test_a_remembered_case_that_passes_is_forgotten_and_others_kept(tmp_path):
    secrets = Secrets([KEY])
    lastfailed.save(str(tmp_path), ["t.jsonl"], _ran((f"leak-{KEY}", "failed"), ("plain", "failed")), secrets=secrets)
    lastfailed.save(str(tmp_path), ["t.jsonl"], _ran((f"leak-{KEY}", "passed")), secrets=secrets)  # --lf -k leak: only it ran
    remembered = lastfailed.load(str(tmp_path), ["t.jsonl"])
    assert ("t.jsonl", f"leak-{KEY}") not in remembered and ("t.jsonl", "plain") in remembered


def test_a_memory_of_wrong_shapes_is_ignored_with_a_warning(tmp_path):
    (tmp_path / ".agent-test").mkdir()
    (tmp_path / ".agent-test" / "lastfailed.json").write_text(json.dumps({lastfailed.key(["t.jsonl"]): [["a", "b", "c", "d"]]}))
    warnings: list[str] = []
    assert len(lastfailed.load(str(tmp_path), ["t.jsonl"], warnings)) == 0
    assert "is not as agent-test writes it" in warnings[0]
