"""The Helm chart (helm/ccbench), checked offline: `helm lint`, `helm template` of the default
values and of the value sets in helm/ccbench/ci/, every rendered object validated against the
Kubernetes schemas of the oldest and the newest version the chart supports (kubernetes-validate
ships them), and assertions on what matters: only the worker is privileged, the API is
unprivileged with a read-only root file system, migrations run as a hook before everything,
workers run on labelled experiment nodes only.

Helm is built from the Go module proxy into a cache outside the repository on first use
(scripts/tools.sh helm: about 2.5 min cold on 2 cores, instant after)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from sqlalchemy.engine import make_url

from ccbench.settings import REPO_ROOT
from tests.deploy.tools import cached_tool

CHART = REPO_ROOT / "helm" / "ccbench"
VALUE_SETS = {
    "default": None,
    "production": CHART / "ci" / "production-values.yaml",
    "minimal": CHART / "ci" / "minimal-values.yaml",
}
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBE_VERSIONS = ["1.25.0", kubernetes_validate.latest_version()]
POD_KINDS = {"Deployment", "DaemonSet", "Job", "StatefulSet", "ReplicaSet", "Pod", "CronJob"}

Manifest = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> str:
    return cached_tool("helm", timeout_s=1200)


def render(
    helm: str, values: Path | None, kube: str = KUBE_VERSIONS[0], *sets: str
) -> list[Manifest]:
    args = [helm, "template", "rel", str(CHART), "--namespace", "lab", "--kube-version", kube]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [m for m in yaml.safe_load_all(done.stdout) if m]


def template_error(helm: str, *sets: str) -> str:
    args = [helm, "template", "rel", str(CHART), "--kube-version", KUBE_VERSIONS[0]]
    for s in sets:
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0, f"rendering with {sets} should fail"
    return done.stderr


def one(manifests: list[Manifest], kind: str, component: str) -> Manifest:
    found = [
        m
        for m in manifests
        if m["kind"] == kind
        and m["metadata"]["labels"].get("app.kubernetes.io/component") == component
    ]
    assert len(found) == 1, f"{len(found)} {kind} objects of component {component}"
    return found[0]


def pod_spec(m: Manifest) -> dict[str, Any]:
    spec: dict[str, Any] = m["spec"] if m["kind"] == "Pod" else m["spec"]["template"]["spec"]
    return spec


def containers(m: Manifest) -> Iterator[dict[str, Any]]:
    spec = pod_spec(m)
    yield from spec.get("initContainers", [])
    yield from spec["containers"]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("name", VALUE_SETS)
def test_lint(helm: str, name: str) -> None:
    args = [helm, "lint", "--strict", str(CHART), "--kube-version", KUBE_VERSIONS[0]]
    if VALUE_SETS[name] is not None:
        args += ["-f", str(VALUE_SETS[name])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("kube", KUBE_VERSIONS)
@pytest.mark.parametrize("name", VALUE_SETS)
def test_manifests_match_kubernetes_schemas(helm: str, name: str, kube: str) -> None:
    manifests = render(helm, VALUE_SETS[name], kube)
    assert len(manifests) >= 5
    for m in manifests:
        # strict: a misspelt or misplaced field is an error, not silently dropped.
        kubernetes_validate.validate(m, kube, strict=True)


@pytest.mark.parametrize("name", VALUE_SETS)
def test_only_the_worker_is_privileged(helm: str, name: str) -> None:
    manifests = render(helm, VALUE_SETS[name])
    pods = [m for m in manifests if m["kind"] in POD_KINDS]
    assert pods
    for m in pods:
        spec = pod_spec(m)
        component = m["metadata"]["labels"]["app.kubernetes.io/component"]
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            assert not spec.get(key), f"{component} uses {key}"
        for c in containers(m):
            privileged = c.get("securityContext", {}).get("privileged", False)
            assert privileged == (component == "worker"), f"{component}/{c['name']}"
        host_paths = [v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v]
        if component != "worker":
            assert host_paths == [], f"{component} mounts {host_paths} from the node"


@pytest.mark.parametrize("name", VALUE_SETS)
def test_api_scheduler_and_job_run_unprivileged_on_a_read_only_root(helm: str, name: str) -> None:
    manifests = render(helm, VALUE_SETS[name])
    for kind, component in (
        ("Deployment", "api"),
        ("Deployment", "scheduler"),
        ("Job", "bootstrap"),
        ("Pod", "api-test"),
    ):
        m = one(manifests, kind, component)
        spec = pod_spec(m)
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        for c in containers(m):
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0, component
            assert sc["readOnlyRootFilesystem"] is True, component
            assert sc["allowPrivilegeEscalation"] is False, component
            assert sc["capabilities"]["drop"] == ["ALL"], component
            if component == "api-test":
                continue  # writes nothing
            # What it writes is a volume: the state directory and /tmp.
            volumes = {v["name"]: v for v in spec["volumes"]}
            mounts = {vm["mountPath"]: volumes[vm["name"]] for vm in c["volumeMounts"]}
            assert {"/tmp", "/var/lib/ccbench"} <= set(mounts), component
            for path in ("/tmp", "/var/lib/ccbench"):
                assert {"emptyDir", "persistentVolumeClaim"} & set(mounts[path]), (component, path)


def test_api_deployment_service_probes(helm: str) -> None:
    manifests = render(helm, None)
    api = one(manifests, "Deployment", "api")
    (container,) = containers(api)
    assert container["args"] == ["api", "--host", "0.0.0.0", "--port", "8321"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["resources"]["requests"] and container["resources"]["limits"]
    service = one(manifests, "Service", "api")
    assert service["spec"]["selector"] == api["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    claim = one(manifests, "PersistentVolumeClaim", "api")
    volumes = {v["name"]: v for v in pod_spec(api)["volumes"]}
    assert volumes["state"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # A ReadWriteOnce claim: the old pod releases it before the new one starts.
    assert api["spec"]["strategy"]["type"] == "Recreate"


def test_migrations_are_a_hook_that_runs_before_everything(helm: str) -> None:
    manifests = render(helm, None)
    job = one(manifests, "Job", "bootstrap")
    notes = job["metadata"]["annotations"]
    assert set(notes["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    (container,) = containers(job)
    assert container["args"] == ["admin", "bootstrap"]
    env = env_of(container)
    assert env["CCBENCH_BOOTSTRAP_TEAM"] == "admin"
    assert env["CCBENCH_BOOTSTRAP_TOKEN"]["secretKeyRef"]["key"] == "bootstrap-token"
    assert pod_spec(job)["restartPolicy"] == "Never"
    # The Secret it reads exists before it: a hook of its own, with a lower weight.
    secrets = [m for m in manifests if m["kind"] == "Secret"]
    assert len(secrets) == 1
    secret_notes = secrets[0]["metadata"]["annotations"]
    assert set(secret_notes["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert int(secret_notes["helm.sh/hook-weight"]) < int(notes.get("helm.sh/hook-weight", 0))
    # Everything else is an ordinary resource, created after the hooks succeeded (but the
    # `helm test` Pod).
    hooks = {
        m["kind"]: m["metadata"]["annotations"]["helm.sh/hook"]
        for m in manifests
        if "helm.sh/hook" in m["metadata"].get("annotations", {})
    }
    assert hooks == {
        "Job": notes["helm.sh/hook"],
        "Secret": secret_notes["helm.sh/hook"],
        "Pod": "test",
    }


def test_helm_test_checks_the_api_through_its_service(helm: str) -> None:
    manifests = render(helm, None)
    pod = one(manifests, "Pod", "api-test")
    service = one(manifests, "Service", "api")
    (container,) = containers(pod)
    assert f"http://{service['metadata']['name']}:8321/healthz" in container["command"][-1]


def test_scheduler_is_a_single_replica(helm: str) -> None:
    scheduler = one(render(helm, None), "Deployment", "scheduler")
    assert scheduler["spec"]["replicas"] == 1
    assert scheduler["spec"]["strategy"]["type"] == "Recreate"
    (container,) = containers(scheduler)
    assert container["args"] == ["scheduler"]


@pytest.mark.parametrize("name", ["default", "production"])
def test_workers_are_a_daemonset_on_experiment_nodes(helm: str, name: str) -> None:
    values = VALUE_SETS[name]
    worker = one(render(helm, values), "DaemonSet", "worker")
    spec = pod_spec(worker)
    expected = yaml.safe_load((values or CHART / "values.yaml").read_text())["worker"]
    # Helm merges maps: a null removes a default label.
    selector = {k: v for k, v in expected["nodeSelector"].items() if v is not None}
    assert spec["nodeSelector"] == selector and selector
    assert spec["tolerations"] == expected["tolerations"]
    assert worker["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 1
    (container,) = containers(worker)
    assert container["securityContext"]["privileged"] is True
    volumes = {v["name"]: v for v in spec["volumes"]}
    btf = next(vm for vm in container["volumeMounts"] if vm["mountPath"] == "/sys/kernel/btf")
    assert btf["readOnly"] is True
    assert volumes[btf["name"]]["hostPath"]["path"] == "/sys/kernel/btf"
    env = env_of(container)
    assert env["CCBENCH_WORKER_POOL"] == expected["pool"]
    assert env["CCBENCH_WORKER_ID"] == "$(NODE_NAME)"
    assert env["CCBENCH_WORKER_TOKEN"]["secretKeyRef"]["key"] == "worker-token"
    assert env["CCBENCH_API_URL"] == (
        expected.get("apiUrl") or "http://rel-ccbench-api.lab.svc:8321"
    )


def test_workers_can_be_left_out(helm: str) -> None:
    manifests = render(helm, VALUE_SETS["minimal"])
    assert not [m for m in manifests if m["kind"] == "DaemonSet"]


def test_existing_secrets_replace_the_charts(helm: str) -> None:
    manifests = render(helm, VALUE_SETS["production"])
    assert not [m for m in manifests if m["kind"] == "Secret"]
    for kind, component in (("Deployment", "api"), ("DaemonSet", "worker"), ("Job", "bootstrap")):
        env = env_of(next(containers(one(manifests, kind, component))))
        assert env["CCBENCH_DATABASE_URL"]["secretKeyRef"] == {
            "name": "ccbench-database",
            "key": "url",
        }
        assert env["CCBENCH_BROKER_URL"]["secretKeyRef"] == {
            "name": "ccbench-broker",
            "key": "broker-url",
        }
        assert env["CCBENCH_SECRET_KEY"]["secretKeyRef"] == {
            "name": "ccbench-auth",
            "key": "secret-key",
        }
        assert env["CCBENCH_DISPATCH_WINDOW"] == "16"
    api = one(manifests, "Deployment", "api")
    assert pod_spec(api)["imagePullSecrets"] == [{"name": "registry-credentials"}]
    image = next(containers(api))["image"]
    assert image == "registry.example.org/ccbench/api@sha256:" + "0123456789abcdef" * 4
    ingress = one(manifests, "Ingress", "api")
    assert ingress["spec"]["tls"] == [
        {"hosts": ["ccbench.example.org"], "secretName": "ccbench.example.org-tls"}
    ]


def test_urls_built_by_the_chart_escape_passwords(helm: str) -> None:
    (secret,) = [m for m in render(helm, VALUE_SETS["minimal"]) if m["kind"] == "Secret"]
    data = secret["stringData"]
    database = make_url(data["database-url"])
    assert database.drivername == "postgresql+psycopg"
    assert (database.username, database.password) == ("ccbench", "p@ss word/:?#%+")
    assert (database.host, database.port, database.database) == (
        "db.internal",
        5433,
        "ccbench_test",
    )
    assert database.query == {"sslmode": "require"}
    assert data["broker-url"] == "rediss://:r3dis%2Fp%40ss@redis.internal:6379/2"
    assert data["bootstrap-token"] == "ccb_0123456789abcdefghijklmnop"


def test_generated_secrets_have_the_right_form(helm: str) -> None:
    (secret,) = [m for m in render(helm, None) if m["kind"] == "Secret"]
    data = secret["stringData"]
    from cryptography.fernet import Fernet

    Fernet(data["secret-key"].encode())  # raises unless a valid Fernet key
    assert re.fullmatch(r"ccb_[A-Za-z0-9]{40}", data["bootstrap-token"])
    assert len(data["worker-token"]) >= 32


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("worker.bpf=maybe", "worker/bpf"),
        ("auth.bootstrapToken=ccb_short", "auth/bootstrapToken"),
        ("worker.nodeSelector=null", "worker.nodeSelector must select"),
        ("api.service.type=Internal", "api/service/type"),
        ("api.replicas=2", "additional properties 'replicas'"),
        ("externalDatabase.host=", "externalDatabase.host"),
        ("api.replicaCount=2", "ReadWriteMany"),
    ],
)
def test_wrong_values_are_refused(helm: str, setting: str, message: str) -> None:
    assert message in template_error(helm, setting)


def _paths(values: dict[str, Any], prefix: str = "") -> tuple[set[str], set[str]]:
    """(leaf paths, every path) of a values tree."""
    leaves, every = set(), set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        every.add(path)
        if isinstance(value, dict) and value:
            sub_leaves, sub_every = _paths(value, f"{path}.")
            leaves |= sub_leaves
            every |= sub_every
        else:
            leaves.add(path)
    return leaves, every


def test_every_value_is_documented_and_in_the_schema() -> None:
    text = (CHART / "values.yaml").read_text()
    documented = set(re.findall(r"^\s*## @param (\S+)", text, re.M))
    leaves, every = _paths(yaml.safe_load(text))
    # A param may document a whole map (worker.nodeSelector), whose keys are examples.
    leaves = {p for p in leaves if not any(p.startswith(d + ".") for d in documented)}
    assert leaves - documented == set(), "values without an @param line"
    assert documented - every == set(), "@param lines without a value"
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    readme = (CHART / "README.md").read_text()
    for path in documented:
        node = schema
        for key in path.split("."):
            node = node["properties"][key]
        assert node.get("description"), f"{path} has no description in values.schema.json"
        assert f"`{path}`" in readme, f"{path} is missing from helm/ccbench/README.md"
