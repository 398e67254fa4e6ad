"""Converter benchmark: traces/s, MB/s, CPU and peak RSS per format, ours beside Potato's converter.

    python benchmarks/bench_converters.py                 # ~40 MB per case, 3 runs each, ~15 min
    python benchmarks/bench_converters.py --large         # adds 1 GB OpenAI Chat and ReAct JSONL (memory)
    python benchmarks/bench_converters.py --only react,swebench --repeat 5 --no-potato
    python benchmarks/bench_converters.py --mb 10 --compare /tmp/main-pkg   # also another version of ours

Like for like: every row feeds both tools the same traces (same counts, same number of steps, the
same text), through the real command lines (``python -m ls_trajeval convert`` and ``python -m
potato.trace_converter``), from one file each. Where both accept the same file it is the same file;
where Potato's converter only accepts its own shape for a format (MCP sessions, its ATIF, its
WebArena actions, aider JSON), the generator writes the same content in each tool's shape and the
row says so. The step columns show that both produced the work: a row where Potato writes empty
conversations is marked, not counted as a win for it.

Every run is a fresh subprocess under a tiny parent that reports the child's wall time, CPU time
and peak RSS (``getrusage(RUSAGE_CHILDREN)``); ours and Potato's runs alternate, and the table gives
medians over ``--repeat`` runs (the machine is shared: CPU time is the steadier figure). Potato
(``potato-annotation``, GPL-3.0) is installed by this script into its own virtual environment under
``~/.cache/ls-trajeval-bench`` and only run as a program; it is never imported here nor a dependency.
Ours is installed the same way, as a user installs it: a wheel of this checkout in a virtual
environment of its own there (rebuilt on every run; ``--editable`` times this interpreter's development
install instead, whose import hook adds ~0.01 s to every start).

``--compare DIR`` times another version of ours in the same runs (before/after a change): DIR is put
first on PYTHONPATH and must hold that version's ``ls_trajeval`` package with its converters inside,
as an installed copy has them, e.g. for the main branch::

    mkdir /tmp/main-pkg && git archive main ls_trajeval converters label_configs | tar -x -C /tmp/main-pkg
    mv /tmp/main-pkg/converters /tmp/main-pkg/label_configs /tmp/main-pkg/ls_trajeval/
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("LS_TRAJEVAL_BENCH_CACHE", Path.home() / ".cache" / "ls-trajeval-bench"))
POTATO_VENV = CACHE / "potato-venv"
POTATO_VERSION = "2.12.1"
ROOT = Path(__file__).resolve().parents[1]
WORDS = "the agent reads file config parser tool returns value error retry <tag> & ünï code patch test".split()
WRAP = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(r.stderr.decode(errors='replace')[-2000:] if r.returncode else '')\n"
    "print(dt, u.ru_utime + u.ru_stime, u.ru_maxrss, r.returncode)\n"
)


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def gen_openai(rng, i):
    msgs = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": words(rng, 30)}]
    for k in range(6):
        cid = f"call_{i}_{k}"
        msgs.append(
            {
                "role": "assistant",
                "content": words(rng, 20),
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "search", "arguments": json.dumps({"q": words(rng, 5), "n": k})},
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": words(rng, 60)})
    msgs.append({"role": "assistant", "content": words(rng, 40)})
    return {"id": f"conv-{i}", "messages": msgs}


def gen_anthropic(rng, i):
    msgs = [{"role": "user", "content": words(rng, 30)}]
    for k in range(6):
        tid = f"toolu_{i}_{k}"
        msgs.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": words(rng, 20)},
                    {"type": "tool_use", "id": tid, "name": "search", "input": {"q": words(rng, 5)}},
                ],
            }
        )
        msgs.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": words(rng, 60)}]}
        )
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": words(rng, 40)}]})
    return {"id": f"anth-{i}", "system": "Be an agent.", "messages": msgs}


def gen_react(rng, i):
    parts = [f"Question: {words(rng, 20)}"]
    for _k in range(6):
        parts += [
            f"Thought: {words(rng, 20)}",
            "Action: search",
            f'Action Input: {{"q": "{words(rng, 4)}"}}',
            f"Observation: {words(rng, 60)}",
        ]
    parts.append(f"Final Answer: {words(rng, 20)}")
    return {"id": f"react-{i}", "text": "\n".join(parts)}


def gen_react_structured(rng, i):
    steps = [
        {"thought": words(rng, 20), "action": f"search({words(rng, 4)})", "observation": words(rng, 60)}
        for _ in range(6)
    ]
    return {"id": f"rs-{i}", "task": words(rng, 20), "steps": steps, "metadata": {"agent": "bench"}}


def _swe_turns(rng):
    return [
        {"thought": words(rng, 30), "action": f"open {words(rng, 2)}", "observation": words(rng, 80)} for _ in range(8)
    ]


def gen_swe_traj(rng, i):
    """SWE-agent's own .traj shape (trajectory of thought/action/observation objects)."""
    traj = [dict(t, response=t["thought"], state="{}") for t in _swe_turns(rng)]
    return {
        "environment": "swe_main",
        "trajectory": traj,
        "history": [
            {"role": "system", "content": "You are SWE-agent."},
            {"role": "user", "content": "ISSUE:\n" + words(rng, 40) + "\n\nINSTRUCTIONS:\nfix"},
        ],
        "info": {"instance_id": f"inst-{i}", "exit_status": "submitted"},
    }


