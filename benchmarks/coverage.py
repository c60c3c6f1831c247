"""Which NumPy functions tapegrad differentiates, beside HIPS autograd and JAX: the coverage table of
docs/guide/numpy.md.

    python -m benchmarks.coverage                   # the counts, and the table in --out/coverage.md
    python -m benchmarks.coverage --update-docs     # the table and counts into docs/guide/numpy.md
    python -m benchmarks.coverage --probe-jax       # rerun the JAX probe into --out (needs jax; with
                                                    # --update-docs, into the committed docs/numpy-jax.json)

Rows: every function of NumPy's main namespace, ``numpy.linalg`` and ``numpy.fft`` that autograd or JAX can
differentiate.

- **autograd**: read from the installed ``autograd.numpy``: a function with a ``defvjp`` rule
  (``autograd.core.primitive_vjps``), or one autograd writes in Python from its primitives (``stack``,
  ``mean``...), is differentiable; one it registers as non-differentiable (``register_notrace``) is not.
- **JAX**: each function is called on fixed inputs (``benchmarks/coverage_probes.py``) under ``jax.grad`` of a
  fixed weighted sum of its floating outputs, in float64: it is differentiable when that runs and an output is
  floating (a gradient of zeros everywhere, as ``floor``'s, says "zero"). The gradients are kept in
  docs/numpy-jax.json, so that this command compares tapegrad's with them without JAX installed.
- **tapegrad**: probed now, on the same inputs as tensors: "differentiable" when the result is on the tape,
  "no gradient" when it is not (a pass-through of integers, booleans or shapes, or a derivative zero almost
  everywhere), "missing" with the reason when NumPy's function raises on tensors. Where JAX's gradient is known,
  tapegrad's is compared with it.
"""

from __future__ import annotations

import json
import pathlib
import sys
import warnings

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
from benchmarks import cli  # noqa: E402
from benchmarks.coverage_probes import NOT_PROBED, Arrays, default, probes  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guide" / "numpy.md"
JAX_RUN = ROOT / "docs" / "numpy-jax.json"
MODULES = {"": "numpy", "linalg.": "numpy.linalg", "fft.": "numpy.fft"}

# Why a function autograd or JAX differentiates is missing from tapegrad (the command fails on one without).
REASONS = {
    "polydiv": "not yet: long division, a loop of `polysub` and `polymul`",
    "roots": "the eigenvalues of the companion matrix: `np.linalg.eigvals` of it (complex)",
    "fill_diagonal": "in place (JAX's takes `inplace=False`): `x + np.diag(v - np.diagonal(x))`",
    "put": "in place (JAX's takes `inplace=False`): `x.at[index].set(v)`",
    "place": "in place (JAX's takes `inplace=False`): `np.where(mask, v, x)`",
    "putmask": "in place: `np.where(mask, v, x)`",
    "copyto": "in place: `np.where(mask, src, dst)`",
    "put_along_axis": "in place (JAX's takes `inplace=False`): `x.at[index].set(v)`",
    "histogram2d": "not yet: edges from the data and weights being differentiated raise; `np.histogram` per axis",
    "histogramdd": "not yet: edges from the data and weights being differentiated raise; `np.histogram` per axis",
}


def numpy_functions() -> dict:
    """``name -> function`` for NumPy's public functions (``linalg.x``, ``fft.x`` for the submodules)."""
    out = {}
    for prefix, module in MODULES.items():
        mod = sys.modules.get(module) or __import__(module, fromlist=["_"])
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("_") or not callable(obj) or isinstance(obj, type) or name in ("test", "show_config"):
                continue
            if getattr(obj, "__module__", "") == "numpy.version" or type(obj).__name__ == "module":
                continue
            out[prefix + name] = obj
    return out


