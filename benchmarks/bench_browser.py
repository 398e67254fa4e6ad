"""Open-to-interactive and submit times in headless Chromium, both layouts, against the facts sheet's naive
Repeater config (anchor: 15.3 s to interactive at 200 steps) and the transcript layout as it was before the
workbench ("before", tests/fixtures/transcript_before_workbench.xml), all built and measured in the same run.

    python benchmarks/bench_browser.py [--sizes 10,200,1000] [--repeats 3] [--data-dir DIR]

"Open" is from navigating to the task's URL (the whole Label Studio app boots: 1.3-2 s here whatever
the trace); "build" is from the task's data arriving to the same point, the part the config decides.
"Interactive" = the first step's control is visible and enabled (transcript: the step's "label whole
utterance" button; paged and naive: the first correctness radio). "Submit" = click on Submit until
Label Studio answers the annotation POST. Each is measured in two ways of opening a task: "quick" (the
task's own URL, ``?task=ID``, as the Data Manager opens it, with the annotation tabs) and "stream" (the
label stream, ``?labeling=1``, what "Label All Tasks" opens). Prints medians and the ratios ours / naive and
ours / anchor of the open time per mode and size.

``--real`` measures instead the time to the first usable step on the longest real traces in the fixtures (OpenHands,
149 steps; a Codex rollout, 465 kB), before issue 32's rendering (tests/fixtures/before_readable: the configs and task
fields as they were) and after it (the renderer now), both layouts, both ways of opening, interleaved in one run:
medians and the ratio after / before (the rendering may not make opening slower than 1.2x). The paged layout is also
opened as "rendering": today's config without issue 30's per-step caused-by and correction boxes, which landed in the
same round and cost the opening on their own.
"""
from __future__ import annotations

import argparse
import json
import lzma
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ls_trajeval import label_configs  # noqa: E402
from ls_trajeval.core import config as cfg  # noqa: E402
from ls_trajeval.core import trace  # noqa: E402
from ls_trajeval.core.fields import META_TRACE_ID  # noqa: E402
from ls_trajeval.core.labelconfig import generate  # noqa: E402
from ls_trajeval.core.layouts import PAGED_MAX_STEPS  # noqa: E402
from ls_trajeval.core.tasks import task_data  # noqa: E402
from ls_trajeval.flows.convert import convert_inputs  # noqa: E402
from ls_trajeval.flows.importer import import_traces  # noqa: E402
from ls_trajeval.studio import client as studio  # noqa: E402
from ls_trajeval.studio.localserver import LocalLabelStudio  # noqa: E402
from tests.browser.ui import Annotator  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

NAIVE = """<View>
  <Text name="task" value="$task"/>
  <Repeater on="$trace" indexFlag="{{idx}}" mode="pagination">
    <Text name="step_{{idx}}" value="$trace[{{idx}}].content"/>
    <Choices name="correctness_{{idx}}" toName="step_{{idx}}" choice="single-radio" showInline="true">
      <Choice value="correct" selected="true"/><Choice value="incorrect"/>
    </Choices>
    <Taxonomy name="error_type_{{idx}}" toName="step_{{idx}}">
%s
    </Taxonomy>
    <Choices name="severity_{{idx}}" toName="step_{{idx}}" choice="single-radio" showInline="true">
      <Choice value="minor"/><Choice value="major"/><Choice value="critical"/>
    </Choices>
    <TextArea name="rationale_{{idx}}" toName="step_{{idx}}" rows="2"/>
  </Repeater>
</View>"""


def naive_config(c: cfg.Config) -> str:
    cats = "\n".join(
        f'      <Choice value="{x.category}">' + "".join(f'<Choice value="{t.name}"/>' for t in x.types) + "</Choice>"
        for x in c.trajectory.categories)
    return NAIVE % cats


def synthetic(n: int, k: int) -> dict:
    kinds = ("thought", "action", "observation")
    steps = []
    for i in range(n):
        kind = kinds[i % 3]
        step = {"type": kind, "content": f"step {i}: " + "the agent looks at pricing.py and the failing test. " * 4}
        if kind == "action":
            step = {"type": "action", "content": "run_shell", "action_input": {"cmd": f"pytest -q tests/test_{i}.py"}}
        steps.append(step)
    return {"trace_id": f"bench-{n}-{k}", "task": f"Benchmark trace with {n} steps", "trace": steps}


READY = {"transcript": "[data-testid='phrase:0'] button", "before": "[data-testid='phrase:0'] button",
         "paged": ".te-step ~ * label.ant-radio-wrapper, .lsf-main-view label.ant-radio-wrapper",
         "naive": ".lsf-main-view label.ant-radio-wrapper"}
