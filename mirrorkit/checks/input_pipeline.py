"""Check a learner's input pipeline: full, equal batches for every replica at every step.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_input_pipeline(..., mk.make_strategy())
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from mirrorkit._validate import require_count, require_flag, require_strategy
from mirrorkit.checks import batch_split
from mirrorkit.checks.input_preview import AUTO_SHARD_POLICIES, preview_input
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, cannot_check_with_one_replica


def check_input_pipeline(
    source,
    strategy,
    *,
    per_replica_batch: int | None = None,
    global_batch: int | None = None,
    auto_shard: str | None = None,
    repeats: bool = False,
) -> CheckResult:
    """Check that ``source`` feeds every replica full, equal batches at every step.

    The real strategy distributes ``source`` (see :func:`mirrorkit.preview_input`); the
    check passes when the preview has no warning: the global batch divides by the
    replicas and no step brings a partial or empty batch. It also refuses what would only
    work for this data: a finite pipeline must batch with ``drop_remainder=True`` (a
    batch dimension of ``None`` in ``element_spec`` means nothing keeps the last batch
    full when the examples do not divide evenly). A dataset function is also called, as
    the strategy would on other machines, with ``tf.distribute.InputContext`` objects for
    other replica counts (1, 2 and the strategy's, where they divide ``global_batch``)
    and for two input pipelines: it must batch ``get_per_replica_batch_size(global_batch)``
    each time and give the two pipelines different examples. With one replica there is
    nothing to split, so the check refuses.

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
    for name, size in (("per_replica_batch", per_replica_batch), ("global_batch", global_batch)):
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
    if repeats and preview.total_steps is not None:
        return CheckResult(
            False,
            f"the dataset ends after {preview.total_steps} steps, but it should repeat "
            "forever: call .repeat() on it (before .batch, so that no batch is partial).",
        )
    if is_function:
        verdict = _probe_dataset_fn(source, global_batch, preview.num_replicas)
        if verdict is not None:
            return verdict
    else:
        if (verdict := _finite_needs_drop_remainder(source, "the dataset")) is not None:
            return verdict
        if global_batch is not None and preview.global_batch != global_batch:
            return CheckResult(
                False,
                f"each step brings {preview.global_batch} examples, expected a global batch "
                f"of {global_batch}: batch by the global batch (all replicas together), "
                "not by one replica's share.",
            )
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


def _batch_dimension(dataset):
    """The static batch dimension of ``dataset``'s first component (None if not fixed)."""
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    shape = specs[0].shape if specs else None
    return shape[0] if shape is not None and shape.rank else None


def _finite_needs_drop_remainder(dataset, what: str) -> CheckResult | None:
    import tensorflow as tf

    if dataset.cardinality() == tf.data.INFINITE_CARDINALITY:
        return None  # repeated before batching: every batch is full
    if _batch_dimension(dataset) is None:
        return CheckResult(
            False,
            f"{what}'s batch size is not fixed (its element_spec has None as the batch "
            "dimension), so nothing keeps the last batch full when the number of examples "
            "does not divide by the batch: here it happens to divide, elsewhere it will "
            "not. Batch with drop_remainder=True.",
        )
    return None


def _probe_dataset_fn(fn, global_batch: int, num_replicas: int) -> CheckResult | None:
    """Call ``fn`` as other machines would; the verdict on the first thing that goes wrong."""
    try:
        return _probe(fn, global_batch, num_replicas)
    except Exception as error:  # the learner's function: report, never raise
        return CheckResult(
            False,
            f"the dataset function failed when called with another InputContext: "
            f"{type(error).__name__}: {error}. It must work for any context: use "
            "context.get_per_replica_batch_size, context.num_input_pipelines and "
            "context.input_pipeline_id rather than fixed numbers.",
        )


def _probe(fn, global_batch: int, num_replicas: int) -> CheckResult | None:
    import tensorflow as tf

    counts = sorted({k for k in (1, 2, num_replicas) if global_batch % k == 0})
    for k in counts:
        context = tf.distribute.InputContext(1, 0, k)
        dataset = fn(context)
        if (verdict := _finite_needs_drop_remainder(dataset, "the function's dataset")) is not None:
            return verdict
        size, wanted = _batch_dimension(dataset), batch_split.per_replica_batch(global_batch, k)
        if size != wanted:
            return CheckResult(
                False,
                f"with {k} replica{'s' if k > 1 else ''} in sync the function batches {size} "
                f"examples, but each "
                f"replica's share of the global batch {global_batch} is {wanted}: batch by "
                f"context.get_per_replica_batch_size({global_batch}), not by a fixed number.",
            )
    shards = []
    for pipeline in (0, 1):
        dataset = fn(tf.distribute.InputContext(2, pipeline, num_replicas))
        ids = set()
        for element in dataset.take(1000):
            first = tf.nest.flatten(element)[0]
            if not first.dtype.is_integer:
                return None  # no example ids to tell the pipelines apart (preview needs them)
            ids.update(first.numpy().ravel().tolist())
        shards.append(ids)
    if shards[0] & shards[1]:
        return CheckResult(
            False,
            "with two input pipelines (two workers) both read the same examples: shard the "
            "dataset with dataset.shard(context.num_input_pipelines, "
            "context.input_pipeline_id) so that each pipeline reads its own part.",
        )
    return None
