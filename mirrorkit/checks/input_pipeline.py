"""Check a learner's input pipeline: full, equal batches for every replica at every step.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_input_pipeline(..., mk.make_strategy())
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from mirrorkit._validate import require_count, require_flag, require_strategy
from mirrorkit.checks import batch_split
from mirrorkit.checks._distributed_reading import static_batch_size
from mirrorkit.checks.input_preview import AUTO_SHARD_POLICIES, preview_input
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica

_READ_LIMIT = 1000  # batches of a dataset function's dataset read at most


def check_input_pipeline(
    source,
    strategy,
    *,
    per_replica_batch: int | None = None,
    global_batch: int | None = None,
    auto_shard: str | None = None,
    repeats: bool = False,
    first_examples: int | None = None,
) -> CheckResult:
    """Check that ``source`` feeds every replica full, equal batches at every step.

    The real strategy distributes ``source`` (see :func:`mirrorkit.preview_input`); the
    check passes when the preview has no warning: the global batch divides by the
    replicas and no step brings a partial or empty batch. It also refuses what would only
    work for this data: a finite pipeline must batch with ``drop_remainder=True`` (a
    batch dimension of ``None`` in ``element_spec`` means nothing keeps the last batch
    full when the examples do not divide evenly), or, for a dataset, end with a ``filter``
    whose predicate keeps full batches and drops every shorter one. A dataset function is
    also called, as the strategy would on other machines, with
    ``tf.distribute.InputContext`` objects for other replica counts (1, 2 and the
    strategy's, where they divide ``global_batch``) and for two input pipelines: it must
    batch ``get_per_replica_batch_size(global_batch)`` each time, with a fixed batch size
    (a distributed dataset drops a short last step only then), and across the input
    pipelines read every example exactly once (each pipeline may leave out less than a
    batch at its end). With one replica there is nothing to split, so the check refuses.

    Args:
        source: The learner's batched ``tf.data.Dataset`` with example ids, or a dataset
            function of a ``tf.distribute.InputContext`` (``...``: not attempted).
        strategy: The strategy that distributes it.
        per_replica_batch: If given, the number of examples each replica must receive.
        global_batch: If given, the number of examples one step must bring across all
            replicas; required for a dataset function.
        auto_shard: If given, the ``AutoShardPolicy`` name the dataset must carry,
            e.g. ``"DATA"``.
        repeats: If True, the dataset must repeat forever (``dataset.repeat()``).
        first_examples: If given, the examples read must all have ids below it (the first
            ``first_examples`` examples, as ``take`` before ``batch`` or ``shard`` keeps),
            on one input pipeline and on each of two.

    Returns:
        A :class:`CheckResult`.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, or a batch size is
            not an int, or ``repeats`` is not a bool.
        ValueError: If a batch size is below 1, ``auto_shard`` is not one of
            :data:`mirrorkit.AUTO_SHARD_POLICIES`, or a dataset function is checked
            without ``global_batch``.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> strategy = mk.make_strategy()
        >>> mk.check_input_pipeline(tf.data.Dataset.range(8).batch(4), strategy).passed
        False
    """
    require_strategy(strategy, "mk.check_input_pipeline(dataset, strategy)")
    sizes = (
        ("per_replica_batch", per_replica_batch),
        ("global_batch", global_batch),
        ("first_examples", first_examples),
    )
    for name, size in sizes:
        if size is not None:
            require_count(name, size, write=f"the count, e.g. {name}=8")
    require_flag("repeats", repeats, effect="to accept a dataset that ends")
    auto_shard = getattr(auto_shard, "name", auto_shard)  # an AutoShardPolicy member too
    if auto_shard is not None and auto_shard not in AUTO_SHARD_POLICIES:
        raise ValueError(
            f"auto_shard must be the name of an AutoShardPolicy, one of "
            f"{', '.join(map(repr, AUTO_SHARD_POLICIES))}; got {auto_shard!r}."
        )
    if source is Ellipsis:
        return NOT_ATTEMPTED
    import tensorflow as tf

    is_function = callable(source) and not isinstance(source, tf.data.Dataset)
    if is_function and global_batch is None:
        raise ValueError(
            "checking a dataset function needs global_batch=...: the global batch the "
            "function is meant to split, e.g. global_batch=32."
        )
    if (refusal := cannot_check_with_one_replica(strategy, "how input is split")) is not None:
        return refusal
    try:
        preview = preview_input(strategy, source)
    except (TypeError, ValueError) as error:
        return CheckResult(False, str(error))
    if preview.warnings:
        return CheckResult(False, preview.warnings[0])
    if is_function and preview.total_steps == 0:
        return _no_step(preview.num_replicas, global_batch)
    if (verdict := _steps_verdict(preview.total_steps, repeats)) is not None:
        return verdict
    if is_function:
        verdict = _function_verdict(source, global_batch, first_examples, preview.num_replicas)
    else:
        verdict = _dataset_verdict(source, global_batch, first_examples, preview.global_batch)
    if verdict is not None:
        return verdict
    if per_replica_batch is not None and preview.per_replica_batch != per_replica_batch:
        return CheckResult(
            False,
            f"each replica gets {preview.per_replica_batch} examples per step, expected "
            f"{per_replica_batch}.",
        )
    if auto_shard is not None and preview.auto_shard_policy != auto_shard:
        return CheckResult(
            False,
            f"the dataset's auto-shard policy is {preview.auto_shard_policy}, expected "
            f"{auto_shard}: set options.experimental_distribute.auto_shard_policy and apply "
            "the options with dataset.with_options(options).",
        )
    return CheckResult(
        True,
        f"every replica gets {preview.per_replica_batch} examples at every step "
        f"(global batch {preview.global_batch}).",
    )


def _beyond_first(dataset, first: int) -> CheckResult | None:
    """The verdict when ``dataset`` brings an example id of ``first`` or more."""
    batches = _batches_read(dataset) or []
    beyond = sorted({i for batch in batches for i in batch if i >= first})
    if not beyond:
        return None
    step = next(n for n, batch in enumerate(batches) if any(i >= first for i in batch))
    return CheckResult(
        False,
        f"step {step} brings example {beyond[0]}, but only the first {first} examples "
        f"(ids 0 to {first - 1}) are to be used: {len(beyond)} example(s) beyond them are "
        f"read. Take them first, before batching or sharding (take({first}).batch(...)): "
        "take after batch counts batches, not examples, and take after shard takes from "
        "each shard, so the workers would hold out different examples.",
    )


def _no_step(replicas: int, global_batch: int) -> CheckResult:
    return CheckResult(
        False,
        f"the function's dataset brings no step at all with {replicas} "
        f"replicas: it yields fewer examples than one step needs ({global_batch}). Shard "
        "by context.num_input_pipelines (not by the number of replicas), and batch by "
        f"context.get_per_replica_batch_size({global_batch}), one replica's share.",
    )


def _function_verdict(fn, global_batch: int, first: int | None, replicas: int):
    """What is wrong with a dataset function, if anything (a failing CheckResult is falsy).

    Every call of ``fn`` with another context is the learner's code: an error it raises is
    the verdict, never the check's own exception.
    """
    try:
        verdict = _function_beyond_first(fn, first, replicas) if first else None
        return verdict if verdict is not None else _probe(fn, global_batch, replicas)
    except Exception as error:  # noqa: BLE001 - the learner's function: report, never raise
        return CheckResult(
            False,
            f"the dataset function failed when called with another InputContext: "
            f"{type(error).__name__}: {error}. It must work for any context: use "
            "context.get_per_replica_batch_size, context.num_input_pipelines and "
            "context.input_pipeline_id rather than fixed numbers.",
        )


def _dataset_verdict(dataset, global_batch: int | None, first: int | None, brought: int):
    """What is wrong with a batched dataset, if anything."""
    if (verdict := _finite_needs_drop_remainder(dataset, "the dataset")) is not None:
        return verdict
    if first and (verdict := _beyond_first(dataset, first)) is not None:
        return verdict
    if global_batch is not None and brought != global_batch:
        return CheckResult(
            False,
            f"each step brings {brought} examples, expected a global batch "
            f"of {global_batch}: batch by the global batch (all replicas together), "
            "not by one replica's share.",
        )
    return None


def _function_beyond_first(fn, first: int, replicas: int) -> CheckResult | None:
    """The verdict when ``fn``'s dataset brings an id of ``first`` or more, on any pipeline."""
    import tensorflow as tf

    for pipelines in (1, 2):
        for index in range(pipelines):
            dataset = fn(tf.distribute.InputContext(pipelines, index, replicas))
            if (verdict := _beyond_first(dataset, first)) is not None:
                where = f"input pipeline {index} of {pipelines}"
                return CheckResult(False, f"on {where}, {verdict.message}")
    return None


def _steps_verdict(steps: int | None, repeats: bool) -> CheckResult | None:
    """What is wrong with a dataset of ``steps`` steps (None: it repeats), if anything."""
    if steps == 0:
        return CheckResult(
            False,
            "the dataset brings no step at all: it is empty, so no replica gets anything "
            "(a batch larger than the examples, with drop_remainder=True, drops them all).",
        )
    if repeats and steps is not None:
        return CheckResult(
            False,
            f"the dataset ends after {steps} steps, but it should repeat "
            "forever: call .repeat() on it (before .batch, so that no batch is partial).",
        )
    return None


def _batch_dimension(dataset):
    """The static batch dimension of ``dataset``'s first component (None if not fixed)."""
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    shape = specs[0].shape if specs else None
    return shape[0] if shape is not None and shape.rank else None


def _repeats(dataset) -> bool:
    import tensorflow as tf

    return bool(dataset.cardinality() == tf.data.INFINITE_CARDINALITY)


def _finite_needs_drop_remainder(dataset, what: str) -> CheckResult | None:
    if _repeats(dataset):
        return None  # repeated before batching: every batch is full
    if _batch_dimension(dataset) is None and not _filters_out_partial_batches(dataset):
        return CheckResult(
            False,
            f"{what}'s batch size is not fixed (its element_spec has None as the batch "
            "dimension), so nothing keeps the last batch full when the number of examples "
            "does not divide by the batch: here it happens to divide, elsewhere it will "
            "not. Batch with drop_remainder=True.",
        )
    return None


def _filters_out_partial_batches(dataset) -> bool:
    """Whether a ``filter`` after the batching keeps full batches and drops every shorter one.

    The filter's own predicate is asked about the first batch its input brings and about
    that batch cut to every shorter length.
    """
    node = dataset
    while node is not None:
        source = getattr(node, "_input_dataset", None)
        predicate = getattr(getattr(node, "_predicate", None), "function", None)
        if predicate is not None and source is not None and _batch_dimension(source) is None:
            try:
                if _keeps_only_full(predicate, source):
                    return True
            except Exception:  # noqa: BLE001 - a predicate that cannot be asked keeps nothing
                return False
        node = source
    return False


def _keeps_only_full(predicate, source) -> bool:
    """Whether ``predicate`` keeps ``source``'s first batch and drops it cut shorter."""
    import tensorflow as tf

    first = tf.nest.flatten(next(iter(source.take(1))))
    got = int(tf.shape(first[0])[0]) if first and first[0].shape.rank else 0
    size = static_batch_size(source) or got
    if got == 0:
        return False
    # the first batch, repeated up to the size .batch() asks for (the data may be shorter)
    flat = [tf.concat([t] * -(-size // got), 0)[:size] for t in first]

    def keeps(length: int) -> bool:
        return bool(tf.nest.flatten(predicate(*[t[:length] for t in flat]))[0])

    return size > 1 and keeps(size) and not any(map(keeps, range(size)))


def _probe(fn, global_batch: int, num_replicas: int) -> CheckResult | None:
    import tensorflow as tf

    counts = sorted({k for k in (1, 2, num_replicas) if global_batch % k == 0})
    for k in counts:
        context = tf.distribute.InputContext(1, 0, k)
        dataset = fn(context)
        if (verdict := _finite_needs_drop_remainder(dataset, "the function's dataset")) is not None:
            return verdict
        if _batch_dimension(dataset) is None and not _repeats(dataset):
            return CheckResult(
                False,
                "the function keeps only full batches with a filter, but their size is not "
                "fixed (its element_spec has None as the batch dimension), so the distributed "
                "dataset cannot drop a short last step: when a worker's batches do not divide "
                "by its replicas (16 batches on 3 replicas, say), the last step gives some "
                "replicas an empty batch. Batch with drop_remainder=True: "
                "TensorFlow then sees the fixed size and drops that step.",
            )
        size, wanted = _batch_dimension(dataset), batch_split.per_replica_batch(global_batch, k)
        if size is None:
            return CheckResult(
                False,
                "the function's batch size is not fixed (its element_spec has None as the "
                "batch dimension), even though it repeats: a distributed dataset needs a "
                "fixed size to cut and to drop a short step. Batch with "
                "drop_remainder=True.",
            )
        if size != wanted:
            return CheckResult(
                False,
                f"with {k} replica{'s' if k > 1 else ''} in sync the function batches {size} "
                f"examples, but each "
                f"replica's share of the global batch {global_batch} is {wanted}: batch by "
                f"context.get_per_replica_batch_size({global_batch}), not by a fixed number.",
            )
    layouts = sorted(((1, k) for k in counts), key=lambda layout: layout[1] != num_replicas)
    if global_batch % max(num_replicas, 2) == 0:
        layouts.append((2, max(num_replicas, 2)))
    read, whole = {}, {}
    for pipelines, replicas in layouts:
        datasets = [
            fn(tf.distribute.InputContext(pipelines, i, replicas)) for i in range(pipelines)
        ]
        shards = [_batches_read(dataset) for dataset in datasets]
        if any(batches is None for batches in shards):
            return None  # no integer ids to tell the examples apart (the preview needs them)
        read[pipelines, replicas] = [[i for batch in batches for i in batch] for batches in shards]
        whole[pipelines, replicas] = not any(map(_repeats, datasets)) and all(
            len(batches) < _READ_LIMIT for batches in shards
        )
    every = set().union(*(set(ids) for key, shards in read.items() if whole[key] for ids in shards))
    for (pipelines, replicas), shards in read.items():
        verdict = _coverage(
            shards, every, replicas, global_batch // replicas, whole=whole[pipelines, replicas]
        )
        if verdict is not None:
            return verdict
    return None


def _batches_read(dataset) -> list[list[int]] | None:
    """The example ids of the batches ``dataset`` brings, up to a limit (None: no integer ids)."""
    import tensorflow as tf

    batches: list[list[int]] = []
    for element in dataset.take(_READ_LIMIT):
        first = tf.nest.flatten(element)[0]
        if not first.dtype.is_integer:
            return None
        batches.append(first.numpy().ravel().tolist())
    return batches


def _coverage(
    shards: list, every: set, replicas: int, batch: int, *, whole: bool
) -> CheckResult | None:
    """The verdict on what ``shards`` (one list of ids per input pipeline) read together.

    Every example must be read once across the pipelines; each pipeline may leave out fewer
    than one batch of examples at its end (what drop_remainder drops). Of datasets that
    repeat (not ``whole``), only the first batches are read: the pipelines must not share
    examples.
    """
    pipelines = len(shards)
    layout = (
        f"with {pipelines} input pipeline{'s' if pipelines > 1 else ''} and {replicas} "
        f"replica{'s' if replicas > 1 else ''} in sync"
    )
    if pipelines > 1 and set(shards[0]) & set(shards[1]):
        return CheckResult(
            False,
            "with two input pipelines (two workers) both read the same examples: shard the "
            "dataset with dataset.shard(context.num_input_pipelines, "
            "context.input_pipeline_id) so that each pipeline reads its own part.",
        )
    if not whole:
        return None
    together = [i for ids in shards for i in ids]
    if len(together) != len(set(together)):
        return CheckResult(
            False,
            f"{layout} some examples are read more than once: every example must be read "
            "exactly once per epoch across the input pipelines.",
        )
    missing = every - set(together)
    if len(missing) > pipelines * (batch - 1):
        return CheckResult(
            False,
            f"examples missing across input pipelines: {layout} "
            f"{'the pipelines together read' if pipelines > 1 else 'it reads'} "
            f"{len(together)} examples, of at least {len(every)} that the function reads in "
            f"the contexts tried (example {min(missing)} is never read here). Every example "
            "must be read exactly once across the pipelines: shard by "
            "context.num_input_pipelines and context.input_pipeline_id, not by the number of "
            "replicas.",
        )
    return None
