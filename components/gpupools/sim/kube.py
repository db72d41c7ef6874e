"""A small Kubernetes API client over HTTPS with a client certificate (the Python standard library only).

What the sim needs and nothing more: discovery (kind -> resource), server-side apply with and
without ``dryRun=All``, create, get, list, delete, and waiting. Server-side apply is a ``PATCH`` with
``Content-Type: application/apply-patch+yaml`` and a ``fieldManager`` (Kubernetes
``reference/using-api/server-side-apply.md``); JSON is YAML, so the body is the manifest as JSON.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

FIELD_MANAGER = "gpupools-sim"
"""The field manager of everything the sim applies (``kubectl`` uses ``kubectl``, Pulumi ``pulumi-kubernetes-<id>``)."""


class KubeError(RuntimeError):
    """The API server refused a request; ``status`` is the HTTP status, the message the server's."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API: ``/apis/<group>/<version>`` (or ``/api/v1``), its plural, its scope."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return base + (f"/{name}" if name else "")


@dataclass
class Client:
    """One API server, one identity (client certificate); thread-unsafe, cheap to create."""

    server: str
    ca_file: Path
    cert_file: Path
    key_file: Path
    timeout: float = 30.0
    _resources: dict[tuple[str, str], Resource] = field(default_factory=dict)

    def _connection(self) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        parsed = urllib.parse.urlsplit(self.server)
        return http.client.HTTPSConnection(
            parsed.hostname or "127.0.0.1", parsed.port or 443, context=context, timeout=self.timeout
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request; the decoded JSON answer, or KubeError with the server's message."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        connection = self._connection()
        try:
            connection.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": "application/json"})
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        payload: Any = None
        if raw:
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode(errors="replace")
        if response.status >= 400:
            message = payload.get("message", "") if isinstance(payload, dict) else str(payload)
            reason = payload.get("reason", "") if isinstance(payload, dict) else ""
            raise KubeError(response.status, f"{method} {path}: {response.status} {message}".strip(), reason)
        return payload

    def get_raw(self, path: str) -> Any:
        return self.request("GET", path)

    # -- discovery -------------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        """The resource of ``kind`` in ``api_version``, from the server's discovery (re-read on a miss,
        so a CRD installed a moment ago is found)."""
        key = (api_version, kind)
        if key not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                listing = self.request("GET", path)
            except KubeError as error:
                if error.status == 404:
                    raise KubeError(404, f"the API server serves no {api_version} (is its CRD installed?)", "NotFound") from None
                raise
            for item in listing.get("resources", []):
                if "/" not in item["name"]:
                    self._resources[(api_version, item["kind"])] = Resource(
                        api_version, item["kind"], item["name"], bool(item["namespaced"])
                    )
        if key not in self._resources:
            raise KubeError(404, f"the API server serves no kind {kind} in {api_version}", "NotFound")
        return self._resources[key]

    def resource_of(self, manifest: Mapping[str, Any]) -> Resource:
        return self.resource(str(manifest["apiVersion"]), str(manifest["kind"]))

    def object_path(self, manifest: Mapping[str, Any]) -> str:
        metadata = manifest.get("metadata") or {}
        resource = self.resource_of(manifest)
        namespace = metadata.get("namespace") or ("default" if resource.namespaced else None)
        return resource.path(namespace, metadata["name"])

    # -- verbs -------------------------------------------------------------------------------------

    def apply(self, manifest: Mapping[str, Any], *, dry_run: bool = False) -> Any:
        """Server-side apply ``manifest`` (``force``: the sim owns every field it applies)."""
        query = {"fieldManager": FIELD_MANAGER, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request(
            "PATCH", self.object_path(manifest), dict(manifest), content_type="application/apply-patch+yaml", query=query
        )

    def create(self, manifest: Mapping[str, Any]) -> Any:
        metadata = manifest.get("metadata") or {}
        resource = self.resource_of(manifest)
        namespace = metadata.get("namespace") or ("default" if resource.namespaced else None)
        return self.request("POST", resource.path(namespace), dict(manifest), query={"fieldManager": FIELD_MANAGER})

    def get(self, manifest: Mapping[str, Any]) -> Any | None:
        """The live object, or None when it does not exist."""
        try:
            return self.request("GET", self.object_path(manifest))
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        """The objects of ``kind``, each with its ``apiVersion`` and ``kind`` (the API server leaves both
        out of a built-in type's list items; kubectl fills them in the same way), so an item can be
        passed back to ``get``, ``delete`` or ``apply`` as it is."""
        resource = self.resource(api_version, kind)
        query = {"labelSelector": label_selector} if label_selector else None
        items = self.request("GET", resource.path(namespace), query=query).get("items", [])
        return [{"apiVersion": api_version, "kind": kind, **item} for item in items]

    def delete(self, manifest: Mapping[str, Any], *, propagation: str = "Background") -> bool:
        """Delete ``manifest``'s object; False when it was already gone."""
        try:
            self.request(
                "DELETE",
                self.object_path(manifest),
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation},
            )
        except KubeError as error:
            if error.status == 404:
                return False
            raise
        return True


def wait_for(condition: Callable[[], Any], *, timeout: float, interval: float = 0.5, what: str = "the condition") -> Any:
    """Poll ``condition`` until it returns something truthy; TimeoutError naming ``what`` after ``timeout`` seconds.
    The last exception ``condition`` raised (if any) is chained to the TimeoutError."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            result = condition()
            if result:
                return result
        except (OSError, KubeError) as error:
            last_error = error
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}") from last_error
        time.sleep(interval)


def names(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted(str(o["metadata"]["name"]) for o in objects)
