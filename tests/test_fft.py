"""tapegrad.fft beyond the op table: every function's values and gradients against torch.fft (whose complex
gradients are the conjugates of ours), on real and complex input, with n / s, axes and every norm; the
transposes the rules rely on; shifts and frequencies; errors. The op table (tests/op_rows_fft.py) checks the
ops against finite differences, first and second order, on every backend."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import fft

RNG = np.random.default_rng(11)
REAL = RNG.standard_normal((3, 4))
CPLX = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))

# name: (ours, torch's, input); keywords in torch's spelling where they differ (dim for axis/axes)
CASES = {
    "fft": (lambda x: fft.fft(x, n=6, axis=0, norm="ortho"), lambda t, x: t.fft.fft(x, n=6, dim=0, norm="ortho"), CPLX),
    "fft_real": (lambda x: fft.fft(x), lambda t, x: t.fft.fft(x), REAL),
    "ifft": (lambda x: fft.ifft(x, n=3, norm="forward"), lambda t, x: t.fft.ifft(x, n=3, norm="forward"), CPLX),
    "fft2": (lambda x: fft.fft2(x, s=(2, 5)), lambda t, x: t.fft.fft2(x, s=(2, 5)), CPLX),
    "ifft2": (lambda x: fft.ifft2(x), lambda t, x: t.fft.ifft2(x), REAL),
    "fftn": (lambda x: fft.fftn(x, axes=(1,)), lambda t, x: t.fft.fftn(x, dim=(1,)), CPLX),
    "ifftn": (
        lambda x: fft.ifftn(x, s=(4, 2), norm="ortho"),
        lambda t, x: t.fft.ifftn(x, s=(4, 2), norm="ortho"),
        CPLX,
    ),
    "rfft": (lambda x: fft.rfft(x, n=5), lambda t, x: t.fft.rfft(x, n=5), REAL),
    "irfft": (lambda x: fft.irfft(x, n=7, axis=0), lambda t, x: t.fft.irfft(x, n=7, dim=0), CPLX),
    "irfft_default": (lambda x: fft.irfft(x, norm="ortho"), lambda t, x: t.fft.irfft(x, norm="ortho"), CPLX),
    "rfft2": (lambda x: fft.rfft2(x), lambda t, x: t.fft.rfft2(x), REAL),
    "irfft2": (lambda x: fft.irfft2(x, s=(3, 5)), lambda t, x: t.fft.irfft2(x, s=(3, 5)), CPLX),
    "rfftn": (lambda x: fft.rfftn(x, norm="forward"), lambda t, x: t.fft.rfftn(x, norm="forward"), REAL),
    "irfftn": (lambda x: fft.irfftn(x), lambda t, x: t.fft.irfftn(x), CPLX),
    "hfft": (lambda x: fft.hfft(x, n=5), lambda t, x: t.fft.hfft(x, n=5), CPLX),
    "ihfft": (lambda x: fft.ihfft(x, norm="ortho"), lambda t, x: t.fft.ihfft(x, norm="ortho"), REAL),
    "fftshift": (lambda x: fft.fftshift(x), lambda t, x: t.fft.fftshift(x), CPLX),
    "ifftshift": (lambda x: fft.ifftshift(x, axes=0), lambda t, x: t.fft.ifftshift(x, dim=0), REAL),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs, x = CASES[name]
    t = torch.tensor(x, requires_grad=True)
    out_t = theirs(torch, t)
    wr, wi = RNG.standard_normal((2,) + tuple(out_t.shape))

    def loss(out, lib, wr=wr, wi=wi):  # a real loss of both parts of the output
        if lib is torch:
            wr, wi = torch.tensor(wr), torch.tensor(wi)
        if not (out.is_complex() if lib is torch else np.iscomplexobj(out.data)):
            return (out * wr).sum()
        return (lib.real(out) * wr + lib.imag(out) * wi).sum()

    loss(out_t, torch).backward()
    out = ours(tg.Tensor(x))
    np.testing.assert_allclose(out.numpy(), out_t.detach().resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
    g = tg.grad(lambda x: loss(ours(x), tg))(x)
    assert g.dtype == x.dtype  # a real input's gradient is real
    np.testing.assert_allclose(g, np.conj(t.grad.resolve_conj().numpy()), rtol=1e-9, atol=1e-12)


def test_every_public_function_is_covered_here_or_constant():
    covered = {name.split("_")[0] for name in CASES} | {"fftfreq", "rfftfreq"}
    assert set(fft.__all__) <= covered


def test_the_transforms_are_their_own_transposes():
    # <fft(x), y> = <x, fft(y)> with the bilinear pairing (the DFT matrix is symmetric), for every norm
    x, y = CPLX, RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    for norm in ("backward", "ortho", "forward"):
        for f in (fft.fftn, fft.ifftn):
            lhs = np.sum(f(tg.Tensor(x), norm=norm).numpy() * y)
            rhs = np.sum(x * f(tg.Tensor(y), norm=norm).numpy())
            np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_float32_gives_complex64_and_its_gradient_stays_float32():
    x = tg.Tensor(REAL.astype(np.float32), requires_grad=True)
    with tg.tape.record():
        spectrum = fft.rfft(x)
        y = fft.irfft(spectrum, n=4).sum() + tg.real(fft.fft2(x)).sum()
    assert spectrum.dtype == np.complex64 and y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32


def test_frequencies_are_constants_and_shifts_are_differentiable():
    np.testing.assert_array_equal(fft.fftfreq(5, d=0.5).numpy(), np.fft.fftfreq(5, d=0.5))
    np.testing.assert_array_equal(fft.rfftfreq(6).numpy(), np.fft.rfftfreq(6))
    assert not fft.fftfreq(4).requires_grad and fft.rfftfreq(4, dtype=np.float32).dtype == np.float32
    assert tg.gradcheck(lambda x: fft.fftshift(x, axes=(0, 1)) * np.arange(12.0).reshape(3, 4), REAL)
    np.testing.assert_array_equal(fft.ifftshift(fft.fftshift(tg.Tensor(REAL))).numpy(), REAL)


def test_errors_name_the_function():
    with pytest.raises(TypeError, match="rfft: takes real input"):
        fft.rfft(tg.Tensor(CPLX))
    with pytest.raises(ValueError, match="fft: norm"):
        fft.fft(tg.Tensor(REAL), norm="sideways")
    with pytest.raises(ValueError, match="fft: n must be a positive int"):
        fft.fft(tg.Tensor(REAL), n=0)
    with pytest.raises(ValueError, match="fftn: s .* and axes .* must have the same length"):
        fft.fftn(tg.Tensor(REAL), s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="ifft: axis 2 is out of range"):
        fft.ifft(tg.Tensor(REAL), axis=2)
