#!/usr/bin/env python3
"""Checks that the official `openai` Python SDK accepts what ctxgate-mock sends.

The SDK builds its objects leniently (`construct`, no validation), so "it did not
crash" proves little. Besides driving the three ways people call the Responses API
(`create`, `create(stream=True)`, `responses.stream(...)`), this script re-validates
every response object and every stream event strictly against the SDK's pydantic
models, and checks the event order and `sequence_number`s.

Usage: mock_sdk_check.py [BASE_URL]   (default: $OPENAI_BASE_URL, else
http://127.0.0.1:8090/v1). Exits non-zero on the first problem.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import openai
from openai import OpenAI
from openai.types.responses import CompactedResponse, Response

MESSAGE_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
CALL_EVENTS = [
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "run",
        "description": "Run a shell command",
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]


class CheckError(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckError(what)


def strict(model: Any, data: dict[str, Any], what: str) -> Any:
    """Validates `data` with pydantic against the SDK model (real validation)."""
    try:
        return model.model_validate(data)
    except Exception as err:  # pydantic.ValidationError, kept generic on purpose
        raise CheckError(f"{what}: strict validation against {model.__name__} failed: {err}") from err


def collapse(types: list[str]) -> list[str]:
    """Collapses runs of repeated delta events, so orders compare structurally."""
    out: list[str] = []
    for t in types:
        if not (out and out[-1] == t and t.endswith(".delta")):
            out.append(t)
    return out


def check_events(events: list[Any], body_events: list[str], terminal: str, what: str) -> None:
    types = [e.type for e in events]
    expected = ["response.created", "response.in_progress", *body_events, terminal]
    expect(collapse(types) == expected, f"{what}: event order {collapse(types)} != {expected}")
    seqs = [e.sequence_number for e in events]
    expect(seqs == list(range(len(events))), f"{what}: sequence_numbers {seqs} are not 0..n")
    for e in events:
        data = e.to_dict()
        expect(data.get("type") == e.type, f"{what}: event {e.type} lost its type")
        strict(type(e), data, f"{what}: event {e.type}")
        expect(type(e).__name__.startswith("Response"), f"{what}: {e.type} parsed as {type(e).__name__}")
    ids = {e.response.id for e in events if hasattr(e, "response")}
    expect(len(ids) == 1, f"{what}: lifecycle events carry different response ids {ids}")


def check_create(client: OpenAI) -> None:
    raw = client.responses.with_raw_response.create(model="mock-ok", input="ping from the SDK check")
    expect(raw.http_response.status_code == 200, f"create: status {raw.http_response.status_code}")
    data = json.loads(raw.http_response.text)
    strict(Response, data, "create")
    resp = raw.parse()
    expect(resp.status == "completed", f"create: status {resp.status}")
    expect(resp.model == "mock-ok", f"create: model {resp.model}")
    expect(resp.id.startswith("resp_"), f"create: id {resp.id}")
    expect("ping from the SDK check" in resp.output_text, f"create: output_text {resp.output_text!r}")
    expect(resp.usage is not None and resp.usage.total_tokens > 0, "create: usage missing")
    again = client.responses.create(model="mock-ok", input="ping from the SDK check")
    expect(again.id == resp.id, "create: identical requests got different ids")

    call = client.responses.create(model="mock-call", input="list files", tools=TOOLS)
    strict(Response, call.to_dict(), "create mock-call")
    item = call.output[0]
    expect(item.type == "function_call" and item.name == "run", f"create mock-call: {item}")
    expect(json.loads(item.arguments) == {"cmd": "ls"}, f"create mock-call: arguments {item.arguments}")
    print("ok   create (mock-ok, mock-call)")


def check_create_stream(client: OpenAI) -> None:
    events = list(client.responses.create(model="mock-ok", input="stream me", stream=True))
    check_events(events, MESSAGE_EVENTS, "response.completed", "create(stream=True)")
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    expect(deltas == final.output_text, f"create(stream=True): deltas {deltas!r} != final text")
    expect("stream me" in deltas, f"create(stream=True): text {deltas!r}")

    events = list(client.responses.create(model="mock-call", input="x", tools=TOOLS, stream=True))
    check_events(events, CALL_EVENTS, "response.completed", "create(stream=True) mock-call")

    events = list(client.responses.create(model="mock-incomplete", input="x", stream=True))
    check_events(events, MESSAGE_EVENTS, "response.incomplete", "create(stream=True) mock-incomplete")
    final = events[-1].response
    expect(final.status == "incomplete", f"mock-incomplete: status {final.status}")
    expect(final.incomplete_details is not None, "mock-incomplete: no incomplete_details")
    print("ok   create(stream=True) (mock-ok, mock-call, mock-incomplete)")


def check_stream_helper(client: OpenAI) -> None:
    with client.responses.stream(model="mock-split", input="helper stream") as stream:
        events = list(stream)
        final = stream.get_final_response()
    strict(Response, final.to_dict(), "responses.stream")
    expect(final.status == "completed", f"responses.stream: status {final.status}")
    expect("helper stream" in final.output_text, f"responses.stream: text {final.output_text!r}")
    snapshots = [e.snapshot for e in events if e.type == "response.output_text.delta"]
    expect(bool(snapshots) and snapshots[-1] == final.output_text, "responses.stream: delta snapshots")

    with client.responses.stream(model="mock-call", input="x", tools=TOOLS) as stream:
        final = stream.get_final_response()
    item = final.output[0]
    expect(item.type == "function_call", f"responses.stream mock-call: {item.type}")
    expect(item.parsed_arguments == {"cmd": "ls"}, f"responses.stream mock-call: {item.parsed_arguments}")
    print("ok   responses.stream(...).get_final_response() (mock-split, mock-call)")


def check_errors_and_compact(client: OpenAI) -> None:
    try:
        client.with_options(max_retries=0).responses.create(model="mock-error-429", input="x")
    except openai.RateLimitError as err:
        expect(err.code == "rate_limit_exceeded", f"mock-error-429: code {err.code}")
    else:
        raise CheckError("mock-error-429: no RateLimitError")

    raw = client.responses.with_raw_response.compact(
        model="mock-ok",
        input=[{"role": "user", "content": "keep me"}, {"role": "assistant", "content": "drop me"}],
    )
    data = json.loads(raw.http_response.text)
    compacted = raw.parse()
    expect(isinstance(compacted, CompactedResponse), f"compact: parsed as {type(compacted)}")
    expect(data["object"] == "response.compaction", f"compact: object {data['object']}")
    expect([o.get("type") for o in data["output"]] == ["message", "compaction"], f"compact: {data['output']}")
    print("ok   errors and responses.compact")


def main() -> int:
    base_url = (sys.argv[1] if len(sys.argv) > 1 else None) or os.environ.get(
        "OPENAI_BASE_URL", "http://127.0.0.1:8090/v1"
    )
    client = OpenAI(base_url=base_url, api_key="sk-ctxgate-mock-dummy", max_retries=0, timeout=30)
    print(f"openai {openai.__version__} against {base_url}")
    try:
        check_create(client)
        check_create_stream(client)
        check_stream_helper(client)
        check_errors_and_compact(client)
    except CheckError as err:
        print(f"FAIL {err}", file=sys.stderr)
        return 1
    except Exception as err:  # any SDK exception is a failure of the mock too
        print(f"FAIL unexpected {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    print("all SDK checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
