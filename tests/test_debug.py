"""Reading the tape: printing, the backward trace, the memory report, drawing, NaN provenance, leak sentinels,
escapes and hooks (tapegrad.debug, tapegrad.viz)."""

import gc
import io
import re
import sys
import warnings
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import debug, tape, viz


def here() -> int:
    """The line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


def model(track=False):
    """The quick start's model, with named tensors."""
    rng = np.random.default_rng(0)
    X = tg.Tensor(rng.standard_normal((64, 3)), name="X")
    y = tg.Tensor(rng.standard_normal((64, 1)), name="y")
    W = tg.Tensor(np.zeros((3, 1)), requires_grad=True, name="W")
    b = tg.Tensor(np.zeros(1), requires_grad=True, name="b")
    t = tape.record(track_source=track)
    with t:
        line = here()
        loss = ((X @ W + b - y) ** 2).mean()
    return t, loss, (X, y, W, b), line


# -- print(t) ---------------------------------------------------------------------------------------
def test_print_shows_numbered_ssa_lines_with_names_shapes_saved_and_source():
    t, loss, _, line = model(track=True)
    lines = str(t).splitlines()
    assert lines[0] == "Tape (recording, 5 entries)"
    cells = [ln.split() for ln in lines[1:6]]
    assert [c[:2] for c in cells] == [["0", "t0"], ["1", "t1"], ["2", "t2"], ["3", "t3"], ["4", "t4"]]
    assert "t0 = matmul(X, W)" in lines[1] and "(64,3), (3,1) -> (64,1)" in lines[1]
    assert "saved: X, W (1.5 KiB)" in lines[1] and f"test_debug.py:{line}" in lines[1]
    assert "t1 = add(t0, b)" in lines[2] and "(64,1), (1,) -> (64,1)" in lines[2] and "saved: -" in lines[2]
    assert "t3 = power(t2, 2)" in lines[4] and "t4 = mean(t3)" in lines[5] and "-> ()" in lines[5]
    assert lines[6] == "5 entries, 4 leaves (X, W, b, y), saved 2.5 KiB in 4 arrays"
    assert str(t) == str(t)  # names are stable


def test_print_of_a_plain_tape_marks_unknown_shapes_and_says_how_to_keep_them():
    t, *_ = model(track=False)
    text = str(t)
    assert "t4 = mean(t3)  " in text and "(64,1) -> ?" in text
    assert "record(track_source=True)" in text.splitlines()[-1]
    assert "test_debug.py" not in text  # no source lines unless asked


def test_unnamed_leaves_and_constants():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tape.record() as t:
        y = (x * 3.0).sum()
    assert "t0 = multiply(in0, 3)" in str(t)
    del y


def test_long_tapes_are_summarised_with_head_tail_and_counts_per_op():
    x = tg.Tensor(np.ones(4), requires_grad=True)
    with tape.record() as t:
        for _ in range(100):
            x = tg.tanh(x * 1.5)
        x = x.sum()
    text = str(t)
    lines = text.splitlines()
    assert len(lines) < 50
    assert "162 entries not shown" in text and " t200 = sum(t199)" in text and " t0 = multiply(in0, 1.5)" in text
    assert "ops: multiply x100, tanh x100, sum x1" in text
    assert len(debug.format_tape(t, limit=None).splitlines()) == 201 + 3  # head, totals, note on shapes
    assert "t4 = multiply(t3, 1.5)" in text and "saved: t3 (kept already)" in text  # tanh saved it first


