import math

import numpy as np
import pytest

from mirrorkit.measure.allreduce import benchmark_all_reduce
from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
from mirrorkit.measure.cost_model import CostModel, fit_cost_model
from mirrorkit.measure.links import LINKS, Link
from mirrorkit.measure.schedules import schedule
from mirrorkit.measure.step_prediction import StepPrediction
from mirrorkit.measure.synthetic import synthetic_benchmark

SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20)
LAUNCH, ALPHA, BANDWIDTH = 4e-4, 7e-5, 3e9


def seconds(algorithm, replicas, nbytes, launch=LAUNCH, alpha=ALPHA, bandwidth=BANDWIDTH):
    """The model's time, written out here from schedules.py alone (not from cost_model)."""
    plan = schedule(algorithm, replicas)
    busiest = plan.busiest_link_bytes(nbytes // 4, 4)
    return launch + alpha * len(plan.steps) + busiest / bandwidth


def made_up(algorithm, replicas, sizes=SIZES, noise=0.0, seed=0, **parameters):
    """A benchmark of records generated from known parameters, with relative noise."""
    rng = np.random.default_rng(seed)
    records = []
    for n in replicas:
        for nbytes in sizes:
            t = seconds(algorithm, n, nbytes, **parameters)
            times = [t * math.exp(noise * rng.standard_normal()) for _ in range(3)]
            records.append(record_from_times(algorithm, n, nbytes, times, 1e10))
    return AllReduceBenchmark(tuple(records))


def relative(got, want):
    return abs(got - want) / abs(want)


# -- exact data are fitted back exactly -----------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "replicas"),
    [
        ("collective", (2, 3, 4)),
        ("collective", (2, 8)),
        ("nccl", (2, 4)),
        ("hierarchical_copy", (2, 3, 4)),
        ("hierarchical_copy", (2, 4, 6)),
    ],
)
def test_exact_measurements_give_back_the_parameters_they_came_from(algorithm, replicas):
    fit = fit_cost_model(made_up(algorithm, replicas)).fits[algorithm]
    assert not fit.merged
    assert relative(fit.launch_s, LAUNCH) < 1e-9
    assert relative(fit.alpha_s, ALPHA) < 1e-9
    assert relative(fit.bandwidth, BANDWIDTH) < 1e-9
    assert max(abs(p.residual) for p in fit.points) < 1e-9
    assert fit.at_bound == ()


@pytest.mark.parametrize(
    ("algorithm", "replicas", "steps", "why"),
    [
        ("one_device", (2, 3, 4), 2, "2 steps on every replica count"),
        ("collective", (4,), 6, "only 4 replicas were measured"),
        ("hierarchical_copy", (4,), 4, "only 4 replicas were measured"),
    ],
)
def test_one_step_count_merges_launch_and_alpha_into_one_fixed_cost(
    algorithm, replicas, steps, why
):
    model = fit_cost_model(made_up(algorithm, replicas))
    fit = model.fits[algorithm]
    assert fit.merged and fit.launch_s is None and fit.alpha_s is None
    assert fit.fixed_steps == steps
    assert relative(fit.fixed_s, LAUNCH + steps * ALPHA) < 1e-9
    assert relative(fit.bandwidth, BANDWIDTH) < 1e-9
    assert why in fit.merged_because
    text = str(model)
    assert "launch and alpha merged" in text and why in text


def test_a_parameter_that_is_zero_is_found_at_zero():
    fit = fit_cost_model(made_up("collective", (2, 4), alpha=0.0)).fits["collective"]
    assert fit.alpha_s < 1e-12
    assert relative(fit.launch_s, LAUNCH) < 1e-9
    assert relative(fit.bandwidth, BANDWIDTH) < 1e-9


def test_noisy_measurements_are_fitted_approximately():
    sizes = [4096 * 4**k for k in range(7)]  # 4 KiB to 16 MiB
    measured = made_up("collective", (2, 3, 4), sizes=sizes, noise=0.05, seed=1)
    fit = fit_cost_model(measured).fits["collective"]
    assert relative(fit.bandwidth, BANDWIDTH) < 0.1
    for n in (2, 3, 4):  # the fixed cost at each replica count is what the data determine
        steps = len(schedule("collective", n).steps)
        fixed, error = fit.fixed_cost(steps)
        assert relative(fixed, LAUNCH + ALPHA * steps) < 0.1
        assert error is not None and error > 0
    assert fit.median_abs_residual < 0.1
    assert all(e is None or e > 0 for e in fit.errors.values())


