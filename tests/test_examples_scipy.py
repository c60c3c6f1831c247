"""The tapegrad.scipy examples (black-box variational inference, a neural ODE) run in a fast mode and reach a
real outcome: the exact posterior of a conjugate model, a trajectory fitted through the adjoint method."""

import importlib.util
import pathlib

import numpy as np
import pytest

import tapegrad as tg

pytest.importorskip("scipy", reason="the tapegrad.scipy examples need SciPy (the scipy extra)")
EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bbvi_finds_the_exact_posterior_of_bayesian_linear_regression():
    result = _load("bbvi").main(["--steps", "600", "--quiet"])
    np.testing.assert_allclose(result["mean"], result["exact_mean"], atol=0.03)  # the posterior sd is about 0.07
    np.testing.assert_allclose(np.sqrt(result["var"]), np.sqrt(result["exact_var"]), rtol=0.25)
    assert np.mean(result["history"][-50:]) > np.mean(result["history"][:50]) + 100  # the ELBO rose


def test_bbvi_log_joint_is_scipys_and_its_gradient_exact():
    scipy_stats = pytest.importorskip("scipy.stats")
    bbvi = _load("bbvi")
    x, y = bbvi.make_data(6, 2, 0.5, seed=1)
    w = np.random.default_rng(2).standard_normal((3, 2))
    want = scipy_stats.norm.logpdf(w, 0, 1.0).sum(1) + scipy_stats.norm.logpdf(y, w @ x.T, 0.5).sum(1)
    np.testing.assert_allclose(bbvi.log_joint(tg.Tensor(w), x, y, 0.5, 1.0).data, want, rtol=1e-12)
    assert tg.gradcheck(lambda w: bbvi.log_joint(w, x, y, 0.5, 1.0), w)


def test_neural_ode_fits_the_trajectory_by_the_adjoint_method():
    node = _load("neural_ode")
    result = node.main(["--steps", "30", "--points", "10", "--hidden", "8", "--quiet"])
    history = result["history"]
    assert history[-1] < 0.2 * history[0]  # 30 Adam steps: from about 8 to under 1
    t, data = node.make_data(5, 1.0)
    params = [p.data for p in node.init(3, seed=1)]
    params[1] = np.array([0.1, -0.2, 0.3])  # the biases start at 0: move them, so that every gradient is checked
    assert tg.gradcheck(lambda *p: node.trajectory_loss(list(p), t, data, 1e-11), *params)
