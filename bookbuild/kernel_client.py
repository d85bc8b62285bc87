"""A kernel client that takes a cell's reply when it arrives, not when the wait times out.

nbclient waits for a cell's ``execute_reply`` with one poll of the shell socket, as long as
the cell's timeout. While it waits, an ipywidgets ``Output`` widget (``interact`` makes
one) has nbclient send a ``comm_msg`` on that same socket, and jupyter_client sends through
a blocking shadow of it (``Session.send``). ZeroMQ's file descriptor is edge-triggered: the
send takes the socket's pending signals, the reply's among them when the reply came in just
before, and asyncio's reader is never woken. The poll then returns only at its timeout,
with the reply in hand and no error: the cell ends a whole timeout late.
:class:`PromptKernelClient` polls the shell socket in slices of :data:`POLL_SLICE`
seconds; each new poll reads the socket's events, so a reply is taken within one slice.
``tests/bookbuild/test_kernel_client.py`` shows the lost wake-up and its end.

Example:
    >>> PromptKernelClient.shell_channel_class.default_value.__name__
    'SlicedShellChannel'
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import Type

POLL_SLICE = 0.25  # seconds: the longest a received reply can wait to be taken
# jupyter_client's asynchronous channel (its class name differs between 7.x and 8.x).
_CHANNEL = AsyncKernelClient.class_traits()["shell_channel_class"].default_value


class SlicedShellChannel(_CHANNEL):
    """The shell channel, waiting for a message in polls of at most :data:`POLL_SLICE` s."""

    async def get_msg(self, timeout: float | None = None) -> dict:
        """The next message, within ``timeout`` seconds (None: no limit).

        Raises:
            queue.Empty: If none came within ``timeout``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE if deadline is None else deadline - time.monotonic()
            if await self.socket.poll(int(max(0.0, min(POLL_SLICE, left)) * 1000)):
                return await self._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class PromptKernelClient(AsyncKernelClient):
    """nbclient's asynchronous kernel client with :class:`SlicedShellChannel` for the shell.

    Named by :func:`bookbuild.execute.notebook_client` as its kernel manager's
    ``client_class``.
    """

    shell_channel_class = Type(SlicedShellChannel)
