"""Derivatives of the regularised incomplete gamma and beta functions in their parameters, in NumPy.

SciPy computes ``gammainc(a, x)`` and ``betainc(a, b, x)`` but none of their derivatives in ``a`` or ``b``.
Here they are computed by carrying truncated Taylor series in the parameters ("jets") through the classical
expansions, so one code path gives every order (the rules of ``tapegrad.ops.special`` ask for the order they
need, first or second):

- P(a, x) for ``x < a + 1``: the series ``x^a e^-x / Gamma(a + 1) sum_k x^k / ((a + 1) ... (a + k))`` (each term
  decreasing in ``a``, so the series of every derivative has terms of one sign: no cancellation);
- Q(a, x) = 1 - P(a, x) for ``x >= a + 1``: Legendre's continued fraction ``x^a e^-x / Gamma(a) /
  (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...))``, evaluated backwards from a fixed depth (backward
  evaluation of a continued fraction is stable); a derivative of P there is minus that of Q, never the
  difference of two numbers close to 1;
- I_x(a, b) for ``x < (a + 1) / (a + b + 2)``: the continued fraction of the incomplete beta function
  (Abramowitz and Stegun 26.5.8), elsewhere ``1 - I_{1-x}(b, a)``, the same fraction with the roles swapped.

The loops run over the terms of the expansions, never over elements: every element of an array advances
together, the series until each element's terms are below rounding, the fractions to a depth that suffices
for the slowest element. ``benchmarks/incomplete_accuracy.py`` prints the worst error against mpmath.
"""

from __future__ import annotations

import math

import numpy as np

_EPS = np.finfo(np.float64).eps


def _special():
    import scipy.special  # noqa: PLC0415  (SciPy is an optional dependency: loaded when first needed)

    return scipy.special


class Jet:
    """A truncated Taylor series in two parameters: ``c[i][j]`` is the coefficient of ``da^i db^j`` (so the
    derivative is ``i! j! c[i][j]``), for ``i <= na``, ``j <= nb``. Only ``+``, ``-``, ``*`` and ``/`` touch the
    coefficients, so they may be arrays or tensors (a recorded rule computes with tensors)."""

    def __init__(self, c):
        self.c = c
        self.na, self.nb = len(c) - 1, len(c[0]) - 1

    @classmethod
    def constant(cls, value, na, nb):
        zero = value * 0.0
        return cls([[value if (i, j) == (0, 0) else zero for j in range(nb + 1)] for i in range(na + 1)])

    @classmethod
    def linear(cls, value, da, db, na, nb):
        """``value + da * (a - a0) + db * (b - b0)``, ``da`` and ``db`` numbers."""
        jet = cls.constant(value, na, nb)
        if na >= 1:
            jet.c[1][0] = jet.c[1][0] + da
        if nb >= 1:
            jet.c[0][1] = jet.c[0][1] + db
        return jet

    def __add__(self, other):
        if isinstance(other, Jet):
            return Jet([[u + v for u, v in zip(ru, rv)] for ru, rv in zip(self.c, other.c)])
        c = [list(row) for row in self.c]
        c[0][0] = c[0][0] + other
        return Jet(c)

    def __neg__(self):
        return Jet([[-u for u in row] for row in self.c])

    def __sub__(self, other):
        return self + (-other)

    def scale(self, k):
        return Jet([[u * k for u in row] for row in self.c])

    def __mul__(self, other):
        if not isinstance(other, Jet):
            return self.scale(other)
        u, v = self.c, other.c
        out = []
        for i in range(self.na + 1):
            row = []
            for j in range(self.nb + 1):
                total = u[0][0] * v[i][j]
                for p in range(i + 1):
                    for q in range(j + 1):
                        if (p, q) != (0, 0):
                            total = total + u[p][q] * v[i - p][j - q]
                row.append(total)
            out.append(row)
        return Jet(out)

    def __truediv__(self, other):
        u, v = self.c, other.c
        w = [[None] * (self.nb + 1) for _ in range(self.na + 1)]
        inv = 1.0 / v[0][0]
        for i in range(self.na + 1):
            for j in range(self.nb + 1):
                total = u[i][j]
                for p in range(i + 1):
                    for q in range(j + 1):
                        if (p, q) != (0, 0):
                            total = total - v[p][q] * w[i - p][j - q]
                w[i][j] = total * inv
        return Jet(w)

    def exp(self, exp):
        """``exp`` of the series (``exp`` the function for its constant term): e^c0 sum_m (s - c0)^m / m!."""
        head = exp(self.c[0][0])
        rest = Jet([[u if (i, j) != (0, 0) else u * 0.0 for j, u in enumerate(row)] for i, row in enumerate(self.c)])
        total, power = Jet.constant(head * 0.0 + 1.0, self.na, self.nb), None
        for m in range(1, self.na + self.nb + 1):
            power = rest if power is None else power * rest
            total = total + power.scale(1.0 / math.factorial(m))
        return total.scale(head)

    def derivative(self, i, j):
        return self.c[i][j] * float(math.factorial(i) * math.factorial(j))


