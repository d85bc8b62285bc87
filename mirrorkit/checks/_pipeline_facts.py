"""What ``check_input_pipeline`` reads of a learner's pipeline, written as plain data.

The check is an ask and a verdict. The ask (:func:`mirrorkit.checks.input_pipeline.ask_input_pipeline`)
previews the pipeline under the strategy and reads each dataset it looks at (the dataset, or
what the dataset function makes for each input context the verdict may try): whether it
repeats, its static batch dimension, whether a filter keeps only full batches, and the
example ids of its batches (:func:`dataset_facts`). An error the learner's code raises is
recorded where it was raised, so the verdict (:mod:`mirrorkit.checks._pipeline_verdicts`)
meets it at the point the check would have.

Example:
    >>> import tensorflow as tf
    >>> facts = dataset_facts(tf.data.Dataset.range(6).batch(4, drop_remainder=True), 1000)
    >>> facts["repeats"], facts["batch"], facts["batches"]
    (False, 4, [[0, 1, 2, 3]])
"""  # noqa: E501 - a module's name in the summary

from __future__ import annotations

from mirrorkit.checks._distributed_reading import static_batch_size

READ_LIMIT = 1000  # batches of a dataset read at most
MAX_IDS = 1 << 20  # example ids recorded at most for one dataset


def failure(error: BaseException) -> str:
    """The learner's error as the verdict names it: ``Type: message``."""
    return f"{type(error).__name__}: {error}"


def dataset_facts(dataset, read: int) -> dict:
    """What the verdict reads of ``dataset``; its ids from at most ``read`` batches.

    ``read`` 0 leaves the ids out (the check does not read them); an error while reading
    them is recorded as ``batches_error``.
    """
    facts = {"repeats": repeats(dataset), "batch": batch_dimension(dataset)}
    facts["filters"] = (
        not facts["repeats"] and facts["batch"] is None and _filters_out_partial_batches(dataset)
    )
    if read:
        try:
            facts["batches"] = _batches_read(dataset, read)
            ids = sum(len(batch) for batch in facts["batches"] or [])
            facts["truncated"] = ids >= MAX_IDS
        except Exception as error:  # noqa: BLE001 - the learner's dataset: the verdict's
            facts["batches_error"] = failure(error)
    return facts


def context_facts(fn, key: tuple[int, int, int]) -> dict:
    """:func:`dataset_facts` of what ``fn`` makes for the input context ``key``, or its error.

    ``key``: ``(input pipelines, pipeline id, replicas in sync)``.
    """
    import tensorflow as tf

    try:
        return dataset_facts(fn(tf.distribute.InputContext(*key)), READ_LIMIT)
    except Exception as error:  # noqa: BLE001 - the learner's function: the verdict's
        return {"error": failure(error)}


def repeats(dataset) -> bool:
    """Whether ``dataset`` repeats forever."""
    import tensorflow as tf

    return bool(dataset.cardinality() == tf.data.INFINITE_CARDINALITY)


def batch_dimension(dataset):
    """The static batch dimension of ``dataset``'s first component (None if not fixed)."""
    import tensorflow as tf

    specs = tf.nest.flatten(dataset.element_spec)
    shape = specs[0].shape if specs else None
    return shape[0] if shape is not None and shape.rank else None


def _filters_out_partial_batches(dataset) -> bool:
    """Whether a ``filter`` after the batching keeps full batches and drops every shorter one.

    The filter's own predicate is asked about the first batch its input brings and about
    that batch cut to every shorter length.
    """
    node = dataset
    while node is not None:
        source = getattr(node, "_input_dataset", None)
        predicate = getattr(getattr(node, "_predicate", None), "function", None)
        if predicate is not None and source is not None and batch_dimension(source) is None:
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


def _batches_read(dataset, read: int) -> list[list[int]] | None:
    """The example ids of the batches ``dataset`` brings, up to ``read`` batches or the
    batch that reaches :data:`MAX_IDS` ids (None: no integer ids)."""
    import tensorflow as tf

    batches: list[list[int]] = []
    count = 0
    for element in dataset.take(read):
        first = tf.nest.flatten(element)[0]
        if not first.dtype.is_integer:
            return None
        batches.append(first.numpy().ravel().tolist())
        count += len(batches[-1])
        if count >= MAX_IDS:  # read as far as a repeating dataset is: the first batches
            break
    return batches