def autograd_status() -> dict:
    """``name -> "rule" | "composed" | "no gradient" | "no rule"`` for autograd.numpy's functions, read from
    its registries (autograd is the bench extra's)."""
    import autograd.numpy as anp
    from autograd.core import primitive_vjps
    from autograd.extend import VJPNode
    from autograd.tracer import notrace_primitives

    nograd = notrace_primitives[VJPNode]
    out = {}
    for prefix, module in (("", anp), ("linalg.", anp.linalg), ("fft.", anp.fft)):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or not callable(obj) or isinstance(obj, type):
                continue
            if obj in primitive_vjps:
                out[prefix + name] = "rule"
            elif obj in nograd:
                out[prefix + name] = "no gradient"
            elif getattr(obj, "__module__", "").startswith("autograd") and not hasattr(obj, "fun"):
                out[prefix + name] = "composed"
            else:
                out[prefix + name] = "no rule"
    out["mean"] = out["std"] = out["var"] = "composed"  # Python wrappers of the primitives _primitive_mean...
    out["linalg.norm"] = "composed"  # around autograd's _primitive_norm
    out["where"] = "rule"  # around autograd's _original_where
    return out


# -- probing --------------------------------------------------------------------------------------------------
def _leaves(obj, found):
    """The float64 arrays in ``obj`` (through lists and tuples), in order; ``obj`` with placeholders for them."""
    if isinstance(obj, np.ndarray) and obj.dtype == np.float64:
        found.append(obj)
        return _Leaf(len(found) - 1)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_leaves(o, found) for o in obj)
    return obj


class _Leaf:
    def __init__(self, i):
        self.i = i


def _filled(obj, values):
    if isinstance(obj, _Leaf):
        return values[obj.i]
    if isinstance(obj, (list, tuple)):
        return type(obj)(_filled(o, values) for o in obj)
    return obj


def _outputs(out) -> list:
    if isinstance(out, (list, tuple)):
        return [o for x in out for o in _outputs(x)]
    return [out]


def _weights(size, k):
    return np.cos(np.arange(size) * 0.7 + k)


def probe_args(name, xp, arrays):
    table = probes(xp, arrays)
    if name in table:
        return table[name]
    module, _, short = name.rpartition(".")
    obj = getattr(getattr(np, module) if module else np, short)
    return default(xp, arrays, obj)


def _resolve(namespace, name):
    module, _, short = name.rpartition(".")
    return getattr(getattr(namespace, module) if module else namespace, short)


