"""The package layout holds: the core is pure (no I/O library, nothing outside core), and no ls_trajeval modules
import each other in a loop. Read from the source's AST, not by importing it."""
from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

#: libraries that do I/O (network, processes, terminals) or belong to the edges; core may import none of them
IO_MODULES = {"label_studio_sdk", "label_studio", "label_studio_ml", "httpx", "requests", "urllib", "http",
              "socket", "subprocess", "click", "tqdm", "platformdirs", "pandas", "numpy", "matplotlib"}
#: the only third-party libraries core may use (orjson: the reading layer's decoder, core/jsonfiles.py)
CORE_THIRD_PARTY = {"yaml", "jinja2", "orjson"}


def package_dirs() -> dict[str, Path]:
    """ls_trajeval and the packages installed under it from elsewhere in the repository (converters/, ...)."""
    root = Path(importlib.util.find_spec("ls_trajeval").origin).parent
    dirs = {"ls_trajeval": root}
    for sub in ("converters", "label_configs"):
        spec = importlib.util.find_spec(f"ls_trajeval.{sub}")
        dirs[f"ls_trajeval.{sub}"] = Path(spec.origin).parent
    return dirs


def modules() -> dict[str, Path]:
    found = {}
    for prefix, directory in package_dirs().items():
        for path in directory.rglob("*.py"):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([prefix, *parts])
            found.setdefault(name, path)
    return found


def imports(path: Path, name: str, *, top_level_only: bool) -> set[str]:
    """Absolute names ``path`` imports, ``from . import x`` resolved (both ``pkg`` and ``pkg.x`` are listed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else node.module
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
    return out


def test_core_imports_no_io_module_and_nothing_outside_core():
    core = {n: p for n, p in modules().items() if n == "ls_trajeval.core" or n.startswith("ls_trajeval.core.")}
    assert {"ls_trajeval.core.config", "ls_trajeval.core.records", "ls_trajeval.core.fields"} <= set(core)
    problems = []
    for name, path in sorted(core.items()):
        for imported in sorted(imports(path, name, top_level_only=False)):  # imports inside functions count too
            root = imported.split(".")[0]
            if root == "ls_trajeval":
                if not imported.startswith("ls_trajeval.core"):
                    problems.append(f"{name} imports {imported}")
            elif root in IO_MODULES or not (root in CORE_THIRD_PARTY or root in sys.stdlib_module_names
                                            or root == "__future__"):
                problems.append(f"{name} imports {imported}")
    assert problems == []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def visit(n: str) -> None:
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == "open":
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return cycles


def test_the_cycle_finder_finds_a_loop():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules():
    known = modules()
    graph = {}
    for name, path in known.items():
        deps = {m for m in imports(path, name, top_level_only=True) if m in known and m != name}
        # ``from pkg import mod`` lists pkg too; pkg/__init__ runs first, but it is a dependency on the package's
        # own code only, so an __init__ that is just a docstring adds no edge
        graph[name] = {m for m in deps if not (known[m].name == "__init__.py" and _only_docstring(known[m]))}
    assert len(graph) > 40
    assert find_cycles(graph) == []


def _only_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for name, path in modules().items():
        if path.name == "__init__.py":
            assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{name} has no docstring"