def gen_swe_steps(rng, i):
    """The simplified steps form Potato's swe_agent_trajectory converter reads (ours reads it too)."""
    return {
        "problem_statement": words(rng, 40),
        "steps": _swe_turns(rng),
        "info": {"instance_id": f"inst-{i}", "exit_status": "submitted"},
    }


def gen_langchain(rng, i):
    kids = []
    for k in range(6):
        kids.append(
            {
                "id": f"r{i}-l{k}",
                "name": "ChatOpenAI",
                "run_type": "llm",
                "inputs": {"messages": [{"role": "user", "content": words(rng, 10)}]},
                "outputs": {"generations": [{"text": words(rng, 20)}]},
                "child_runs": [],
            }
        )
        kids.append(
            {
                "id": f"r{i}-t{k}",
                "name": "search",
                "run_type": "tool",
                "inputs": {"query": words(rng, 5)},
                "outputs": {"output": words(rng, 60)},
                "child_runs": [],
            }
        )
    return {
        "id": f"run-{i}",
        "name": "AgentExecutor",
        "run_type": "chain",
        "inputs": {"input": words(rng, 30)},
        "outputs": {"output": words(rng, 20)},
        "child_runs": kids,
    }


def gen_langfuse(rng, i):
    obs = []
    for k in range(6):
        obs.append(
            {
                "id": f"o{i}-g{k}",
                "traceId": f"tr-{i}",
                "type": "GENERATION",
                "name": "gpt-4",
                "model": "gpt-4",
                "startTime": f"2024-01-01T00:{k:02d}:00Z",
                "input": [{"role": "user", "content": words(rng, 10)}],
                "output": {"content": words(rng, 20)},
            }
        )
        obs.append(
            {
                "id": f"o{i}-s{k}",
                "traceId": f"tr-{i}",
                "type": "SPAN",
                "name": "search",
                "startTime": f"2024-01-01T00:{k:02d}:30Z",
                "input": {"q": words(rng, 5)},
                "output": {"result": words(rng, 60)},
            }
        )
    return {
        "id": f"tr-{i}",
        "name": "agent-run",
        "input": {"query": words(rng, 30)},
        "output": {"result": words(rng, 20)},
        "observations": obs,
    }


def _attr(k, v):
    return {"key": k, "value": {"stringValue": v}}


def gen_otel(rng, i):
    tid = f"{i:032x}"
    spans = [
        {
            "traceId": tid,
            "spanId": f"{i:08x}root",
            "parentSpanId": "",
            "name": "invoke_agent bench",
            "startTimeUnixNano": "1700000000000000000",
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent")],
        }
    ]
    for k in range(6):
        t = 1700000000000000000 + (2 * k + 1) * 1000
        spans.append(
            {
                "traceId": tid,
                "spanId": f"{i:08x}c{k:03d}",
                "parentSpanId": f"{i:08x}root",
                "name": "chat gpt-4",
                "startTimeUnixNano": str(t),
                "attributes": [
                    _attr("gen_ai.operation.name", "chat"),
                    _attr("gen_ai.prompt", words(rng, 10)),
                    _attr("gen_ai.completion", words(rng, 20)),
                ],
            }
        )
        spans.append(
            {
                "traceId": tid,
                "spanId": f"{i:08x}t{k:03d}",
                "parentSpanId": f"{i:08x}root",
                "name": "execute_tool search",
                "startTimeUnixNano": str(t + 500),
                "attributes": [
                    _attr("gen_ai.operation.name", "execute_tool"),
                    _attr("gen_ai.tool.name", "search"),
                    _attr("gen_ai.tool.call.arguments", json.dumps({"q": words(rng, 5)})),
                    _attr("gen_ai.tool.call.result", words(rng, 60)),
                ],
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "bench")]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }


def gen_mcp(rng, i):
    """One MCP session: ours reads the JSON-RPC stream, Potato its session object of merged interactions."""
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": f"c{i}"}},
        },
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "serverInfo": {"name": "srv"}}},
    ]
    inter = []
    for k in range(1, 7):
        req = {
            "jsonrpc": "2.0",
            "id": k,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": words(rng, 5)}},
        }
        res = {"content": [{"type": "text", "text": words(rng, 60)}]}
        msgs += [req, {"jsonrpc": "2.0", "id": k, "result": res}]
        inter.append(dict(req, result=res))
    return msgs, {"id": f"session-{i}", "server": "srv", "interactions": inter}


def gen_autogen(rng, i):
    msgs = [{"sender": "user_proxy", "receiver": "assistant", "content": words(rng, 30)}]
    for _k in range(6):
        msgs.append({"sender": "assistant", "receiver": "user_proxy", "content": words(rng, 20)})
        msgs.append({"sender": "user_proxy", "receiver": "assistant", "content": words(rng, 60)})
    return {"id": f"ag-{i}", "task": msgs[0]["content"], "messages": msgs}


def gen_web(rng, i):
    """One web task: ours reads WebArena's trajectory shape, Potato its webarena actions shape."""
    intent = words(rng, 15)
    traj, acts = [], []
    for k in range(6):
        page, thought, el = words(rng, 60), words(rng, 20), 10 + k
        traj.append(
            {
                "state": {"url": f"https://shop.example/p{k}", "axtree_txt": page, "screenshot": f"shots/{i}_{k}.png"},
                "thought": thought,
                "action": f"click [{el}]",
            }
        )
        acts.append(
            {
                "action_type": "click",
                "element": {"tag": "button", "id": str(el), "text": page},
                "thought": thought,
                "screenshot": f"shots/{i}_{k}.png",
                "url": f"https://shop.example/p{k}",
            }
        )
    return {"task_id": str(i), "intent": intent, "trajectory": traj}, {
        "task_id": str(i),
        "intent": intent,
        "actions": acts,
    }


def gen_aider(rng, i):
    """One aider session: SEARCH/REPLACE blocks for ours (current aider), the older ORIGINAL/UPDATED
    blocks (file name inside the fence) for Potato, which reads only those."""

    def session(new_style: bool):
        parts = [f"# aider chat started at 2024-05-01 10:{i % 60:02d}:00\n", f"#### {words(rng, 20)}\n"]
        for k in range(3):
            old, new = words(rng, 8), words(rng, 8)
            if new_style:
                block = f"src/m{k}.py\n```python\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```"
            else:
                block = f"```python\nsrc/m{k}.py\n<<<<<<< ORIGINAL\n{old}\n=======\n{new}\n>>>>>>> UPDATED\n```"
            parts.append(f"{words(rng, 30)}\n\n{block}\n")
            parts.append(f"> Applied edit to src/m{k}.py\n\n#### {words(rng, 10)}\n")
        return "\n".join(parts)

    state = rng.getstate()
    ours = session(True)
    rng.setstate(state)
    return ours, session(False)


def gen_atif(rng, i):
    """One trajectory: Harbor ATIF-v1.2 for ours; Potato's own "ATIF" shape (task/agent objects, action objects)."""
    task = words(rng, 30)
    steps = [{"step_id": 1, "source": "user", "message": task}]
    psteps = []
    for k in range(6):
        th, q, obs = words(rng, 20), words(rng, 5), words(rng, 60)
        steps.append(
            {
                "step_id": k + 2,
                "source": "agent",
                "message": th,
                "tool_calls": [{"tool_call_id": f"c{k}", "function_name": "search", "arguments": {"q": q}}],
                "observation": {"results": [{"source_call_id": f"c{k}", "content": obs}]},
            }
        )
        psteps.append(
            {"step_id": k + 1, "thought": th, "action": {"tool": "search", "params": {"q": q}}, "observation": obs}
        )
    ours = {
        "schema_version": "ATIF-v1.2",
        "session_id": f"s-{i}",
        "agent": {"name": "bench", "version": "1", "model_name": "gpt-4"},
        "steps": steps,
    }
    return ours, {
        "trace_id": f"s-{i}",
        "task": {"description": task},
        "agent": {"name": "bench", "model": "gpt-4"},
        "steps": psteps,
    }