def probe_jax(names) -> dict:
    """JAX's status and gradient for each of ``names`` it has, on the probe inputs (float64)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    arrays, out = Arrays(), {}
    for name in names:
        if name in NOT_PROBED:
            continue
        try:
            f = _resolve(jnp, name)
        except AttributeError:
            continue
        args, kwargs = probe_args(name, jnp, arrays)
        found = []
        skeleton = _leaves(args, found)
        if not found:
            out[name] = {"status": "no input"}
            continue

        def scalar(*values, f=f, skeleton=skeleton, kwargs=kwargs):
            total = 0.0
            for k, o in enumerate(_outputs(f(*_filled(skeleton, values), **kwargs))):
                o = jnp.asarray(o)
                if jnp.issubdtype(o.dtype, jnp.inexact):
                    w = _weights(o.size, k).reshape(o.shape)
                    total = total + jnp.sum(w * jnp.real(o)) + jnp.sum(w * jnp.imag(o)) / 2
            return total

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs = _outputs(f(*args, **kwargs))
                if not any(jnp.issubdtype(jnp.asarray(o).dtype, jnp.inexact) for o in outs):
                    out[name] = {"status": "no gradient"}
                    continue
                grads = jax.grad(scalar, argnums=tuple(range(len(found))))(*[jnp.asarray(v) for v in found])
        except Exception as err:  # noqa: BLE001  (what JAX says is the record)
            out[name] = {"status": "error", "error": f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"}
            continue
        grads = [np.asarray(g, dtype=np.float64) for g in grads]
        zero = all(not np.any(g) for g in grads)
        out[name] = {"status": "zero" if zero else "differentiable", "grads": [g.ravel().tolist() for g in grads]}
    return out


def probe_tapegrad(name, arrays):
    """(status, gradients or None) of tapegrad's implementation of NumPy's ``name``, on the probe inputs."""
    f = _resolve(tnp, name)  # NumPy's own function, or tapegrad.numpy's for those NumPy does not dispatch
    if f is _resolve(np, name) and tnp.implementation(f) is None:
        return "missing", None
    args, kwargs = probe_args(name, tnp, arrays)
    found = []
    skeleton = _leaves(args, found)
    if not found:
        return "no input", None
    xs = [tg.Tensor(v.copy(), requires_grad=True) for v in found]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # row_stack
        try:
            with tg.record():
                outs = _outputs(f(*_filled(skeleton, xs), **kwargs))
                total, recorded = 0.0, False
                for k, o in enumerate(outs):
                    on_tape = isinstance(o, tg.Tensor) and (o._node is not None or o.requires_grad)
                    if on_tape and np.issubdtype(o.dtype, np.inexact):
                        w = _weights(o.size, k).reshape(o.shape)
                        total = total + (w * tnp.real(o)).sum() + (w * tnp.imag(o)).sum() / 2
                        recorded = True
            if not recorded:
                return "no gradient", None
            total.backward()
        except TypeError as err:
            if "tape cannot record" in str(err):
                return "in place", None
            if "on tensors" in str(err) or "on a tensor" in str(err):  # it refuses, naming itself
                return "missing", None
            raise
        except ValueError as err:
            if name in RAISING:  # where the derivative does not exist at the probe (eig's phase)
                assert RAISING[name] in str(err), err
                return "differentiable", None
            raise
    return "differentiable", [
        np.zeros(v.size) if x.grad is None else np.asarray(x.grad).ravel() for v, x in zip(found, xs)
    ]


def rows(jax_run: dict) -> list:
    """One row per function autograd or JAX differentiates: (name, autograd, JAX, tapegrad, note)."""
    functions = numpy_functions()
    ours = autograd_status()
    arrays = Arrays()
    out = []
    for name in sorted(functions, key=lambda n: (n.count("."), n)):
        ag = ours.get(name, "")
        jx = jax_run.get(name, {}).get("status", "")
        if ag not in ("rule", "composed") and jx not in ("differentiable", "zero"):
            continue
        status, grads = probe_tapegrad(name, arrays)
        note = ""
        if status in ("missing", "in place"):
            if name not in REASONS:
                raise SystemExit(f"benchmarks/coverage.py: {name} is missing from tapegrad; add a reason to REASONS")
            note = REASONS[name]
        elif status == "differentiable" and grads is None:
            note = NOTES[name]
        elif status == "no gradient" and jx == "zero":
            note = "its derivative is 0 almost everywhere: a constant, as JAX's gradient of it is 0"
        elif status == "differentiable" and "grads" in jax_run.get(name, {}):
            note = compare(name, grads, jax_run[name]["grads"])
        out.append((name, ag or "-", jx or "-", status, note))
    return out


# Where tapegrad's gradient differs from JAX's on the probe inputs, and why (a convention, not an error): the
# reason, and the map from tapegrad's gradient to JAX's (or None when they are not comparable).
def _symmetrized(g):
    n = int(round(len(g) ** 0.5))
    m = g.reshape(n, n)
    return ((m + m.T) / 2).ravel()


_SYMMETRIC = (
    "tapegrad's is the gradient of the function of the lower triangle NumPy reads, JAX's its symmetrization; "
    "symmetrized, tapegrad's equals JAX's",
    _symmetrized,
)
DIFFERENCES = {
    "polydiv": ("JAX's remainder keeps the leading zeros NumPy trims (another length): not comparable", None),
    "linalg.cholesky": _SYMMETRIC,
    "linalg.eigh": _SYMMETRIC,
    "linalg.eigvalsh": _SYMMETRIC,
}
# Functions whose probe raises by design (the derivative does not exist there), with what the error says.
RAISING = {"linalg.eig": "phase"}
NOTES = {
    "linalg.eig": "eigenvalues differentiable; eigenvectors raise where the loss depends on their arbitrary phase "
    "(the probe's does; JAX refuses their derivatives)",
}


def compare(name, grads, theirs) -> str:
    """How tapegrad's gradient on the probe inputs compares with JAX's."""
    same = lambda mine: (
        len(mine) == len(theirs)
        and all(np.allclose(g, np.asarray(j), rtol=1e-6, atol=1e-9) for g, j in zip(mine, theirs))
    )
    if same(grads):
        return "gradient equals JAX's"
    if name not in DIFFERENCES:
        raise SystemExit(f"benchmarks/coverage.py: {name}'s gradient differs from JAX's; say why in DIFFERENCES")
    reason, mapped = DIFFERENCES[name]
    if mapped is not None and not same([mapped(g) for g in grads]):
        raise SystemExit(f"benchmarks/coverage.py: {name}'s gradient differs from JAX's even as DIFFERENCES maps it")
    return "differs from JAX's: " + reason


def counts(table) -> dict:
    """How many rows of each kind: the figures the guide quotes."""
    main = [r for r in table if "." not in r[0]]
    autograd = [r for r in main if r[1] in ("rule", "composed")]
    return {
        "rows": len(table),
        "main": len(main),
        "autograd": len(autograd),
        "autograd_missing": sum(r[3] in ("missing", "in place") for r in autograd),
        "jax": sum(r[2] in ("differentiable", "zero") for r in main),
        "tapegrad_differentiable": sum(r[3] == "differentiable" for r in main),
        "tapegrad_no_gradient": sum(r[3] == "no gradient" for r in main),
        "missing": sum(r[3] in ("missing", "in place") for r in main),
        "equal_to_jax": sum(r[4] == "gradient equals JAX's" for r in table),
        "compared": sum(r[4].startswith(("gradient equals", "differs from JAX")) for r in table),
    }


def markdown(table) -> str:
    c = counts(table)
    lines = [
        f"{c['main']} functions of NumPy's main namespace are differentiable in autograd or JAX ({c['autograd']} in "
        f"autograd, {c['jax']} in JAX); tapegrad differentiates {c['tapegrad_differentiable']}, passes "
        f"{c['tapegrad_no_gradient']} through without a gradient and lacks {c['missing']} "
        f"({c['autograd_missing']} of autograd's). With numpy.linalg and numpy.fft, {c['rows']} rows; on "
        f"{c['equal_to_jax']} of them tapegrad's gradient on the probe inputs equals JAX's.",
        "",
        "| function | autograd | JAX | tapegrad | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, ag, jx, status, note in table:
        lines.append(f"| `{name}` | {ag} | {jx} | {status} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.coverage", __doc__)
    cli.add_output_flags(parser, "coverage", "the table in docs/guide/numpy.md (and with --probe-jax, the JAX run)")
    parser.add_argument("--probe-jax", action="store_true", help="rerun the JAX probe (needs jax installed)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    if args.probe_jax:
        run = probe_jax(sorted(numpy_functions()))
        target = JAX_RUN if args.update_docs else out / "numpy-jax.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(run, indent=0, sort_keys=True) + "\n")
        print(f"JAX probe: {len(run)} functions, written to {target}")
    else:
        run = json.loads(JAX_RUN.read_text())
    table = rows(run)
    body = markdown(table)
    if args.update_docs:
        cli.replace_between_markers(PAGE, "coverage", body)
        print(f"wrote the table into {PAGE.relative_to(ROOT)}")
    else:
        out.mkdir(parents=True, exist_ok=True)
        (out / "coverage.md").write_text(body)
        print(f"wrote {out / 'coverage.md'}")
    print(body.split("\n")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
