"""Hostile inputs and the contract every entry point must keep on them.

One generator of inputs serves three drivers: hypothesis (the CI tests), atheris (coverage-guided) and a plain
seeded random loop (``benchmarks/fuzz_all.py``). It draws its choices from a ``Chooser``, so each driver only
supplies the randomness. Inputs start from real seed files (the converter fixtures, the shipped configs,
UI-shaped annotation results) and are mutated structurally (a node replaced by NaN, Infinity, a huge number,
a lone surrogate, a wrong type, a deep nest; keys duplicated or dropped) or byte-wise (invalid UTF-8,
truncation, random bytes); rarely the giants: a 10 MB step, 10^5 steps in one trace, nesting 10^5 deep.

The contract, per entry point (``check_*``): no exception escapes except the documented clean error, and every
rejection is located (names its file, and its line or key path where there is one).
"""
from __future__ import annotations

import io
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "converters"
REAL = ROOT / "tests" / "fixtures" / "real"

# ---------------------------------------------------------------- choosers


class Chooser:
    """Where the generator's choices come from."""

    def int(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def bytes(self, n: int) -> bytes:
        return bytes(self.int(0, 255) for _ in range(n))

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, one_in: int) -> bool:
        return self.int(0, one_in - 1) == 0


class RandomChooser(Chooser):
    def __init__(self, rng):
        self.rng = rng

    def int(self, lo, hi):
        return self.rng.randint(lo, hi)

    def bytes(self, n):
        return self.rng.randbytes(n)


class DrawChooser(Chooser):
    """hypothesis: ``data.draw`` of integers, so that failures shrink."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))

    def bytes(self, n):
        return self.data.draw(self.st.binary(min_size=n, max_size=n))


class FdpChooser(Chooser):
    """atheris: its FuzzedDataProvider, so that coverage guides the choices."""

    def __init__(self, fdp):
        self.fdp = fdp

    def int(self, lo, hi):
        return self.fdp.ConsumeIntInRange(lo, hi)

    def bytes(self, n):
        return self.fdp.ConsumeBytes(n)


# ---------------------------------------------------------------- hostile values

HUGE_STEP = 10 * 1024 * 1024


def _text(ch: Chooser) -> str:
    return ch.pick([
        "", " ", "x", "\u0000", "\ud800", "a\udfffb", "\ufeff", "\u202e", "😀", "<script>alert(1)</script>",
        "]]>", "{{idx}}", "$task", "%s", "\\", '"', "\n\r\t", "NaN", "Infinity", "-0", "1e999", "null",
        "trace_id", "type", "content", "role", "messages", "steps", "user", "assistant", "tool", "error",
        "thought", "action", "observation", "function", "arguments", "name", "id", "parentUuid",
        "x" * ch.int(100, 5000),
    ])


def scalar(ch: Chooser) -> Any:
    k = ch.int(0, 11)
    if k == 0:
        return ch.pick([math.nan, math.inf, -math.inf])
    if k == 1:
        return ch.pick([10 ** 400, -(10 ** 400), 2 ** 63, -(2 ** 63) - 1, 0, -1, 1])
    if k == 2:
        return ch.pick([1e308, -1e-308, 0.5, -0.0])
    if k == 3:
        return ch.pick([True, False, None])
    if k in (4, 5, 6):
        return _text(ch)
    if k == 7:
        return []
    if k == 8:
        return {}
    if k == 9:
        return [scalar(ch)]
    if k == 10:
        return {_text(ch)[:20]: scalar(ch)}
    return ch.int(-5, 300)


def deep(ch: Chooser, depth: int) -> Any:
    value: Any = scalar(ch) if depth < 1000 else 0
    for _ in range(depth):
        value = [value] if ch.chance(2) else {"a": value}
    return value


def mutate(value: Any, ch: Chooser, budget: int = 3) -> Any:
    """``value`` with up to ``budget`` nodes replaced, removed, duplicated or re-typed."""
    for _ in range(ch.int(1, budget)):
        value = _mutate_once(value, ch, 0)
    return value


def _mutate_once(value: Any, ch: Chooser, depth: int) -> Any:
    children = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) \
        if isinstance(value, list) else []
    if children and depth < 60 and not ch.chance(4):
        key, child = children[ch.int(0, len(children) - 1)]
        new = _mutate_once(child, ch, depth + 1)
        if isinstance(value, dict):
            op = ch.int(0, 9)
            out = dict(value)
            if op == 0:
                del out[key]
            elif op == 1:
                out[_text(ch)[:30]] = new
            else:
                out[key] = new
            return out
        out = list(value)
        op = ch.int(0, 9)
        if op == 0:
            del out[key]
        elif op == 1:
            out.insert(key, new)
        elif op == 2:
            out.extend([child] * ch.int(1, 50))
        else:
            out[key] = new
        return out
    op = ch.int(0, 5)
    if op == 0:
        return deep(ch, ch.int(1, 200))
    if op == 1 and isinstance(value, str):
        return value + _text(ch)
    if op == 2:
        return [value]
    if op == 3:
        return {"content": value, "type": _text(ch)[:20]}
    return scalar(ch)


class _Dup(dict):
    """A dict that serialises one of its keys twice (JSON's duplicate keys)."""


def dumps(value: Any, ch: Chooser) -> str:
    """JSON text as a careless producer writes it: NaN/Infinity allowed, sometimes duplicate keys."""
    if ch.chance(3):
        return _dumps_dup(value, ch, 0)
    try:
        return json.dumps(value, ensure_ascii=ch.chance(2), allow_nan=True)
    except (ValueError, RecursionError):
        return json.dumps(str(value)[:1000])


def _dumps_dup(value, ch, depth) -> str:
    if depth > 50:
        return "0"
    if isinstance(value, dict):
        items = [f"{json.dumps(k)}: {_dumps_dup(v, ch, depth + 1)}" for k, v in value.items()]
        if items and ch.chance(2):
            items.append(
                items[ch.int(0, len(items) - 1)].split(":", 1)[0] + ": " + _dumps_dup(scalar(ch), ch, depth + 1)
            )
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps_dup(v, ch, depth + 1) for v in value) + "]"
    try:
        return json.dumps(value, allow_nan=True)
    except ValueError:
        return "null"


