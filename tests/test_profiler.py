"""tg.profile(): what it times and counts, its table, its Chrome trace (validated against the format's schema),
and that it changes nothing it observes: gradients, memory, the state of the context after the block."""

from __future__ import annotations

import gc
import io
import json
import os
import threading
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._state import PROBE, TRACING

# The Chrome trace event format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
# the parts the profiler writes: the JSON object form, complete duration events ("X"), counter events ("C") and
# metadata events ("M"). Timestamps and durations are in microseconds.
TRACE_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {"type": "array", "items": {"$ref": "#/definitions/event"}},
        "displayTimeUnit": {"enum": ["ms", "ns"]},
    },
    "definitions": {
        "event": {
            "type": "object",
            "required": ["name", "ph", "pid", "tid"],
            "properties": {
                "name": {"type": "string"},
                "cat": {"type": "string"},
                "ph": {"enum": ["X", "C", "M"]},
                "ts": {"type": "number", "minimum": 0},
                "pid": {"type": "integer"},
                "tid": {"type": "integer"},
                "args": {"type": "object"},
            },
            "allOf": [
                {
                    "if": {"properties": {"ph": {"const": "X"}}},
                    "then": {"required": ["ts", "dur"], "properties": {"dur": {"type": "number", "minimum": 0}}},
                },
                {
                    "if": {"properties": {"ph": {"const": "C"}}},
                    "then": {
                        "required": ["ts", "args"],
                        "properties": {"args": {"type": "object", "additionalProperties": {"type": "number"}}},
                    },
                },
                {
                    "if": {"properties": {"ph": {"const": "M"}}},
                    "then": {
                        "required": ["args"],
                        "properties": {
                            "name": {
                                "enum": [
                                    "process_name",
                                    "process_labels",
                                    "process_sort_index",
                                    "thread_name",
                                    "thread_sort_index",
                                ]
                            },  # fmt: skip
                            "args": {"type": "object", "required": ["name"]},
                        },
                    },
                },
            ],
        }
    },
}


def step(W, x):
    """A small step: two recorded lines and a backward, run where the test says."""
    with tg.record() as t:
        h = tg.tanh(x @ W)  # line A
        loss = (h * h).mean()  # line B
    held = t.saved_bytes()
    loss.backward()
    return held


def leaves(seed=0):
    rng = np.random.default_rng(seed)
    return tg.Tensor(rng.standard_normal((3, 4)), requires_grad=True), tg.Tensor(rng.standard_normal((5, 3)))


def test_events_per_op_and_line_bytes_saved_and_freed():
    W, x = leaves()
    with tg.profile() as prof:
        held = step(W, x)
    rows = {r.name: r for r in prof.key_averages()}
    assert list(rows) == ["matmul", "tanh", "multiply", "mean"]
    assert all(r.calls == 1 and r.backward_calls == 1 for r in rows.values())
    # matmul keeps x and W, tanh its output; multiply's h is tanh's output, counted once
    assert rows["matmul"].saved == x.data.nbytes + W.data.nbytes
    assert rows["tanh"].saved == 5 * 4 * 8 and rows["multiply"].saved == 0
    assert sum(r.saved for r in rows.values()) == held == sum(r.freed for r in rows.values())
    assert prof.counters[-1][1] == 0  # everything freed by the replay
    assert max(c for _, c in prof.counters) == held
    lines = {r.name for r in prof.key_averages(group_by="source")}
    here = os.path.basename(__file__)
    src = open(__file__).read().splitlines()
    a = next(i for i, s in enumerate(src, 1) if s.endswith("# line A"))
    assert lines == {f"{here}:{a}", f"{here}:{a + 1}"}
    for ev in prof.events:
        assert ev.wall >= 0 and ev.cpu >= 0 and ev.source[0] == __file__
    assert [ev.phase for ev in prof.events] == ["forward"] * 4 + ["backward"] * 4
    assert [ev.name for ev in prof.events if ev.phase == "backward"] == ["mean", "multiply", "tanh", "matmul"]
    assert prof.events[0].shapes == ((5, 3), (3, 4))