def log_gamma_jet(value, psi, z, n, sign=1.0):
    """The series in ``a`` of ``sign * gammaln(a + shift)`` without its constant term (``value`` holds it):
    coefficients ``sign * psi(k - 1, z) / k!``, ``psi(m, z)`` the polygamma function of order m."""
    return [value] + [psi(k - 1, z) * (sign / math.factorial(k)) for k in range(1, n + 1)]


def _psi(k, z):
    special = _special()
    return special.digamma(z) if k == 0 else special.polygamma(k, z)


def _series_p(a, x, n):
    """The jet in ``a`` (order n) of P(a, x) by its power series (x < a + 1)."""
    special = _special()
    lx = np.log(x)
    head = [a * lx - x - special.gammaln(a + 1.0)]
    coeffs = log_gamma_jet(head[0], _psi, a + 1.0, n, sign=-1.0)
    if n >= 1:
        coeffs[1] = coeffs[1] + lx
    prefactor = Jet([[c] for c in coeffs]).exp(np.exp)
    term = Jet.constant(np.ones_like(a), n, 0)
    total = term
    for k in range(1, 100000):
        inv = Jet([[(-1.0) ** m / (a + k) ** (m + 1)] for m in range(n + 1)])
        term = term * inv.scale(x)
        total = total + term
        done = all(np.all(np.abs(term.c[m][0]) <= _EPS * 0.25 * np.abs(total.c[m][0])) for m in range(n + 1))
        if done and np.all(x < a + k):
            break
    return prefactor * total


def _fraction_depth(*params):
    """How deep a backward-evaluated fraction starts: its convergents settle in a few times the square root of
    the largest parameter (checked against mpmath over the grid of the accuracy benchmark)."""
    largest = max((float(np.max(p)) for p in params if np.size(p)), default=1.0)
    return int(60 + 8 * math.sqrt(max(largest, 1.0)))


def _fraction_q(a, x, n):
    """The jet in ``a`` (order n) of Q(a, x) by Legendre's continued fraction (x >= a + 1)."""
    special = _special()
    depth = _fraction_depth(a, np.sqrt(x))
    tail = Jet.linear(x + 2 * depth + 1 - a, -1.0, 0.0, n, 0)
    for k in range(depth, 0, -1):
        numerator = Jet.linear(k * (a - k), float(k), 0.0, n, 0)
        tail = Jet.linear(x + 2 * (k - 1) + 1 - a, -1.0, 0.0, n, 0) + numerator / tail
    lx = np.log(x)
    coeffs = log_gamma_jet(a * lx - x - special.gammaln(a), _psi, a, n, sign=-1.0)
    if n >= 1:
        coeffs[1] = coeffs[1] + lx
    prefactor = Jet([[c] for c in coeffs]).exp(np.exp)
    return prefactor / tail


