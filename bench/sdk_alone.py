"""The openai SDK alone on the same workload: N chat completions with the same messages and concurrency.

Run as ``python bench/sdk_alone.py URL N CONCURRENCY [create|post]``; the caller measures its CPU and
wall time. ``create`` is ``client.chat.completions.create``; ``post`` is ``client.post("/chat/completions")``
with a plain JSON body, the path agent-test's connector takes. The transport is agent-test's: the SDK's
aiohttp one when installed, else httpx (``AGENTTEST_HTTP=httpx`` chooses httpx for both)."""

from __future__ import annotations

import asyncio
import os
import sys

from openai import AsyncOpenAI

from workloads import HISTORY


async def main(url: str, n: int, concurrency: int, how: str) -> None:
    from openai.types.chat import ChatCompletion

    client = AsyncOpenAI(base_url=url, api_key="bench-key", max_retries=0, http_client=transport())
    sem = asyncio.Semaphore(concurrency)
    system = [{"role": "system", "content": "You are the agent under test."}]

    async def one(i: int) -> str:
        async with sem:
            messages = system + HISTORY + [{"role": "user", "content": f"Yes, confirm #{i}"}]
            if how == "post":
                r = await client.post("/chat/completions", cast_to=ChatCompletion, body={"model": "bench-model", "messages": messages})
            else:
                r = await client.chat.completions.create(model="bench-model", messages=messages)
            return r.choices[0].message.content or ""

    replies = await asyncio.gather(*(one(i) for i in range(n)))
    assert all("submitted" in r for r in replies)
    await client.close()


def transport():
    """The SDK's aiohttp client, as agent-test uses it (connectors/openai.py), or None for httpx."""
    if os.environ.get("AGENTTEST_HTTP", "").lower() == "httpx":
        return None
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except (ImportError, RuntimeError):
        return None


def transport_name() -> str:
    return "httpx" if transport() is None else "aiohttp"


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "create"))
