"""MCP (Model Context Protocol) JSON-RPC 2.0 logs.

Mapping: one trace per session (a new ``initialize`` request starts the next one). ``tools/call``
request -> action (tool name, arguments), its response (matched by id, placed right after the
request even when responses arrive out of order) -> observation, or error when ``isError`` or a
JSON-RPC error. Other client/server requests (resources/read, prompts/get, sampling/...) -> action
named by the method, with their response as observation. Handshake and housekeeping (initialize,
ping, */list, notifications/initialized, list_changed, progress) -> system; server log
notifications (notifications/message) -> observation. A record that is not JSON-RPC becomes an
``other`` step and a warning; a malformed message is a located TraceError and the session goes on.
Wrappers ``{direction|timestamp, message}`` and ``{request, response}`` pairs are unwrapped.
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from ls_trajeval.core.jsonfiles import loads
from ls_trajeval.core.trace import describe

from .base import Converter, Gather, Sample, Unit
from .support.chat import media_ref, value_text
from .support.errors import BadRecord, join_field, record_error, warning
from .support.files import Origin, documents_only, elements, records, sample_objects
from .support.steps import dumps, finish, render_args, stable_id, step, step_metadata

NAME = "mcp"
_SYSTEM_METHODS = {"initialize", "ping", "logging/setLevel", "notifications/initialized", "notifications/progress",
                   "notifications/cancelled", "notifications/roots/list_changed", "notifications/tools/list_changed",
                   "notifications/resources/list_changed", "notifications/prompts/list_changed",
                   "notifications/resources/updated", "resources/subscribe", "resources/unsubscribe"}
_WRAP_KEYS = ("message", "data", "payload", "body")


def _is_rpc(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("jsonrpc") == "2.0"


def _unwrap(obj: Any) -> list[tuple[Any, dict]]:
    """(JSON-RPC message, wrapper metadata) pairs in one record; [] when the record is not one."""
    if _is_rpc(obj):
        return [(obj, {})]
    if not isinstance(obj, dict):
        return []
    meta = {
        k: obj[k]
        for k in ("direction", "timestamp", "time", "type", "from", "to", "server")
        if isinstance(obj.get(k), (str, int, float))
    }
    for k in _WRAP_KEYS:
        v = obj.get(k)
        if isinstance(v, str):
            try:
                v = loads(v)
            except (ValueError, RecursionError):
                continue
        if _is_rpc(v):
            return [(v, meta)]
        if isinstance(v, list) and v and all(_is_rpc(x) for x in v):
            return [(x, meta) for x in v]  # JSON-RPC batch
    if _is_rpc(obj.get("request")):
        out = [(obj["request"], dict(meta, direction=meta.get("direction", "request")))]
        if _is_rpc(obj.get("response")):
            out.append((obj["response"], dict(meta, direction="response")))
        return out
    return []


def _mcp_methods(objs: list) -> tuple[int, int]:
    rpc = mcp = 0
    for o in objs:
        for m, _ in _unwrap(o):
            rpc += 1
            meth = m.get("method")
            if isinstance(meth, str) and (
                meth in _SYSTEM_METHODS
                or meth.split("/")[0]
                in ("tools", "resources", "prompts", "notifications", "sampling", "completion", "elicitation", "roots")
            ):
                mcp += 1
            elif (
                "result" in m
                and isinstance(m["result"], dict)
                and ({"content", "tools", "protocolVersion", "serverInfo", "isError"} & set(m["result"]))
            ):
                mcp += 1
    return rpc, mcp


def detect(sample: Sample) -> float:
    objs = sample_objects(sample, 20)
    if isinstance(sample.first_json, dict):
        for k in ("messages", "log", "entries", "history"):
            if isinstance(sample.first_json.get(k), list):
                objs = sample.first_json[k][:20]
                break
    rpc, mcp = _mcp_methods(objs)
    if mcp:
        return 0.95
    if rpc:
        return 0.6
    return 0.0


def _content_text(result: dict, where: str) -> str:
    """The text of a response's ``result``; ``where`` locates the response (joined only for an error)."""
    content = result.get("content")
    if content is None:
        if "structuredContent" in result:
            return dumps(result["structuredContent"])
        if "contents" in result:  # resources/read
            content = result["contents"]
        else:
            return dumps(result)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRecord(
            join_field(where, "result.content"), f"expected a list of content items, got {describe(content)}"
        )
    parts = []
    for i, c in enumerate(content):
        if not isinstance(c, dict):
            raise BadRecord(join_field(where, f"result.content[{i}]"), f"expected a content object, got {describe(c)}")
        t = c.get("type")
        if isinstance(c.get("text"), str) and t in (None, "text"):
            parts.append(c["text"])
        elif t in ("image", "audio"):
            ref = media_ref(f"data:{c.get('mimeType', '')};base64,{c.get('data', '')}")
            parts.append(f"[{t} {c.get('mimeType', '')}: {ref}]")
        elif t == "resource" and isinstance(c.get("resource"), dict):
            r = c["resource"]
            parts.append(r["text"] if isinstance(r.get("text"), str) else f"[resource: {r.get('uri', '')}]")
        elif t == "resource_link" or ("uri" in c and "text" not in c):
            parts.append(f"[resource: {c.get('uri', '')}]")
        else:
            parts.append(dumps(c))
    return "\n".join(parts)


