"""What every scale-out configuration checks first: hosts, ports, counts, one-line strings.

Each refuses with a ValueError (wrong kinds too: these describe text written into files)
through :mod:`mirrorkit._validate`, naming the argument and what to write.

Example:
    >>> from mirrorkit.cluster.scaleout._arguments import worker_addresses
    >>> worker_addresses(["node1", "node2:2222"], None)
    ['node1:12345', 'node2:2222']
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Iterator, Sequence

from mirrorkit._validate import refuse, require_int, require_items, require_text

#: The port a worker listens on when its host is given without one.
DEFAULT_PORT = 12345


_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?"


_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


SECURITY_LINES = (
    "TensorFlow's gRPC server has no authentication and listens on all interfaces:",
    "keep port {port} on a private network or behind a firewall, never on the internet.",
)


@contextlib.contextmanager
def _wrong_kinds_as_values() -> Iterator[None]:
    """A helper's TypeError (a wrong kind) raised as a ValueError, as this module refuses all."""
    try:
        yield
    except TypeError as error:
        raise ValueError(str(error)) from None


def check_port(port: object, what: str = "port") -> int:
    """``port`` if it is an int from 1 to 65535, else a ValueError naming ``what``.

    Example:
        >>> from mirrorkit.cluster.scaleout._arguments import check_port
        >>> check_port(2222)
        2222
    """
    write = f"a free port such as {DEFAULT_PORT}"
    with _wrong_kinds_as_values():
        must = "an int from 1 to 65535"
        return require_int(what, port, must=must, write=write, minimum=1, maximum=65535)


def parse_host(spec: object, port: int) -> str:
    """One ``"host"`` or ``"host:port"`` -> ``"host:port"``, or a ValueError saying why not."""
    if not isinstance(spec, str):
        must = "a string such as 'node1:12345'"
        refuse("each host", spec, must=must, write="hosts=['node1', 'node2']", error=ValueError)
    text = spec.strip()
    malformed = f"the malformed host {spec!r}"
    if "://" in text:
        must = "a host name or address without a scheme"
        write = f"'node1' or 'node1:{port}'"
        refuse("host", must=must, got=malformed, write=write, error=ValueError)
    if text.startswith("["):  # [IPv6]:port
        match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", text)
        if match is None or not _is_ipv6(match.group(1)):
            must = "an IPv6 address in brackets"
            write = "an IPv6 address as '[addr]' or '[addr]:port', e.g. '[fd00::1]:12345'"
            refuse("host", must=must, got=malformed, write=write, error=ValueError)
        address, port_text = f"[{match.group(1)}]", match.group(2)
    elif text.count(":") > 1:
        must = f"an IPv6 address in brackets (put it in brackets, e.g. '[{text}]')"
        refuse("host", spec, must=must, write=f"'[{text}]:{port}'", error=ValueError)
    else:
        address, _, port_text = text.partition(":")
        if ":" in text and not port_text:
            got = f"{spec!r}, which ends with ':' but no port"
            must = "'host' or 'host:port'"
            refuse("host", must=must, got=got, write=f"'host:{port}'", error=ValueError)
        if not _HOSTNAME.fullmatch(address):
            must = "a host name or IPv4 address, optionally with ':port'"
            write = "'node1', 'node1.cluster.local:12345' or '10.0.0.5'"
            refuse("host", must=must, got=malformed, write=write, error=ValueError)
    if port_text is None or port_text == "":
        return f"{address}:{port}"
    if not re.fullmatch(r"[0-9]+", port_text):
        got = f"{spec!r}, whose port is not a number"
        refuse("host", must="'host:port'", got=got, write=f"'host:{port}'", error=ValueError)
    return f"{address}:{check_port(int(port_text), f'the port of host {spec!r}')}"


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def worker_addresses(hosts: Sequence[str], port: int | None) -> list[str]:
    """Validate ``hosts`` and return one ``host:port`` per worker, in order."""
    with _wrong_kinds_as_values():
        write = "hosts.split(',') for a comma-separated string"
        hosts = require_items("hosts", hosts, write=write, allow_empty=True)
    default_port = DEFAULT_PORT if port is None else check_port(port)
    if not hosts:
        must = "one 'host' or 'host:port' per worker"
        write = "hosts=['node1', 'node2']"
        refuse("hosts", must=must, got="[] (hosts is empty)", write=write, error=ValueError)
    addresses = [parse_host(spec, default_port) for spec in hosts]
    first_seen: dict[str, int] = {}
    for i, address in enumerate(addresses):
        j = first_seen.setdefault(address.lower(), i)
        if j != i:
            host, _, taken = address.rpartition(":")
            other = int(taken) + 1 if int(taken) < 65535 else int(taken) - 1
            refuse(
                "hosts",
                must="one host:port per worker (two workers cannot share a port)",
                got=f"a list in which hosts {j} and {i} are both {address!r}",
                write=f"'{host}:{taken}' and '{host}:{other}' for two workers on one machine",
                error=ValueError,
            )
    return addresses


def worker_config(addresses: list[str], index: object, task_type: str) -> dict:
    """The TF_CONFIG dict of worker ``index`` of the cluster ``addresses``."""
    last = len(addresses) - 1
    with _wrong_kinds_as_values():
        require_int(
            "index", index, must="an int (this worker's position in hosts)", write="index=0"
        )
    if not 0 <= index <= last:
        must = f"this machine's position in hosts (use 0 to {last})"
        got = f"{index}, out of range for {len(addresses)} hosts"
        refuse("index", must=must, got=got, write="index=0", error=ValueError)
    return {
        "cluster": {task_type: list(addresses)},
        "task": {"type": task_type, "index": index},
    }


def check_target(script_target: object) -> str:
    """``FILE:FUNCTION`` or ``FILE``, the two forms ``python -m mirrorkit.worker`` takes."""
    wrong = not isinstance(script_target, str) or any(c in script_target for c in "\n\r\0")
    if not wrong:
        path, colon, function = script_target.rpartition(":")
        if not colon:
            path, function = script_target, None
        wrong = not path.strip() or (function is not None and not function.isidentifier())
    if wrong:
        refuse(
            "script_target",
            script_target,
            must="'path/to/train.py:function' (the file, a colon, then the name of the training "
            "function), or a script path alone",
            write="'train.py:train'",
            error=ValueError,
        )
    return script_target


def check_count(value: object, what: str) -> int:
    """``value`` if it is an int of at least 1 (one worker each), else a ValueError.

    Example:
        >>> from mirrorkit.cluster.scaleout._arguments import check_count
        >>> check_count(4, "nodes")
        4
    """
    with _wrong_kinds_as_values():
        must = "an int >= 1 (one worker each)"
        return require_int(what, value, must=must, write=f"{what}=2", minimum=1)


def check_line(value: object, what: str) -> str:
    """``value`` stripped, if it is text on one line that is not empty, else a ValueError.

    Example:
        >>> from mirrorkit.cluster.scaleout._arguments import check_line
        >>> check_line(" gpu ", "partition")
        'gpu'
    """
    with _wrong_kinds_as_values():
        require_text(what, value, write=f"{what} on one line")
    if any(c in value for c in "\n\r\0"):
        must = "a non-empty string on one line"
        refuse(what, value, must=must, write=f"{what} on one line", error=ValueError)
    return value.strip()