def gen_swebench(rng, i):
    return {
        "instance_id": f"repo__proj-{i}",
        "problem_statement": words(rng, 80),
        "repo": "repo/proj",
        "model_name_or_path": "gpt-4",
        "patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-"
        + words(rng, 20)
        + "\n+"
        + words(rng, 20)
        + "\n",
        "model_patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-"
        + words(rng, 20)
        + "\n+"
        + words(rng, 20)
        + "\n",
    }


def write_jsonl(path: Path, gen, mb: float) -> int:
    rng = random.Random(1)
    target = mb * 1e6
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < target:
            fh.write(json.dumps(gen(rng, n), ensure_ascii=False) + "\n")
            n += 1
    return n


def write_claude(path: Path, mb: float) -> int:
    """Sessions of 40 records each, one file (Potato reads a session file; we split by sessionId)."""
    rng = random.Random(1)
    target = mb * 1e6
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        while fh.tell() < target:
            sid, prev = f"sess-{n}", None
            for k in range(20):
                u = f"{sid}-u{k}"
                if k % 2 == 0:
                    msg = {
                        "role": "user",
                        "content": words(rng, 30)
                        if k == 0
                        else [{"type": "tool_result", "tool_use_id": f"{sid}-t{k - 1}", "content": words(rng, 60)}],
                    }
                    rec = {"type": "user", "message": msg}
                else:
                    rec = {
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "model": "claude",
                            "content": [
                                {"type": "text", "text": words(rng, 20)},
                                {
                                    "type": "tool_use",
                                    "id": f"{sid}-t{k}",
                                    "name": "Bash",
                                    "input": {"command": words(rng, 4)},
                                },
                            ],
                        },
                    }
                rec.update(uuid=u, parentUuid=prev, sessionId=sid, isSidechain=False, timestamp="2025-01-01T00:00:00Z")
                fh.write(json.dumps(rec) + "\n")
                prev = u
            n += 1
    return n


def write_swe(dirpath: Path, mb: float) -> int:
    """A directory of .traj files (one trajectory each), as SWE-agent writes them."""
    rng = random.Random(1)
    dirpath.mkdir(parents=True, exist_ok=True)
    total, n = 0, 0
    while total < mb * 1e6:
        traj = [
            {
                "thought": words(rng, 30),
                "action": f"open {words(rng, 2)}",
                "observation": words(rng, 80),
                "response": words(rng, 40),
                "state": "{}",
            }
            for _ in range(8)
        ]
        doc = {
            "environment": "swe_main",
            "trajectory": traj,
            "history": [
                {"role": "system", "content": "You are SWE-agent."},
                {"role": "user", "content": "ISSUE:\n" + words(rng, 40) + "\n\nINSTRUCTIONS:\nfix"},
            ],
            "info": {"exit_status": "submitted"},
        }
        p = dirpath / f"inst-{n}.traj"
        p.write_text(json.dumps(doc))
        total += p.stat().st_size
        n += 1
    return n


