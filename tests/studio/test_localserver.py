"""The embedded Label Studio's set-up arguments, read by Label Studio's own argument parser."""
from __future__ import annotations

from label_studio.core.argparser import parse_input_args

from ls_trajeval.studio.localserver import Credentials, init_args


def test_a_password_that_starts_with_a_dash_reaches_label_studio_intact():
    # secrets.token_urlsafe gives such a password once in 64 runs; passed as a separate argument, argparse took it
    # for an option and `label-studio init` failed ("--password: expected one argument")
    creds = Credentials("admin@example.com", "-Xq3_secret", "0" * 40)
    args = parse_input_args(init_args(creds))
    assert (args.username, args.password, args.user_token) == (creds.email, creds.password, creds.token)
