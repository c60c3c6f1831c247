"""Op-table rows for tapegrad/ops/arrange.py and joining.py: flip, roll and pad (ops), and the shape functions
composed of ops. Functions returning several tensors (the splits, ``meshgrid``, ``broadcast_arrays``,
``atleast_*`` of several inputs) are checked through one tensor built from all of them, each piece scaled
differently so that a gradient sent to the wrong piece shows.

``pad`` covers every supported mode, pads wider than the input (reflect and wrap then repeat) and size-1 axes.
"""

import numpy as np
from hypothesis import strategies as st
from op_table import OpCase

import tapegrad as tg
from tapegrad import strategies as tgst

_NO_STANDARD = ("array_api_strict",)


def _one_shape(kwargs_of, min_dims=0, max_dims=4):
    return tgst.shapes(min_dims=min_dims, max_dims=max_dims).flatmap(lambda s: st.tuples(st.just((s,)), kwargs_of(s)))


def _flip_draw():
    return _one_shape(lambda s: st.fixed_dictionaries({"axis": tgst.axes(len(s))}))


def _roll_draw():
    def kwargs(s):
        flat = st.fixed_dictionaries({"shift": st.integers(-5, 5), "axis": st.none()})
        if not s:
            return flat
        one = st.fixed_dictionaries({"shift": st.integers(-5, 5), "axis": st.integers(-len(s), len(s) - 1)})
        several = st.lists(st.integers(-len(s), len(s) - 1), min_size=1, max_size=3).flatmap(
            lambda ax: st.fixed_dictionaries(
                {"shift": st.tuples(*[st.integers(-4, 4)] * len(ax)), "axis": st.just(tuple(ax))}
            )
        )
        return flat | one | several

    return _one_shape(kwargs)


def _pad_draw():
    def kwargs(s):
        widths = st.tuples(*[st.tuples(st.integers(0, 3), st.integers(0, 3))] * len(s))
        mode = st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"])
        return st.tuples(widths, mode, st.floats(-2, 2)).map(
            lambda w: {"pad_width": w[0], "mode": w[1], **({"constant_values": w[2]} if w[1] == "constant" else {})}
        )

    return _one_shape(kwargs, min_dims=1, max_dims=3)


def _pieces(parts):  # one tensor from a list of them, each scaled by its position
    return tg.concatenate([tg.ravel(p) * (i + 1.0) for i, p in enumerate(parts)])


def _np_pieces(parts):
    return np.concatenate([np.ravel(p) * (i + 1.0) for i, p in enumerate(parts)])


def _split_draw():
    def kwargs(s):
        axis = st.integers(-len(s), len(s) - 1)
        return axis.flatmap(
            lambda a: (st.integers(1, 4) | st.lists(st.integers(0, s[a]), max_size=3).map(sorted)).map(
                lambda k: {"indices_or_sections": k, "axis": a}
            )
        )

    return _one_shape(kwargs, min_dims=1)


def _even_draw(axis_of, min_dims):  # an input whose split axis has an even length
    @st.composite
    def draw(draw):
        s = list(draw(tgst.shapes(min_dims=min_dims, max_dims=max(min_dims, 3))))
        s[axis_of(len(s))] = 2 * draw(st.integers(1, 2))
        return (tuple(s),), {}

    return draw


def _tile_draw():
    return _one_shape(
        lambda s: st.fixed_dictionaries({"reps": st.lists(st.integers(1, 3), max_size=3).map(tuple)}), max_dims=3
    )


def _repeat_draw():
    def kwargs(s):
        flat = st.fixed_dictionaries({"repeats": st.integers(0, 3), "axis": st.none()})
        if not s:
            return flat
        per = st.integers(0, len(s) - 1).flatmap(
            lambda a: st.fixed_dictionaries(
                {
                    "repeats": st.integers(0, 3) | st.lists(st.integers(0, 3), min_size=s[a], max_size=s[a]),
                    "axis": st.just(a),
                }
            )
        )
        return flat | per

    return _one_shape(kwargs)


def _moveaxis_draw():
    def kwargs(s):
        k = st.integers(1, len(s))
        return k.flatmap(
            lambda n: st.tuples(st.permutations(range(len(s))), st.permutations(range(len(s)))).map(
                lambda p: {"source": tuple(p[0][:n]), "destination": tuple(q - len(s) for q in p[1][:n])}
            )
        )

    return _one_shape(kwargs, min_dims=1)


def _stack_draw(axis_of):  # two inputs that join along ``axis_of(ndim)`` after being made at least n-d
    @st.composite
    def draw(draw):
        s = draw(tgst.shapes(min_dims=1, max_dims=3))
        axis = axis_of(len(s))
        other = list(s)
        if axis < len(s):
            other[axis] = draw(st.integers(1, 3))
        return (s, tuple(other)), {}

    return draw