#: the transcript layout's config before the workbench, the comparison for the workbench's open times
BEFORE = ROOT / "tests" / "fixtures" / "transcript_before_workbench.xml"


def measure(a: Annotator, layout: str, pid: int, tid: int, timeout_s: float, stream: bool = False,
            next_tid: int | None = None, on_ready=None) -> tuple[float, float, float, float]:
    """One task: open (quick view, or the label stream when ``stream``), mark the outcome, submit.

    In the stream, Label Studio then loads the queue's next task in the page: "next" is the time from the
    saved annotation until that task (``next_tid``) is built and its first step control is on the page,
    what an annotator working down the queue waits for. It is awaited in any case, so that the next
    measurement never starts while the page is still busy with it."""
    page = a.page
    page.set_default_timeout(timeout_s * 1000)
    got = []
    task_url = r"/api/dm/actions\?id=next_task" if stream else rf"/api/tasks/{tid}(\?|$)"
    hook = lambda r: got.append(time.monotonic()) if re.search(task_url, r.url) else None  # noqa: E731
    page.on("requestfinished", hook)
    t0 = time.monotonic()
    t_open = a.open(pid, None if stream else tid, ready=READY[layout])
    if on_ready is not None:
        on_ready()
    page.remove_listener("requestfinished", hook)
    t_build = t0 + t_open - got[-1] if got else float("nan")
    if layout != "naive":
        a.choose("I reviewed every step")
        a.choose("failure")
    old = page.evaluate_handle("s => document.querySelector(s)", READY[layout])
    t0 = time.monotonic()
    saved = a.submit()
    t_submit = time.monotonic() - t0
    if saved.get("task") != tid:  # the stream serves the queue's next task, which must be the one timed
        raise RuntimeError(f"Label Studio saved an annotation of task {saved.get('task')}, expected {tid}")
    t_next = float("nan")
    if stream and next_tid is not None:
        t0 = time.monotonic()
        # (the editor's store is window.Htx; a control of the new task is a new element)
        page.wait_for_function("([id, sel, old]) => { const e = document.querySelector(sel); return window.Htx"
                               " && window.Htx.task && window.Htx.task.id === id && !!e && e !== old; }",
                               arg=[next_tid, READY[layout], old], polling=50)
        t_next = time.monotonic() - t0
    page.wait_for_load_state("networkidle")
    return t_open, t_build, t_submit, t_next


FIXTURES = ROOT / "tests" / "fixtures"
#: the longest real traces in the fixtures: by steps (OpenHands) and by size (a Codex rollout)
LONGEST = {
    "ponylang__ponyc-4588": FIXTURES / "converters" / "openhands" / "multi_swe_bench_output.jsonl",
    "019e1695-0522-7c83-8b39-0dd379793f80": FIXTURES / "converters" / "openai_responses"
    / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
}
BEFORE_READABLE = FIXTURES / "before_readable"


def real_tasks(c: cfg.Config, version: str, layout: str, copies: int) -> dict[str, list[dict]]:
    """``copies`` tasks of each longest real trace (distinct ids, so the label stream serves each once), with the
    task fields as built ``before`` issue 32 (frozen) or ``after`` it (now)."""
    frozen = json.loads(lzma.open(BEFORE_READABLE / "fields.json.xz", "rt", encoding="utf-8").read())
    traces = {t.trace_id: t for t in convert_inputs(sorted(set(LONGEST.values())), "auto", jobs=1)
              if isinstance(t, trace.Trace) and t.trace_id in LONGEST}
    out = {}
    for tid, t in traces.items():
        if version == "after":
            data = task_data(t, c, layout)
        else:
            data = {**t.to_json(c.id_key, c.text_key, c.trace_key), **frozen[tid]}
            if layout == "transcript":
                data.pop("te_pages")
        out[tid] = [{"data": {**data, c.id_key: f"{tid}#{k}"}, "meta": {META_TRACE_ID: f"{tid}#{k}"}}
                    for k in range(copies)]
    return out


def without_mark_boxes(xml: str) -> str:
    """The paged config without issue 30's per-step caused-by and correction boxes: issue 32's rendering alone (each
    TextArea in the Repeater is a control per step that Label Studio builds at opening)."""
    out = re.sub(r'\s*<View className="te-caused-by">.*?</View>\s*<View className="te-correction">.*?</View>', "",
                 xml, flags=re.S)
    if out == xml:
        raise SystemExit("bench_browser: the paged config's caused-by and correction boxes were not found")
    return out


