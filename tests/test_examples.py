"""Every example runs in a fast mode and reaches a real outcome, so none of them can rot."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.compile import fuse

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_linear_regression_recovers_the_weights(capsys):
    W, b, history = _load("linear_regression").main(["--epochs", "100"])
    np.testing.assert_allclose(W.data.ravel(), [2.0, -1.0, 0.5], atol=0.05)
    assert abs(b.data[0]) < 0.05
    assert history[-1].item() < 0.02 < history[0].item()
    assert "W =" in capsys.readouterr().out


def test_classify_digits_learns_and_resumes_exactly(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    digits = _load("classify_digits")
    full = digits.main(["--epochs", "4", "--out", str(tmp_path / "full"), "--quiet"])
    history = full["history"]
    assert full["test_accuracy"] >= 0.93  # 4 epochs; the default 30 reach about 0.98
    assert history["train_loss"][-1] < 0.5 * history["train_loss"][0]
    png = (tmp_path / "full" / "curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000

    part = tmp_path / "part"
    digits.main(["--epochs", "2", "--out", str(part), "--quiet", "--no-plot"])
    resumed = digits.main(["--epochs", "4", "--out", str(part), "--quiet", "--resume", "--plot", str(part / "c.png")])
    assert resumed["history"] == history  # every epoch's loss and accuracy, exactly
    for p, q in zip(resumed["model"].parameters(), full["model"].parameters()):
        assert p.data.tobytes() == q.data.tobytes()
    ckpt = tg.load(part / "checkpoint.npz")
    assert ckpt["epoch"] == 4 and set(ckpt) >= {"model", "optim", "data_rng", "history", "config"}
    with pytest.raises(SystemExit, match="pass the same arguments"):
        digits.main(["--epochs", "5", "--out", str(part), "--quiet", "--resume", "--hidden", "32"])


def _logistic_hessian_and_gradient(x, y, lam, w):
    s = 1 / (1 + np.exp(-x @ w))
    n, d = x.shape
    return x.T @ (x * (s * (1 - s))[:, None]) / n + lam * np.eye(d), x.T @ (s - y) / n + lam * w


def test_newton_direction_uses_exact_hessian_vector_products():
    newton = _load("newton")
    x, y = newton.make_data(200, 6, seed=1)
    loss = newton.make_loss(x, y, 1e-2)
    w = tg.Tensor(np.random.default_rng(0).normal(size=6) * 0.3, requires_grad=True)
    value, grad, direction, used = newton.newton_step(loss, w, cg_tol=1e-13)
    H, g = _logistic_hessian_and_gradient(x, y, 1e-2, w.data)
    np.testing.assert_allclose(grad, g, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(direction, -np.linalg.solve(H, g), rtol=1e-7, atol=1e-12)
    assert used <= 6  # CG on a 6x6 system
    assert w.grad is None  # the Hessian-vector products leave .grad alone


def test_newton_converges_fast_where_gradient_descent_does_not():
    result = _load("newton").main(["--n", "300", "--d", "8", "--gd-steps", "30", "--quiet"])
    norms = [h["grad_norm"] for h in result["newton"]]
    assert norms[-1] < 1e-9 and len(norms) <= 12
    assert result["gd"][-1]["grad_norm"] > 1e-4
    _, g = _logistic_hessian_and_gradient(result["x"], result["y"], 1e-3, result["w_newton"])
    assert np.linalg.norm(g) < 1e-9  # the minimiser, checked with the closed-form gradient


def _script(*args):
    # this checkout's tapegrad, whatever an installed copy may be
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=EXAMPLES, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_newton_runs_as_a_script():
    assert "Newton-CG: " in _script("newton.py", "--n", "200", "--d", "5", "--gd-steps", "5")


def test_classify_digits_runs_as_a_script_with_a_progress_bar(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    out = _script("classify_digits.py", "--epochs", "1", "--no-plot", "--progress", "--out", str(tmp_path))
    assert "epoch   1/1" in out and "batch" in out and "test accuracy" in out


def _png(path):
    data = path.read_bytes()
    return data.startswith(b"\x89PNG") and len(data) > 5000


def test_cnn_digits_learns_in_two_epochs_and_reports_its_tape(tmp_path):
    for module in ("sklearn", "matplotlib", "tqdm"):
        pytest.importorskip(module)
    result = _load("cnn_digits").main(["--epochs", "2", "--plot", str(tmp_path / "cnn.png"), "--quiet"])
    history = result["history"]
    assert result["test_accuracy"] >= 0.9  # 2 epochs; the default 20 reach 0.99 (README)
    assert history["loss"][1] < history["loss"][0] and len(history["test_accuracy"]) == 2
    assert result["tape"]["entries"] > 30 and result["tape"]["saved_bytes"] > 0 and result["step_ms"] > 0
    assert _png(tmp_path / "cnn.png")


def test_cnn_digits_runs_as_a_script_with_a_progress_bar_and_documented_flags(tmp_path):
    for module in ("sklearn", "tqdm"):
        pytest.importorskip(module)
    help_text = _script("cnn_digits.py", "--help")
    for flag in ("--epochs", "--batch-size", "--lr", "--width", "--augment", "--dtype", "--seed", "--plot", "--quiet"):
        assert flag in help_text
    assert "(default: 20)" in help_text and "tapegrad/cnn_digits" in help_text  # defaults shown; a temporary plot
    out = _script("cnn_digits.py", "--epochs", "1", "--width", "8", "--no-plot")
    assert "step/s" in out or "s/step" in out  # tqdm's bar
    assert "epoch   1/1" in out and "test accuracy" in out and "one step's tape" in out


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_char_lm_loss_falls_and_the_samples_change(arch, tmp_path):
    for module in ("matplotlib", "tqdm"):
        pytest.importorskip(module)
    args = ["--arch", arch, "--module", "textwrap", "--steps", "30", "--eval-every", "10", "--width", "32"]
    args += ["--seq-len", "24", "--batch-size", "16", "--sample-length", "40", "--plot", str(tmp_path / "lm.png")]
    result = _load("char_lm").main(args + ["--quiet"])
    history = result["history"]
    assert history["step"] == [10, 20, 30]
    assert history["val_bits"][-1] < history["val_bits"][0] and history["train_bits"][-1] < history["train_bits"][0]
    assert history["val_bits"][0] < np.log2(len(result["chars"]))  # better than guessing uniformly already
    assert result["before"] != result["after"] and len(result["after"]) == len("def ") + 40
    assert _png(tmp_path / "lm.png")


def test_char_lm_runs_as_a_script_and_prints_its_samples():
    pytest.importorskip("tqdm")
    help_text = _script("char_lm.py", "--help")
    assert "(default: argparse)" in help_text and "--temperature" in help_text
    out = _script("char_lm.py", "--module", "string", "--steps", "4", "--eval-every", "2", "--width", "16",
                  "--seq-len", "16", "--sample-length", "20", "--no-plot")  # fmt: skip
    assert "sampled before training" in out and "sampled after 4 steps" in out and "bits/char" in out


def _sklearn_gp(x, y, jitter):
    pytest.importorskip("sklearn")
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)
    return GaussianProcessRegressor(kernel=kernel, alpha=jitter, optimizer=None).fit(x, y)


def test_gaussian_process_likelihood_and_gradient_equal_scikit_learns():
    pytest.importorskip("scipy")
    gp = _load("gaussian_process")
    x, y = gp.make_data(30, 0.2, seed=3)
    reference = _sklearn_gp(x, y, 1e-10)
    value_and_grad = tg.value_and_grad(gp.negative_log_marginal_likelihood(x, y, 1e-10))
    for theta in ([0.0, 0.0, -2.0], [0.7, -0.4, -3.5], [-1.0, 1.2, -1.0]):  # log(c, l, s), scikit-learn's theta
        lml, grad = reference.log_marginal_likelihood(np.array(theta), eval_gradient=True)
        nll, g = value_and_grad(np.array(theta))
        np.testing.assert_allclose(-nll, lml, rtol=0, atol=1e-8)
        np.testing.assert_allclose(-g, grad, rtol=0, atol=1e-8)


def test_gaussian_process_hessian_equals_finite_differences_of_the_gradient():
    pytest.importorskip("scipy")
    gp = _load("gaussian_process")
    x, y = gp.make_data(25, 0.2, seed=4)
    nll = gp.negative_log_marginal_likelihood(x, y)
    theta = np.array([0.3, 0.2, -2.5])
    hessian = tg.hessian(nll)(theta)  # reverse over reverse, through cholesky's and the solves' rules
    grad, eps = tg.grad(nll), 1e-5
    fd = np.stack([(grad(theta + eps * e) - grad(theta - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(hessian, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-12)


def test_gaussian_process_fit_reaches_scikit_learns_optimum_and_plots(tmp_path, capsys):
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")
    gp = _load("gaussian_process")
    out = gp.main(["--n", "30", "--plot", str(tmp_path / "gp.png")])
    printed = capsys.readouterr().out
    assert "length-scale" in printed and "log marginal likelihood" in printed
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(np.exp(-2.0))
    fitted = GaussianProcessRegressor(kernel=kernel, alpha=1e-10).fit(out["x"], out["y"])
    assert -out["nll"] >= fitted.log_marginal_likelihood_value_ - 1e-6  # as good as scikit-learn's own fit
    np.testing.assert_allclose(out["theta"], fitted.kernel_.theta, atol=1e-3)
    assert np.all(np.linalg.eigvalsh(out["hessian"]) > 0)  # a minimum
    assert (tmp_path / "gp.png").read_bytes().startswith(b"\x89PNG")


def test_gaussian_process_runs_as_a_script_with_help_on_every_flag():
    pytest.importorskip("scipy")
    import os

    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}  # the tapegrad of this checkout
    done = subprocess.run(
        [sys.executable, "gaussian_process.py", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    for flag in ("--n", "--noise", "--seed", "--init", "--jitter", "--maxiter", "--plot", "--quiet"):
        assert flag in done.stdout
    assert done.stdout.count("(default:") >= 6
    done = subprocess.run(
        [sys.executable, "gaussian_process.py", "--n", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "noise variance" in done.stdout


def test_bayesian_neural_net_learns_and_is_uncertain_where_there_is_no_data(tmp_path):
    result = _load("bayesian_neural_net").main(["--steps", "400", "--out", str(tmp_path), "--quiet", "--no-plot"])
    losses = [loss for _, loss in result["history"]]
    assert losses[-1] < 0.2 * losses[0]  # -ELBO / N, from about 25 to under 5
    assert result["rmse"] < 0.25  # the data's noise is 0.1, the wave's amplitude 0.5
    assert result["gap_sd"] > 2 * float(np.mean(result["sd"]))  # the posterior spreads out in the gap
    assert (tmp_path / "history.json").exists()


def _bnn_objective(module, hidden=4, n=12):
    net = module.Network(hidden)
    x, y = module.make_data(n, 0.1, seed=3)
    objective = module.make_objective(net, x, y, 0.1, 1.0, samples=3, seed=3)
    return objective, module.initial_params(net, seed=3)


def test_bayesian_neural_net_gradients_equal_finite_differences():
    objective, params = _bnn_objective(_load("bayesian_neural_net"))
    assert tg.gradcheck(lambda p: objective(p, 5), params)  # 26 parameters: the full Jacobian


def test_bayesian_neural_net_under_autograd_numpy_gives_the_same_gradients():
    pytest.importorskip("autograd")
    source = (EXAMPLES / "bayesian_neural_net.py").read_text()
    ours = {"import tapegrad.numpy as np": "import autograd.numpy as np",
            "import tapegrad.numpy.random as npr": "import autograd.numpy.random as npr",
            "from tapegrad import grad": "from autograd import grad"}  # fmt: skip
    for line, theirs in ours.items():
        assert source.count(line + "\n") == 1, line
        source = source.replace(line + "\n", theirs + "\n")
    code = source.split('"""', 2)[2]  # after the docstring: only the imports named tapegrad, now autograd's
    assert "import tapegrad" not in code and "tapegrad." not in code
    module = type(sys)("bayesian_neural_net_autograd")
    exec(compile(source, "bayesian_neural_net_autograd.py", "exec"), module.__dict__)
    import autograd

    mine, params = _bnn_objective(_load("bayesian_neural_net"))
    theirs, same_params = _bnn_objective(module)
    np.testing.assert_array_equal(params, same_params)
    for step in (0, 7):
        np.testing.assert_allclose(tg.grad(mine)(params, step), autograd.grad(theirs)(params, step), rtol=1e-10)
        np.testing.assert_allclose(mine(params, step), theirs(params, step), rtol=1e-12)