def write_cases(ours_path: Path, potato_path: Path | None, gen, mb: float, ours_kind: str, potato_kind: str) -> int:
    """Write ``gen``'s traces until the ours file reaches ``mb``; Potato's file when its shape differs.

    ours_kind: "jsonl" (one JSON value a line), "lines" (the value is a list of lines: an MCP
    session), "text" (the value is text: an aider session). potato_kind: "jsonl" or "list" (one
    JSON list, Potato's only way to read several aider sessions).
    """
    rng = random.Random(1)
    target, n = mb * 1e6, 0
    pfh = open(potato_path, "w", encoding="utf-8") if potato_path else None
    with open(ours_path, "w", encoding="utf-8") as fh:
        if pfh and potato_kind == "list":
            pfh.write("[")
        while fh.tell() < target:
            got = gen(rng, n)
            ours, theirs = got if isinstance(got, tuple) else (got, None)
            if ours_kind == "jsonl":
                fh.write(json.dumps(ours, ensure_ascii=False) + "\n")
            elif ours_kind == "otlp":
                fh.write(
                    ("," if n else '{"resourceSpans": [') + json.dumps(ours["resourceSpans"][0], ensure_ascii=False)
                )
            elif ours_kind == "lines":
                fh.write("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in ours))
            else:
                fh.write(ours + "\n")
            if pfh:
                item = json.dumps(theirs, ensure_ascii=False)
                pfh.write((("," if n else "") + item) if potato_kind == "list" else item + "\n")
            n += 1
        if ours_kind == "otlp":
            fh.write("]}\n")
        if pfh and potato_kind == "list":
            pfh.write("]")
    if pfh:
        pfh.close()
    return n


@dataclass
class Case:
    row: str
    ours_fmt: str
    potato_fmt: str | None
    gen: Callable | None = None
    #: writes the input itself (path, mb) -> traces; for inputs that are not one record a line
    writer: Callable | None = None
    ours_kind: str = "jsonl"
    #: None: Potato reads our file; "jsonl"/"list": Potato gets its own file of the same content
    potato_kind: str | None = None
    suffix: str = ".jsonl"
    note: str = ""


CASES = [
    Case("openai_chat", "openai_chat", "openai", gen_openai, note="same file"),
    Case("anthropic", "anthropic", "anthropic", gen_anthropic, note="same file"),
    Case("react (structured JSON)", "react", "react", gen_react_structured, note="same file; Potato's react format"),
    Case("react (ReAct text)", "react", None, gen_react, note="ours only: Potato has no ReAct text parser"),
    Case("claude_code", "claude_code", "claude_code", writer=write_claude, note="same file; all sessions in one file"),
    Case(
        "swe_agent (.traj shape)",
        "swe_agent",
        "swe_agent_trajectory",
        gen_swe_traj,
        note="same file (JSONL of SWE-agent trajectories); Potato skips trajectory objects and writes empty "
        "conversations",
    ),
    Case(
        "swe_agent (steps form)",
        "swe_agent",
        "swe_agent_trajectory",
        gen_swe_steps,
        note="same file; the form Potato reads",
    ),
    Case(
        "swe_agent (.traj directory)",
        "swe_agent",
        None,
        writer=write_swe,
        suffix="",
        note="ours only: one .traj file per run, as SWE-agent writes them",
    ),
    Case("langchain", "langchain", "langchain", gen_langchain, note="same file"),
    Case("langfuse", "langfuse", "langfuse", gen_langfuse, note="same file"),
    Case(
        "otel_genai",
        "otel_genai",
        "otel",
        gen_otel,
        ours_kind="otlp",
        suffix=".json",
        note="same file: one OTLP/JSON export holding every trace (Potato reads no JSONL of exports)",
    ),
    Case(
        "mcp",
        "mcp",
        "mcp",
        gen_mcp,
        ours_kind="lines",
        potato_kind="jsonl",
        note="same sessions: ours the JSON-RPC stream, Potato its session objects",
    ),
    Case("multi_agent", "multi_agent", "multi_agent", gen_autogen, note="same file (AutoGen sender/receiver)"),
    Case(
        "web_agent",
        "web_agent",
        "webarena",
        gen_web,
        potato_kind="jsonl",
        note="same tasks: ours WebArena trajectories, Potato its webarena actions",
    ),
    Case(
        "aider",
        "aider",
        "aider",
        gen_aider,
        ours_kind="text",
        potato_kind="list",
        suffix=".md",
        note="same sessions: ours one .aider.chat.history.md, Potato a JSON list (it cannot read .md)",
    ),
    Case(
        "atif",
        "atif",
        "atif",
        gen_atif,
        potato_kind="jsonl",
        note="same trajectories: ours Harbor ATIF-v1.2, Potato its own ATIF shape",
    ),
    Case("swebench", "swebench", "swebench", gen_swebench, note="same file"),
]


def install_ours(editable: bool) -> list[str]:
    """The command line of ours: this checkout installed as a user installs it (a wheel, not editable: an
    editable install's import hook costs every start ~0.01 s that no user pays), in a virtual environment of
    this checkout's own beside Potato's, reinstalled on every run so that it is the code as it is now.
    ``editable``: this interpreter instead (the development install)."""
    if editable:
        return [sys.executable, "-m", "ls_trajeval", "convert"]
    venv = CACHE / f"ours-venv-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]}"
    py = venv / "bin" / "python"
    fresh = not py.exists()
    if fresh:
        print(f"installing this checkout into {venv}...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # built from a copy of the files git knows (tracked or not ignored): a stale build/ folder of the checkout
    # must not end up in the wheel
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    with tempfile.TemporaryDirectory() as tmp:
        for f in filter(None, files):
            if (ROOT / f).is_file():
                (Path(tmp) / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / f, Path(tmp) / f)
        # dependencies once; afterwards only this checkout's package, rebuilt
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", *([] if fresh else ["--no-deps", "--force-reinstall"]), tmp],
            check=True,
        )
    return [str(py), "-m", "ls_trajeval", "convert"]


def ensure_potato() -> Path | None:
    py = POTATO_VENV / "bin" / "python"
    if (
        py.exists()
        and subprocess.run([str(py), "-c", "import potato.trace_converter"], capture_output=True).returncode == 0
    ):
        return py
    print(
        f"installing potato-annotation=={POTATO_VERSION} into {POTATO_VENV} (GPL, kept out of this project)...",
        flush=True,
    )
    subprocess.run([sys.executable, "-m", "venv", str(POTATO_VENV)], check=True)
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", f"potato-annotation=={POTATO_VERSION}"])
    return py if r.returncode == 0 else None


def measure(cmd: list[str], pythonpath: Path | None = None, cwd: Path | None = None) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, exit code) of one run in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath)) if pythonpath else None
    # run from the outputs' folder: ``python -m`` puts the working directory first on sys.path, and a checkout's
    # own ls_trajeval folder there would shadow the installed package
    out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if out.stderr.strip():
        sys.stderr.write(out.stderr[-500:] + "\n")
    dt, cpu, rss_kb, rc = out.stdout.split()
    return float(dt), float(cpu), int(rss_kb) / 1024, int(rc)


