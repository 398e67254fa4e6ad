"""``pip install 'ls-trajeval[ml]'`` alone, into a fresh virtual environment, as a new user would: no web
stack older than the releases that fixed its published advisories, and ``ls-trajeval ml serve`` answers.

The install is not editable: the venv gets a built copy of the package (its package data, its declared
dependencies and nothing of the checkout), which is what a user's install is.
"""
from __future__ import annotations

import json
import subprocess

import httpx
from packaging.version import Version

from .conftest import clean_env
from .samples import PREDICTED_SCORE

#: the first release fixing each package's latest published advisory (Flask GHSA-68rp-wp8r-4726, Werkzeug
#: GHSA-29vq-49wr-vm6x, Jinja2's |attr sandbox escape); itsdangerous has none, 2.2 is Flask 3.1's own floor.
#: The issue's own list (Flask 2.2.5, Werkzeug 3.0.6, Jinja2 3.1.6) lies below these.
FIXED = {"flask": "3.1.3", "werkzeug": "3.1.6", "jinja2": "3.1.6", "itsdangerous": "2.2"}
READ_VERSIONS = """
import importlib.metadata as m, json
out = {}
for name in ("flask", "werkzeug", "jinja2", "itsdangerous", "label-studio-ml", "gunicorn"):
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def installed(bin_dir) -> dict:
    r = subprocess.run([str(bin_dir / "python"), "-c", READ_VERSIONS], capture_output=True, text=True,
                       env=clean_env(bin_dir), cwd=bin_dir)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_fresh_ml_install_has_no_web_stack_older_than_the_fixed_releases(ml_venv):
    versions = installed(ml_venv)
    print("installed in the fresh [ml] venv:", versions)  # for the record (pytest -rP)
    too_old = {name: versions[name] for name, fixed in FIXED.items()
               if versions[name] is not None and Version(versions[name]) < Version(fixed)}
    assert too_old == {}, f"older than the fixed releases {FIXED}: {too_old}"
    assert versions["flask"] and versions["werkzeug"] and versions["jinja2"]  # the backend runs on them
    assert versions["label-studio-ml"] is None and Version(versions["gunicorn"]) >= Version("23")
    check = subprocess.run([str(ml_venv / "python"), "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_fresh_ml_install_serves(ml_venv, backend_factory, tmp_path):
    from ls_trajeval import label_configs
    from ls_trajeval.core import config as cfg
    from ls_trajeval.core.tasks import task_data
    from ls_trajeval.core.trace import parse_trace

    from .samples import TRACES

    # the console script, run outside the checkout: only the installed package can answer
    b = backend_factory("trajectory_eval", workers=2, program=[str(ml_venv / "ls-trajeval")], cwd=tmp_path).start()
    health = httpx.get(b.url + "/health", auth=b.auth_tuple, timeout=10).json()
    assert health["status"] == "UP" and health["model_version"].startswith("ls-trajeval-")
    c = cfg.load(label_configs.path("trajectory_eval"))
    body = {"tasks": [{"id": 1, "data": task_data(parse_trace(TRACES[0]), c)}], "label_config": "<View/>"}
    r = httpx.post(b.url + "/predict", json=body, auth=b.auth_tuple, timeout=30)
    assert r.status_code == 200 and r.json()["results"][0]["score"] == PREDICTED_SCORE
    assert httpx.get(b.url + "/health", timeout=10).json() == {"status": "UP"}
    assert "Traceback" not in b.log_path.read_text()
