#!/usr/bin/env python3
"""Checks that the official `openai` Python SDK accepts a turn ctxgate stitches from two upstream rounds.

The request carries a big build log as a `function_call_output`, so ctxgate compresses it behind a
`<<ctxzip:HASH NOTE>>` marker and offers `context_expand`; `ctxgate-mock` (`mock-expand`,
`mock-expand-mixed`) calls that tool, ctxgate answers it and asks again, and the client must see ONE
response: `create`, `create(stream=True)` and `responses.stream(...)` all succeed, every object and
event re-validates strictly against the SDK's pydantic models (helpers of `sdk_check.py`), the stream
is one coherent lifecycle, and nothing of `context_expand` (item, echoed tool, directive) reaches
the client. For `mock-expand-mixed` the client's own `shell` call of the first round is dropped.

Every case uses its own `prompt_cache_key` `sdk-expand-<api>-<model>`, so the caller can check that
each one made exactly two upstream rounds.

Usage: sdk_expand_check.py BASE_URL   (default: $OPENAI_BASE_URL). Exits non-zero on the first problem.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import openai  # noqa: E402
import sdk_check  # noqa: E402
from openai import OpenAI  # noqa: E402
from openai.types.responses import Response  # noqa: E402
from sdk_check import MESSAGE_EVENTS, CheckError, expect, strict  # noqa: E402

# `to_dict()` of the stream helper's `ParsedResponse` (a generic over the text format) makes pydantic warn that
# it serialises `ParsedResponseOutputMessage` through the plain union; the values are right, the noise is the SDK's.
warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)

EXPAND_TOOL = "context_expand"
EXPANDED_PREFIX = "Expanded content:"
MODELS = ["mock-expand", "mock-expand-mixed"]
LIFECYCLE = {"response.created", "response.in_progress", "response.queued"}
TERMINALS = {"response.completed", "response.incomplete", "response.failed"}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "shell",
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


def build_log(lines: int = 3000) -> str:
    """A synthetic `cargo build -vv` log: repetitive, so compressible, with two `error:` lines."""
    out = []
    for i in range(lines):
        if i == 1234:
            out.append("error: linking with `cc` failed: exit status: 1")
        elif i == 2718:
            out.append("error: could not compile `ctxgate-demo` (bin \"demo\") due to 1 previous error")
        elif i % 3 == 0:
            out.append(f"   Compiling crate_{i:04} v0.{i % 17}.{i % 7}")
        elif i % 3 == 1:
            out.append(f"     Running `rustc --crate-name crate_{i:04} --edition=2021 src/lib.rs -C opt-level=0`")
        else:
            out.append(f"[crate_{i:04} 0.{i % 17}.{i % 7}] cargo:rerun-if-changed=build.rs")
    return "\n".join(out) + "\n"


LOG = build_log()


def request(model: str, key: str) -> dict[str, Any]:
    return {
        "model": model,
        "prompt_cache_key": key,
        "tools": TOOLS,
        "input": [
            {"role": "user", "content": "What failed in the build?"},
            {
                "type": "function_call",
                "call_id": "call_build_1",
                "name": "shell",
                "arguments": json.dumps({"cmd": "cargo build -vv"}),
            },
            {"type": "function_call_output", "call_id": "call_build_1", "output": LOG},
        ],
    }


def case_key(api: str, model: str) -> str:
    return f"sdk-expand-{api}-{model}"


def no_expand_trace(data: Any, what: str) -> None:
    text = data if isinstance(data, str) else json.dumps(data)
    expect(EXPAND_TOOL not in text, f"{what}: `{EXPAND_TOOL}` reached the client: {text[:600]}")


def check_final(resp: Response, model: str, what: str) -> None:
    """The client-visible final response: one assistant message quoting the expanded original."""
    data = resp.to_dict()
    strict(Response, data, what)
    no_expand_trace(data, what)
    expect(resp.status == "completed", f"{what}: status {resp.status}")
    expect(resp.id.startswith("resp_"), f"{what}: id {resp.id}")
    expect(resp.model == model, f"{what}: model {resp.model}")
    types = [item.type for item in resp.output]
    expect(types == ["message"], f"{what}: output item types {types} (only the final message is client-visible)")
    expect(
        all(getattr(t, "name", None) != EXPAND_TOOL for t in resp.tools),
        f"{what}: tools echoed {[getattr(t, 'name', t.type) for t in resp.tools]}",
    )
    expect(EXPAND_TOOL not in (json.dumps(resp.instructions) or ""), f"{what}: instructions {resp.instructions!r}")
    text = resp.output_text
    expect(text.startswith(EXPANDED_PREFIX), f"{what}: output_text {text[:120]!r}")
    quoted = text[len(EXPANDED_PREFIX) :].strip().strip('"')
    expect(bool(quoted) and LOG.startswith(quoted), f"{what}: quoted text is not the original's start: {quoted[:80]!r}")
    expect(resp.usage is not None and resp.usage.total_tokens > 0, f"{what}: usage {resp.usage}")


def without_sdk_parsed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream helper parses the terminal's text parts (`parsed: None` without a text format); not on the wire."""
    out = []
    for item in items:
        item = dict(item)
        if isinstance(item.get("content"), list):
            item["content"] = [
                {k: v for k, v in part.items() if not (k == "parsed" and v is None)} for part in item["content"]
            ]
        out.append(item)
    return out


