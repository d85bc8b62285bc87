"""The gpu job of ``dev.py test``: the book on real NVIDIA GPUs, where nvidia-smi lists some.

Elsewhere (CI, this project's machines: none has a GPU) it is NOT RUN, with what nvidia-smi
said or that it is missing (:mod:`bookbuild.gpujob.visible`). Where it runs, its environment
(``.venvs/gpu``) is the book's at ``requirements/gpu.txt``: the lock's pins plus TensorFlow's
CUDA extra; its one stage after the set-up is ``dev.py _gpu`` (:mod:`bookbuild.gpujob.run`):
the checks decided by :mod:`~bookbuild.gpujob.plan`, carried out by
:mod:`~bookbuild.gpujob.probe`, judged by :mod:`~bookbuild.gpujob.verdicts`, written by
:mod:`~bookbuild.gpujob.report` into :data:`REPORT`. It has never run on a GPU.

Example:
    >>> from bookbuild.environments import book_env
    >>> job = gpu_job(book_env(), SmiAnswer(found=False))
    >>> job.result, job.detail
    ('NOT RUN', 'no NVIDIA GPU visible: nvidia-smi not found on PATH')
    >>> job = gpu_job(book_env(), SmiAnswer(True, 0, "GPU 0: Tesla T4 (UUID: GPU-1)"))
    >>> [stage.name for stage in job.stages], job.env.lock.name
    (['set-up', 'gpu checks'], 'gpu.txt')
"""

from __future__ import annotations

import os
from dataclasses import replace

from bookbuild import ROOT
from bookbuild.environments import REQUIREMENTS, VENVS, Env, ensure_env
from bookbuild.gpujob.visible import SmiAnswer, ask_nvidia_smi, visible_gpus
from bookbuild.jobs import Job
from bookbuild.lanes import Stage

GPU_LOCK = REQUIREMENTS / "gpu.txt"  # lock.txt's pins and TensorFlow's CUDA extra (gpu.in)
REPORT = ROOT / "test-artifacts" / "gpu-report.md"
CUDA = "tensorflow[and-cuda]"  # NVIDIA's CUDA, cuDNN and NCCL wheels, at GPU_LOCK's versions
# Expected seconds (no timing.py allowance yet: never run): the CUDA wheels are about 3 GB;
# the checks execute every chapter once and start a dozen TensorFlow processes.
SET_UP_SECONDS, CHECKS_SECONDS = 600, 1800


def gpu_job(book: Env, answer: SmiAnswer | None = None) -> Job:
    """The gpu job: set-up and ``dev.py _gpu``, or NOT RUN with why no GPU is visible.

    Args:
        book: The book's environment, which the gpu environment copies (its Python, its
            packages) with the CUDA extra added.
        answer: What ``nvidia-smi -L`` did; asked here when None.

    Example:
        >>> from bookbuild.environments import book_env
        >>> gpu_job(book_env(), SmiAnswer(True, 9, "NVIDIA-SMI has failed")).detail
        'no NVIDIA GPU visible: nvidia-smi exited with status 9: NVIDIA-SMI has failed'
    """
    what = (
        "NVIDIA GPUs, gpu.txt (lock.txt and TensorFlow's CUDA extra): device decisions, "
        "all-reduces, mixed precision, chapter 5's benchmark, every chapter and its claims; "
        f"{REPORT.relative_to(ROOT)}"
    )
    answer = ask_nvidia_smi() if answer is None else answer
    names, reason = visible_gpus(answer, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if reason:
        return Job(name="gpu", what=what, detail=reason)
    env = replace(book, path=VENVS / "gpu", lock=GPU_LOCK, packages=(*book.packages, CUDA))
    stages = [
        Stage("gpu", "set-up", lambda: ensure_env(env), weight=SET_UP_SECONDS),
        Stage(
            "gpu",
            "gpu checks",
            lambda: env.dev("_gpu", "--report", REPORT),
            after=("set-up",),
            weight=CHECKS_SECONDS,
        ),
    ]
    return Job(name="gpu", what=f"{len(names)} GPU(s): {what}", stages=stages, env=env)
