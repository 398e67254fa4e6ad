"""Every click on a long trace: the time from an annotator's action to its effect, in headless Chromium, in the
workbench (layout ``transcript``), the ``paged`` layout and Label Studio's plainest config showing the same trace
(one Paragraphs, one ParagraphLabels), all in one run against one Label Studio, with the ML backend connected to
our two configs as ``ls-trajeval ml connect`` connects it (issue 31; anchor: the plain config at 200 steps, about
400 ms p95).

    python benchmarks/bench_clicks.py [--sizes 200,1000] [--actions 30] [--configs workbench,paged,plain]

A config ``NAME-wN`` (``workbench-w100``, ``workbench-w50``, ``paged-w100``) is that config with the trace imported
in windows of at most N steps (``import --window N``): the actions are spread over three of its window tasks, the
first, a middle and the last (the last has the most steps before it in its header), each opened in turn. A config
ending ``-nowait`` (``workbench-w100-nowait``) is served by a second backend started with
``LS_TRAJEVAL_ML_WEBHOOK_WAIT=0``: what a save costs without the backend's wait for its score write-back.

Each action is timed in the page: ``performance.now()`` in a capturing click listener, to the effect seen by a
MutationObserver and then one ``requestAnimationFrame`` (the frame that draws it); a save to Label Studio's answer
to the annotation POST/PATCH (its resource timing's ``responseEnd``). The actions, each on a distinct step spread
over the trace (scrolled or paged to first, outside the timed span):

- mark: workbench and plain, the step's "label whole utterance" button until its ``.htx-highlight`` is drawn;
  paged, the step's "incorrect" radio until it is drawn checked;
- severity: a severity click on the selected mark until the live score's text changes (workbench only: the paged
  layout has no live score, Label Studio calls no backend while a Repeater is paged; the plain config has no
  severity);
- type: an error-type click until the control shows it (the workbench's radio drawn checked; the paged Taxonomy's
  box showing the leaf, timed from the click on the leaf in its opened, filtered tree); none in the plain config;
- save: Submit (then Update) until Label Studio answers the save request.

Prints p50 / p95 (ms) per config, size and action, and each one's ratio to the plain config's at the smallest size.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_browser import synthetic  # noqa: E402
from bench_ml import start_backend, stop_backend  # noqa: E402

from ls_trajeval import label_configs  # noqa: E402
from ls_trajeval.core import config as cfg  # noqa: E402
from ls_trajeval.core import trace  # noqa: E402
from ls_trajeval.core.tasks import task_data  # noqa: E402
from ls_trajeval.core.windows import Window, window_of  # noqa: E402
from ls_trajeval.flows.importer import import_traces  # noqa: E402
from ls_trajeval.ml.connect import connect_backend  # noqa: E402
from ls_trajeval.studio import client as studio  # noqa: E402
from ls_trajeval.studio.localserver import LocalLabelStudio  # noqa: E402
from tests.browser.ui import LIVE_SCORE, Annotator  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

#: the plainest config showing the trace: its steps as the workbench's Paragraphs shows them, one marking label
PLAIN = """<View>
  <ParagraphLabels name="label" toName="trace">
    <Label value="incorrect" background="#D32F2F"/>
  </ParagraphLabels>
  <Paragraphs name="trace" value="$te_transcript" layout="dialogue" nameKey="author" textKey="text"/>
