"""Whether the gpu job can run here: the NVIDIA GPUs ``nvidia-smi -L`` lists, or why none.

:func:`visible_gpus` decides from what nvidia-smi answered (data); :func:`ask_nvidia_smi` is
the one place that runs it. ``dev.py test`` asks once, so a machine without nvidia-smi (CI)
pays nothing and one with a GPU a second at most (a wedged driver: :data:`SMI_TIMEOUT`).

Example:
    >>> visible_gpus(SmiAnswer(found=False))
    ((), 'no NVIDIA GPU visible: nvidia-smi not found on PATH')
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import NamedTuple

SMI_LIST = ("nvidia-smi", "-L")  # one line per GPU: "GPU 0: Tesla T4 (UUID: GPU-...)"
SMI_TIMEOUT = 10.0  # seconds; nvidia-smi can hang on a wedged driver
_GPU_LINE = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?\s*$")
_NONE = "no NVIDIA GPU visible: "


class SmiAnswer(NamedTuple):
    """What ``nvidia-smi -L`` did: found or not, its exit status and what it printed.

    Attributes:
        found: Whether nvidia-smi is on PATH.
        status: Its exit status; None if it did not end within the timeout.
        output: Its standard output and error.
    """

    found: bool
    status: int | None = 0
    output: str = ""


def visible_gpus(
    answer: SmiAnswer, cuda_visible_devices: str | None = None, timeout: float = SMI_TIMEOUT
) -> tuple[tuple[str, ...], str | None]:
    r"""The GPUs nvidia-smi lists and TensorFlow may use, or why the gpu job cannot run.

    Args:
        answer: What ``nvidia-smi -L`` did (:func:`ask_nvidia_smi`).
        cuda_visible_devices: The ``CUDA_VISIBLE_DEVICES`` variable, None if unset: empty
            or ``-1`` hides every GPU from CUDA, and so from TensorFlow.
        timeout: The seconds nvidia-smi was given, for the reason.

    Returns:
        ``(names, None)`` with one model name per GPU in nvidia-smi's order, or ``((), reason)``
        where the reason starts with ``no NVIDIA GPU visible:`` and says what nvidia-smi did.

    Example:
        >>> listing = "GPU 0: Tesla T4 (UUID: GPU-1)\nGPU 1: Tesla T4 (UUID: GPU-2)\n"
        >>> visible_gpus(SmiAnswer(True, 0, listing))
        (('Tesla T4', 'Tesla T4'), None)
        >>> failed = "NVIDIA-SMI has failed because it couldn't communicate with the driver.\n"
        >>> visible_gpus(SmiAnswer(True, 9, failed))[1]  # doctest: +NORMALIZE_WHITESPACE
        "no NVIDIA GPU visible: nvidia-smi exited with status 9: NVIDIA-SMI has failed
        because it couldn't communicate with the driver."
        >>> visible_gpus(SmiAnswer(True, 0, listing), cuda_visible_devices="")[1]
        "no NVIDIA GPU visible: CUDA_VISIBLE_DEVICES='' hides nvidia-smi's 2 GPUs from CUDA"
    """
    if not answer.found:
        return (), _NONE + "nvidia-smi not found on PATH"
    if answer.status is None:
        return (), _NONE + f"nvidia-smi did not answer within {timeout:g} s"
    said = " ".join(answer.output.split())[:200] or "nothing"
    if answer.status != 0:
        return (), _NONE + f"nvidia-smi exited with status {answer.status}: {said}"
    names = tuple(
        found.group(2).strip()
        for line in answer.output.splitlines()
        if (found := _GPU_LINE.match(line.strip()))
    )
    if not names:
        return (), _NONE + f"nvidia-smi -L listed no GPU (it printed: {said})"
    if cuda_visible_devices is not None and cuda_visible_devices.strip() in ("", "-1"):
        hidden = f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r} hides nvidia-smi's"
        return (), _NONE + f"{hidden} {len(names)} GPU{'s' * (len(names) > 1)} from CUDA"
    return names, None


def ask_nvidia_smi(command: tuple[str, ...] = SMI_LIST, timeout: float = SMI_TIMEOUT) -> SmiAnswer:
    """Run ``nvidia-smi -L``; never raises.

    Args:
        command: The command (a test may give another program).
        timeout: Seconds to wait for it.

    Example:
        >>> ask_nvidia_smi(("mirrorbook-no-such-program",))
        SmiAnswer(found=False, status=0, output='')
    """
    if shutil.which(command[0]) is None:
        return SmiAnswer(found=False)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return SmiAnswer(found=True, status=None)
    except OSError as error:
        return SmiAnswer(found=True, status=-1, output=f"could not run: {error}")
    return SmiAnswer(found=True, status=done.returncode, output=done.stdout + done.stderr)
