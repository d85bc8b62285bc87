"""The end of a hosted notebook's set-up (Colab and the like): `dot`, and a restart if needed.

Why these two steps remain after pip: docs/design/core.md, "Hosted notebooks".

Example:
    >>> from mirrorkit.hosted import replaced_in_memory
    >>> replaced_in_memory({"numpy": "2.0.2"}, {"numpy": "2.1.0"}, ["numpy"], {"numpy": ["numpy"]})
    [('numpy', '2.0.2', '2.1.0')]
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping

APT_TIMEOUT = 600  # seconds for `apt-get update` and `apt-get install graphviz` together

_RESTART = (
    "Restart the kernel (Colab: Runtime > Restart session; Jupyter: Kernel > Restart Kernel), "
    "then run the notebook from the top: the set-up cell will find everything installed."
)


def replaced_in_memory(
    before: Mapping[str, str],
    after: Mapping[str, str],
    imported: Iterable[str],
    distributions_of: Mapping[str, Iterable[str]],
) -> list[tuple[str, str, str]]:
    """The distributions pip replaced whose modules this process had already imported.

    Args:
        before: ``{distribution name: version}`` before pip ran.
        after: The same after pip ran.
        imported: Names of the modules imported so far (``sys.modules``).
        distributions_of: ``{top-level module: distribution names}``, as
            ``importlib.metadata.packages_distributions()`` gives it.

    Returns:
        ``(distribution, old version, new version)`` for each such distribution, sorted.

    Example:
        >>> from mirrorkit.hosted import replaced_in_memory
        >>> replaced_in_memory(
        ...     before={"ipywidgets": "7.7.1", "numpy": "2.0.2"},
        ...     after={"ipywidgets": "8.1.9", "numpy": "2.0.2", "mirrorkit": "0.1.0"},
        ...     imported=["ipywidgets", "ipywidgets.widgets", "numpy"],
        ...     distributions_of={"ipywidgets": ["ipywidgets"], "numpy": ["numpy"]},
        ... )
        [('ipywidgets', '7.7.1', '8.1.9')]
    """
    tops = {name.partition(".")[0] for name in imported}
    loaded = {dist for top in tops for dist in distributions_of.get(top, ())}
    key = _normalized
    old = {key(name): (name, version) for name, version in before.items()}
    new = {key(name): version for name, version in after.items()}
    return sorted(
        (name, version, new[k])
        for k, (name, version) in old.items()
        if k in new and new[k] != version and k in {key(d) for d in loaded}
    )


def finish_setup(before: Mapping[str, str], *, install_dot: bool = True) -> list[str]:
    """Print what the hosted set-up did, install ``dot`` if it can, and say if a restart is due.

    Args:
        before: ``{distribution name: version}`` of every installed distribution, taken
            right before pip ran (the set-up cell takes it with ``importlib.metadata``).
        install_dot: Install graphviz with ``apt-get`` when ``dot`` is missing and this
            process runs as root (as on Colab). ``False`` only reports it.

    Returns:
        The lines printed.

    Example:
        >>> import importlib.metadata
        >>> from mirrorkit.hosted import finish_setup
        >>> now = {d.name: d.version for d in importlib.metadata.distributions()}
        >>> lines = finish_setup(now, install_dot=False)  # doctest: +ELLIPSIS
        mirrorkit ... are installed; TensorFlow ... and Keras ... left as installed.
    """
    after = {d.name: d.version for d in importlib.metadata.distributions()}
    lines = [_installed_line(before, after)]
    lines += _dot_lines(install_dot)
    replaced = replaced_in_memory(
        before, after, list(sys.modules), importlib.metadata.packages_distributions()
    )
    if replaced:
        changes = ", ".join(f"{name} {old} -> {new}" for name, old, new in replaced)
        lines.append(
            f"pip replaced packages this kernel had already imported ({changes}). {_RESTART}"
        )
    for line in lines:
        print(line)
    return lines


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _installed_line(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    was = {_normalized(name): version for name, version in before.items()}
    now = {_normalized(name): version for name, version in after.items()}
    line = (
        f"mirrorkit {now.get('mirrorkit')} and mirrorbook-widgets "
        f"{now.get('mirrorbook-widgets')} are installed"
    )
    # How the message names a distribution: the two frameworks by label, the rest as pip does.
    labels = {_normalized(name): name for name in before}
    labels |= {"tensorflow": "TensorFlow", "keras": "Keras"}
    kept = [
        f"{labels[key]} {now.get(key)}"
        for key in ("tensorflow", "keras")
        if was.get(key) == now.get(key)
    ]
    # Every distribution that was there before (ipywidgets, numpy, ...), not only the two.
    changed = [
        f"{labels[key]} {was[key]} -> {now.get(key)}"
        for key in sorted(was)
        if now.get(key) != was[key]
    ]
    # What pip added besides the two (their dependencies that were missing), by name.
    added = [
        f"{key} {now[key]}"
        for key in sorted(set(now) - set(was) - {"mirrorkit", "mirrorbook-widgets"})
    ]
    if added:
        line += f" (with {', '.join(added)})"
    if kept:
        line += f"; {' and '.join(kept)} left as installed"
    if changed:
        line += f"; pip changed {' and '.join(changed)} to fit mirrorkit's supported range"
    return line + "."


def _dot_lines(install: bool) -> list[str]:
    if shutil.which("dot"):
        return []
    can_apt = os.name == "posix" and os.geteuid() == 0 and shutil.which("apt-get")
    if install and can_apt:
        try:
            for command in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "graphviz"],
            ):
                subprocess.run(command, check=True, capture_output=True, timeout=APT_TIMEOUT / 2)
        except (OSError, subprocess.SubprocessError) as error:
            return [f"graphviz's `dot` is missing and apt-get could not install it ({error})."]
        if shutil.which("dot"):
            return ["Installed graphviz (apt-get) for the topology diagrams."]
    return [
        "graphviz's `dot` is missing, so topology diagrams show a note instead of a drawing: "
        "install the system package graphviz (Debian/Ubuntu: apt-get install graphviz; "
        "conda: conda install -c conda-forge graphviz)."
    ]
