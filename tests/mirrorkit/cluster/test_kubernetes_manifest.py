"""kubernetes_manifest: its objects checked against Kubernetes 1.37's API schema by
kubernetes-validate, its pods' start-up script run by `sh` as an Indexed Job runs it, and two
pods on hosts of their own (tests.virtual_hosts) forming a cluster.

No Kubernetes cluster runs here: no API server admits the objects, no kubelet starts the
pods, no cluster DNS names them. The schema is the one generated from the OpenAPI definition
of that release; the environment is the one an Indexed Job gives each pod
(JOB_COMPLETION_INDEX, HOSTNAME `<job>-<index>`, the container's `env`).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import tensorflow as tf
import yaml
from kubernetes_validate import ValidationError, validate

from mirrorkit.cluster.scaleout import kubernetes_manifest, tf_configs
from tests.conftest import ROOT
from tests.virtual_hosts import VirtualHosts, missing_tools

# The newest Kubernetes release whose schemas kubernetes-validate 1.37.0 (the locks' pin)
# carries; its "-strict" variant also rejects fields the API does not define.
KUBERNETES = "1.37"


def _documents(text: str) -> list[dict]:
    return list(yaml.safe_load_all(text))


def _container(job: dict) -> dict:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def _validate(resource: dict) -> None:
    """Raise ValidationError unless `resource` fits the release's schema, strictly."""
    assert validate(resource, f"{KUBERNETES}.0", strict=True) == KUBERNETES


# --- the objects against the API schema ---------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"workers": 1},
        {"workers": 2, "namespace": "ml-team"},
        {"workers": 3, "name": "mnist-run", "port": 2222},
        {"workers": 12, "name": "x" * 60, "port": 65535, "namespace": "a" * 63},
    ],
)
def test_every_object_fits_the_kubernetes_schema(kwargs):
    image, target = "registry.example/train@sha256:" + "0" * 64, "my scripts/train.py:train"
    service, job = _documents(kubernetes_manifest(image, target, **kwargs))
    _validate(service)
    _validate(job)


CONTAINER = "spec.template.spec.containers.0"


@pytest.mark.parametrize(
    ("kind", "field", "value", "at", "message"),
    [
        ("Job", "spec.completions", "3", "spec.completions", "'3' is not of type 'integer'"),
        ("Job", "spec.completionMod", "Indexed", "spec", "'completionMod' was unexpected"),
        ("Job", f"{CONTAINER}.cmd", ["sh"], CONTAINER, "'cmd' was unexpected"),
        ("Job", f"{CONTAINER}.name", None, CONTAINER, "'name' is a required property"),
        ("Job", "spec.template", None, "spec", "'template' is a required property"),
        ("Service", "spec.ports.0.port", "grpc", "spec.ports.0.port", "'grpc' is not of type"),
        ("Service", "spec.publishNotReady", True, "spec", "'publishNotReady' was unexpected"),
    ],
)
def test_the_schema_rejects_a_broken_object(kind, field, value, at, message):
    # The manifest broken on purpose (None: the field left out): a wrong type, an unknown
    # field, a required field missing. Without these, a validator that passed anything would.
    text = kubernetes_manifest("img", "train.py:train", workers=2)
    resource = next(d for d in _documents(text) if d["kind"] == kind)
    broken = copy.deepcopy(resource)
    *parents, last = [int(key) if key.isdigit() else key for key in field.split(".")]
    parent = broken
    for key in parents:
        parent = parent[key]
    if value is None:
        del parent[last]
    else:
        parent[last] = value
    with pytest.raises(ValidationError, match=message) as raised:
        _validate(broken)
    assert ".".join(map(str, raised.value.path)) == at
    _validate(resource)


