"""Web-agent traces: WebArena trajectories, BrowserGym / AgentLab step logs, generic web agents.

Mapping per trajectory item: its page state (what the action was chosen on) -> observation
(accessibility tree / page text; url and screenshot reference in metadata), a
``last_action_error`` -> error (it reports the previous action, so it comes before the page), the
agent's thought/reasoning -> thought, the action -> action (content = the action's verb, e.g.
``click``; action_input = the whole action string byte for byte). The next item's page is
therefore the observation that follows each action. WebArena's alternating state/action lists
are handled the same way. Screenshots are kept only as references (paths, URLs, or a summary of
inline base64), never inlined.
"""
from __future__ import annotations

import re
from typing import Any

from ls_trajeval.core.trace import describe

from .base import Converter, Sample
from .support.chat import media_ref, value_text
from .support.errors import BadRecord
from .support.files import Origin, sample_objects
from .support.steps import default_id, dumps, finish, render_args, step

NAME = "web_agent"
_LIST_KEYS = ("trajectory", "steps")
_OBS_KEYS = ("state", "obs", "observation")
_PAGE_TEXT = (
    "axtree_txt",
    "accessibility_tree",
    "axtree",
    "text",
    "page_text",
    "dom_txt",
    "pruned_html",
    "html",
    "content",
)
_SHOT = ("screenshot", "screenshot_path", "image", "screenshot_url", "som_screenshot")
_THOUGHT = ("thought", "thoughts", "reasoning", "think", "rationale", "plan")
_WEB_KEYS = {"url", "axtree_txt", "axtree", "accessibility_tree", "screenshot", "screenshot_path", "pruned_html",
             "dom_txt", "open_pages_urls", "last_action_error", "som_screenshot", "page"}
_WEB_ACTION = re.compile(
    r"^\s*(click|type|hover|scroll|goto|go_back|go_forward|press|fill|select_option|new_tab|tab_focus|"
    r"close_tab|stop|send_msg_to_user|noop|dblclick|focus|clear|upload_file|keyboard_\w+|mouse_\w+)\b",
    re.I,
)
_VERB = re.compile(r"^\s*`*\s*([A-Za-z_][\w.]*)")


def _items(obj: dict) -> tuple[str, list] | None:
    for k in _LIST_KEYS:
        v = obj.get(k)
        if isinstance(v, list):
            return k, v
    return None


def _web_evidence(obj: dict, items: list) -> bool:
    for it in items[:30]:
        if not isinstance(it, dict):
            continue
        if _WEB_KEYS & set(it):
            return True
        for k in _OBS_KEYS:
            o = it.get(k)
            if isinstance(o, dict) and (_WEB_KEYS & set(o) or isinstance(o.get("info"), dict) and "page" in o["info"]):
                return True
        if isinstance(it.get("info"), dict) and "page" in it["info"]:
            return True
        a = it.get("action")
        if isinstance(a, str) and _WEB_ACTION.match(a):
            return True
        if isinstance(a, dict) and ("action_type" in a or "element_id" in a):
            return True
        if "action_type" in it:
            return True
    return bool({"intent", "start_url", "sites"} & set(obj))


def detect(sample: Sample) -> float:
    objs = sample_objects(sample)
    if not objs or not isinstance(objs[0], dict):
        return 0.0
    obj = objs[0]
    found = _items(obj)
    if not found:
        return 0.0
    # SWE-agent .traj: a trajectory with response/thought/observation items and a history/info block
    if "history" in obj or "info" in obj and isinstance(obj["info"], dict) and "model_stats" in obj["info"]:
        return 0.0
    if _web_evidence(obj, found[1]):
        return 0.9
    return 0.0


def _page(o: Any, where: tuple[str, int, str]) -> tuple[str, dict]:
    """(page text, metadata) for one observation value; ``where`` (list, index, field) locates it."""
    if o is None:
        return "", {}
    if isinstance(o, str):
        return o, {}
    if not isinstance(o, dict):
        raise BadRecord("{}[{}].{}".format(*where), f"expected an object or text, got {describe(o)}")
    meta: dict = {}
    # WebArena StateInfo: {"observation": {"text", "image"}, "info": {"page": {"url"}}}
    src = o.get("observation")
    if not isinstance(src, dict):
        src = o
    info = o.get("info")
    page = info.get("page") if isinstance(info, dict) else None
    url = o.get("url") or src.get("url") or (page.get("url") if isinstance(page, dict) else None)
    if url is not None:
        meta["url"] = url
    v = o.get("open_pages_urls")
    if isinstance(v, list):
        meta["open_pages_urls"] = v
    for k in _SHOT:
        v = src.get(k) if src is o else src.get(k, o.get(k))
        if v is not None and v != "":
            meta["screenshot"] = media_ref(v)
            break
    for k in _PAGE_TEXT:
        v = src.get(k)
        if isinstance(v, str):
            meta["page_field"] = k
            return v, meta
    rest = {
        k: v
        for k, v in src.items()
        if k not in _SHOT
        and k not in ("url", "last_action_error", "goal", "open_pages_urls")
        and isinstance(v, (str, int, float, bool))
    }
    return (dumps(rest) if rest else ""), meta