def test_gradients_unchanged_first_and_second_order_and_traced():
    W, x = leaves()
    step(W, x)
    plain = W.grad.copy()
    W.grad = None
    out = io.StringIO()
    with tg.profile() as prof:
        with tg.record():
            loss = (tg.tanh(x @ W) ** 2).mean()
        loss.backward(trace=out)  # tracing wraps the profiler's timed rules
    np.testing.assert_array_equal(W.grad, plain)
    assert "ḡ" in out.getvalue() and sum(ev.phase == "backward" for ev in prof.events) == 4

    def f(w):
        return (tg.tanh(w) ** 3).sum()

    v = tg.Tensor(np.array([0.3, -0.7]))
    h = tg.hessian(f)(v)
    with tg.profile() as prof:
        hp = tg.hessian(f)(v)
    np.testing.assert_array_equal(hp, h)
    assert any(ev.phase == "backward" for ev in prof.events)


def test_table_sorts_limits_and_refuses_unknown_keys():
    W, x = leaves()
    with tg.profile() as prof:
        for _ in range(3):
            with tg.record():
                loss = (x @ W).sum()
            loss.backward()
        _ = tg.exp(x)  # one call, not recorded
    lines = prof.table(sort_by="calls").splitlines()
    assert lines[1].split()[:2] == ["Name", "Calls"]
    body = [ln.split() for ln in lines[3:-2]]
    assert [b[0] for b in body] == ["matmul", "sum", "exp"] and [b[1] for b in body] == ["3", "3", "1"]
    assert len(prof.table(row_limit=1).splitlines()) == 3 + 1 + 2
    assert prof.table(sort_by="name").splitlines()[3].startswith("exp")
    with pytest.raises(ValueError, match="sort_by must be one of wall, cpu"):
        prof.table(sort_by="self_cpu_time_total")
    with pytest.raises(ValueError, match="group_by must be 'op' or 'source'"):
        prof.key_averages(group_by="stack")