def byte_mutate(data: bytes, ch: Chooser) -> bytes:
    buf = bytearray(data)
    for _ in range(ch.int(1, 8)):
        op = ch.int(0, 6)
        pos = ch.int(0, len(buf)) if buf else 0
        if op == 0:
            buf[pos:pos] = ch.pick([b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\r"])
        elif op == 1 and buf:
            del buf[pos:]
        elif op == 2 and buf:
            del buf[pos:pos + ch.int(1, 64)]
        elif op == 3:
            buf[pos:pos] = ch.bytes(ch.int(1, 32))
        elif op == 4 and buf:
            buf[pos:pos] = buf[pos:pos + ch.int(1, 200)]  # repeat a slice
        elif op == 5:
            buf[pos:pos] = ch.pick([b"\n", b"\n\n", b"{", b"[", b"}", b"]", b'"', b",", b":", b"NaN", b"-Infinity"])
        elif op == 6 and buf:
            buf[pos % len(buf)] ^= 1 << ch.int(0, 7)
    return bytes(buf)


# ---------------------------------------------------------------- seeds


def _parse_seed(data: bytes) -> tuple[str, Any]:
    """("json", value) or ("jsonl", [values]) or ("text", str)."""
    text = data.decode("utf-8", errors="replace")
    try:
        return "json", json.loads(text)
    except ValueError:
        pass
    values = []
    for line in text.splitlines():
        if line.strip():
            try:
                values.append(json.loads(line))
            except ValueError:
                return "text", text
    return ("jsonl", values) if values else ("text", text)


#: the date of every member of the zips built here: with the clock's, the same seed gave different bytes on each run
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


@lru_cache(maxsize=1)
def converter_seeds() -> dict[str, list[tuple[str, bytes]]]:
    """Real files per converter (by what detection says they are): (suffix, bytes)."""
    from ls_trajeval.flows.convert import detect_format

    out: dict[str, list[tuple[str, bytes]]] = {}
    for base in (FIXTURES, REAL):
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if not p.is_file() or p.suffix == ".md" and p.name == "README.md":
                continue
            try:
                name = detect_format(p).name
            except Exception:  # noqa: BLE001 - an undetectable fixture is simply no seed
                continue
            out.setdefault(name, []).append(("".join(p.suffixes[-2:]) if p.name.endswith(".traj.json") else p.suffix,
                                             p.read_bytes()))
    if "inspect_ai" in out:  # the .eval archive form, built from a real log
        suffix, data = out["inspect_ai"][-1]
        doc = json.loads(data)
        samples = doc.pop("samples", []) or []
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(zipfile.ZipInfo("header.json", ZIP_TIME), json.dumps(doc))
            for i, s in enumerate(samples):
                zf.writestr(zipfile.ZipInfo(f"samples/{i}_epoch_1.json", ZIP_TIME), json.dumps(s))
        out["inspect_ai"].append((".eval", buf.getvalue()))
    return out


#: how rare the giants are among mode-4 inputs (one in 20 inputs is mode 4); each costs seconds, not microseconds
GIANT_ONE_IN = 8

def generic_input(ch: Chooser, seeds: list[tuple[str, bytes]], giants: bool = True) -> tuple[str, bytes]:
    """One hostile file for a converter or reader: (suffix, bytes)."""
    suffix, data = seeds[ch.int(0, len(seeds) - 1)]
    mode = ch.int(0, 19)
    if mode == 0:
        return suffix, ch.bytes(ch.int(0, 512))
    if mode in (1, 2, 3):
        return suffix, byte_mutate(data, ch)
    if mode == 4 and giants and ch.chance(GIANT_ONE_IN):
        return suffix, giant(ch, data)
    if suffix == ".eval":
        return suffix, _mutate_zip(data, ch)
    kind, value = _parse_seed(data)
    if kind == "json":
        return suffix, dumps(mutate(value, ch, 4), ch).encode("utf-8", "surrogatepass")
    if kind == "jsonl":
        lines = list(value)
        for _ in range(ch.int(1, 3)):
            i = ch.int(0, len(lines) - 1)
            lines[i] = mutate(lines[i], ch, 3)
        sep = "\r\n" if ch.chance(5) else "\n"
        return suffix, sep.join(dumps(v, ch) for v in lines).encode("utf-8", "surrogatepass")
    return suffix, byte_mutate(data, ch)


def giant(ch: Chooser, data: bytes) -> bytes:
    """The expensive cases the issue names: a 10 MB step, 10^5 steps, nesting 10^5 deep."""
    kind = ch.int(0, 2)
    if kind == 0:
        return json.dumps({"trace_id": "huge", "task": "t", "trace": [
            {"type": "observation", "content": "x" * HUGE_STEP}]}).encode() + b"\n" + data
    if kind == 1:
        steps = [{"type": "action", "content": "s", "action_input": {"i": i}} for i in range(100_000)]
        return json.dumps({"trace_id": "many", "task": "t", "trace": steps, "messages": steps}).encode()
    return b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def _mutate_zip(data: bytes, ch: Chooser) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = {n: zf.read(n) for n in zf.namelist()}
    except zipfile.BadZipFile:
        return data
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in members.items():
            if ch.chance(2):
                kind, value = _parse_seed(body)
                body = dumps(mutate(value, ch, 3), ch).encode("utf-8", "surrogatepass") if kind == "json" \
                    else byte_mutate(body, ch)
            if not ch.chance(10):
                zf.writestr(zipfile.ZipInfo(name, ZIP_TIME), body)
    out = buf.getvalue()
    return byte_mutate(out, ch) if ch.chance(6) else out


# ---------------------------------------------------------------- contracts

_tmpdir = Path(tempfile.mkdtemp(prefix="ls-trajeval-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))


def temp_file(suffix: str, data: bytes) -> Path:
    p = _tmpdir / f"input{suffix}"
    p.write_bytes(data)
    return p


def _check_located(err, path: Path) -> None:
    from ls_trajeval.core.trace import TraceError

    assert isinstance(err, TraceError)
    assert str(path) in err.source, err
    assert isinstance(err.message, str) and err.message.strip(), err
    assert err.line is None or err.line >= 1
    str(err)  # renders


def check_converter(name: str, suffix: str, data: bytes) -> int:
    """Every item a converter yields is a Trace that keeps the step convention (the project's own trace
    JSONL excepted: it passes the user's steps through), a located TraceError or a ConvertWarning."""
    from ls_trajeval.converters.base import ConvertWarning
    from ls_trajeval.converters.registry import get_converter
    from ls_trajeval.converters.support.steps import convention_problems
    from ls_trajeval.core.trace import Trace, TraceError

    path = temp_file(suffix, data)
    n = 0
    for item in get_converter(name).convert(path):
        n += 1
        if isinstance(item, TraceError):
            _check_located(item, path)
        elif isinstance(item, Trace):
            assert isinstance(item.trace_id, str) and item.trace_id and item.steps
            assert all(isinstance(s.content, str) and isinstance(s.type, str) for s in item.steps)
            if name != "trace_jsonl":
                assert convention_problems(item) == [], (item.trace_id, convention_problems(item))
        else:
            assert isinstance(item, ConvertWarning), type(item)
    return n


def check_detect(suffix: str, data: bytes) -> None:
    """Format detection: a converter, or FormatError (a clean message)."""
    from ls_trajeval.flows.convert import FormatError, convert_file, detect_format

    path = temp_file(suffix, data)
    try:
        detect_format(path)
    except FormatError as exc:
        assert str(exc)
    for _ in convert_file(path):  # the CLI's own path, its catch-all included, must not raise either
        pass


def check_trace_reader(data: bytes) -> int:
    """The trace JSONL reader: Traces, or TraceErrors naming the file and the line."""
    from ls_trajeval.core.trace import Trace, read_traces

    path = temp_file(".jsonl", data)
    n = 0
    for item in read_traces(path):
        n += 1
        if isinstance(item, Trace):
            assert item.steps and isinstance(item.trace_id, str)
        else:
            _check_located(item, path)
            assert item.line is not None  # every reader error is one line's
    return n


def config_seeds() -> list[str]:
    from ls_trajeval import label_configs

    return [label_configs.path(n).read_text(encoding="utf-8") for n in ("trajectory_eval", "coding_agent")]


#: libyaml where PyYAML has it: the generator should not be what limits the inputs per second
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def config_input(ch: Chooser) -> bytes:
    seeds = config_seeds()
    text = seeds[ch.int(0, len(seeds) - 1)]
    mode = ch.int(0, 9)
    if mode <= 1:
        return byte_mutate(text.encode(), ch)
    if mode == 2:
        # aliases that expand exponentially ("billion laughs") and a self-referencing anchor
        return ch.pick([
            b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nannotation_schemes: &f [*e, *e, *e, *e, *e, *e, *e]\n",
            b"annotation_schemes: &x [*x]\n", b"a: 1\na: 2\n", b"!!python/object/apply:os.system ['echo x']\n",
            b"[" * 50_000 + b"]" * 50_000, b"annotation_schemes:\n" + b"  - " * 2000 + b"x\n",
            b"\xff\xfe", b"\x00", b"", b"---\n...\n---\n", b"annotation_schemes: .nan\n"])
    data = yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a SafeLoader
    data = mutate(data, ch, 5)
    if ch.chance(2):
        return dumps(data, ch).encode("utf-8", "surrogatepass")  # JSON is YAML too
    try:
        return yaml.dump(data, Dumper=_YAML_DUMPER, allow_unicode=ch.chance(2)).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, RecursionError, UnicodeError):
        return dumps(data, ch).encode("utf-8", "surrogatepass")


def check_config(data: bytes) -> None:
    """The config loader: a Config, or ConfigError with each problem (a key path or a line)."""
    from ls_trajeval.core import config as cfg

    path = temp_file(".yaml", data)
    try:
        c = cfg.load(path)
    except cfg.ConfigError as exc:
        text = str(exc)
        assert str(path) in text and text.strip(), text
        return
    assert c.trajectory is not None


@lru_cache(maxsize=1)
def _decoder_setup():
    from studio.uishapes import TRACES, ui_result  # the UI's own result shapes

    from ls_trajeval import label_configs
    from ls_trajeval.core import config as cfg
    from ls_trajeval.core.tasks import task_data
    from ls_trajeval.core.trace import parse_trace

    c = cfg.load(label_configs.path("trajectory_eval"))
    transcript = task_data(parse_trace(TRACES[0]), c)["te_transcript"]
    return c, [ui_result("transcript", transcript), ui_result("paged", transcript)]


def decoder_input(ch: Chooser) -> tuple[Any, int]:
    _, seeds = _decoder_setup()
    result = seeds[ch.int(0, 1)]
    if ch.chance(10):
        result = scalar(ch) if ch.chance(2) else [scalar(ch) for _ in range(ch.int(0, 5))]
    else:
        result = mutate(result, ch, 6)
        if ch.chance(3):  # through JSON, as results come from the server
            result = json.loads(json.dumps(result, allow_nan=True))
    if ch.chance(100):
        return result, 100_000  # a trace of 10^5 steps: a tenth of a second each, so not too often
    n_steps = ch.pick([0, 1, 3, 7, 7, 7, 10, 200]) if not ch.chance(20) else ch.int(-3, 50)
    return result, n_steps


def check_decoder(result: Any, n_steps: int) -> None:
    """The results decoder: per-step labels (one per step) and warnings; never an exception."""
    from ls_trajeval.core.results import decode
    from ls_trajeval.core.scoring import summarize

    c, _ = _decoder_setup()
    labels = decode(result, c, n_steps)
    assert len(labels.steps) == max(n_steps, 0)
    assert all(isinstance(w, str) for w in labels.warnings)
    summarize(labels.steps, c.trajectory)


def entry_points() -> dict[str, Callable[[Chooser], None]]:
    """Every fuzzed entry point: name -> one run on the chooser's input."""
    from ls_trajeval.converters.registry import all_converters

    seeds = converter_seeds()
    trace_seeds = [(".jsonl", (FIXTURES / "traces.jsonl").read_bytes())]
    all_seeds = [s for v in seeds.values() for s in v]
    eps: dict[str, Callable[[Chooser], None]] = {
        "trace_reader": lambda ch: check_trace_reader(generic_input(ch, trace_seeds)[1]),
        "config_loader": lambda ch: check_config(config_input(ch)),
        "results_decoder": lambda ch: check_decoder(*decoder_input(ch)),
        "detect": lambda ch: check_detect(*generic_input(ch, all_seeds)),
    }
    for conv in all_converters():
        own = seeds.get(conv.name) or all_seeds

        def run(ch, name=conv.name, own=own):
            check_converter(name, *generic_input(ch, own))

        eps[f"converter:{conv.name}"] = run
    return eps
