"""Check a learner's input pipeline: full, equal batches for every replica at every step.

The check is an ask and a verdict: :func:`ask_input_pipeline` checks the check's own
arguments, previews the pipeline and reads the datasets the verdict may look at, as plain
data (:mod:`mirrorkit.checks._pipeline_facts`); the verdict
(:mod:`mirrorkit.checks._pipeline_verdicts`) reads only that. The grader asks in an executor
and judges in its own process; the check here does both.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_input_pipeline(..., mk.make_strategy())
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from mirrorkit._validate import require_count, require_flag, require_strategy
from mirrorkit.checks import _pipeline_facts as facts
from mirrorkit.checks._pipeline_verdicts import contexts, judge_input_pipeline
from mirrorkit.checks.input_preview import AUTO_SHARD_POLICIES, preview_input
from mirrorkit.checks.result import (
    NOT_ATTEMPTED,
    CheckResult,
    as_record,
    cannot_check_with_one_replica,
)


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
        RuntimeError: If reading the learner's dataset (not a dataset function) beyond the
            preview failed, with TensorFlow's error named.
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
    asked = ask_input_pipeline(
        source,
        strategy,
        per_replica_batch=per_replica_batch,
        global_batch=global_batch,
        auto_shard=auto_shard,
        repeats=repeats,
        first_examples=first_examples,
    )
    return judge_input_pipeline(asked)


def ask_input_pipeline(
    source,
    strategy,
    *,
    per_replica_batch: int | None = None,
    global_batch: int | None = None,
    auto_shard: str | None = None,
    repeats: bool = False,
    first_examples: int | None = None,
) -> dict:
    """What :func:`check_input_pipeline` reads of ``source``, as data its verdict judges.

    Raises as :func:`check_input_pipeline` does for arguments that are not the check's,
    and for a preview that fails other than with a ``TypeError`` or ``ValueError``.

    Example:
        >>> import mirrorkit as mk
        >>> ask_input_pipeline(..., mk.make_strategy())["answer"]["verdict"]["passed"]
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
    args = {"per_replica_batch": per_replica_batch, "global_batch": global_batch}
    args |= {"auto_shard": auto_shard, "repeats": repeats, "first_examples": first_examples}
    record = {"check": "input_pipeline", "args": args}
    if source is Ellipsis:
        return record | {"answer": as_record(NOT_ATTEMPTED)}
    import tensorflow as tf

    is_function = callable(source) and not isinstance(source, tf.data.Dataset)
    if is_function and global_batch is None:
        raise ValueError(
            "checking a dataset function needs global_batch=...: the global batch the "
            "function is meant to split, e.g. global_batch=32."
        )
    if (refusal := cannot_check_with_one_replica(strategy, "how input is split")) is not None:
        return record | {"answer": as_record(refusal)}
    try:
        preview = preview_input(strategy, source)
    except (TypeError, ValueError) as error:
        return record | {"answer": {"preview": {"error": str(error)}}}
    answer = {"function": is_function, "preview": _preview(preview), "datasets": {}}
    if not preview.warnings:
        if is_function:
            keys = contexts(global_batch, preview.num_replicas, first_examples)
            answer["datasets"] = {
                ",".join(map(str, key)): facts.context_facts(source, key) for key in keys
            }
        else:
            read = facts.READ_LIMIT if first_examples else 0
            answer["datasets"] = {"source": facts.dataset_facts(source, read)}
    return record | {"answer": answer}


def _preview(preview) -> dict:
    """What the verdict reads of the preview."""
    return {
        "warning": preview.warnings[0] if preview.warnings else None,
        "total_steps": preview.total_steps,
        "num_replicas": preview.num_replicas,
        "per_replica_batch": preview.per_replica_batch,
        "global_batch": preview.global_batch,
        "auto_shard_policy": preview.auto_shard_policy,
    }