# -- --compile: the same training, bit for bit --------------------------------------------------------------------
def test_classify_digits_compiled_trains_exactly_as_eager(tmp_path):
    pytest.importorskip("sklearn")
    digits = _load("classify_digits")
    common = ["--epochs", "2", "--hidden", "32", "--quiet", "--no-plot", "--no-progress"]
    eager = digits.main(common + ["--out", str(tmp_path / "eager")])
    compiled = digits.main(common + ["--out", str(tmp_path / "compiled"), "--compile"])
    assert compiled["history"] == eager["history"]  # losses and accuracies to the last bit (dropout included)
    for (name, p), q in zip(compiled["model"].named_parameters(), eager["model"].parameters()):
        np.testing.assert_array_equal(p.data, q.data, err_msg=name)


def test_cnn_digits_compiled_trains_exactly_as_eager():
    for module in ("sklearn", "tqdm"):
        pytest.importorskip(module)
    cnn = _load("cnn_digits")
    common = ["--epochs", "2", "--width", "4", "--no-plot", "--quiet"]
    eager, compiled = cnn.main(common), cnn.main(common + ["--compile"])
    assert compiled["history"] == eager["history"]  # batch norm's statistics, the schedule, dropout: all the same
    for (name, b), c in zip(compiled["model"].named_buffers(), eager["model"].buffers()):
        np.testing.assert_array_equal(b.data, c.data, err_msg=name)


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_char_lm_compiled_trains_exactly_as_eager(arch):
    pytest.importorskip("tqdm")
    args = ["--arch", arch, "--module", "string", "--steps", "6", "--eval-every", "3", "--width", "16", "--seq-len"]
    args += ["12", "--batch-size", "8", "--sample-length", "10", "--no-plot", "--quiet"]
    lm = _load("char_lm")
    eager, compiled = lm.main(args), lm.main(args + ["--compile"])
    assert compiled["after"] == eager["after"]
    if not fuse.available():  # NumPy's calls, eager's to the bit
        assert compiled["history"] == eager["history"]
        return
    # fused kernels (the jit extra): numba's tanh, exp and log are within a few ulps of NumPy's (test_fusion.py)
    assert compiled["history"].keys() == eager["history"].keys()
    for key, values in eager["history"].items():
        np.testing.assert_allclose(compiled["history"][key], values, rtol=1e-9, err_msg=key)


