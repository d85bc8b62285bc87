"""The runner's results channel: JSON lines on a pipe, sealed by an HMAC with a late token.

The runner writes one JSON line per verdict. At the very end, once no student code can still
run (namespaces dropped, one thread, no trace function, no other process), it asks for a
token, which the grader sends on a second pipe only then, and writes a last line holding the
HMAC of every line it wrote. The grader accepts the lines only if the HMAC matches, there is
exactly one token request, and the verdicts are the expected ones: lines forged by student
code (which never sees the token) fail the HMAC. See docs/design/grading.md for what this
does not stop.
"""

from __future__ import annotations

import hashlib
import hmac
import json

# Bound at import (before any student code), so the runner writes and seals with these.
from hashlib import sha256
from hmac import new as _hmac
from json import dumps
from os import close, read, write

TOKEN_REQUEST = {"kind": "token?"}
MAX_BYTES = 8 * 1024 * 1024  # the grader stops reading a channel that says more


class Writer:
    """The runner's end: write lines, then seal them with the token."""

    def __init__(self, out_fd: int, token_fd: int) -> None:
        self._out, self._token, self._lines = out_fd, token_fd, []

    def write(self, **line) -> None:
        """Write one JSON line (and remember it for the seal)."""
        data = dumps(line).encode() + b"\n"
        self._lines.append(data)
        view = memoryview(data)
        while view:
            view = view[write(self._out, view) :]

    def seal(self) -> None:
        """Ask for the token, then write the HMAC of every line written."""
        self.write(**TOKEN_REQUEST)
        token = b""
        while chunk := read(self._token, 64):
            token += chunk
        digest = _hmac(token, b"".join(self._lines), sha256).hexdigest()
        self.write(kind="end", hmac=digest)
        close(self._out)


def verify(lines: list[bytes], token: bytes) -> tuple[list[dict], str]:
    """The grader's end: the lines if the seal holds.

    Args:
        lines: Every line read from the channel, in order.
        token: The token sent after the runner's request.

    Returns:
        ``(records, "")`` for a sealed channel (the records without the request and the seal),
        else ``([], why)``.

    Example:
        >>> import hmac, hashlib, json
        >>> body = [b'{"kind": "verdict"}\\n', b'{"kind": "token?"}\\n']
        >>> seal = hmac.new(b"t", b"".join(body), hashlib.sha256).hexdigest()
        >>> verify(body + [json.dumps({"kind": "end", "hmac": seal}).encode()], b"t")
        ([{'kind': 'verdict'}], '')
        >>> verify(body + [b'{"kind": "end", "hmac": "00"}'], b"t")[1]
        'the results are not sealed by the runner (forged lines?)'
    """
    try:
        records = [json.loads(line) for line in lines]
    except ValueError:
        return [], "a results line is not JSON (forged lines?)"
    if not records or not all(isinstance(r, dict) for r in records):
        return [], "the runner ended before it sealed its results"
    end = records[-1]
    if end.get("kind") != "end":
        return [], "the runner ended before it sealed its results"
    digest = hmac.new(token, b"".join(lines[:-1]), hashlib.sha256).hexdigest()
    if not token or not hmac.compare_digest(str(end.get("hmac", "")), digest):
        return [], "the results are not sealed by the runner (forged lines?)"
    requests = [r for r in records if r == TOKEN_REQUEST]
    if len(requests) != 1 or records[-2] != TOKEN_REQUEST:
        return [], "the token was asked for more than once (forged lines?)"
    return records[:-2], ""
