"""tg.explore: the page's numbers are those of a real recording and replay (values, adjoints, bytes held), its
program lines link to the tape, nothing recorded stays alive, and bad input is refused by name. The page in a
real browser is tested in tests/test_explorer_browser.py."""

import gc
import json
import re

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.explorer import Explorer
from tapegrad.explorer.capture import ReplayCapture, summary


def _values(s):
    return np.array(s["values"], dtype=float).reshape(s["shape"])


def page_data(html: str) -> dict:
    """The data a written page carries (its JavaScript literal: JSON with NaN and Infinity)."""
    literal = re.search(r"window\.TAPE_DATA = (.*?);</script>", html, re.S).group(1)
    return json.loads(literal.replace("<\\/", "</"))


def _f(x, w, b):
    return (tg.tanh(x @ w + b) * x.sum(axis=1, keepdims=True)).mean()


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 2)), rng.standard_normal((2, 2)), rng.standard_normal(2)


def test_values_and_adjoints_are_the_replays():
    x, w, b = _args()
    ex = tg.explore(_f, x, w, b)
    rows = ex.data["rows"]
    assert [r["op"] for r in rows] == ["matmul", "add", "tanh", "sum", "multiply", "mean"]
    # each entry's value is the eager computation's (broadcasting, axis/keepdims included)
    t0 = x @ w
    expected = [t0, t0 + b, np.tanh(t0 + b), x.sum(axis=1, keepdims=True)]
    expected += [expected[2] * expected[3], (expected[2] * expected[3]).mean()]
    for r, e in zip(rows, expected):
        assert r["shape"] == list(np.shape(e))
        np.testing.assert_allclose(_values(r["value"]), e, rtol=1e-12)
    # the leaves' adjoints are the gradients, and the replay visited every entry, last first
    grads = tg.grad(_f, argnums=(0, 1, 2))(x, w, b)
    for name, g in zip("xwb", grads):
        np.testing.assert_allclose(np.array(ex.grads[name]).reshape(g.shape), g, rtol=1e-12)
    assert [s["entry"] for s in ex.data["steps"]] == [5, 4, 3, 2, 1, 0]
    # the adjoint of the mean's input is 1/6 everywhere; the adjoint at the output is the seed 1
    assert ex.data["steps"][0]["adjoint"]["values"] == [1.0]
    np.testing.assert_allclose(_values(ex.data["steps"][1]["adjoint"]), np.full((3, 2), 1 / 6))


def test_the_first_example_of_the_tour():
    ex = tg.explore(lambda x: x**2 + 3 * x + 1, 2.0)
    assert (ex.value, ex.grads) == (11.0, {"x": 7.0})
    assert [r["value"]["values"] for r in ex.data["rows"]] == [[4.0], [6.0], [10.0], [11.0]]


def test_bytes_held_fall_to_zero_as_the_replay_frees_each_entry():
    x, w, b = _args()
    with tg.record() as t:
        loss = _f(tg.Tensor(x, requires_grad=True), tg.Tensor(w, requires_grad=True), tg.Tensor(b, requires_grad=True))
    saved = t.saved_bytes()
    t.release()
    ex = tg.explore(_f, x, w, b)
    forward = ex.data["forward_bytes"]
    assert forward[-1] == saved and forward == sorted(forward)
    held = [s["held"] for s in ex.data["steps"]]
    assert held == sorted(held, reverse=True) and held[-1] == 0 and held[0] <= saved and held[1] < saved
    assert all(s["inflight"] > 0 for s in ex.data["steps"])
    assert loss is not None


def test_the_node_graph_curve_is_there_when_asked_for_and_holds_more():
    x, w, b = _args()
    assert tg.explore(_f, x, w, b).data["nodegraph"] is None
    ex = tg.explore(_f, x, w, b, nodegraph=True)
    ng = ex.data["nodegraph"]
    assert len(ng["forward"]) == len(ex.data["rows"]) and len(ng["backward"]) == len(ex.data["steps"])
    assert ng["backward"][-1] > ng["forward"][-1] > ex.data["forward_bytes"][-1]
    assert ng["backward"] == sorted(ng["backward"])  # nothing freed until the loss is dropped