def _action(a: Any, where: tuple[str, int, str]) -> tuple[str, str]:
    if isinstance(a, str):
        m = _VERB.match(a)
        return (m.group(1) if m else a.strip()[:40]), a
    if isinstance(a, dict):
        at = a.get("action_type", a.get("type", a.get("name", "action")))
        small = {k: v for k, v in a.items() if not (isinstance(v, str) and len(v) > 20000)}
        if isinstance(a.get("raw_prediction"), str):
            small.pop("raw_prediction", None)
        return str(at), render_args(small)
    raise BadRecord("{}[{}]{}".format(*where), f"expected an action string or object, got {describe(a)}")


def one(rec: Any, origin: Origin) -> list:
    if not isinstance(rec, dict):
        raise BadRecord(None, "expected a trajectory object")
    found = _items(rec)
    if not found:
        raise BadRecord("trajectory", "missing (expected a trajectory or steps list)")
    key, items = found
    steps = []
    task = None
    for k in ("intent", "goal", "task", "instruction", "objective", "question"):
        if isinstance(rec.get(k), str):
            task = rec[k]
            break
    for i, it in enumerate(items):
        # a hot path (once per step): locations are put into words only when an error is raised
        if not isinstance(it, dict):
            if isinstance(it, str):
                steps.append(step("action", *_action(it, (key, i, "")), {"index": i}))
                continue
            raise BadRecord(f"{key}[{i}]", f"expected a step object, got {describe(it)}")
        base = {"index": i}  # only what is known: no null for step() to filter out of each of the item's steps
        for k in ("step", "timestamp", "reward"):
            v = it.get(k)
            if v is not None:
                base[k] = v
        obs, obs_key = None, "state"
        for k in _OBS_KEYS:
            if k in it:
                obs, obs_key = it[k], k
                break
        # WebArena's alternating list: a StateInfo item {observation, info} with no action
        is_state_only = "action" not in it and "action_type" not in it
        if is_state_only and (obs is None or "info" in it):
            obs = it
        if isinstance(obs, dict):
            err = obs.get("last_action_error") or it.get("last_action_error")
            if isinstance(obs.get("goal"), str) and task is None:
                task = obs["goal"]
        else:
            err = it.get("last_action_error")
        if err:
            steps.append(step("error", value_text(err), None, {"about": "previous action", **base}))
        if obs is not None:
            text, pmeta = _page(obs, (key, i, obs_key))
            if "url" in it and "url" not in pmeta:
                pmeta["url"] = it["url"]
            if "screenshot" not in pmeta:
                for k in _SHOT:
                    if it.get(k):
                        pmeta["screenshot"] = media_ref(it[k])
                        break
            steps.append(step("observation", text, None, {**pmeta, **base}))
        thought = None
        ai = it.get("agent_info")
        if not isinstance(ai, dict):
            ai = None
        for k in _THOUGHT:
            v = it[k] if k in it else None if ai is None else ai.get(k)
            if isinstance(v, str) and v:
                thought = v
                break
        act = it.get("action") if "action" in it else (it if "action_type" in it else None)
        if thought is None and isinstance(act, dict) and isinstance(act.get("raw_prediction"), str):
            thought = act["raw_prediction"]
        elif thought is None and isinstance(it.get("raw_prediction"), str):
            thought = it["raw_prediction"]
        if thought:
            steps.append(step("thought", thought, None, {**base}))
        if act is not None and act != "":
            name, ai_text = _action(act, (key, i, ".action"))
            url = it.get("url") if obs is not None else None
            steps.append(step("action", name, ai_text, dict(base) if url is None else {"url": url, **base}))
        after = it.get("result", it.get("next_obs", it.get("observation_after")))
        if after is not None:
            text, pmeta = _page(after, (key, i, "result"))
            steps.append(step("observation", text, None, {**pmeta, **base}))
        if obs is None and act is None and after is None and not thought:
            steps.append(step("other", dumps(it), None, {**base}))
    md = {}
    for k in (
        "task_id",
        "start_url",
        "sites",
        "eval",
        "reward",
        "success",
        "score",
        "env",
        "benchmark",
        "model",
        "agent",
    ):
        if k in rec:
            md[k] = rec[k]
    tid = rec.get("trace_id") or rec.get("task_id") or rec.get("episode_id") or rec.get("id")
    tid = str(tid) if tid not in (None, "") else default_id(origin)
    return [finish(origin, tid, task, steps, md, key)]



CONVERTER = Converter(
    name=NAME,
    description="Web-agent traces: WebArena trajectories, BrowserGym / AgentLab step logs",
    shapes='{"intent"|"goal", "trajectory"|"steps": [{action: "click [12]", state|obs: {axtree_txt, url, '
           'screenshot}, thought}]}',
    detect=detect,
    one=one,
)