def counts(p: Path, key: str) -> tuple[int, int]:
    """(traces, steps) in a JSONL output; ``key`` is the step list (ours "trace", Potato "conversation")."""
    n = steps = 0
    try:
        with open(p, encoding="utf-8") as fh:
            for ln in fh:
                if ln.strip():
                    n += 1
                    steps += len(json.loads(ln).get(key) or [])
    except OSError:
        pass
    return n, steps


def size_mb(p: Path) -> float:
    return (sum(f.stat().st_size for f in p.iterdir()) if p.is_dir() else p.stat().st_size) / 1e6


def prepare(case: Case, work: Path, mb: float) -> tuple[Path, Path | None]:
    slug = case.row.split()[0] + ("-" + case.row.split("(")[1].split()[0].strip(".)") if "(" in case.row else "")
    ours = work / f"{slug}-{mb:g}{case.suffix}"
    theirs = (
        work / f"{slug}-{mb:g}-potato.{'json' if case.potato_kind == 'list' else 'jsonl'}" if case.potato_kind else None
    )
    if not ours.exists() or theirs is not None and not theirs.exists():
        print(f"generating {ours.name}...", flush=True)
        if case.writer:
            case.writer(ours, mb)
        else:
            write_cases(ours, theirs, case.gen, mb, case.ours_kind, case.potato_kind or "jsonl")
    return ours, theirs or (ours if case.potato_fmt else None)


def run_case(
    case: Case,
    work: Path,
    outdir: Path,
    mb: float,
    repeat: int,
    potato: Path | None,
    ours: list[str],
    compare: Path | None = None,
) -> dict:
    ours_in, potato_in = prepare(case, work, mb)
    o, po, co = outdir / "ours.jsonl", outdir / "potato.jsonl", outdir / "compare.jsonl"
    ours_runs, potato_runs, compare_runs = [], [], []
    row = {"case": case.row, "mb": size_mb(ours_in), "note": case.note}
    use_potato = potato is not None and case.potato_fmt is not None
    for k in range(repeat):
        ours_runs.append(measure([*ours, str(ours_in), "--format", case.ours_fmt, "-o", str(o), "-q"], cwd=outdir))
        if k == 0:
            row["traces"], row["steps"] = counts(o, "trace")
        if use_potato:
            potato_runs.append(
                measure(
                    [
                        str(potato),
                        "-m",
                        "potato.trace_converter",
                        "-i",
                        str(potato_in),
                        "-f",
                        case.potato_fmt,
                        "-o",
                        str(po),
                    ],
                    cwd=outdir,
                )
            )
            if k == 0:
                row["ptraces"], row["psteps"] = counts(po, "conversation")
        if compare:
            compare_runs.append(
                measure([*ours, str(ours_in), "--format", case.ours_fmt, "-o", str(co), "-q"], compare, outdir)
            )
            if k == 0:
                row["ctraces"] = counts(co, "trace")[0]
    med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    row.update(
        t=med(ours_runs, 0), cpu=med(ours_runs, 1), rss=max(r[2] for r in ours_runs), rc=max(r[3] for r in ours_runs)
    )
    if use_potato:
        row.update(
            pt=med(potato_runs, 0),
            pcpu=med(potato_runs, 1),
            prss=max(r[2] for r in potato_runs),
            prc=max(r[3] for r in potato_runs),
        )
    if compare:
        row.update(ccpu=med(compare_runs, 1), crss=max(r[2] for r in compare_runs))
    for f in (o, po, co):
        if f.exists():
            f.unlink()
    return row