def test_parameters_never_go_negative_and_the_fit_is_the_constrained_optimum():
    # Made with a negative launch, which no cost can be: the fit holds launch at 0.
    measured = made_up("collective", (2, 3, 4), launch=-1e-4, alpha=2e-4, noise=0.02)
    fit = fit_cost_model(measured).fits["collective"]
    assert fit.launch_s == 0 and "launch" in fit.at_bound
    assert fit.alpha_s > 0 and fit.bandwidth > 0
    # Karush-Kuhn-Tucker: zero gradient for the free parameters, pointing inwards at 0.
    t = np.array([p.measured_s for p in fit.points])
    a = (
        np.column_stack(
            [np.ones_like(t), [p.steps for p in fit.points], [p.link_bytes for p in fit.points]]
        )
        / t[:, None]
    )
    x = np.array([fit.launch_s, fit.alpha_s, 1 / fit.bandwidth])
    gradient = a.T @ (a @ x - 1)
    scale = np.linalg.norm(a, axis=0)
    assert gradient[0] / scale[0] > 0  # moving launch up from 0 would cost more
    assert np.all(np.abs(gradient[1:] / scale[1:]) < 1e-9)
    assert "launch held at 0" in str(fit_cost_model(measured))


def test_uncertain_split_is_reported_with_the_fixed_cost_per_replica_count():
    # Two step counts and noise: launch and alpha poorly separated, their sums well known.
    measured = made_up("collective", (2, 4), sizes=(4096, 1 << 20), noise=0.2, seed=3)
    model = fit_cost_model(measured)
    fit = model.fits["collective"]
    assert fit.uncertain == ("alpha",)  # this seed's draw: alpha ± more than half of it
    text = str(model)
    assert "do not pin down how the fixed cost splits" in text
    assert "2 replicas (2 steps)" in text and "4 replicas (6 steps)" in text
    for steps in (2, 6):  # the fixed costs it prints instead are well determined
        fixed, error = fit.fixed_cost(steps)
        assert error < 0.2 * fixed
    # Beyond the measured step counts, a prediction says its fixed cost is extrapolated.
    far = model.predict_step(parameters=1000, replicas=8, compute_s=0.01, link="pcie4_x16")
    assert len(far.caveats) == 1 and "14 steps lie outside the measured 2 to 6" in str(far)
    near = model.predict_step(parameters=1000, replicas=4, compute_s=0.01, link="pcie4_x16")
    assert near.caveats == ()
    given = model.predict_step(parameters=1000, replicas=8, compute_s=0.01, alpha=1e-6)
    assert given.caveats == ()


# -- a real benchmark -------------------------------------------------------------------------


def test_a_real_benchmark_fits_with_finite_nonnegative_parameters(devices):
    measured = benchmark_all_reduce(
        ["collective", "one_device"],
        sizes=["4KiB", "256KiB", "8MiB"],  # 8 MiB: time clearly grows with size, even here
        replicas=[2, 4],
        repeats=3,
        warmup=1,
        copy_bytes=1 << 20,
    )
    model = fit_cost_model(measured)
    seen = f"{measured}\n{model}"  # shown if an assertion fails
    assert set(model.fits) == {"collective", "one_device"}, seen
    for fit in model.fits.values():
        numbers = [fit.launch_s, fit.alpha_s, fit.fixed_s, fit.bandwidth]
        assert all(v is None or (math.isfinite(v) and v >= 0) for v in numbers), seen
        assert fit.bandwidth > 0, seen
        assert math.isfinite(fit.median_abs_residual)
    assert model.fits["one_device"].merged
    # Every record has its row, with measured, predicted and residual.
    assert sum(len(f.points) for f in model.fits.values()) == len(measured.records)
    table = str(model).splitlines()
    rows = [line for line in table if line.startswith(("collective ", "one_device "))]
    assert len(rows) == len(measured.records)
    assert all(line.rstrip().endswith("%") for line in rows)
    assert "simulated on one CPU" in str(model)
    assert "<table" in model._repr_html_()
    assert model.predict("4MiB", 4, algorithm="collective") > 0


# -- predictions -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> CostModel:
    both = made_up("collective", (2, 4)).records + made_up("one_device", (2, 4)).records
    return fit_cost_model(AllReduceBenchmark(both))