def test_nothing_recorded_stays_alive_and_no_grad_is_written():
    w = tg.Tensor(np.ones(3), requires_grad=True, name="w")
    gc.collect()
    before = len(tg.debug.live_tapes())
    ex = tg.explore(lambda w: (tg.exp(w) * w).sum(), w)
    gc.collect()
    assert len(tg.debug.live_tapes()) == before
    assert w.grad is None
    v = tg.Tensor(np.ones(2), requires_grad=True)  # unnamed: named on the page after the parameter, not renamed
    assert "v" in tg.explore(lambda v: v.sum(), v).grads and v.name is None
    np.testing.assert_allclose(ex.grads["w"], np.exp(1.0) * 2)
    json.dumps(ex.data, allow_nan=True)  # plain data only: no array is kept


def test_a_tape_recorded_by_the_user_replayed_from_its_loss():
    x, w, b = _args()
    xs = [tg.Tensor(a, requires_grad=True, name=n) for a, n in zip((x, w, b), "xwb")]
    with tg.record() as t:
        loss = _f(*xs)
    unreplayed = tg.explore(t)
    assert unreplayed.data["steps"] == [] and "no replay" in unreplayed.data["note"]
    assert unreplayed.data["rows"][2]["value"]["kept"]  # tanh saves its output: the page shows it
    assert unreplayed.data["rows"][3]["value"]["kept"]  # the sum's output, as the product that uses it saved it
    np.testing.assert_allclose(_values(unreplayed.data["rows"][3]["value"]), x.sum(axis=1, keepdims=True))
    assert unreplayed.data["rows"][0]["value"] is None  # matmul's output was not kept by anything
    ex = tg.explore(t, loss)
    assert t.state == "replayed" and all(v.grad is None for v in xs)
    for name, g in zip("xwb", tg.grad(_f, argnums=(0, 1, 2))(x, w, b)):
        np.testing.assert_allclose(np.array(ex.grads[name]).reshape(g.shape), g, rtol=1e-12)


def test_a_compiled_function_links_its_program_to_the_tape():
    def loss(params, X, y):
        return ((X @ params["W"] + params["b"] - y) ** 2).mean()

    step = tg.compile(tg.value_and_grad(loss), donate_argnums=0, fuse=False)  # the explorer shows it unfused
    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((3, 1)), "b": np.zeros(1)}
    X, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 1))
    W0 = params["W"].copy()
    ex = tg.explore(step, params, X, y)
    np.testing.assert_array_equal(params["W"], W0)  # the program ran on copies: nothing donated was overwritten
    program, rows = ex.data["program"], ex.data["rows"]
    assert "".join(line["text"] + "\n" for line in program) == step.source
    forward = [line["entry"] for line in program if line["entry"] is not None]
    assert forward == list(range(len(rows)))  # every entry of the tape has its line, in order
    for line in program:
        if line["entry"] is not None:
            assert f"# {rows[line['entry']]['op']} ->" in line["text"]
        if line["grad_of"] is not None:
            assert f"(grad of {rows[line['grad_of']]['op']})" in line["text"]
    assert {line["grad_of"] for line in program} >= {0, 1, 3}
    np.testing.assert_allclose(ex.value, tg.value_and_grad(loss)(params, X, y)[0], rtol=1e-12)


def test_nan_and_inf_are_counted_where_they_appear():
    with np.errstate(all="ignore"):
        ex = tg.explore(lambda x: (tg.log(x) * 2.0).sum(), np.array([1.0, 0.0, -1.0]))
    log, times, total = (r["value"] for r in ex.data["rows"])
    assert (log["nan"], log["inf"]) == (1, 1) and (total["nan"], total["inf"]) == (1, 0)
    assert ex.grads["x"][1] == np.inf


def test_large_arrays_are_summarized_with_a_histogram():
    a = np.linspace(-1.0, 1.0, 1001)
    s = summary(a)
    assert "values" not in s and s["size"] == 1001 and sum(s["hist"]) == 1001
    assert (s["min"], s["max"]) == (-1.0, 1.0) and s["mean"] == pytest.approx(0.0, abs=1e-12)
    assert s["edges"][0] == -1.0 and s["edges"][-1] == 1.0
    z = summary(np.array([1 + 2j, np.nan]))
    assert z["values"][0] == [1.0, 2.0] and z["nan"] == 1