# -- backward(trace=True) ---------------------------------------------------------------------------
def test_trace_prints_adjoint_updates_in_replay_order_with_broadcast_reduction_as_its_own_step(capsys):
    t, loss, (X, y, W, b), _ = model()
    loss.backward(trace=True)
    out = capsys.readouterr().out.splitlines()
    heads = [ln.split()[0] for ln in out if ln.startswith("  [")]
    assert heads == ["[4]", "[3]", "[2]", "[1]", "[0]"]
    text = "\n".join(out)
    assert "ḡt3 = ḡt4·∂t4/∂t3" in text
    i = next(k for k, ln in enumerate(out) if "δ = ḡt1·∂t1/∂b" in ln)
    assert "(64,1)" in out[i]
    assert "ḡb = sum_to(δ, (1,))" in out[i + 1] and "(64,1) -> (1,)" in out[i + 1]
    assert "ḡW = ḡt0·∂t0/∂W" in text and "(3,1)" in text
    assert "ḡX" not in text and "ḡy" not in text  # constants get no gradient
    assert out[-1].strip().startswith("leaves:") and "W.grad += ḡW (3,1)" in out[-1]


def test_trace_shows_accumulation_and_leaves_gradients_unchanged():
    x = tg.Tensor([1.0, 2.0], requires_grad=True, name="x")
    with tape.record():
        y = (x * x + tg.sin(x)).sum()
    buf = io.StringIO()
    y.backward(trace=buf)
    text = buf.getvalue()
    sin_first = text.index("ḡx = ḡt1·∂t1/∂x")  # replay order: sin's rule, then both inputs of x * x
    assert text.count("ḡx += ḡt0·∂t0/∂x") == 2 and text.index("ḡx += ḡt0·∂t0/∂x") > sin_first
    np.testing.assert_allclose(x.grad, 2 * x.data + np.cos(x.data))


# -- memory report and stats --------------------------------------------------------------------------
def test_stats_count_every_saved_array_once_with_running_total_peak_and_largest():
    t, loss, (X, y, W, b), _ = model(track=True)
    s = t.stats()
    assert s["entries"] == 5 and s["saved_bytes"] == t.saved_bytes() == X.data.nbytes + W.data.nbytes + 2 * 512
    assert [r["running"] for r in s["rows"]] == [1560, 1560, 1560, 2584, 2584]
    assert s["rows"][0]["saved"][0] == {
        "array": "X",
        "shape": (64, 3),
        "dtype": "float64",
        "bytes": 1536,
        "shared": False,
    }
    assert s["rows"][3]["shape"] == (64, 1) and s["rows"][3]["dtype"] == "float64"
    assert s["largest"][0]["array"] == "X" and s["largest"][0]["entry"] == 0
    assert s["per_op"]["power"] == {"count": 1, "saved_bytes": 1024}
    # Peak of the replay: everything saved, plus the gradients of t3 and t2 while power's rule runs.
    assert s["peak_bytes"] == 2584 + 512 + 512


def test_shared_arrays_are_counted_once():
    x = tg.Tensor(np.ones(100), requires_grad=True, name="x")
    with tape.record() as t:
        y = tg.exp(x)  # saves its output...
        z = (y * y).sum()  # ...which multiply saves again
    s = t.stats()
    assert s["saved_bytes"] == 800 and s["rows"][1]["saved"][0]["shared"]
    assert "t0 (100,) (shared)" in t.memory_report()
    del z


def test_memory_report_lists_op_source_output_saved_and_footer():
    t, loss, _, line = model(track=True)
    report = t.memory_report().splitlines()
    assert report[0].split() == ["#", "op", "output", "source", "saved", "bytes", "total"]
    assert report[1].split()[:4] == ["0", "matmul", "(64,1)", "float64"]
    assert f"test_debug.py:{line}" in report[1] and "X (64,3), W (3,1)" in report[1] and "1.5 KiB" in report[1]
    assert report[6].startswith("saved: 2.5 KiB in 4 arrays over 5 entries; peak while replaying")
    assert report[7] == "largest saved arrays:" and report[8].split()[:4] == ["X", "kept", "by", "t0"]