def gammainc_da(a, x, n):
    """d^n/da^n P(a, x) (``n >= 1``), P SciPy's ``gammainc``; ``-`` that is the derivative of ``gammaincc``.

    >>> import numpy as np
    >>> from tapegrad.ops._incomplete import gammainc_da
    >>> float(gammainc_da(np.array(1.0), np.array(1.0), 1)[()])  # d/da P(a, 1) at a = 1
    -0.4317...
    """
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (x >= 0) & np.isfinite(a)
    out[valid & (x == 0)] = 0.0
    out[valid & np.isposinf(x)] = 0.0
    inner = valid & (x > 0) & np.isfinite(x)
    lower = inner & (x < a + 1.0)
    upper = inner & ~lower
    if np.any(lower):
        out[lower] = _series_p(a[lower], x[lower], n).derivative(n, 0)
    if np.any(upper):
        out[upper] = -_fraction_q(a[upper], x[upper], n).derivative(n, 0)
    return out


def _beta_prefactor(a, b, x, na, nb):
    """The jet of ``x^a (1 - x)^b / (a B(a, b))`` in (a, b)."""
    special = _special()
    lx, l1x = np.log(x), np.log1p(-x)
    c = [[None] * (nb + 1) for _ in range(na + 1)]
    c[0][0] = a * lx + b * l1x - np.log(a) - special.betaln(a, b)
    for i in range(na + 1):
        for j in range(nb + 1):
            if (i, j) == (0, 0):
                continue
            k = i + j
            value = _psi(k - 1, a + b) / (math.factorial(i) * math.factorial(j))
            if j == 0:
                log_a = (-1.0) ** (i - 1) * math.factorial(i - 1) / a**i
                value = value - (_psi(i - 1, a) + log_a) / math.factorial(i) + (lx if i == 1 else 0.0)
            if i == 0:
                value = value - _psi(j - 1, b) / math.factorial(j) + (l1x if j == 1 else 0.0)
            c[i][j] = value
    return Jet(c).exp(np.exp)


def _beta_fraction(a, b, x, na, nb):
    """The jet in (a, b) of I_x(a, b) by its continued fraction (x < (a + 1) / (a + b + 2))."""
    depth = _fraction_depth(a, b)

    def lin(value, da, db):
        return Jet.linear(value, da, db, na, nb)

    def coefficient(k):
        m = k // 2
        if k % 2:  # d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
            top = lin(a + m, 1.0, 0.0) * lin(a + b + m, 1.0, 1.0)
            return -(top / (lin(a + 2 * m, 1.0, 0.0) * lin(a + 2 * m + 1, 1.0, 0.0))).scale(x)
        top = lin(m * (b - m), 0.0, float(m))  # d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m))
        return (top / (lin(a + 2 * m - 1, 1.0, 0.0) * lin(a + 2 * m, 1.0, 0.0))).scale(x)

    one = Jet.constant(np.ones_like(a), na, nb)
    tail = one
    for k in range(depth, 0, -1):
        tail = one + coefficient(k) / tail
    return _beta_prefactor(a, b, x, na, nb) / tail


def betainc_dab(a, b, x, na, nb):
    """d^(na + nb) / da^na db^nb I_x(a, b) (``na + nb >= 1``), I SciPy's ``betainc``.

    >>> import numpy as np
    >>> from tapegrad.ops._incomplete import betainc_dab
    >>> float(betainc_dab(np.array(1.0), np.array(1.0), np.array(0.5), 1, 0)[()])  # d/da x^a at a = 1
    -0.3465...
    """
    a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1) & np.isfinite(a) & np.isfinite(b)
    out[valid & ((x == 0) | (x == 1))] = 0.0
    inner = valid & (x > 0) & (x < 1)
    direct = inner & (x < (a + 1.0) / (a + b + 2.0))
    swapped = inner & ~direct
    if np.any(direct):
        out[direct] = _beta_fraction(a[direct], b[direct], x[direct], na, nb).derivative(na, nb)
    if np.any(swapped):
        # I_x(a, b) = 1 - I_{1-x}(b, a): the roles of a and b swap in the jet
        jet = _beta_fraction(b[swapped], a[swapped], 1.0 - x[swapped], nb, na)
        out[swapped] = -jet.derivative(nb, na)
    return out
