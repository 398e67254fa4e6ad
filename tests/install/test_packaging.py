"""What ``pip install ls-trajeval`` brings and builds: a light base (no Label Studio server, no analysis stack), the
extras that add them, a wheel with every subpackage and its data, built without a deprecation warning."""
import subprocess
import sys
import zipfile
from importlib.metadata import requires
from pathlib import Path

from commandline import run
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
#: what the plugin itself needs: the Label Studio client, templates, config, CLI, progress, converters' JSON
BASE = {"label-studio-sdk", "jinja2", "pyyaml", "click", "tqdm", "platformdirs", "ijson", "orjson", "httpx"}
ANALYSIS = {"pandas", "numpy", "matplotlib", "statsmodels", "krippendorff", "scipy", "crowd-kit"}


def _requirements():
    reqs = [Requirement(r) for r in requires("ls-trajeval")]
    base = {r.name.lower() for r in reqs if r.marker is None}
    extras = {}
    for r in reqs:
        if r.marker is not None:
            for extra in ("analysis", "server", "ml", "test", "parquet", "judge", "tracing", "phoenix", "langfuse"):
                if r.marker.evaluate({"extra": extra}):
                    extras.setdefault(extra, set()).add(r.name.lower())
    return base, extras


def test_the_base_install_is_the_plugin_without_server_or_analysis_stack():
    base, extras = _requirements()
    assert base == BASE
    assert extras["analysis"] == ANALYSIS
    assert extras["server"] == {"label-studio"}
    assert {"flask", "gunicorn"} <= extras["ml"] and "label-studio-ml" not in extras["ml"]
    assert extras["judge"] == {"openai", "jsonschema"}
    # the tracing tools' clients, each in its own extra; never the Phoenix server beside Label Studio's (they pin
    # incompatible openai versions: the tests run it from a venv of its own)
    assert {"opentelemetry-proto", "protobuf", "flask", "waitress"} <= extras["tracing"]
    assert extras["phoenix"] == {"arize-phoenix-client"} and extras["langfuse"] == {"langfuse"}
    assert "arize-phoenix" not in extras["test"] | extras["phoenix"]
    # the test extra brings everything the suite runs against, through the extras themselves
    assert "ls-trajeval" in extras["test"]


def test_python_dash_m_and_console_script_agree():
    a = run("--version")
    assert a.returncode == 0 and a.stdout.strip().startswith("ls-trajeval, version ")
    b = run("formats")
    assert b.returncode == 0 and "claude_code" in b.stdout and "shapes:" in b.stdout


def test_the_wheel_builds_without_warnings_and_holds_every_package_and_its_data(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                          "--no-cache-dir", "-v", "-w", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "Deprecat" not in log and "_Warning" not in log and "is absent from the `packages`" not in log, log[-3000:]
    (wheel,) = tmp_path.glob("ls_trajeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("core", "studio", "flows", "analysis", "cli", "ml", "tracing", "converters", "label_configs"):
        assert f"ls_trajeval/{package}/__init__.py" in names
    source = ROOT / "ls_trajeval"
    for data in [*source.glob("templates/*.j2"), *source.glob("samples/*")]:
        assert f"ls_trajeval/{data.relative_to(source)}" in names
    for shipped in (ROOT / "label_configs").glob("*.*"):
        if shipped.suffix in (".yaml", ".xml"):
            assert f"ls_trajeval/label_configs/{shipped.name}" in names
    assert not any(n.startswith("tests/") or n.startswith("converters/") for n in names)