def test_the_command_line_tool_checks_the_file_as_written(tmp_path):
    good, broken = tmp_path / "mirrorbook.yaml", tmp_path / "broken.yaml"
    text = kubernetes_manifest("registry.example/train:1", "train.py:train", workers=2)
    good.write_text(text)
    broken.write_text(text.replace("  parallelism: 2", "  parallelism: two"))
    result = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "-k", KUBERNETES, good, broken],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stdout + result.stderr
    assert lines == [
        f"INFO {good} passed for resource service/mirrorbook against version {KUBERNETES}",
        f"INFO {good} passed for resource job/mirrorbook against version {KUBERNETES}",
        f"INFO {broken} passed for resource service/mirrorbook against version {KUBERNETES}",
        f"ERROR {broken} did not validate for resource job/mirrorbook against version "
        f"{KUBERNETES}: spec.parallelism: 'two' is not of type 'integer', 'null'",
    ]


def test_kubernetes_manifest_is_a_headless_service_and_an_indexed_job():
    # What the schema cannot tell: the values that make the pods find each other.
    text = kubernetes_manifest(
        "registry.example/train:1", "train.py:train", workers=3, port=2222, namespace="ml-team"
    )
    service, job = _documents(text)
    assert (service["apiVersion"], service["kind"]) == ("v1", "Service")
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert service["metadata"]["namespace"] == "ml-team" == job["metadata"]["namespace"]
    assert service["spec"]["clusterIP"] == "None"  # the string: headless
    assert service["spec"]["publishNotReadyAddresses"] is True
    # Kubernetes labels a Job's pods job-name=<job name>; the Service must select them.
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    assert [p["port"] for p in service["spec"]["ports"]] == [2222]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 3
    assert spec["backoffLimit"] == 0
    assert spec["template"]["spec"]["subdomain"] == service["metadata"]["name"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    container = _container(job)
    assert container["image"] == "registry.example/train:1"
    assert [p["containerPort"] for p in container["ports"]] == [2222]
    assert container["command"][:2] == ["sh", "-c"]
    assert "no authentication" in text


# --- the pods' start-up script, run as an Indexed Job runs it ------------------------------


def _pod(job: dict, index: str | None, **extra: str) -> tuple[list[str], dict[str, str]]:
    """The container's command and the environment Kubernetes gives pod `index` of `job`.

    An Indexed Job sets JOB_COMPLETION_INDEX and names pod i's host `<job>-<i>`; the
    container adds its own `env`. `python` is this test's, as the image's would be.
    """
    container = _container(job)
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
    if index is not None:
        env["JOB_COMPLETION_INDEX"] = index
        env["HOSTNAME"] = f"{job['metadata']['name']}-{index}"
    return container["command"], {**env, **extra}


@pytest.mark.parametrize("namespace", [None, "ml-team"])
def test_each_pod_builds_the_tf_config_tf_configs_gives(tmp_path, monkeypatch, namespace):
    workers, port, name, target = 3, 2222, "mnist-run", "my scripts/train.py:train"
    text = kubernetes_manifest(
        "img:1", target, workers=workers, name=name, port=port, namespace=namespace
    )
    (_, job) = _documents(text)
    hosts = [f"{name}-{i}.{name}" for i in range(workers)]  # pod host name . subdomain
    expected = tf_configs(hosts, port=port)
    for i in range(workers):
        command, env = _pod(job, str(i))
        result = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30
        )
        (line,) = result.stdout.splitlines()
        assert line.startswith("TF_CONFIG=")
        tf_config_text = line.removeprefix("TF_CONFIG=")
        assert json.loads(tf_config_text) == expected[i]
        # The script exec'd the real worker with the target as one word; the image here
        # (tmp_path) has no such script, so the worker refuses before joining anything.
        assert result.returncode == 2, result.stderr
        assert f"argument target: {target!r} names no file" in result.stderr
        # And TensorFlow reads the TF_CONFIG as worker i of that cluster.
        monkeypatch.setenv("TF_CONFIG", tf_config_text)
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        assert resolver.cluster_spec().as_dict() == {"worker": [f"{h}:{port}" for h in hosts]}
        assert (resolver.task_type, resolver.task_id) == ("worker", i)


