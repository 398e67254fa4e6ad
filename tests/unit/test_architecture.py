"""The package layout holds as docs/architecture.md states it: every import of every module (function-level and
``TYPE_CHECKING`` ones included) goes where the page's "may import" table allows, the core imports no I/O library,
no modules import each other in a loop, and the core's public names say what they are (docstrings). Read from the
source's AST, not by importing it; the checker is shown to catch a forbidden import and a loop planted in a copy of
the real tree."""
from __future__ import annotations

import ast
import functools
import importlib.util
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: the top-level package and the packages installed under it from elsewhere in the repository (pyproject's
#: ``package-dir``), as directories of the repository
PACKAGE_DIRS = {"ls_trajeval": "ls_trajeval", "ls_trajeval.converters": "converters",
                "ls_trajeval.label_configs": "label_configs"}
#: how the table names the third-party libraries it allows, as they are imported
LIBRARY_NAMES = {"PyYAML": "yaml", "Jinja2": "jinja2", "orjson": "orjson"}
#: standard-library modules that do I/O with the outside (network, processes): the core may import none of them,
#: whatever "the standard library" in its row
STDLIB_IO = {"urllib", "http", "socket", "subprocess", "asyncio", "ssl", "smtplib", "ftplib"}
#: every package may read the version (``ls_trajeval/__init__.py`` holds it and nothing else)
VERSION = {"ls_trajeval", "ls_trajeval.__version__"}


@dataclass
class Rule:
    """One row of the table: what the modules of ``package`` may import."""

    package: str
    everything: bool = False
    #: packages of ls_trajeval -> the modules of ``package`` allowed to import them (empty: all of them)
    packages: dict[str, set[str]] = field(default_factory=dict)
    #: third-party libraries by import name; None: any
    libraries: set[str] | None = None
    stdlib: bool = True


def parse_table(text: str) -> dict[str, Rule]:
    """The rows of the "may import" table in docs/architecture.md, by the dotted name of their package."""
    lines = text.splitlines()
    start = lines.index("| package | what lives there | may import |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    rules = {}
    for row in rows:
        first, _, allowed = (c.strip() for c in row.strip("|").split("|"))
        installed = re.search(r"installed as `([\w.]+)`", first)
        named = installed or re.match(r"`([\w/]+)", first)
        assert named, f"cannot read the package of {first!r}"
        package = named.group(1).strip("/").replace("/", ".")
        rule = Rule(package)
        if allowed == "everything":
            rule.everything = True
        elif allowed not in ("–", "nothing"):
            items = [i.strip() for i in re.split(r",(?![^(]*\))", allowed)]
            for item in items:
                # "name" or "name (a note)"; a note that starts "only `a`, `b`" names the modules allowed
                name, _, note = item.partition(" (")
                only = re.match(r"only ((?:`\w+`(?:, )?)+)", note)
                if name == "the standard library":
                    continue
                if name in LIBRARY_NAMES:
                    rule.libraries = (rule.libraries or set()) | {LIBRARY_NAMES[name]}
                    continue
                assert re.fullmatch(r"\w+", name), f"{package}: cannot read {item!r} of the table"
                modules = {f"{package}.{m}" for m in re.findall(r"\w+", only.group(1))} if only else set()
                rule.packages[f"ls_trajeval.{name}"] = modules
            rule.stdlib = "the standard library" in items or rule.libraries is None
        rules[package] = rule
    return rules


def module_files(dirs: dict[str, Path]) -> dict[str, Path]:
    """Every module under ``dirs`` (dotted prefix -> directory) by its dotted name."""
    found = {}
    for prefix, directory in dirs.items():
        for path in sorted(directory.rglob("*.py")):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.setdefault(".".join([prefix, *parts]), path)
    return found


def imports(path: Path, name: str) -> set[str]:
    """Absolute names ``path`` imports, ``from . import x`` resolved (both ``pkg`` and ``pkg.x`` are listed)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    return _imports(path.read_text(encoding="utf-8"), tuple(package))


@functools.cache  # a copy of the tree is parsed once: only a planted file is new
def _imports(source: str, package: tuple[str, ...]) -> frozenset[str]:
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = ".".join([*package[: len(package) - node.level + 1], node.module or ""]).strip(".") \
                if node.level else node.module
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
    return frozenset(out)


def owner(name: str, packages) -> str | None:
    """The longest of ``packages`` that ``name`` is, or is inside."""
    best = None
    for p in packages:
        if (name == p or name.startswith(p + ".")) and (best is None or len(p) > len(best)):
            best = p
    return best


def violations(modules: dict[str, Path], rules: dict[str, Rule]) -> list[str]:
    """Every import the table does not allow, as ``module imports name (reason)``."""
    problems, reported = [], set()
    for name, path in sorted(modules.items()):
        pkg = owner(name, rules)
        if pkg is None:
            problems.append(f"{name}: no row of the table covers it")
            continue
        rule = rules[pkg]
        for imported in sorted(imports(path, name)):
            root = imported.split(".")[0]
            if root == "ls_trajeval":
                target = owner(imported, rules)
                if target == pkg or rule.everything or imported in VERSION:
                    continue
                allowed = rule.packages.get(target) if target else None
                if (allowed is None or (allowed and name not in allowed)) and (name, target) not in reported:
                    reported.add((name, target))  # ``from pkg import x`` lists pkg and pkg.x: one line says it
                    problems.append(f"{name} imports {imported} ({pkg} may not import {target})")
            elif root == "__future__":
                continue
            elif root in sys.stdlib_module_names:
                if not rule.stdlib or (pkg == "ls_trajeval.core" and root in STDLIB_IO):
                    problems.append(f"{name} imports {imported} (an I/O module of the standard library)")
            elif rule.libraries is not None and root not in rule.libraries:
                problems.append(f"{name} imports {imported} ({pkg} may use only {sorted(rule.libraries)})")
    return problems


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


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, anywhere in its code. ``from pkg import mod`` lists pkg too; pkg/__init__
    runs first, but an __init__ that is just a docstring is no dependency on code, so it adds no edge. Nor does a
    module's own package (``from . import sibling``): the package has begun to run before any module in it can."""
    graph = {}
    for name, path in modules.items():
        deps = {m for m in imports(path, name) if m in modules and m != name and not name.startswith(m + ".")}
        graph[name] = {m for m in deps if not (modules[m].name == "__init__.py" and _only_docstring(modules[m]))}
    return graph


def _only_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def package_graph(rules: dict[str, Rule]) -> dict[str, set[str]]:
    """What the table lets each package import (the packages that may import everything left out)."""
    return {p: set(r.packages) - {p} for p, r in rules.items() if not r.everything}


# ---------------------------------------------------------------- the real tree

def real_dirs() -> dict[str, Path]:
    dirs = {}
    for prefix, directory in PACKAGE_DIRS.items():
        dirs[prefix] = Path(importlib.util.find_spec(prefix).origin).parent
        assert dirs[prefix] == ROOT / directory, "the tests import another copy of the package than this checkout"
    return dirs


@pytest.fixture(scope="module")
def rules() -> dict[str, Rule]:
    return parse_table(ARCHITECTURE.read_text(encoding="utf-8"))


def test_the_table_is_read_as_written(rules):
    assert set(rules) >= {"ls_trajeval", "ls_trajeval.core", "ls_trajeval.studio", "ls_trajeval.flows",
                          "ls_trajeval.analysis", "ls_trajeval.ml", "ls_trajeval.cli", "ls_trajeval.converters",
                          "ls_trajeval.label_configs"}
    core = rules["ls_trajeval.core"]
    assert core.libraries == {"yaml", "jinja2", "orjson"} and core.stdlib and set(core.packages) == {"ls_trajeval.core"}
    assert set(rules["ls_trajeval.ml"].packages) == {"ls_trajeval.core", "ls_trajeval.studio"}
    assert rules["ls_trajeval.flows"].packages["ls_trajeval.ml"] == set()  # from any module of flows
    assert "ls_trajeval.flows" not in rules["ls_trajeval.ml"].packages
    assert rules["ls_trajeval.cli"].everything and rules["ls_trajeval.studio"].libraries is None
    assert rules["ls_trajeval.label_configs"].packages == {}


def test_the_table_has_no_loop(rules):
    assert find_cycles(package_graph(rules)) == []


def test_every_import_is_one_the_table_allows(rules):
    modules = module_files(real_dirs())
    assert {"ls_trajeval.core.config", "ls_trajeval.flows.demo", "ls_trajeval.converters.registry"} <= set(modules)
    assert violations(modules, rules) == []


def test_no_import_cycles_between_modules():
    graph = import_graph(module_files(real_dirs()))
    assert len(graph) > 40
    assert find_cycles(graph) == []


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for name, path in module_files(real_dirs()).items():
        if path.name == "__init__.py":
            assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{name} has no docstring"


def undocumented(path: Path) -> list[str]:
    """The public classes and functions of a module, and the public methods and properties of its public classes,
    that have no docstring."""
    missing = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
            continue
        if not ast.get_docstring(node):
            missing.append(node.name)
        if isinstance(node, ast.ClassDef):
            missing += [f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)
                        and not m.name.startswith("_") and not ast.get_docstring(m)]
    return missing


def test_public_names_in_core_have_docstrings():
    core = {n: p for n, p in module_files(real_dirs()).items() if n.startswith("ls_trajeval.core")}
    assert len(core) > 10
    assert [f"{n}.{x}" for n, p in sorted(core.items()) for x in undocumented(p)] == []


def test_an_undocumented_public_name_is_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""A module."""\n\n\ndef f():\n    return 1\n\n\ndef _private():\n    pass\n\n\n'
                      'class C:\n    """A class."""\n\n    def method(self):\n        pass\n\n'
                      '    @property\n    def prop(self):\n        """Said."""\n')
    assert undocumented(module) == ["f", "C.method"]


# ---------------------------------------------------------------- the checker catches what is planted

@pytest.fixture
def copy(tmp_path) -> dict[str, Path]:
    """A copy of the real tree to plant imports in."""
    dirs = {}
    for prefix, directory in real_dirs().items():
        dirs[prefix] = tmp_path / PACKAGE_DIRS[prefix]
        shutil.copytree(directory, dirs[prefix], ignore=shutil.ignore_patterns("__pycache__"))
    return dirs


def plant(path: Path, code: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + code + "\n", encoding="utf-8")


@pytest.mark.parametrize("module, code, expected", [
    # inside a function, as the imports that hide best
    ("core/scoring.py", "def _f():\n    from ..studio import client\n",
     "ls_trajeval.core.scoring imports ls_trajeval.studio (ls_trajeval.core may not import ls_trajeval.studio)"),
    ("core/labels.py", "def _f():\n    import subprocess\n",
     "ls_trajeval.core.labels imports subprocess (an I/O module of the standard library)"),
    ("core/labels.py", "import tqdm\n", "ls_trajeval.core.labels imports tqdm (ls_trajeval.core may use only "
                                        "['jinja2', 'orjson', 'yaml'])"),
    ("analysis/codes.py", "from ..flows import export\n",
     "ls_trajeval.analysis.codes imports ls_trajeval.flows (ls_trajeval.analysis may not import ls_trajeval.flows)"),
    # the ML backend is driven by flows, never the other way
    ("ml/queue.py", "def _f():\n    from ..flows import importer\n",
     "ls_trajeval.ml.queue imports ls_trajeval.flows (ls_trajeval.ml may not import ls_trajeval.flows)"),
])
def test_a_planted_forbidden_import_is_found(copy, rules, module, code, expected):
    plant(copy["ls_trajeval"] / module, code)
    assert expected in violations(module_files(copy), rules)


def test_a_planted_converter_import_of_the_studio_is_found(copy, rules):
    plant(copy["ls_trajeval.converters"] / "react.py", "from ls_trajeval.studio import client\n")
    assert "ls_trajeval.converters.react imports ls_trajeval.studio (ls_trajeval.converters may not import " \
           "ls_trajeval.studio)" in violations(module_files(copy), rules)


def test_a_planted_import_cycle_is_found(copy):
    # labels is imported by scoring; an import back, even inside a function, closes a loop
    plant(copy["ls_trajeval"] / "core" / "labels.py", "def _f():\n    from . import scoring\n")
    assert ["ls_trajeval.core.labels", "ls_trajeval.core.scoring", "ls_trajeval.core.labels"] in \
        find_cycles(import_graph(module_files(copy)))


def test_a_row_can_allow_a_package_to_some_modules_only(tmp_path):
    text = ("| package | what lives there | may import |\n|---|---|---|\n"
            "| `ls_trajeval/a/` | x | b (only `one`, `two`: they need it) |\n| `ls_trajeval/b/` | y | – |\n"
            "| `ls_trajeval/` itself | z | – |\n")
    rules = parse_table(text)
    assert rules["ls_trajeval.a"].packages == {"ls_trajeval.b": {"ls_trajeval.a.one", "ls_trajeval.a.two"}}
    for name, code in {"__init__": "", "a/__init__": "", "a/one": "from ..b import x\n", "b/__init__": "",
                       "a/three": "def f():\n    from ls_trajeval.b import x\n", "b/x": ""}.items():
        (tmp_path / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.py").write_text(code)
    assert violations(module_files({"ls_trajeval": tmp_path}), rules) == [
        "ls_trajeval.a.three imports ls_trajeval.b (ls_trajeval.a may not import ls_trajeval.b)"]


def test_a_table_with_a_loop_is_found():
    text = ("| package | what lives there | may import |\n|---|---|---|\n"
            "| `ls_trajeval/a/` | x | b |\n| `ls_trajeval/b/` | y | c |\n| `ls_trajeval/c/` | z | a |\n"
            "| `ls_trajeval/d/` | w | everything |\n")
    assert find_cycles(package_graph(parse_table(text))) == [
        ["ls_trajeval.a", "ls_trajeval.b", "ls_trajeval.c", "ls_trajeval.a"]]


def test_the_cycle_finder_finds_a_loop():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
