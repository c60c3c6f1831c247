"""``scipy.stats``' distributions on tensors, with SciPy's names and signatures (``norm.logpdf(x, loc, scale)``):
each density is composed of tapegrad's ops, so it is differentiable in the point and in every continuous
parameter, to any order.

=======================  ===========================================================  =====================
distribution             methods                                                      parameters
=======================  ===========================================================  =====================
``norm``                 ``logpdf pdf cdf logcdf sf logsf``                           ``loc scale``
``multivariate_normal``  ``logpdf pdf entropy`` (``x`` ``(..., d)``, SciPy's shapes)  ``mean cov``
``t``                    ``logpdf pdf cdf logcdf``                                    ``df loc scale``
``beta``                 ``logpdf pdf cdf``                                           ``a b loc scale``
``gamma``                ``logpdf pdf cdf``                                           ``a loc scale``
``chi2``                 ``logpdf pdf cdf``                                           ``df loc scale``
``expon``                ``logpdf pdf cdf logcdf``                                    ``loc scale``
``laplace``              ``logpdf pdf cdf``                                           ``loc scale``
``logistic``             ``logpdf pdf cdf logcdf``                                    ``loc scale``
``cauchy``               ``logpdf pdf cdf``                                           ``loc scale``
``dirichlet``            ``logpdf pdf`` (``x`` of shape ``(k,)`` or ``(k, n)``)         ``alpha``
``poisson``              ``logpmf pmf cdf``                                           ``mu loc``
``bernoulli``            ``logpmf pmf``                                               ``p loc``
``binom``                ``logpmf pmf``                                               ``n p loc``
=======================  ===========================================================  =====================

Outside the support a log-density is ``-inf`` (a select, never a product with a mask); at its edge (``gamma``'s,
``chi2``'s 0, ``beta``'s 0 and 1) SciPy's value, the limit of ``z^(a-1)``: finite where the exponent is 0, ``-inf``
above, ``inf`` below. The CDFs of ``t``,
``beta``, ``gamma`` and ``chi2`` are the incomplete beta and gamma functions, differentiable in their shape
parameters too (``df``, ``a``, ``b``: ``tapegrad.ops._incomplete``), to any order. The discrete distributions'
``n`` and ``loc`` are integers: a gradient in them is refused with a ``TypeError``, never a silent zero.

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.scipy import stats
>>> tg.grad(lambda mu: stats.norm.logpdf(np.array([1.0, 2.0]), mu, 2.0).sum())(0.0)  # sum (x - mu) / 4
array(0.75)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

import tapegrad.linalg as linalg
import tapegrad.ops as tg

from .._state import is_traced
from .._tensor import Tensor
from ..ops import special as sp
from ..ops._rules import call, data, recorded
from ..registry import defop
from ._types import like_scipy

__all__ = [
    "norm", "multivariate_normal", "t", "beta", "gamma", "chi2", "expon", "laplace", "logistic", "cauchy",
    "dirichlet", "poisson", "bernoulli", "binom",
]  # fmt: skip

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _t(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def _inside(cond, value):
    """``value`` where ``cond`` holds (inside the support), ``-inf`` elsewhere: a select."""
    return tg.where(cond, value, -np.inf)


def _edge_limit(shape):
    """The limit of ``(shape - 1) log z`` as z -> 0+, a density's log-factor ``z^(shape-1)`` at the edge of its
    support (SciPy's value there): 0 where shape is 1, ``-inf`` above (the density is 0), ``inf`` below. A
    constant: the log-factor's derivatives there are infinite or undefined, and a select keeps them out."""
    exponent = np.asarray(data(shape)) - 1.0
    return np.where(exponent == 0, 0.0, np.where(exponent > 0, -np.inf, np.inf))


def _integral(k):
    """Where ``k`` is an integer (a value of a count): elsewhere a pmf is 0, as SciPy's."""
    return k == np.floor(k)


def _mass(inside, value, k, valid=True):
    """A log-pmf, SciPy's: ``value`` on the support, ``-inf`` off it, NaN where k is NaN or an integer parameter is
    not one (``binom``'s n of 2.5); a select."""
    return tg.where(inside, value, np.where(np.isnan(k) | ~np.asarray(valid), np.nan, -np.inf))


def _integer_parameter(value, what, name, method):
    """An integer parameter of a discrete distribution (``binom``'s n, a ``loc`` shift): a step function of it
    has no derivative, so a tensor that needs a gradient is refused rather than given a silent zero."""
    if isinstance(value, Tensor):
        if value.requires_grad:
            raise TypeError(
                f"scipy.stats.{name}.{method}: {what} is an integer parameter of a discrete distribution, with no "
                f"gradient; pass it as a number or an array (or t.detach()), or differentiate in the continuous "
                f"parameters only"
            )
        value = value.data
    return np.asarray(value)


def _standard_cdf(xp, g, ans, z, *shape, name):
    # d/dz cdf(z) = pdf(z): SciPy's on a plain replay, tapegrad's own (differentiable) on a recorded one
    if recorded(xp):
        return g * _DISTRIBUTIONS[name].pdf(z, *shape)
    return g * getattr(scipy.stats, name).pdf(z, *shape)


def _float_dtype(a):
    """The input's floating dtype (float32 stays float32), float64 for anything else."""
    dtype = np.asarray(a).dtype
    return dtype if dtype.kind == "f" else np.float64


def _standard_cdf_forward(z, *shape, name):
    return np.asarray(getattr(scipy.stats, name).cdf(z, *shape), dtype=_float_dtype(z))


def _positive_part(xp, z):
    """``z`` where it is positive, 1 elsewhere (a select: the rules below use it where z > 0 only)."""
    return xp.where(data(z) > 0, z, 1.0)


def _gamma_cdf_a(xp, g, ans, z, a, *, name):
    # P(a, z) for z > 0, 0 below: its derivative in a is the incomplete gamma function's, 0 below
    return g * xp.where(data(z) > 0, call(xp, sp._gammainc_da, a, _positive_part(xp, z), n=1), 0.0)


def _chi2_cdf_df(xp, g, ans, z, df, *, name):
    # P(df / 2, z / 2): half the derivative in the first parameter
    inner = call(xp, sp._gammainc_da, df * 0.5, _positive_part(xp, z) * 0.5, n=1)
    return g * xp.where(data(z) > 0, inner * 0.5, 0.0)


def _beta_cdf_shape(na, nb):
    def rule(xp, g, ans, z, a, b, *, name):
        inside = (data(z) > 0) & (data(z) < 1)
        safe = xp.where(inside, z, 0.5)
        return g * xp.where(inside, call(xp, sp._betainc_dab, a, b, safe, na=na, nb=nb), 0.0)

    return rule


def _t_cdf_df(xp, g, ans, z, df, *, name):
    # cdf = I_t(df / 2, 1 / 2) / 2 below 0 and 1 minus that above, t = df / (df + z^2). In df: the parameter's
    # derivative / 2 and the density in t times dt/ddf = z^2 / (df + z^2)^2, which with 1 - t = z^2 / (df + z^2)
    # is t^(df/2 - 1) |z| / (B(df / 2, 1 / 2) (df + z^2)^(3/2)): finite (0) at z = 0, where dt/ddf is
    zz = z * z
    total = df + zz
    t = df / total
    half = df * 0.5
    in_a = call(xp, sp._betainc_dab, half, 0.5, t, na=1, nb=0) * 0.5
    log_density = call(xp, sp.xlogy, half - 1.0, t) - call(xp, sp.betaln, half, 0.5)
    in_t = xp.exp(log_density) * xp.absolute(z) / (total * xp.sqrt(total))
    side = np.where(data(z) < 0, 0.5, -0.5)
    return g * ((in_a + in_t) * side)


def _cdf(name, *shape_rules):
    return defop(
        f"{name}_cdf",
        _standard_cdf_forward,
        _standard_cdf,
        *shape_rules,
        save="x y z" if len(shape_rules) == 2 else "x y",
        register=False,
        broadcast=True,
        elementwise=True,
    )


_CDF_OPS = {
    "t": _cdf("t", _t_cdf_df),
    "gamma": _cdf("gamma", _gamma_cdf_a),
    "chi2": _cdf("chi2", _chi2_cdf_df),
    "beta": _cdf("beta", _beta_cdf_shape(1, 0), _beta_cdf_shape(0, 1)),
}


def _standard_cdf_of(name, z, *shape):
    """The standard CDF of a distribution with shape parameters, differentiable in z and in each of them."""
    return _CDF_OPS[name](
        z, *(p if isinstance(p, Tensor) else np.asarray(p, dtype=np.float64) for p in shape), name=name
    )


def _poisson_cdf_vjp(xp, g, ans, mu, *, k):
    # d/dmu P(K <= k) = -P(K = floor(k)) for k >= 0
    kk = np.floor(k)
    pmf = poisson.pmf(kk, mu) if recorded(xp) else scipy.stats.poisson.pmf(kk, mu)
    return -g * pmf


_poisson_cdf_op = defop(
    "poisson_cdf", lambda mu, *, k: np.asarray(scipy.stats.poisson.cdf(k, mu), dtype=_float_dtype(mu)),
    _poisson_cdf_vjp, save="x", register=False, broadcast=True,
)  # fmt: skip


class _Distribution:
    """A distribution with SciPy's method names; ``pdf``/``pmf`` are ``exp`` of the log-density."""

    name = ""

    def __repr__(self) -> str:
        return f"tapegrad.scipy.stats.{self.name}"


class _Continuous(_Distribution):
    def pdf(self, x, *args, **kwargs):
        return tg.exp(self.logpdf(x, *args, **kwargs))


class _Discrete(_Distribution):
    def pmf(self, k, *args, **kwargs):
        return tg.exp(self.logpmf(k, *args, **kwargs))


def _standard(x, loc, scale):
    return (_t(x) - loc) / scale


class _Norm(_Continuous):
    """The normal distribution: ``norm.logpdf(x, loc=0, scale=1)``.

    >>> from tapegrad.scipy import stats
    >>> stats.norm.cdf(0.0)
    np.float64(0.5)
    """

    name = "norm"

    def logpdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        return -0.5 * z * z - tg.log(_t(scale)) - 0.5 * _LOG_2PI

    def cdf(self, x, loc=0.0, scale=1.0):
        return sp.ndtr(_standard(x, loc, scale))

    def logcdf(self, x, loc=0.0, scale=1.0):
        return sp.log_ndtr(_standard(x, loc, scale))

    def sf(self, x, loc=0.0, scale=1.0):
        return sp.ndtr(-_standard(x, loc, scale))

    def logsf(self, x, loc=0.0, scale=1.0):
        return sp.log_ndtr(-_standard(x, loc, scale))


def _mvn_parameters(mean, cov, where):
    """SciPy's ``_process_parameters``: the mean as a vector of the dimension d (mean's size; with no mean cov's,
    1 for a number or a vector) and cov as a (d, d) matrix (a number times the identity, a vector its diagonal)."""
    cov = _t(cov)
    if mean is None:
        d = cov.shape[0] if cov.ndim >= 2 else 1
        mean = tg.zeros(d)
    mean = _t(mean)
    d = int(np.prod(mean.shape))
    if d == 1:
        mean, cov = tg.reshape(mean, (1,)), tg.reshape(cov, (1, 1))
    if mean.ndim != 1:
        raise ValueError(f"{where}: mean must be a vector of length {d}, got shape {mean.shape}")
    if cov.ndim < 2:
        cov = tg.multiply(tg.eye(d), cov)
    if cov.shape != (d, d):
        raise ValueError(f"{where}: cov must be of shape ({d}, {d}), got {cov.shape}")
    return mean, cov


class _MultivariateNormal(_Continuous):
    """``multivariate_normal.logpdf(x, mean, cov)`` by the Cholesky factor of cov, with SciPy's shapes: the
    dimension d is mean's size (cov's with no mean, 1 for a number), ``x`` of shape ``(..., d)``, or of shape
    ``(n,)`` n points where d is 1; the result squeezed, as SciPy's.

    >>> import numpy as np
    >>> from tapegrad.scipy import stats
    >>> stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2))
    np.float64(-1.8378770664093453)
    >>> stats.multivariate_normal.logpdf(np.array([0.0, 1.0]), 0.0, 1.0).round(4)  # two points of a 1-d normal
    array([-0.9189, -1.4189])
    """

    name = "multivariate_normal"

    def logpdf(self, x, mean=None, cov=1.0, allow_singular=False):
        return self._logpdf(x, mean, cov, allow_singular, "logpdf")

    def pdf(self, x, mean=None, cov=1.0, allow_singular=False):
        return tg.exp(self._logpdf(x, mean, cov, allow_singular, "pdf"))

    def _logpdf(self, x, mean, cov, allow_singular, method):
        where = f"scipy.stats.multivariate_normal.{method}"
        if allow_singular:  # refused rather than ignored: a singular cov has no Cholesky factor
            raise NotImplementedError(
                f"{where}: allow_singular=True is not supported (the density is computed by the Cholesky factor "
                f"of cov, which a singular cov does not have); pass a positive definite cov"
            )
        mean, cov = _mvn_parameters(mean, cov, where)
        d = mean.shape[0]
        x = _t(x)
        if x.ndim < 2:  # SciPy's: a number is one point; a vector n points where d is 1, one point otherwise
            x = tg.reshape(x, (-1, 1) if d == 1 else (1, -1))
        if x.shape[-1] != d:
            raise ValueError(f"{where}: x has {x.shape[-1]} components in its last axis, the distribution {d}")
        try:
            chol = linalg.cholesky(cov)
        except np.linalg.LinAlgError as err:
            raise np.linalg.LinAlgError(
                f"{where}: cov is not positive definite ({err}); allow_singular=True is not supported"
            ) from err
        diff = tg.reshape(x - mean, (-1, d))
        z = linalg.solve_triangular(chol, tg.transpose(diff), lower=True)
        half_logdet = tg.sum(tg.log(tg.diagonal(chol)))
        out = -0.5 * tg.sum(z * z, axis=0) - half_logdet - 0.5 * d * _LOG_2PI
        return tg.squeeze(tg.reshape(out, x.shape[:-1]))  # SciPy's: every axis of size 1 goes

    def entropy(self, mean=None, cov=1.0):
        cov = _t(cov)
        d = cov.shape[-1] if cov.ndim == 2 else 1
        cov = cov if cov.ndim == 2 else tg.multiply(tg.eye(d), cov)
        half_logdet = tg.sum(tg.log(tg.diagonal(linalg.cholesky(cov))))
        return half_logdet + 0.5 * d * (1.0 + _LOG_2PI)


_RATIO_SERIES_ABOVE = 10.0  # where the series' first omitted term, 0.06 h^-15, is below 1e-16
# the series' coefficients of h^-1, h^-3, ..., h^-13: B_{n+1}(1/2) - B_{n+1}(0) over n (n + 1), alternating
_RATIO_SERIES = (-1 / 8, 1 / 192, -1 / 640, 17 / 14336, -31 / 18432, 691 / 180224, -5461 / 425984)


def _log_gamma_ratio(h):
    """``log Gamma(h + 1/2) - log Gamma(h) - log(h) / 2``, t's normalising constant less the normal's: for large
    h the difference of two large log-gammas loses ~log10(h) digits (6 at df = 1e10, NaN at inf), so above
    :data:`_RATIO_SERIES_ABOVE` it is the asymptotic series in 1/h (-1/(8h) + 1/(192h^3) - ...), 0 at h = inf.
    Each branch on its own safe point, so that neither's derivative is inf * 0."""
    big = h.data > _RATIO_SERIES_ABOVE
    u = 1.0 / tg.where(big, h, _RATIO_SERIES_ABOVE)
    u2 = u * u
    series = _RATIO_SERIES[-1]
    for c in reversed(_RATIO_SERIES[:-1]):  # Horner's, in u^2
        series = c + u2 * series
    small = tg.where(big, 1.0, h)
    direct = sp.gammaln(small + 0.5) - sp.gammaln(small) - 0.5 * tg.log(small)
    return tg.where(big, u * series, direct)


class _StudentT(_Continuous):
    """Student's t: ``t.logpdf(x, df, loc=0, scale=1)``, differentiable in df too."""

    name = "t"

    def logpdf(self, x, df, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        df = _t(df)
        # (df + 1) / 2 log1p(z^2 / df), and its limit z^2 / 2 at df = inf (the normal), where it is inf * 0
        finite = np.isfinite(df.data)
        safe = tg.where(finite, df, 1.0)
        tail = tg.where(finite, (safe + 1.0) * 0.5 * tg.log1p(z * z / safe), 0.5 * z * z)
        return _log_gamma_ratio(df * 0.5) - 0.5 * _LOG_2PI - tg.log(_t(scale)) - tail

    def cdf(self, x, df, loc=0.0, scale=1.0):
        """Differentiable in x, df, loc and scale (the incomplete beta function and its derivatives)."""
        return _standard_cdf_of("t", _standard(x, loc, scale), df)

    def logcdf(self, x, df, loc=0.0, scale=1.0):
        return tg.log(self.cdf(x, df, loc, scale))


class _Beta(_Continuous):
    """``beta.logpdf(x, a, b, loc=0, scale=1)``, ``-inf`` outside [0, 1]; at 0 (at 1) the limit, by ``a``
    (``b``) as :func:`_edge_limit`."""

    name = "beta"

    def logpdf(self, x, a, b, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        support = (z.data >= 0) & (z.data <= 1)
        at_0, at_1 = z.data == 0, z.data == 1
        # each log term on its own safe point (0.5 where it is not evaluated), its limit at its own edge
        left = tg.where(at_0, _edge_limit(a), sp.xlogy(_t(a) - 1.0, tg.where(support & ~at_0, z, 0.5)))
        right = tg.where(at_1, _edge_limit(b), sp.xlog1py(_t(b) - 1.0, -tg.where(support & ~at_1, z, 0.5)))
        return _inside(support, left + right - sp.betaln(a, b) - tg.log(_t(scale)))

    def cdf(self, x, a, b, loc=0.0, scale=1.0):
        """Differentiable in x, a, b, loc and scale (the incomplete beta function and its derivatives)."""
        return _standard_cdf_of("beta", _standard(x, loc, scale), a, b)


class _Gamma(_Continuous):
    """``gamma.logpdf(x, a, loc=0, scale=1)``, ``-inf`` below loc; at loc the limit, by ``a`` as
    :func:`_edge_limit`."""

    name = "gamma"

    def logpdf(self, x, a, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        support, at_0 = z.data >= 0, z.data == 0
        # z^(a-1) on a safe point (1 where it is not evaluated), its limit at 0; -z on the support (its derivative
        # -1 at 0 too, the one-sided one)
        power = tg.where(at_0, _edge_limit(a), sp.xlogy(_t(a) - 1.0, tg.where(support & ~at_0, z, 1.0)))
        value = power - tg.where(support, z, 0.0) - sp.gammaln(a) - tg.log(_t(scale))
        return _inside(support, value)

    def cdf(self, x, a, loc=0.0, scale=1.0):
        """Differentiable in x, a, loc and scale (the incomplete gamma function and its derivatives)."""
        return _standard_cdf_of("gamma", _standard(x, loc, scale), a)


class _Chi2(_Continuous):
    """``chi2.logpdf(x, df, loc=0, scale=1)``: a gamma of shape df / 2 and scale 2."""

    name = "chi2"

    def logpdf(self, x, df, loc=0.0, scale=1.0):
        return gamma.logpdf(x, _t(df) * 0.5, loc, _t(scale) * 2.0)

    def cdf(self, x, df, loc=0.0, scale=1.0):
        """Differentiable in x, df, loc and scale (the incomplete gamma function and its derivatives)."""
        return _standard_cdf_of("chi2", _standard(x, loc, scale), df)


class _Expon(_Continuous):
    """``expon.logpdf(x, loc=0, scale=1)``, ``-inf`` below loc."""

    name = "expon"

    def logpdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        return _inside(z.data >= 0, -z - tg.log(_t(scale)))

    def cdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        return tg.where(z.data >= 0, -tg.expm1(-tg.where(z.data >= 0, z, 0.0)), 0.0)

    def logcdf(self, x, loc=0.0, scale=1.0):
        return tg.log(self.cdf(x, loc, scale))


class _Laplace(_Continuous):
    """``laplace.logpdf(x, loc=0, scale=1)``."""

    name = "laplace"

    def logpdf(self, x, loc=0.0, scale=1.0):
        return -tg.absolute(_standard(x, loc, scale)) - tg.log(2.0 * _t(scale))

    def cdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        below = z.data < 0
        return tg.where(below, 0.5 * tg.exp(tg.where(below, z, 0.0)), 1.0 - 0.5 * tg.exp(-tg.where(below, 0.0, z)))


class _Logistic(_Continuous):
    """``logistic.logpdf(x, loc=0, scale=1)``."""

    name = "logistic"

    def logpdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        return tg.log_sigmoid(z) + tg.log_sigmoid(-z) - tg.log(_t(scale))

    def cdf(self, x, loc=0.0, scale=1.0):
        return tg.sigmoid(_standard(x, loc, scale))

    def logcdf(self, x, loc=0.0, scale=1.0):
        return tg.log_sigmoid(_standard(x, loc, scale))


class _Cauchy(_Continuous):
    """``cauchy.logpdf(x, loc=0, scale=1)``."""

    name = "cauchy"

    def logpdf(self, x, loc=0.0, scale=1.0):
        z = _standard(x, loc, scale)
        return -tg.log1p(z * z) - tg.log(_t(scale)) - _LOG_PI

    def cdf(self, x, loc=0.0, scale=1.0):
        return 0.5 + tg.arctan(_standard(x, loc, scale)) / math.pi


def _check_simplex(x, alpha, where):
    """SciPy's checks of a Dirichlet's point, each a ``ValueError``: x on the simplex along its first axis (its sums
    1 within 1e-9, its entries in [0, 1]), and 0 only where alpha is 1 or more (the density is infinite there).
    On values only: a function that ``tg.compile`` traces has none to read, and is not checked."""
    if is_traced(x) or is_traced(alpha):
        return
    xs, a = np.asarray(data(x)), np.asarray(data(alpha))
    if xs.ndim == 0 or xs.shape[0] != a.shape[0]:
        raise ValueError(f"{where}: x must have {a.shape[0]} entries along its first axis (alpha's), got {xs.shape}")
    if (xs < 0).any() or (xs > 1).any():
        raise ValueError(f"{where}: each entry of x must lie in [0, 1] (x on the simplex)")
    if ((xs == 0) & (a.reshape((-1,) + (1,) * (xs.ndim - 1)) < 1)).any():
        raise ValueError(f"{where}: each entry of x must be greater than 0 where its alpha is less than 1")
    sums = xs.sum(axis=0)
    if (np.abs(sums - 1.0) > 1e-9).any():  # SciPy's tolerance
        raise ValueError(f"{where}: x must lie on the simplex (sum to 1 along its first axis), its sums are {sums}")


class _Dirichlet(_Continuous):
    """``dirichlet.logpdf(x, alpha)``, ``x`` of shape ``(k,)`` or ``(k, n)`` (quantiles along the first axis,
    as SciPy's)."""

    name = "dirichlet"

    def logpdf(self, x, alpha):
        return self._logpdf(x, alpha, "logpdf")

    def pdf(self, x, alpha):
        return tg.exp(self._logpdf(x, alpha, "pdf"))

    def _logpdf(self, x, alpha, method):
        x, alpha = _t(x), _t(alpha)
        _check_simplex(x, alpha, f"scipy.stats.dirichlet.{method}")
        a = alpha if x.ndim == 1 else tg.reshape(alpha, (-1, 1))
        log_norm = tg.sum(sp.gammaln(alpha)) - sp.gammaln(tg.sum(alpha))
        return tg.sum(sp.xlogy(a - 1.0, x), axis=0) - log_norm


class _Poisson(_Discrete):
    """``poisson.logpmf(k, mu, loc=0)``, differentiable in mu."""

    name = "poisson"

    def logpmf(self, k, mu, loc=0):
        k = np.asarray(k) - _integer_parameter(loc, "loc", "poisson", "logpmf")
        inside = (k >= 0) & _integral(k)  # not the gamma function's continuation between the integers
        safe = np.where(inside, k, 0)
        return _mass(inside, sp.xlogy(safe, mu) - sp.gammaln(safe + 1.0) - mu, k)

    def cdf(self, k, mu, loc=0):
        """P(K <= k), differentiable in mu."""
        loc = _integer_parameter(loc, "loc", "poisson", "cdf")
        return _poisson_cdf_op(mu, k=np.asarray(k, dtype=np.float64) - loc)


class _Bernoulli(_Discrete):
    """``bernoulli.logpmf(k, p, loc=0)``, differentiable in p."""

    name = "bernoulli"

    def logpmf(self, k, p, loc=0):
        k = np.asarray(k) - _integer_parameter(loc, "loc", "bernoulli", "logpmf")
        return _mass((k == 0) | (k == 1), sp.xlogy(k, p) + sp.xlog1py(1 - k, -_t(p)), k)


class _Binom(_Discrete):
    """``binom.logpmf(k, n, p, loc=0)``, differentiable in p."""

    name = "binom"

    def logpmf(self, k, n, p, loc=0):
        n = _integer_parameter(n, "n", "binom", "logpmf")
        k = np.asarray(k) - _integer_parameter(loc, "loc", "binom", "logpmf")
        valid = (n >= 0) & _integral(n)
        inside = (k >= 0) & (k <= n) & _integral(k) & valid
        safe = np.where(inside, k, 0)
        log_choose = sp.gammaln(n + 1.0) - sp.gammaln(safe + 1.0) - sp.gammaln(n - safe + 1.0)
        return _mass(inside, log_choose + sp.xlogy(safe, p) + sp.xlog1py(n - safe, -_t(p)), k, valid)


norm = _Norm()
multivariate_normal = _MultivariateNormal()
t = _StudentT()
beta = _Beta()
gamma = _Gamma()
chi2 = _Chi2()
expon = _Expon()
laplace = _Laplace()
logistic = _Logistic()
cauchy = _Cauchy()
dirichlet = _Dirichlet()
poisson = _Poisson()
bernoulli = _Bernoulli()
binom = _Binom()
_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "logpmf", "pmf", "entropy")
for _d in (norm, multivariate_normal, t, beta, gamma, chi2, expon, laplace, logistic, cauchy, dirichlet, poisson,
           bernoulli, binom):  # fmt: skip
    for _m in _METHODS:
        if hasattr(_d, _m):
            setattr(_d, _m, like_scipy(getattr(_d, _m)))  # SciPy's types on arrays, tensors on tensors
_DISTRIBUTIONS = {"t": t, "beta": beta, "gamma": gamma, "chi2": chi2}  # SciPy's names -> ours, for the CDFs' rule
