"""What TensorFlow cannot tell before it starts: GPU memory, and which logical GPU is on which GPU.

Everything here except :func:`read_smi` is a pure function over data, so that the
decisions can be tested with device lists on a machine without a GPU. The two numbering
facts the functions rely on (CUDA's order against nvidia-smi's, and how logical GPUs are
numbered): docs/design/core.md, "GPU numbering".
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from typing import NamedTuple

SMI_COMMAND = (
    "nvidia-smi",
    "--query-gpu=index,name,memory.total",
    "--format=csv,noheader,nounits",
)
SMI_TIMEOUT = 10.0  # seconds; nvidia-smi can hang for a long time on a wedged driver


class SmiGpu(NamedTuple):
    """One line of ``nvidia-smi --query-gpu=index,name,memory.total``.

    Example:
        >>> SmiGpu(0, "Tesla T4", 15360).memory_mib
        15360
    """

    index: int
    name: str
    memory_mib: int | None  # None when nvidia-smi says "[N/A]" or "[Not Supported]"


def parse_smi(text: str) -> tuple[SmiGpu, ...]:
    """Read the CSV ``nvidia-smi --query-gpu=index,name,memory.total`` prints.

    Args:
        text: Its output with ``--format=csv,noheader,nounits``.

    Returns:
        One :class:`SmiGpu` per line, in nvidia-smi's (PCI bus) order.

    Raises:
        ValueError: If a line is not ``index, name, memory`` (nvidia-smi prints its
            errors on the same stream, e.g. when it cannot reach the driver).

    Example:
        >>> text = "0, Tesla T4, 15360\\n1, Tesla T4, [N/A]\\n"
        >>> parse_smi(text)  # doctest: +NORMALIZE_WHITESPACE
        (SmiGpu(index=0, name='Tesla T4', memory_mib=15360),
         SmiGpu(index=1, name='Tesla T4', memory_mib=None))
        >>> parse_smi("No devices were found")
        Traceback (most recent call last):
        ...
        ValueError: not 'index, name, memory.total': 'No devices were found'
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) < 3 or not fields[0].isdigit() or not all(fields[1:]):
            raise ValueError(f"not 'index, name, memory.total': {line.strip()!r}")
        memory = fields[-1]
        if memory.isdigit():
            memory_mib = int(memory)
        elif memory.startswith("["):  # [N/A], [Not Supported]
            memory_mib = None
        else:
            raise ValueError(f"memory.total is not a number of MiB: {line.strip()!r}")
        rows.append(SmiGpu(int(fields[0]), ", ".join(fields[1:-1]), memory_mib))
    if len({row.index for row in rows}) != len(rows):
        raise ValueError("nvidia-smi listed the same GPU index twice")
    return tuple(rows)


def read_smi(
    command: Sequence[str] = SMI_COMMAND, timeout: float = SMI_TIMEOUT
) -> tuple[tuple[SmiGpu, ...], str | None]:
    """Run nvidia-smi and read its GPU list; never raises.

    Args:
        command: The command to run (tests run stand-ins for nvidia-smi).
        timeout: Seconds to wait for it.

    Returns:
        ``(gpus, None)``, or ``((), reason)`` saying in a few words why there is no list.

    Example:
        >>> read_smi(["mirrorkit-no-such-program"])
        ((), 'nvidia-smi was not found')
    """
    try:
        done = subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return (), "nvidia-smi was not found"
    except subprocess.TimeoutExpired:
        return (), f"nvidia-smi did not answer within {timeout:g} s"
    except OSError as error:
        return (), f"nvidia-smi could not run: {error.strerror or error}"
    output = (done.stdout or "") + (done.stderr or "")
    first = output.strip().splitlines()[0][:120] if output.strip() else "no output"
    if done.returncode != 0:
        return (), f"nvidia-smi failed with exit status {done.returncode}: {first}"
    try:
        gpus = parse_smi(done.stdout)
    except ValueError as error:
        return (), f"nvidia-smi printed something unexpected ({error})"
    if not gpus:
        return (), "nvidia-smi listed no GPU"
    return gpus, None


def _model(name: str) -> str:
    return " ".join(name.split()).casefold()


