"""The base of every error whose message is written for the user: a bad config, an unreachable or refusing Label
Studio, a server that will not start. The CLI prints one as a single ``error:`` line and exits 2 (nothing could
be done); any other exception reaching it is a bug and is reported as one."""
from __future__ import annotations


class UserError(Exception):
    """A problem with a message fit for a user (no traceback)."""
