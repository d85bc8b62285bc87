"""See which examples each replica receives when a real strategy distributes a dataset.

Every example needs an integer id (``dataset.enumerate()`` before ``.batch(...)`` adds one):
see :func:`preview_input`.

Example:
    >>> import tensorflow as tf
    >>> import mirrorkit as mk
    >>> preview = mk.preview_input(mk.make_strategy(), tf.data.Dataset.range(4).batch(2))
    >>> preview.global_batch, preview.total_steps
    (2, 2)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mirrorkit._validate import refuse, require_count, require_int, require_strategy
from mirrorkit.checks import batch_split
from mirrorkit.checks._distributed_reading import (
    SCAN_LIMIT,
    batched_twice,
    not_a_dataset,
    read_steps,
    recording,
    static_batch_size,
    without_ids,
)
from mirrorkit.report.render import Line, Report, Reported

#: Auto-shard policies (``tf.data.experimental.AutoShardPolicy``) -> what each one does.
AUTO_SHARD_POLICIES: dict[str, str] = {
    "AUTO": ("The default: shard by FILE when the pipeline reads files, otherwise by DATA."),
    "FILE": (
        "Each worker reads its own subset of the input files; needs at least as many "
        "files as workers."
    ),
    "DATA": ("Every worker reads the whole dataset and keeps only its share of the elements."),
    "HINT": "Shard only where the pipeline calls shard(SHARD_HINT, SHARD_HINT).",
    "OFF": "No sharding: every worker reads, and trains on, the whole dataset.",
}

FULL = "full"
PARTIAL = "partial"
EMPTY = "EMPTY"

_SHOWN_IDS = 8

_DROP = "batch(..., drop_remainder=True), which drops the examples that do not fill a batch"
_REPEAT = (
    "dataset.repeat() with model.fit(..., steps_per_epoch=examples // global_batch), "
    "which keeps every batch full and uses every example"
)


@dataclass(frozen=True)
class ReplicaBatch:
    """The batch one replica received at one step.

    Attributes:
        step: The step, counted from 0.
        replica: The replica that received it.
        device: Where the batch was delivered, e.g. ``"CPU:1"``.
        ids: The ids of its examples, in order.
        shapes: The shape of each component of the element, in ``tf.nest`` order.
        status: ``"full"``, ``"partial"`` (fewer examples than a full per-replica batch)
            or ``"EMPTY"`` (no example at all).

    Example:
        >>> from mirrorkit import ReplicaBatch
        >>> batch = ReplicaBatch(0, 1, "CPU:1", (2, 3), ((2,),), "full")
        >>> batch.size
        2
    """

    step: int
    replica: int
    device: str
    ids: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    status: str

    @property
    def size(self) -> int:
        """How many examples the replica received."""
        return len(self.ids)


@dataclass(frozen=True, repr=False)
class InputPreview(Reported):
    """What :func:`preview_input` returns; prints as text and renders as HTML.

    Attributes:
        method: ``"experimental_distribute_dataset"`` or
            ``"distribute_datasets_from_function"``.
        num_replicas: The strategy's ``num_replicas_in_sync``.
        global_batch: Examples in a full step across all replicas (``None`` if unknown).
        per_replica_batch: Examples in a full batch of one replica (``None`` if unknown).
        total_steps: Steps in the whole dataset, or ``None`` when it repeats forever or
            its end was not found.
        auto_shard_policy: The dataset's ``AutoShardPolicy`` name, e.g. ``"AUTO"``.
        fetch_to_device: ``InputOptions.experimental_fetch_to_device``.
        batches: One :class:`ReplicaBatch` per replica and step previewed.
        warnings: Problems that would reach training, each with its fix.
        notes: Sentences that explain the rest of the report.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> preview = mk.preview_input(mk.make_strategy(), tf.data.Dataset.range(4).batch(2))
        >>> [batch.ids for batch in preview.batches]
        [(0, 1), (2, 3)]
    """

    method: str
    num_replicas: int
    global_batch: int | None
    per_replica_batch: int | None
    total_steps: int | None
    auto_shard_policy: str
    fetch_to_device: bool
    batches: tuple[ReplicaBatch, ...]
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def divisible(self) -> bool | None:
        """Whether the global batch divides evenly by the number of replicas."""
        if self.global_batch is None:
            return None
        return self.global_batch % self.num_replicas == 0

    @property
    def partial(self) -> tuple[ReplicaBatch, ...]:
        """The batches smaller than a full per-replica batch, but not empty."""
        return tuple(b for b in self.batches if b.status == PARTIAL)

    @property
    def empty(self) -> tuple[ReplicaBatch, ...]:
        """The batches with no example at all."""
        return tuple(b for b in self.batches if b.status == EMPTY)

    @property
    def ok(self) -> bool:
        """``True`` when nothing needs fixing before training."""
        return not self.warnings

    def ids_by_step(self) -> dict[int, list[tuple[int, ...]]]:
        """Each previewed step's ids, one tuple per replica in replica order."""
        steps: dict[int, list[tuple[int, ...]]] = {}
        for batch in self.batches:
            steps.setdefault(batch.step, []).append(batch.ids)
        return steps

    def _headline(self) -> list[str]:
        n = self.num_replicas
        over = f"over {n} replica{'' if n == 1 else 's'}"
        if self.global_batch is None:
            split = f"{n} replicas; the batch size could not be read from the pipeline"
        elif self.divisible:
            split = (
                f"global batch {self.global_batch} {over} = {self.global_batch // n} per replica"
            )
        else:
            split = (
                f"global batch {self.global_batch} {over}: "
                f"does NOT divide evenly (up to {self.per_replica_batch} per replica)"
            )
        steps = "unknown" if self.total_steps is None else str(self.total_steps)
        policy = self.auto_shard_policy
        if self.method == "distribute_datasets_from_function":
            policy += " (not applied to a dataset function)"
        return [
            f"{self.method}: {split}",
            f"steps in the dataset: {steps}; auto-shard policy: {policy}; "
            f"fetch to device: {self.fetch_to_device}",
        ]

    def _columns(self) -> list[tuple[str, list[str]]]:
        rows = self._rows_with_gaps()
        return [
            ("step", [r[0] for r in rows]),
            ("replica", [r[1] for r in rows]),
            ("device", [r[2] for r in rows]),
            ("examples", [r[3] for r in rows]),
            ("ids", [r[4] for r in rows]),
            ("shapes", [r[5] for r in rows]),
            ("batch", [r[6] for r in rows]),
        ]

    def _rows_with_gaps(self) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = []
        previous = None
        for b in self.batches:
            if previous is not None and b.step > previous + 1:
                rows.append(("...", "", "", "", "", "", ""))
            previous = b.step
            shapes = " ".join(str(s) for s in b.shapes)
            rows.append(
                (str(b.step), str(b.replica), b.device, str(b.size), _ids(b.ids), shapes, b.status)
            )
        return rows

    def report(self) -> Report:
        """The preview as a report: what was fed, one row per replica and step, warnings."""
        return Report(
            headline=tuple(self._headline()),
            columns=self._columns(),
            lines=(
                *(Line(w, tone="warn", label="WARNING") for w in self.warnings),
                *(Line(n) for n in self.notes),
            ),
            cell_tones={"batch": {PARTIAL: "warn", EMPTY: "bad"}},
        )