@pytest.mark.parametrize(
    ("index", "message"),
    [
        (None, "JOB_COMPLETION_INDEX is '', not a number: run this pod in an Indexed Job."),
        ("", "JOB_COMPLETION_INDEX is '', not a number: run this pod in an Indexed Job."),
        ("1x", "JOB_COMPLETION_INDEX is '1x', not a number: run this pod in an Indexed Job."),
        ("-1", "JOB_COMPLETION_INDEX is '-1', not a number: run this pod in an Indexed Job."),
        ("2", "JOB_COMPLETION_INDEX 2 is not below the 2 workers."),
        ("10", "JOB_COMPLETION_INDEX 10 is not below the 2 workers."),
    ],
)
def test_pod_refuses_a_missing_or_bad_index(tmp_path, index, message):
    (_, job) = _documents(kubernetes_manifest("img", "train.py:train", workers=2))
    command, env = _pod(job, index)
    result = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert (result.returncode, result.stderr, result.stdout) == (64, message + "\n", "")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, "workers must be an int >= 1"),
        ({"workers": 2, "name": "MirrorBook"}, "name must be a DNS label"),
        ({"workers": 2, "name": "1run"}, "starting with a letter"),
        ({"workers": 100, "name": "x" * 61}, "at most 60 characters"),
        ({"workers": 2, "port": 99999}, "from 1 to 65535"),
        ({"workers": 2, "namespace": "ML"}, "namespace must be a DNS label"),
        ({"workers": 2, "image": "my image"}, "without spaces"),
    ],
)
def test_kubernetes_manifest_rejects_bad_arguments(kwargs, match):
    kwargs = {"image": "img", **kwargs}
    with pytest.raises(ValueError, match=match):
        kubernetes_manifest(kwargs.pop("image"), "train.py:train", **kwargs)


# --- two pods, each on a host of its own named as Kubernetes names it ----------------------

TRAIN = textwrap.dedent(
    """
    import json, socket
    import tensorflow as tf

    def train(context):
        # Worker i adds 10**i: 11.0 shows both workers in the sum, each once.
        mine = context.strategy.run(lambda: tf.constant(10.0**context.task_id))
        print(json.dumps({"host": socket.gethostname(), "task": context.task_id,
                          "sum": float(context.strategy.reduce("SUM", mine, axis=None))}))
    """
)


def test_two_pods_on_their_own_hosts_form_a_cluster_and_train(tmp_path):
    # What Kubernetes would add around the script: a network stack per pod (both listen on
    # the same port), and DNS answering <job>-<i>.<service>; here tests.virtual_hosts gives
    # each pod a host of that name, with an /etc/hosts naming both.
    problem = missing_tools()
    if problem:  # a failure, as for the real Slurm: CI runs as root, and must run this
        pytest.fail(f"the two pods cannot run here: {problem}: run the tests as root")
    (tmp_path / "train.py").write_text(TRAIN)
    text = kubernetes_manifest("img", f"{tmp_path}/train.py:train", workers=2)
    (service, job) = _documents(text)
    name = job["metadata"]["name"]
    hosts = [f"{name}-{i}.{service['metadata']['name']}" for i in range(2)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with VirtualHosts(hosts, tmp_path / "hosts") as machines:
        pods = []
        for i, host in enumerate(hosts):
            # PYTHONPATH: this tree's mirrorkit, which the image would hold.
            command, env = _pod(job, str(i), PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
            pods.append(machines.run(host, command, env=env, cwd=tmp_path, **pipes))
        deadline = time.monotonic() + 120  # both pods: start, join, train, end
        try:
            outputs = [pod.communicate(timeout=deadline - time.monotonic()) for pod in pods]
        finally:
            for pod in pods:
                pod.kill()
    for i, (pod, (out, err)) in enumerate(zip(pods, outputs, strict=True)):
        assert pod.returncode == 0, err
        first, *_, last = out.splitlines()
        assert json.loads(first.removeprefix("TF_CONFIG=")) == tf_configs(hosts)[i]
        assert json.loads(last) == {"host": hosts[i], "task": i, "sum": 11.0}