def match_gpus(
    tf_names: Sequence[str | None],
    smi: Sequence[SmiGpu],
    cuda_visible_devices: str | None = None,
    cuda_device_order: str | None = None,
    *,
    ordinals: Sequence[int] | None = None,
) -> tuple[tuple[tuple[str | None, int | None], ...], str | None]:
    """The (name, memory in MiB) of each of TensorFlow's physical GPUs, from nvidia-smi's list.

    A GPU whose model nvidia-smi lists with a single memory size gets that size,
    whatever the order. Otherwise TensorFlow's ``/physical_device:GPU:k`` is matched
    with the ``k``-th GPU ``CUDA_VISIBLE_DEVICES`` names (every GPU when unset), which
    is nvidia-smi's index only when ``CUDA_DEVICE_ORDER=PCI_BUS_ID``. Anything less
    certain leaves the memory unknown: a wrong guess would give TensorFlow more memory
    than a GPU has.

    Args:
        tf_names: The model of each ``tf.config.list_physical_devices("GPU")`` entry, as
            ``tf.config.experimental.get_device_details`` gives it (``None`` if unknown).
        smi: nvidia-smi's list (see :func:`parse_smi`).
        cuda_visible_devices: The ``CUDA_VISIBLE_DEVICES`` variable, ``None`` if unset.
        cuda_device_order: The ``CUDA_DEVICE_ORDER`` variable, ``None`` if unset.
        ordinals: The ``k`` of each GPU's ``/physical_device:GPU:k`` name, CUDA's number
            for it (TensorFlow leaves out GPUs it cannot use, so ``k`` may skip some).
            ``None`` means ``0, 1, ...`` with every GPU CUDA sees in TensorFlow's list.

    Returns:
        ``(gpus, reason)``: ``gpus`` has one ``(name, memory_mib)`` per TensorFlow GPU
        (``memory_mib`` ``None`` where unknown) and ``reason`` says why memory is unknown,
        or is ``None``.

    Example:
        >>> t4 = SmiGpu(0, "Tesla T4", 15360)
        >>> match_gpus(["Tesla T4"], [t4])
        ((('Tesla T4', 15360),), None)
        >>> big, small = SmiGpu(0, "A", 40960), SmiGpu(1, "A", 2048)
        >>> match_gpus([None], [big, small], cuda_visible_devices="1")  # doctest: +ELLIPSIS
        (((None, None),), 'CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID...')
        >>> match_gpus([None], [big, small], "1", "PCI_BUS_ID")
        ((('A', 2048),), None)
    """
    names = list(tf_names)

    def unknown(reason: str):
        return tuple((name, None) for name in names), reason

    if not names:
        return (), None
    if not smi:
        return unknown("nvidia-smi listed no GPU")
    tokens = None
    if cuda_visible_devices is not None:
        tokens = [token.strip() for token in cuda_visible_devices.split(",")]
        if any(token.upper().startswith("MIG") for token in tokens):
            return unknown(
                "CUDA_VISIBLE_DEVICES names MIG instances, and nvidia-smi reports the memory "
                "of whole GPUs"
            )
    if len(names) > len(smi):
        return unknown(f"TensorFlow sees {len(names)} GPUs but nvidia-smi lists {len(smi)}")

    # By model: fine in any order if every GPU of that model has the same memory.
    if all(names):
        sizes: dict[str, set[int | None]] = {}
        for row in smi:
            sizes.setdefault(_model(row.name), set()).add(row.memory_mib)
        found = [sizes.get(_model(name), set()) for name in names]
        if all(len(size) == 1 and None not in size for size in found):
            return tuple((name, min(size)) for name, size in zip(names, found, strict=True)), None

    # By position: TensorFlow's /physical_device:GPU:k is CUDA's device k.
    if len(smi) > 1 and (cuda_device_order or "").strip().upper() != "PCI_BUS_ID":
        return unknown(
            "CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so it is "
            f"unclear which of the {len(smi)} GPUs nvidia-smi lists TensorFlow uses"
        )
    by_index = {row.index: row for row in smi}
    if tokens is None:
        order = sorted(by_index)
    else:
        order = []
        for token in tokens:  # CUDA ignores everything from the first entry it cannot use
            if token.upper().startswith("GPU-"):
                return unknown(
                    f"CUDA_VISIBLE_DEVICES={cuda_visible_devices} names GPUs by UUID, which "
                    "this nvidia-smi query does not show"
                )
            if not token.isdigit() or int(token) not in by_index or int(token) in order:
                break
            order.append(int(token))
    if ordinals is None and len(order) != len(names):
        return unknown(f"TensorFlow sees {len(names)} GPU(s) where nvidia-smi gives {len(order)}")
    ordinals = range(len(names)) if ordinals is None else list(ordinals)
    if len(ordinals) != len(names) or any(not 0 <= k < len(order) for k in ordinals):
        return unknown(f"TensorFlow's GPU numbers {list(ordinals)} are not among nvidia-smi's")
    rows = [by_index[order[k]] for k in ordinals]
    for name, row in zip(names, rows, strict=True):
        if name and _model(name) != _model(row.name):
            return unknown(f"TensorFlow's GPU {name!r} is {row.name!r} in nvidia-smi's list")
    if any(row.memory_mib is None for row in rows):
        return unknown("nvidia-smi does not report the memory of every GPU")
    return tuple(
        (name or row.name, row.memory_mib) for name, row in zip(names, rows, strict=True)
    ), None