def _rot90_draw():
    def kwargs(s):
        return st.tuples(st.integers(-5, 5), st.permutations(range(len(s)))).map(
            lambda kp: {"k": kp[0], "axes": (kp[1][0], kp[1][1] - len(s))}
        )

    return _one_shape(kwargs, min_dims=2)


def _shapes_of(n, min_dims=0, max_dims=4):
    return lambda: st.tuples(st.tuples(*[tgst.shapes(min_dims=min_dims, max_dims=max_dims)] * n), st.just({}))


def _meshgrid_draw():
    return st.tuples(
        st.lists(tgst.shapes(min_dims=1, max_dims=1), min_size=1, max_size=3).map(tuple),
        st.fixed_dictionaries({"indexing": st.sampled_from(["xy", "ij"]), "sparse": st.booleans()}),
    )


def _meshgrid(*xs, **k):
    return _pieces(tg.broadcast_arrays(*tg.meshgrid(*xs, **k)))


def _np_meshgrid(*xs, **k):
    return _np_pieces(np.broadcast_arrays(*np.meshgrid(*xs, **k)))


ROWS = (
    OpCase(
        "flip",
        ref=np.flip,
        examples=((((3, 4),), {}), (((2, 3, 4),), {"axis": (0, -1)}), (((3, 4),), {"axis": -2})),
        draw=_flip_draw,
    ),
    OpCase(
        "roll",
        ref=np.roll,
        examples=(
            (((3, 4),), {"shift": 5}),
            (((3, 4),), {"shift": -1, "axis": 1}),
            (((2, 3, 4),), {"shift": (1, 2), "axis": (0, -1)}),
        ),
        draw=_roll_draw,
    ),
    OpCase(
        "pad",
        ref=np.pad,
        examples=(
            (((3, 4),), {"pad_width": 1}),
            (((3, 4),), {"pad_width": ((1, 2), (0, 3)), "constant_values": 2.5}),
            (((3, 4),), {"pad_width": 2, "mode": "edge"}),
            (((3, 4),), {"pad_width": ((4, 1), (2, 5)), "mode": "reflect"}),  # wider than the input
            (((2, 3),), {"pad_width": (3, 4), "mode": "symmetric"}),
            (((3, 1),), {"pad_width": ((2, 5), (1, 1)), "mode": "wrap"}),
            (((2, 3, 2),), {"pad_width": ((0, 1), (1, 0), (2, 2)), "mode": "reflect"}),
        ),
        draw=_pad_draw,
        unsupported=_NO_STANDARD,
    ),
    # composed of ops
    OpCase(
        "fliplr",
        tg.fliplr,
        np.fliplr,
        examples=((((3, 4),), {}),),
        arity=1,
        draw=lambda: _one_shape(lambda s: st.just({}), 2),
    ),
    OpCase(
        "flipud",
        tg.flipud,
        np.flipud,
        examples=((((3, 4),), {}),),
        arity=1,
        draw=lambda: _one_shape(lambda s: st.just({}), 1),
    ),
    OpCase(
        "rot90",
        tg.rot90,
        np.rot90,
        examples=(
            (((3, 4),), {}),
            (((3, 4),), {"k": 2}),
            (((2, 3, 4),), {"k": -1, "axes": (2, 0)}),
            (((3, 4),), {"k": 4}),
        ),
        arity=1,
        draw=_rot90_draw,
    ),
    OpCase("ravel", tg.ravel, np.ravel, examples=((((3, 4),), {}), (((),), {})), arity=1),
    OpCase(
        "moveaxis",
        tg.moveaxis,
        np.moveaxis,
        examples=(
            (((2, 3, 4),), {"source": 0, "destination": -1}),
            (((2, 3, 4),), {"source": (0, 1), "destination": (2, 0)}),
        ),
        arity=1,
        draw=_moveaxis_draw,
    ),
    OpCase(
        "rollaxis",
        tg.rollaxis,
        np.rollaxis,
        examples=(
            (((2, 3, 4),), {"axis": 2}),
            (((2, 3, 4),), {"axis": 0, "start": 3}),
            (((2, 3, 4),), {"axis": -1, "start": 1}),
        ),
        arity=1,
        draw=lambda: _one_shape(
            lambda s: st.fixed_dictionaries(
                {"axis": st.integers(-len(s), len(s) - 1), "start": st.integers(0, len(s))}
            ),
            1,
        ),
    ),
    OpCase("atleast_1d", tg.atleast_1d, np.atleast_1d, examples=((((),), {}), (((3,),), {})), arity=1),
    OpCase("atleast_2d", tg.atleast_2d, np.atleast_2d, examples=((((),), {}), (((3,),), {}), (((2, 3),), {})), arity=1),
    OpCase("atleast_3d", tg.atleast_3d, np.atleast_3d, examples=((((),), {}), (((3,),), {}), (((2, 3),), {})), arity=1),
    OpCase(
        "atleast_2d",
        lambda x, y: _pieces(tg.atleast_2d(x, y)),
        lambda x, y: _np_pieces(np.atleast_2d(x, y)),
        examples=((((), (3,)), {}),),
        arity=2,
        draw=_shapes_of(2),
    ),
    OpCase(
        "vstack",
        lambda x, y: tg.vstack([x, y]),
        lambda x, y: np.vstack([x, y]),
        examples=((((3,), (3,)), {}), (((2, 3), (1, 3)), {})),
        arity=2,
        draw=_stack_draw(lambda n: 0 if n > 1 else 9),
    ),
    OpCase(
        "hstack",
        lambda x, y: tg.hstack([x, y]),
        lambda x, y: np.hstack([x, y]),
        examples=((((3,), (2,)), {}), (((2, 3), (2, 1)), {})),
        arity=2,
        draw=_stack_draw(lambda n: 0 if n == 1 else 1),
    ),
    OpCase(
        "dstack",
        lambda x, y: tg.dstack([x, y]),
        lambda x, y: np.dstack([x, y]),
        examples=((((3,), (3,)), {}), (((2, 3), (2, 3)), {}), (((2, 3, 1), (2, 3, 2)), {})),
        arity=2,
        draw=_stack_draw(lambda n: 2 if n == 3 else 9),
    ),
    OpCase(
        "column_stack",
        lambda x, y: tg.column_stack([x, y]),
        lambda x, y: np.column_stack([x, y]),
        examples=((((3,), (3,)), {}), (((3, 2), (3,)), {})),
        arity=2,
        draw=_stack_draw(lambda n: 1 if n == 2 else 9),
    ),
    OpCase(
        "append",
        tg.append,
        np.append,
        examples=((((3, 4), (2,)), {}), (((3, 4), (3, 2)), {"axis": 1})),
        arity=2,
        draw=_shapes_of(2, max_dims=3),
    ),
    OpCase(
        "split",
        lambda x, **k: _pieces(tg.split(x, **k)),
        lambda x, **k: _np_pieces(np.split(x, **k)),
        examples=((((4, 3),), {"indices_or_sections": 2}), (((3, 4),), {"indices_or_sections": [1, 1, 3], "axis": -1})),
        arity=1,
        draw=lambda: _split_draw().filter(
            lambda sk: (
                not isinstance(sk[1]["indices_or_sections"], int)
                or sk[0][0][sk[1]["axis"]] % sk[1]["indices_or_sections"] == 0
            )
        ),
        unsupported=("dask",),
    ),
    OpCase(
        "array_split",
        lambda x, **k: _pieces(tg.array_split(x, **k)),
        lambda x, **k: _np_pieces(np.array_split(x, **k)),
        examples=((((5, 3),), {"indices_or_sections": 3}), (((3, 4),), {"indices_or_sections": [2], "axis": 1})),
        arity=1,
        draw=_split_draw,
    ),
    OpCase(
        "hsplit",
        lambda x: _pieces(tg.hsplit(x, 2)),
        lambda x: _np_pieces(np.hsplit(x, 2)),
        examples=((((3, 4),), {}), (((4,),), {})),
        arity=1,
        draw=_even_draw(lambda n: 1 if n > 1 else 0, 1),
    ),
    OpCase(
        "vsplit",
        lambda x: _pieces(tg.vsplit(x, [1])),
        lambda x: _np_pieces(np.vsplit(x, [1])),
        examples=((((3, 4),), {}),),
        arity=1,
        draw=lambda: _one_shape(lambda s: st.just({}), 2),
    ),
    OpCase(
        "dsplit",
        lambda x: _pieces(tg.dsplit(x, 2)),
        lambda x: _np_pieces(np.dsplit(x, 2)),
        examples=((((2, 3, 4),), {}),),
        arity=1,
        draw=_even_draw(lambda n: 2, 3),
    ),
    OpCase(
        "tile",
        tg.tile,
        np.tile,
        examples=((((3,),), {"reps": 2}), (((2, 3),), {"reps": (2, 1, 3)}), (((2, 3, 2),), {"reps": (2,)})),
        arity=1,
        draw=_tile_draw,
    ),
    OpCase(
        "repeat",
        tg.repeat,
        np.repeat,
        examples=(
            (((3, 4),), {"repeats": 2}),
            (((3, 4),), {"repeats": [1, 0, 3], "axis": 0}),
            (((2, 3),), {"repeats": 3, "axis": -1}),
        ),
        arity=1,
        draw=_repeat_draw,
    ),
    OpCase(
        "meshgrid",
        _meshgrid,
        _np_meshgrid,
        examples=((((3,), (2,)), {}), (((3,), (2,), (4,)), {"indexing": "ij"}), (((2,), (3,)), {"sparse": True})),
        arity=2,
        draw=_meshgrid_draw,
    ),
    OpCase(
        "broadcast_arrays",
        lambda x, y: _pieces(tg.broadcast_arrays(x, y)),
        lambda x, y: _np_pieces(np.broadcast_arrays(x, y)),
        examples=((((3, 1), (4,)), {}), (((), (2, 3)), {})),
        arity=2,
        broadcasting=True,
    ),
)
