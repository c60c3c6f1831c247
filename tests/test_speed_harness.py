"""The speed benchmark's harness on tiny sizes: its gradient check passes for every engine installed and fails
loudly for a wrong one, skipped engines come with a note, and rounds interleave engines. Nothing here looks at
a time."""

import dataclasses
import time

import numpy as np
import pytest

from benchmarks import speed, speed_engines
from benchmarks.speed_engines import ENGINES, TINY, WORKLOADS, available_engines, check, workload


def test_every_installed_engine_matches_hand_written_numpy():
    engines, _ = available_engines()
    assert {"numpy", "tapegrad"} <= {e.name for e in engines}
    assert check(engines, TINY) == list(WORKLOADS)


@pytest.mark.parametrize("name", WORKLOADS)
def test_engines_start_from_the_same_arrays(name):
    # The check is meaningful only if every engine computes the same function: equal losses say so.
    engines, _ = available_engines()
    losses = [float(np.asarray(_loss(e.name, workload(e, name, TINY)[0]()))) for e in engines if e.runs(name)]
    np.testing.assert_allclose(losses, losses[0], rtol=1e-5)


def _loss(engine, state):
    if engine in ("numpy", "numpy-tight"):
        return state[0]
    if engine == "compiled":
        return state[0] if isinstance(state, tuple) else state
    if engine == "autograd":
        return state[1]
    if engine == "torch":
        return state.detach().numpy()
    return state.data


def _scaled(builder, factor):
    def build(*args):
        forward, backward = builder(*args)
        return forward, lambda state: [g * factor for g in backward(state)]

    return build


@pytest.mark.parametrize("name", WORKLOADS)
def test_a_wrong_gradient_fails_the_check_naming_the_engine(name):
    good = ENGINES["tapegrad"]
    broken = dataclasses.replace(
        good,
        name="broken",
        chain=_scaled(good.chain, 1.001),
        fanout=_scaled(good.fanout, 1.001),
        mlp=_scaled(good.mlp, 1.001),
    )
    with pytest.raises(AssertionError, match=f"broken {name}: gradient 0"):
        check([ENGINES["numpy"], broken], TINY, [name])


def test_an_engine_that_cannot_be_imported_is_skipped_with_a_note(monkeypatch):
    absent = dataclasses.replace(ENGINES["torch"], name="absent", needs="no_such_module_xyz", missing="pip install it")
    monkeypatch.setitem(ENGINES, "absent", absent)
    engines, notes = available_engines(["numpy", "absent"])
    assert [e.name for e in engines] == ["numpy"]
    assert len(notes) == 1 and notes[0].startswith("absent: skipped") and "pip install it" in notes[0]


def test_rounds_interleave_engines_in_a_rotating_order(monkeypatch):
    calls = []

    def recording(name):
        def build(*args):
            return (lambda: calls.append(name)), (lambda state: None)

        return dataclasses.replace(ENGINES["numpy"], name=name, chain=build)

    monkeypatch.setattr(speed, "WARMUP", 0)
    engines = [recording("a"), recording("b"), recording("c")]
    samples = speed.measure(engines, ["chain"], TINY, rounds=3, passes={"chain": 1})
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert {k: len(v) for k, v in samples["chain"].items()} == {"a": 3, "b": 3, "c": 3}


def test_paired_ratio_is_taken_within_each_round():
    # Round 2 is slow for both engines (a burst of load): per-round ratios are unaffected by it.
    samples = {"x": [(1.0, 1.0), (10.0, 10.0), (1.0, 1.0)], "ref": [(2.0, 2.0), (20.0, 20.0), (2.0, 2.0)]}
    assert speed.paired_ratio(samples, "x", "ref") == (0.5, 0.5, 0.5)


def test_per_op_figures_divide_by_the_ops_recorded():
    assert speed_engines.op_count("chain", TINY) == TINY.chain_ops + 1
    samples = {"numpy": [(1e-6 * 9, 0.0)] * 3}  # 9 µs for the 8-op chain and its sum
    stats = speed.summarise(samples, "chain", TINY)["numpy"]
    assert stats["total"] == pytest.approx(1.0)


