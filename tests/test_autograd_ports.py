"""autograd's classic programs and their tapegrad ports (examples/autograd/*.py and examples/*_from_autograd.py):
only the imports differ, the ports run and give exact gradients, and where autograd is installed (optional)
both give the same numbers."""

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
from numpy.polynomial import Polynomial

import tapegrad as tg

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
PORTS = {"rnn": "rnn_from_autograd", "tanh": "tanh_from_autograd"}


def _load(path):
    spec = importlib.util.spec_from_file_location(f"port_{path.stem}_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _autograd_program(name):
    pytest.importorskip("autograd", reason="HIPS autograd is not installed: pip install autograd")
    return _load(EXAMPLES / "autograd" / f"{name}.py")


def _imports(lines):
    return [
        line for line in lines if line.startswith(("import ", "from ")) and ("autograd" in line or "tapegrad" in line)
    ]


def _body(lines):
    """The program without its blank lines and its imports of autograd or tapegrad."""
    return [line for line in lines if line.strip() and line not in _imports(lines)]


@pytest.mark.parametrize("name", sorted(PORTS))
def test_a_port_differs_from_autograd_s_program_in_its_imports_only(name):
    theirs = (EXAMPLES / "autograd" / f"{name}.py").read_text().splitlines()
    ours = (EXAMPLES / f"{PORTS[name]}.py").read_text().splitlines()
    assert _body(ours) == _body(theirs)
    assert all("tapegrad" in line for line in _imports(ours)) and all("autograd" in line for line in _imports(theirs))


def test_the_rnn_port_trains_with_exact_gradients(capsys):
    rnn = _load(EXAMPLES / "rnn_from_autograd.py")
    params, final = rnn.main(["--iters", "11", "--lines", "12"])
    out = capsys.readouterr().out
    first = float(out.splitlines()[0].split()[-1])
    assert float(final) < 0.8 * first  # 4.85 at the start (log 128), under 3.9 after 11 steps
    inputs = rnn.build_dataset("ab ba\ncab", 4, 128)
    small = rnn.create_rnn_params(input_size=128, output_size=128, state_size=3, param_scale=0.3)
    flat_loss, _, v0 = tg.flatten_func(lambda p: -rnn.rnn_log_likelihood(p, inputs, inputs), small)
    tg.gradcheck(flat_loss, v0)  # loglik += per step, through a dict of parameters


def test_the_rnn_port_gives_autograd_s_numbers():
    theirs = _autograd_program("rnn")
    ours = _load(EXAMPLES / "rnn_from_autograd.py")
    args = ["--iters", "6", "--lines", "8"]
    (p_ours, loss_ours), (p_theirs, loss_theirs) = ours.main(args), theirs.main(args)
    np.testing.assert_allclose(float(loss_ours), float(loss_theirs), rtol=1e-10)
    for key in p_theirs:
        np.testing.assert_allclose(p_ours[key], p_theirs[key], rtol=1e-8, atol=1e-12)


def _exact_tanh_derivatives(x, n=6):
    p, s = Polynomial([0, 1]), Polynomial([1, 0, -1])  # d/dx P(tanh) = P'(tanh) (1 - tanh^2)
    out = [p(np.tanh(x))]
    for _ in range(n):
        p = p.deriv() * s
        out.append(p(np.tanh(x)))
    return out


def test_the_tanh_port_s_six_derivatives_are_exact_and_matplotlib_takes_them(tmp_path):
    pytest.importorskip("matplotlib")
    x, ys = _load(EXAMPLES / "tanh_from_autograd.py").main(["--points", "41", "--out", str(tmp_path)])
    assert all(type(y) is np.ndarray for y in ys)  # arrays, not tensors: what NumPy code hands to matplotlib
    for k, (y, e) in enumerate(zip(ys, _exact_tanh_derivatives(x))):
        np.testing.assert_allclose(y, e, atol=1e-11 * 10**k, err_msg=f"derivative {k}")
    assert (tmp_path / "tanh.png").read_bytes().startswith(b"\x89PNG")


def test_the_tanh_port_agrees_with_autograd_where_autograd_s_rounding_allows(tmp_path):
    pytest.importorskip("matplotlib")
    theirs = _autograd_program("tanh")
    x = np.linspace(-3, 3, 25)  # autograd's sixth derivative loses every digit near |x| = 7 (its y**2 overflows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ours, their in zip(_load(EXAMPLES / "tanh_from_autograd.py").derivatives(x), theirs.derivatives(x)):
            np.testing.assert_allclose(ours, their, rtol=1e-9, atol=1e-9)