class _Session:
    def __init__(self, index: int):
        self.index = index
        self.entries: list = []  # [kind, step(s)] in arrival order; responses attached to their request
        self.pending: dict[str, int] = {}
        self.methods: dict[str, str] = {}
        self.info: dict = {}
        self.first: Any = None


def _resp_step(msg: dict, method: str | None, name: str | None, where: str, meta: dict):
    if "error" in msg and msg["error"] is not None:
        e = msg["error"]
        if isinstance(e, dict):
            text = f"{e.get('code', '')}: {e.get('message', '')}".strip(": ")
            if "data" in e:
                text += "\n" + value_text(e["data"])
        else:
            text = value_text(e)
        return step("error", text, None, {"method": method, "tool_name": name, **meta})
    result = msg.get("result")
    if method in _SYSTEM_METHODS or (method or "").endswith("/list"):
        return step("system", dumps(result), None, {"method": method, **meta})
    if not isinstance(result, dict):
        if result is None:
            return step("observation", "", None, {"method": method, "tool_name": name, **meta})
        raise BadRecord(join_field(where, "result"), f"expected an object, got {describe(result)}")
    text = _content_text(result, where)
    stype = "error" if result.get("isError") is True else "observation"
    extra = (
        {"structuredContent": result["structuredContent"]}
        if "structuredContent" in result and result.get("content") is not None
        else {}
    )
    return step(stype, text, None, {"method": method, "tool_name": name, **extra, **meta})


def _add(sess: _Session, msg: dict, where: str, meta: dict) -> None:
    method = msg.get("method")
    mid = msg.get("id")
    if method is not None and not isinstance(method, str):
        raise BadRecord(join_field(where, "method"), f"expected a string, got {describe(method)}")
    params = msg.get("params")
    if params is not None and not isinstance(params, dict) and not isinstance(params, list):
        raise BadRecord(join_field(where, "params"), f"expected an object, got {describe(params)}")
    if method is not None:
        is_req = mid is not None
        if method == "tools/call":
            if not isinstance(params, dict):
                raise BadRecord(
                    join_field(where, "params"),
                    "missing" if params is None else f"expected an object, got {describe(params)}",
                )
            name = params.get("name")
            if not isinstance(name, str):
                raise BadRecord(
                    join_field(where, "params.name"),
                    "missing" if name is None else f"expected a string, got {describe(name)}",
                )
            st = step("action", name, render_args(params.get("arguments", {})),
                      {"method": method, "rpc_id": mid, "tool_call_id": str(mid) if mid is not None else None, **meta})
        elif method == "notifications/message":
            p = params or {}
            st = step(
                "observation",
                value_text(p.get("data")) if isinstance(p, dict) else value_text(p),
                None,
                {
                    "method": method,
                    "level": p.get("level") if isinstance(p, dict) else None,
                    "logger": p.get("logger") if isinstance(p, dict) else None,
                    **meta,
                },
            )
        elif method in _SYSTEM_METHODS or method.endswith("/list"):
            st = step("system", method if params is None else f"{method}\n{dumps(params)}", None,
                      {"method": method, "rpc_id": mid, **meta})
            if method == "initialize" and isinstance(params, dict):
                sess.info["client"] = params.get("clientInfo")
                sess.info["protocolVersion"] = params.get("protocolVersion")
        elif not is_req and not method.startswith("notifications/"):
            st = step("other", dumps(msg), None, {"method": method, **meta})
        elif not is_req:
            st = step(
                "system", method if params is None else f"{method}\n{dumps(params)}", None, {"method": method, **meta}
            )
        else:
            st = step("action", method, render_args(params if params is not None else {}),
                      {"method": method, "rpc_id": mid, **meta})
        sess.entries.append([st])
        if is_req:
            sess.pending[str(mid)] = len(sess.entries) - 1
            sess.methods[str(mid)] = method
        return
    if mid is None and "error" not in msg:
        raise BadRecord(where or None, "a JSON-RPC message needs a method or an id")
    key = mid if isinstance(mid, str) else str(mid)
    idx = sess.pending.pop(key, None)
    meth = sess.methods.get(key) if idx is not None else None
    name = None
    if mid is not None:
        meta["rpc_id"] = mid
    if idx is not None and meth == "tools/call":
        name = sess.entries[idx][0].content
        meta["tool_call_id"] = key
    st = _resp_step(msg, meth, name, where, meta)
    if meth == "initialize" and isinstance(msg.get("result"), dict):
        sess.info["server"] = msg["result"].get("serverInfo")
        sess.info["protocolVersion"] = msg["result"].get("protocolVersion", sess.info.get("protocolVersion"))
    if idx is None:
        step_metadata(st)["unmatched_response"] = True
        sess.entries.append([st])
    else:
        sess.entries[idx].append(st)


