"""Who sends what to whom, step by step, in each all-reduce algorithm ``tf.distribute`` offers.

The algorithms, step by step: docs/design/measure.md.

Example:
    >>> from mirrorkit.measure.schedules import schedule
    >>> ring = schedule("collective", 4)
    >>> len(ring.steps), [step.phase for step in ring.steps][:4]
    (6, ['reduce-scatter', 'reduce-scatter', 'reduce-scatter', 'all-gather'])
    >>> ring.busiest_link_bytes(4_000_000)  # 6 steps of one 1 MB chunk
    6000000
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import refuse, require_count

#: What a receiver does with a chunk: add it to its own copy, or replace its copy with it.
COMBINES = ("add", "copy")


@dataclass(frozen=True)
class Transfer:
    """One chunk sent from one replica to another in one step.

    Attributes:
        source: The sending replica.
        target: The receiving replica.
        chunk: Which chunk of the tensor (0 when the algorithm sends whole tensors).
        combine: ``"add"`` (the receiver adds it to its copy) or ``"copy"`` (replaces it).

    Example:
        >>> from mirrorkit.measure.schedules import Transfer
        >>> Transfer(0, 1, 3, "add").label()
        '0→1 chunk 3 (add)'
    """

    source: int
    target: int
    chunk: int
    combine: str

    def label(self) -> str:
        """``"0→1 chunk 3 (add)"``: who sends which chunk to whom, and what the receiver does."""
        return f"{self.source}→{self.target} chunk {self.chunk} ({self.combine})"


@dataclass(frozen=True)
class Step:
    """One step of a schedule: transfers that happen at the same time.

    Attributes:
        phase: The algorithm's name for this part (``"reduce-scatter"``, ``"broadcast"``...).
        transfers: What moves. Several transfers into one replica are added in list order.
        what: One sentence saying what the step does.
    """

    phase: str
    transfers: tuple[Transfer, ...]
    what: str


@dataclass(frozen=True)
class Schedule:
    """The steps of one all-reduce algorithm on ``replicas`` replicas.

    Attributes:
        algorithm: A name from ``ALL_REDUCE_ALGORITHMS``.
        replicas: How many replicas take part.
        chunks: How many chunks the tensor is cut into.
        steps: The steps, in order.

    Example:
        >>> from mirrorkit.measure.schedules import schedule
        >>> one = schedule("one_device", 4)
        >>> [len(step.transfers) for step in one.steps], one.chunk_bounds(10)
        ([3, 3], [(0, 10)])
    """

    algorithm: str
    replicas: int
    chunks: int
    steps: tuple[Step, ...]

    def chunk_bounds(self, length: int) -> list[tuple[int, int]]:
        """``(start, stop)`` of each chunk of a tensor of ``length`` elements.

        Chunks differ in length by at most one element (as ``numpy.array_split`` cuts).

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> schedule("collective", 4).chunk_bounds(10)
            [(0, 3), (3, 6), (6, 8), (8, 10)]
        """
        size, extra = divmod(int(length), self.chunks)
        edges = list(accumulate(size + (c < extra) for c in range(self.chunks)))
        return list(zip([0, *edges[:-1]], edges, strict=True))

    def step_link_bytes(self, length: int, itemsize: int = 1) -> list[int]:
        """Per step, the bytes through the busiest replica's link in one direction.

        A replica's link carries what it sends and what it receives; the busiest is the
        replica, and direction, with the most bytes in that step. ``length`` is how many
        elements of ``itemsize`` bytes each replica's tensor holds (or its bytes, with the
        default ``itemsize=1``).

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> schedule("one_device", 4).step_link_bytes(100)  # replica 0 receives 3, sends 3
            [300, 300]
        """
        sizes = [(hi - lo) * itemsize for lo, hi in self.chunk_bounds(length)]
        out = []
        for step in self.steps:
            sent = [0] * self.replicas
            received = [0] * self.replicas
            for t in step.transfers:
                sent[t.source] += sizes[t.chunk]
                received[t.target] += sizes[t.chunk]
            out.append(max(*sent, *received))
        return out

    def busiest_link_bytes(self, length: int, itemsize: int = 1) -> int:
        """Each step's busiest link's bytes, added over the steps (links differ from step to step).

        With a time per step of ``alpha + bytes / bandwidth``, the all-reduce takes
        ``len(steps) * alpha + busiest_link_bytes(nbytes) / bandwidth``. Arguments as for
        :meth:`step_link_bytes`.

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> [schedule("collective", n).busiest_link_bytes(1200) for n in (2, 3, 4)]
            [1200, 1600, 1800]
        """
        return sum(self.step_link_bytes(length, itemsize))

    def sent_bytes(self, length: int, itemsize: int = 1) -> list[int]:
        """Bytes each replica sends over the whole all-reduce.

        Arguments as for :meth:`step_link_bytes`.

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> schedule("collective", 4).sent_bytes(400)  # 2 (n - 1) / n = 1.5 times 400
            [600, 600, 600, 600]
        """
        sizes = [(hi - lo) * itemsize for lo, hi in self.chunk_bounds(length)]
        sent = [0] * self.replicas
        for step in self.steps:
            for t in step.transfers:
                sent[t.source] += sizes[t.chunk]
        return sent

    def received_bytes(self, length: int, itemsize: int = 1) -> list[int]:
        """Bytes each replica receives over the whole all-reduce.

        Arguments as for :meth:`step_link_bytes`.

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> schedule("one_device", 4).received_bytes(100)  # replica 0 gathers 3 tensors
            [300, 100, 100, 100]
        """
        sizes = [(hi - lo) * itemsize for lo, hi in self.chunk_bounds(length)]
        received = [0] * self.replicas
        for step in self.steps:
            for t in step.transfers:
                received[t.target] += sizes[t.chunk]
        return received

    def holders(self) -> tuple[tuple[tuple[frozenset, ...], ...], ...]:
        """Before the first step and after each: per replica and chunk, whose values it sums.

        ``holders()[k][r][c]`` is the set of replicas whose values chunk ``c`` on replica ``r``
        holds after ``k`` steps; it depends on the schedule alone, not on the values.

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> ring = schedule("collective", 3)
            >>> sorted(ring.holders()[1][1][0])  # replica 1, chunk 0: 0's values plus its own
            [0, 1]
        """
        return self._holders

    @cached_property
    def _holders(self) -> tuple[tuple[tuple[frozenset, ...], ...], ...]:
        held = [[frozenset({r})] * self.chunks for r in range(self.replicas)]
        out = [tuple(map(tuple, held))]
        for step in self.steps:
            before = [list(row) for row in held]  # transfers of a step send what was there
            for t in step.transfers:
                sent = before[t.source][t.chunk]
                held[t.target][t.chunk] = (
                    held[t.target][t.chunk] | sent if t.combine == "add" else sent
                )
            out.append(tuple(map(tuple, held)))
        return tuple(out)

    def left_out(self) -> tuple[int, ...]:
        """Replicas whose values never reach the result (an odd count in hierarchical copy).

        Example:
            >>> from mirrorkit.measure.schedules import schedule
            >>> schedule("hierarchical_copy", 3).left_out(), schedule("collective", 3).left_out()
            ((2,), ())
        """
        reached = frozenset.intersection(*(c for row in self.holders()[-1] for c in row))
        return tuple(r for r in range(self.replicas) if r not in reached)


def schedule(algorithm: str, replicas: int) -> Schedule:
    """The steps of ``algorithm`` on ``replicas`` replicas.

    Args:
        algorithm: A name from ``ALL_REDUCE_ALGORITHMS``: ``"collective"`` and ``"nccl"``
            play the ring, ``"one_device"`` and ``"hierarchical_copy"`` play TensorFlow's
            own ``ReductionToOneDevice`` and ``HierarchicalCopyAllReduce``.
        replicas: How many replicas, at least 2.

    Returns:
        A :class:`Schedule`.

    Raises:
        TypeError: If ``replicas`` is not an int.
        ValueError: If ``algorithm`` is unknown or ``replicas < 2``.

    Example:
        >>> from mirrorkit.measure.schedules import schedule
        >>> for step in schedule("hierarchical_copy", 4).steps:
        ...     print(step.phase, "|", ", ".join(t.label() for t in step.transfers))
        reduce in groups | 1→0 chunk 0 (add), 3→2 chunk 0 (add)
        reduce across groups | 2→0 chunk 0 (add)
        broadcast across groups | 0→2 chunk 0 (copy)
        broadcast in groups | 0→1 chunk 0 (copy), 2→3 chunk 0 (copy)
    """
    if algorithm not in ALL_REDUCE_ALGORITHMS:
        known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
        must = f"an all-reduce algorithm; choose from {known}"
        refuse("algorithm", algorithm, must=must, write="algorithm='collective'", error=ValueError)
    write = "replicas=4 (an all-reduce needs at least 2 replicas: run mk.simulate_replicas(4))"
    replicas = require_count("replicas", replicas, minimum=2, write=write)
    build = {"one_device": _one_device, "hierarchical_copy": _hierarchical}.get(algorithm, _ring)
    chunks, steps = build(replicas)
    return Schedule(algorithm, replicas, chunks, tuple(s for s in steps if s.transfers))


def _ring(n: int) -> tuple[int, list[Step]]:
    steps = []
    for s in range(n - 1):
        transfers = tuple(Transfer(r, (r + 1) % n, (r - s) % n, "add") for r in range(n))
        steps.append(
            Step(
                "reduce-scatter",
                transfers,
                f"each replica passes one chunk to the next, which adds its own: "
                f"the chunk each replica received now sums {s + 2} replicas",
            )
        )
    for s in range(n - 1):
        transfers = tuple(Transfer(r, (r + 1) % n, (r + 1 - s) % n, "copy") for r in range(n))
        steps.append(
            Step(
                "all-gather",
                transfers,
                f"each replica passes a complete chunk to the next, which keeps it: "
                f"every replica now has {s + 2} of {n} complete chunks",
            )
        )
    return n, steps


def _one_device(n: int) -> tuple[int, list[Step]]:
    gather = tuple(Transfer(r, 0, 0, "add") for r in range(1, n))
    back = tuple(Transfer(0, r, 0, "copy") for r in range(1, n))
    return 1, [
        Step("reduce", gather, "every replica sends its tensor to replica 0, which adds them"),
        Step("broadcast", back, "replica 0 sends the sum back to every replica"),
    ]


def _hierarchical(n: int) -> tuple[int, list[Step]]:
    half = n // 2
    groups = (range(0, half), range(half, 2 * half))
    lost = f" (replica {n - 1} is in neither group)" if n % 2 else ""
    return 1, [
        Step(
            "reduce in groups",
            tuple(Transfer(r, g[0], 0, "add") for g in groups for r in g[1:]),
            f"replicas 0-{half - 1} send to replica 0 and replicas {half}-{2 * half - 1} to "
            f"replica {half}, which add them{lost}",
        ),
        Step(
            "reduce across groups",
            (Transfer(half, 0, 0, "add"),),
            f"replica {half} sends its group's sum to replica 0, which adds it",
        ),
        Step(
            "broadcast across groups",
            (Transfer(0, half, 0, "copy"),),
            f"replica 0 sends the total to replica {half}",
        ),
        Step(
            "broadcast in groups",
            tuple(
                Transfer(0 if r < half else half, r, 0, "copy") for r in range(1, n) if r != half
            ),
            f"replicas 0 and {half} send the total to the rest of their group",
        ),
    ]
