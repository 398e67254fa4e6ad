"""A throw-away PostgreSQL server on 127.0.0.1 (Debian's binaries), and a Label Studio on top of it.

Used by the PostgreSQL and fault tests (one per test session) and by the import benchmark.
initdb refuses to run as root, so as root the server runs as the ``postgres`` system user.
"""
from __future__ import annotations

import glob
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ls_trajeval.studio.localserver import LocalLabelStudio, free_port


class PostgresError(RuntimeError):
    pass


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class Postgres:
    """``initdb`` + ``pg_ctl start`` in ``root``; password auth for one database and user."""

    def __init__(self, root: str | Path, port: int | None = None):
        self.bindir = pg_bindir()
        if self.bindir is None:
            raise PostgresError("PostgreSQL is not installed (bash scripts/system-deps.sh installs it)")
        self.root = Path(root)
        self.data = self.root / "pgdata"
        self.port = port or free_port()
        self.user, self.dbname = "ls_trajeval", "label_studio"
        self.password = secrets.token_hex(12)
        self._as = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresError("running as root needs the 'postgres' system user (Debian's postgresql "
                                    "package creates it)") from None
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *cmd, **kw):
        proc = subprocess.run(self._as + [str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kw)
        if proc.returncode != 0:
            raise PostgresError(f"{Path(str(cmd[0])).name} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        return proc.stdout

    def start(self) -> Postgres:
        """Create the cluster (or reuse the one ``root`` already holds) and start it."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self._as:
            shutil.chown(self.root, "postgres", "postgres")
        state = self.root / "pg.json"
        if state.exists():
            self.password = json.loads(state.read_text())["password"]
            self._start_server()
            return self
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as:
            shutil.chown(pwfile, "postgres", "postgres")
        pwfile.chmod(0o600)
        # the superuser is the one Label Studio logs in as: it needs to create its tables and nothing else runs here
        self._run(self.bindir / "initdb", "-D", self.data, "-U", self.user, "--pwfile", pwfile, "-A", "scram-sha-256",
                  "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync")
        pwfile.unlink()
        self._start_server()
        env = dict(os.environ, PGPASSWORD=self.password)
        self._run(self.bindir / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", self.user, self.dbname, env=env)
        state.write_text(json.dumps({"password": self.password}))
        state.chmod(0o600)
        return self

    def _start_server(self) -> None:
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run(self.bindir / "pg_ctl", "-D", self.data, "-l", self.root / "postgres.log", "-o", opts, "-w",
                  "-t", "60", "start")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(self._as + [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                                       "stop"], capture_output=True, timeout=60)

    def psql(self, sql: str) -> str:
        env = dict(os.environ, PGPASSWORD=self.password)
        return self._run(self.bindir / "psql", "-h", "127.0.0.1", "-p", self.port, "-U", self.user, "-d", self.dbname,
                         "-At", "-c", sql, env=env)

    @property
    def label_studio_env(self) -> dict:
        """What Label Studio reads to use this database (its settings: DJANGO_DB, POSTGRE_*)."""
        return {"DJANGO_DB": "default", "POSTGRE_NAME": self.dbname, "POSTGRE_USER": self.user,
                "POSTGRE_PASSWORD": self.password, "POSTGRE_HOST": "127.0.0.1", "POSTGRE_PORT": str(self.port)}


def start_label_studio_on_postgres(root: str | Path, log=None) -> tuple[Postgres, LocalLabelStudio]:
    """PostgreSQL in ``root``/pg and a Label Studio using it (data dir ``root``/ls). A ``root`` used before is
    reused as it is: no initdb, no migrations."""
    root = Path(root)
    pg = Postgres(root / "pg").start()
    try:
        ls = LocalLabelStudio(root / "ls", extra_env=pg.label_studio_env, log=log)
        started = time.monotonic()
        ls.start(timeout=300)
        ls.startup_seconds = time.monotonic() - started
    except BaseException:
        pg.stop()
        raise
    return pg, ls


def session_label_studio(config) -> LocalLabelStudio:
    """A PostgreSQL-backed Label Studio, stopped when the pytest session ends (the session fixture
    ``pg_label_studio`` in tests/conftest.py, shared by tests/pg and tests/faults).

    $LS_TRAJEVAL_TEST_PG_DIR keeps (and reuses) it in that directory, for fast local iterations.
    """
    keep = os.environ.get("LS_TRAJEVAL_TEST_PG_DIR")
    # not under pytest's basetemp: that is private to root, and the server runs as the postgres user
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ls-trajeval-pg-"))
    if not keep:
        root.chmod(0o711)  # mkdtemp makes it 0700: the postgres user must be able to pass through it
    pg, ls = start_label_studio_on_postgres(root)
    ls.pg = pg

    def stop():
        ls.stop()
        pg.stop()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)

    config.add_cleanup(stop)
    return ls