def preview_input(
    strategy,
    dataset_or_fn,
    *,
    steps: int = 3,
    input_options=None,
) -> InputPreview:
    """Distribute a dataset with the real strategy and show what each replica receives.

    A ``tf.data.Dataset`` goes to ``strategy.experimental_distribute_dataset``: it must
    be batched with the **global** batch size, which TensorFlow splits among the
    replicas. A function goes to ``strategy.distribute_datasets_from_function``: it is
    called with a ``tf.distribute.InputContext`` and returns a dataset batched with the
    **per-replica** batch size. Either way the first ``steps`` steps are read; a
    finite dataset of at most 1000 steps is read to its end as well, so that its last
    step (where partial and empty batches appear) is shown too.

    Every example needs an integer id (see the module docstring): the ``"id"`` entry of
    a dict, the first component of a tuple, or the element itself.

    Args:
        strategy: A ``tf.distribute.Strategy``.
        dataset_or_fn: A batched ``tf.data.Dataset``, or a function of a
            ``tf.distribute.InputContext`` that returns one.
        steps: How many steps to show from the start, at least 1.
        input_options: A ``tf.distribute.InputOptions`` passed on to the strategy.

    Returns:
        An :class:`InputPreview`; it prints as text and shows as HTML in notebooks.

    Raises:
        TypeError: If ``strategy``, ``dataset_or_fn``, ``steps`` or ``input_options`` has
            the wrong type, a function does not return a ``tf.data.Dataset``, or no
            integer ids can be found in the elements.
        ValueError: If ``steps < 1`` or the elements are not batched.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> preview = mk.preview_input(strategy, tf.data.Dataset.range(5).batch(2))
        >>> print(preview)  # doctest: +ELLIPSIS
        experimental_distribute_dataset: global batch 2 over 1 replica = 2 per replica
        steps in the dataset: 3; auto-shard policy: AUTO; fetch to device: True
        step  replica  device  examples  ids     shapes  batch
        0     0        CPU:0   2         [0, 1]  (2,)    full
        1     0        CPU:0   2         [2, 3]  (2,)    full
        2     0        CPU:0   1         [4]     (1,)    partial
        WARNING: a partial global batch at step 2: 1 of 2 examples. ...
    """
    import tensorflow as tf

    require_strategy(strategy, "mk.preview_input(strategy, dataset)")
    if require_int("steps", steps, must="an int", write="steps=3") < 1:
        refuse("steps", steps, must="at least 1", write="steps=3", error=ValueError)
    if input_options is not None and not isinstance(input_options, tf.distribute.InputOptions):
        refuse(
            "input_options",
            input_options,
            must="a tf.distribute.InputOptions",
            write="input_options=tf.distribute.InputOptions(experimental_fetch_to_device=False)",
        )
    options = input_options or tf.distribute.InputOptions()
    n = strategy.num_replicas_in_sync

    if isinstance(dataset_or_fn, tf.data.Dataset):
        method = "experimental_distribute_dataset"
        dataset = dataset_or_fn
        if (error := without_ids(dataset.element_spec, tf, "the dataset")) is not None:
            raise error
        distributed = strategy.experimental_distribute_dataset(dataset, options)
        per_replica_input = False
    elif callable(dataset_or_fn):
        method = "distribute_datasets_from_function"
        made: list = []
        distributed = strategy.distribute_datasets_from_function(
            recording(dataset_or_fn, made, tf), options
        )
        dataset = made[0]
        per_replica_input = True
    else:
        raise TypeError(not_a_dataset(dataset_or_fn))

    twice = batched_twice(dataset.element_spec)
    batch = None if twice else static_batch_size(dataset)
    raw, total_steps = read_steps(strategy, distributed, steps, dataset, per_replica_input, n, tf)
    sizes = [len(ids) for _, per_replica in raw for ids, _, _ in per_replica]
    if per_replica_input:
        per_replica_batch = batch or max(sizes, default=0) or None
        global_batch = per_replica_batch * n if per_replica_batch else None
    else:
        totals = [sum(len(ids) for ids, _, _ in per_replica) for _, per_replica in raw]
        global_batch = batch or max(totals, default=0) or None
        per_replica_batch = batch_split.per_replica_batch(global_batch, n) if global_batch else None

    batches = tuple(
        ReplicaBatch(
            step=step,
            replica=replica,
            device=device,
            ids=ids,
            shapes=shapes,
            status=_status(len(ids), per_replica_batch),
        )
        for step, per_replica in raw
        for replica, (ids, shapes, device) in enumerate(per_replica)
    )
    policy = dataset.options().experimental_distribute.auto_shard_policy
    policy_name = tf.data.experimental.AutoShardPolicy(policy).name
    preview = InputPreview(
        method=method,
        num_replicas=n,
        global_batch=global_batch,
        per_replica_batch=per_replica_batch,
        total_steps=total_steps,
        auto_shard_policy=policy_name,
        fetch_to_device=bool(options.experimental_fetch_to_device),
        batches=batches,
    )
    twice_warning = () if twice is None else (_batched_twice(preview, per_replica_input),)
    return dataclasses.replace(
        preview,
        warnings=twice_warning + _warnings(preview, per_replica_input),
        notes=_notes(preview, per_replica_input, batch is None and not twice, steps),
    )


