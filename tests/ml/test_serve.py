"""Starting the backend (what `ml serve` and the demo share): refusals before any worker starts, and secrets
only in the environment, never on the command line (visible in ps)."""
import pytest

from ls_trajeval import label_configs
from ls_trajeval.core import config as cfg
from ls_trajeval.ml.serve import Backend, BackendError

CONFIG = cfg.load(label_configs.path("trajectory_eval"))


def test_secrets_go_to_the_environment_not_the_command_line():
    b = Backend(CONFIG, port=9911, user="u", password="pw-secret", studio_url="http://127.0.0.1:1",
                api_key="tok-secret")
    b.check()
    cmd, env = " ".join(b.command()), b.environment()
    assert "pw-secret" not in cmd and "tok-secret" not in cmd and "127.0.0.1:9911" in cmd
    assert (env["LS_TRAJEVAL_ML_USER"], env["LS_TRAJEVAL_ML_PASSWORD"], env["LABEL_STUDIO_API_KEY"]) == (
        "u", "pw-secret", "tok-secret")
    assert env["LS_TRAJEVAL_ML_CONFIG"] == str(label_configs.path("trajectory_eval").resolve())
    # no credentials given: none leak in from the starter's own environment either
    assert "LS_TRAJEVAL_ML_PASSWORD" not in Backend(CONFIG).environment()


@pytest.mark.parametrize("kw, says", [
    ({"user": "u"}, "needs --basic-auth-password"),
    ({"studio_url": "http://127.0.0.1:1"}, "needs both --url and --api-key"),
    ({"api_key": "t"}, "needs both --url and --api-key"),
])
def test_half_given_settings_are_refused(kw, says):
    with pytest.raises(BackendError, match=says):
        Backend(CONFIG, **kw).check()


def test_a_config_not_from_a_file_is_refused():
    with pytest.raises(BackendError, match="loads its config from a file"):
        Backend(cfg.loads(label_configs.path("trajectory_eval").read_text())).check()
