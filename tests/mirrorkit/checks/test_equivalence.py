import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.checks import step_equivalence as eq

PER_EXAMPLE = keras.losses.MeanSquaredError(reduction="none")
KERAS_DEFAULT = keras.losses.MeanSquaredError()  # reduction="sum_over_batch_size"
KERAS_SUM = keras.losses.MeanSquaredError(reduction="sum")


def model_fn(regularized=False):
    def build():
        regularizer = keras.regularizers.L2(0.1) if regularized else None
        return keras.Sequential(
            [
                keras.Input((3,)),
                keras.layers.Dense(
                    4, activation="tanh", kernel_regularizer=regularizer, name="hidden"
                ),
                keras.layers.Dense(1, name="output"),
            ],
            name="probe",  # named: automatic names would shift other tests' model names
        )

    return build


def batch(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


def right(global_batch):
    def compute_loss(model, x, y):
        per_example = PER_EXAMPLE(y, model(x, training=True))
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        if model.losses:
            loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
        return loss

    return compute_loss


def keras_default(model, x, y):
    return KERAS_DEFAULT(y, model(x, training=True))


def check(strategy, compute_loss, n, regularized=False):
    return mk.check_step_equivalence(
        compute_loss, strategy, model_fn(regularized), batch(n), loss="mse"
    )


@pytest.fixture(scope="module")
def strategies(devices, strategy):
    return {
        1: mk.make_strategy(devices=devices[:1]),
        2: mk.make_strategy(devices=devices[:2]),
        4: strategy,
    }


@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_accepts_right_steps(strategies, replicas):
    s = strategies[replicas]
    cases = [(right(10), 10, True)]  # uneven at 4 replicas: 3, 3, 3, 1
    if replicas == 1:  # one replica: Keras's own / num_replicas is right
        cases.append((keras_default, 8, False))
    for compute_loss, n, regularized in cases:
        report = check(s, compute_loss, n, regularized)
        assert report.equivalent, str(report)
        assert report.cause == eq.RIGHT
        assert f"rtol {report.rtol:g}" in report.message
        assert report.gradient_ratio == pytest.approx(1.0, rel=1e-4)
        assert report.loss == pytest.approx(report.reference_loss, rel=1e-4)
        assert sum(report.replica_batches) == n


def test_report_renders_as_text_and_html(strategy):
    report = check(strategy, right(10), 10)
    assert report.replica_batches == (3, 3, 3, 1)
    text = str(report)
    assert text.startswith("step equivalence: EQUIVALENT")
    assert "3, 3, 3, 1 examples" in text and "kernel" in text
    assert "<table " in report._repr_html_()
    assert repr(report) == text and bool(report)


def test_default_keras_loss_with_uneven_last_batch_is_flagged(strategy):
    report = check(strategy, keras_default, 10)
    assert not report.equivalent
    assert report.cause == eq.KERAS_DEFAULT_UNEVEN
    # Each example weighs 10 / (4 * local batch) of what it should: 5/6 and 5/2.
    assert report.example_weights == pytest.approx([10 / 12] * 3 + [2.5], rel=1e-3)
    assert "'sum_over_batch_size'" in report.message and "3, 3, 3, 1" in report.message
    assert "global_batch_size=GLOBAL_BATCH" in report.message
    assert "averages the replicas' mean losses" in " ".join(report.notes)


def test_an_even_batch_is_tried_unevenly_too_and_the_splits_are_named(strategy):
    def no_global(model, x, y):
        return tf.nn.compute_average_loss(PER_EXAMPLE(y, model(x, training=True)))

    # Right only while the replicas get equal shares: the check tries an uneven split itself.
    for compute_loss in (keras_default, no_global):
        report = check(strategy, compute_loss, 8)
        assert report.cause == eq.KERAS_DEFAULT_UNEVEN
        assert report.splits == ((2, 2, 2, 2), (3, 2, 2, 1))
        assert report.message.startswith(
            "With the strategy's even split of the global batch of 8 (2, 2, 2, 2) the step is "
            "right, but with an uneven split of the same examples (3, 2, 2, 1, as a short last "
            "batch or unequal worker shards give) it is not."
        )
    good = check(strategy, right(8), 8)
    assert good.equivalent and good.splits == ((2, 2, 2, 2), (3, 2, 2, 1))
    assert good.message.endswith(
        "Splits tried of the global batch of 8: 2, 2, 2, 2 (the strategy's own) and "
        "3, 2, 2, 1 (uneven, as a short last batch or unequal worker shards give)."
    )
    assert check(strategy, no_global, 10).splits == ((3, 3, 3, 1),)  # uneven already


def test_empty_replicas(strategy):
    right_report = check(strategy, right(2), 2)
    assert right_report.replica_batches == (1, 1, 0, 0)
    assert right_report.equivalent
    assert "Replicas 2, 3 received no example" in right_report.notes[0]
    wrong = check(strategy, keras_default, 2)
    assert wrong.cause == eq.KERAS_DEFAULT_UNEVEN
    assert wrong.gradient_ratio == pytest.approx(0.5, rel=1e-3)
    assert any("empty tensor of shape (0,)" in note for note in wrong.notes)


def test_plain_local_mean_is_n_times_too_big(strategy):
    def plain_mean(model, x, y):
        return tf.reduce_mean(tf.square(y - model(x, training=True)))

    report = check(strategy, plain_mean, 8)
    assert report.cause == eq.LOCAL_MEAN
    assert report.gradient_ratio == pytest.approx(4.0, rel=1e-3)
    assert "SUMS the 4 replicas' gradients" in report.message
    assert report.loss == pytest.approx(4 * report.reference_loss, rel=1e-4)


def test_keras_loss_divided_again_is_scaled_twice(strategy):
    def twice(model, x, y):
        return KERAS_DEFAULT(y, model(x, training=True)) / strategy.num_replicas_in_sync

    report = check(strategy, twice, 8)
    assert report.cause == eq.SCALED_TWICE
    assert report.gradient_ratio == pytest.approx(0.25, rel=1e-3)
    assert "already divides by num_replicas_in_sync" in report.message


def test_compute_average_loss_divided_again_is_scaled_twice(strategy):
    def twice(model, x, y):
        return right(10)(model, x, y) / 4

    report = check(strategy, twice, 10)
    assert report.cause == eq.SCALED_TWICE
    assert report.gradient_ratio == pytest.approx(0.25, rel=1e-3)


@pytest.mark.parametrize("size", [8, 10])
def test_a_mean_divided_again_by_the_global_batch_is_named_averaged_twice(strategy, size):
    def plain_mean_again(model, x, y):
        return tf.reduce_mean(tf.square(y - model(x, training=True))) / size

    def keras_mean_again(model, x, y):
        return KERAS_DEFAULT(y, model(x, training=True)) / size

    plain = check(strategy, plain_mean_again, size)
    assert plain.cause == eq.AVERAGED_TWICE
    assert "averages over the replica's own batch (tf.reduce_mean" in plain.message
    keras_report = check(strategy, keras_mean_again, size)
    assert keras_report.cause == eq.AVERAGED_TWICE
    assert "a Keras loss with its default reduction already averages" in keras_report.message
    assert "reduction='none'" in keras_report.message


def test_sum_reduction(strategy):
    def summed(model, x, y):
        return KERAS_SUM(y, model(x, training=True))

    def summed_over_replicas(model, x, y):
        return KERAS_SUM(y, model(x, training=True)) / 4

    report = check(strategy, summed, 8)
    assert report.cause == eq.SUM_REDUCTION
    assert report.gradient_ratio == pytest.approx(8.0, rel=1e-3)  # x global batch
    report = check(strategy, summed_over_replicas, 8)
    assert report.cause == eq.SUM_REDUCTION
    assert report.gradient_ratio == pytest.approx(2.0, rel=1e-3)  # x per-replica batch


def test_negated_loss(strategy):
    report = check(strategy, lambda m, x, y: -right(8)(m, x, y), 8)
    assert report.cause == eq.NEGATED
    assert report.gradient_ratio == pytest.approx(-1.0, rel=1e-3)


def test_regularization_not_scaled_by_replicas(strategy):
    def unscaled(model, x, y):
        per_example = PER_EXAMPLE(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=8) + tf.add_n(model.losses)

    report = check(strategy, unscaled, 8, regularized=True)
    assert report.cause == eq.REGULARIZATION_UNSCALED
    assert report.regularization_weight == pytest.approx(4.0, rel=1e-3)
    assert report.example_weights == pytest.approx([1.0] * 4, rel=1e-3)
    assert "counts it 4 times" in report.message
    # The headline says what differs, not "1x" (the penalty is small next to the data loss).
    assert report.message.startswith(
        "The data loss is right; the regularization is counted 4 times instead of once. "
    )


def test_regularization_missing(strategy):
    report = check(strategy, lambda m, x, y: right(8)(m, x, y) * 0 + _data_only(m, x, y), 8, True)
    assert report.cause == eq.REGULARIZATION_MISSING
    assert report.message.startswith("The data loss is right; the regularization is counted not")
    assert report.regularization_weight == pytest.approx(0.0, abs=1e-3)


def _data_only(model, x, y):
    per_example = PER_EXAMPLE(y, model(x, training=True))
    return tf.nn.compute_average_loss(per_example, global_batch_size=8)


def test_a_different_loss_is_not_a_rescaling(strategy):
    def absolute(model, x, y):
        per_example = keras.losses.mean_absolute_error(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=8)

    report = check(strategy, absolute, 8)
    assert report.cause == eq.OTHER
    assert "not a rescaling" in report.message


def test_a_penalty_added_by_hand_is_told_to_move_into_the_model(strategy):
    """A weight penalty written in compute_loss is in no single-device reference: say where."""

    def with_penalty(model, x, y):
        per_example = PER_EXAMPLE(y, model(x, training=True))
        penalty = 0.01 * tf.add_n([tf.reduce_sum(w**2) for w in model.trainable_weights])
        return tf.nn.compute_average_loss(per_example, global_batch_size=8) + penalty

    report = check(strategy, with_penalty, 8)
    assert report.cause == eq.OTHER and not report.equivalent
    assert report.message.startswith("The distributed gradient points another way"), report
    assert "A term added by hand" in report.message and "kernel_regularizer" in report.message


def test_keras_loss_is_divided_by_replicas_in_cross_replica_context_too(strategy):
    y, prediction = tf.ones((4, 1)), tf.zeros((4, 1))
    assert float(KERAS_DEFAULT(y, prediction)) == 1.0
    with strategy.scope():
        assert float(KERAS_DEFAULT(y, prediction)) == pytest.approx(0.25)
    per_replica = strategy.run(lambda: KERAS_DEFAULT(y, prediction))
    assert [float(v) for v in strategy.experimental_local_results(per_replica)] == [0.25] * 4


def test_reference_loss_accepts_loss_objects_and_functions(strategy):
    for loss in (keras.losses.MeanSquaredError(), lambda t, p: tf.reduce_mean((t - p) ** 2, -1)):
        report = mk.check_step_equivalence(right(8), strategy, model_fn(), batch(8), loss=loss)
        assert report.equivalent


def classifier():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, name="logits")])


