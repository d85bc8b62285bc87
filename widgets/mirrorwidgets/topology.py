"""TopologyDiagram: where replicas and variables live, and the path an all-reduce takes.

Example:
    >>> import mirrorkit as mk
    >>> from mirrorwidgets import TopologyDiagram
    >>> TopologyDiagram(mk.make_strategy("one_device")).all_reduce
    'one_device'
"""

from __future__ import annotations

import ipywidgets
import traitlets

import mirrorkit as mk
from mirrorkit._validate import refuse
from mirrorkit.report import style
from mirrorwidgets._a11y import ThemedHTML, announce
from mirrorwidgets._render import GREY, container, esc, graphviz_svg
from mirrorwidgets._routes import device_label, hierarchical_groups, route
from mirrorwidgets._snapshot import SnapshotMixin, displayed

_COLORS = {"reduce": style.BLUE, "broadcast": style.PURPLE, "exchange": style.BAD}


def _algorithm_of(strategy) -> str:
    """Name (as in mirrorkit.ALL_REDUCE_ALGORITHMS) of the all-reduce ``strategy`` uses."""
    return _algorithm_name(getattr(strategy.extended, "_cross_device_ops", None))


def _algorithm_name(ops) -> str:
    """Name (as in mirrorkit.ALL_REDUCE_ALGORITHMS) of a ``tf.distribute`` cross-device ops."""
    names = {cls.__name__ for cls in type(ops).__mro__}
    if "NcclAllReduce" in names:
        return "nccl"
    if "HierarchicalCopyAllReduce" in names:
        return "hierarchical_copy"
    if "ReductionToOneDevice" in names:
        return "one_device"
    return "collective"


def _host_of(device: str) -> str:
    parts = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    return f"/job:{parts.get('job', 'localhost')}/task:{parts.get('task', '0')}"


def _not_a_strategy(strategy) -> str:
    got = type(strategy).__name__
    if isinstance(strategy, str) and strategy in mk.ALL_REDUCE_ALGORITHMS:
        todo = f"write strategy=mirrorkit.make_strategy({strategy!r})"
    elif callable(strategy) and getattr(strategy, "__name__", "") == "make_strategy":
        got, todo = "the function make_strategy", "call it: strategy=mirrorkit.make_strategy()"
    else:
        todo = "make one with strategy = mirrorkit.make_strategy() and pass it"
    return f"strategy must be a tf.distribute.Strategy, got {got}: {todo}."


def _algorithm_asked(all_reduce, tf) -> str | None:
    """``all_reduce`` if it is None or a name in mirrorkit.ALL_REDUCE_ALGORITHMS."""
    if all_reduce is None:
        return None
    known = ", ".join(repr(k) for k in mk.ALL_REDUCE_ALGORITHMS)
    if isinstance(all_reduce, tf.distribute.CrossDeviceOps):
        got = f"a {type(all_reduce).__name__} object"
        write = f"all_reduce={_algorithm_name(all_reduce)!r} (one of {known})"
        refuse("all_reduce", all_reduce, must="an algorithm's name", got=got, write=write)
    if not isinstance(all_reduce, str):
        must = f"an algorithm's name, one of {known}"
        got = type(all_reduce).__name__
        refuse("all_reduce", all_reduce, must=must, got=got, write="all_reduce='collective'")
    if all_reduce not in mk.ALL_REDUCE_ALGORITHMS:
        lower = all_reduce.strip().lower()
        hint = f" (names are lower case: {lower!r})" if lower in mk.ALL_REDUCE_ALGORITHMS else ""
        raise ValueError(f"unknown all_reduce {all_reduce!r}; choose one of {known}{hint}.")
    return all_reduce


def _name_of(variable) -> str:
    return getattr(variable, "path", None) or getattr(variable, "name", "v")


def _variable_names(variables) -> tuple[str, ...]:
    """The names of ``variables`` (None, a Keras model or layer, or a list of variables)."""
    if variables is None:
        return ()
    import keras
    import tensorflow as tf

    if isinstance(variables, keras.Layer):  # a model is a layer too
        items = variables.weights
    elif isinstance(variables, tf.Variable | keras.Variable):
        raise TypeError(
            "variables must be a Keras model or a list of variables, got a single "
            f"{type(variables).__name__} ({_name_of(variables)!r}): wrap it in a list, "
            "variables=[v]."
        )
    elif isinstance(variables, list | tuple):
        items = variables
    else:
        must = "a Keras model or a list of variables made under strategy.scope()"
        write = "variables=model or variables=model.weights"
        refuse("variables", variables, must=must, got=type(variables).__name__, write=write)
    for index, item in enumerate(items):
        if not isinstance(item, tf.Variable | keras.Variable):
            raise TypeError(
                f"variables[{index}] is {type(item).__name__} {item!r}, not a variable: "
                "pass the variables themselves (e.g. variables=model.weights), not their "
                "names or values."
            )
    return tuple(getattr(v, "path", None) or getattr(v, "name", "?") for v in items)


