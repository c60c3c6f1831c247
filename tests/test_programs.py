"""Random programs (``programs.programs``): gradients and second derivatives against finite differences, and
the tape's promises as properties: entries freed as the replay goes and nothing alive after it, nothing
recorded outside ``record()``, persistent tapes replay identically, gradients accumulate."""

import weakref

import numpy as np
from hypothesis import example, given, settings
from programs import Program, Step, programs

import tapegrad as tg
from tapegrad import tape

FEW = max(5, settings.default.max_examples // 3)  # second derivatives cost a nested tape per evaluation


def _leaves(program):
    return [tg.Tensor(a, requires_grad=True) for a in program.inputs]


def _cotangent(out):
    return np.random.default_rng(0).uniform(0.5, 1.5, out.shape)


@given(programs())
def test_program_gradients_match_finite_differences(program):
    assert tg.gradcheck(program, *program.inputs)


@settings(max_examples=FEW)
@given(programs(max_steps=6))
def test_program_second_derivatives_match_finite_differences(program):
    assert tg.gradgradcheck(program, *program.inputs)


@given(programs())
# found by hypothesis: np.squeeze of an array with no size-1 axis returns that array itself, the input's
@example(Program((np.array(0.0),), (Step("squeeze", (0,), {}), Step("tanh", (0,), {}))))
def test_after_backward_the_tape_is_empty_and_no_intermediate_is_alive(program):
    xs = _leaves(program)
    with tape.record() as t:
        values = program.run(*xs)
    out = values[-1]
    probes = [weakref.ref(v.data) for v in values[len(xs) : -1]] + [weakref.ref(v._node) for v in values[len(xs) : -1]]
    del values
    out.backward(_cotangent(out))
    assert len(t) == 0 and t.entries == [] and t.saved_bytes() == 0
    # The output is kept, and an array it is a view of stays with it; np.squeeze may return its input itself.
    kept, a = {id(x.data) for x in xs}, out.data
    while a is not None:
        kept.add(id(a))
        a = a.base
    alive = [r() for r in probes if r() is not None and id(r()) not in kept and r() is not out._node]
    assert not alive, f"{len(alive)} intermediates outlived backward(): {[type(o).__name__ for o in alive]}"
    assert all(x.grad is None or x.grad.shape == x.shape for x in xs)  # None: an input the program never read


@given(programs())
def test_replay_frees_each_entry_as_it_goes(program):
    # A hook on each step's value runs when the replay reaches it: every entry recorded after that value
    # must already be freed then, so memory falls during backward(), not only at its end.
    xs = _leaves(program)
    values, recorded = list(xs), []
    with tape.record() as t:
        for step in program.steps:
            values.append(step.run(values))
            recorded.append(len(t))
    seen = []
    for v, n in zip(values[len(xs) :], recorded):
        if v.requires_grad:
            v.register_hook(lambda g, n=n: seen.append((len(t), n)))
    out = values[-1]
    del values
    out.backward(_cotangent(out))
    assert all(live <= n for live, n in seen), f"live entries vs entries up to the hooked value: {seen}"


@given(programs())
def test_nothing_is_recorded_outside_record(program):
    xs = _leaves(program)
    with tape.record() as t:
        program(*xs)
    n = len(t)
    values = program.run(*xs)
    assert tape.current() is None and len(t) == n
    assert all(not v.requires_grad and v.is_leaf for v in values[len(xs) :])
    t.release()


@given(programs())
def test_persistent_tape_gives_identical_gradients_twice(program):
    xs = _leaves(program)
    with tape.record(persistent=True) as t:
        out = program(*xs)
    v = _cotangent(out)
    first = t.gradient(out, xs, output_gradients=v, unconnected="zero")
    second = t.gradient(out, xs, output_gradients=v, unconnected="zero")
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    out.backward(v)
    out.backward(v)
    for x, g in zip(xs, first):
        np.testing.assert_array_equal(np.zeros_like(g) if x.grad is None else x.grad, 2 * g)
    t.release()
    assert len(t) == 0


@given(programs())
def test_gradients_accumulate_over_two_recorded_runs(program):
    xs = _leaves(program)
    once = []
    for run in range(2):
        with tape.record():
            out = program(*xs)
        out.backward(_cotangent(out))
        if run == 0:
            once = [None if x.grad is None else x.grad.copy() for x in xs]
    for x, g in zip(xs, once):
        if g is None:
            assert x.grad is None
        else:
            np.testing.assert_array_equal(x.grad, 2 * g)
