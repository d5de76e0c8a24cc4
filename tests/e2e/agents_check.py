#!/usr/bin/env python3
"""Runs an `openai-agents` SDK agent through ctxgate against ctxgate-mock's `mock-agent-loop` scenario.

The agent has one function tool, `fetch_logs(page)`, that returns about 70 KB of log lines per page; the mock calls it
for pages 1..8 and then answers. The client is the snippet the README shows ("Use with your agent"): an
`AsyncOpenAI()` that finds ctxgate through OPENAI_BASE_URL, made the SDK's default, with the Responses API.

Usage: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=sk-... agents_check.py [--header NAME=VALUE]...
(any key works with the mock). Prints one "ok" line per check; exits non-zero on the first problem.
"""

from __future__ import annotations

import asyncio
import os
import sys

from agents import (
    Agent,
    ModelSettings,
    RunConfig,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

MODEL = "mock-agent-loop"
PAGES = 8
EXPECTED = f"ctxgate-mock: agent loop done after {PAGES} tool calls"
CALLS: list[int] = []


def page_text(page: int) -> str:
    """About 70 KB of varied, error-free log lines: compressible, so ctxgate offloads most of it."""
    lines = [f"fetch_logs page {page}: service log follows"]
    for i in range(1, 1001):
        level = "WARN" if i % 97 == 0 else "INFO"
        lines.append(
            f"2026-01-0{page % 9 + 1}T00:{i // 60 % 60:02d}:{i % 60:02d} {level} worker-{i % 7} "
            f"page={page} seq={i:06d} request {i * 7919 % 1000000:06d} served in {i * 37 % 1000} ms "
            f"bytes={i * 7919 % 65536}"
        )
    return "\n".join(lines) + "\n"


@function_tool
def fetch_logs(page: int) -> str:
    """Return one page of the service log."""
    CALLS.append(page)
    return page_text(page)


async def main() -> int:
    if not os.environ.get("OPENAI_BASE_URL"):
        print(__doc__, file=sys.stderr)
        return 2
    headers: dict[str, str] = {}
    args = sys.argv[1:]
    while args:
        flag = args.pop(0)
        if flag != "--header" or not args or "=" not in args[0]:
            print(f"unexpected argument {flag!r}", file=sys.stderr)
            return 2
        name, value = args.pop(0).split("=", 1)
        headers[name] = value

    # Only the tests' extra headers (x-ctxgate-budget, x-ctxgate-bypass) are not in the README's snippet.
    # --- the README's snippet -----------------------------------------------------------------------------------
    client = AsyncOpenAI()  # OPENAI_BASE_URL=http://127.0.0.1:8080/v1 (ctxgate), OPENAI_API_KEY
    set_default_openai_client(client)
    set_default_openai_api("responses")
    set_tracing_disabled(True)
    agent = Agent(
        name="log reader",
        instructions="Read every page of the service log with fetch_logs, then report.",
        model=MODEL,
        tools=[fetch_logs],
    )
    result = await Runner.run(
        agent,
        "How many requests did the service serve?",
        max_turns=PAGES + 4,
        run_config=RunConfig(model_settings=ModelSettings(extra_headers=headers)) if headers else None,
    )
    # ---------------------------------------------------------------------------------------------------------------

    if result.final_output != EXPECTED:
        print(f"final output {result.final_output!r}, expected {EXPECTED!r}", file=sys.stderr)
        return 1
    if CALLS != list(range(1, PAGES + 1)):
        print(f"fetch_logs was called with pages {CALLS}, expected 1..{PAGES}", file=sys.stderr)
        return 1
    size = sum(len(page_text(p)) for p in CALLS)
    print(f"ok   Runner.run completed: {PAGES} fetch_logs calls, {size} bytes of tool output")
    print(f"ok   final output: {result.final_output}")
    print("all agents checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