# -- drawing ------------------------------------------------------------------------------------------
def test_to_dot_marks_leaves_output_shapes_and_the_memory_hot_spot():
    t, *_ = model()
    dot = t.to_dot()
    assert dot.startswith("digraph tape {") and dot.rstrip().endswith("}")
    assert '"W" [shape=ellipse, style=filled, fillcolor="#cfe2ff", label="W\\n(3,1) leaf"]' in dot
    assert '"X" [shape=ellipse, style=filled, fillcolor="#eeeeee", label="X\\n(64,3) constant"]' in dot
    assert '"t4" [shape=doubleoctagon' in dot and '"t3" [shape=ellipse' in dot
    assert '"X" -> "op0" [label="(64,3)"]' in dot and '"op1" -> "t1" [label="(64,1)"]' in dot
    hot = next(ln for ln in dot.splitlines() if ln.startswith('  "op0"'))
    cold = next(ln for ln in dot.splitlines() if ln.startswith('  "op1"'))
    assert 'fillcolor="#de2d26"' in hot and "saved 1.5 KiB" in hot  # the largest entry is the reddest
    assert 'fillcolor="#ffffff"' in cold and "saves nothing" in cold


def test_render_says_what_to_install_without_graphviz(monkeypatch, tmp_path):
    t, *_ = model()
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(
        ImportError, match=r'pip install -e "\.\[viz\]" in a tapegrad checkout.*apt-get install graphviz'
    ):
        viz.render(t, tmp_path / "tape.svg")


def test_render_writes_an_image_when_graphviz_is_installed(tmp_path):
    graphviz = pytest.importorskip("graphviz")
    t, *_ = model()
    try:
        path = viz.render(t, tmp_path / "tape.svg")
    except RuntimeError as err:  # the package without the dot program
        assert "dot" in str(err)
        pytest.skip("Graphviz's dot program is not installed")
    assert graphviz and path.read_text().lstrip().startswith("<?xml") and "matmul(X, W)" in path.read_text()


# -- NaN provenance ----------------------------------------------------------------------------------
def test_nan_made_in_forward_names_log_forward_entry_and_line():
    x = tg.Tensor([1.0, -1.0], requires_grad=True)
    with np.errstate(invalid="ignore"), pytest.raises(debug.AnomalyError) as info:
        with tape.record(detect_anomaly=True):
            h = x * 2.0
            line = here()
            y = tg.log(h)  # noqa: F841  (the error quotes this line)
    err = info.value
    assert (err.op, err.phase, err.index, err.lineno) == ("log", "forward", 1, line)
    assert err.filename == __file__
    assert f"test_debug.py:{line}" in str(err) and "`y = tg.log(h)" in str(err) and "NaN" in str(err)


def test_nan_made_only_in_backward_names_sqrt_backward_entry_and_line():
    x = tg.Tensor([4.0, 0.0], requires_grad=True)
    with tape.record(detect_anomaly=True):
        h = x * 1.0
        line = here()
        y = tg.sqrt(h)
        loss = y.sum()
    with pytest.raises(debug.AnomalyError) as info, np.errstate(divide="ignore"):
        loss.backward()
    err = info.value
    assert (err.op, err.phase, err.index, err.lineno) == ("sqrt", "backward", 1, line)
    assert "with respect to t0" in str(err) and "infinity" in str(err)


def test_detect_anomaly_context_checks_forward_and_backward():
    x = tg.Tensor([0.0], requires_grad=True)
    with tape.record():
        loss = tg.sqrt(x).sum()
    with np.errstate(divide="ignore"):
        loss.backward()  # no check: a silent infinity
    assert np.isinf(x.grad).all()
    x.grad = None
    with tg.detect_anomaly():
        with tape.record():
            line = here()
            loss = tg.sqrt(x).sum()
        with pytest.raises(tg.AnomalyError) as info, np.errstate(divide="ignore"):
            loss.backward()
    assert (info.value.op, info.value.phase, info.value.lineno) == ("sqrt", "backward", line)
    with tape.record() as t:  # the block ended: no checks, no source capture
        tg.sqrt(x)
    assert not t.monitors


def test_detect_anomaly_around_backward_alone_checks_the_replay():
    # the tape was recorded unchecked: the replay (which asks whether any tool observes it) must still see the
    # context, not take the path of a replay nothing observes
    x = tg.Tensor([0.0], requires_grad=True)
    with tape.record():
        loss = tg.sqrt(x).sum()
    with tg.detect_anomaly(), pytest.raises(tg.AnomalyError) as info, np.errstate(divide="ignore"):
        loss.backward()
    assert (info.value.op, info.value.phase) == ("sqrt", "backward")


