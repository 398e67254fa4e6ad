"""HTTP Basic auth between Label Studio and the backend: the one place that builds the header (for the
webhook that ``ml connect`` registers, for clients and tests) and checks it (the app)."""
from __future__ import annotations

import base64
import hmac


def header_value(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def basic_auth_header(user: str, password: str) -> dict:
    return {"Authorization": header_value(user, password)}


class BasicAuth:
    """Checks an ``Authorization`` header; without a user configured every request passes."""

    def __init__(self, user: str | None, password: str | None):
        self._expected = header_value(user, password or "").encode() if user else None

    @property
    def enabled(self) -> bool:
        return self._expected is not None

    def allows(self, header: str | None) -> bool:
        if self._expected is None:
            return True
        # constant time, so the comparison does not tell how much of a guess was right
        return hmac.compare_digest((header or "").encode("latin-1", "replace"), self._expected)