def class_batch(n=8):
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, 3)).astype("float32"), rng.integers(0, 5, size=(n,))


def cross_entropy(model, x, y):
    per_example = keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True)
    return tf.nn.compute_average_loss(per_example, global_batch_size=8)


def equivalence(strategy, model=None, compute_loss=None, data=None, loss="mse"):
    """check_step_equivalence with the right arguments except those given."""
    return mk.check_step_equivalence(
        compute_loss or right(8),
        strategy,
        model or model_fn(),
        batch(8) if data is None else data,
        loss=loss,
    )


def inside_scope(strategy):
    with strategy.scope():
        return equivalence(strategy)


def with_layer(layer, *args):
    def build():  # a new layer per model: the check builds two
        middle = layer(*args)
        return keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(4), middle, keras.layers.Dense(1)]
        )

    return build


class DropoutBlock(keras.layers.Layer):
    """A learner's own block with a Dropout inside: found although nested."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.dropout = keras.layers.Dropout(0.2)

    def call(self, x, training=None):
        return self.dropout(self.dense(x), training=training)


# What a learner plausibly writes, each a call given the session's strategy.
WRONG_EQUIVALENCE_INPUTS = [
    pytest.param(
        lambda s: equivalence("mirrored"),
        TypeError,
        "strategy",
        r"strategy = mk\.make_strategy\(\)",
        id="strategy-a-string",
    ),
    pytest.param(
        lambda s: equivalence(tf.distribute.MirroredStrategy),
        TypeError,
        "strategy",
        r"the class MirroredStrategy, not a strategy: create one first",
        id="strategy-the-class",
    ),
    pytest.param(
        lambda s: mk.check_step_equivalence(s, model_fn(), right(8), batch(8), loss="mse"),
        TypeError,
        "compute_loss",
        r'write mk\.check_step_equivalence\(compute_loss, strategy, model_fn, batch, loss="mse"\)',
        id="old-argument-order",
    ),
    pytest.param(
        inside_scope, RuntimeError, "strategy", r"outside `with strategy.scope", id="in-scope"
    ),
    pytest.param(
        lambda s: equivalence(s, model=lambda: None),
        TypeError,
        "model_fn",
        r"end it with `return model`",
        id="model_fn-returns-None",
    ),
    pytest.param(
        lambda s: equivalence(s, model=model_fn()()),
        TypeError,
        "model_fn",
        r"builds a NEW model, not a model.*model_fn=build_model",
        id="model_fn-a-model",
    ),
    pytest.param(
        lambda s: equivalence(s, model=with_layer(keras.layers.Dropout, 0.5)),
        ValueError,
        "model_fn",
        r"layer 'dropout\w*' \(Dropout\) draws random numbers.*build Dropout\(0\.0\) instead",
        id="model-with-dropout",
    ),
    pytest.param(
        lambda s: equivalence(s, model=with_layer(keras.layers.BatchNormalization)),
        ValueError,
        "model_fn",
        r"\(BatchNormalization\) normalizes by the statistics.*leave BatchNormalization out",
        id="model-with-batchnorm",
    ),
    pytest.param(
        lambda s: equivalence(
            s, model=lambda: keras.Sequential([keras.Input((3,)), DropoutBlock()])
        ),
        ValueError,
        "model_fn",
        r"\(Dropout\) draws random numbers",
        id="dropout-inside-a-custom-layer",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x, y: None),
        None,
        "compute_loss",
        r"end it with `return loss`",
        id="compute_loss-returns-None",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x, y: (right(8)(m, x, y), 1)),
        None,
        "compute_loss",
        r"return only the loss",
        id="compute_loss-returns-a-tuple",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x, y: PER_EXAMPLE(y, m(x))),
        None,
        "compute_loss",
        r"shape \(2,\), not a scalar",
        id="compute_loss-returns-a-vector",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x: tf.reduce_mean(m(x))),
        None,
        "compute_loss",
        r"must take three arguments, compute_loss\(model, x, y\); yours is <lambda>\(m, x\)",
        id="compute_loss-two-arguments",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x, y: tf.reduce_sum(y)),
        None,
        "compute_loss",
        r"does not depend on the model's weights: compute it from the model's predictions",
        id="compute_loss-ignores-the-model",
    ),
    pytest.param(
        lambda s: equivalence(s, compute_loss=lambda m, x, y: tf.reduce_mean(m(x)["missing"])),
        None,
        "compute_loss",
        r"compute_loss\(model, x, y\) failed on one replica's share",
        id="compute_loss-raises",
    ),
    pytest.param(
        lambda s: equivalence(
            s, model=lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        ),
        None,
        "model",
        r"the model has no trainable weights|failed on one replica's share .*\(2, 3\)",
        id="model-wrong-feature-count",
    ),
    pytest.param(
        lambda s: equivalence(s, data=batch(8)[0]),
        TypeError,
        "batch",
        r"one global batch \(x, y\).*got a ndarray",
        id="batch-x-only",
    ),
    pytest.param(
        lambda s: equivalence(s, data=(*batch(8), 1)),
        TypeError,
        "batch",
        r"got a tuple of 3 items",
        id="batch-three-items",
    ),
    pytest.param(
        lambda s: equivalence(s, data=(batch(8)[0], batch(8)[1][:6])),
        ValueError,
        "y",
        r"x has 8 examples but y has 6.*\(x\[:6\], y\[:6\]\)",
        id="batch-x-and-y-differ",
    ),
    pytest.param(
        lambda s: equivalence(s, data=(batch(8)[0], np.array(["cat", "dog"] * 4))),
        TypeError,
        "y",
        r"y holds text such as 'cat'.*np\.unique\(y, return_inverse=True\)",
        id="string-labels",
    ),
    pytest.param(
        lambda s: equivalence(
            s,
            compute_loss=lambda model, x, y: np.mean(
                keras.losses.mean_squared_error(y, model(x, training=True))
            ),
        ),
        None,
        "compute_loss",
        r"your code turns a tensor into NumPy \(\.numpy\(\), np\.mean, float\(\.\.\.\)\), "
        r"but inside strategy\.run and tf\.function a tensor is symbolic.*tf\.reduce_mean",
        id="numpy-loss-only-traced-fails",
    ),
    pytest.param(
        lambda s: equivalence(s, loss="msee"),
        ValueError,
        "loss",
        r"loss='msee' is not a Keras loss name: use a name such as 'mse'",
        id="loss-misspelt",
    ),
    pytest.param(
        lambda s: equivalence(s, model=classifier, compute_loss=cross_entropy, data=class_batch()),
        ValueError,
        "loss",
        r"the reference loss \(mse\) cannot score this model: predictions of shape \(8, 5\)"
        r".*loss=keras\.losses\.SparseCategoricalCrossentropy",
        id="classifier-checked-with-mse",
    ),
]


@pytest.mark.wrong_inputs("mk.check_step_equivalence")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_EQUIVALENCE_INPUTS)
def test_wrong_inputs_get_a_sentence_without_tensorflow_traceback_text(
    judged, strategy, call, error, argument, match
):
    judged(lambda: call(strategy), error, argument, match)


def test_dropout_with_rate_zero_is_no_obstacle(strategy):
    report = equivalence(strategy, model=with_layer(keras.layers.Dropout, 0.0))
    assert report.equivalent, str(report)


def test_a_tutorial_compute_loss_of_two_arguments_gets_a_one_line_wrapper(strategy):
    def compute_loss(labels, predictions):  # the shape of TensorFlow's tutorials
        return tf.nn.compute_average_loss(PER_EXAMPLE(labels, predictions), global_batch_size=10)

    report = check(strategy, compute_loss, 10)
    assert report.cause == eq.NO_LOSS
    wrapper = "lambda model, x, y: compute_loss(y, model(x, training=True))"
    assert report.message == (
        "compute_loss must take three arguments, compute_loss(model, x, y); yours is "
        f"compute_loss(labels, predictions). Wrap it in one line: pass compute_loss={wrapper}"
    )
    adapted = eval(wrapper, {"compute_loss": compute_loss})
    assert check(strategy, adapted, 10).equivalent  # the wrapper it writes works


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_is_compared_at_the_policy_s_precision(strategy, policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        good = check(strategy, right(10), 10)
        plain = check(strategy, keras_default, 10)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    compute = policy.removeprefix("mixed_")
    assert good.equivalent and good.precision == compute, good.message
    named = f"compared at {compute} precision, as the policy {policy} computes"
    assert named in good.message and f"Under {policy} the model computes in {compute}" in (
        good.message
    )
    tolerance = {"float16": "0.003906", "bfloat16": "0.03125"}[compute]
    assert f"every gradient element within rtol {tolerance} of the largest one" in good.message
    assert plain.cause == eq.KERAS_DEFAULT_UNEVEN and named in plain.message


def test_a_classifier_checked_with_its_own_loss_is_equivalent(strategy):
    report = mk.check_step_equivalence(
        cross_entropy,
        strategy,
        classifier,
        class_batch(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    assert report.equivalent, str(report)


@pytest.mark.parametrize(
    ("loss", "quoted"),
    [
        (
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction='none')",
        ),
        ("own function", "per_example_cross_entropy"),
    ],
)
def test_the_fix_quotes_the_learners_own_loss(strategy, loss, quoted):
    loss = per_example_cross_entropy if loss == "own function" else loss

    def local_mean(model, x, y):
        per_example = keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True)
        return tf.reduce_mean(per_example)

    report = mk.check_step_equivalence(local_mean, strategy, classifier, class_batch(), loss=loss)
    assert report.cause == eq.LOCAL_MEAN
    assert f"loss_fn = {quoted}; per_example = loss_fn(y, " in report.message
    assert "MeanSquaredError" not in report.message


def per_example_cross_entropy(y, logits):
    return keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)


def _probabilities_model():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, activation="softmax")])


def _as_probabilities(model, x, y):
    per_example = keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=False)
    return tf.nn.compute_average_loss(per_example, global_batch_size=8)


@pytest.mark.parametrize(
    "loss",
    ["sparse_categorical_crossentropy", keras.losses.SparseCategoricalCrossentropy()],
    ids=["name", "loss object"],
)
def test_a_right_logits_step_against_a_reference_without_from_logits_names_the_reference(
    strategy, loss
):
    report = equivalence(strategy, classifier, cross_entropy, class_batch(), loss=loss)
    assert not report.passed and report.cause == eq.REFERENCE_FROM_LOGITS
    assert "it is the reference that differs" in report.message
    assert "loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)" in report.message
    fixed = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert equivalence(strategy, classifier, cross_entropy, class_batch(), loss=fixed).passed


def test_a_step_reading_logits_as_probabilities_is_the_learner_s_mistake(strategy):
    reference = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    report = equivalence(strategy, classifier, _as_probabilities, class_batch(), loss=reference)
    assert report.cause == eq.FROM_LOGITS
    assert "Your compute_loss reads the model's outputs with from_logits=False" in report.message
    assert "use from_logits=True in compute_loss" in report.message


def test_softmax_outputs_are_right_either_way_because_keras_reads_their_logits(strategy):
    # Keras 3 takes a Softmax layer's input as the logits whatever from_logits says (with a
    # warning for from_logits=True), so both readings give the same gradient here.
    with pytest.warns(UserWarning, match="does not represent logits"):
        report = equivalence(
            strategy,
            _probabilities_model,
            cross_entropy,
            class_batch(),
            loss="sparse_categorical_crossentropy",
        )
    assert report.passed