def test_anomaly_checks_change_no_gradient():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tape.record(detect_anomaly=True):
        loss = (tg.exp(x) * x).sum()
    loss.backward()
    np.testing.assert_allclose(x.grad, np.exp(x.data) * (1 + x.data))


def test_find_nonfinite_after_the_fact_on_a_persistent_tape():
    x = tg.Tensor([1.0, -1.0], requires_grad=True, name="x")
    with np.errstate(invalid="ignore"), tape.record(persistent=True, track_source=True) as t:
        a = tg.exp(x)
        line = here()
        h = tg.log(x)
        loss = (h * a).sum()
    found = t.find_nonfinite()
    # multiply saved its NaN input: the finding goes to log, which made it
    assert [(f.index, f.call, f.array) for f in found] == [(1, "t1 = log(x)", "t1")]
    assert found[0].source == f"test_debug.py:{line}"
    with tape.record(persistent=True) as ok:
        (x * 2).sum()
    assert ok.find_nonfinite() == []
    del loss


def test_where_trap_and_the_double_where_answer():
    x = tg.Tensor([0.0, 4.0], requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        with tape.record():
            y = tg.where(x > 0, tg.sqrt(x), 0.0).sum()
        y.backward()
    assert np.isnan(x.grad[0])  # the branch where did not select still sends 0 * inf
    x.grad = None
    with tape.record():
        safe = tg.where(x > 0, x, 1.0)
        y = tg.where(x > 0, tg.sqrt(safe), 0.0).sum()
    y.backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.25])
    x.grad = None
    with tape.record(detect_anomaly=True):
        line = here()
        y = tg.where(x > 0, tg.sqrt(x), 0.0).sum()
    with pytest.raises(tg.AnomalyError, match="double where") as info, np.errstate(divide="ignore", invalid="ignore"):
        y.backward()
    assert (info.value.op, info.value.lineno) == ("sqrt", line)


# -- leak sentinels ----------------------------------------------------------------------------------
def _train_steps(n, accumulate):
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    total = 0.0
    for _ in range(n):
        with tape.record():
            loss = (w * w).sum()
            total = accumulate(total, loss)
        loss.backward()
        w.grad = None
    return total


def _as_a_program_sees(category, record):
    """The warnings of ``category`` in ``record`` (of ``catch_warnings(record=True)`` under the default filter,
    which shows a line's warning once: pytest.warns shows every one)."""
    return [w for w in record if issubclass(w.category, category)]


def test_carrying_a_loss_across_tapes_warns_once_per_site_saying_what_to_write():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        _train_steps(4, lambda total, loss: total + loss)
    leaks = _as_a_program_sees(tg.TapeLeakWarning, record)
    assert len(leaks) == 1 and leaks[0].filename == __file__
    assert re.search(r"earlier tape.*loss\.item\(\).*detach\(\)", str(leaks[0].message))
    with warnings.catch_warnings():  # a filter set after the site warned sees it again: "error" raises
        warnings.simplefilter("error", tg.TapeLeakWarning)
        with pytest.raises(tg.TapeLeakWarning):
            _train_steps(2, lambda total, loss: total + loss)


def test_no_cross_tape_warning_for_item_history_or_nested_tapes():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.TapeLeakWarning)
        warnings.simplefilter("ignore", tg.TapeEscapeWarning)  # item() inside the block: test_contract's subject
        _train_steps(3, lambda total, loss: total + loss.item())
        _train_steps(3, lambda total, loss: total + loss.detach())
        x = tg.Tensor(2.0, requires_grad=True)
        with tape.record() as outer:
            with tape.record() as inner:
                y = x**3
            g = inner.gradient(y, x)  # recorded on outer; y's node belongs to inner, nested in outer
            z = g * y
        dz = outer.gradient(z, x)
        assert float(dz) == pytest.approx(5 * 3 * 2.0**4)
        w = tg.Tensor(3.0, requires_grad=True)
        with tape.record():
            h = x * x
            with tape.record() as inner:
                y = h * w
        inner.backward(y, create_graph=True)  # its replay reads h, from the tape around it
        assert float(w.grad) == 4.0


