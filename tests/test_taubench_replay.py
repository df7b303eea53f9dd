"""tau-bench's judgement reproduced on recorded-style conversations: an airline world in ``ctx.world``, a
scripted user, the agent's replies played back by the loopback server, and a reward defined for each
conversation. ``end: "simulator"`` with final assertions agrees with every reward, where Yao's default ending
passes the false-pass shape (the checkpoint holds at turn 1, before any write); the pass^k table of the run
equals a hand computation of the unbiased estimator."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import pytest

from helpers import Answer, cli, report

TOOLS = [
    {"name": "get_reservation_details", "description": "look a reservation up",
     "parameters": {"type": "object", "properties": {"reservation_id": {"type": "string"}}, "required": ["reservation_id"]}},
    {"name": "cancel_reservation", "description": "cancel a reservation",
     "parameters": {"type": "object", "properties": {"reservation_id": {"type": "string"}}, "required": ["reservation_id"]}},
    {"name": "transfer_to_human_agents", "description": "hand the user to a human",
     "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}},
]
TOOLS_PY = '''
def get_reservation_details(ctx, reservation_id):
    return ctx.world["reservations"].get(reservation_id, {"error": "not found"})

def cancel_reservation(ctx, reservation_id):
    reservation = ctx.world["reservations"][reservation_id]
    reservation["status"] = "cancelled"
    return reservation

def transfer_to_human_agents(ctx, summary):
    return "Transfer successful"
'''
WORLD = {"reservations": {"NO6JO3": {"user_id": "mia_li_3668", "status": "booked", "insurance": "yes"},
                          "ZFA04Y": {"user_id": "mia_li_3668", "status": "booked", "insurance": "no"}}}


def tool(name, **arguments):
    return {"tool": name, "arguments": arguments}


@dataclass(frozen=True)
class Recorded:
    """One task's recorded conversations: the agent's steps per user turn when it behaves (``good``) and when
    it does not (``bad``); ``pattern`` says which the n-th run of the task plays (P good, F bad)."""

    opening: str
    pattern: str
    good: list[list[dict | str]]
    bad: list[list[dict | str]]


TASKS = {
    # cancel with insurance: the reward is the reservation cancelled
    "cancel": Recorded("Cancel my reservation NO6JO3 please", "PPFP",
                       good=[[tool("get_reservation_details", reservation_id="NO6JO3"), "It has insurance. Shall I cancel NO6JO3?"],
                             [tool("cancel_reservation", reservation_id="NO6JO3"), "NO6JO3 is cancelled."]],
                       bad=[[tool("get_reservation_details", reservation_id="NO6JO3"), "It has insurance. Shall I cancel NO6JO3?"],
                            ["NO6JO3 is cancelled."]]),  # says so, never writes
    # cancel without insurance is against policy: the reward is the database untouched. The false-pass shape: at
    # turn 1 nothing is written yet, so "still booked" holds; the agent gives in and cancels at turn 2.
    "refuse": Recorded("Cancel ZFA04Y, I have no insurance", "FFFF",
                       good=[["Without insurance I cannot cancel ZFA04Y."], ["I am sorry, I still cannot."]],
                       bad=[["Without insurance I cannot cancel ZFA04Y."], [tool("cancel_reservation", reservation_id="ZFA04Y"), "Done, cancelled."]]),
    # asks for compensation: the agent must hand over; tau-bench ends the conversation at the transfer
    "transfer": Recorded("I want compensation for my delayed flight", "PPPP",
                         good=[[tool("transfer_to_human_agents", summary="compensation"), "NEVER SENT"]],
                         bad=[["Here is a $100 voucher."]]),
    # cancels the wrong reservation half the time
    "wrong": Recorded("Cancel my insured booking", "PFFP",
                      good=[[tool("cancel_reservation", reservation_id="NO6JO3"), "Cancelled NO6JO3."]],
                      bad=[[tool("cancel_reservation", reservation_id="ZFA04Y"), "Cancelled ZFA04Y."]]),
}
SCRIPTS = {"cancel": ["Cancel my reservation NO6JO3 please", "Yes, cancel it"], "refuse": ["Cancel ZFA04Y, I have no insurance", "Please, just do it"],
           "transfer": ["I want compensation for my delayed flight", "Hello? Are you there?"], "wrong": ["Cancel my insured booking"]}
FINAL = {
    "cancel": [{"type": "state", "path": "$.reservations.NO6JO3.status", "value": "cancelled"}],
    "refuse": [{"type": "state", "unchanged": ["$.reservations"]}],
    "transfer": [{"type": "state", "unchanged": ["$.reservations"]}, {"type": "tool_called", "name": "transfer_to_human_agents"}],
    "wrong": [{"type": "state", "path": "$.reservations", "value": {"NO6JO3": {"user_id": "mia_li_3668", "status": "cancelled", "insurance": "yes"},
                                                                   "ZFA04Y": {"user_id": "mia_li_3668", "status": "booked", "insurance": "no"}}}],
}
REWARD = {task: [1 if c == "P" else 0 for c in t.pattern] for task, t in TASKS.items()}  # what tau-bench would give


class Agent:
    """Plays the recorded agent: its step for this turn, given how many tool results came since the user spoke."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()

    def __call__(self, req: dict) -> Answer:
        messages = req["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        opening = messages[users[0]]["content"]
        task = next(name for name, t in TASKS.items() if t.opening == opening)
        after = sum(1 for m in messages[users[-1]:] if m["role"] == "tool")
        if len(users) == 1 and after == 0:
            self.runs[task] += 1
        self.requests[task] += 1
        recorded = TASKS[task]
        steps = recorded.good if recorded.pattern[(self.runs[task] - 1) % len(recorded.pattern)] == "P" else recorded.bad
        step = steps[len(users) - 1][after]
        if isinstance(step, str):
            return Answer(step)
        return Answer("", tool_calls=[{"name": step["tool"], "arguments": step["arguments"]}])


@pytest.fixture
def airline(app, server):
    app.agent("airline", tools=TOOLS, files={"src/tools.py": TOOLS_PY})
    server.responder = Agent()
    return app


def cases(end: str, with_checkpoint: bool = False) -> list[dict]:
    out = []
    for task in TASKS:
        case = {"id": task, "world": WORLD, "simulator": {"script": SCRIPTS[task]}, "max_turns": 5,
                "end_tools": ["transfer_to_human_agents"], "assert": FINAL[task]}
        if end == "simulator":
            case["end"] = "simulator"
        if with_checkpoint or end == "checkpoints":  # the natural port: the reward as a checkpoint
            case["checkpoints"] = [{"id": "db", "assert": FINAL[task][0]}]
        out.append(case)
    return out


def run(app, case_list, *args):
    path = app.cases("tau.jsonl", case_list)
    out = app.root / "r.json"
    result = cli("-i", str(path), "-n", "airline", "-o", str(out), "--runs", "4", *args)
    return result, report(out)


def verdicts(data: dict) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in data["results"]:
        out.setdefault(r["id"], []).append(1 if r["status"] == "passed" else 0)
    return out


def test_end_simulator_with_final_assertions_agrees_with_every_reward(airline, server):
    result, data = run(airline, cases("simulator"))
    assert result.exit_code == 1
    assert verdicts(data) == REWARD
    by_run = {(r["id"], r["run"]): r for r in data["results"]}
    # the false-pass shape is judged at the end: the write at turn 2 fails it, naming the field
    refused = by_run[("refuse", 1)]
    assert refused["total_turns"] == 2 and refused["error"].startswith("final assertion failed: world changed at $.reservations")
    # the transfer ends the conversation after its result: the agent's model is not asked again, the user's next line is never sent
    transfer = by_run[("transfer", 1)]
    assert transfer["total_turns"] == 1 and transfer["turns"][0]["ended"] == "end tool transfer_to_human_agents"
    assert transfer["turns"][0]["output"] == ""  # an empty reply is shown as empty, not as the tool's result
    assert server.responder.requests["transfer"] == 4  # one model call per run
    # a wrong write names the differing field, not two values cut at a width
    wrong = by_run[("wrong", 2)]
    assert wrong["error"] == ("final assertion failed: world $.reservations differs in 2 fields: $.reservations.NO6JO3.status: "
                              "expected cancelled, got booked; $.reservations.ZFA04Y.status: expected booked, got cancelled")
    # the cancel that was only said, not done
    assert by_run[("cancel", 3)]["error"] == "final assertion failed: world $.reservations.NO6JO3.status: expected cancelled, got booked"


def test_default_ending_passes_the_false_pass_shape_at_turn_1(airline):
    _, data = run(airline, cases("checkpoints"))
    by_run = {(r["id"], r["run"]): r for r in data["results"]}
    refused = by_run[("refuse", 1)]
    # Yao's rule: the checkpoint holds at turn 1 (nothing written yet), the conversation ends, the case passes
    assert refused["status"] == "passed" and refused["total_turns"] == 1 and refused["checkpoints"][0]["reached_at_turn"] == 1
    assert verdicts(data)["refuse"] == [1, 1, 1, 1] != REWARD["refuse"]


def test_end_simulator_agrees_with_the_reward_even_with_the_workaround_checkpoint(airline):
    _, data = run(airline, cases("simulator", with_checkpoint=True))
    assert verdicts(data) == REWARD


def comb(n: int, k: int) -> int:
    from math import factorial

    return factorial(n) // (factorial(k) * factorial(n - k))


def test_pass_hat_k_table_equals_the_hand_computation(airline):
    result, data = run(airline, cases("simulator"))
    table = data["summary"]["pass_k"]
    # by hand: passes per task of 4 runs — cancel 3, refuse 0, transfer 4, wrong 2
    hand_hat = [(3 / 4 + 0 + 1 + 2 / 4) / 4, (3 / 6 + 0 + 1 + 1 / 6) / 4, (1 / 4 + 0 + 1 + 0) / 4, (0 + 0 + 1 + 0) / 4]
    hand_at = [(3 / 4 + 0 + 1 + 2 / 4) / 4, (1 + 0 + 1 + 5 / 6) / 4, (1 + 0 + 1 + 1) / 4, (1 + 0 + 1 + 1) / 4]
    assert table["k"] == [1, 2, 3, 4] and table["cases"] == [4, 4, 4, 4]
    assert table["pass_hat"] == pytest.approx(hand_hat, abs=1e-6) and table["pass_at"] == pytest.approx(hand_at, abs=1e-6)
    gates = {g["id"]: g for g in data["summary"]["gates"]}
    assert gates["cancel"]["pass_hat"] == pytest.approx([3 / 4, comb(3, 2) / comb(4, 2), 1 / 4, 0])
    assert gates["wrong"]["pass_at"] == pytest.approx([1 / 2, 5 / 6, 1, 1])
    # the console prints the same table
    assert "pass^k:    4 cases × 4 runs" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("pass^k  "))
    assert row.split()[1:] == ["0.562", "0.417", "0.312", "0.250"]


def test_pass_hat_k_in_markdown_and_html(airline, tmp_path):
    path = airline.cases("tau.jsonl", cases("simulator"))
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    cli("-i", str(path), "-n", "airline", "-o", str(md), "-o", str(html), "--runs", "4")
    assert "| pass^k | 0.562 | 0.417 | 0.312 | 0.250 |" in md.read_text()
    assert "<h2>pass^k</h2>" in html.read_text() and "<td>0.312</td>" in html.read_text()


def test_world_changes_only_keeps_reports_small(airline):
    _, full = run(airline, cases("simulator")[:1])
    _, small = run(airline, cases("simulator")[:1], "--report-world", "changes")
    assert set(full["results"][0]["world"]) == {"initial", "final", "changes"}
    assert small["results"][0]["world"] == {"changes": [{"path": "$.reservations.NO6JO3.status", "op": "changed",
                                                         "before": "booked", "after": "cancelled"}]}
    assert len(json.dumps(small)) < len(json.dumps(full))