def test_the_page_is_one_file_with_the_tapes_numbers(tmp_path):
    x, w, b = _args()
    path = tmp_path / "tape.html"
    ex = tg.explore(_f, x, w, b, path=path)
    html = path.read_text()
    assert ex.path == str(path) and html == ex.html
    assert "<script src" not in html and "<link" not in html and "@import" not in html  # nothing to fetch
    assert page_data(html)["rows"] == json.loads(json.dumps(ex.data["rows"]))
    assert "srcdoc=" in ex.iframe() and "explorer" in repr(ex)


def test_a_string_cannot_close_the_pages_script():
    t = tg.Tensor(np.ones(2), requires_grad=True, name="</script><b>")
    ex = tg.explore(lambda v: v.sum(), t)
    assert ex.html.count("</script>") == 2 and page_data(ex.html)["leaves"][0]["name"] == "</script><b>"


def test_bad_input_is_refused_by_name_and_the_user_can_go_on():
    with pytest.raises(TypeError, match=r"tg\.explore\(<lambda>, \.\.\.\): the function must return a scalar"):
        tg.explore(lambda x: x * 2, np.ones(3))
    with pytest.raises(TypeError, match="tg.explore: expected a function"):
        tg.explore(3.0)
    with tg.record() as t:
        tg.Tensor(1.0, requires_grad=True) * 2
    with pytest.raises(TypeError, match=r"tg\.explore\(tape, loss\)"):
        tg.explore(t, 1, 2)
    assert tg.explore(lambda x: x * 2, 1.0).grads == {"x": 2.0}


def test_in_a_notebook_it_shows_inline(monkeypatch):
    display = pytest.importorskip("IPython.display", reason="IPython is not installed: the inline display is untested")
    shown = []
    monkeypatch.setattr(display, "display", lambda bundle, raw: shown.append((bundle, raw)))
    monkeypatch.setattr(tg.explorer, "_in_notebook", lambda: True)
    ex = tg.explore(lambda x: x * x, 3.0)
    assert isinstance(ex, Explorer) and len(shown) == 1
    bundle, raw = shown[0]
    assert raw and bundle["text/html"] == ex.iframe() and "srcdoc=" in bundle["text/html"]
    monkeypatch.setattr(tg.explorer, "_in_notebook", lambda: False)
    tg.explore(lambda x: x * x, 3.0)
    assert len(shown) == 1  # outside a notebook nothing is displayed


def _close(committed, fresh, path="data"):
    """The same structure, the same strings and integers, floats equal to 1e-9 relative (BLAS may sum in another
    order on another processor); NaN equal to NaN."""
    assert type(committed) is type(fresh), f"{path}: {committed!r} != {fresh!r}"
    if isinstance(committed, dict):
        assert committed.keys() == fresh.keys(), path
        for k in committed:
            _close(committed[k], fresh[k], f"{path}[{k!r}]")
    elif isinstance(committed, list):
        assert len(committed) == len(fresh), path
        for i, (a, b) in enumerate(zip(committed, fresh)):
            _close(a, b, f"{path}[{i}]")
    elif isinstance(committed, float):
        assert committed == pytest.approx(fresh, rel=1e-9, abs=1e-12, nan_ok=True), path
    else:
        assert committed == fresh, path


def test_the_committed_pages_of_the_guide_are_what_the_example_writes(tmp_path):
    pytest.importorskip("sklearn", reason="the digits MLP's page needs scikit-learn's digits")
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("seeing_the_tape", root / "examples" / "seeing_the_tape.py")
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    written = tour.pages(tmp_path)
    for name, ex in written.items():
        committed = (root / "docs" / "explorer" / f"{name}.html").read_text()
        if name == "tutorial":  # exact arithmetic: the same page, byte for byte
            assert committed == ex.html, "docs/explorer/ is stale: python examples/seeing_the_tape.py --update-docs"
        _close(page_data(committed), page_data(ex.html), name)
        assert (root / "docs" / "explorer" / f"{name}.png").stat().st_size > 10_000  # its screenshot


