"""Running chapters top to bottom in a kernel, and storing their outputs in the ``.ipynb``.

Example:
    >>> [(chapter["file"], len(nb.cells)) for chapter, nb in execute_chapters(
    ...     "01_strategy_scope.ipynb", into=Path("executed"))]  # doctest: +SKIP
    [('01_strategy_scope.ipynb', 48)]
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bookbuild.cells import write_generated_cells
from bookbuild.manifest import MANIFEST, load_manifest
from bookbuild.rerun import run_again
from bookbuild.shell import say


@contextlib.contextmanager
def notebook_client(nb, *, timeout: int, cwd: Path, allow_errors: bool = False) -> Iterator:
    r"""An nbclient client whose kernel talks over local sockets in a private temp folder.

    IPC sockets keep the kernel off the network entirely (the default is TCP on loopback,
    unencrypted); the folder and its sockets go away afterwards. Its kernel client takes each
    cell's reply as it arrives (:mod:`bookbuild.kernel_client`): nbclient's own can sleep
    through one until the cell's timeout.

    Args:
        nb: The notebook to run, an ``nbformat`` notebook; outputs are written into it.
        timeout: Seconds one cell may run.
        cwd: The kernel's working folder.
        allow_errors: Go on after a cell raises (its error becomes its output).

    Yields:
        An ``nbclient.NotebookClient`` with the ``python3`` kernel.

    Example:
        >>> import nbformat.v4 as v4
        >>> nb = v4.new_notebook(cells=[v4.new_code_cell("print(6 * 7)")])
        >>> with notebook_client(nb, timeout=60, cwd=Path(".")) as client:
        ...     _ = client.execute()
        >>> nb.cells[0].outputs[0].text
        '42\n'
    """
    from nbclient import NotebookClient
    from traitlets.config import Config

    from bookbuild.kernel_client import PromptKernelManager

    with tempfile.TemporaryDirectory(prefix="mirrorbook-kernel-") as sockets:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(sockets) / "kernel")
        yield NotebookClient(
            nb,
            config=config,
            kernel_manager_class=PromptKernelManager,
            kernel_name="python3",
            timeout=timeout,
            allow_errors=allow_errors,
            record_timing=False,
            resources={"metadata": {"path": str(cwd)}},
        )


def execute_chapters(
    *files: str, into: Path | None = None, allow_errors: bool = False, solutions: bool = False
) -> list:
    """Run chapters top to bottom (all, or those named) and store their outputs.

    Each chapter's generated cells are rewritten from the manifest first
    (:func:`~bookbuild.cells.write_generated_cells`).

    Args:
        *files: Chapter file names as the manifest lists them; none means every chapter.
        into: A folder to run each chapter in as a copy (as a notebook opened alone, on
            Colab say) and to write the executed copy to; the book's own files stay
            untouched. ``None`` executes the book's notebooks in place.
        allow_errors: Run every cell even after one raised (to see everything that
            changed, as :func:`bookbuild.claims.claim_changes` does).
        solutions: Then, in the same kernel, run the Solutions block and each exercise's
            check, which must pass (:func:`bookbuild.rerun.run_again`); the stored chapter
            does not keep those cells.

    Returns:
        ``(chapter, executed notebook)`` pairs, in manifest order.

    Raises:
        SystemExit: If a name is not a chapter, or a generated cell is missing.
        nbclient.exceptions.CellExecutionError: If a cell fails (with ``solutions``, or a check).

    Example:
        >>> execute_chapters("99_not_a_chapter.ipynb")
        Traceback (most recent call last):
        ...
        SystemExit: [dev] not all of ('99_not_a_chapter.ipynb',) are chapters in jupyter_book.toml
    """
    import nbformat

    manifest = load_manifest()
    chosen = [c for c in manifest["chapters"] if not files or c["file"] in files]
    if files and len(chosen) != len(set(files)):
        raise SystemExit(f"[dev] not all of {files} are chapters in {MANIFEST.name}")
    if into:
        Path(into).mkdir(parents=True, exist_ok=True)  # a folder named on the command line
    executed = []
    for chapter in chosen:
        path = chapter["path"]
        nb = nbformat.read(path, as_version=4)
        write_generated_cells(nb, manifest, chapter)
        target = Path(into) / path.name if into else path
        start, name = time.perf_counter(), path.relative_to(manifest["folder"])
        timeout = chapter["cell_timeout"]
        chapter_cells = list(nb.cells)
        if solutions:
            nb.cells.extend(run_again(nb, times=0))
        with notebook_client(
            nb, timeout=timeout, cwd=target.parent, allow_errors=allow_errors
        ) as client:
            client.execute()
        nb.cells = chapter_cells
        nbformat.write(nb, target)
        say(f"executed {name} in {time.perf_counter() - start:.1f} s")
        executed.append((chapter, nb))
    return executed
