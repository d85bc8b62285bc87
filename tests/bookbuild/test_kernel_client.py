"""bookbuild.kernel_client: a cell's reply is taken when it arrives, whatever the timeout.

The late reply, reproduced twice: on bare sockets (a blocking send on the polled socket, as
jupyter_client's Session.send makes, takes the signal of a reply that has come in), and in a
real kernel, where an ipywidgets Output widget makes nbclient send while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from bookbuild.execute import notebook_client
from bookbuild.kernel_client import _CHANNEL, POLL_SLICE, SlicedShellChannel

TIMEOUT = 5  # seconds (an int: nbclient 0.10 takes no float), what a lost wake-up costs


async def _reply_while_busy(channel_class, timeout: float) -> tuple[dict, float]:
    """The reply's message and the seconds from the blocking send to its being taken."""
    session = Session()
    with tempfile.TemporaryDirectory() as folder:
        address = f"ipc://{folder}/shell"
        server = zmq.Context.instance().socket(zmq.ROUTER)
        server.bind(address)
        client = zmq.asyncio.Context.instance().socket(zmq.DEALER)
        client.connect(address)
        channel = channel_class(client, session)
        try:
            session.send(client, "execute_request")
            ident, *_ = server.recv_multipart()
            waiting = asyncio.create_task(channel.get_msg(timeout=timeout))
            await asyncio.sleep(0.05)  # the poll now waits on the socket's descriptor
            session.send(server, "execute_reply", ident=ident)
            time.sleep(0.2)  # the loop is busy when the reply comes in
            sent = time.monotonic()
            session.send(client, "comm_msg")  # a blocking shadow send, as nbclient's widget's
            reply = await waiting
            return reply, time.monotonic() - sent
        finally:
            client.close(linger=0)
            server.close(linger=0)


def test_a_blocking_send_hides_a_received_reply_from_one_long_poll():
    reply, seconds = asyncio.run(_reply_while_busy(_CHANNEL, TIMEOUT))
    assert reply["msg_type"] == "execute_reply"
    assert seconds > TIMEOUT - 0.5, "jupyter_client's own channel took it at once"


@pytest.mark.parametrize("timeout", [TIMEOUT, 600])
def test_the_sliced_channel_takes_the_reply_within_a_slice(timeout):
    reply, seconds = asyncio.run(_reply_while_busy(SlicedShellChannel, timeout))
    assert reply["msg_type"] == "execute_reply"
    assert seconds < POLL_SLICE + 0.5


def test_the_sliced_channel_still_times_out():
    async def nothing_comes() -> float:
        with tempfile.TemporaryDirectory() as folder:
            client = zmq.asyncio.Context.instance().socket(zmq.DEALER)
            client.connect(f"ipc://{folder}/shell")
            start = time.monotonic()
            with pytest.raises(Exception) as raised:
                await SlicedShellChannel(client, Session()).get_msg(timeout=0.6)
            client.close(linger=0)
            assert type(raised.value).__name__ == "Empty"
            return time.monotonic() - start

    assert 0.6 <= asyncio.run(nothing_comes()) < 0.6 + POLL_SLICE + 0.5


OUTPUT_CELL = """\
import time
import ipywidgets
out = ipywidgets.Output()
display(out)
with out:
    print("in the widget", flush=True)
time.sleep(0.5)  # the reply comes after the widget's output, as on any machine, but surely
"""


def _cell_times(timeout: float, monkeypatch, *, plain: bool = False) -> tuple[float, float]:
    """Run OUTPUT_CELL: seconds from its start to its reply reaching the client, and to its end.

    nbclient passes the widget's output on (a comm_msg on the shell socket) only once the
    reply is in that socket, as happens on a loaded machine: the race made certain.
    """
    from nbclient import NotebookClient
    from nbclient.output_widget import OutputWidget

    sync_state, seen = OutputWidget.sync_state, {}

    def late_sync_state(self):
        shell = zmq.Socket.shadow(self.kernel_client.shell_channel.socket.underlying)
        deadline = time.monotonic() + 30
        while not shell.get(zmq.EVENTS) & zmq.POLLIN and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.setdefault("arrived", time.monotonic())
        sync_state(self)

    monkeypatch.setattr(OutputWidget, "sync_state", late_sync_state)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(OUTPUT_CELL)])

    def starts(cell, cell_index):
        seen["start"] = time.monotonic()

    def executed(cell, cell_index, execute_reply):
        seen["done"] = time.monotonic()

    with tempfile.TemporaryDirectory() as cwd:
        if plain:  # nbclient with jupyter_client's own kernel client
            client = contextlib.nullcontext(
                NotebookClient(nb, timeout=timeout, kernel_name="python3")
            )
        else:
            client = notebook_client(nb, timeout=timeout, cwd=Path(cwd))
        with client as c:
            c.on_cell_execute, c.on_cell_executed = starts, executed
            c.execute()
    assert nb.cells[0].outputs, "the cell showed its widget"
    arrived, done = seen["arrived"] - seen["start"], seen["done"] - seen["start"]
    print(f"the reply reached the client after {arrived:.2f} s, the cell ended after {done:.2f} s")
    return arrived, done


def test_nbclient_alone_sleeps_through_the_reply_of_an_output_widget_cell(monkeypatch):
    arrived, done = _cell_times(TIMEOUT, monkeypatch, plain=True)
    assert arrived < TIMEOUT - 1.0, "the reply came early"
    assert done > TIMEOUT - 0.5, "and the cell ended only at its timeout"


@pytest.mark.parametrize("timeout", [TIMEOUT, 600])
def test_a_cell_completes_within_a_second_of_its_reply(timeout, monkeypatch):
    arrived, done = _cell_times(timeout, monkeypatch)
    assert done - arrived < 1.0
