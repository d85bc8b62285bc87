"""Every check, widget and measurement that takes a model, on models and data the book did not
write: the pairwise matrix of tests/model_matrix.csv, and the examples of the page "Use it on
your own code" (book/your_own_code.md).

One TensorFlow process and the session's strategy serve every row; models are tiny and each
row runs one step or two.
"""

from __future__ import annotations

import csv
import itertools
import re
import tempfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorwidgets import LiveTrainingCallback
from tests.conftest import REPLICAS, assert_clear_message

# Keras's model shapes and mixed precision: once per TensorFlow and Keras version (bookbuild/
# jobs.py, PER_KERAS), so the other Python's job, at the reference's versions, leaves it out.
pytestmark = pytest.mark.per_keras

TABLE = Path(__file__).with_name("model_matrix.csv")
COLUMNS = ("tool", "shape", "precision", "data")
EXAMPLES = 8  # a global batch: 2 per replica; "uneven" gives 10 (3, 3, 3, 1)
MSE = keras.losses.MeanSquaredError(reduction="none")
K = 2  # check_accumulation's micro-batches per update
CLIP_NORM = 1e-3  # below the norm of every gradient here, so clipping shows


def _rows() -> list[dict]:
    lines = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


ROWS = _rows()


# ---------------------------------------------------------------------------- the models


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="subclassed")
        self.hidden = keras.layers.Dense(4, activation="tanh")
        self.out = keras.layers.Dense(1)

    def call(self, x, training=False):
        return self.out(self.hidden(x))


def _model(shape: str) -> keras.Model:
    dense = keras.layers.Dense
    if shape == "sequential":
        return keras.Sequential([keras.Input((3,), name="features"), dense(4, "tanh"), dense(1)])
    if shape == "sequential_no_input":
        return keras.Sequential([dense(4, "tanh"), dense(1)])
    if shape == "subclassed":
        return _Subclassed()
    price, size = keras.Input((3,), name="price"), keras.Input((2,), name="size")
    joined = dense(4, "tanh")(keras.layers.Concatenate()([price, size]))
    if shape == "functional_dict":  # named inputs, two outputs
        outputs = {"risk": dense(1, name="risk")(joined), "value": dense(1, name="value")(joined)}
        return keras.Model({"price": price, "size": size}, outputs)
    return keras.Model([price, size], dense(1)(joined))  # functional_tuple: positional inputs


def _natural(shape: str, examples: int):
    """The batch in the structure the model takes, as NumPy arrays."""
    rng = np.random.default_rng(examples)
    draw = lambda *dims: rng.normal(size=(examples, *dims)).astype("float32")  # noqa: E731
    if shape == "functional_dict":
        return {"price": draw(3), "size": draw(2)}, {"risk": draw(1), "value": draw(1)}
    if shape == "functional_tuple":
        return [draw(3), draw(2)], draw(1)
    return draw(3), draw(1)


def _data(shape: str, form: str):
    """The batch in a data form: tensors, tuples, dicts (keyed by input name) or uneven."""
    x, y = _natural(shape, 10 if form == "uneven" else EXAMPLES)
    if form == "tensors":
        return tf.nest.map_structure(tf.constant, (x, y))
    if form == "tuples":  # dicts become tuples in their keys' order, as Keras flattens them
        as_tuple = lambda v: tuple(v[k] for k in sorted(v)) if isinstance(v, dict) else v  # noqa: E731
        return (tuple(x) if isinstance(x, list) else as_tuple(x)), as_tuple(y)
    if form == "dicts":
        if isinstance(x, list):
            return {"price": x[0], "size": x[1]}, y
        return (x, y) if isinstance(x, dict) else ({"features": x}, y)
    return x, y


