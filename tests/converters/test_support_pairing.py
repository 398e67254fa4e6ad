"""StepList pairing when a source reuses call ids (tau-bench's recorded OpenAI ids, providers that give
parallel calls one id): each result goes to the earliest call of its id still waiting for one."""
from ls_trajeval.converters.support.steps import StepList, step


def _contents(out):
    return [s.content for s in out.steps()]


def test_an_id_reused_in_a_later_turn_pairs_with_the_later_call():
    out = StepList()
    out.call("c1", step("action", "get_user", ""))
    out.result("c1", step("observation", "user"))
    out.call("c1", step("action", "calculate", ""))
    out.result("c1", step("observation", "42"))
    assert _contents(out) == ["get_user", "user", "calculate", "42"]


def test_parallel_calls_sharing_an_id_take_their_results_in_order():
    out = StepList()
    out.call("same", step("action", "a", ""))
    out.call("same", step("action", "b", ""))
    out.result("same", step("observation", "ra"))
    out.result("same", step("observation", "rb"))
    assert _contents(out) == ["a", "ra", "b", "rb"]


def test_a_second_result_of_an_answered_call_follows_the_latest_call():
    out = StepList()
    out.call("k", step("action", "a", ""))
    out.result("k", step("observation", "r1"))
    out.result("k", step("observation", "r2"))
    assert _contents(out) == ["a", "r1", "r2"]
    assert out.has_call("k") and not out.has_call("other")


def test_an_unknown_id_stays_in_place_marked_unpaired():
    out = StepList()
    out.call("k", step("action", "a", ""))
    assert out.result("x", step("observation", "orphan")) is False
    assert _contents(out) == ["a", "orphan"]
    assert out.steps()[1]["metadata"] == {"unpaired": True}


def test_a_batch_adds_nothing_until_committed_and_pairs_across_records():
    from ls_trajeval.converters.support.steps import StepBatch

    out = StepList()
    first = StepBatch()
    first.call("a", step("action", "read", ""))
    first.call("b", step("action", "grep", ""))
    first.commit(out)
    failed = StepBatch()  # a record that broke part-way: never committed, so none of its steps show
    failed.add(step("message", "half a record"))
    failed.discard()
    failed.result("b", step("observation", "rb"))  # the same batch serves the next record
    failed.result("a", step("observation", "ra"))
    assert _contents(out) == ["read", "grep"]
    failed.commit(out)
    assert _contents(out) == ["read", "ra", "grep", "rb"]


def test_results_go_after_their_calls_group_with_later_steps_in_between():
    # the step list is one list: a result whose call's group is not at its end is put in the middle, after the
    # call's earlier results; the later steps keep their order
    out = StepList()
    out.call("a", step("action", "a", ""))
    out.call("b", step("action", "b", ""))
    out.add(step("message", "m"))
    out.result("b", step("observation", "rb1"))
    out.result("a", step("observation", "ra"))
    out.result("b", step("observation", "rb2"))  # a second result of b: after its first
    out.add(step("message", "n"))
    out.result("a", step("observation", "ra2"))
    assert _contents(out) == ["a", "ra", "ra2", "b", "rb1", "rb2", "m", "n"]
    assert len(out) == 8
