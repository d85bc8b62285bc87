"""The verdict of ``check_input_pipeline``, given only what its ask recorded.

The ask (:func:`mirrorkit.checks.input_pipeline.ask_input_pipeline`) previews the pipeline
and records what it read of each dataset (:mod:`mirrorkit.checks._pipeline_facts`); this
reads that record alone: no TensorFlow, nothing of the learner's runs here. It looks at the
facts in the order the check always has, so an error the learner's function raised in one
input context is named where the check meets it. A check in the chapter calls its ask and
then its verdict; the grader asks in an executor and calls the verdict in its own process.

Example:
    >>> record = {"check": "input_pipeline", "args": {},
    ...           "answer": {"verdict": {"passed": False, "message": "not attempted yet"}}}
    >>> judge_input_pipeline(record).message
    'not attempted yet'
"""

from __future__ import annotations

from mirrorkit.checks import batch_split
from mirrorkit.checks._pipeline_facts import READ_LIMIT
from mirrorkit.checks.result import CheckResult, from_record


class _Failed(Exception):
    """The learner's dataset function failed where the check met it (its own words)."""


class _Read:
    """The recorded datasets, met as the check meets them: an error where it was raised."""

    def __init__(self, datasets: dict) -> None:
        self._datasets = datasets

    def made(self, key) -> dict:
        """The facts of ``key``'s dataset (``"source"`` or ``(pipelines, id, replicas)``)."""
        name = key if isinstance(key, str) else ",".join(map(str, key))
        facts = self._datasets.get(name)
        if facts is None:
            raise _Failed(f"ValueError: no dataset was read for the input context {name}")
        if "error" in facts:
            raise _Failed(str(facts["error"]))
        return facts

    @staticmethod
    def batches(facts: dict) -> list | None:
        """The ids of the batches a dataset brought (None: no integer ids)."""
        if "batches_error" in facts:
            raise _Failed(str(facts["batches_error"]))
        return facts.get("batches")


def judge_input_pipeline(record: dict) -> CheckResult:
    """The verdict of ``check_input_pipeline`` from what its ask recorded."""
    answer = record["answer"]
    if (given := from_record(answer)) is not None:
        return given
    args, preview = record["args"], answer["preview"]
    if "error" in preview:
        return CheckResult(False, str(preview["error"]))
    if preview["warning"] is not None:
        return CheckResult(False, str(preview["warning"]))
    global_batch, first = args["global_batch"], args["first_examples"]
    if answer["function"] and preview["total_steps"] == 0:
        return _no_step(preview["num_replicas"], global_batch)
    if (verdict := _steps_verdict(preview["total_steps"], args["repeats"])) is not None:
        return verdict
    read = _Read(answer["datasets"])
    if answer["function"]:
        verdict = _function_verdict(read, global_batch, first, preview["num_replicas"])
    else:
        verdict = _dataset_verdict(read, global_batch, first, preview["global_batch"])
    if verdict is not None:
        return verdict
    wanted = args["per_replica_batch"]
    if wanted is not None and preview["per_replica_batch"] != wanted:
        return CheckResult(
            False,
            f"each replica gets {preview['per_replica_batch']} examples per step, expected "
            f"{wanted}.",
        )
    policy = args["auto_shard"]
    if policy is not None and preview["auto_shard_policy"] != policy:
        return CheckResult(
            False,
            f"the dataset's auto-shard policy is {preview['auto_shard_policy']}, expected "
            f"{policy}: set options.experimental_distribute.auto_shard_policy and apply "
            "the options with dataset.with_options(options).",
        )
    return CheckResult(
        True,
        f"every replica gets {preview['per_replica_batch']} examples at every step "
        f"(global batch {preview['global_batch']}).",
    )


def _beyond_first(batches: list | None, first: int) -> CheckResult | None:
    """The verdict when the batches bring an example id of ``first`` or more."""
    batches = batches or []
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


def _function_verdict(read: _Read, global_batch: int, first: int | None, replicas: int):
    """What is wrong with a dataset function, if anything (a failing CheckResult is falsy).

    Every call of the function with another context is the learner's code: an error it
    raised is the verdict.
    """
    try:
        verdict = _function_beyond_first(read, first, replicas) if first else None
        return verdict if verdict is not None else _probe(read, global_batch, replicas)
    except _Failed as error:
        return CheckResult(
            False,
            f"the dataset function failed when called with another InputContext: "
            f"{error}. It must work for any context: use "
            "context.get_per_replica_batch_size, context.num_input_pipelines and "
            "context.input_pipeline_id rather than fixed numbers.",
        )


