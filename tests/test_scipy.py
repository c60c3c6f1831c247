"""tapegrad.scipy: SciPy's ufuncs on tensors, SciPy's functions that would make constants, and SciPy's names.

The special functions' derivatives are the op table's (tests/op_rows_special.py); here: what SciPy's own
functions do on tensors, the SciPy-signature wrappers, and the optional import.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg

scipy_special = pytest.importorskip("scipy.special", reason="tapegrad.scipy needs SciPy (the scipy extra)")
scipy_stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("tapegrad.scipy.special")

X = np.array([0.3, -0.7, 1.2])


# -- SciPy's ufuncs on tensors dispatch to tapegrad's rules -----------------------------------------------
@pytest.mark.parametrize(
    "ufunc,args,domain",
    [
        ("erf", (), "real"), ("erfc", (), "real"), ("expit", (), "real"), ("gammaln", (), "positive"),
        ("digamma", (), "positive"), ("psi", (), "positive"), ("ndtr", (), "real"), ("log_ndtr", (), "real"),
        ("i0", (), "real"), ("i1", (), "real"), ("iv", (1.5,), "positive"), ("entr", (), "positive"),
        ("erfinv", (), "unit"), ("logit", (), "prob"), ("ndtri", (), "prob"), ("gamma", (), "positive"),
        ("j0", (), "real"), ("jv", (1.5,), "positive"), ("jn", (2,), "real"), ("y1", (), "positive"),
        ("yn", (2,), "positive"), ("ive", (0.5,), "positive"), ("rgamma", (), "positive"),
        ("gammainc", (1.5,), "positive"), ("gammaincc", (1.5,), "positive"), ("betainc", (2.0, 3.0), "prob"),
    ],
)  # fmt: skip
def test_scipy_ufunc_on_a_tensor_is_recorded(ufunc, args, domain):
    x = {"real": X, "positive": np.abs(X) + 0.5, "unit": X / 2, "prob": np.abs(X) / 2 + 0.1}[domain]
    f = getattr(scipy_special, ufunc)
    t = tg.Tensor(x, requires_grad=True)
    with tg.record():
        y = f(*args, t)
    assert isinstance(y, tg.Tensor) and y.requires_grad
    np.testing.assert_allclose(y.data, f(*args, x), rtol=1e-14)
    assert tg.gradcheck(lambda v: f(*args, v), x)


def test_scipy_binary_ufuncs_broadcast_and_take_gradients_in_both():
    for name in ("xlogy", "xlog1py", "beta", "betaln", "rel_entr"):
        f = getattr(scipy_special, name)
        assert tg.gradcheck(f, np.array([[0.5], [1.5]]), np.array([0.7, 1.1, 2.0])), name


def test_a_scipy_ufunc_without_a_rule_is_refused_by_its_scipy_name():
    t = tg.Tensor(X, requires_grad=True)
    with tg.record(), pytest.raises(TypeError, match=r"^scipy\.special\.spence on a tensor of shape \(3,\)"):
        scipy_special.spence(t)
    with tg.record(), pytest.raises(TypeError, match=r"scipy\.special\.xlogy\.accumulate"):
        scipy_special.xlogy.accumulate(t)
    with tg.record():  # and the user can go on
        assert scipy_special.erf(t).requires_grad


# -- SciPy's other functions would make a constant: they raise, naming themselves ----------------------
def test_scipy_functions_that_convert_a_recorded_tensor_raise_naming_the_function():
    cases = [
        ("scipy.stats.norm.logpdf", lambda x: scipy_stats.norm.logpdf(x)),
        ("scipy.stats.norm.logpdf", lambda x: scipy_stats.norm(loc=0.0).logpdf(x)),  # a frozen distribution
        ("scipy.stats.gamma.cdf", lambda x: scipy_stats.gamma.cdf(x, 2.0)),
        ("scipy.special.logsumexp", lambda x: scipy_special.logsumexp(x)),
        ("scipy.special.polygamma", lambda x: scipy_special.polygamma(1, x)),
    ]
    for name, f in cases:
        with pytest.raises(TypeError, match=name.replace(".", r"\.") + " converted a tensor") as err:
            tg.grad(lambda x, f=f: f(x).sum())(X)
        assert "tapegrad." + name in str(err.value)  # where the differentiable one is
    assert tg.grad(lambda x: special.logsumexp(x))(X) == pytest.approx(np.exp(X) / np.exp(X).sum())


def test_scipy_on_plain_arrays_and_outside_recording_is_untouched():
    t = tg.Tensor(X)  # not being recorded: SciPy reads its value, as NumPy does
    np.testing.assert_allclose(scipy_stats.norm.logpdf(t), scipy_stats.norm.logpdf(X))
    np.testing.assert_allclose(scipy_special.logsumexp(X), special.logsumexp(tg.Tensor(X)).data)


def test_grad_of_a_result_that_escaped_the_tape_raises_naming_the_escape():
    def f(x):
        return np.sum(np.asarray(x) ** 2) * tg.Tensor(1.0)  # np.asarray: off the tape, at this line

    for _ in range(2):  # raised every time, not once per line as a warning is
        with pytest.raises(tg.TapeError, match=r"^np\.asarray\(t\).* inside a function given to a transform"):
            tg.grad(f)(X)
    np.testing.assert_array_equal(tg.grad(lambda x: tg.Tensor(3.0))(X), np.zeros(3))  # a constant, not an escape
    np.testing.assert_allclose(tg.grad(lambda x: (x**2).sum())(X), 2 * X)  # and the user goes on


# -- SciPy's signatures -------------------------------------------------------------------------------
def test_logsumexp_with_scipy_signature():
    a, b = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]]), np.array([1.0, 2.0, 0.5])
    for kwargs in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"b": b, "axis": -1}):
        got = special.logsumexp(tg.Tensor(a), **{k: tg.Tensor(v) if k == "b" else v for k, v in kwargs.items()})
        np.testing.assert_allclose(got.data, scipy_special.logsumexp(a, **kwargs), rtol=1e-13)
        assert tg.gradcheck(lambda x, kw=kwargs: special.logsumexp(x, **kw), a)
    assert tg.gradcheck(lambda x, w: special.logsumexp(x, axis=1, b=w), a, b)  # b gets its gradient too
    out, sgn = special.logsumexp(tg.Tensor(a), b=np.array([1.0, -2.0, 0.5]), axis=1, return_sign=True)
    want, want_sign = scipy_special.logsumexp(a, b=np.array([1.0, -2.0, 0.5]), axis=1, return_sign=True)
    np.testing.assert_allclose(out.data, want, rtol=1e-13)
    np.testing.assert_array_equal(sgn.data, want_sign)


def test_logsumexp_of_a_negative_sum_is_nan_and_of_an_empty_one_minus_inf_as_scipys():
    a, b = np.array([[1.0, 2.0], [0.5, 0.1]]), np.array([[1.0, -1.0], [1.0, 1.0]])
    got = special.logsumexp(a, b=b, axis=1)
    assert np.isnan(got[0]) and np.isfinite(got[1])  # not log|e - e^2|
    np.testing.assert_allclose(got, scipy_special.logsumexp(a, b=b, axis=1), rtol=1e-13)
    out, sgn = special.logsumexp(a, b=b, axis=1, return_sign=True)  # with its sign, the log of |sum|
    np.testing.assert_allclose(out, np.log(np.abs((b * np.exp(a)).sum(axis=1))), rtol=1e-13)
    np.testing.assert_array_equal(sgn, [-1.0, 1.0])
    g = tg.grad(lambda x: special.logsumexp(x, b=b, axis=1)[1])(a)  # the NaN row's select stays out of the other
    np.testing.assert_allclose(g, [[0.0, 0.0], scipy_special.softmax(a[1])], rtol=1e-13)
    for x, kwargs in ((np.zeros(0), {}), (np.zeros((2, 0)), {"axis": 1}), (np.zeros(0), {"b": np.zeros(0)})):
        np.testing.assert_array_equal(special.logsumexp(x, **kwargs), scipy_special.logsumexp(x, **kwargs))
    np.testing.assert_array_equal(tg.logsumexp(tg.Tensor(np.zeros((2, 0))), axis=1).data, [-np.inf, -np.inf])
    np.testing.assert_array_equal(tg.grad(lambda x: tg.logsumexp(x))(np.zeros(0)), np.zeros(0))


def test_softmax_defaults_to_every_axis_as_scipy():
    a = np.array([[0.5, -1.0], [0.1, 0.2]])
    np.testing.assert_allclose(special.softmax(tg.Tensor(a)).data, scipy_special.softmax(a), rtol=1e-14)
    np.testing.assert_allclose(special.log_softmax(tg.Tensor(a), axis=0).data, scipy_special.log_softmax(a, axis=0))
    assert tg.gradcheck(lambda x: special.softmax(x) * np.arange(4.0).reshape(2, 2), a)


def test_orders_without_gradient_refuse_a_tensor_that_needs_one():
    n = tg.Tensor(1.0, requires_grad=True)
    with (
        tg.record(),
        pytest.raises(TypeError, match=r"scipy\.special\.polygamma: tapegrad has no gradient in the order n"),
    ):
        special.polygamma(n, tg.Tensor([1.0]))
    with tg.record(), pytest.raises(TypeError, match=r"scipy\.special\.iv: tapegrad has no gradient in the order v"):
        special.iv(n, tg.Tensor([1.0]))
    with pytest.raises(ValueError, match="non-negative integer"):
        special.polygamma(1.5, tg.Tensor([1.0]))
    np.testing.assert_array_equal(special.gammasgn(tg.Tensor([-0.5, 1.5])).data, [-1.0, 1.0])
    assert not special.gammasgn(tg.Tensor([-0.5], requires_grad=True)).requires_grad  # piecewise constant
    a = np.array([2.0, 3.5])
    np.testing.assert_allclose(special.multigammaln(tg.Tensor(a), 3).data, scipy_special.multigammaln(a, 3))
    assert tg.gradcheck(lambda a: special.multigammaln(a, 3), a)
    # the third derivative of gammaln, by differentiating twice more
    d3 = tg.grad(tg.grad(tg.grad(lambda x: special.gammaln(x))))(2.0)
    np.testing.assert_allclose(d3, scipy_special.polygamma(2, 2.0), rtol=1e-10)


def test_special_functions_refuse_other_array_libraries_by_name():
    from tapegrad.ops.special import gammaln

    with pytest.raises(NotImplementedError, match="gammaln: the tapegrad backend cannot run it"):
        gammaln.op.forward(np.ones(2), xp=tg.ops.tensor_rules)


def test_without_scipy_tapegrad_imports_and_tapegrad_scipy_names_the_extra():
    code = (
        "import sys; sys.modules['scipy'] = None\n"  # as if SciPy were not installed
        "import tapegrad\n"
        "try:\n    import tapegrad.scipy\nexcept ImportError as err:\n    print(err)\n"
        "try:\n    tapegrad.ops.special.gammaln(tapegrad.Tensor([1.0]))\nexcept ImportError as err:\n    print(err)\n"
        "print(tapegrad.grad(lambda x: tapegrad.erf(x).sum())(tapegrad.Tensor([0.0])))\n"  # tapegrad's own erf
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "tapegrad.scipy needs SciPy" in out and "tapegrad[scipy]" in out
    assert "gammaln needs SciPy: install tapegrad with its extra, pip install 'tapegrad[scipy]'" in out
    assert "[1.12837917]" in out


# -- tapegrad.scipy.stats ------------------------------------------------------------------------------
stats = pytest.importorskip("tapegrad.scipy.stats")
P, U = np.array([0.4, 1.3, 2.2]), np.array([0.15, 0.5, 0.8])  # points on (0, inf) and (0, 1)

# (distribution, method, point, parameters): each parameter is a float array, every one differentiated
DENSITIES = [
    ("norm", "logpdf", X, (0.3, 1.7)), ("norm", "pdf", X, (0.3, 1.7)), ("norm", "cdf", X, (0.3, 1.7)),
    ("norm", "logcdf", X, (0.3, 1.7)), ("norm", "sf", X, (0.3, 1.7)), ("norm", "logsf", X, (0.3, 1.7)),
    ("t", "logpdf", X, (3.5, 0.2, 1.4)), ("t", "pdf", X, (3.5, 0.2, 1.4)),
    ("beta", "logpdf", U, (2.5, 1.5)), ("beta", "pdf", U, (2.5, 1.5)),
    ("gamma", "logpdf", P, (2.5, 0.1, 1.5)), ("chi2", "logpdf", P, (3.0,)),
    ("expon", "logpdf", P, (0.1, 1.5)), ("expon", "cdf", P, (0.1, 1.5)), ("expon", "logcdf", P, (0.1, 1.5)),
    ("laplace", "logpdf", X, (0.1, 1.5)), ("laplace", "cdf", X, (0.1, 1.5)),
    ("logistic", "logpdf", X, (0.1, 1.5)), ("logistic", "cdf", X, (0.1, 1.5)), ("logistic", "logcdf", X, (0.1, 1.5)),
    ("cauchy", "logpdf", X, (0.1, 1.5)), ("cauchy", "cdf", X, (0.1, 1.5)),
]  # fmt: skip


@pytest.mark.parametrize("dist,method,x,params", DENSITIES, ids=[f"{d}.{m}" for d, m, _, _ in DENSITIES])
def test_stats_densities_match_scipy_and_finite_differences_in_the_point_and_every_parameter(dist, method, x, params):
    ours, theirs = getattr(getattr(stats, dist), method), getattr(getattr(scipy_stats, dist), method)
    params = [np.full(x.shape, p) for p in params]  # one value per point, so each gets its own derivative
    np.testing.assert_allclose(ours(x, *params), theirs(x, *params), rtol=1e-12, atol=1e-300)
    assert tg.gradcheck(lambda *a: ours(*a), x, *params)
    assert tg.gradgradcheck(lambda *a: ours(*a), x, *params)


def test_stats_log_densities_are_minus_inf_outside_the_support_with_finite_gradients():
    for dist, x, params in (("gamma", -0.5, (2.0,)), ("beta", 1.5, (2.0, 2.0)), ("expon", -1.0, ())):
        got = getattr(stats, dist).logpdf(np.array([x, 0.5]), *params)
        np.testing.assert_array_equal(got, getattr(scipy_stats, dist).logpdf(np.array([x, 0.5]), *params))
        g = tg.grad(lambda v, d=dist, p=params: getattr(stats, d).logpdf(v, *p)[1])(np.array([x, 0.5]))
        assert np.isfinite(g).all() and g[0] == 0


# (distribution, point, parameters, logpdf): the edge of the support, where SciPy gives the limit of z^(a-1)
# (finite where the exponent is 0, -inf above, inf below), not the -inf of the outside
EDGES = [
    ("gamma", 0.0, (1.0,), 0.0), ("gamma", 0.0, (0.5,), np.inf), ("gamma", 0.0, (2.0,), -np.inf),
    ("gamma", 1.5, (1.0, 1.5, 2.0), -np.log(2.0)), ("chi2", 0.0, (2.0,), -np.log(2.0)), ("chi2", 0.0, (1.0,), np.inf),
    ("chi2", 0.0, (3.0,), -np.inf), ("beta", 0.0, (1.0, 3.0), np.log(3.0)), ("beta", 1.0, (3.0, 1.0), np.log(3.0)),
    ("beta", 0.0, (0.5, 2.0), np.inf), ("beta", 1.0, (2.0, 0.5), np.inf), ("beta", 0.0, (2.0, 2.0), -np.inf),
    ("beta", 1.0, (1.0, 1.0), 0.0), ("beta", 1.5, (1.0, 2.0, 1.5, 2.0), 0.0),
]  # fmt: skip


@pytest.mark.parametrize("dist,x,params,want", EDGES, ids=[f"{d}{p}@{x}" for d, x, p, _ in EDGES])
def test_stats_log_densities_at_the_edge_of_the_support_are_scipys_limit(dist, x, params, want):
    ours, theirs = getattr(stats, dist), getattr(scipy_stats, dist)
    np.testing.assert_allclose(ours.logpdf(x, *params), want, rtol=1e-14)
    np.testing.assert_allclose(ours.logpdf(x, *params), theirs.logpdf(x, *params), rtol=1e-14)
    np.testing.assert_allclose(ours.pdf(x, *params), theirs.pdf(x, *params), rtol=1e-14)
    grads = tg.grad(lambda *a: ours.logpdf(*a), argnums=tuple(range(len(params) + 1)))(x, *params)
    assert not np.isnan(grads).any()  # a select: the log-factor's infinite derivatives stay out


def test_t_logpdf_at_a_large_df_keeps_its_digits_and_is_the_normal_at_an_infinite_one():
    np.testing.assert_allclose(stats.t.logpdf(X, np.inf, 0.2, 1.4), scipy_stats.norm.logpdf(X, 0.2, 1.4), rtol=1e-15)
    np.testing.assert_allclose(stats.t.logpdf(X, np.inf), scipy_stats.t.logpdf(X, np.inf), rtol=1e-15)
    for df in (30.0, 1e3, 1e5):  # both sides of the series' threshold
        np.testing.assert_allclose(stats.t.logpdf(X, df), scipy_stats.t.logpdf(X, df), rtol=1e-11)
    for df in (1e8, 1e10, 1e14):  # the expansion in 1/df to its first order, exact to ~1/df^2
        u = X * X
        want = -0.5 * np.log(2 * np.pi) - u / 2 + (u * u / 4 - u / 2 - 0.25) / df
        np.testing.assert_allclose(stats.t.logpdf(X, df), want, rtol=1e-15)
    dx, ddf = tg.grad(lambda x, d: stats.t.logpdf(x, d).sum(), argnums=(0, 1))(X, np.full(3, np.inf))
    np.testing.assert_allclose(dx, -X)  # the normal's
    np.testing.assert_array_equal(ddf, 0.0)
    df = np.array([3.5, 25.0, 1e3])  # the log-gammas, the series
    assert tg.gradcheck(lambda *a: stats.t.logpdf(*a), X, df, np.full(3, 0.2), np.full(3, 1.4))
    assert tg.gradgradcheck(lambda *a: stats.t.logpdf(*a), X, df, np.full(3, 0.2), np.full(3, 1.4))


def test_multivariate_normal_matches_scipy_and_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov, mean, x = a @ a.T + 3 * np.eye(3), rng.standard_normal(3), rng.standard_normal((4, 3))
    want = scipy_stats.multivariate_normal.logpdf(x, mean, cov)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, cov), want, rtol=1e-12)
    np.testing.assert_allclose(stats.multivariate_normal.pdf(x[0], mean, cov), np.exp(want[0]), rtol=1e-12)
    assert tg.gradcheck(lambda x, m, c: stats.multivariate_normal.logpdf(x, m, (c + c.T) / 2), x, mean, cov)
    np.testing.assert_allclose(
        stats.multivariate_normal.entropy(mean, cov), scipy_stats.multivariate_normal.entropy(mean, cov)
    )
    assert tg.gradcheck(lambda c: stats.multivariate_normal.entropy(None, (c + c.T) / 2), cov)


# (x, mean, cov): SciPy's shapes, the dimension from mean (cov with no mean), a vector x n points of a 1-d normal
_C = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
MVN_SHAPES = [
    (0.3, 0.5, 2.0), (np.array([0.3, 0.1, 2.0]), 0.5, 2.0), (np.array([0.3, 0.1, 2.0]), None, 2.0),
    (np.array([0.3, 0.1, 2.0]), [0.5], [[2.0]]), (np.array([[0.3], [0.1]]), 0.5, np.array([2.0])),
    (np.array([0.3, 0.1, 2.0]), np.zeros(3), _C), (np.array([[0.3, 0.1, 2.0]]), np.zeros(3), _C),
    (np.arange(6.0).reshape(2, 1, 3) / 4, np.ones(3), 2.0), (np.arange(6.0).reshape(2, 3) / 4, None, _C),
    (np.arange(6.0).reshape(2, 3) / 4, np.ones(3), np.array([1.0, 2.0, 3.0])),
]  # fmt: skip


@pytest.mark.parametrize(
    "x,mean,cov", MVN_SHAPES, ids=[f"{np.shape(x)},{np.shape(m)},{np.shape(c)}" for x, m, c in MVN_SHAPES]
)
def test_multivariate_normal_follows_scipys_shapes(x, mean, cov):
    for method in ("logpdf", "pdf"):
        got = getattr(stats.multivariate_normal, method)(x, mean, cov)
        want = getattr(scipy_stats.multivariate_normal, method)(x, mean, cov)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    if mean is not None and np.ndim(x) == 1 and np.size(mean) == 1:  # n points of a 1-d normal: n gradients
        assert tg.gradcheck(lambda *a: stats.multivariate_normal.logpdf(*a), x, np.asarray(mean), np.asarray(cov))


def test_multivariate_normal_refuses_allow_singular_and_names_itself_at_a_singular_cov():
    x, mean, singular = np.zeros((2, 2)), np.zeros(2), np.ones((2, 2))
    for method in ("logpdf", "pdf"):
        with pytest.raises(NotImplementedError, match=f"multivariate_normal.{method}: allow_singular=True"):
            getattr(stats.multivariate_normal, method)(x, mean, np.eye(2), allow_singular=True)
    with pytest.raises(np.linalg.LinAlgError, match="multivariate_normal.logpdf: cov is not positive definite"):
        stats.multivariate_normal.logpdf(x, mean, singular)
    with pytest.raises(ValueError, match="multivariate_normal.logpdf: x has 3 components"):
        stats.multivariate_normal.logpdf(np.zeros(3), mean, np.eye(2))


def test_dirichlet_matches_scipy_along_the_first_axis():
    alpha, x = np.array([1.5, 2.0, 3.0]), np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
    np.testing.assert_allclose(stats.dirichlet.logpdf(x, alpha), scipy_stats.dirichlet.logpdf(x, alpha))
    np.testing.assert_allclose(stats.dirichlet.pdf(x[:, 0], alpha), scipy_stats.dirichlet.pdf(x[:, 0], alpha))

    def on_simplex(y, a):  # the last coordinate 1 less the others: a finite difference of x would leave the simplex
        return stats.dirichlet.logpdf(tg.concatenate([y, 1.0 - tg.sum(y, axis=0, keepdims=True)]), a)

    assert tg.gradcheck(on_simplex, x[:-1], alpha)


def test_dirichlet_refuses_a_point_off_the_simplex_as_scipy_but_not_while_traced():
    alpha = np.array([0.5, 2.0, 3.0])
    bad = [
        np.array([0.2, 0.2, 0.2]),
        np.array([-0.1, 0.6, 0.5]),
        np.array([1.2, -0.1, -0.1]),
        np.array([0.0, 0.5, 0.5]),
    ]
    for x in bad:
        with pytest.raises(ValueError):
            scipy_stats.dirichlet.logpdf(x, alpha)
        for method in ("logpdf", "pdf"):
            with pytest.raises(ValueError, match=f"dirichlet.{method}: "):
                getattr(stats.dirichlet, method)(x, alpha)
    with pytest.raises(ValueError, match="sums are"):
        stats.dirichlet.logpdf(np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.3]]), alpha)  # the second point's
    x = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(tg.compile(stats.dirichlet.logpdf)(x, alpha), scipy_stats.dirichlet.logpdf(x, alpha))
    tg.compile(stats.dirichlet.logpdf)(np.array([0.2, 0.2, 0.2]), alpha)  # a traced x has no values to check


def test_discrete_distributions_match_scipy_and_are_differentiable_in_their_continuous_parameter():
    k = np.array([0, 1, 3, 5])
    cases = [("poisson", (2.5,), k), ("bernoulli", (0.3,), np.array([0, 1, 1])), ("binom", (5, 0.35), k)]
    for dist, params, k in cases:
        ours, theirs = getattr(stats, dist), getattr(scipy_stats, dist)
        np.testing.assert_allclose(ours.logpmf(k, *params), theirs.logpmf(k, *params), rtol=1e-12)
        np.testing.assert_allclose(ours.pmf(k, *params), theirs.pmf(k, *params), rtol=1e-12)
        *fixed, p = params
        assert tg.gradcheck(lambda q, d=ours, f=tuple(fixed), k=k: d.logpmf(k, *f, q), np.full(k.shape, float(p)))
    np.testing.assert_array_equal(stats.poisson.logpmf(np.array([-1]), 2.0), [-np.inf])


def test_discrete_distributions_are_zero_off_the_integers_and_nan_at_an_invalid_n_as_scipy():
    # between the integers a pmf is 0 (not the gamma function's continuation), after loc's shift
    k = np.array([-1.0, 0.0, 1.5, 2.0, 2.5, 6.0, np.nan])
    cases = [
        ("poisson", (2.5,)), ("poisson", (2.5, 0.5)), ("bernoulli", (0.3,)), ("bernoulli", (0.3, 0.5)),
        ("binom", (5, 0.35)), ("binom", (5, 0.35, 0.5)), ("binom", (5.5, 0.35)),
    ]  # fmt: skip
    for dist, params in cases:
        ours, theirs = getattr(stats, dist), getattr(scipy_stats, dist)
        np.testing.assert_allclose(ours.logpmf(k, *params), theirs.logpmf(k, *params), rtol=1e-12)
        np.testing.assert_allclose(ours.pmf(k, *params), theirs.pmf(k, *params), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(stats.poisson.pmf(np.arange(0.0, 60.0, 0.5), 2.0).sum(), 1.0, rtol=1e-12)
    g = tg.grad(lambda mu: stats.poisson.pmf(np.array([1.5, 2.0]), mu).sum())(np.full(2, 2.5))
    np.testing.assert_allclose(g, [0.0, scipy_stats.poisson.pmf(1, 2.5) - scipy_stats.poisson.pmf(2, 2.5)])


# -- linalg, signal, misc, integrate ------------------------------------------------------------------
scipy_linalg = pytest.importorskip("scipy.linalg")
scipy_signal = pytest.importorskip("scipy.signal")
tsl = pytest.importorskip("tapegrad.scipy.linalg")
tss = pytest.importorskip("tapegrad.scipy.signal")
integrate = pytest.importorskip("tapegrad.scipy.integrate")
RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 3))
SPD = A @ A.T + 3 * np.eye(3)


def test_linalg_matches_scipy_and_finite_differences():
    b = RNG.standard_normal((3, 2))
    for lower in (False, True):
        c = tsl.cho_factor(SPD, lower=lower)
        np.testing.assert_allclose(
            tsl.cho_solve(c, b), scipy_linalg.cho_solve(scipy_linalg.cho_factor(SPD, lower=lower), b)
        )
        assert tg.gradcheck(lambda a, b, lo=lower: tsl.cho_solve(tsl.cho_factor((a + a.T) / 2, lower=lo), b), SPD, b)
    L = np.tril(A) + 3 * np.eye(3)
    np.testing.assert_allclose(tsl.solve_triangular(L, b, lower=True), scipy_linalg.solve_triangular(L, b, lower=True))
    np.testing.assert_allclose(tsl.expm(A * 0.3), scipy_linalg.expm(A * 0.3), rtol=1e-12)
    np.testing.assert_allclose(tsl.sqrtm(SPD), scipy_linalg.sqrtm(SPD), rtol=1e-10)
    assert tg.gradcheck(tsl.sqrtm, SPD + 0.3 * A)  # a general (non-symmetric) matrix with a real root
    with pytest.raises(NotImplementedError, match="sqrtm: tapegrad has its first derivative only"):
        tg.hessian(lambda a: tsl.sqrtm(a).sum())(SPD)
    with pytest.raises(ValueError, match="sqrtm: this matrix has no real square root"):
        tsl.sqrtm(-np.eye(2))


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("shapes", [((5,), (3,)), ((3,), (5,)), ((4, 3), (2, 2)), ((2, 3), (3, 4)), ((2, 5), (3, 4))])
def test_signal_convolve_matches_scipy_in_every_mode(mode, shapes):
    a, v = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    if mode == "valid" and shapes == ((2, 5), (3, 4)):  # neither is at least as large as the other
        with pytest.raises(ValueError, match="valid"):
            tss.convolve(a, v, mode=mode)
        return
    np.testing.assert_allclose(tss.convolve(a, v, mode=mode), scipy_signal.convolve(a, v, mode=mode), atol=1e-14)
    assert tg.gradcheck(lambda a, v: tss.convolve(a, v, mode=mode), a, v)


def test_misc_logsumexp_is_specials():
    from tapegrad.scipy import misc

    assert misc.logsumexp is special.logsumexp


def _field(y, t, W, b):
    return tg.tanh(W @ y + b) * (1.0 + 0.1 * t)


def test_odeint_gradients_in_y0_times_and_parameters_match_finite_differences():
    W, b = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal(2) * 0.3
    y0, t, w = np.array([0.5, -0.3]), np.array([0.0, 0.4, 1.0]), RNG.standard_normal((3, 2))
    opts = {"rtol": 1e-12, "atol": 1e-12}
    from scipy.integrate import odeint as scipy_odeint

    np.testing.assert_allclose(
        integrate.odeint(_field, y0, t, (W, b), **opts),
        scipy_odeint(lambda y, s: np.tanh(W @ y + b) * (1 + 0.1 * s), y0, t, **opts),
        rtol=1e-10,
    )
    assert tg.gradcheck(lambda y0, t, W, b: integrate.odeint(_field, y0, t, (W, b), **opts) * w, y0, t, W, b)


def test_odeint_differentiates_a_tensor_of_funcs_closure_as_one_of_its_args():
    # W and b read by func from its closure, not passed in args: their gradients were 0 (the result came back as
    # a plain array, the tensors read as constants), with no error
    W, b = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal(2) * 0.3
    y0, t, w = np.array([0.5, -0.3]), np.array([0.0, 0.4, 1.0]), RNG.standard_normal((3, 2))
    opts = {"rtol": 1e-12, "atol": 1e-12}

    def closed(W, b):
        return (integrate.odeint(lambda y, s: _field(y, s, W, b), y0, t, **opts) * w).sum()

    def given(W, b):
        return (integrate.odeint(_field, y0, t, (W, b), **opts) * w).sum()

    for got, want in zip(tg.grad(closed, argnums=(0, 1))(W, b), tg.grad(given, argnums=(0, 1))(W, b)):
        np.testing.assert_allclose(got, want, rtol=1e-9)
    Wt = tg.Tensor(W, requires_grad=True)
    with tg.record():
        loss = closed(Wt, b)
    loss.backward()
    np.testing.assert_allclose(Wt.grad, tg.grad(given)(W, b), rtol=1e-9)
    assert isinstance(integrate.odeint(lambda y, s: _field(y, s, W, b), y0, t), np.ndarray)  # no tensor: SciPy's


def test_odeint_against_the_closed_form_and_refuses_what_it_cannot_do():
    k = 0.7
    g = tg.grad(lambda y0, k: integrate.odeint(lambda y, t, k: -k * y, y0, np.array([0.0, 2.0]), (k,), rtol=1e-11,
                                                atol=1e-11)[-1].sum(), argnums=(0, 1))(np.array([1.5]), k)  # fmt: skip
    np.testing.assert_allclose(g[0], [np.exp(-2 * k)], rtol=1e-7)
    np.testing.assert_allclose(g[1], -2 * 1.5 * np.exp(-2 * k), rtol=1e-7)
    with pytest.raises(NotImplementedError, match="odeint: tapegrad has its first derivatives only"):
        tg.hessian(lambda y0: integrate.odeint(lambda y, t: -y, y0, np.array([0.0, 1.0])).sum())(np.ones(1))
    with pytest.raises(ValueError, match="odeint: y0 and t must be vectors"):
        integrate.odeint(lambda y, t: -y, np.ones((2, 2)), np.array([0.0, 1.0]))


CDFS = [("t", X, (3.5,)), ("gamma", P, (2.5,)), ("chi2", P, (3.0,)), ("beta", U, (2.0, 3.0))]


@pytest.mark.parametrize("dist,x,shape", CDFS, ids=[d for d, _, _ in CDFS])
def test_incomplete_beta_and_gamma_cdfs_are_differentiable_in_every_parameter(dist, x, shape):
    ours, theirs = getattr(stats, dist), getattr(scipy_stats, dist)
    loc, scale = np.full(x.shape, -0.05), np.full(x.shape, 1.1)
    np.testing.assert_allclose(ours.cdf(x, *shape, loc, scale), theirs.cdf(x, *shape, loc, scale), rtol=1e-12)
    params = [np.full(x.shape, p) for p in shape]
    assert tg.gradcheck(lambda x, *ps: ours.cdf(x, *ps[:-2], ps[-2], ps[-1]), x, *params, loc, scale)
    assert tg.gradgradcheck(lambda x, *ps: ours.cdf(x, *ps[:-2], ps[-2], ps[-1]), x, *params, loc, scale)
    for i, p in enumerate(shape):  # each shape parameter against central differences of SciPy's CDF
        h = 1e-6 * p

        def moved(step, i=i):
            return theirs.cdf(x, *[q + step if j == i else q for j, q in enumerate(shape)])

        want = (moved(h) - moved(-h)) / (2 * h)
        got = tg.grad(lambda q, i=i: ours.cdf(x, *[q if j == i else r for j, r in enumerate(shape)]).sum())(p)
        np.testing.assert_allclose(got, want.sum(), rtol=1e-6)
    if dist == "t":
        np.testing.assert_allclose(ours.logcdf(x, *shape), theirs.logcdf(x, *shape), rtol=1e-12)
        assert tg.gradgradcheck(lambda x, df: ours.logcdf(x, df), x, params[0])
        assert tg.grad(lambda df: ours.cdf(0.0, df))(3.0) == 0.0  # 1/2 whatever df: no NaN at the centre


def test_discrete_distributions_refuse_a_gradient_in_their_integer_parameters():
    k = np.array([0, 2, 4])
    cases = [
        ("binom", "n", lambda n: stats.binom.logpmf(k, n, 0.3), 5.0),
        ("binom", "loc", lambda loc: stats.binom.pmf(k, 5, 0.3, loc), 0.0),
        ("poisson", "loc", lambda loc: stats.poisson.logpmf(k, 1.5, loc), 0.0),
        ("poisson", "loc", lambda loc: stats.poisson.cdf(k, 1.5, loc), 0.0),
        ("bernoulli", "loc", lambda loc: stats.bernoulli.logpmf(k, 0.3, loc), 0.0),
    ]
    for name, what, f, at in cases:
        with pytest.raises(TypeError, match=rf"scipy\.stats\.{name}\.\w+: {what} is an integer parameter"):
            tg.grad(lambda v, f=f: f(v).sum())(at)
    # as constants (numbers, arrays, tensors without a gradient) they are read as SciPy reads them
    np.testing.assert_allclose(stats.binom.logpmf(k, tg.Tensor(5.0), 0.3).data, scipy_stats.binom.logpmf(k, 5, 0.3))
    np.testing.assert_allclose(stats.poisson.cdf(k, 1.5, 1), scipy_stats.poisson.cdf(k, 1.5, 1), rtol=1e-14)
    assert tg.grad(lambda p: stats.binom.logpmf(k, 5, p).sum())(0.3) == pytest.approx((k / 0.3 - (5 - k) / 0.7).sum())


def test_poisson_cdf_is_differentiable_in_mu():
    k = np.array([0, 2, 5])
    np.testing.assert_allclose(stats.poisson.cdf(k, 2.5), scipy_stats.poisson.cdf(k, 2.5), rtol=1e-14)
    assert tg.gradcheck(lambda m: stats.poisson.cdf(k, m), np.full(3, 2.5))
    assert tg.gradgradcheck(lambda m: stats.poisson.cdf(k, m), np.full(3, 2.5))


def test_tapegrad_scipy_returns_scipys_types_on_arrays_and_tensors_on_tensors():
    # the rule of tapegrad.numpy (docs/guide/numpy.md, "Which type comes back"), inside record() or not
    calls = [
        (lambda v: special.gammaln(v), lambda v: scipy_special.gammaln(v)),
        (lambda v: special.logsumexp(v), lambda v: scipy_special.logsumexp(v)),
        (lambda v: stats.norm.logpdf(v, 0.5), lambda v: scipy_stats.norm.logpdf(v, 0.5)),
        (lambda v: stats.t.cdf(v, 3.0), lambda v: scipy_stats.t.cdf(v, 3.0)),
        (
            lambda v: tss.convolve(tg.atleast_1d(v) if isinstance(v, tg.Tensor) else np.atleast_1d(v), np.ones(2)),
            lambda v: scipy_signal.convolve(np.atleast_1d(v), np.ones(2)),
        ),
    ]
    for ours, theirs in calls:
        for inside in (False, True):
            with tg.record() if inside else warnings.catch_warnings():
                for v in (np.abs(X) + 0.5, 1.5):
                    got, want = ours(v), theirs(v)
                    assert type(got) is type(want), (got, want)
                    np.testing.assert_allclose(got, want, rtol=1e-12)
                assert isinstance(ours(tg.Tensor(np.abs(X) + 0.5)), tg.Tensor)
    c, lower = tsl.cho_factor(SPD)
    assert type(c) is np.ndarray and lower is False
    assert type(integrate.odeint(lambda y, t: -y, np.ones(1), np.array([0.0, 1.0]))) is np.ndarray
