import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import pgserver  # noqa: E402


@pytest.fixture(scope="session")
def pg_label_studio(request):
    """A real Label Studio on a real PostgreSQL server (started once per session)."""
    return pgserver.session_label_studio(request.config)


@pytest.fixture(scope="session")
def pg_client(pg_label_studio):
    from ls_trajeval.studio import client as studio

    return studio.connect(pg_label_studio.url, pg_label_studio.credentials.token)