def bench_real(a: Annotator, client, c: cfg.Config, modes: list[str], layouts: list[str], repeats: int,
               timeout_s: float) -> None:
    """Before / after issue 32 on the longest real traces: time to the first usable step, interleaved; and the
    page's main-thread CPU time until then (Chrome's ``ThreadTime``), which a loaded machine inflates far less.
    Medians and minima: on a loaded machine a single run is inflated by up to 1.5x, never deflated, so the minimum
    of several is the steadier estimate of what the page itself costs."""
    cdp = a.page.context.new_cdp_session(a.page)
    cdp.send("Performance.enable")

    def cpu() -> float:
        return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "ThreadTime")

    results: dict[tuple, list[tuple[float, float]]] = {}
    for mode in modes:
        for layout in layouts:
            made, built = {}, {}
            versions = ("before", "after", "rendering") if layout == "paged" else ("before", "after")
            for version in versions:
                xml = (BEFORE_READABLE / f"{layout}.xml").read_text(encoding="utf-8") if version == "before" \
                    else generate(c, layout)
                if version == "rendering":
                    xml = without_mark_boxes(xml)
                pid = studio.create_project(client, c, layout, f"bench real {version} {layout} {mode}")["id"]
                studio.set_label_config(client, pid, xml)
                fields = "before" if version == "before" else "after"  # "rendering" opens the same tasks as "after"
                if fields not in built:
                    built[fields] = real_tasks(c, fields, layout, repeats)
                copies = built[fields]
                # in the stream the queue is served in id order: one trace after the other, each ``repeats`` times
                for tasks in copies.values():
                    studio.import_batch(client, pid, tasks)
                ids = studio.task_ids_by_trace(client, pid)
                made[version] = (pid, [(tid, ids[t["meta"][META_TRACE_ID]]) for tid, ts in copies.items() for t in ts])
            for k in range(len(made["after"][1])):
                for version in versions:
                    pid, order = made[version]
                    tid, task_id = order[k]
                    following = order[k + 1][1] if k + 1 < len(order) else None
                    a.page.goto("about:blank")  # the CPU count starts with the navigation to the task
                    spent = [cpu()]
                    try:
                        r = measure(a, layout, pid, task_id, timeout_s, stream=mode == "stream", next_tid=following,
                                    on_ready=lambda spent=spent: spent.append(cpu()))
                        used = spent[1] - spent[0]
                    except Exception as exc:  # noqa: BLE001 - a timeout is a result here
                        why = str(exc).splitlines()[0][:100]
                        print(f"{version} {layout} {tid}: failed ({type(exc).__name__}: {why})")
                        r, used = (float("nan"),) * 4, float("nan")
                    results.setdefault((mode, layout, tid, version), []).append((r[0], used))
                    print(f"{mode:6} {layout:10} {version:6} {tid[:24]:24} open {r[0]:6.2f} s, cpu {used:5.2f} s",
                          flush=True)
    print("\ntime to the first usable step and the page's CPU time until then (s), medians; after / before (issue 32's"
          " rendering; at most 1.2), of the medians and of the minima")
    for (mode, layout, tid, version), vals in sorted(results.items()):
        if version == "before":
            continue
        row = []
        for i, what in enumerate(("open", "cpu")):
            before = [v[i] for v in results[(mode, layout, tid, "before")] if v[i] == v[i]]
            after = [v[i] for v in vals if v[i] == v[i]]
            if before and after:
                b, x = statistics.median(before), statistics.median(after)
                low = min(after) / min(before)
                row.append(f"{what} before {b:6.2f} after {x:6.2f} ratio {x / b:5.2f} (minima {low:5.2f})")
        shown = layout if version == "after" else f"{layout}-{version}"
        print(f"{mode:6} {shown:10} {tid[:36]:36} " + " | ".join(row) + f"  (n={len(vals)})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,200,1000")
    ap.add_argument("--repeats", type=int, default=3, help="runs per size (1000-step traces: one run)")
    ap.add_argument("--data-dir", help="an initialised Label Studio data dir to copy (default: init a fresh one)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--layouts", default="transcript,before,paged,naive",
                    help="before: the transcript layout's config before the workbench")
    ap.add_argument("--naive-max", type=int, default=200,
                    help="largest trace for the naive Repeater (at 1000 steps it takes minutes to open)")
    ap.add_argument("--real", action="store_true",
                    help="before / after issue 32's rendering on the longest real traces (not the synthetic sizes)")
    ap.add_argument("--modes", default="quick,stream",
                    help="quick: the task's own URL (?task=ID, with the annotation tabs); stream: the label stream"
                         " (?labeling=1, what 'Label All Tasks' opens)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    data_dir = tmp / "ls"
    if args.data_dir:
        shutil.copytree(args.data_dir, data_dir)
    from playwright.sync_api import sync_playwright

    c = cfg.load(label_configs.path("trajectory_eval"))
    results: dict[tuple[str, str, int], list[tuple[float, float, float, float]]] = {}
    modes = args.modes.split(",")
    with LocalLabelStudio(data_dir, log=print) as server, sync_playwright() as p:
        client = studio.connect(server.url, server.credentials.token)
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        a = Annotator(browser.new_context(viewport={"width": 1400, "height": 1000}).new_page(), server.url)
        a.login(server.credentials.email, server.credentials.password)
        if args.real:
            layouts = [x for x in args.layouts.split(",") if x in ("transcript", "paged")] or ["transcript", "paged"]
            bench_real(a, client, c, modes, layouts, args.repeats, args.timeout)
            browser.close()
            shutil.rmtree(tmp, ignore_errors=True)
            return 0
        for layout, mode in [(x, m) for m in modes for x in args.layouts.split(",")]:
            # one project per layout and mode: the stream serves a project's unlabeled tasks in order
            if layout in ("naive", "before"):
                xml = naive_config(c) if layout == "naive" else BEFORE.read_text(encoding="utf-8")
                project = studio.create_project_from_xml(client, f"bench {layout} {mode}", xml)
            else:
                project = studio.create_project(client, c, layout, f"bench {layout} {mode}")
            pid = project["id"]
            for n in sizes:
                if layout == "naive" and n > args.naive_max:
                    continue
                runs = 1 if n >= 1000 else args.repeats
                traces = [synthetic(n, k) for k in range(runs)]
                if layout == "naive":
                    studio.import_batch(client, pid, [{"data": task_data(trace.parse_trace(t), c)} for t in traces])
                else:
                    import_traces(client, pid, [trace.parse_trace(t) for t in traces], c, progress=False)
                ids = {t["data"]["trace_id"]: t["id"] for t in studio.iter_tasks(client, pid)}
                for k, t in enumerate(traces):
                    following = ids[traces[k + 1]["trace_id"]] if k + 1 < len(traces) else None
                    try:
                        r = measure(a, layout, pid, ids[t["trace_id"]], args.timeout, stream=mode == "stream",
                                    next_tid=following)
                    except Exception as exc:  # noqa: BLE001 - a timeout is a result here
                        print(f"{layout} {n}: failed ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})")
                        r = (float("nan"),) * 4
                    results.setdefault((mode, layout, n), []).append(r)
                    print(f"{mode:6} {layout:10} {n:5} steps: open {r[0]:6.2f} s, build {r[1]:6.2f} s,"
                          f" submit {r[2]:6.2f} s, next {r[3]:6.2f} s", flush=True)
        browser.close()
    shutil.rmtree(tmp, ignore_errors=True)

    def med(mode, layout, n, i):
        vals = [r[i] for r in results.get((mode, layout, n), []) if r[i] == r[i]]
        return statistics.median(vals) if vals else float("nan")

    anchor = 15.3
    layouts = ("transcript", "before", "paged", "naive")
    print("\nmedians (s): open / build / submit / next (stream only). Ratios (below 1: sooner), same mode and run, of"
          " the open and (stream) next times: the workbench / the transcript before it, ours / naive Repeater; and of"
          f" the open time to the facts sheet's anchor (naive, {anchor} s at 200 steps)")
    print(f"{'mode':>6} {'steps':>5} | " + " | ".join(f"{x:>27}" for x in layouts) +
          " | open t/before next t/before | open t/naive p/naive  next t/naive p/naive  open t/anchor p/anchor")
    for mode in modes:
        for n in sizes:
            cells = {x: tuple(med(mode, x, n, i) for i in range(4)) for x in layouts}
            if not any(v == v for cell in cells.values() for v in cell):
                continue
            row = " | ".join(" ".join(f"{v:6.2f}" for v in cell) for cell in cells.values())
            t, b, p_, nv = cells["transcript"], cells["before"], cells["paged"], cells["naive"]
            print(f"{mode:>6} {n:5} | {row} | {t[0] / b[0]:13.2f} {t[3] / b[3]:13.2f} | {t[0] / nv[0]:13.2f}"
                  f" {p_[0] / nv[0]:7.2f} {t[3] / nv[3]:13.2f} {p_[3] / nv[3]:7.2f} {t[0] / anchor:13.2f}"
                  f" {p_[0] / anchor:8.2f}")
    print(f"\npaged layout limit in use: core.layouts.PAGED_MAX_STEPS = {PAGED_MAX_STEPS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