</View>"""

CONFIGS = ("workbench", "paged", "plain", "workbench-w100", "workbench-w50", "paged-w100", "workbench-w100-nowait")
ACTIONS = ("mark", "severity", "type", "save")
LAYOUT = {"workbench": "transcript", "paged": "paged"}
SAVE_URL = r"/api/(tasks/\d+/annotations|annotations/\d+)(\?|$)"
SEVERITIES = ("Minor", "Major", "Critical")

#: Arms the in-page timer for the next click: ``kind`` says what its effect is. "appears": ``sel`` matches in the
#: document; "checked": the radio ``sel`` matches is drawn checked (its class, not the native input, which flips
#: before the control redraws; found anew each time, as a redraw may replace it); "changes": ``sel``'s text differs
#: from what it is now; "shows": an element matching ``sel`` inside ``root`` contains ``text``; "saved": a request
#: to a URL matching ``sel`` was answered. ``window.__teClick`` then resolves to the milliseconds from the click to
#: the effect's frame (for "saved", to the answer's last byte).
ARM = """([kind, sel, text, root, timeoutMs]) => {
  const scope = root || document;
  const find = () => scope.querySelector(sel);
  const before = kind === 'changes' ? (find() ? find().innerText : null) : null;
  const drawnChecked = e => e.matches('[class*="-checked"]') || !!e.querySelector('[class*="-checked"]');
  const met = {
    appears: () => !!find(),
    checked: () => { const e = find(); return !!e && drawnChecked(e); },
    changes: () => { const e = find(); return !!e && e.innerText !== before; },
    shows: () => [...scope.querySelectorAll(sel)].some(e => e.textContent.includes(text)),
    saved: () => false,
  }[kind];
  if (met()) return 'the effect is there before the click';
  window.__teClick = new Promise((resolve, reject) => {
    let t0 = null, seen = false;
    const stop = () => { mo.disconnect(); po.disconnect(); clearTimeout(timer); };
    const check = () => {
      if (t0 === null || seen || !met()) return;
      seen = true;
      requestAnimationFrame(() => { stop(); resolve(performance.now() - t0); });
    };
    const mo = new MutationObserver(check);
    const po = new PerformanceObserver(list => {
      if (t0 === null || seen) return;
      for (const e of list.getEntries())
        if (new RegExp(sel).test(e.name) && e.startTime >= t0) {
          seen = true; stop(); resolve(e.responseEnd - t0); return;
        }
    });
    window.addEventListener('click', () => { t0 = performance.now(); check(); }, {capture: true, once: true});
    if (kind === 'saved') po.observe({type: 'resource'});
    else mo.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
    const timer = setTimeout(() => { stop(); reject(new Error('no effect ' + timeoutMs + ' ms after the click')); },
                             timeoutMs);
  });
  return '';
}"""


def timed(a: Annotator, target, kind: str, sel: str = "", text: str = "", root=None, timeout_s: float = 120) -> float:
    """Milliseconds from the click on ``target`` to its effect (see :data:`ARM`), measured in the page."""
    target.scroll_into_view_if_needed()
    handle = root.element_handle() if root is not None else None
    wrong = a.page.evaluate(ARM, [kind, sel, text, handle, int(timeout_s * 1000)])
    if wrong:
        raise RuntimeError(f"{kind} {sel or text}: {wrong}")
    target.click()
    try:
        return float(a.page.evaluate("() => window.__teClick"))
    except Exception as exc:
        raise RuntimeError(f"{kind} {sel or text}: {str(exc).splitlines()[0]}") from None


def radio(name: str, within: str) -> str:
    """The selector of the radio named ``name`` (Label Studio names a choice's input by its value) in ``within``."""
    return f"{within} label.ant-radio-wrapper:has(input[name={json.dumps(name)}])"


def spread(n_steps: int, k: int) -> list[int]:
    """``k`` distinct steps spread evenly over a trace of ``n_steps``."""
    return sorted({min(n_steps - 1, int((i + 0.5) * n_steps / k)) for i in range(k)})


def settle(a: Annotator) -> None:
    """The editor done with what the last action started (a save reloads the annotation)."""
    a.page.wait_for_function("() => window.Htx && Htx.initialized && !Htx.isLoading && !!Htx.annotationStore.selected"
                             " && !Htx.annotationStore.selected.isSubmitting")


def severity_to_change(a: Annotator, number: int, i: int) -> str:
    """A severity other than the one the live score shows for step ``#number``'s mark (a new mark takes on the
    previously selected one's), so that the click changes the score."""
    shown = re.search(rf"#{number} · [^\n]*\((\w+)\)", a.live_score())
    now = shown.group(1) if shown else None
    choices = [s for s in SEVERITIES[i % 3:] + SEVERITIES[:i % 3] if s != now]
    return choices[0]


def measure(a: Annotator, kind: str, pid: int, task_id: int, n_steps: int, actions: int, leaves: Sequence[str],
            log: Callable[[str], None] = print, timeout_s: float = 120, start: int = 0) -> dict[str, list[float]]:
    """Open the task and time ``actions`` of each kind on distinct steps spread over its ``n_steps`` steps; returns
    the milliseconds per action (an action the config does not have: no entry). The workbench's project must have
    the ML backend connected (:func:`project_for`): its severity click is timed against the live score, which
    numbers a window task's steps as in the whole trace (``start``: the window's first step there)."""
    a.page.set_default_timeout(timeout_s * 1000)
    a.open(pid, task_id, ready=".lsf-main-view label.ant-radio-wrapper" if kind == "paged"
           else "[data-testid='phrase:0'] button")
    out: dict[str, list[float]] = {}

    def clicked(target, effect: str, sel: str = "", text: str = "", root=None) -> float:
        return timed(a, target, effect, sel, text, root, timeout_s)

    for i, step in enumerate(spread(n_steps, actions)):
        got: dict[str, float] = {}
        if kind == "paged":
            a.jump_to(step, start)
            got["mark"] = clicked(a.correctness("incorrect"), "checked", radio("incorrect", ".lsf-main-view"))
            a.choose_severity(SEVERITIES[i % 3])  # required of an incorrect step; no live score to time it against
            details = a.details
            got["type"] = clicked(a.type_option(leaves[i % len(leaves)]), "shows", ".ant-select-selection-item",
                                leaves[i % len(leaves)], root=details)
            a.page.keyboard.press("Escape")
        else:
            a.phrase(step).scroll_into_view_if_needed()
            a.arm_label(step)
            got["mark"] = clicked(a.mark_button(step), "appears", f"[data-testid='phrase:{step}'] .htx-highlight")
            if kind == "workbench":
                a.select_region(step)
                # the live score first shows the new mark (the backend's answer to it), then the severity is timed
                a.live_score_shows(f"#{start + step + 1} ·")
                got["severity"] = clicked(a.severity(severity_to_change(a, start + step + 1, i)), "changes", LIVE_SCORE)
                leaf = leaves[i % len(leaves)]
                got["type"] = clicked(a.type_option(leaf), "checked", radio(leaf, ".te-step-details .te-types"))
        first = i == 0
        if first and kind != "plain":
            a.choose("I reviewed every step")
            a.choose("failure")
        got["save"] = clicked(a.submit_button("Submit" if first else "Update"), "saved", SAVE_URL)
        settle(a)
        for what, ms in got.items():
            out.setdefault(what, []).append(ms)
        log(f"{kind:9} {n_steps:5} step {start + step:4}: " + ", ".join(f"{k} {v:7.1f}" for k, v in got.items()))
    return out


def p50_p95(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    if len(values) == 1:
        return values[0], values[0]
    q = statistics.quantiles(values, n=20, method="inclusive")
    return statistics.median(values), q[18]


def table(results: dict[tuple[str, int], dict[str, list[float]]], sizes: Sequence[int], notes: dict[str, str]) -> str:
    """One row per config and size: p50 / p95 (ms) of each action and its ratio to the plain config's at the
    smallest size (the anchor: the mark's, since the plain config has no severity or type)."""
    anchor_size = min(sizes)
    plain = results.get(("plain", anchor_size), {})
    anchor = {k: p50_p95(v) for k, v in plain.items()}
    mark_anchor = anchor.get("mark", (math.nan, math.nan))
    head = "| config | steps | n | " + " | ".join(f"{x} p50 / p95 ms" for x in ACTIONS) + " | " + \
        " | ".join(f"{x} p95 / plain {anchor_size} mark p95" for x in ACTIONS) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(ACTIONS))]
    for (kind, n), got in results.items():
        cells, ratios = [], []
        for what in ACTIONS:
            vals = got.get(what)
            if not vals:
                cells.append("–")
                ratios.append("–")
                continue
            p50, p95 = p50_p95(vals)
            cells.append(f"{p50:,.0f} / {p95:,.0f}")
            ratios.append(f"{p95 / mark_anchor[1]:.2f}" if mark_anchor[1] == mark_anchor[1] else "–")
        count = max((len(v) for v in got.values()), default=0)
        lines.append(f"| {kind} | {n:,} | {count} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    lines += [f"\n{k}: {v}" for k, v in notes.items()]
    return "\n".join(lines)


@dataclass(frozen=True)
class Setup:
    """A config of the benchmark by name: ``kind`` (workbench, paged or plain), then ``-wN`` for a trace imported in
    windows of at most N steps, ``-nowait`` for the backend that answers Label Studio's webhook at once."""

    name: str
    kind: str
    window: int = 0
    nowait: bool = False

    @classmethod
    def parse(cls, name: str) -> Setup:
        m = re.fullmatch(r"(workbench|paged|plain)(?:-w([1-9]\d*))?(-nowait)?", name)
        if m is None or (m.group(1) == "plain" and (m.group(2) or m.group(3))):
            raise ValueError(f"unknown config {name!r}: workbench, paged or plain, then -wN (not plain), -nowait")
        return cls(name, m.group(1), int(m.group(2) or 0), bool(m.group(3)))


def project_for(client, c: cfg.Config, kind: str, n: int, backend_url: str | None,
                window: int = 0) -> tuple[int, list[tuple[int, Window | None]]]:
    """A project of ``kind`` holding one synthetic trace of ``n`` steps (imported in windows of at most ``window``
    steps if given): its id and the tasks the actions are done on, each with its window (None: the whole trace);
    of a trace in windows, the first, a middle and the last window's."""
    t = trace.parse_trace(synthetic(n, 0))
    if kind == "plain":
        pid = studio.create_project_from_xml(client, f"clicks plain {n}", PLAIN)["id"]
        studio.import_batch(client, pid, [{"data": task_data(t, c)}])
    else:
        title = f"clicks {kind} {n}" + (f" window {window}" if window else "")
        pid = studio.create_project(client, c, LAYOUT[kind], title)["id"]
        import_traces(client, pid, [t], c, progress=False, window=window)
        if backend_url:
            connect_backend(client, pid, backend_url)
    tasks = sorted(((task["id"], window_of(task["data"])) for task in studio.iter_tasks(client, pid)),
                   key=lambda tw: tw[1].index if tw[1] else 0)
    if len(tasks) <= 3:
        return pid, tasks
    return pid, [tasks[0], tasks[len(tasks) // 2], tasks[-1]]


def shares(total: int, parts: int) -> list[int]:
    """``total`` actions shared out over ``parts`` tasks as evenly as can be."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def leaves_of(c: cfg.Config) -> list[str]:
    return [t.label for t in c.trajectory.types]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--actions", type=int, default=30, help="actions of each kind per config and size")
    ap.add_argument("--actions-at-1000", type=int, help="fewer actions on traces of 1000 steps and more")
    ap.add_argument("--configs", default="workbench,paged,plain", help=f"of {', '.join(CONFIGS)}")
    ap.add_argument("--data-dir", help="an initialised Label Studio data dir to copy (default: init a fresh one)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds an action may take before it is a failure")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    try:
        setups = [Setup.parse(k) for k in args.configs.split(",") if k]
    except ValueError as exc:
        ap.error(str(exc))
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-clicks-"))
    data_dir = tmp / "ls"
    if args.data_dir:
        shutil.copytree(args.data_dir, data_dir)
    c = cfg.load(label_configs.path("trajectory_eval"))
    results: dict[tuple[str, int], dict[str, list[float]]] = {}
    notes = {"severity": "workbench only: the paged layout has no live score (Label Studio calls no backend while a"
                         " Repeater is paged) and the plain config no severity",
             "type": "the plain config has no error type"}
    backends: dict[bool, tuple] = {}  # by nowait
    try:
        with LocalLabelStudio(data_dir, log=print) as server, sync_playwright() as p:
            client = studio.connect(server.url, server.credentials.token)
            for nowait in sorted({s.nowait for s in setups if s.kind != "plain"}):
                backends[nowait] = start_backend(1, 4, sys.executable, "--no-learning", "--url", server.url,
                                                 "--api-key", server.credentials.token,
                                                 env_extra={"LS_TRAJEVAL_ML_WEBHOOK_WAIT": "0"} if nowait else None)
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            a = Annotator(browser.new_context(viewport={"width": 1400, "height": 1000}).new_page(), server.url)
            a.login(server.credentials.email, server.credentials.password)
            for n in sizes:
                k = args.actions_at_1000 if args.actions_at_1000 and n >= 1000 else args.actions
                for setup in setups:
                    kind = setup.kind
                    backend = backends.get(setup.nowait)
                    pid, tasks = project_for(client, c, kind, n, backend[1] if backend else None, setup.window)
                    got: dict[str, list[float]] = {}
                    try:
                        for (task_id, window), share in zip(tasks, shares(k, len(tasks))):
                            for what, ms in measure(a, kind, pid, task_id, window.size if window else n, share,
                                                    leaves_of(c), log=lambda line, name=setup.name: print(
                                                        f"{name:21} {line}", flush=True), timeout_s=args.timeout,
                                                    start=window.start if window else 0).items():
                                got.setdefault(what, []).extend(ms)
                        results[(setup.name, n)] = got
                    except Exception as exc:  # noqa: BLE001 - a config that fails is a result; the others still run
                        notes[f"{setup.name} {n}"] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                        print(notes[f"{setup.name} {n}"], flush=True)
                        a.screenshot(tmp.parent / f"bench-clicks-{setup.name}-{n}.png")
                        (tmp.parent / f"bench-clicks-{setup.name}-{n}.html").write_text(a.page.content())
            browser.close()
    finally:
        for proc, _, log in backends.values():
            stop_backend(proc, log)
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n" + table(results, sizes, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
