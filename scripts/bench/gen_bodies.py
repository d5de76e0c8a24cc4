#!/usr/bin/env python3
"""Writes the request bodies for scripts/bench_load.sh.

usage: gen_bodies.py OUT_DIR [--marker MARKER] [--corpus DIR] NAME=BYTES [NAME=BYTES ...]

For each NAME it writes OUT_DIR/NAME-json.json (non-streaming) and OUT_DIR/NAME-sse.json
("stream": true), each exactly BYTES long. What the body holds depends on how NAME ends:

- plain (`10k`, `1m`): a realistic Responses API transcript (developer message, user message, a
  function call and its output) whose function_call_output is padded with shell-like tool output
  until the body reaches the size. The padding is deterministic and varied text rather than one
  repeated byte, so later compression stages see something that looks like a real tool output,
  and every run sends the same bytes. About one line in seven reports an error, which ctxzip keeps:
  the output saves less than a marker costs, so the plain rows measure a turn that carries no
  marker (with fewer error lines it saved 282 tokens, enough for the first marker since
  min_saved_tokens is 224, and the plain rows took the marker path).
- `-marker`: the same, the output ending with MARKER (a `<<ctxzip:HASH NOTE>>` an earlier turn
  left): ctxgate offers `context_expand`, the model (`mock-ok`) does not call it.
- `-expand`: the same with model `mock-expand`, which calls `context_expand` for the marker:
  through ctxgate one expansion round, directly the call itself.
- `-transcript`: an agent transcript of 150 real tool outputs (slices of the files in DIR, the
  corpus), each behind its function call, after one user message.
"""

import json
import random
import sys

DEVELOPER = (
    "You are a coding agent working in a Rust repository. Use the shell tool to inspect "
    "files and run commands; keep answers short and cite file paths."
)
USER = "The release build fails on CI but not locally. Find out why and fix it."


def body(stream: bool, output: str, model: str = "mock-ok") -> bytes:
    doc = {
        "model": model,
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
    words = ["Compiling", "Checking", "Running", "warning:", "error[E0308]:", "Finished", "error[E0599]:"]
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


def exact(stream: bool, size: int, marker: str = "", model: str = "mock-ok") -> bytes:
    suffix = f"\n{marker}" if marker else ""
    base = len(body(stream, suffix, model))
    if size < base:
        sys.exit(f"gen_bodies: {size} bytes is smaller than the bare transcript ({base} bytes)")
    text = tool_output(random.Random(size), size - base)
    make = lambda t: body(stream, t + suffix, model)
    # Trim to the exact size: drop characters from the end (never half of a "\n" escape),
    # then pad with spaces (one byte each once encoded) if trimming overshot.
    while len(make(text)) > size:
        over = len(make(text)) - size
        text = text[: max(0, len(text) - max(1, over // 2))]
    text += " " * (size - len(make(text)))
    out = make(text)
    assert len(out) == size, (len(out), size)
    return out


TRANSCRIPT_OUTPUTS = 150


def transcript(stream: bool, size: int, corpus: str) -> bytes:
    """150 function calls and their outputs, slices of the corpus files in turn, to exactly `size` bytes."""
    import os

    files = sorted(os.listdir(corpus))
    texts = [open(os.path.join(corpus, f), encoding="utf-8", errors="replace").read() for f in files]

    def doc(outputs):
        items = [{"type": "message", "role": "developer", "content": DEVELOPER},
                 {"role": "user", "content": USER}]
        for i, out in enumerate(outputs):
            items.append({"type": "function_call", "call_id": f"c{i}", "name": "exec_command",
                          "arguments": json.dumps({"cmd": files[i % len(files)]})})
            items.append({"type": "function_call_output", "call_id": f"c{i}", "output": out})
        d = {"model": "mock-ok", "stream": stream, "prompt_cache_key": "bench-transcript", "input": items}
        return json.dumps(d, separators=(",", ":"), ensure_ascii=True).encode()

    per = max(1, (size - len(doc([""] * TRANSCRIPT_OUTPUTS))) // TRANSCRIPT_OUTPUTS)
    offsets = {}
    outputs = []
    for i in range(TRANSCRIPT_OUTPUTS):
        t = texts[i % len(texts)]
        at = offsets.get(i % len(texts), 0) % max(1, len(t))
        offsets[i % len(texts)] = at + per
        piece = (t[at:] + t)[:per]
        # Escapes make the JSON longer than the text: shorten until the slice fits its share.
        while len(json.dumps(piece, ensure_ascii=True)) - 2 > per:
            piece = piece[: len(piece) - max(1, (len(json.dumps(piece, ensure_ascii=True)) - 2 - per) // 2)]
        outputs.append(piece)
    while len(doc(outputs)) < size:
        outputs[-1] += " " * (size - len(doc(outputs)))
    while len(doc(outputs)) > size:
        outputs[-1] = outputs[-1][:-1]
    out = doc(outputs)
    assert len(out) == size, (len(out), size)
    return out


def main() -> None:
    args = sys.argv[1:]
    marker = corpus = None
    while len(args) > 1 and args[1].startswith("--"):
        flag, value = args[1], args[2]
        del args[1:3]
        if flag == "--marker":
            marker = value
        elif flag == "--corpus":
            corpus = value
        else:
            sys.exit(f"gen_bodies: unknown flag {flag}")
    if len(args) < 2:
        sys.exit(__doc__)
    out_dir = args[0]
    for spec in args[1:]:
        name, _, size = spec.partition("=")
        for mode, stream in (("json", False), ("sse", True)):
            if name.endswith("-transcript"):
                if not corpus:
                    sys.exit(f"gen_bodies: {name} needs --corpus")
                data = transcript(stream, int(size), corpus)
            elif name.endswith("-marker") or name.endswith("-expand"):
                if not marker:
                    sys.exit(f"gen_bodies: {name} needs --marker")
                model = "mock-expand" if name.endswith("-expand") else "mock-ok"
                data = exact(stream, int(size), marker, model)
            else:
                data = exact(stream, int(size))
            with open(f"{out_dir}/{name}-{mode}.json", "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