@pytest.mark.parametrize("algorithm", ["collective", "one_device"])
@pytest.mark.parametrize("replicas", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("nbytes", [4096, 12 << 20, 100_000_000])
def test_predict_is_the_model_written_out(model, algorithm, replicas, nbytes):
    want = seconds(algorithm, replicas, nbytes)
    assert relative(model.predict(nbytes, replicas, algorithm=algorithm), want) < 1e-9


def test_predictions_grow_with_size_and_scale_with_replicas_as_the_schedule_says(model):
    def predict(nbytes, n, algorithm):
        return model.predict(nbytes, n, algorithm=algorithm)

    for algorithm in ("collective", "one_device"):
        times = [predict(4096 * 4**k, 4, algorithm) for k in range(8)]
        assert times == sorted(times) and times[0] < times[-1]
    # Bandwidth term only (a custom link, alpha 0; launch subtracted): the ring sends
    # 2 (n - 1) / n of the tensor, replica 0 of one_device 2 (n - 1) tensors.
    fast = Link("test link", 1e9, "per direction", "https://example.org")
    nbytes = 1 << 24

    def ring(n):
        return model.predict(nbytes, n, "collective", link=fast, alpha=0.0) - LAUNCH

    def one_device(n):  # merged: subtract its fixed cost
        return model.predict(nbytes, n, "one_device", link=fast) - model.fits["one_device"].fixed_s

    assert relative(ring(2), nbytes / 1e9) < 1e-9
    assert relative(ring(8) / ring(2), 1.75) < 1e-9
    assert relative(ring(64) / ring(2), 2 * 63 / 64) < 1e-9
    assert relative(one_device(2), 2 * nbytes / 1e9) < 1e-9
    assert relative(one_device(4) / one_device(2), 3.0) < 1e-9


def test_one_device_cannot_take_another_alpha_but_predicts_any_replica_count(model):
    # one_device is merged (2 steps always): every replica count has those 2 steps.
    fixed = model.fits["one_device"].fixed_s
    for n in (2, 5, 64):
        link_bytes = schedule("one_device", n).busiest_link_bytes(1 << 18, 4)
        want = fixed + link_bytes / BANDWIDTH
        assert relative(model.predict(1 << 20, n, algorithm="one_device"), want) < 1e-9
    with pytest.raises(ValueError, match="merged launch and alpha"):
        model.predict(1 << 20, 4, algorithm="one_device", alpha=1e-6)


def test_a_link_replaces_the_bandwidth_and_keeps_the_fitted_launch_and_alpha(model):
    nbytes, n = 64 << 20, 8
    link_bytes = schedule("collective", n).busiest_link_bytes(nbytes // 4, 4)
    for name, link in LINKS.items():
        got = model.predict(nbytes, n, algorithm="collective", link=name)
        want = LAUNCH + ALPHA * 14 + link_bytes / link.bandwidth
        assert relative(got, want) < 1e-9, name
    given = model.predict(nbytes, n, algorithm="collective", link="nvlink4_h100", alpha=5e-6)
    assert relative(given, LAUNCH + 5e-6 * 14 + link_bytes / 450e9) < 1e-9
    # Names are also found case-insensitively, and by the link's own name.
    assert model.predict(nbytes, n, "collective", link="PCIe 5.0 x16") == model.predict(
        nbytes, n, "collective", link="pcie5_x16"
    )


def test_predict_step_times_and_efficiencies(model):
    step = model.predict_step(
        parameters=25_000_000, replicas=4, compute_s=0.08, algorithm="collective"
    )
    assert isinstance(step, StepPrediction)
    assert step.nbytes == 100_000_000 and step.dtype == "float32"
    assert relative(step.all_reduce_s, seconds("collective", 4, 100_000_000)) < 1e-9
    assert step.no_overlap_s == pytest.approx(0.08 + step.all_reduce_s)
    assert step.overlap_s == pytest.approx(max(0.08, step.all_reduce_s))
    assert step.efficiency_no_overlap == pytest.approx(0.08 / step.no_overlap_s)
    assert step.efficiency_overlap == pytest.approx(0.08 / step.overlap_s)
    assert step.efficiency_no_overlap <= step.efficiency_overlap <= 1
    # Bytes given directly, and half-precision gradients.
    same = model.predict_step(
        nbytes=100_000_000, replicas=4, compute_s=0.08, algorithm="collective"
    )
    assert same.all_reduce_s == step.all_reduce_s and same.parameters is None
    for dtype in ("float16", "bfloat16", np.float16):
        half = model.predict_step(
            parameters=25_000_000, dtype=dtype, replicas=4, compute_s=0.08, algorithm="collective"
        )
        assert half.nbytes == 50_000_000
        assert half.all_reduce_s < step.all_reduce_s


def test_predict_step_report_says_where_each_number_comes_from(model):
    on_link = model.predict_step(
        parameters=10_000_000, replicas=8, compute_s=0.05, algorithm="collective", link="pcie4_x16"
    )
    text = str(on_link)
    assert text.startswith("Predicted step: 10,000,000 float32 parameters")
    assert "Launch and alpha come from the fit on this machine" in text
    assert LINKS["pcie4_x16"].source in text
    assert "bytes_per_pack=0" in text  # what TensorFlow does, read in its source
    assert "scaling efficiency" in text and "perfect overlap" in text
    given = model.predict_step(
        parameters=10_000_000,
        replicas=8,
        compute_s=0.05,
        algorithm="collective",
        link="pcie4_x16",
        alpha=2e-6,
    )
    assert "the value you gave" in str(given)
    assert "<table" in given._repr_html_()


def test_synthetic_benchmark_matches_the_written_out_model():
    measured = synthetic_benchmark(LAUNCH, ALPHA, BANDWIDTH, replicas=[2, 3], sizes=SIZES)
    for record in measured.records:
        want = seconds(record.algorithm, record.replicas, record.bytes)
        assert relative(record.median_s, want) < 1e-12


# -- links ----------------------------------------------------------------------------------


GOOD = made_up("collective", (2, 4))

WRONG_FITS = [
    pytest.param(
        lambda: fit_cost_model(AllReduceBenchmark(())),
        ValueError,
        "benchmark",
        r"has no records.*measure first, e\.g\. benchmark_all_reduce",
        id="empty benchmark",
    ),
    pytest.param(
        lambda: fit_cost_model("results.json"),
        TypeError,
        "benchmark",
        r"AllReduceBenchmark.from_json",
        id="a file name",
    ),
    pytest.param(
        lambda: fit_cost_model(GOOD, algorithms="ring"),
        ValueError,
        "algorithms",
        r"unknown all-reduce algorithm 'ring'; choose from 'collective'",
        id="unknown algorithm",
    ),
    pytest.param(
        lambda: fit_cost_model(GOOD, algorithms=["one_device"]),
        ValueError,
        "algorithms",
        r"no records of it.*benchmark_all_reduce\(\['one_device'\]",
        id="algorithm not measured",
    ),
    pytest.param(
        lambda: fit_cost_model(made_up("collective", (2, 4), sizes=(4096,))),
        ValueError,
        "benchmark",
        r"one size only.*measure at least two sizes",
        id="one size",
    ),
    pytest.param(
        lambda: fit_cost_model(
            AllReduceBenchmark(
                made_up("collective", (2,), sizes=(4096,)).records
                + made_up("collective", (4,), sizes=(8192,)).records
            )
        ),
        ValueError,
        "benchmark",
        r"2 records of collective, fewer than the 3 parameters to fit "
        r"\(launch, alpha, bandwidth\); measure more sizes",
        id="too few records",
    ),
    pytest.param(
        lambda: fit_cost_model(
            AllReduceBenchmark(
                made_up("collective", (2,), sizes=(4096,)).records
                + made_up("collective", (4,), sizes=(8192,)).records * 2
            )
        ),
        ValueError,
        "benchmark",
        r"cannot separate the parameters.*two or more sizes on each replica count",
        id="one size per replica count",
    ),
    pytest.param(
        lambda: fit_cost_model(GOOD, algorithms=5),
        TypeError,
        "algorithms",
        r"a name or a list of names.*algorithms=\['collective', 'one_device'\]",
        id="algorithms a number",
    ),
]


@pytest.mark.wrong_inputs("mk.fit_cost_model")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_FITS)
def test_wrong_fit_arguments_get_a_clear_message(refuses, call, error, argument, match):
    refuses(call, error, argument, match)


def test_as_many_records_as_parameters_fit_exactly_without_error_bars():
    two = made_up("collective", (4,), sizes=(4096, 1 << 20))  # merged: 2 parameters
    fit = fit_cost_model(two).fits["collective"]
    assert relative(fit.fixed_s, LAUNCH + 6 * ALPHA) < 1e-9
    assert fit.errors == {"fixed": None, "bandwidth": None}
    assert "no residual is left to judge the uncertainty" in str(fit_cost_model(two))


FITTED = fit_cost_model(
    AllReduceBenchmark(
        made_up("collective", (2, 4)).records
        + made_up("one_device", (2, 4)).records
        + made_up("hierarchical_copy", (4,)).records
    )
)

WRONG_PREDICTIONS = [
    pytest.param(
        dict(nbytes="1MiB", replicas=4, algorithm="collective", link="nvlink"),
        ValueError,
        "link",
        r"not in LINKS; did you mean 'nvlink\d_\w+'\? choose one of pcie4_x16",
        id="unknown link",
    ),
    pytest.param(
        dict(nbytes=-4, replicas=4, algorithm="collective"),
        ValueError,
        "nbytes",
        r"must be positive, got -4: pass the bytes each replica all-reduces",
        id="negative size",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=1, algorithm="collective"),
        ValueError,
        "replicas",
        r"at least 2, got 1.*ask for 2 or more",
        id="one replica",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas="4", algorithm="collective"),
        TypeError,
        "replicas",
        r"must be an int, got str '4'",
        id="replicas as text",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=4, algorithm="ring"),
        ValueError,
        "algorithm",
        r"not an all-reduce algorithm; choose from",
        id="unknown algorithm",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=4, algorithm="nccl"),
        ValueError,
        "algorithm",
        r"was not fitted.*benchmark_all_reduce\(\['nccl'\]",
        id="algorithm not fitted",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=4),
        ValueError,
        "algorithm",
        r"algorithm is needed: this model fitted 'collective', 'one_device'",
        id="which algorithm",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=4, algorithm="collective", alpha=-1e-6),
        ValueError,
        "alpha",
        r"0 or more seconds per step.*alpha=5e-6",
        id="negative alpha",
    ),
    pytest.param(
        dict(nbytes="1 MB/s", replicas=4, algorithm="collective"),
        ValueError,
        "nbytes",
        r"cannot read the size",
        id="a rate for a size",
    ),
    pytest.param(
        dict(nbytes="1MiB", replicas=2, algorithm="hierarchical_copy"),
        ValueError,
        "replicas",
        r"merged launch and alpha.*measure hierarchical_copy on more replica counts",
        id="replica count a merged fit cannot predict",
    ),
]