def test_the_cold_cache_forwards_compute_the_same_loss_and_fill_between_every_op():
    # mlp_gap --cold-cache subtracts NumPy's forward from tapegrad's: meaningful only for the same ops
    from benchmarks import mlp_gap

    calls = []
    numpy_forward, tapegrad_forward = mlp_gap.tiny_forwards(np.float64, lambda: calls.append(1))
    loss = numpy_forward()
    per_forward = len(calls)
    assert per_forward == 10  # three matmuls and bias adds, two ReLUs, the difference and its square
    np.testing.assert_allclose(float(tapegrad_forward()), loss, rtol=1e-12)
    assert len(calls) == 2 * per_forward
    rows = mlp_gap.cold_cache(np.float64, 0.0625, 3, time.perf_counter)
    tables = [i for i, row in enumerate(rows) if row.startswith("**")]
    assert len(tables) == 2 and "forward" in rows[tables[0]] and "backward" in rows[tables[1]]
    for first in (tables[1] - 3, len(rows) - 2):  # each table's two rows: without the fill, then with it
        assert [row.split(" | ")[0] for row in rows[first : first + 2]] == ["| nothing", "| 0.0625 MiB"]
        assert rows[first].endswith("| 1.00 |")


def test_the_cold_cache_backwards_compute_the_same_gradients_and_fill_between_every_entry():
    # the backward's half of mlp_gap --cold-cache: the hand-written rules and the replay, one fill per entry
    from benchmarks import mlp_gap

    calls = []
    numpy_backward, tapegrad_backward = mlp_gap.tiny_backwards(np.float64, lambda: calls.append(1), time.perf_counter)
    seconds, expected = numpy_backward()
    per_backward = len(calls)
    assert seconds > 0 and per_backward == 11  # the tape's entries: 3 matmuls, 3 adds, 2 ReLUs, subtract, power, mean
    seconds, got = tapegrad_backward()
    assert len(calls) == 2 * per_backward
    for g, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-12)


def test_every_level_of_the_tape_floor_is_a_tape_with_exact_gradients(monkeypatch):
    # The floor's levels are measured as tapes: each must give the chain's gradients, and a wrong rule fails
    from benchmarks import tape_floor

    tape_floor.check(TINY)
    monkeypatch.setattr(tape_floor.TANH, "vjps", (lambda xp, g, ans, x: g * (1 + ans * ans),))
    with pytest.raises(AssertionError, match="tape_floor level 'list'"):
        tape_floor.check(TINY)


def test_the_tape_floor_times_every_level_and_engine_paired_with_the_node_graph():
    from benchmarks import tape_floor

    per_op, ratio = tape_floor.measure(2, TINY)
    assert {"list", "weak", "record", "tapegrad", "nodegraph"} <= set(per_op)
    assert ratio["nodegraph"] == 1.0 and all(f > 0 and b > 0 for f, b in per_op.values())


def _checked_ops(tg):
    """The names of the ops of package ``tg`` whose rules run checked, as a user's rules do."""
    checked = set()
    for op in tg.registry.REGISTRY.values():
        rules = op.vjps if isinstance(op.vjps, tuple) else (op.vjps.rule,)
        if any(getattr(getattr(r, "__code__", None), "co_name", "") == "rule_checked" for r in rules):
            checked.add(op.name)
    return checked


def test_tapegrads_own_rules_run_unchecked_in_the_second_copy_the_benchmarks_import_too():
    # The compiled-path engine is this tree imported again under another name; its builtin rules are its own,
    # not a user's: checked, each rule call cost the engine a wrapper and made it time another program.
    import tapegrad

    assert _checked_ops(tapegrad) == set()
    if "tapegrad-native" not in {e.name for e in available_engines()[0]}:
        pytest.skip("the compiled hot path is not built here")
    speed_engines._tapegrad_native()
    native = speed_engines._NATIVE[0]
    assert native.__name__ == "tapegrad_native" and len(native.registry.REGISTRY) == len(tapegrad.registry.REGISTRY)
    assert _checked_ops(native) == set()