def _dataset_verdict(read: _Read, global_batch: int | None, first: int | None, brought: int):
    """What is wrong with a batched dataset, if anything."""
    facts = read.made("source")
    if (verdict := _finite_needs_drop_remainder(facts, "the dataset")) is not None:
        return verdict
    if first:
        try:
            batches = read.batches(facts)
        except _Failed as error:  # reading the learner's dataset failed: the check stops
            raise RuntimeError(str(error)) from None
        if (verdict := _beyond_first(batches, first)) is not None:
            return verdict
    if global_batch is not None and brought != global_batch:
        return CheckResult(
            False,
            f"each step brings {brought} examples, expected a global batch "
            f"of {global_batch}: batch by the global batch (all replicas together), "
            "not by one replica's share.",
        )
    return None


def _function_beyond_first(read: _Read, first: int, replicas: int) -> CheckResult | None:
    """The verdict when the function's dataset brings an id of ``first`` or more, on any
    pipeline."""
    for pipelines in (1, 2):
        for index in range(pipelines):
            facts = read.made((pipelines, index, replicas))
            if (verdict := _beyond_first(read.batches(facts), first)) is not None:
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


def _finite_needs_drop_remainder(facts: dict, what: str) -> CheckResult | None:
    if facts["repeats"]:
        return None  # repeated before batching: every batch is full
    if facts["batch"] is None and not facts["filters"]:
        return CheckResult(
            False,
            f"{what}'s batch size is not fixed (its element_spec has None as the batch "
            "dimension), so nothing keeps the last batch full when the number of examples "
            "does not divide by the batch: here it happens to divide, elsewhere it will "
            "not. Batch with drop_remainder=True.",
        )
    return None


def contexts(global_batch: int, replicas: int, first: int | None) -> list[tuple[int, int, int]]:
    """Every input context the verdict may look at: ``(pipelines, pipeline id, replicas)``.

    Example:
        >>> contexts(8, 4, None)
        [(1, 0, 1), (1, 0, 2), (1, 0, 4), (2, 0, 4), (2, 1, 4)]
    """
    found = [(p, i, replicas) for p in (1, 2) for i in range(p)] if first else []
    found += [(1, 0, k) for k in _counts(global_batch, replicas)]
    if global_batch % max(replicas, 2) == 0:
        found += [(2, i, max(replicas, 2)) for i in range(2)]
    return sorted(set(found))


def _counts(global_batch: int, replicas: int) -> list[int]:
    return sorted({k for k in (1, 2, replicas) if global_batch % k == 0})


def _probe(read: _Read, global_batch: int, num_replicas: int) -> CheckResult | None:
    counts = _counts(global_batch, num_replicas)
    for k in counts:
        facts = read.made((1, 0, k))
        if (verdict := _finite_needs_drop_remainder(facts, "the function's dataset")) is not None:
            return verdict
        if facts["batch"] is None and not facts["repeats"]:
            return CheckResult(
                False,
                "the function keeps only full batches with a filter, but their size is not "
                "fixed (its element_spec has None as the batch dimension), so the distributed "
                "dataset cannot drop a short last step: when a worker's batches do not divide "
                "by its replicas (16 batches on 3 replicas, say), the last step gives some "
                "replicas an empty batch. Batch with drop_remainder=True: "
                "TensorFlow then sees the fixed size and drops that step.",
            )
        size, wanted = facts["batch"], batch_split.per_replica_batch(global_batch, k)
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
    ids, whole = {}, {}
    for pipelines, replicas in layouts:
        made = [read.made((pipelines, i, replicas)) for i in range(pipelines)]
        shards = [read.batches(facts) for facts in made]
        if any(batches is None for batches in shards):
            return None  # no integer ids to tell the examples apart (the preview needs them)
        ids[pipelines, replicas] = [[i for batch in batches for i in batch] for batches in shards]
        whole[pipelines, replicas] = not any(f["repeats"] or f.get("truncated") for f in made) and (
            all(len(batches) < READ_LIMIT for batches in shards)
        )
    every = set().union(*(set(i) for key, shards in ids.items() if whole[key] for i in shards))
    for (pipelines, replicas), shards in ids.items():
        verdict = _coverage(
            shards, every, replicas, global_batch // replicas, whole=whole[pipelines, replicas]
        )
        if verdict is not None:
            return verdict
    return None


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
    together = [i for read_ids in shards for i in read_ids]
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