def _compute_loss(global_batch):
    def compute_loss(model, x, y):
        predictions = tf.nest.flatten(model(x, training=True))
        labels = tf.nest.flatten(y)
        return tf.add_n(
            [
                tf.nn.compute_average_loss(
                    MSE(label, tf.cast(p, tf.float32)), global_batch_size=global_batch
                )
                for label, p in zip(labels, predictions, strict=True)
            ]
        )

    return compute_loss


def _compiled(strategy, shape, x):
    with strategy.scope():
        model = _model(shape)
        model(tf.nest.map_structure(lambda a: a[:1], x))
        losses = {"risk": "mse", "value": "mse"} if shape == "functional_dict" else "mse"
        model.compile(optimizer="sgd", loss=losses, jit_compile=False)
    return model


# ----------------------------------------------------------------------------- the tools


def _equivalence(strategy, shape, batch):
    report = mk.check_step_equivalence(
        _compute_loss(len(tf.nest.flatten(batch[0])[0])), strategy, lambda: _model(shape), batch
    )
    assert report.equivalent, report.message
    assert report.splits, report.message
    return report.message


def _loss_step(strategy, shape, batch):
    global_batch = len(tf.nest.flatten(batch[0])[0])
    result = mk.check_loss_step(_compute_loss(global_batch), strategy, lambda: _model(shape), batch)
    assert result.passed, result.message
    assert "Splits tried" in result.message or global_batch % REPLICAS, result.message
    return result.message


def _inspect(strategy, shape, batch):
    model = _compiled(strategy, shape, batch[0])
    table = mk.inspect(model)
    assert len(table.rows) == len(model.weights) and table.in_sync
    return table.title


_FITS: dict = {}


def _fitted(strategy, shape, batch):
    """One fit per model, policy and batch, watched by a LiveTrainingCallback and a StepTracer
    together: their rows and check_restore's (which saves the trained model) share it, so the
    same training runs once. Returns the model, the callback and the trace."""
    form = tf.nest.map_structure(lambda a: (type(a).__name__, np.shape(a)), batch)
    key = (shape, keras.mixed_precision.global_policy().name, repr(form))
    if key not in _FITS:
        model = _compiled(strategy, shape, batch[0])
        live = LiveTrainingCallback(batch, min_interval=0, budget=1.0)  # update at every step
        tracer = mk.StepTracer(strategy, profile_every=None)
        callbacks = [live, tracer.callback()]
        model.fit(*batch, batch_size=4, epochs=1, verbose=0, callbacks=callbacks)
        _FITS[key] = model, live, tracer.result()
    return _FITS[key]


def _live(strategy, shape, batch):
    _, live, _ = _fitted(strategy, shape, batch)
    losses = live.view.history["loss"]
    assert losses and all(len(step) == REPLICAS for step in losses), live.view.history
    return f"{len(losses)} updates of {REPLICAS} replicas"


