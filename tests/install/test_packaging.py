"""Installing the plugin must not pull the Label Studio server; the entry points work."""
import subprocess
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement


def test_plain_install_does_not_require_the_label_studio_server():
    base = [Requirement(r) for r in requires("ls-trajeval") if "extra ==" not in r]
    names = {r.name.lower() for r in base}
    assert "label-studio-sdk" in names
    assert "label-studio" not in names and "django" not in names
    extras = [Requirement(r) for r in requires("ls-trajeval") if "extra ==" in r]
    assert any(r.name == "label-studio" and r.marker.evaluate({"extra": "server"}) for r in extras)


def test_python_dash_m_and_console_script_agree():
    a = subprocess.run([sys.executable, "-m", "ls_trajeval", "--version"], capture_output=True, text=True)
    assert a.returncode == 0 and a.stdout.strip().startswith("ls-trajeval, version ")
    b = subprocess.run([sys.executable, "-m", "ls_trajeval", "formats"], capture_output=True, text=True)
    assert b.returncode == 0 and "claude_code" in b.stdout and "shapes:" in b.stdout
