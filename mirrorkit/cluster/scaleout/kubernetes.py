"""Kubernetes: a headless Service and an Indexed Job whose pods compute their ``TF_CONFIG``.

Example:
    >>> from mirrorkit.cluster.scaleout.kubernetes import kubernetes_manifest
    >>> "kind: Job" in kubernetes_manifest("img", "train.py:train", workers=2)
    True
"""

from __future__ import annotations

import json
import re
import shlex

from mirrorkit._validate import refuse
from mirrorkit.cluster.scaleout._arguments import (
    DEFAULT_PORT,
    SECURITY_LINES,
    check_count,
    check_line,
    check_port,
    check_target,
)
from mirrorkit.cluster.scaleout.hosts import tf_config_env

_K8S_NAME = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")  # an RFC 1035 label


_K8S_NAMESPACE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")  # an RFC 1123 label


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is valid YAML)."""
    return json.dumps(value)


def _container_script(cluster_json: str, workers: int, target: str) -> str:
    """The shell program each pod runs: TF_CONFIG from its completion index, then the worker."""
    head, tail = cluster_json.split('"index":0')
    return "\n".join(
        [
            "set -eu",
            'index="${JOB_COMPLETION_INDEX:-}"',
            'case "$index" in',
            "  ''|*[!0-9]*)",
            "    echo \"JOB_COMPLETION_INDEX is '$index', not a number: run this pod in an"
            ' Indexed Job." >&2',
            "    exit 64 ;;",
            "esac",
            f'if [ "$index" -ge {workers} ]; then',
            f'  echo "JOB_COMPLETION_INDEX $index is not below the {workers} workers." >&2',
            "  exit 64",
            "fi",
            f"export TF_CONFIG='{head}\"index\":'\"$index\"'{tail}'",
            'echo "TF_CONFIG=$TF_CONFIG"',
            f"exec python -m mirrorkit.worker {shlex.quote(target)}",
        ]
    )


def _headless_service(name: str, metadata: list[str], port: int) -> list[str]:
    """The Service that gives the Job's pods their DNS names, ``<name>-<i>.<name>``."""
    return [
        "apiVersion: v1",
        "kind: Service",
        "metadata:",
        *metadata,
        "spec:",
        "  clusterIP: None  # headless: DNS names for the pods, no load balancing",
        "  publishNotReadyAddresses: true",
        "  selector:",
        f"    job-name: {name}",
        "  ports:",
        "    - name: grpc",
        f"      port: {port}",
        f"      targetPort: {port}",
    ]


def kubernetes_manifest(
    image: str,
    script_target: str,
    *,
    workers: int,
    name: str = "mirrorbook",
    port: int = DEFAULT_PORT,
    namespace: str | None = None,
) -> str:
    """A headless Service and an Indexed Job that run ``train(ctx)`` in ``workers`` pods.

    Kubernetes names the Job's pods ``<name>-0``, ``<name>-1``, ... and, because their
    ``subdomain`` is the headless Service, resolves ``<name>-<i>.<name>`` to pod ``i``.
    Each pod builds its ``TF_CONFIG`` from ``JOB_COMPLETION_INDEX`` with those host names,
    then runs ``python -m mirrorkit.worker <script_target>``. The Service publishes pods
    before they are ready, so early workers can find late ones while the cluster forms.
    ``backoffLimit: 0``: the first worker that fails fails the Job, instead of Kubernetes
    restarting pods (up to six times, its default) while the other workers wait.

    Security: the workers' gRPC servers listen on ``port`` without authentication. Keep
    them inside the cluster (the Service has no external IP; do not add one) and, where
    you can, restrict the port to the Job's pods with a NetworkPolicy.

    Args:
        image: The container image; it must hold Python, TensorFlow, mirrorkit and the
            training script.
        script_target: ``"path/to/train.py:function"`` (or a script path alone), the path
            as the container sees it.
        workers: How many pods, hence workers.
        name: The name of the Service and of the Job (pod host names ``<name>-<i>``).
        port: The port every worker listens on.
        namespace: The namespace of both objects; ``None`` leaves it to ``kubectl``.

    Returns:
        Two YAML documents, for ``kubectl apply -f``.

    Raises:
        ValueError: If an argument is malformed.

    Example:
        >>> from mirrorkit.cluster.scaleout import kubernetes_manifest
        >>> text = kubernetes_manifest("registry.example/train:1", "train.py:train", workers=2)
        >>> keys = ("kind:", "completionMode:", "completions:", "parallelism:", "subdomain:")
        >>> [line.strip() for line in text.splitlines() if line.strip().startswith(keys)]
        ['kind: Service', 'kind: Job', 'completionMode: Indexed', 'completions: 2', 'parallelism: 2', 'subdomain: mirrorbook']
        >>> print(next(line.strip() for line in text.splitlines() if "TF_CONFIG='" in line))
        export TF_CONFIG='{"cluster":{"worker":["mirrorbook-0.mirrorbook:12345","mirrorbook-1.mirrorbook:12345"]},"task":{"type":"worker","index":'"$index"'}}'
    """  # noqa: E501 - a doctest's output is one line
    image = check_line(image, "image")
    if any(c.isspace() for c in image):
        must = "an image reference without spaces"
        refuse(
            "image", image, must=must, write="image='registry.example/train:1'", error=ValueError
        )
    target = check_target(script_target)
    workers = check_count(workers, "workers")
    longest = len(f"-{workers - 1}")
    if not isinstance(name, str) or not _K8S_NAME.fullmatch(name) or len(name) + longest > 63:
        must = (
            f"a DNS label of at most {63 - longest} characters (lowercase letters, digits and "
            "'-', starting with a letter, so that the pod host names '<name>-<index>' stay valid)"
        )
        refuse("name", name, must=must, write="name='mirrorbook'", error=ValueError)
    port = check_port(port)
    if namespace is not None and (
        not isinstance(namespace, str)
        or not _K8S_NAMESPACE.fullmatch(namespace)
        or len(namespace) > 63
    ):
        must = "a DNS label (lowercase letters, digits, '-')"
        refuse("namespace", namespace, must=must, write="namespace='ml'", error=ValueError)
    hosts = [f"{name}-{i}.{name}" for i in range(workers)]
    cluster_json = tf_config_env(hosts, 0, port=port)
    script = _container_script(cluster_json, workers, target)
    metadata = [f"  name: {name}"] + ([f"  namespace: {namespace}"] if namespace else [])
    security = [line.format(port=port) for line in SECURITY_LINES]
    lines = [
        "# Written by mirrorkit.cluster.scaleout.kubernetes_manifest:"
        " apply with `kubectl apply -f`.",
        *(f"# {line}" for line in security),
        *_headless_service(name, metadata, port),
        "---",
        "apiVersion: batch/v1",
        "kind: Job",
        "metadata:",
        *metadata,
        "spec:",
        "  completionMode: Indexed",
        f"  completions: {workers}",
        f"  parallelism: {workers}",
        "  backoffLimit: 0",
        "  template:",
        "    spec:",
        f"      subdomain: {name}",
        "      restartPolicy: Never",
        "      containers:",
        "        - name: worker",
        f"          image: {_q(image)}",
        "          env:",
        "            - name: PYTHONUNBUFFERED",
        '              value: "1"',
        "          ports:",
        "            - name: grpc",
        f"              containerPort: {port}",
        "          command:",
        "            - sh",
        '            - "-c"',
        "            - |",
        *(f"              {line}" for line in script.splitlines()),
    ]
    return "\n".join(lines) + "\n"
