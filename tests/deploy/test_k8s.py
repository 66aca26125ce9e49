"""deploy/k8s/: every manifest validates offline against the Kubernetes JSON schemas shipped
by ``kubernetes-validate`` (strict: unknown fields are errors), a broken copy does not, and
the objects fit together (selectors, probes, resources, config and secret references)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30.0"  # the oldest minor version the manifests are meant for
NOT_KUBERNETES = {"kustomization.yaml"}  # kustomize's own config, checked separately


def manifests() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name in NOT_KUBERNETES:
            continue
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found.append((path.name, document))
    return found


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for _, doc in manifests()}


def errors(document: dict[str, Any]) -> list[str]:
    try:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'/'.join(map(str, exc.path))}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [str(exc)]
    return []


@pytest.mark.parametrize("version", [KUBERNETES_VERSION, kubernetes_validate.latest_version()])
def test_every_manifest_is_valid(version: str) -> None:
    found = manifests()
    assert {doc["kind"] for _, doc in found} >= {
        "Deployment",
        "Service",
        "ConfigMap",
        "Secret",
        "Job",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    }
    for name, document in found:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except Exception as exc:  # report which file and object
            raise AssertionError(f"{name} {document['kind']}: {exc}") from exc


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(document)
    target: Any = broken
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return broken


CONTAINER = "spec.template.spec.containers.0"


@pytest.mark.parametrize(
    "kind, name, path, value",
    [
        ("Deployment", "gin-api", "spec.replicas", "two"),
        ("Deployment", "gin-api", "spec.replica", 2),  # unknown field (strict)
        ("Deployment", "gin-api", f"{CONTAINER}.readinessProbe.httpGet.port", 80.5),
        ("Deployment", "gin-api", f"{CONTAINER}.envFrom.0.configMapRef", "gin-config"),
        ("Deployment", "gin-beat", "spec.strategy.type", {"recreate": True}),
        (
            "HorizontalPodAutoscaler",
            "gin-worker",
            "spec.metrics.0.resource.target",
            {"averageUtilization": 70},
        ),  # target.type is required
        ("PodDisruptionBudget", "gin-api", "spec.minAvailable", [1]),
        ("Job", "gin-migrate", "spec.template.spec.restartPolicy", 7),
    ],
)
def test_a_broken_manifest_is_refused(kind: str, name: str, path: str, value: Any) -> None:
    document = objects()[(kind, name)]
    assert errors(document) == []
    assert errors(_set(document, path, value)) != []


def test_a_manifest_of_an_unknown_kind_is_refused() -> None:
    document = {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "x"}}
    assert errors(document) != []


def containers(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list(document["spec"]["template"]["spec"]["containers"])


def test_the_api_is_probed_sized_configured_and_shut_down_gracefully() -> None:
    api = objects()[("Deployment", "gin-api")]
    assert api["spec"]["replicas"] == 2
    pod = api["spec"]["template"]["spec"]
    (container,) = containers(api)
    assert container["args"] == ["api"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    drain = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
    assert pod["terminationGracePeriodSeconds"] > drain + 30  # gunicorn's graceful timeout
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_every_pod_has_resources_config_and_secret() -> None:
    workloads = [doc for _, doc in manifests() if doc["kind"] in ("Deployment", "Job")]
    assert len(workloads) == 4
    for document in workloads:
        for container in containers(document):
            assert set(container["resources"]) == {"requests", "limits"}
            for part in ("requests", "limits"):
                assert set(container["resources"][part]) == {"cpu", "memory"}
            refs = container["envFrom"]
            assert {"configMapRef": {"name": "gin-config"}} in refs
            assert {"secretRef": {"name": "gin-secrets"}} in refs
    assert ("ConfigMap", "gin-config") in objects()
    assert ("Secret", "gin-secrets") in objects()


def test_one_beat_and_autoscaled_workers() -> None:
    beat = objects()[("Deployment", "gin-beat")]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert containers(beat)[0]["args"] == ["beat"]
    hpa = objects()[("HorizontalPodAutoscaler", "gin-worker")]
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "gin-worker")
    assert ("Deployment", "gin-worker") in objects()
    assert containers(objects()[("Deployment", "gin-worker")])[0]["args"][0] == "worker"
    job = objects()[("Job", "gin-migrate")]
    assert containers(job)[0]["args"] == ["migrate"]


def _selects(selector: dict[str, str], document: dict[str, Any]) -> bool:
    labels = document["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(key) == value for key, value in selector.items())


def test_selectors_reach_exactly_the_pods_they_mean() -> None:
    found = objects()
    deployments = {name: doc for (kind, name), doc in found.items() if kind == "Deployment"}
    for name, deployment in deployments.items():
        assert _selects(deployment["spec"]["selector"]["matchLabels"], deployment), name
    service = found[("Service", "gin-api")]
    pdb = found[("PodDisruptionBudget", "gin-api")]
    for selector in (service["spec"]["selector"], pdb["spec"]["selector"]["matchLabels"]):
        chosen = {name for name, d in deployments.items() if _selects(selector, d)}
        assert chosen == {"gin-api"}
    ports = {p["name"] for p in containers(deployments["gin-api"])[0]["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in ports


def test_the_secret_is_only_an_example() -> None:
    secret = objects()[("Secret", "gin-secrets")]
    assert all(
        "replace-me" in value or value.startswith("redis://redis")
        for value in secret["stringData"].values()
    )
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "secret.example.yaml" not in kustomization["resources"]
    for resource in kustomization["resources"]:
        assert (K8S / resource).exists(), resource
