"""Report rendering: the streamed JSON is exactly the documented document; atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from agenttest.model import AssertionResult, CaseKey, CaseResult, Spend, ToolCall, Turn, Usage
from agenttest.reporting import check_path, render, write
from agenttest.reporting.codec import report_dict
from agenttest.verdicts.outcome import make_report


def sample():
    return make_report([
        CaseResult(key=CaseKey(id="a"), status="passed", name="first", input="x", output={"k": [1, 2]}, tool_calls=(ToolCall(name="t", arguments={"q": 1}, id="c1", result={"r": "sk-SECRET-1234"}),)),
        CaseResult(key=CaseKey(id="b"), status="failed", input=[{"role": "user", "content": "y"}], output="no sk-SECRET-1234", error="e\nf",
                   assertions=(AssertionResult(type="contains", passed=False, message="missing", expected="yes", actual="no"),), index=1),
    ], 0, 10, agent_id="bot")


@pytest.mark.parametrize("results", [[], None])
def test_streamed_json_equals_the_whole_document(results):
    rep = sample() if results is None else make_report(results, 0, 10)
    streamed = "".join(render(rep, "r.json"))
    assert streamed == json.dumps(report_dict(rep), ensure_ascii=False, indent=2) + "\n"


def test_a_message_written_again_is_the_same_text_wherever_it_is_and_whatever_its_values():
    """The JSON writer keeps the text of a message of text alone (a suite's histories repeat them) and of a
    verdict, usage or spend object the results share: written again, at another indentation (a tool's arguments,
    a turn's verdicts), beside a message equal in Python but not in JSON (1,
    True, 1.0 and "1"), or holding a list or non-ASCII text, the document is still ``json.dumps``'s."""
    hello = {"role": "user", "content": "héllo \u202e"}
    history = [{"role": "system", "content": "be brief"}, hello]
    verdict, usage = AssertionResult(type="contains", passed=True, expected="ok", checked="value=ok"), Usage(3, 1, 4)  # one object each, as the controller shares them
    results = [CaseResult(key=CaseKey(id=f"c{i}"), status="passed", input=[*history, {"role": "user", "content": f"#{i}"}], output="ok", index=i,
                          assertions=(verdict,), usage=usage, spend=(Spend("agent", "mock", usage, 1),),
                          turns=(Turn(turn=1, input="hi", output="ok", assertions=(verdict,)),)) for i in range(3)]  # the verdict deeper too
    results.append(CaseResult(key=CaseKey(id="odd"), status="passed", input=[{"n": 1}, {"n": True}, {"n": 1.0}, {"n": "1"}, {"n": ["1"]}, hello], index=3,
                              tool_calls=(ToolCall(name="t", arguments=dict(hello), id="c1", result={"deeper": [dict(hello)]}),)))
    rep = make_report(results, 0, 10)
    for _ in range(2):  # the second time from what the first kept
        assert "".join(render(rep, "r.json")) == json.dumps(report_dict(rep), ensure_ascii=False, indent=2) + "\n"


def test_secrets_are_redacted_in_every_format(tmp_path):
    for ext in (".json", ".jsonl", ".md", ".html", ".xml"):
        text = "".join(render(sample(), "r" + ext, ["sk-SECRET-1234"]))
        assert "sk-SECRET-1234" not in text and "***" in text


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")

    def broken(report):
        yield "{"
        raise RuntimeError("disk full")

    from agenttest import reporting

    reporting.register(".broken")(broken)
    with pytest.raises(RuntimeError):
        write(sample(), str(tmp_path / "r.broken"))
    assert not (tmp_path / "r.broken").exists() and os.listdir(tmp_path) == ["r.json"]
    write(sample(), str(target))
    assert json.loads(target.read_text())["summary"]["total"] == 2 and os.listdir(tmp_path) == ["r.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_check_path_rejects_unknown_formats_and_missing_folders(tmp_path):
    from agenttest.errors import AgentTestError

    with pytest.raises(AgentTestError, match="unknown report format '.pdf'"):
        check_path(str(tmp_path / "r.pdf"))
    check_path(str(tmp_path / "new" / "folder" / "r.json"))  # a missing folder is created
    assert (tmp_path / "new" / "folder").is_dir()
    (tmp_path / "plain").write_text("a file, not a folder")
    with pytest.raises(AgentTestError, match="plain is a file, so no folder can be made there"):
        check_path(str(tmp_path / "plain" / "r.json"))


def test_junit_drops_exactly_the_characters_xml_cannot_hold():
    """``_clean`` is one regular expression now: it keeps and drops what the rule per character kept and dropped."""
    from agenttest.reporting.junit import _clean
    from agenttest.util.text import BIDI

    every = "".join(chr(i) for i in range(0x300)) + "\u202a\u202e\u2066\u2069\ud7ff\ue000\ufffd\ufffe\uffff😀"
    kept = "".join(ch for ch in every if ch in "\t\n\r" or ord(ch) >= 0x20 and ord(ch) not in (0xFFFE, 0xFFFF)).translate(BIDI)
    assert _clean(every) == kept and "\x00" not in _clean(every) and "\x0b" not in _clean(every)
    assert _clean("a\tb\nc\rd\x0ce\x1ff") == "a\tb\nc\rdef"