def check_stream(events: list[Any], model: str, what: str) -> Response:
    """One coherent stream: lifecycle, sequence numbers, indexes, and a terminal matching the items streamed."""
    # Event order collapsed over deltas, strict validation of every event, 0..n, one response id.
    sdk_check.check_events(events, MESSAGE_EVENTS, "response.completed", what)
    types = [e.type for e in events]
    expect(types.count("response.created") == 1, f"{what}: {types.count('response.created')} response.created")
    terminals = [t for t in types if t in TERMINALS]
    expect(terminals == ["response.completed"] and types[-1] == "response.completed", f"{what}: terminals {terminals}")
    seqs = [e.sequence_number for e in events]
    expect(seqs[0] == 0 and all(b == a + 1 for a, b in zip(seqs, seqs[1:])), f"{what}: sequence_numbers {seqs}")
    for e in events:
        no_expand_trace(e.to_dict(), f"{what}: event {e.type} #{e.sequence_number}")

    # output_index: the k-th `output_item.added` is index k; every later event names an added item by index and id.
    added: list[Any] = []
    done: dict[int, Any] = {}
    for e in events:
        if e.type in LIFECYCLE or e.type in TERMINALS:
            continue
        idx = getattr(e, "output_index", None)
        expect(idx is not None, f"{what}: {e.type} #{e.sequence_number} has no output_index")
        if e.type == "response.output_item.added":
            expect(
                idx == len(added),
                f"{what}: output_item.added #{e.sequence_number} output_index {idx}, expected {len(added)}",
            )
            added.append(e.item)
            continue
        expect(
            idx < len(added), f"{what}: {e.type} #{e.sequence_number} output_index {idx} before its output_item.added"
        )
        expect(idx not in done, f"{what}: {e.type} #{e.sequence_number} output_index {idx} after its output_item.done")
        item_id = getattr(e, "item_id", None)
        if item_id is not None:
            expect(
                item_id == added[idx].id,
                f"{what}: {e.type} #{e.sequence_number} item_id {item_id} != {added[idx].id}",
            )
        if e.type == "response.output_item.done":
            expect(e.item.id == added[idx].id, f"{what}: output_item.done #{e.sequence_number} item id {e.item.id}")
            done[idx] = e.item
    expect(sorted(done) == list(range(len(added))), f"{what}: items added {len(added)}, done {sorted(done)}")

    final = events[-1].response
    streamed = [done[i].to_dict() for i in range(len(added))]
    terminal = without_sdk_parsed([item.to_dict() for item in final.output])
    expect(terminal == streamed, f"{what}: terminal response.output {terminal} != items streamed {streamed}")
    first = events[0].response
    expect(final.id == first.id, f"{what}: terminal id {final.id} != created id {first.id}")
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    expect(deltas == final.output_text, f"{what}: deltas {deltas[:80]!r} != final text {final.output_text[:80]!r}")
    check_final(final, model, what)
    return final


def expect_compressed(http_response: Any, what: str) -> None:
    """ctxgate's accounting header: the log rode compressed, so `context_expand` was offered."""
    compressed = http_response.headers.get("x-ctxgate-compressed")
    expect(compressed not in (None, "", "0"), f"{what}: x-ctxgate-compressed {compressed!r}: nothing was compressed")


def check_create(client: OpenAI) -> None:
    for model in MODELS:
        what = f"create {model}"
        raw = client.responses.with_raw_response.create(**request(model, case_key("create", model)))
        expect(raw.http_response.status_code == 200, f"{what}: status {raw.http_response.status_code}")
        expect_compressed(raw.http_response, what)
        body = raw.http_response.text
        no_expand_trace(body, what)
        strict(Response, json.loads(body), what)
        check_final(raw.parse(), model, what)
    print("ok   create (mock-expand, mock-expand-mixed)")


def check_create_stream(client: OpenAI) -> None:
    for model in MODELS:
        what = f"create(stream=True) {model}"
        raw = client.responses.with_raw_response.create(**request(model, case_key("stream", model)), stream=True)
        expect(raw.http_response.status_code == 200, f"{what}: status {raw.http_response.status_code}")
        expect_compressed(raw.http_response, what)
        events = list(raw.parse())
        check_stream(events, model, what)
    print("ok   create(stream=True) (mock-expand, mock-expand-mixed)")


def check_stream_helper(client: OpenAI) -> None:
    for model in MODELS:
        what = f"responses.stream {model}"
        with client.responses.stream(**request(model, case_key("helper", model))) as stream:
            events = list(stream)
            final = stream.get_final_response()
        check_stream(events, model, what)
        check_final(final, model, what)
        snapshots = [e.snapshot for e in events if e.type == "response.output_text.delta"]
        expect(bool(snapshots) and snapshots[-1] == final.output_text, f"{what}: delta snapshots")
        expect(final.id == events[0].response.id, f"{what}: final id {final.id}")
    print("ok   responses.stream(...).get_final_response() (mock-expand, mock-expand-mixed)")


def main() -> int:
    base_url = (sys.argv[1] if len(sys.argv) > 1 else None) or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        print("usage: sdk_expand_check.py BASE_URL", file=sys.stderr)
        return 2
    client = OpenAI(base_url=base_url, api_key="sk-ctxgate-expand-e2e", max_retries=0, timeout=60)
    print(f"openai {openai.__version__} against {base_url}, log of {len(LOG)} chars")
    try:
        check_create(client)
        check_create_stream(client)
        check_stream_helper(client)
    except CheckError as err:
        print(f"FAIL {err}", file=sys.stderr)
        return 1
    except Exception as err:  # any SDK exception (validation, stream state) is a failure too
        print(f"FAIL unexpected {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    print("all expand SDK checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
