"""Connect the backend to a project: ML backend row, authenticated webhook, prediction settings."""
from __future__ import annotations

from ..studio import client as studio
from .auth import basic_auth_header

WEBHOOK_ACTIONS = ["ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"]


def connect_backend(client, project_id: int, backend_url: str, *, interactive: bool = True,
                    user: str | None = None, password: str | None = None, webhook: bool = True) -> list[str]:
    """Idempotent; returns what changed. Label Studio adds Basic auth to health/setup/predict calls but
    not to webhooks, so the webhook gets the same credentials as a header, or its events are refused.

    Without ``webhook`` the project has no webhook to the backend (one a previous connect made is removed): Label
    Studio builds a webhook's payload, counts over the whole project among it, inside every save, which a project
    of 100,000 tasks feels (docs/ml-backend.md); the task's score fields are then written by ``ml resync``."""
    backend_url = backend_url.rstrip("/")
    backend, changes = studio.ensure_ml_backend(client, project_id, backend_url, title="ls-trajeval",
                                                interactive=interactive,
                                                user=user, password=password)
    hook_url = backend_url + "/webhook"
    if webhook:
        headers = basic_auth_header(user, password or "") if user else {}
        changes += studio.ensure_webhook(client, project_id, hook_url, WEBHOOK_ACTIONS, headers)[1]
    else:
        for hook in studio.webhooks_to(client, project_id, hook_url):
            studio.remove_webhook(client, hook["id"])
            changes.append(f"removed webhook {hook_url} (id {hook['id']}): saves do not wait for it; the score fields "
                           f"are written by `ls-trajeval ml resync --project {project_id}`")
    version = backend.get("model_version")
    if not version:
        raise studio.StudioError(f"the ML backend at {backend_url} reported no model version (is it running, "
                                 "and are the credentials right?)")
    if backend.get("title") != version:
        # Label Studio accepts as the project's model version only a backend's title (or a version that
        # predictions already carry); titling the backend with its version makes the project's, the
        # backend's and every prediction's version one string, so retrieving never duplicates
        studio.ensure_ml_backend(client, project_id, backend_url, title=version, interactive=interactive,
                                 user=user, password=password)
        changes.append(f"ML backend titled {version!r} (its model version)")
    changes += studio.set_project_predictions(client, project_id, version)
    return changes


def follow_version(client, project_id: int, base_version: str, version: str) -> list[str]:
    """After a retraining: this backend's row in the project titled with the new version and, when the project
    used this backend's predictions, its model version set to it, so the label stream, "Retrieve predictions" and
    the predictions annotators see are the new judge's (Label Studio predicts on task open only for a project
    whose model version is a backend's title). A project set to another model version keeps it."""
    def ours(title: str) -> bool:
        return title == base_version or title.startswith(base_version + "-learned-")

    changes = []
    project = studio.get_project(client, project_id)
    followed = ours(project.get("model_version") or "")
    for backend in studio.ml_backends(client, project_id):
        title = backend.get("title") or ""
        if ours(title) and title != version:
            studio.retitle_ml_backend(client, backend, version)
            changes.append(f"ML backend {backend.get('id')} titled {version!r}")
            project = studio.get_project(client, project_id)  # Label Studio moves a project along with its title
    if followed and project.get("model_version") != version:
        studio.update_project(client, project_id, model_version=version)
        changes.append(f"project model version {project.get('model_version')!r} -> {version!r}")
    return changes