def drop_the_kept_tape():
    with tape.record():  # the context keeps the last closed tape: an empty block replaces it
        pass


def test_a_large_tape_dropped_without_replay_warns_once_per_site_and_others_do_not():
    gc.collect()  # earlier tests' tapes that only the collector frees go now, under the default threshold
    old = debug.set_leak_threshold(1000)
    x = tg.Tensor(np.ones(1000), requires_grad=True)
    history = []
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("default")
            for _ in range(3):  # each tape is dropped when the next block closes, its loss still held
                line = here()
                with tape.record():
                    history.append(tg.exp(x).sum())
            drop_the_kept_tape()
            gc.collect()
        leaks = _as_a_program_sees(tg.TapeLeakWarning, record)
        assert len(leaks) == 1 and (leaks[0].filename, leaks[0].lineno) == (__file__, line)
        assert re.search(r"dropped without backward\(\).*7\.8 KiB", str(leaks[0].message))
        with warnings.catch_warnings():
            warnings.simplefilter("error", tg.TapeLeakWarning)
            for kind in ("replayed", "persistent", "small", "unreachable"):
                y = x[:10] if kind == "small" else x
                with tape.record(persistent=kind == "persistent"):
                    loss = tg.exp(y).sum()
                if kind == "replayed":
                    loss.backward()
                history.append(loss if kind != "unreachable" else None)  # unreachable: its entries died first
                del loss
                drop_the_kept_tape()
                gc.collect()
    finally:
        debug.set_leak_threshold(old)


def test_live_tapes_lists_tapes_with_their_sizes_and_forgets_collected_ones():
    x = tg.Tensor(np.ones(50), requires_grad=True)
    with tape.record() as t:
        loss = tg.exp(x).sum()
    mine = [lt for lt in debug.live_tapes() if lt.ref() is t]
    assert len(mine) == 1 and (mine[0].state, mine[0].entries, mine[0].saved_bytes) == ("recording", 2, 400)
    assert mine[0].site[0] == __file__
    ref = weakref.ref(t)
    loss.backward()
    del t, mine
    gc.collect()
    assert ref() is None and all(lt.ref() is not None for lt in debug.live_tapes())


# -- escapes ------------------------------------------------------------------------------------------
def test_converting_a_recorded_tensor_to_numpy_inside_record_warns_with_the_line():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tape.record():
        h = x * 2.0
        with pytest.warns(tg.TapeEscapeWarning, match="gradients do not flow") as record:
            line = here()
            a = np.asarray(h)
            b = h.numpy()
        assert [r.lineno for r in record] == [line, line + 1]
    assert a is h.data and b is h.data


def test_no_escape_warning_for_data_constants_or_outside_record():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    c = tg.Tensor([3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.TapeEscapeWarning)
        with tape.record():
            h = x * 2.0
            h.data, np.asarray(c), c.numpy()
        np.asarray(h), x.numpy()


# -- hooks -------------------------------------------------------------------------------------------
def test_hooks_see_the_gradient_can_replace_it_and_keep_no_tape_alive():
    x = tg.Tensor(np.ones(1000), requires_grad=True)
    seen = []
    with tape.record() as t:
        h = tg.exp(x) * 1.0
        h.register_hook(lambda g: seen.append(g.shape) or g * 2)
        loss = h.sum()
    clip = lambda g: np.clip(g, 0, 5)  # noqa: E731
    handle = x.register_hook(clip)
    saved = weakref.ref(t.entries[0].output)  # exp's output, held by the tape alone
    tape_ref = weakref.ref(t)
    loss.backward()
    assert seen == [(1000,)] and np.allclose(x.grad, 5.0)  # 2e clipped to 5
    del t
    gc.collect()
    assert tape_ref() is None and saved() is None  # h (with its hook) is still held
    fn_ref = weakref.ref(clip)
    del clip
    handle.remove()
    gc.collect()
    assert fn_ref() is None and h is not None


def test_a_leaf_hook_also_sees_gradient_and_a_wrong_shape_is_refused():
    x = tg.Tensor([1.0, -2.0], requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.copy()) or g * 10)
    with tape.record() as t:
        y = (3 * x).sum()
    np.testing.assert_allclose(t.gradient(y, x), [30.0, 30.0])
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    handle.remove()
    x.register_hook(lambda g: g.sum())
    with tape.record():
        y = (3 * x).sum()
    with pytest.raises(
        ValueError, match=r"hook \(<lambda>\) returned float64 of shape \(\) for a gradient of shape \(2,\)"
    ):
        y.backward()