# -- DP-SGD: per-example gradients from vmap ---------------------------------------------------------------
def test_dp_sgd_per_example_gradients_equal_a_loop_and_are_clipped():
    dp = _load("dp_sgd")
    x, y, _, _ = dp.load_data(0)
    params = dp.init_params(16, 0)
    grads = dp.per_example_grads(params, x[:32], y[:32])
    for i in (0, 9, 31):
        want = tg.grad(dp.loss)(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(grads[k][i], want[k], rtol=1e-10, atol=1e-13)
    # no noise, no clipping: DP-SGD's step is the batch gradient's mean exactly
    step = dp.clipped_noisy_mean(grads, clip=1e9, noise=0.0, rng=np.random.default_rng(0))
    batch = tg.grad(dp.loss)(params, x[:32], y[:32])
    for k in params:
        np.testing.assert_allclose(step[k], batch[k] / 32, rtol=1e-10, atol=1e-14)
    # clipped without noise: the mean of gradients each of norm at most clip
    clipped = dp.clipped_noisy_mean(grads, clip=0.01, noise=0.0, rng=np.random.default_rng(0))
    assert np.sqrt(sum(np.sum(g**2) for g in clipped.values())) <= 0.01 + 1e-12


def test_dp_sgd_learns_beside_its_baseline(capsys):
    dp = _load("dp_sgd")
    dp.main(["--epochs", "10", "--no-timing"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    sgd, private = (float(v.split()[-1].rstrip(",")) for v in last.split(":")[1].split("(")[0].split(", "))
    assert sgd > 0.9 and 0.6 < private <= sgd + 0.02, last


# -- a Gaussian mixture fitted by EM as a fixed point --------------------------------------------------------------
def test_gaussian_mixture_fit_is_the_maximum_likelihood_and_recovers_the_components(capsys):
    gm = _load("gaussian_mixture")
    result = gm.main(["--points", "300", "--components", "2"])
    x, theta = result["x"], result["theta"]
    w, mu, sigma = gm.unpack(theta, 2)
    np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(mu, [-4.0, 0.0], atol=0.3)  # TRUE's first two components
    np.testing.assert_allclose(sigma, [1.0, 0.7], atol=0.2)
    assert np.abs(gm.em_step(x)(theta).data - theta).max() < 1e-9  # a fixed point of EM
    # the log-likelihood is stationary there in the means and stds (the MLE), checked by its own gradient
    g = tg.grad(lambda t: gm.log_likelihood_tensor(x, t))(theta)
    assert np.abs(g[2:]).max() < 1e-6 * len(x)
    # translating the data translates the means: every row of d mu / d x sums to 1
    np.testing.assert_allclose(result["influence"].sum(axis=1), [1.0, 1.0], rtol=1e-8)
    assert "log-likelihood" in capsys.readouterr().out


def test_gaussian_mixture_influence_equals_refitting_with_a_point_moved():
    gm = _load("gaussian_mixture")
    x = gm.make_data(80, seed=1, components=3)
    jac = tg.jacobian(lambda x: gm.fit(x, 3))(x)  # (9 parameters, 80 points), by the implicit function theorem
    eps = 1e-5
    for n in (int(np.argmin(x)), 17, int(np.argmax(x))):
        up, down = x.copy(), x.copy()
        up[n] += eps
        down[n] -= eps
        numeric = (gm.fit(up, 3) - gm.fit(down, 3)) / (2 * eps)
        np.testing.assert_allclose(jac[:, n], numeric, rtol=1e-5, atol=1e-8)