class TopologyDiagram:
    """A graphviz drawing of a live strategy: host, devices, replicas, variables, all-reduce path.

    Displays in any notebook (``_repr_svg_`` / ``_repr_html_``); :meth:`widget` gives an
    interactive form that switches between all-reduce algorithms.

    Args:
        strategy: A ``tf.distribute.Strategy`` (e.g. from ``mirrorkit.make_strategy``).
        all_reduce: Draw this algorithm's path (a key of ``mirrorkit.ALL_REDUCE_ALGORITHMS``);
            ``None`` draws the one ``strategy`` uses.
        variables: Optional model or list of variables created under ``strategy.scope()``;
            their count is shown on each device holding a copy.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``all_reduce`` is
            not a name (e.g. a ``tf.distribute.CrossDeviceOps``), or ``variables`` is
            neither a Keras model or layer nor a list of variables.
        ValueError: If ``all_reduce`` is not a known algorithm name.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import TopologyDiagram
        >>> diagram = TopologyDiagram(mk.make_strategy("one_device"))
        >>> diagram.all_reduce, len(diagram.devices)
        ('one_device', 1)
        >>> "<svg" in diagram._repr_svg_()
        True
    """

    def __init__(self, strategy, *, all_reduce: str | None = None, variables=None):
        import tensorflow as tf

        if not isinstance(strategy, tf.distribute.Strategy):
            raise TypeError(_not_a_strategy(strategy))
        all_reduce = _algorithm_asked(all_reduce, tf)
        self.strategy = strategy
        self.uses = _algorithm_of(strategy)
        self.all_reduce = all_reduce or self.uses
        self.devices = tuple(mk.replica_devices(strategy))
        self.variables = _variable_names(variables)
        self._given_variables = variables  # what widget() passes on (self.variables: names)
        self.hub = self._hub()
        self.edges = tuple(route(self.all_reduce, len(self.devices), self.hub))
        self._svg: str | None = None

    def _hub(self) -> int:
        ops = getattr(self.strategy.extended, "_cross_device_ops", None)
        target = getattr(ops, "reduce_to_device", None)
        if target:
            for i, device in enumerate(self.devices):
                if device_label(device) == device_label(target):
                    return i
        return 0  # ReductionToOneDevice() reduces onto the first destination device

    def source(self) -> str:
        """The graph in graphviz's dot language.

        Returns:
            Dot source text.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import TopologyDiagram
            >>> "digraph" in TopologyDiagram(mk.make_strategy()).source()
            True
        """
        return self._graph().source

    def _graph(self):
        import graphviz

        n = len(self.devices)
        graph = graphviz.Digraph("topology", engine="dot")
        graph.attr(rankdir="LR", fontname="Helvetica", fontsize="11", labeljust="l")
        graph.attr(
            "node",
            shape="box",
            style="rounded,filled",
            fillcolor=style.SURFACE,
            fontname="Helvetica",
            fontsize="10",
        )
        graph.attr("edge", fontname="Helvetica", fontsize="9")
        title = f"all-reduce: {self.all_reduce}"
        if self.all_reduce != self.uses:
            title += f" (this strategy uses {self.uses})"
        if n < 2:
            title += " - one replica, nothing to reduce"
        elif self.all_reduce == "hierarchical_copy":
            title += "\n(group leaders shown for the first tensor; they rotate per tensor)"
        graph.attr(label=title, labelloc="t")
        held = f"\nvariables: {len(self.variables)} mirrored copies" if self.variables else ""
        hosts: dict[str, list[int]] = {}
        for i, device in enumerate(self.devices):
            hosts.setdefault(_host_of(device), []).append(i)
        groups = hierarchical_groups(n) if self.all_reduce == "hierarchical_copy" else None
        for k, (host, members) in enumerate(hosts.items()):
            with graph.subgraph(name=f"cluster_host{k}") as sub:
                sub.attr(label=f"worker {host}", style="dashed", color=style.AXIS)
                if groups and len(hosts) == 1:
                    for g, group in enumerate(groups):
                        if not group:
                            continue
                        with sub.subgraph(name=f"cluster_group{g}") as box:
                            box.attr(label=f"group {g}", style="rounded", color=style.BLUE)
                            for i in group:
                                self._node(box, i, held)
                else:
                    for i in members:
                        self._node(sub, i, held)
        for a, b, step in self.edges:
            graph.edge(
                f"r{a}",
                f"r{b}",
                label=step,
                color=_COLORS[step],
                fontcolor=_COLORS[step],
                style="dashed" if step == "broadcast" else "solid",
            )
        return graph

    def _node(self, graph, i: int, held: str) -> None:
        hub = "\n(reduces here)" if self.all_reduce == "one_device" and i == self.hub else ""
        graph.node(f"r{i}", f"replica {i}\n{device_label(self.devices[i])}{held}{hub}")

    def svg(self) -> str:
        """The diagram as SVG text, drawn by graphviz's ``dot`` (cached).

        Returns:
            SVG markup.

        Raises:
            RuntimeError: If graphviz's ``dot`` program is not installed.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import TopologyDiagram
            >>> "replica 0" in TopologyDiagram(mk.make_strategy()).svg()
            True
        """
        if self._svg is None:
            self._svg = graphviz_svg(self._graph(), "diagram")
        return self._svg

    def __repr__(self) -> str:
        # What a text-only viewer shows, instead of an object address.
        devices = ", ".join(device_label(d) for d in self.devices)
        return (
            f"TopologyDiagram: {len(self.devices)} replica(s) on {devices}; "
            f"all-reduce {self.all_reduce!r}, {len(self.edges)} transfer(s) drawn"
        )

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_html_(self) -> str:
        svg = self.svg()
        body = svg[svg.find("<svg") :]
        about = mk.ALL_REDUCE_ALGORITHMS[self.all_reduce]
        twin = "".join(
            f"<li>replica {a} → replica {b}: {esc(step)}</li>" for a, b, step in self.edges
        )
        twin = (
            '<details class="mw-twin"><summary>the diagram as text</summary>'
            f"<ul>{twin}</ul></details>"
        )
        html = container(f"{body}<div style='color:{GREY}'>{esc(about)}</div>{twin}", "mw-topology")
        return displayed(html)  # in the page's theme, as every snapshot

    def summary(self) -> str:
        """The diagram in one line: the algorithm, the replicas, how many transfers.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import TopologyDiagram
            >>> TopologyDiagram(mk.make_strategy()).summary()[:24]
            'all-reduce: collective, '
        """
        n = len(self.devices)
        return (
            f"all-reduce: {self.all_reduce}, {n} replica{'' if n == 1 else 's'}, "
            f"{len(self.edges)} transfer{'' if len(self.edges) == 1 else 's'}"
        )

    def widget(self) -> TopologyView:
        """An interactive form of this diagram (switch all-reduce algorithms).

        Returns:
            A :class:`TopologyView`.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import TopologyDiagram
            >>> TopologyDiagram(mk.make_strategy()).widget().all_reduce
            'collective'
        """
        return TopologyView(self.strategy, all_reduce=self.all_reduce, variables=self._raw_vars)

    @property
    def _raw_vars(self):
        return self._given_variables