def _batched_twice(p: InputPreview, per_replica_input: bool) -> str:
    """The warning for elements batched twice: what each replica got at the first step."""
    first = [b for b in p.batches if b.step == p.batches[0].step]
    got = ", ".join(f"replica {b.replica}: {b.size} examples {b.shapes[0]}" for b in first)
    fix = (
        "context.get_per_replica_batch_size(global_batch) in the dataset function"
        if per_replica_input
        else "the global batch size"
    )
    return (
        f"the dataset is batched twice: each element holds batches of batches (ids of shape "
        f"(batch, batch, ...)), so the replicas get whole batches of batches, not examples. "
        f"At step {first[0].step}: {got}. Call .batch() once, with {fix}."
    )


def preview_split(
    examples: int,
    global_batch: int,
    num_replicas: int,
    *,
    steps: int = 3,
    devices=None,
) -> InputPreview:
    """The preview of ``Dataset.range(examples).batch(global_batch)``, worked out, not run.

    What :func:`preview_input` returns for that dataset given to
    ``experimental_distribute_dataset`` by a ``MirroredStrategy`` of ``num_replicas``
    replicas on one worker (auto-shard policy AUTO, the default), computed with
    :func:`~mirrorkit.checks.batch_split.replica_batch_sizes` and no TensorFlow, so that it
    runs in the browser labs too. Each example's id is its position.

    Args:
        examples: The examples in the dataset, at least 1.
        global_batch: The batch size given to ``.batch()``, at least 1.
        num_replicas: The strategy's replicas, at least 1.
        steps: How many steps to show from the start; the last step is shown too.
        devices: The replicas' device names; by default ``CPU:0``, ``CPU:1``..., the
            logical devices of ``mk.simulate_replicas``.

    Returns:
        An :class:`InputPreview`, equal to what :func:`preview_input` gives on those devices.

    Raises:
        TypeError: If a count is not an int.
        ValueError: If a count is below 1, or ``devices`` does not name one per replica.

    Example:
        >>> from mirrorkit.checks.input_preview import preview_split
        >>> preview = preview_split(10, 4, 4)
        >>> preview.ids_by_step()
        {0: [(0,), (1,), (2,), (3,)], 1: [(4,), (5,), (6,), (7,)], 2: [(8,), (9,), (), ()]}
        >>> [batch.status for batch in preview.batches if batch.step == 2]
        ['full', 'full', 'EMPTY', 'EMPTY']
    """
    require_count("examples", examples, write="examples=50")
    require_count("global_batch", global_batch, write="global_batch=16")
    require_count("num_replicas", num_replicas, write="num_replicas=4")
    if require_int("steps", steps, must="an int", write="steps=3") < 1:
        refuse("steps", steps, must="at least 1", write="steps=3", error=ValueError)
    devices = tuple(f"CPU:{r}" for r in range(num_replicas)) if devices is None else devices
    if len(devices) != num_replicas:
        must = f"one device name per replica ({num_replicas})"
        refuse("devices", devices, must=must, write="devices=None", error=ValueError)
    total = -(-examples // global_batch)
    shown = list(range(min(steps, total)))
    if total > steps and total <= SCAN_LIMIT:  # preview_input reads a short dataset to its end
        shown.append(total - 1)
    per_replica = batch_split.per_replica_batch(global_batch, num_replicas)
    batches = []
    for step in shown:
        start = step * global_batch
        size = min(global_batch, examples - start)
        for replica, count in enumerate(batch_split.replica_batch_sizes(size, num_replicas)):
            batches.append(
                ReplicaBatch(
                    step=step,
                    replica=replica,
                    device=devices[replica],
                    ids=tuple(range(start, start + count)),
                    shapes=((count,),),
                    status=_status(count, per_replica),
                )
            )
            start += count
    preview = InputPreview(
        method="experimental_distribute_dataset",
        num_replicas=num_replicas,
        global_batch=global_batch,
        per_replica_batch=per_replica,
        total_steps=total if total <= SCAN_LIMIT else None,
        auto_shard_policy="AUTO",
        fetch_to_device=True,
        batches=tuple(batches),
    )
    return dataclasses.replace(
        preview, warnings=_warnings(preview, False), notes=_notes(preview, False, False, steps)
    )


def _status(size: int, per_replica_batch: int | None) -> str:
    if size == 0:
        return EMPTY
    if per_replica_batch and size < per_replica_batch:
        return PARTIAL
    return FULL


def _ids(ids: tuple[int, ...]) -> str:
    if len(ids) <= _SHOWN_IDS:
        return "[" + ", ".join(map(str, ids)) + "]"
    return "[" + ", ".join(map(str, ids[:3])) + ", ..., " + ", ".join(map(str, ids[-2:])) + "]"


# ---------------------------------------------------------------- explaining


def _steps_text(steps: list[int]) -> str:
    return ("step " if len(steps) == 1 else "steps ") + ", ".join(map(str, steps))


def _warnings(p: InputPreview, per_replica_input: bool) -> tuple[str, ...]:
    out = []
    n = p.num_replicas
    if not per_replica_input and p.divisible is False:
        sizes = [b.size for b in p.batches if b.step == p.batches[0].step]
        good = batch_split.even_global_batch(p.global_batch, n)
        out.append(
            f"the global batch of {p.global_batch} examples does not divide by {n} replicas, "
            f"so every full step is split unevenly ({', '.join(map(str, sizes))}) and some "
            f"replicas wait for others. Batch by a multiple of {n}, e.g. {good} = "
            f"per-replica batch x strategy.num_replicas_in_sync."
        )
    steps_by_status: dict[str, list[int]] = {PARTIAL: [], EMPTY: []}
    for step, ids in p.ids_by_step().items():
        size = sum(len(i) for i in ids)
        full = p.global_batch or 0
        if size < full:
            steps_by_status[PARTIAL].append(step)
    if steps_by_status[PARTIAL]:
        step = steps_by_status[PARTIAL][-1]
        size = sum(len(i) for i in p.ids_by_step()[step])
        if per_replica_input:
            fix = (
                f"In the dataset function, batch with drop_remainder=True, or {_REPEAT} "
                "(repeat before batching)."
            )
        else:
            fix = f"Use {_DROP}, or {_REPEAT}."
        out.append(
            f"a partial global batch at {_steps_text(steps_by_status[PARTIAL])}: {size} of "
            f"{p.global_batch} examples. The dataset does not hold a whole number of global "
            f"batches, so its last step is short. {fix}"
        )
    empty_steps = sorted({b.step for b in p.empty})
    if empty_steps:
        replicas = sorted({b.replica for b in p.empty})
        if per_replica_input:
            fix = (
                "Give every step one full batch per replica: batch with drop_remainder=True "
                "and repeat() the dataset, so it never runs out in the middle of a step."
            )
        elif p.divisible is False:
            fix = f"Batch by a multiple of {n} replicas, and avoid a short last batch."
        else:
            fix = f"Avoid the short last batch: {_DROP}, or {_REPEAT}."
        out.append(
            f"EMPTY per-replica batches at {_steps_text(empty_steps)} (replica"
            f"{'s' if len(replicas) > 1 else ''} {', '.join(map(str, replicas))}): those "
            "replicas still run the step, with zero examples: a plain per-replica mean loss is "
            "NaN there, and the step's few examples are weighted wrongly unless the loss is "
            f"divided by the number of examples the step really holds. {fix}"
        )
    return tuple(out)


def _notes(p: InputPreview, per_replica_input: bool, no_batch_found: bool, steps: int):
    notes = []
    if per_replica_input:
        notes.append(
            "distribute_datasets_from_function: each batch of the function's dataset goes "
            "whole to one replica, in turn; TensorFlow does not rebatch it, and does not "
            "auto-shard it either (shard it yourself with context.input_pipeline_id)."
        )
    else:
        notes.append(
            "experimental_distribute_dataset: each global batch is split along its first "
            "dimension into one piece per replica."
        )
        if no_batch_found:
            notes.append(
                "TensorFlow found no .batch() in this pipeline, so it splits whatever the "
                "elements' first dimension is; make sure that dimension really is the batch."
            )
    if p.total_steps is None and p.batches:
        notes.append(
            "The dataset repeats forever or is longer than the preview reads: only the "
            f"first {steps} step(s) are shown."
        )
    policy = p.auto_shard_policy
    if not per_replica_input:
        what = AUTO_SHARD_POLICIES.get(policy, "")
        notes.append(
            f"Auto-shard policy {policy}: {what} It decides how several workers share the "
            "input; on one worker, as here, every example still reaches exactly one replica."
        )
    return tuple(notes)