def _tracer(strategy, shape, batch):
    _, _, trace = _fitted(strategy, shape, batch)
    steps = -(-len(tf.nest.flatten(batch[0])[0]) // 4)
    assert len(trace.step_times_s) == steps - 1
    assert "The last step of each of the 1 epoch is left out" in " ".join(trace.notes)
    return f"{len(trace.step_times_s)} of {steps} steps timed"


def _replay(strategy, shape, batch):
    model = _compiled(strategy, shape, batch[0])
    compute_loss = _compute_loss(len(tf.nest.flatten(batch[0])[0]))

    def gradients(x, y):
        with tf.GradientTape() as tape:
            loss = compute_loss(model, x, y)
        return tape.gradient(loss, model.trainable_variables)

    x, y = batch
    dataset = tf.data.Dataset.from_tensor_slices((tuple(x) if isinstance(x, list) else x, y))
    x, y = next(iter(strategy.experimental_distribute_dataset(dataset.batch(64))))
    per_replica = tf.function(lambda a, b: strategy.run(gradients, args=(a, b)))(x, y)
    replay = mk.replay_all_reduce(strategy, per_replica)
    assert replay.comparison.verdict in ("identical", "rounding"), str(replay)
    return f"{replay.size} values replayed"


# The exercise checks: each row runs a right answer, which must pass, and a wrong one, which
# must fail, on data twice the row's batch where a check needs two batches or steps.


def _twice(batch):
    return tf.nest.map_structure(lambda a: np.concatenate([np.asarray(a)] * 2), batch)


def _per_example(model, x, y, training=False):
    """Each example's squared error, summed over the model's outputs, at float32."""
    outputs = tf.nest.flatten(model(x, training=training))
    pairs = zip(tf.nest.flatten(y), outputs, strict=True)
    return tf.add_n([MSE(label, tf.cast(p, tf.float32)) for label, p in pairs])


def _clip_summed(gradients, clip_norm):  # right: the norm of the replicas' summed gradient
    summed = tf.distribute.get_replica_context().all_reduce("SUM", gradients)
    factor = tf.minimum(1.0, clip_norm / tf.linalg.global_norm(summed))
    return [g * factor for g in gradients]


def _clip_local(gradients, clip_norm):  # wrong: each replica clips its own share
    return tf.clip_by_global_norm(gradients, clip_norm)[0]


def _clipping(strategy, shape, batch):
    def check(clip):
        model_fn = lambda: _model(shape)  # noqa: E731
        return mk.check_clipping(clip, strategy, model_fn, batch, clip_norm=CLIP_NORM)

    right, wrong = check(_clip_summed), check(_clip_local)
    assert right.passed, right.message
    assert not wrong.passed and "each replica clipped its own" in wrong.message, wrong.message
    return right.message


def _accumulate(divide_by):
    def accumulate(model, accumulators, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(_per_example(model, x, y, training=True)) / divide_by
        gradients = tape.gradient(loss, model.trainable_variables)
        for accumulator, gradient in zip(accumulators, gradients, strict=True):
            accumulator.assign_add(gradient)

    return accumulate


def _apply(model, optimizer, accumulators):
    gradients = [a.read_value() for a in accumulators]
    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    for accumulator in accumulators:
        accumulator.assign(tf.zeros_like(accumulator))


def _accumulation(strategy, shape, batch):
    data = _twice(batch)  # 16 (or 20) examples: 2 x K micro-batches of 4 (or 5)
    micro = len(tf.nest.flatten(data[0])[0]) // (2 * K)

    def check(divide_by):
        accumulate, model_fn = _accumulate(divide_by), lambda: _model(shape)
        return mk.check_accumulation(accumulate, _apply, strategy, model_fn, data, micro_steps=K)

    right, wrong = check(K * micro), check(micro)  # wrong: one micro-batch's examples
    assert right.passed, right.message
    assert not wrong.passed and f"{K}x the big-batch gradient" in wrong.message, wrong.message
    return right.message


def _evaluate(strategy, own_mean):
    """Sums and counts over the replicas; ``own_mean`` (wrong): the replicas' means averaged."""

    def on_replica(model, x, y):
        per_example = _per_example(model, x, y)
        total, count = tf.reduce_sum(per_example), tf.cast(tf.size(per_example), tf.float32)
        return (total / count, count / count) if own_mean else (total, count)

    def evaluate(model, dataset):
        @tf.function
        def step(batch):
            sums = strategy.run(lambda x, y: on_replica(model, x, y), args=batch)
            return [strategy.reduce("SUM", value, axis=None) for value in sums]

        sums = [step(batch) for batch in strategy.experimental_distribute_dataset(dataset)]
        return float(sum(total for total, _ in sums) / sum(count for _, count in sums))

    return evaluate


def _evaluation(strategy, shape, batch):
    data = _twice(batch)  # two global batches of 8, the second short when uneven
    model = _compiled(strategy, shape, data[0])

    def check(own_mean):
        evaluate = _evaluate(strategy, own_mean)
        return mk.check_evaluation(evaluate, strategy, model, data, global_batch=2 * REPLICAS)

    right, wrong = check(own_mean=False), check(own_mean=True)
    assert right.passed, right.message
    assert not wrong.passed and "each replica's own mean" in wrong.message, wrong.message
    return right.message


def _restore(strategy, shape, batch):
    x, _ = batch
    saved, _, _ = _fitted(strategy, shape, batch)  # trained: its optimizer took steps
    path = tf.train.Checkpoint(model=saved).save(tempfile.mkdtemp(prefix="matrix-") + "/ckpt")

    def restore(path):
        model = _compiled(strategy, shape, x)
        tf.train.Checkpoint(model=model).restore(path)
        return model

    right = mk.check_restore(restore, path, saved, strategy=strategy)
    wrong = mk.check_restore(
        lambda path: _compiled(strategy, shape, x), path, saved, strategy=strategy
    )
    assert right.passed, right.message
    assert not wrong.passed and "not the saved ones" in wrong.message, wrong.message
    return right.message


TOOLS = {
    "check_step_equivalence": _equivalence,
    "check_loss_step": _loss_step,
    "inspect": _inspect,
    "LiveTrainingCallback": _live,
    "StepTracer": _tracer,
    "replay_all_reduce": _replay,
    "check_clipping": _clipping,
    "check_accumulation": _accumulation,
    "check_evaluation": _evaluation,
    "check_restore": _restore,
}


# ----------------------------------------------------------------------------- the tests


def test_the_table_covers_every_pair_of_values():
    values = {column: sorted({row[column] for row in ROWS}) for column in COLUMNS}
    assert set(values["tool"]) == set(TOOLS)
    assert len(values["shape"]) == 5 and len(values["data"]) == 4
    assert values["precision"] == ["float32", "mixed_bfloat16", "mixed_float16"]
    for first, second in itertools.combinations(COLUMNS, 2):
        seen = {(row[first], row[second]) for row in ROWS}
        missing = set(itertools.product(values[first], values[second])) - seen
        assert not missing, f"no row has {first} x {second}: {sorted(missing)}"


@pytest.fixture
def policy():
    """Set a row's dtype policy; back to float32 after it."""
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("row", ROWS, ids=lambda row: "-".join(row[c] for c in COLUMNS))
def test_each_tool_works_on_each_shape_or_refuses_clearly(strategy, policy, row):
    policy(row["precision"])
    tf.keras.utils.set_random_seed(0)
    batch = _data(row["shape"], row["data"])
    outcome = row["outcome"]
    if outcome == "works":
        TOOLS[row["tool"]](strategy, row["shape"], batch)
        return
    argument, expected = re.fullmatch(r"refused (\w+): (.+)", outcome).groups()
    with pytest.raises((TypeError, ValueError)) as refusal:
        TOOLS[row["tool"]](strategy, row["shape"], batch)
    message = str(refusal.value)
    assert expected in message, message
    assert_clear_message(message, argument, ": write ")  # names the argument, says what to do


def test_the_examples_of_the_page_on_your_own_code_run(policy, no_orphans):
    """book/your_own_code.md: every ```python block, in order, in one namespace."""
    page = Path(__file__).parents[1] / "book" / "your_own_code.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)
    assert len(blocks) == 7
    namespace: dict = {}
    for number, block in enumerate(blocks):
        if number == 0:  # the session has its replicas already: the strategy over them
            block = block.replace("mk.simulate_replicas(4)", "mk.simulate_replicas(REPLICAS)")
            namespace["REPLICAS"] = REPLICAS
        exec(compile(block, f"{page.name}, block {number}", "exec"), namespace)  # noqa: S102
    assert namespace["report"].splits == ((4, 4, 4, 4), (5, 4, 4, 3))
    assert "Wrap it in one line" in namespace["refused"].message
    assert len(namespace["run"].results) == 2  # both workers trained, saved and evaluated
    assert len(namespace["live"].view.history["loss"]) >= 1