def test_chrome_trace_follows_the_format(tmp_path):
    jsonschema = pytest.importorskip("jsonschema", reason="the trace's schema check needs jsonschema (test extra)")
    W, x = leaves()
    with tg.profile() as prof:
        step(W, x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    jsonschema.validate(trace, TRACE_SCHEMA)
    durations = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in durations] == [ev.name for ev in prof.events]
    assert {e["cat"] for e in durations} == {"forward", "backward"}
    counters = [e["args"]["bytes"] for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters == [c for _, c in prof.counters] and counters[-1] == 0
    for a, b in zip(durations, durations[1:]):  # one thread: the events follow one another
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-3
    bad = dict(trace, traceEvents=[dict(durations[0], dur=-1.0)])
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail
        jsonschema.validate(bad, TRACE_SCHEMA)


def test_the_block_leaves_nothing_behind():
    W, x = leaves()
    with pytest.raises(ValueError, match="matmul"):
        with tg.profile() as prof:
            with tg.record():
                h = tg.tanh(x @ W)
                ref = weakref.ref(h._node)
                loss = h.sum()
            loss.backward()
            del h
            gc.collect()
            assert ref() is None  # the profiler keeps no recorded value alive
            _ = x @ tg.Tensor(np.ones((4, 4)))  # raises: the shapes do not match
    assert PROBE.get() is None and TRACING.n == 0
    with tg.profile() as dropped:
        with tg.record():  # a tape dropped without backward(): the profile must not keep it
            u = x @ W
            h = tg.sin(u)  # keeps u, which only the tape holds once u is deleted
        held = weakref.ref(u._data)
        assert id(u._data) in dropped._held.arrays
        del u
        with tg.record():  # the next block displaces the tape kept for a later backward()
            pass
        gc.collect()
        assert held() is None and h.requires_grad  # h is kept: only the tape's own death frees u
    forward = [ev.name for ev in prof.events if ev.phase == "forward"]
    assert forward == ["matmul", "tanh", "sum"]  # the matmul that raised left no event
    with pytest.raises(RuntimeError, match="already used"):
        with prof:
            pass
    with tg.profile():
        with pytest.raises(RuntimeError, match="do not nest"):
            with tg.profile():
                pass
    assert TRACING.n == 0


def test_other_threads_and_an_op_after_a_failed_one():
    W, x = leaves()
    seen = []
    with tg.profile() as prof:
        t = threading.Thread(target=lambda: seen.append(tg.exp(x)))  # a thread starts with no profile
        t.start()
        t.join()
        with pytest.raises(ValueError):
            tg.add(x, np.ones(7))
        _ = x > 0  # a comparison: profiled, forward only
        _ = tg.exp(x)
    assert seen and [ev.name for ev in prof.events] == ["greater", "exp"]


def test_persistent_tapes_gradient_and_checkpoint():
    W, x = leaves()
    with tg.profile() as prof:
        with tg.record(persistent=True) as t:
            loss = tg.tanh(x @ W).sum()
        held = t.saved_bytes()
        g1 = t.gradient(loss, W)
        g2 = t.gradient(loss, W)
        assert prof.counters[-1][1] == held  # a persistent tape frees nothing when replayed
        t.release()
    np.testing.assert_array_equal(g1, g2)
    back = [ev for ev in prof.events if ev.phase == "backward"]
    assert [ev.name for ev in back] == ["sum", "tanh", "matmul"] * 2 and all(ev.freed == 0 for ev in back)
    assert prof.counters[-1][1] == 0  # recounted when the block ended: the released tape holds nothing

    block = tg.checkpoint(lambda v: tg.tanh(tg.exp(v) * 2))
    with tg.profile() as prof:
        with tg.record():
            y = block(W).sum()
        y.backward()
    back = {ev.name: ev for ev in prof.events if ev.phase == "backward"}
    redo = [ev for ev in prof.events if ev.phase == "forward" and ev.start > back["sum"].start]
    assert [ev.name for ev in redo] == ["exp", "multiply", "tanh"]  # the block, recomputed during backward
    outer = back["checkpoint"]
    assert all(outer.start <= ev.start and ev.start + ev.wall <= outer.start + outer.wall for ev in redo)
    assert prof.counters[-1][1] == 0


def test_an_op_with_several_outputs():
    a = tg.Tensor([[2.0, 1.0], [1.0, 2.0]], requires_grad=True)
    with tg.profile() as prof:
        with tg.record() as t:
            w, v = tg.linalg.eigh(a)
            loss = (w * w).sum() + v[0, 0] ** 2
        held = t.saved_bytes()
        loss.backward()
    rows = {r.name: r for r in prof.key_averages()}
    assert rows["eigh"].saved == w.data.nbytes + v.data.nbytes == rows["eigh"].freed  # both outputs kept
    assert rows["eigh"].backward_calls == 1
    assert sum(r.saved for r in rows.values()) == held == sum(r.freed for r in rows.values())
    back = [ev for ev in prof.events if ev.phase == "backward" and ev.name == "eigh"]
    assert back[0].source is not None and back[0].source[1] == prof.events[0].source[1]  # the eigh line


def test_compiling_inside_a_profile():
    def step(w, x):
        return tg.value_and_grad(lambda v: (tg.tanh(x @ v) ** 2).sum())(w)

    W, x = leaves()
    want = step(W.data, x.data)
    with tg.profile() as prof:
        f = tg.compile(step)
        got = f(W.data, x.data)  # traced here: the tracer and the profiler both see its ops
        again = f(W.data, x.data)  # the program: plain NumPy, no ops to profile
    assert TRACING.n == 0
    for a, b, c in zip(tg._tree.tree_flatten(want)[0], tg._tree.tree_flatten(got)[0], tg._tree.tree_flatten(again)[0]):
        np.testing.assert_allclose(b, a, rtol=1e-12)
        np.testing.assert_allclose(c, a, rtol=1e-12)
    assert {"matmul", "tanh"} <= {ev.name for ev in prof.events if ev.phase == "forward"}