def logical_to_physical(per_physical: Sequence[int]) -> tuple[int, ...]:
    """The physical GPU of each logical GPU, from how many logical GPUs each physical one has.

    Args:
        per_physical: For each of ``tf.config.list_physical_devices("GPU")`` in order,
            how many logical GPUs it holds: ``0`` if hidden, else the length of
            ``tf.config.get_logical_device_configuration(gpu)`` (``1`` when ``None``).

    Returns:
        ``physical[i]`` is the physical GPU index of logical ``GPU:i``.

    Example:
        >>> logical_to_physical([2, 0, 1])  # GPU 0 split in two, GPU 1 hidden
        (0, 0, 2)
    """
    return tuple(p for p, count in enumerate(per_physical) for _ in range(count))


_LOCAL_GPU = re.compile(r"(?:^|/)(?:device:)?gpu:(\d+)$", re.IGNORECASE)


def gpu_index(device: str) -> int | None:
    """The index of a local GPU device name, ``None`` for other devices.

    Args:
        device: A device name such as ``'/job:localhost/replica:0/task:0/device:GPU:1'``.

    Returns:
        The ``GPU:i`` index, or ``None`` for a CPU or another worker's device.

    Example:
        >>> gpu_index("/job:localhost/replica:0/task:0/device:GPU:1"), gpu_index("/gpu:0")
        (1, 0)
        >>> gpu_index("/device:CPU:0") is None, gpu_index("/job:worker/task:1/device:GPU:0")
        (True, None)
    """
    job = re.search(r"/job:([^/]+)", device)
    if job and job.group(1) != "localhost":
        return None
    found = _LOCAL_GPU.search(device.strip())
    return int(found.group(1)) if found else None


def shared_physical_gpus(
    devices: Sequence[str], per_physical: Sequence[int]
) -> dict[int, tuple[str, ...]]:
    """The physical GPUs that hold two or more of ``devices``, each with those devices.

    Args:
        devices: Replica device names.
        per_physical: Logical GPUs per physical GPU, as for :func:`logical_to_physical`.

    Returns:
        ``{physical GPU index: device names on it}`` for every physical GPU shared by
        replicas; empty when each replica has a physical GPU of its own.

    Example:
        >>> shared_physical_gpus(["/device:GPU:0", "/device:GPU:1", "/device:GPU:2"], [2, 1])
        {0: ('/device:GPU:0', '/device:GPU:1')}
        >>> shared_physical_gpus(["/device:GPU:0", "/device:GPU:1"], [1, 1])
        {}
    """
    physical = logical_to_physical(per_physical)
    on: dict[int, list[str]] = {}
    for device in devices:
        index = gpu_index(device)
        if index is not None and index < len(physical):
            on.setdefault(physical[index], []).append(device)
    return {p: tuple(names) for p, names in sorted(on.items()) if len(names) > 1}
