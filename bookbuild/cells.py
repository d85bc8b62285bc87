"""The cells every chapter carries, written from the manifest before each execution.

A chapter opens with a link to itself in Colab, then a set-up cell that installs mirrorkit and
its widgets where they are missing (Colab, Kaggle, a fresh JupyterHub), then its ``parameters``
cell. Each is found by its cell tag and rewritten, so the manifest stays their only source.

Example:
    >>> print(parameters_source({"replicas": 2, "seed": 0}).splitlines()[1])
    REPLICAS = 2
"""

from __future__ import annotations


def parameters_source(chapter: dict) -> str:
    """The source of a chapter's ``parameters`` cell.

    Args:
        chapter: One of :func:`~bookbuild.manifest.load_manifest`'s chapters.

    Returns:
        Python code setting ``REPLICAS`` and ``SEED`` from the chapter's settings.

    Example:
        >>> print(parameters_source({"replicas": 4, "seed": 42}))
        # Set from jupyter_book.toml when the book is built: change them there.
        REPLICAS = 4
        SEED = 42
    """
    return (
        "# Set from jupyter_book.toml when the book is built: change them there.\n"
        f"REPLICAS = {chapter['replicas']}\n"
        f"SEED = {chapter['seed']}"
    )


def setup_source(manifest: dict) -> str:
    """The source of every chapter's ``hosted-setup`` cell.

    Where mirrorwidgets is missing (Colab, Kaggle, a fresh JupyterHub), the cell installs
    mirrorkit and mirrorbook-widgets from the book's repository at the manifest's ref (its
    branch, or the release's tag), both
    from the same commit, and leaves TensorFlow alone (its installed release is in the
    supported range); ``mirrorkit.hosted.finish_setup`` then checks graphviz's ``dot`` and
    whether the running kernel must restart. ``MIRRORBOOK_SOURCE`` installs from a fork or a
    local clone instead. In the book's own environment the cell does nothing and prints
    nothing.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.

    Returns:
        The cell's Python code.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> source = setup_source(load_manifest())
        >>> [line for line in source.splitlines() if "default =" in line]
        ['    default = "git+https://github.com/mirrorbook/mirrorbook@main"']
    """
    book = manifest["book"]
    return (
        "# Colab and other hosted notebooks: install mirrorkit and its widgets where they are\n"
        "# missing (TensorFlow stays as it is). In the book's own environment this does nothing.\n"
        "import importlib.util\n"
        "\n"
        'if importlib.util.find_spec("mirrorwidgets") is None:\n'
        "    import importlib.metadata\n"
        "    import os\n"
        "    import subprocess\n"
        "    import sys\n"
        "\n"
        "    before = {d.name: d.version for d in importlib.metadata.distributions()}\n"
        f'    default = "git+{book["repository"]}@{book["ref"]}"\n'
        '    source = os.environ.get("MIRRORBOOK_SOURCE", default)\n'
        '    packages = [f"mirrorkit @ {source}", '
        'f"mirrorbook-widgets @ {source}#subdirectory=widgets"]\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *packages], '
        "check=True)\n"
        "    import mirrorkit.hosted\n"
        "\n"
        "    mirrorkit.hosted.finish_setup(before)"
    )


def colab_url(manifest: dict, chapter: dict) -> str:
    """Where Colab opens a chapter: its notebook in the book's repository, at the manifest's ref.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        chapter: One of its chapters.

    Returns:
        The ``https://colab.research.google.com/github/...`` address.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> manifest = load_manifest()
        >>> colab_url(manifest, manifest["chapters"][0])
        'https://colab.research.google.com/github/mirrorbook/mirrorbook/blob/main/book/01_strategy_scope.ipynb'
    """  # noqa: E501
    on_github = github_url(manifest, chapter).removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{on_github}"


def github_url(manifest: dict, chapter: dict) -> str:
    """A chapter's notebook in the book's repository on GitHub, at the manifest's ref.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> manifest = load_manifest()
        >>> github_url(manifest, manifest["chapters"][1])
        'https://github.com/mirrorbook/mirrorbook/blob/main/book/02_input_distribution.ipynb'
    """
    book = manifest["book"]
    path = chapter["path"].relative_to(manifest["folder"]).as_posix()
    return f"{book['repository']}/blob/{book['ref']}/{path}"


def colab_link_source(manifest: dict, chapter: dict) -> str:
    """The source of a chapter's ``open-in-colab`` markdown cell: a plain link, no image.

    Args:
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        chapter: One of its chapters.

    Returns:
        Markdown linking to :func:`colab_url`.

    Example:
        >>> from bookbuild.manifest import load_manifest
        >>> manifest = load_manifest()
        >>> colab_link_source(manifest, manifest["chapters"][0])  # doctest: +ELLIPSIS
        '[Open this chapter in Colab](https://colab.research.google.com/github/.../book/01_strategy_scope.ipynb) (its first code cell installs what the chapter needs there)'
    """  # noqa: E501
    return (
        f"[Open this chapter in Colab]({colab_url(manifest, chapter)}) "
        "(its first code cell installs what the chapter needs there)"
    )


# The generated cells in the order they open every chapter:
# tag -> (cell type, function of (manifest, chapter) that gives its source).
GENERATED_CELLS = {
    "open-in-colab": ("markdown", colab_link_source),
    "hosted-setup": ("code", lambda manifest, chapter: setup_source(manifest)),
    "parameters": ("code", lambda manifest, chapter: parameters_source(chapter)),
}


def write_generated_cells(nb, manifest: dict, chapter: dict) -> None:
    """Rewrite each of :data:`GENERATED_CELLS` in a notebook from the manifest.

    Args:
        nb: The chapter as an ``nbformat`` notebook; changed in place.
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns.
        chapter: The chapter ``nb`` is.

    Raises:
        SystemExit: If a generated cell is missing, is there twice, or has the wrong type.

    Example:
        >>> import nbformat.v4 as v4
        >>> from bookbuild.manifest import load_manifest
        >>> manifest = load_manifest()
        >>> chapter = manifest["chapters"][0]
        >>> nb = v4.new_notebook(cells=[
        ...     v4.new_markdown_cell("", metadata={"tags": ["open-in-colab"]}),
        ...     v4.new_code_cell("", metadata={"tags": ["hosted-setup"]}),
        ...     v4.new_code_cell("", metadata={"tags": ["parameters"]}),
        ... ])
        >>> write_generated_cells(nb, manifest, chapter)
        >>> nb.cells[2].source == parameters_source(chapter)
        True
        >>> del nb.cells[0]
        >>> write_generated_cells(nb, manifest, chapter)
        Traceback (most recent call last):
        ...
        SystemExit: [dev] 01_strategy_scope.ipynb needs exactly one markdown cell tagged 'open-in-colab'
    """  # noqa: E501
    for tag, (cell_type, source) in GENERATED_CELLS.items():
        cells = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
        if len(cells) != 1 or cells[0].cell_type != cell_type:
            raise SystemExit(
                f"[dev] {chapter['file']} needs exactly one {cell_type} cell tagged {tag!r}"
            )
        cells[0].source = source(manifest, chapter)
