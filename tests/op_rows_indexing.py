"""Op-table rows for tapegrad/ops/indexing.py, selection.py and creation.py: take_along_axis, its adjoint
scatter_along_axis and index_update (ops), and sort, partition, take, select, compress, extract, delete,
insert, full, full_like and index_add (composed of ops).

Indices repeat on purpose (the gradients must accumulate, or for ``index_update`` go to the last write only);
sort and partition draw distinct values, so no tie reorders within the finite-difference step.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_table import OpCase

import tapegrad as tg
from tapegrad import strategies as tgst


def _one_shape(kwargs_of, min_dims=0, max_dims=4):
    return tgst.shapes(min_dims=min_dims, max_dims=max_dims).flatmap(lambda s: st.tuples(st.just((s,)), kwargs_of(s)))


@st.composite
def _along_draw(draw):  # an input, an axis, and indices broadcasting against the input elsewhere
    s = draw(tgst.shapes(min_dims=1, max_dims=3))
    axis = draw(st.integers(0, len(s) - 1))
    shape = tuple(draw(st.integers(0, 3)) if i == axis else draw(st.sampled_from([1, n])) for i, n in enumerate(s))
    idx = draw(hnp.arrays(np.int64, shape, elements=st.integers(-s[axis], s[axis] - 1)))
    return s, axis, idx


@st.composite
def _take_along_draw(draw):
    s, axis, idx = draw(_along_draw())
    return (s,), {"indices": idx, "axis": axis - draw(st.sampled_from([0, len(s)]))}  # negative axes too


def _scatter_along_draw():
    def to_case(d):
        s, axis, idx = d
        idx = np.where(idx < 0, idx + s[axis], idx)
        out = np.broadcast_shapes(idx.shape, tuple(1 if i == axis else n for i, n in enumerate(s)))
        out = tuple(idx.shape[i] if i == axis else n for i, n in enumerate(out))
        return (out,), {"indices": np.broadcast_to(idx, out), "axis": axis, "shape": s}

    return _along_draw().map(to_case)


def _np_scatter_along(g, indices, axis, shape):
    out = np.zeros(shape, dtype=g.dtype)
    index = [np.arange(n).reshape((1,) * i + (n,) + (1,) * (len(shape) - i - 1)) for i, n in enumerate(shape)]
    index[axis] = indices
    np.add.at(out, tuple(index), g)
    return out


def _np_index_update(x, v, index):
    out = x.copy()
    positions = np.arange(x.size).reshape(x.shape)[index].reshape(-1)
    values = np.broadcast_to(v, np.zeros(x.shape)[index].shape).reshape(-1)
    for p, value in zip(positions, values):  # in order: the last write wins
        out.flat[p] = value
    return out


def _np_index_add(x, v, index):
    out = x.copy()
    np.add.at(out, index, np.broadcast_to(v, np.zeros(x.shape)[index].shape))
    return out


@st.composite
def _index_draw(draw):  # an input, an index (basic, integer arrays with repeats, a mask) and a value shape
    s = draw(tgst.shapes(min_dims=1, max_dims=3))
    index = draw(
        hnp.basic_indices(s) | hnp.integer_array_indices(s, result_shape=hnp.array_shapes(max_dims=2, max_side=4))
    )
    target = np.zeros(s)[index].shape
    v = draw(tgst.shapes_broadcasting_to(target))
    return (s, v), {"index": index}


def _sort_draw():
    return _one_shape(lambda s: st.fixed_dictionaries({"axis": st.none() | st.integers(-len(s), len(s) - 1)}), 1)


def _partition_draw():
    def kwargs(s):
        axis = st.integers(-len(s), len(s) - 1)
        return axis.flatmap(
            lambda a: (
                st.integers(0, s[a] - 1) | st.lists(st.integers(0, s[a] - 1), min_size=1, max_size=2, unique=True)
            ).map(lambda k: {"kth": k, "axis": a})
        )

    return _one_shape(kwargs, 1)


def _take_draw():
    def kwargs(s):
        n = int(np.prod(s, dtype=np.int64))
        flat = st.fixed_dictionaries(
            {"indices": hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2), elements=st.integers(-n, n - 1))}
        )
        if not s:
            return flat
        along = st.integers(-len(s), len(s) - 1).flatmap(
            lambda a: st.fixed_dictionaries(
                {
                    "indices": st.lists(st.integers(-3 * s[a], 3 * s[a]), max_size=4),
                    "axis": st.just(a),
                    "mode": st.sampled_from(["wrap", "clip"]),
                }
            )
        )
        return flat | along

    return _one_shape(kwargs, max_dims=3)


def _compress_draw():
    def kwargs(s):
        axis = st.none() | (st.integers(-len(s), len(s) - 1) if s else st.none())
        n = lambda a: int(np.prod(s)) if a is None else s[a]
        return axis.flatmap(lambda a: st.lists(st.booleans(), max_size=n(a)).map(lambda c: {"condition": c, "axis": a}))

    return _one_shape(kwargs)


def _select(c, x, y):  # distinct values keep c away from the thresholds (0.025 or more)
    return tg.select([c < -0.05, c > 0.05], [x, y * 2.0], default=c)


def _np_select(c, x, y):
    return np.select([c < -0.05, c > 0.05], [x, y * 2.0], default=c)


def _delete_draw():
    def kwargs(s):
        axis = st.none() | st.integers(-len(s), len(s) - 1)
        return axis.flatmap(lambda a: _obj(s, a).map(lambda obj: {"obj": obj, "axis": a}))

    return _one_shape(kwargs, 1, 3)


def _obj(s, axis):
    n = int(np.prod(s)) if axis is None else s[axis]
    return st.integers(-n, n - 1) | st.lists(st.integers(0, n - 1), max_size=3, unique=True) | st.just(slice(0, n, 2))


def _insert_draw():
    @st.composite
    def draw(draw):
        s = draw(tgst.shapes(min_dims=1, max_dims=3))
        axis = draw(st.none() | st.integers(-len(s), len(s) - 1))
        n = int(np.prod(s)) if axis is None else s[axis]
        if draw(st.booleans()):  # one position, values as many as drawn
            obj = draw(st.integers(0, n))
            rest = () if axis is None else s[: axis % len(s)] + s[axis % len(s) + 1 :]
            values = draw(st.sampled_from([(), (1,) + rest, (2,) + rest]))  # NumPy moves values' first axis to axis
        else:  # one value per position, broadcast
            obj = draw(st.lists(st.integers(0, n), min_size=1, max_size=3))
            values = draw(st.sampled_from([(), (1,)]))
        return (s, values), {"obj": obj, "axis": axis}

    return draw()


ROWS = (
    OpCase(
        "take_along_axis",
        ref=np.take_along_axis,
        examples=(
            (((3, 4),), {"indices": np.array([[0, 3, 3, 1]]), "axis": 1}),  # broadcast over the rows
            (((2, 3),), {"indices": np.array([[2, 2], [0, -1]]), "axis": -1}),
        ),
        draw=_take_along_draw,
    ),
    OpCase(
        "scatter_along_axis",
        ref=_np_scatter_along,
        examples=((((2, 3),), {"indices": np.array([[0, 0, 1], [2, 1, 2]]), "axis": 1, "shape": (2, 4)}),),
        draw=_scatter_along_draw,
    ),
    OpCase(
        "index_update",
        lambda x, v, index: tg.index_update(x, index, v),
        _np_index_update,
        examples=(
            (((4, 3), (3, 2)), {"index": (np.array([0, 2, 0]), slice(1, None))}),  # row 0 written twice
            (((5,), ()), {"index": np.array([1, 1, 4])}),
            (((4, 3), (3,)), {"index": 2}),
            (((3, 4), (1,)), {"index": (slice(None), np.array([3, 0, 3]))}),
        ),
        draw=_index_draw,
    ),
    OpCase(
        "index_add",
        lambda x, v, index: tg.index_add(x, index, v),
        _np_index_add,
        examples=(
            (((4, 3), (3, 2)), {"index": (np.array([0, 2, 0]), slice(1, None))}),
            (((5,), ()), {"index": np.array([1, 1, 4])}),
            (((3, 4), (1,)), {"index": (slice(None), np.array([3, 0, 3]))}),
        ),
        arity=2,
        draw=_index_draw,
    ),
    OpCase(
        "sort",
        tg.sort,
        np.sort,
        domain="distinct",
        examples=((((3, 4),), {}), (((3, 4),), {"axis": 0}), (((2, 3, 4),), {"axis": None})),
        arity=1,
        draw=_sort_draw,
        unsupported=("dask",),
    ),
    OpCase(
        "partition",
        tg.partition,
        np.partition,
        domain="distinct",
        examples=((((3, 5),), {"kth": 2}), (((4, 3),), {"kth": [0, 3], "axis": 0})),
        arity=1,
        draw=_partition_draw,
        unsupported=("array_api_strict", "dask"),  # argpartition
    ),
    OpCase(
        "take",
        tg.take,
        np.take,
        examples=(
            (((3, 4),), {"indices": [0, 11, 11, -1]}),
            (((3, 4),), {"indices": np.array([[0, 2], [2, 2]]), "axis": 1}),
            (((3, 4),), {"indices": [5, -4], "axis": 0, "mode": "wrap"}),
        ),
        arity=1,
        draw=_take_draw,
        unsupported=("dask",),
    ),
    OpCase(
        "select",
        _select,
        _np_select,
        domain="distinct",
        examples=((((3, 4), (3, 4), (4,)), {}), (((2, 1), (1, 3), ()), {})),
        arity=3,
        broadcasting=True,
    ),
    OpCase(
        "compress",
        lambda x, condition, **k: tg.compress(condition, x, **k),
        lambda x, condition, **k: np.compress(condition, x, **k),
        examples=(
            (((3, 4),), {"condition": [True, False, True, True], "axis": 1}),
            (((2, 2),), {"condition": [False, True, True]}),
            (((4, 2),), {"condition": [True, False, True], "axis": 0}),  # shorter than the axis
        ),
        arity=1,
        draw=_compress_draw,
    ),
    OpCase(
        "extract",
        lambda x, condition: tg.extract(condition, x),
        lambda x, condition: np.extract(condition, x),
        examples=((((3, 4),), {"condition": np.arange(12).reshape(3, 4) % 3 == 1}),),
        arity=1,
        draw=lambda: tgst.shapes().flatmap(
            lambda s: st.tuples(st.just((s,)), hnp.arrays(bool, s).map(lambda c: {"condition": c}))
        ),
    ),
    OpCase(
        "delete",
        tg.delete,
        np.delete,
        examples=(
            (((3, 4),), {"obj": 1, "axis": 1}),
            (((3, 4),), {"obj": [0, 5, 7]}),
            (((3, 4),), {"obj": slice(0, 3, 2), "axis": 0}),
        ),
        arity=1,
        draw=_delete_draw,
        unsupported=("dask",),
    ),
    OpCase(
        "insert",
        lambda x, v, **k: tg.insert(x, values=v, **k),
        lambda x, v, **k: np.insert(x, values=v, **k),
        examples=(
            (((3, 4), ()), {"obj": 1}),
            (((3, 4), (2, 3)), {"obj": 2, "axis": 1}),
            (((3, 4), (1,)), {"obj": [0, 2, 2], "axis": 0}),
        ),
        arity=2,
        draw=_insert_draw,
        unsupported=("dask",),
    ),
    OpCase(
        "full",
        lambda v: tg.full((2, 3), v),
        lambda v: np.full((2, 3), v),
        examples=((((),), {}), (((3,),), {})),
        arity=1,
        draw=lambda: st.tuples(st.tuples(tgst.shapes_broadcasting_to((2, 3))), st.just({})),
    ),
    OpCase(
        "full_like",
        lambda a, v: tg.full_like(a, v),
        lambda a, v: np.full_like(a, v),
        examples=((((2, 3), ()), {}), (((2, 3), (3,)), {})),
        arity=2,
        constant_inputs=(0,),  # only its shape and dtype are used
        draw=lambda: tgst.shapes().flatmap(
            lambda s: st.tuples(st.tuples(st.just(s), tgst.shapes_broadcasting_to(s)), st.just({}))
        ),
    ),
)