def test_the_explorers_observer_leaves_anomaly_checks_and_tracing_in_place():
    x = tg.Tensor([0.0, 4.0], requires_grad=True)
    with tg.record(detect_anomaly=True) as t:
        y = tg.sqrt(x).sum()
    with np.errstate(divide="ignore"), pytest.raises(tg.AnomalyError, match="sqrt"):
        tg.explore(t, y)  # the rule's infinite gradient is still caught, naming the op
    import io

    out = io.StringIO()
    w = tg.Tensor([1.0, 2.0], requires_grad=True, name="w")
    with tg.record() as t:
        loss = (w * w).sum()
    capture = ReplayCapture(t)
    t.add_replay_observer(lambda tape: capture)
    loss.backward(trace=out)  # the trace still prints each adjoint update, and the capture saw each entry
    assert "ḡw = ḡt0·∂t0/∂w" in out.getvalue() and w.grad.tolist() == [2.0, 4.0]
    assert [s["adjoint"]["shape"] for s in capture.steps] == [[], [2]]


def test_inside_a_recording_block_it_records_nothing_there_and_keeps_the_pending_tape():
    x = tg.Tensor(2.0, requires_grad=True)
    with tg.record() as outer:
        y = x * x
        ex = tg.explore(lambda v: v**3, 3.0)
    assert ex.grads == {"v": 27.0} and len(outer) == 1  # the explorer's ops are on its own tape only
    y.backward()
    assert float(x.grad) == 4.0


def test_a_long_tape_not_measured_at_each_entry_counts_what_the_earlier_entries_hold(monkeypatch):
    x, w, b = _args()
    measured = [s["held"] for s in tg.explore(_f, x, w, b).data["steps"]]
    monkeypatch.setattr(tg.explorer, "MEASURE_UP_TO", 0)
    assert [s["held"] for s in tg.explore(_f, x, w, b).data["steps"]] == measured


def _eigh_loss(a):
    w, v = tg.linalg.eigh(a)
    return (w * w).sum() + (v[:, 0] ** 2).sum()


def test_an_op_with_several_outputs_shows_each_value_and_each_adjoint():
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    ex = tg.explore(_eigh_loss, a)
    eigh = ex.data["rows"][0]
    assert eigh["op"] == "eigh" and eigh["value"] is None
    assert [o["name"] for o in eigh["outputs"]] == ["t0.eigenvalues", "t0.eigenvectors"]
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(_values(eigh["outputs"][0]["value"]), w, rtol=1e-12)
    np.testing.assert_allclose(np.abs(_values(eigh["outputs"][1]["value"])), np.abs(v), rtol=1e-12)
    assert ex.data["rows"][1]["inputs"][0] == {"name": "t0.eigenvalues", "kind": "entry", "entry": 0, "output": 0}
    last = ex.data["steps"][-1]
    assert last["entry"] == 0 and last["adjoint"] is None
    np.testing.assert_allclose(_values(last["adjoints"][0]), 2 * w, rtol=1e-12)  # d(w.w)/dw
    np.testing.assert_allclose(np.array(ex.grads["a"]).reshape(2, 2), tg.grad(_eigh_loss)(a), rtol=1e-12)


def test_a_persistent_tape_explored_replays_again_unobserved():
    # the explorer's observer stayed on the tape after its replay: the next backward() called it with its tape
    # gone, and failed with an AttributeError
    x = tg.Tensor(2.0, requires_grad=True)
    with tg.record(persistent=True) as t:
        y = x * x * x
    first = tg.explore(t, y)
    steps = len(first.data["steps"])
    second = tg.explore(t, y)
    assert first.grads == second.grads == {"in0": 12.0} and len(second.data["steps"]) == steps
    y.backward()
    assert x.grad == 12.0 and len(first.data["steps"]) == len(second.data["steps"]) == steps
    t.release()


def test_a_consumed_tape_or_a_loss_it_did_not_compute_is_refused_by_name():
    # a tape backward() had freed showed as an empty page with no adjoints, in silence
    x = tg.Tensor(2.0, requires_grad=True)
    with tg.record() as t:
        y = x * x
    y.backward()
    with pytest.raises(ValueError, match=r"tg\.explore\(tape\): the tape is replayed .*persistent=True"):
        tg.explore(t, y)
    with tg.record() as t:
        y = x * x
    for loss, what in [(x, "a tensor it did not compute"), (3.0, "float")]:
        with pytest.raises(TypeError, match=rf"tg\.explore\(tape, loss\): loss must be a tensor .*{what}"):
            tg.explore(t, loss)
    assert tg.explore(t, y).grads == {"in0": 4.0}
