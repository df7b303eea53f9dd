"""The standard workload as an Inspect AI task (bench/peer.py runs it with ``inspect eval``): the same
conversation and the same ``contains`` check (Inspect's ``includes`` scorer), N samples from $BENCH_CASES."""

import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

from workloads import HISTORY, NEEDLE

ROLES = {"user": ChatMessageUser, "assistant": ChatMessageAssistant}


@task
def bench() -> Task:
    n = int(os.environ["BENCH_CASES"])
    history = [ChatMessageSystem(content="You are the agent under test.")] + [ROLES[m["role"]](content=m["content"]) for m in HISTORY]
    samples = [Sample(id=i, input=[*history, ChatMessageUser(content=f"Yes, confirm #{i}")], target=NEEDLE) for i in range(n)]
    return Task(dataset=samples, solver=generate(), scorer=includes())
