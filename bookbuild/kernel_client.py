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
    >>> PromptKernelManager().client().shell_channel_class.__name__
    'SlicedShellChannel'
"""

from __future__ import annotations

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

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
    """nbclient's asynchronous kernel client with :class:`SlicedShellChannel` for the shell."""

    shell_channel_class = Type(SlicedShellChannel)


class PromptKernelManager(AsyncKernelManager):
    """A kernel manager whose clients are :class:`PromptKernelClient`.

    :func:`bookbuild.execute.notebook_client` gives it to nbclient, which makes and owns it
    (and shuts its kernel down). A class, not a setting: jupyter_client 7 (Colab's) does not
    take ``client_class`` from a configuration.
    """

    client_class = DottedObjectName("bookbuild.kernel_client.PromptKernelClient")
    client_factory = Type(PromptKernelClient)  # its own default, not derived from the above