@pytest.mark.wrong_inputs("mk.CostModel.predict")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_PREDICTIONS)
def test_wrong_predict_arguments_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: FITTED.predict(**kwargs), error, argument, match)


STEP = dict(replicas=4, compute_s=0.05, algorithm="collective")
WRONG_STEPS = [
    pytest.param(
        STEP | dict(parameters=1000, nbytes=4000),
        ValueError,
        "parameters",
        r"give the gradients' size once.*not both",
        id="parameters and bytes",
    ),
    pytest.param(
        STEP,
        ValueError,
        "nbytes",
        r"parameters .* or nbytes .*, not neither",
        id="no size",
    ),
    pytest.param(
        STEP | dict(parameters=1000, compute_s=0),
        ValueError,
        "compute_s",
        r"above 0.*compute_s=0\.05",
        id="no compute",
    ),
    pytest.param(
        STEP | dict(parameters=1000, dtype="int8"),
        ValueError,
        "dtype",
        r"not a gradient dtype here; choose 'float32', 'float16'",
        id="integer dtype",
    ),
    pytest.param(
        STEP | dict(parameters=-5),
        ValueError,
        "parameters",
        r"must be positive, got -5.*model\.count_params\(\)",
        id="negative parameters",
    ),
    pytest.param(
        STEP | dict(parameters=2.5e6 + 0.5),
        TypeError,
        "parameters",
        r"must be a whole number",
        id="fractional parameters",
    ),
    pytest.param(
        STEP | dict(parameters=1000, link=42),
        TypeError,
        "link",
        r"a name in LINKS or a Link.*link='nvlink4_h100'",
        id="link a number",
    ),
]


@pytest.mark.wrong_inputs("mk.CostModel.predict_step")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_STEPS)
def test_wrong_predict_step_arguments_get_a_clear_message(refuses, kwargs, error, argument, match):
    refuses(lambda: FITTED.predict_step(**kwargs), error, argument, match)
