#!/usr/bin/env python3
"""Writes the request bodies for scripts/bench_load.sh.

usage: gen_bodies.py OUT_DIR NAME=BYTES [NAME=BYTES ...]

For each NAME it writes OUT_DIR/NAME-json.json (non-streaming) and OUT_DIR/NAME-sse.json
("stream": true), each exactly BYTES long: a realistic Responses API transcript (developer
message, user message, a function call and its output) whose function_call_output is padded
with shell-like tool output until the body reaches the size. The padding is deterministic
and varied text rather than one repeated byte, so later compression stages see something
that looks like a real tool output, and every run sends the same bytes.
"""

import json
import random
import sys

DEVELOPER = (
    "You are a coding agent working in a Rust repository. Use the shell tool to inspect "
    "files and run commands; keep answers short and cite file paths."
)
USER = "The release build fails on CI but not locally. Find out why and fix it."


def body(stream: bool, output: str) -> bytes:
    doc = {
        "model": "mock-ok",
        "stream": stream,
        "input": [
            {"type": "message", "role": "developer", "content": DEVELOPER},
            {"role": "user", "content": USER},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
    }
    # Compact separators like SDKs send; ensure_ascii keeps the size arithmetic byte-exact.
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()


def tool_output(rng: random.Random, approx: int) -> str:
    """Build-log / `ls -l`-like lines, at least `approx` characters long."""
    words = ["Compiling", "Checking", "Running", "warning:", "error[E0308]:", "Finished", "Fresh"]
    crates = ["serde", "tokio", "hyper", "axum", "reqwest", "redb", "clap", "bytes", "tracing", "ctxgate"]
    lines = []
    total = 0
    n = 0
    while total < approx:
        n += 1
        if n % 3 == 0:
            line = "-rw-r--r-- 1 dev dev {:>8} Nov {:>2} 12:{:02} src/{}/{}.rs".format(
                rng.randint(100, 99999), rng.randint(1, 30), rng.randint(0, 59),
                rng.choice(crates), rng.choice(crates))
        else:
            line = "   {} {} v{}.{}.{} (line {}: `{}`)".format(
                rng.choice(words), rng.choice(crates), rng.randint(0, 2), rng.randint(0, 40),
                rng.randint(0, 20), n, "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(24)))
        lines.append(line)
        total += len(line) + 2  # "\n" is two bytes once JSON-escaped
    return "\n".join(lines)


def exact(stream: bool, size: int) -> bytes:
    base = len(body(stream, ""))
    if size < base:
        sys.exit(f"gen_bodies: {size} bytes is smaller than the bare transcript ({base} bytes)")
    text = tool_output(random.Random(size), size - base)
    # Trim to the exact size: drop characters from the end (never half of a "\n" escape),
    # then pad with spaces (one byte each once encoded) if trimming overshot.
    while len(body(stream, text)) > size:
        over = len(body(stream, text)) - size
        text = text[: max(0, len(text) - max(1, over // 2))]
    text += " " * (size - len(body(stream, text)))
    out = body(stream, text)
    assert len(out) == size, (len(out), size)
    return out


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    for spec in sys.argv[2:]:
        name, _, size = spec.partition("=")
        for mode, stream in (("json", False), ("sse", True)):
            with open(f"{out_dir}/{name}-{mode}.json", "wb") as f:
                f.write(exact(stream, int(size)))


if __name__ == "__main__":
    main()