# -- every tool on every backend -----------------------------------------------------------------------
def _sqrt_tape(backend, values, **record):
    x = tg.Tensor(backend.asarray(np.asarray(values, dtype=np.float64)), requires_grad=True, name="x")
    with np.errstate(invalid="ignore", divide="ignore"), tape.record(persistent=True, **record) as t:
        y = (tg.sqrt(x) * 2.0).sum()
    return t, x, y


def test_printing_reports_and_drawing_work_and_count_the_same_bytes_on_every_backend(backend):
    t, _, _ = _sqrt_tape(backend, np.ones(1000), track_source=True)
    lines = str(t).splitlines()
    assert lines[1].split()[1:4] == ["t0", "=", "sqrt(x)"] and "7.8 KiB" in lines[1]
    stats = t.stats()
    assert stats["saved_bytes"] == t.saved_bytes() == 8000 and stats["entries"] == 3
    assert stats["rows"][0]["dtype"] == "float64" and stats["rows"][0]["shape"] == (1000,)
    report = t.memory_report()
    assert "sqrt" in report and "7.8 KiB" in report and "float64" in report
    dot = t.to_dot()
    assert dot.startswith("digraph tape {") and '"x" -> "op0"' in dot
    assert t.find_nonfinite() == []


def test_find_nonfinite_and_trace_on_every_backend(backend):
    t, _, y = _sqrt_tape(backend, [4.0, -1.0])
    assert [(f.index, f.call) for f in t.find_nonfinite()] == [(0, "t0 = sqrt(x)")]
    out = io.StringIO()
    t.backward(y, trace=out)
    assert out.getvalue().splitlines()[0] == "backward through 3 entries, last first:"


def test_anomaly_mode_names_the_op_forward_and_backward_on_every_backend(backend):
    with pytest.raises(tg.AnomalyError, match="forward: log") as info, np.errstate(invalid="ignore"):
        x = tg.Tensor(backend.asarray(np.array([-1.0, 1.0])), requires_grad=True)
        with tape.record(detect_anomaly=True):
            line = here()
            tg.log(x)
    assert info.value.lineno == line
    z = tg.Tensor(backend.asarray(np.array([0.0, 1.0])), requires_grad=True)
    with tape.record(detect_anomaly=True):
        s = tg.sqrt(z).sum()
    with pytest.raises(tg.AnomalyError, match="backward: the gradient of sqrt"), np.errstate(divide="ignore"):
        s.backward()


def test_a_budget_refuses_the_op_that_crosses_it_on_every_backend(backend):
    x = tg.Tensor(backend.asarray(np.ones(1000)), requires_grad=True)
    with tape.record(max_saved_bytes=10_000) as t:
        y = tg.exp(x)  # saves its output: 8,000 bytes
        with pytest.raises(tg.TapeBudgetError) as info:
            tg.exp(y)  # 8,000 more
    assert (info.value.op, info.value.saved_bytes, info.value.op_bytes) == ("exp", 8000, 8000)
    assert len(t) == 1 and t.saved_bytes() == 8000
    y.backward(backend.asarray(np.ones(1000)))  # the tape is as it was before the refused op
    np.testing.assert_allclose(backend.to_numpy(x.grad), np.e)