class TopologyView(SnapshotMixin, ipywidgets.VBox):
    """Widget form of :class:`TopologyDiagram`, with a menu to try each all-reduce algorithm.

    Args:
        strategy: A ``tf.distribute.Strategy``.
        all_reduce: Algorithm to draw first; ``None`` for the strategy's own.
        variables: Optional model or variables shown on each device.
        **kwargs: Any trait below, or ``ipywidgets.VBox`` layout options.

    Raises:
        TypeError, ValueError: As :class:`TopologyDiagram` raises them; setting
            ``all_reduce`` to an unknown name raises ``traitlets.TraitError``.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import TopologyView
        >>> view = TopologyView(mk.make_strategy())
        >>> view.all_reduce = "one_device"
        >>> "one_device" in view.snapshot_html()
        True
    """

    all_reduce = traitlets.Enum(
        tuple(mk.ALL_REDUCE_ALGORITHMS),
        default_value="collective",
        help="Which all-reduce algorithm's path is drawn.",
    )
    svg = traitlets.Unicode("", read_only=True, help="The current diagram as SVG markup.")

    def __init__(self, strategy, *, all_reduce: str | None = None, variables=None, **kwargs):
        diagram = TopologyDiagram(strategy, all_reduce=all_reduce, variables=variables)
        super().__init__(**kwargs)
        self._strategy = strategy
        self._variables = variables
        self.diagram = diagram
        self._menu = ipywidgets.ToggleButtons(  # each button named by its text, in 7 and 8
            options=list(mk.ALL_REDUCE_ALGORITHMS),
            value=self.diagram.all_reduce,
            description="all-reduce",
        )
        self._picture = ThemedHTML()
        self._about = ThemedHTML()
        self.children = [self._menu, self._picture, self._about]
        self.all_reduce = self.diagram.all_reduce
        traitlets.link((self._menu, "value"), (self, "all_reduce"))
        self._draw()

    @traitlets.observe("all_reduce")
    def _on_algorithm(self, change) -> None:
        if getattr(self, "diagram", None) is None:
            return
        variables = self.diagram._raw_vars
        self.diagram = TopologyDiagram(
            self._strategy, all_reduce=change["new"], variables=variables
        )
        self._draw()

    def _draw(self) -> None:
        html = self.diagram._repr_html_()
        self.set_trait("svg", self.diagram.svg())
        self._picture.value = html
        announce(self, self.diagram.summary())

    def snapshot_html(self) -> str:
        """The diagram currently shown, as HTML with inline SVG.

        Returns:
            An HTML fragment.

        Example:
            >>> import mirrorkit as mk
            >>> from mirrorwidgets import TopologyView
            >>> "<svg" in TopologyView(mk.make_strategy()).snapshot_html()
            True
        """
        return self.diagram._repr_html_()
