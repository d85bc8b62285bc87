"""The worker CLI's diagnosis: peers probed, records in words, TensorFlow errors in a few lines."""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest

from mirrorkit.cluster import _flight


@pytest.fixture
def listening():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.mark.parametrize(
    ("address", "state"),
    [
        ("127.0.0.1:1", "not listening (connection refused)"),
        ("no-such-host.invalid:2222", "unknown host 'no-such-host.invalid'"),
        ("node1", "not an address (expected 'host:port')"),
        ("node1:port", "not an address (expected 'host:port')"),
        (":2222", "not an address (expected 'host:port')"),
    ],
)
def test_probe_says_why_nothing_answers(address, state):
    assert _flight.probe(address) == state


@pytest.fixture
def grpc_server():
    """A real gRPC server, as TensorFlow's servers are."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    server = grpc.server(ThreadPoolExecutor(1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


@pytest.fixture
def answers_http():
    """A program that answers every connection with an HTTP/1.1 error, then hangs up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():
        with contextlib.suppress(OSError):
            while True:
                connection, _ = server.accept()
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                connection.close()

    threading.Thread(target=answer, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_probe_and_join_report_see_a_listening_peer(grpc_server):
    assert _flight.probe(grpc_server) == "listening"
    config = {"cluster": {"chief": [grpc_server], "worker": ["127.0.0.1:1"]}}
    report = _flight.join_report(config, "worker", 0, 30)
    assert f"chief 0 at {grpc_server}: listening" in report
    assert "(worker 0 of 2 waited for its peers)" in report
    assert "Every peer is listening, yet the cluster did not form" in report


@pytest.mark.parametrize("program", ["listening", "answers_http"])
def test_a_peers_port_held_by_another_program_is_named_so(program, request):
    address = request.getfixturevalue(program)  # one never answers, one answers HTTP/1.1
    config = {"cluster": {"worker": [address, "127.0.0.1:1"]}}
    report = _flight.join_report(config, "worker", 1, 30)
    port = address.rpartition(":")[2]
    assert (
        f"worker 0 at {address}: listening, but not as a TensorFlow server: another program "
        "holds the port"
    ) in report
    assert (
        f"Another program holds worker 0's port {port} (it does not answer as a gRPC server "
        "would), so that task could not start its server there. Stop that program, or give the "
        "task a free port in every worker's TF_CONFIG."
    ) in report
    assert "compare the workers' TF_CONFIG" not in report


def test_a_record_before_the_first_step_and_outside_tensorflow():
    record = _flight.Record(None, None, "train.py:3 `load()`", False, 50.0)
    assert record.describe(60.0) == "no step finished yet; now at train.py:3 `load()`"


def test_a_tensorflow_error_names_the_learners_line_and_the_peer(listening):
    import tensorflow as tf

    def step():
        raise tf.errors.UnavailableError(
            None, None, f"Collective ops is aborted by: ipv4:{listening}: Connection reset"
        )

    with pytest.raises(tf.errors.UnavailableError) as caught:
        step()
    config = {"cluster": {"worker": ["127.0.0.1:1", listening]}}
    text = _flight.failure_report(caught.value, config, ("worker", 0))
    first, named, advice = text.splitlines()
    assert first.startswith("mirrorkit.worker: worker 0 failed at test_flight.py:")
    assert "`raise tf.errors.UnavailableError(`" in first
    assert first.endswith(
        f"UnavailableError: Collective ops is aborted by: ipv4:{listening}: Connection reset"
    )
    assert named == f"  {listening} is worker 1 in this worker's TF_CONFIG: listening"
    assert advice.startswith("Check that this address is where worker 1 runs")
