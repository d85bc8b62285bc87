"""A real Slurm on this machine: Debian's slurmctld, one slurmd per virtual host, munge.

The controller runs on host ``ctl``, each compute node on its own host
(:mod:`tests.virtual_hosts`), all from one ``slurm.conf`` in a test's folder, with munge's
socket and key there too: nothing of the machine's own Slurm or munge set-up is read or
changed. Commands (``sbatch``, ``squeue``, ``scancel``) run on ``ctl``.

Example:
    >>> import tempfile
    >>> with SlurmCluster(tempfile.mkdtemp(), nodes=2) as slurm:  # doctest: +SKIP
    ...     slurm.command("sinfo", "--noheader", "--format=%D %t")
    '2 idle'
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from mirrorkit.cluster import _procs
from tests.virtual_hosts import VirtualHosts, missing_tools

PROGRAMS = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "munged")
PACKAGES = "slurmctld slurmd slurm-client munge"
START_BOUND = 60.0  # seconds for the nodes to be idle
COMMAND_BOUND = 30.0


def missing() -> str | None:
    """Why a Slurm cannot be started here, or ``None``."""
    problem = missing_tools()
    if problem:
        return problem
    absent = [program for program in PROGRAMS if shutil.which(program) is None]
    if absent:
        return f"{', '.join(absent)} not on PATH (Debian: apt-get install {PACKAGES})"
    return None


def _config(folder: Path, hosts: VirtualHosts, nodes: list[str]) -> str:
    cpus = os.cpu_count() or 1
    return "\n".join(
        [
            "ClusterName=mirrorbook",
            f"SlurmctldHost=ctl({hosts.addresses['ctl']})",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={folder / 'munge.socket'}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool-%n'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd-%n.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'slurmd-%n.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/linear",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "ReturnToService=2",
            "SlurmdTimeout=30",
            "KillWait=5",
            "InactiveLimit=0",
            "MinJobAge=300",
            *(
                f"NodeName={n} NodeAddr={hosts.addresses[n]} CPUs={cpus} State=UNKNOWN"
                for n in nodes
            ),
            f"PartitionName=debug Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


class SlurmCluster:
    """A controller and ``nodes`` compute nodes (``node1``...), until closed.

    Args:
        folder: Where the configuration, state, logs and munge's socket live.
        nodes: How many compute nodes.
        hide: A folder each node but the first does not share (an empty one is mounted
            over it there), as a file server that one node cannot see.
    """

    def __init__(self, folder, nodes: int = 2, hide: str | None = None) -> None:
        self.folder = Path(folder)
        self.nodes = [f"node{k}" for k in range(1, nodes + 1)]
        self.hosts = VirtualHosts(["ctl", *self.nodes], self.folder / "hosts")
        self.hide = hide
        self.env = {**os.environ, "SLURM_CONF": str(self.folder / "slurm.conf")}

    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def start(self) -> None:
        """Start munge, the controller and the nodes; wait until every node is idle."""
        problem = missing()
        if problem:
            raise RuntimeError(problem)
        self.hosts.start()
        try:
            self._start_daemons()
        except BaseException:
            self.close()
            raise

    def _start_daemons(self) -> None:
        folder = self.folder
        (folder / "state").mkdir(parents=True, exist_ok=True)
        if self.hide:
            Path(self.hide).mkdir(parents=True, exist_ok=True)
        key = folder / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o400)
        (folder / "slurm.conf").write_text(_config(folder, self.hosts, self.nodes))
        log = open(folder / "daemons.log", "ab")  # noqa: SIM115 - the daemons keep it
        daemon = {"env": self.env, "stdout": log, "stderr": log}
        munge = [
            "munged", "--foreground", "--force", f"--key-file={key}",
            f"--socket={folder / 'munge.socket'}", f"--pid-file={folder / 'munged.pid'}",
            f"--log-file={folder / 'munged.log'}", f"--seed-file={folder / 'munge.seed'}",
        ]  # fmt: skip
        self.hosts.run("ctl", munge, **daemon)
        _wait_for(lambda: (folder / "munge.socket").exists(), "munged's socket", folder)
        self.hosts.run("ctl", ["slurmctld", "-D", "-i", "-f", str(folder / "slurm.conf")], **daemon)
        for index, node in enumerate(self.nodes):
            hide = [self.hide] if self.hide and index else []
            argv = ["slurmd", "-D", "-f", str(folder / "slurm.conf")]
            self.hosts.run(node, argv, hide=hide, **daemon)
        idle = f"{len(self.nodes)} idle"
        _wait_for(lambda: self._sinfo() == idle, f"{idle} nodes (sinfo)", folder)

    def _sinfo(self) -> str:
        try:
            return self.command("sinfo", "--noheader", "--format=%D %t", timeout=5)
        except (subprocess.SubprocessError, RuntimeError):
            return ""

    def command(self, *argv: str, timeout: float = COMMAND_BOUND, cwd=None, env=None) -> str:
        """Run a Slurm command on the controller's host; its output, stripped."""
        env = self.env if env is None else env
        run = self.hosts.run(
            "ctl", argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            out, err = run.communicate(timeout=timeout)
        finally:
            run.kill()
        if run.returncode:
            raise RuntimeError(f"{' '.join(argv)} exited with {run.returncode}: {err.decode()}")
        return out.decode().strip()

    def close(self) -> None:
        """End the controller, the nodes and every job's processes."""
        self.hosts.close()


def processes(marker: str) -> list[str]:
    """Each live process but this one whose command line holds ``marker``: ``"pid: cmd"``."""
    me = os.getpid()
    found = [pid for pid in _procs.processes_with(marker) if pid != me]
    return [f"{pid}: {(_procs.command_line(pid) or '').strip()}" for pid in found]


def _wait_for(ready, what: str, folder: Path) -> None:
    deadline = time.monotonic() + START_BOUND
    while not ready():
        if time.monotonic() > deadline:
            logs = "".join(
                f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                for p in sorted(folder.glob("*.log"))
            )
            raise RuntimeError(f"Slurm did not start: no {what} in {START_BOUND:.0f} s{logs}")
        time.sleep(0.2)
