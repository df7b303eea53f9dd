"""The Action's script: ``python -m agenttest.ci.action base|comment …`` (action.yml runs it; docs/ci.md).

``base`` finds the base commit's report — a file a step before made, else the artifact a successful run on
the base commit uploaded — and says on ``$GITHUB_OUTPUT`` whether it found one (``found=file|artifact|none``;
with none, action.yml runs the base). ``comment`` writes the comparison as ``agent-test diff --format github``
does, puts it in the job summary, turns each failing case into an annotation, creates or updates the pull
request's one comment, and exits with the gate. This module is the edge of the Action: it prints."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from agenttest.ci.github import ApiError, GitHub
from agenttest.errors import AgentTestError

MEMBER = "head.json"  # the report's name in the artifact a run uploads


def _event() -> dict[str, Any]:
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _api() -> GitHub:
    return GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"), os.environ.get("GITHUB_REPOSITORY", ""),
                  os.environ.get("GITHUB_TOKEN", ""))


def _output(name: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{name}={value}\n")


def _say(command: str, text: str) -> None:
    """A workflow command (``warning``, ``notice``) — on stdout, where the runner reads them."""
    print(f"::{command}::{text.replace('%', '%25').replace(chr(13), '%0D').replace(chr(10), '%0A')}", flush=True)


def base(args: argparse.Namespace) -> int:
    if args.report and os.path.isfile(args.report):
        if os.path.abspath(args.report) != os.path.abspath(args.out):
            with open(args.report, "rb") as src, open(args.out, "wb") as dst:
                dst.write(src.read())
        print(f"The base's report: {args.report}")
        _output("found", "file")
        return 0
    sha = ((_event().get("pull_request") or {}).get("base") or {}).get("sha", "")
    if sha and args.artifact:
        try:
            data = _api().artifact_report(sha, args.artifact, args.member)
        except ApiError as exc:
            _say("warning", f"agent-test: the base's artifact could not be read ({exc.format_message()}); the base will be run")
            data = None
        if data is not None:
            with open(args.out, "wb") as fh:
                fh.write(data)
            print(f"The base's report: artifact '{args.artifact}' of a successful run on {sha[:12]}")
            _output("found", "artifact")
            return 0
    print(f"No report of the base {sha[:12] or '(no pull request)'} was found: the base is run.")
    _output("found", "none")
    return 0


def _read(path: str) -> Any:
    from agenttest.reporting.codec import read

    return read(path)


def _empty() -> Any:
    from agenttest.model import RunReport

    return RunReport(results=(), started_at="", completed_at="", duration_ms=0.0, output_file="(no base report)")


def comment(args: argparse.Namespace) -> int:
    from agenttest.history import pullrequest as github
    from agenttest.history.comparison import compare
    from agenttest.verdicts.outcome import exit_code

    head = _read(args.head)
    has_base = bool(args.base) and os.path.isfile(args.base)
    before = _read(args.base) if has_base else _empty()
    mode = "any" if args.fail_on == "any-regression" else "significant"
    comparison = compare(before, head, args.base if has_base else "(no base report)", args.head, args.alpha)
    body = github.comment(comparison, before, head, args.viewer_url, args.key, mode)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(body)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(body.split("\n", 1)[1] + "\n")  # the marker line is for the comment only
    for line in github.workflow_errors(head, os.environ.get("GITHUB_WORKSPACE") or os.getcwd()):
        print(line, flush=True)
    _post(body, args)
    regressed = comparison.gate(mode) != 0 if has_base else False
    failed = exit_code(head) != 0
    _output("comment", args.out)
    _output("regressed", "true" if regressed else "false")
    code = {"regression": regressed, "any-regression": regressed, "failure": regressed or failed, "never": False}[args.fail_on]
    print(f"agent-test: {'the gate on the base fails' if regressed else 'the gate on the base passes'}"
          f"{'' if has_base else ' (no base report)'}; the head's run {'failed' if failed else 'passed'}; "
          f"--fail-on {args.fail_on}: exit {int(code)}")
    return int(code)


def _post(body: str, args: argparse.Namespace) -> None:
    number = (_event().get("pull_request") or {}).get("number")
    if not args.post or not number:
        return
    from agenttest.history.pullrequest import marker

    try:
        done, found = _api().upsert_comment(int(number), body, marker(args.key))
    except ApiError as exc:  # a pull request from a fork gets a read-only token: the summary still has it all
        _say("warning", f"agent-test: the pull request comment could not be written ({exc.format_message()}); "
                        "the job summary has it")
        return
    print(f"agent-test: {done} the comment on pull request #{number} (id {found})")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m agenttest.ci.action", description="The agent-test GitHub Action's steps.")
    steps = top.add_subparsers(dest="step", required=True)
    find = steps.add_parser("base", help="find the base's report: a file, else an artifact of the base commit")
    find.add_argument("--out", required=True)
    find.add_argument("--report", default="")
    find.add_argument("--artifact", default="")
    find.add_argument("--member", default=MEMBER)
    find.set_defaults(run=base)
    post = steps.add_parser("comment", help="the comparison: comment, job summary, annotations, the gate")
    post.add_argument("--base", default="")
    post.add_argument("--head", required=True)
    post.add_argument("--out", required=True)
    post.add_argument("--viewer-url", default="")
    post.add_argument("--key", default="")
    post.add_argument("--post", action=argparse.BooleanOptionalAction, default=True)
    post.add_argument("--fail-on", choices=("regression", "any-regression", "failure", "never"), default="regression")
    post.add_argument("--alpha", type=float, default=0.05)
    post.set_defaults(run=comment)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except AgentTestError as exc:
        print(f"::error::agent-test: {exc.format_message()}", flush=True)
        return int(exc.exit_code)


if __name__ == "__main__":
    sys.exit(main())