def one(sess: _Session, origin: Origin) -> list:
    """One session (gathered by :class:`_Sessions`) to its trace."""
    steps = []
    for e in sess.entries:
        if len(e) == 1 and e[0].type == "action" and e[0].get("metadata", {}).get("rpc_id") is not None:
            step_metadata(e[0])["no_response"] = True
        steps.extend(e)
    md = {"session_index": sess.index, "first_record": sess.first, **sess.info}
    return [finish(origin, stable_id(origin.file_name, sess.index, sess.first), "", steps, md)]


@documents_only
def _split(val: Any, origin: Origin) -> list | None:
    """A JSON document's records: the items of a list or of its usual wrapper key (a JSONL line is one record)."""
    items = val
    if isinstance(val, dict) and not _unwrap(val):
        for k in ("messages", "log", "entries", "history"):
            if isinstance(val.get(k), list):
                items = val[k]
                break
    return elements(items, origin) if isinstance(items, list) else [(origin, items)]


class _Sessions(Gather):
    """Messages into sessions (a new ``initialize`` request starts the next one): a session is converted when the
    next one starts, and the last at the end of the file. A bad message is its own located error; its session goes
    on."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.sess = _Session(0)
        self.warned = 0  # records that are not JSON-RPC, kept as 'other' steps

    def _session_of(self, msg: dict, loc: int | None) -> Unit | None:
        """Start a new session at an initialize request when the current one holds anything (its trace is returned)."""
        sess, done = self.sess, None
        if msg.get("method") == "initialize" and msg.get("id") is not None and sess.entries:
            done = Unit(Origin(NAME, self.source), sess)
            sess = self.sess = _Session(sess.index + 1)
        if sess.first is None:
            sess.first = loc
        return done

    def add(self, rec: Any, origin: Origin) -> list | None:
        line, idx = origin.line, origin.index
        loc = line if idx is None else idx
        if idx is None and isinstance(rec, dict) and rec.get("jsonrpc") == "2.0":
            # once per message (benchmarks/converter_instructions.py, mcp): the usual record is one bare JSON-RPC
            # message on its own line, and it returns nothing
            done = self._session_of(rec, loc) if rec.get("method") == "initialize" or self.sess.first is None else None
            try:
                _add(self.sess, rec, "", {} if line is None else {"source_line": line})
            except Exception as exc:  # noqa: BLE001 - one odd message is its own located error; the session goes on
                return (
                    [record_error(origin, exc, "", rec)] if done is None else [done, record_error(origin, exc, "", rec)]
                )
            return None if done is None else [done]
        out: list = []
        msgs = _unwrap(rec)
        if not msgs:
            self.sess.entries.append([step("other", dumps(rec), None, {"source_line": line, "source_record": idx})])
            self.warned += 1
            if self.sess.first is None:
                self.sess.first = loc
            return out
        for k, (msg, meta) in enumerate(msgs):
            if msg.get("method") == "initialize" or self.sess.first is None:
                done = self._session_of(msg, loc)
                if done is not None:
                    out.append(done)
            m = {} if meta is None else dict(meta)
            if line is not None:
                m["source_line"] = line
            if idx is not None:
                m["source_record"] = idx
            try:
                _add(self.sess, msg, f"[{k}]" if len(msgs) > 1 else "", m)
            except Exception as exc:  # noqa: BLE001 - one odd message is its own located error; the session goes on
                out.append(record_error(origin, exc, "", msg))
        return out

    def end(self) -> Iterator:
        if self.sess.entries:
            yield Unit(Origin(NAME, self.source), self.sess)
        if self.warned:
            yield warning(self.source, None, f"{self.warned} record(s) that are not JSON-RPC kept as 'other' steps")


CONVERTER = Converter(
    name=NAME,
    description="MCP JSON-RPC 2.0 logs (tools/call requests and results, notifications, initialize)",
    shapes='JSONL or a JSON list of {"jsonrpc": "2.0", ...} messages, or wrappers {direction, timestamp, message} / '
           '{request, response}',
    detect=detect,
    one=one,
    read=partial(records, split=_split, moving=True),  # _Sessions.add keeps a message's line and index alone
    gather=_Sessions,
)
