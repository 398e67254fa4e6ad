from ls_trajeval.core import config as cfg
from ls_trajeval.core.labels import StepLabel
from ls_trajeval.core.scoring import running_scores, summarize

W = {"minor": -1, "major": -5, "critical": -10}
ERR = ("incorrect",)


def steps(*specs):
    return [StepLabel(i, c, severity=s) for i, (c, s) in enumerate(specs)]


def test_guide_example_major_then_critical():
    # the guide: step 3 major (-5) takes 100 to 95, step 7 critical (-10) takes it to 85
    labels = [StepLabel(i, "correct") for i in range(8)]
    labels[3] = StepLabel(3, "incorrect", severity="major")
    labels[7] = StepLabel(7, "incorrect", severity="critical")
    assert running_scores(labels, W, ERR) == [100, 100, 100, 95, 95, 95, 95, 85]


def test_floor_at_min_never_goes_below():
    labels = steps(*[("incorrect", "critical")] * 12)
    curve = running_scores(labels, W, ERR, initial=100, minimum=0)
    assert curve[9] == 0 and curve[-1] == 0 and min(curve) == 0
    assert running_scores(labels, W, ERR, initial=50, minimum=20)[-1] == 20


def test_custom_weights_use_magnitude_whatever_the_sign():
    labels = steps(("incorrect", "low"), ("incorrect", "high"), ("correct", None))
    assert running_scores(labels, {"low": -2.5, "high": 7}, ERR, initial=10) == [7.5, 0.5, 0.5]


def test_correct_steps_with_leftover_severity_cost_nothing_and_partial_counts_when_listed():
    labels = steps(("correct", "critical"), ("partially_correct", "major"), ("incorrect", None),
                   ("incorrect", "unknown"))
    assert running_scores(labels, W, ("incorrect",)) == [100, 100, 100, 100]
    assert running_scores(labels, W, ("incorrect", "partially_correct")) == [100, 95, 95, 95]


def test_summary_figures():
    scheme = cfg.loads("""
annotation_schemes:
  - annotation_type: trajectory_eval
    name: e
    error_taxonomy: [{category: c, types: [{name: t}]}]
""").trajectory
    labels = steps(("correct", None), ("incorrect", "minor"), ("incorrect", "critical"), ("incorrect", "major"))
    s = summarize(labels, scheme)
    assert s.curve == [100, 99, 89, 84] and s.final == 84
    assert (s.n_errors, s.first_error_step, s.worst_severity) == (3, 1, "critical")
    empty = summarize(steps(("correct", None)), scheme)
    assert (empty.final, empty.n_errors, empty.first_error_step, empty.worst_severity) == (100, 0, None, None)