LARGE = [("openai_chat", gen_openai), ("react", gen_react)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=40, help="input size per case (MB)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool and case (medians reported)")
    ap.add_argument("--only", help="comma-separated case names (first word of the row, e.g. react,swe_agent)")
    ap.add_argument(
        "--large", action="store_true", help="also convert 1 GB OpenAI Chat and ReAct text JSONL (ours only)"
    )
    ap.add_argument("--large-mb", type=float, default=1000)
    ap.add_argument("--no-potato", action="store_true")
    ap.add_argument(
        "--editable",
        action="store_true",
        help="time this interpreter's (development) install of ours "
        "instead of a wheel of this checkout in its own environment",
    )
    ap.add_argument(
        "--compare", type=Path, metavar="DIR", help="also time the version of ours whose ls_trajeval package is in DIR"
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("README-converters.md"))
    args = ap.parse_args()
    work = CACHE / "inputs"
    work.mkdir(parents=True, exist_ok=True)
    # outputs go to a directory of this run's own: several runs may share the cache (inputs, Potato)
    outdir = Path(tempfile.mkdtemp(prefix="out-", dir=CACHE))
    potato = None if args.no_potato else ensure_potato()
    ours = install_ours(args.editable)
    # bytecode cached for both tools, as an installed package has it (this environment may disable
    # it, which would make our start-up compile every module on every run); then one warm-up run each
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    subprocess.run([ours[0], "-m", "ls_trajeval", "formats"], capture_output=True)
    if potato is not None:
        subprocess.run([str(potato), "-m", "potato.trace_converter", "--list-formats"], capture_output=True)
    only = set(args.only.split(",")) if args.only else None
    rows = []
    for case in CASES:
        if only and case.row.split()[0] not in only:
            continue
        row = run_case(case, work, outdir, args.mb, args.repeat, potato, ours, args.compare)
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items() if k != "note"}, flush=True)
    large = []
    if args.large:
        for name, gen in LARGE:
            p = work / f"{name}-{args.large_mb:g}.jsonl"
            if not p.exists():
                print(f"generating {p.name}...", flush=True)
                write_cases(p, None, gen, args.large_mb, "jsonl", "jsonl")
            o = outdir / "ours-large.jsonl"
            dt, cpu, rss, rc = measure([*ours, str(p), "--format", name, "-o", str(o), "-q"], cwd=outdir)
            large.append(
                {
                    "format": name,
                    "mb": p.stat().st_size / 1e6,
                    "traces": counts(o, "trace")[0],
                    "t": dt,
                    "cpu": cpu,
                    "rss": rss,
                    "rc": rc,
                }
            )
            o.unlink()
            print(large[-1], flush=True)
    shutil.rmtree(outdir, ignore_errors=True)
    report(rows, large, args, potato is not None)


