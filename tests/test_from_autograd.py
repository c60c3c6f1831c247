"""docs/guide/from-autograd.md: every public name of autograd, autograd.extend, autograd.misc and
autograd.test_util has a row, and every tapegrad name a row gives exists."""

import importlib
import importlib.util
import pathlib
import re

import pytest

import tapegrad as tg

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "from-autograd.md"

# autograd 1.7's public names (dir() without underscores; `scipy` appears once autograd.scipy is imported)
AUTOGRAD = {
    "autograd": "builtins checkpoint core deriv dict differential_operators elementwise_grad extend grad "
    "grad_and_aux grad_named hessian hessian_tensor_product hessian_vector_product holomorphic_grad isinstance "
    "jacobian list make_ggnvp make_hvp make_jvp make_vjp misc multigrad_dict numpy primitive "
    "tensor_jacobian_product tracer tuple type util value_and_grad vector_jacobian_product wrap_util scipy",
    "autograd.extend": "Box JVPNode SparseObject VJPNode VSpace def_linear defjvp defjvp_argnum defjvp_argnums "
    "defvjp defvjp_argnum defvjp_argnums notrace_primitive primitive register_notrace vspace",
    "autograd.misc": "const_graph flatten tracers fixed_points optimizers",
    "autograd.misc.optimizers": "adam sgd rmsprop unflatten_optimizer",
    "autograd.test_util": "check_grads check_vjp check_jvp combo_check",
}


def _rows():
    """(autograd names, tapegrad cell) of every table row whose first cell names autograd's."""
    rows = []
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`autograd"):
            rows.append((re.findall(r"`([^`]+)`", cells[0]), cells[1]))
    return rows


def _listed(rows):
    """The autograd names the rows list; ``a.b.c`` lists its modules ``a.b`` and ``a`` too."""
    names = set()
    for first, _ in rows:
        module = None
        for spelled in first:
            name = spelled.split("(")[0]
            if name.startswith("autograd"):
                module = name.rpartition(".")[0]
            elif module is not None:  # `numpy_vjps` after `autograd.numpy.numpy_boxes`: the same module's
                name = f"{module}.{name}"
            else:
                continue
            parts = name.split(".")
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return names


@pytest.mark.parametrize("module", sorted(AUTOGRAD))
def test_every_public_name_of_autograd_has_a_row(module):
    listed = _listed(_rows())
    missing = [n for n in AUTOGRAD[module].split() if f"{module}.{n}" not in listed]
    assert not missing, f"docs/guide/from-autograd.md has no row for {module}.{missing}"


def test_the_list_is_autograd_s_where_autograd_is_installed():
    pytest.importorskip("autograd", reason="HIPS autograd is not installed: pip install autograd")
    for module in ("autograd", "autograd.extend"):
        public = {n for n in dir(importlib.import_module(module)) if not n.startswith("_")}
        assert public <= set(AUTOGRAD[module].split()), f"{module} has names the page does not list: {public}"
    import autograd.numpy as anp

    import tapegrad.numpy as tnp

    internal = _listed([row for row in _rows() if "not offered" in row[1]])
    for name in (n for n in dir(anp) if not n.startswith("_")):
        assert hasattr(tnp, name) or f"autograd.numpy.{name}" in internal, f"autograd.numpy.{name}"


def _resolve(dotted):
    parts = dotted.replace("tg.", "tapegrad.", 1).split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


def test_every_tapegrad_name_on_the_page_exists():
    checked = 0
    for _, cell in _rows():
        for spelled in re.findall(r"`([^`]+)`", cell):
            name = re.match(r"[A-Za-z_][\w.]*", spelled)
            if name is None or not name.group().startswith(("tg.", "tapegrad.")):
                continue
            dotted = name.group().rstrip(".")
            if dotted.startswith("tapegrad.scipy") and importlib.util.find_spec("tapegrad.scipy") is None:
                continue  # from the branch that adds tapegrad.scipy
            assert _resolve(dotted) is not None, dotted
            checked += 1
    assert checked > 40
    assert tg.flatten({"a": 1.0})[0].dtype.kind == "f"
