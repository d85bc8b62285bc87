"""What every scale-out configuration checks first: hosts, ports, counts, one-line strings.

Each check raises a ValueError that says what was wrong and what to write instead.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

#: The port a worker listens on when its host is given without one.
DEFAULT_PORT = 12345


_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?"


_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


SECURITY_LINES = (
    "TensorFlow's gRPC server has no authentication and listens on all interfaces:",
    "keep port {port} on a private network or behind a firewall, never on the internet.",
)


def check_port(port: object, what: str = "port") -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(
            f"{what} must be an int from 1 to 65535, got {port!r}; "
            f"pick a free port such as {DEFAULT_PORT}."
        )
    return port


def parse_host(spec: object, port: int) -> str:
    """One ``"host"`` or ``"host:port"`` -> ``"host:port"``, or a ValueError saying why not."""
    if not isinstance(spec, str):
        raise ValueError(f"each host must be a string such as 'node1:12345', got {spec!r}.")
    text = spec.strip()
    if "://" in text:
        raise ValueError(
            f"malformed host {spec!r}: give a host name or address without a scheme, "
            f"such as 'node1' or 'node1:{port}'."
        )
    if text.startswith("["):  # [IPv6]:port
        match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", text)
        try:
            ipaddress.IPv6Address(match.group(1) if match else "")
        except ValueError:
            raise ValueError(
                f"malformed host {spec!r}: write an IPv6 address as '[addr]' or '[addr]:port', "
                "e.g. '[fd00::1]:12345'."
            ) from None
        address, port_text = f"[{match.group(1)}]", match.group(2)
    elif text.count(":") > 1:
        raise ValueError(
            f"host {spec!r} looks like an IPv6 address: put it in brackets, "
            f"e.g. '[{text}]' or '[{text}]:{port}'."
        )
    else:
        address, _, port_text = text.partition(":")
        if ":" in text and not port_text:
            raise ValueError(f"host {spec!r} ends with ':' but no port: write 'host:{port}'.")
        if not _HOSTNAME.fullmatch(address):
            raise ValueError(
                f"malformed host {spec!r}: expected a host name or IPv4 address, optionally "
                "with ':port', such as 'node1', 'node1.cluster.local:12345' or '10.0.0.5'."
            )
    if port_text is None or port_text == "":
        return f"{address}:{port}"
    if not re.fullmatch(r"[0-9]+", port_text):
        raise ValueError(f"host {spec!r} has a port that is not a number: write 'host:{port}'.")
    return f"{address}:{check_port(int(port_text), f'the port of host {spec!r}')}"


def worker_addresses(hosts: Sequence[str], port: int | None) -> list[str]:
    """Validate ``hosts`` and return one ``host:port`` per worker, in order."""
    if isinstance(hosts, str):
        raise ValueError(
            f"hosts must be a list of strings, one per worker, not the string {hosts!r}; "
            "for a comma-separated string, pass hosts.split(',')."
        )
    default_port = DEFAULT_PORT if port is None else check_port(port)
    hosts = list(hosts)
    if not hosts:
        raise ValueError(
            "hosts is empty: give one 'host' or 'host:port' per worker, e.g. ['node1', 'node2']."
        )
    addresses = [parse_host(spec, default_port) for spec in hosts]
    first_seen: dict[str, int] = {}
    for i, address in enumerate(addresses):
        j = first_seen.setdefault(address.lower(), i)
        if j != i:
            host, _, taken = address.rpartition(":")
            other = int(taken) + 1 if int(taken) < 65535 else int(taken) - 1
            raise ValueError(
                f"hosts {j} and {i} are both {address!r}: two workers cannot share a port. "
                f"Give workers on the same machine different ports, e.g. "
                f"'{host}:{taken}' and '{host}:{other}'."
            )
    return addresses


def worker_config(addresses: list[str], index: object, task_type: str) -> dict:
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"index must be an int (this worker's position in hosts), got {index!r}.")
    if not 0 <= index < len(addresses):
        raise ValueError(
            f"index {index} is out of range for {len(addresses)} hosts: "
            f"use 0 to {len(addresses) - 1}, the position of this machine in hosts."
        )
    return {
        "cluster": {task_type: list(addresses)},
        "task": {"type": task_type, "index": index},
    }


def check_target(script_target: object) -> str:
    """``FILE:FUNCTION`` or ``FILE``, the two forms ``python -m mirrorkit.worker`` takes."""
    usage = (
        "script_target must be 'path/to/train.py:function' (the file, a colon, then the name "
        "of the training function, e.g. 'train.py:train'), or a script path alone"
    )
    if not isinstance(script_target, str) or any(c in script_target for c in "\n\r\0"):
        raise ValueError(f"{usage}; got {script_target!r}.")
    path, colon, function = script_target.rpartition(":")
    if not colon:
        path, function = script_target, None
    if not path.strip() or (function is not None and not function.isidentifier()):
        raise ValueError(f"{usage}; got {script_target!r}.")
    return script_target


def check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be an int >= 1 (one worker each), got {value!r}.")
    return value


def check_line(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\n\r\0"):
        raise ValueError(f"{what} must be a non-empty string on one line, got {value!r}.")
    return value.strip()