NOTES = """
How to read it:
- Ratio = our traces per CPU-second over Potato's on the same traces (user + system time of the
  process), and in brackets the same from wall time. Above 1 means ours is faster. The machine is
  shared with other work, so wall times carry waiting for the CPU; CPU time is the steadier figure.
  traces/s and MB/s are from wall time. Each figure is the median of the runs; peak RSS the largest.
- "steps/trace" is what each tool emitted per trace: ours counts trace steps, Potato counts conversation
  turns. Close figures show both did the same work; where Potato's is 0 it wrote empty conversations
  and no ratio is given.
- Start-up is included on both sides, as a user pays it, and costs both about the same: 0.04-0.06 s of CPU
  depending on the machine's state (ours: Python, click, orjson, the convert command and the one converter
  asked for; with `--format auto` every detector, +0.02 s; Potato: argparse and its modules). Both are
  installed from wheels and run with cached bytecode.
- Ours streams JSONL line by line (bytes decoded with orjson), so peak RSS stays flat however large the
  file; Potato reads the whole file into memory and builds every trace before writing.
- Formats that have to see a whole trace before emitting it are bounded by the largest trace (or
  session, or file) instead of the largest line: Claude Code (a session is ordered by its parentUuid
  chain, and one file may hold several sessions, so the bound is one file), LangChain flat run lists
  and span formats (spans are grouped by trace id and may come in any order, so every span of a file
  is kept until its end; a big single OTLP export is read entry by entry with ijson, so only the
  compact spans are held, not the text and the parsed document; Phoenix span lists are loaded whole),
  MCP (a session). Inspect AI `.json` logs are streamed sample by sample with ijson; `.eval`
  archives member by member.
"""


def report(rows, large, args, with_potato: bool) -> None:
    lines = [
        "# Converter benchmark",
        "",
        f"`python benchmarks/bench_converters.py --mb {args.mb:g} --repeat {args.repeat}` on this machine "
        f"({os.cpu_count()} CPUs shared with other work, Python {sys.version.split()[0]}). "
        "Potato = `potato-annotation` "
        f"{POTATO_VERSION} (`python -m potato.trace_converter`), run alternately with ours on the same traces; "
        + (
            "ours: the development (editable) install."
            if args.editable
            else "ours: a wheel of this checkout, installed like Potato's."
        ),
        "",
        "| case | input MB | traces ours / Potato | steps/trace ours / Potato | ours traces/s | ours MB/s "
        "| ours peak RSS MiB "
        "| Potato traces/s | Potato peak RSS MiB | ratio ours/Potato, CPU (wall) | input |"
        + (" ours CPU s / compared CPU s (speed-up) |" if args.compare else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.compare else ""),
    ]
    for r in rows:
        spt = r["steps"] / r["traces"] if r["traces"] else 0
        cells = [r["case"], f"{r['mb']:.0f}"]
        if "pt" in r:
            pspt = r["psteps"] / r["ptraces"] if r["ptraces"] else 0
            cells += [
                f"{r['traces']:,} / {r['ptraces']:,}" + ("" if r["prc"] == 0 else f" (Potato exit {r['prc']})"),
                f"{spt:.1f} / {pspt:.1f}",
            ]
        else:
            cells += [f"{r['traces']:,}", f"{spt:.1f}"]
        cells += [f"{r['traces'] / r['t']:,.0f}", f"{r['mb'] / r['t']:.1f}", f"{r['rss']:.0f}"]
        if "pt" in r:
            ok = r["prc"] == 0 and r["ptraces"] > 0 and r["psteps"] > 0
            cells += [f"{r['ptraces'] / r['pt']:,.0f}", f"{r['prss']:.0f}"]
            if ok:
                ratio = (r["traces"] / r["t"]) / (r["ptraces"] / r["pt"])
                cratio = (r["traces"] / r["cpu"]) / (r["ptraces"] / r["pcpu"])
                cells.append(f"**{cratio:.1f}×** ({ratio:.1f}×)")
            else:
                cells.append("n/a: Potato output empty")
        else:
            cells += ["–", "–", "–"]
        cells.append(r["note"])
        if args.compare:
            cells.append(
                f"{r['cpu']:.2f} / {r['ccpu']:.2f} (**{r['ccpu'] / r['cpu']:.2f}×**)"
                + ("" if r.get("ctraces") == r["traces"] else f"; compared made {r.get('ctraces')} traces")
            )
        lines.append("| " + " | ".join(cells) + " |")
    if large:
        lines += [
            "",
            "Large inputs (ours only, one run each):",
            "",
            "| format | input MB | traces | time s | MB/s | peak RSS MiB |",
            "|---|---|---|---|---|---|",
        ]
        for g in large:
            lines.append(
                f"| {g['format']} | {g['mb']:,.0f} | {g['traces']:,} | {g['t']:.0f} | {g['mb'] / g['t']:.1f} "
                f"| {g['rss']:.0f} |"
            )
    lines.append(NOTES)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
