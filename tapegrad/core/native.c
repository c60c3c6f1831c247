/* The engine's hot path in C: the optional twin of core/record.py's one- and two-input fast paths and of
 * core/replay.py's plain walk.
 *
 * tapegrad is pure Python, and these Python functions are the reference: this file does what they do, step
 * for step, and nothing more. The common case runs here; everything else (an input that is not a NumPy array,
 * an op with several outputs, a joint rule, an in-place check, a further contribution to a cotangent) calls
 * back into the Python helpers that core/record.py and core/replay.py hand over (bind_recorder, bind_replay).
 * It is used only when asked for (TAPEGRAD_SPEEDUPS=1, see tapegrad/speedups.py), and the test suite runs the
 * engine's tests both ways (tests/test_speedups.py).
 *
 * References follow the Python: a value the Python holds in a local is held here too, for as long, because
 * the in-place accumulation of cotangents (replay._add) decides from reference counts whether a buffer is
 * shared.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* the digest of this file when it was built (setup.py), which tapegrad/speedups.py compares with this file */
#ifndef TAPEGRAD_NATIVE_SOURCE
#define TAPEGRAD_NATIVE_SOURCE "unknown"
#endif

/* -- what record.py hands over ----------------------------------------------------------------------------- */
static PyObject *Tensor, *Node, *Entry, *entry_died, *PLAIN, *ndarray, *asarray, *ACTIVE, *WATCHED, *CLOCK;
static PyObject *saved_values, *forward_error, *foreign_inputs, *NO_PARAMS, *TRACING;
/* -- what replay.py hands over ----------------------------------------------------------------------------- */
static PyObject *Outputs, *cotangents, *check_saved, *pull, *add, *unbroadcast, *IN_PLACE_FROM;

static PyObject *s_data, *s_grad, *s_requires_grad, *s_node, *s_tape, *s_rec, *s_ref, *s_append, *s_forward;
static PyObject *s_n, *s_size, *s_save, *s_save_ans, *s_nosave, *s_broadcast, *s_shape, *s_tick, *s_joint, *s_vjps, *s_pop;

/* A __slots__ field read and written at its offset (what the member descriptor does, without finding it),
 * for an object of exactly the class it was found on; anything else goes through getattr. */
typedef struct {
    Py_ssize_t offset; /* 0: unknown, use getattr */
    PyTypeObject *type;
} Slot;

static Slot T_data, T_grad, T_requires_grad, T_node, N_tape, E_rec, O_forward, O_save, O_save_ans, O_nosave;
static Slot O_broadcast, O_joint, O_vjps, C_tick, R_n;

static void find_slot(Slot *slot, PyObject *type, const char *name) {
    slot->offset = 0;
    slot->type = (PyTypeObject *)type;
    PyObject *d = PyObject_GetAttrString(type, name);
    if (d == NULL) {
        PyErr_Clear();
        return;
    }
    if (Py_TYPE(d) == &PyMemberDescr_Type) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY) && m->offset > 0) slot->offset = m->offset;
    }
    Py_DECREF(d);
}

/* The registry's Op class is above this layer: its fields are found on the first op seen. */
static void find_op_slots(PyObject *op) {
    PyObject *Op = (PyObject *)Py_TYPE(op);
    find_slot(&O_forward, Op, "forward");
    find_slot(&O_save, Op, "save");
    find_slot(&O_save_ans, Op, "save_ans");
    find_slot(&O_nosave, Op, "nosave");
    find_slot(&O_broadcast, Op, "broadcast");
    find_slot(&O_joint, Op, "joint");
    find_slot(&O_vjps, Op, "vjps");
}

/* obj.name, a new reference */
static inline PyObject *get(PyObject *obj, Slot *slot, PyObject *name) {
    if (slot->offset && Py_TYPE(obj) == slot->type) {
        PyObject *v = *(PyObject **)((char *)obj + slot->offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.name = v */
static inline int set(PyObject *obj, Slot *slot, PyObject *name, PyObject *v) {
    if (slot->offset && Py_TYPE(obj) == slot->type) {
        PyObject **p = (PyObject **)((char *)obj + slot->offset);
        PyObject *old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(obj, name, v);
}

#define HANDED(name) \
    do { \
        PyObject *v = PyDict_GetItemString(kw, #name); \
        if (v == NULL) { \
            PyErr_SetString(PyExc_TypeError, "missing " #name); \
            return NULL; \
        } \
        Py_INCREF(v); \
        Py_XSETREF(name, v); \
    } while (0)

static PyObject *bind_recorder(PyObject *self, PyObject *args, PyObject *kw) {
    if (kw == NULL) {
        PyErr_SetString(PyExc_TypeError, "bind_recorder takes keyword arguments");
        return NULL;
    }
    HANDED(Tensor); HANDED(Node); HANDED(Entry); HANDED(entry_died); HANDED(PLAIN); HANDED(ndarray);
    HANDED(asarray); HANDED(ACTIVE); HANDED(WATCHED); HANDED(CLOCK); HANDED(saved_values);
    HANDED(forward_error); HANDED(foreign_inputs); HANDED(NO_PARAMS); HANDED(TRACING);
    find_slot(&R_n, (PyObject *)Py_TYPE(TRACING), "n");
    find_slot(&T_data, Tensor, "_data");
    find_slot(&T_grad, Tensor, "grad");
    find_slot(&T_requires_grad, Tensor, "requires_grad");
    find_slot(&T_node, Tensor, "_node");
    find_slot(&N_tape, Node, "tape");
    find_slot(&E_rec, Entry, "rec");
    find_slot(&C_tick, (PyObject *)Py_TYPE(CLOCK), "tick");
    if (!PyType_Check(Tensor) || !PyType_Check(Node) || !PyContextVar_CheckExact(ACTIVE) ||
        !PyContextVar_CheckExact(WATCHED)) {
        PyErr_SetString(PyExc_TypeError, "bind_recorder: Tensor and Node are classes, ACTIVE and WATCHED context variables");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *bind_replay(PyObject *self, PyObject *args, PyObject *kw) {
    if (kw == NULL) {
        PyErr_SetString(PyExc_TypeError, "bind_replay takes keyword arguments");
        return NULL;
    }
    HANDED(Outputs); HANDED(cotangents); HANDED(check_saved); HANDED(pull); HANDED(add); HANDED(unbroadcast);
    HANDED(CLOCK); HANDED(IN_PLACE_FROM);
    Py_RETURN_NONE;
}

/* Tensor.__new__(Tensor), then the four fields every tensor has (as record.py's fast paths set them). */
static PyObject *new_tensor(PyObject *out) {
    PyTypeObject *tp = (PyTypeObject *)Tensor;
    PyObject *t = tp->tp_alloc(tp, 0);
    if (t == NULL) return NULL;
    if (set(t, &T_data, s_data, out) < 0 || set(t, &T_grad, s_grad, Py_None) < 0 ||
        set(t, &T_requires_grad, s_requires_grad, Py_False) < 0 || set(t, &T_node, s_node, Py_None) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

/* x._data for a Tensor, else x itself (borrowed, or a new reference in *owned). */
static PyObject *data_of(PyObject *x, PyObject **owned) {
    *owned = NULL;
    if (Py_TYPE(x) == (PyTypeObject *)Tensor) {
        *owned = get(x, &T_data, s_data);
        return *owned;
    }
    return x;
}

/* The key of a Tensor input on the tape (its node, or the leaf itself) and whether it needs a gradient;
 * a constant (not a Tensor) has no key. Returns -1 on error, else needs (0 or 1); *src is a new reference. */
static int key_of(PyObject *x, PyObject **src) {
    *src = NULL;
    if (Py_TYPE(x) != (PyTypeObject *)Tensor) return 0;
    PyObject *node = get(x, &T_node, s_node);
    if (node == NULL) return -1;
    if (node != Py_None) {
        *src = node;
        return 1;
    }
    Py_DECREF(node);
    Py_INCREF(x);
    *src = x;
    PyObject *rg = get(x, &T_requires_grad, s_requires_grad);
    if (rg == NULL) return -1;
    int needs = PyObject_IsTrue(rg);
    Py_DECREF(rg);
    if (needs != 0) return needs;
    PyObject *watched;
    if (PyContextVar_Get(WATCHED, NULL, &watched) < 0) return -1;
    if (watched == NULL) return 0;
    if (PyAnySet_Check(watched) && PySet_GET_SIZE(watched) == 0) { /* nothing watched: the common case */
        Py_DECREF(watched);
        return 0;
    }
    PyObject *id = PyLong_FromVoidPtr(x);
    if (id == NULL) {
        Py_DECREF(watched);
        return -1;
    }
    needs = PySequence_Contains(watched, id);
    Py_DECREF(id);
    Py_DECREF(watched);
    return needs;
}

/* op.forward(*datas), the error of a failed forward renamed as record._forward_error renames it. */
static PyObject *run_forward(PyObject *op, PyObject *const *datas, Py_ssize_t n, PyObject *const *inputs) {
    if (O_forward.type == NULL) find_op_slots(op);
    PyObject *forward = get(op, &O_forward, s_forward);
    if (forward == NULL) return NULL;
    PyObject *out = PyObject_Vectorcall(forward, datas, n, NULL);
    Py_DECREF(forward);
    if (out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL) PyException_SetTraceback(value, tb);
        PyObject *args = n == 1 ? PyTuple_Pack(1, inputs[0]) : PyTuple_Pack(2, inputs[0], inputs[1]);
        PyObject *renamed = args == NULL ? NULL : PyObject_CallFunctionObjArgs(forward_error, op, args, value, NULL);
        Py_XDECREF(args);
        if (renamed != NULL) {
            /* raise renamed from None: no cause shown, the original kept as its context */
            PyErr_SetObject((PyObject *)Py_TYPE(renamed), renamed);
            PyObject *t2, *v2, *tb2;
            PyErr_Fetch(&t2, &v2, &tb2);
            PyErr_NormalizeException(&t2, &v2, &tb2);
            PyException_SetContext(v2, value);  /* steals value */
            value = NULL;
            PyException_SetCause(v2, NULL);     /* sets __suppress_context__ */
            PyErr_Restore(t2, v2, tb2);
            Py_DECREF(renamed);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    if (Py_TYPE(out) != (PyTypeObject *)ndarray) { /* ufuncs give NumPy scalars for 0-d inputs */
        PyObject *arr = PyObject_CallOneArg(asarray, out);
        Py_DECREF(out);
        return arr;
    }
    return out;
}

/* What the entry saves of its inputs: all of them, none (op.nosave), or what record.saved_values picks. */
static PyObject *saved_of(PyObject *op, PyObject *datas_tuple) {
    PyObject *save = get(op, &O_save, s_save);
    if (save == NULL) return NULL;
    PyObject *vals;
    if (save == Py_True) {
        Py_INCREF(datas_tuple);
        vals = datas_tuple;
    } else if (save == Py_None) {
        vals = get(op, &O_nosave, s_nosave);
    } else {
        vals = PyObject_CallFunctionObjArgs(saved_values, op, datas_tuple, NULL);
    }
    Py_DECREF(save);
    return vals;
}

/* Entry(node, entry_died): weakref's __new__ does all of it (its __init__ only checks the arguments again) */
static PyObject *new_entry(PyObject *node) {
    PyTypeObject *tp = (PyTypeObject *)Entry;
    PyObject *args = PyTuple_Pack(2, node, entry_died);
    if (args == NULL) return NULL;
    PyObject *e = tp->tp_new(tp, args, NULL);
    Py_DECREF(args);
    return e;
}

/* One entry per active tape for the new tensor t (record.py's loop over `active`). */
static int append_entries(PyObject *t, PyObject *rec, PyObject *active, PyObject *top) {
    PyObject *node = ((PyTypeObject *)Node)->tp_alloc((PyTypeObject *)Node, 0);
    if (node == NULL) return -1;
    if (set(node, &N_tape, s_tape, top) < 0 || set(t, &T_requires_grad, s_requires_grad, Py_True) < 0 ||
        set(t, &T_node, s_node, node) < 0) {
        Py_DECREF(node);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(active);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *tape = PyTuple_GET_ITEM(active, k);
        PyObject *e = new_entry(node);
        if (e == NULL) goto fail;
        if (set(e, &E_rec, s_rec, rec) < 0) {
            Py_DECREF(e);
            goto fail;
        }
        PyObject *argv[4] = {tape, e, t, active};
        PyObject *r = PyObject_VectorcallMethod(s_append, argv, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(e);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(node);
    return 0;
fail:
    Py_DECREF(node);
    return -1;
}

/* The active tapes (a tuple, innermost last), and the innermost one's reference; 0: none active. */
static int active_tapes(PyObject **active, PyObject **top) {
    *top = NULL;
    if (PyContextVar_Get(ACTIVE, NULL, active) < 0) return -1;
    if (*active == NULL || !PyTuple_Check(*active) || PyTuple_GET_SIZE(*active) == 0) return 0;
    *top = PyObject_GetAttr(PyTuple_GET_ITEM(*active, PyTuple_GET_SIZE(*active) - 1), s_ref);
    return *top == NULL ? -1 : 1;
}

/* src is a node recorded under another tape than the innermost one: record._foreign_inputs decides. */
static int foreign(PyObject *src, PyObject *x, PyObject *top, int *is_foreign) {
    *is_foreign = 0;
    if (src == x) return 0;
    PyObject *tape = get(src, &N_tape, s_tape);
    if (tape == NULL) return -1;
    *is_foreign = tape != top;
    Py_DECREF(tape);
    return 0;
}

static PyObject *epoch_now(void) { return get(CLOCK, &C_tick, s_tick); }

/* An input recorded under another tape than the innermost one: record._foreign_inputs decides. */
static int report_foreign(PyObject *op, PyObject *srcs, PyObject *top, PyObject *active) {
    PyObject *r = PyObject_CallFunctionObjArgs(foreign_inputs, op, srcs, top, active, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* The record tuple (op, srcs, saved, ans, shapes, params, epoch, mask) of core/node.py */
static PyObject *make_record(PyObject *op, PyObject *datas, PyObject *srcs, PyObject *out, PyObject *shapes, long mask) {
    PyObject *vals = saved_of(op, datas);
    if (vals == NULL) return NULL;
    PyObject *save_ans = get(op, &O_save_ans, s_save_ans);
    int keep_ans = save_ans == NULL ? -1 : PyObject_IsTrue(save_ans);
    Py_XDECREF(save_ans);
    PyObject *epoch = epoch_now();
    PyObject *bits = PyLong_FromLong(mask);
    PyObject *rec = NULL;
    if (keep_ans >= 0 && epoch && bits)
        rec = PyTuple_Pack(8, op, srcs, vals, keep_ans ? out : Py_None, shapes, NO_PARAMS, epoch, bits);
    Py_DECREF(vals);
    Py_XDECREF(epoch);
    Py_XDECREF(bits);
    return rec;
}

static int shape_differs(PyObject *d, PyObject *oshape) {
    PyObject *shape = PyObject_GetAttr(d, s_shape);
    if (shape == NULL) return -1;
    int ne = PyObject_RichCompareBool(shape, oshape, Py_NE);
    Py_DECREF(shape);
    return ne;
}

static PyObject *shape_or_none(PyObject *d) {
    PyObject *shape = PyObject_GetAttr(d, s_shape);
    if (shape == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return shape;
}

/* The input shapes an entry keeps when an input that needs a gradient was broadcast (else None). */
static PyObject *broadcast_shapes(PyObject *op, PyObject *out, PyObject *dx, PyObject *dy, int bx, int by) {
    PyObject *flag = get(op, &O_broadcast, s_broadcast);
    if (flag == NULL) return NULL;
    int broadcast = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (broadcast < 0) return NULL;
    if (!broadcast) Py_RETURN_NONE;
    PyObject *oshape = PyObject_GetAttr(out, s_shape);
    if (oshape == NULL) return NULL;
    int differs = 0;
    if (bx) differs = shape_differs(dx, oshape);
    if (differs == 0 && by) differs = shape_differs(dy, oshape);
    Py_DECREF(oshape);
    if (differs < 0) return NULL;
    if (!differs) Py_RETURN_NONE;
    PyObject *sx = shape_or_none(dx);
    PyObject *sy = sx == NULL ? NULL : shape_or_none(dy);
    PyObject *shapes = sy == NULL ? NULL : PyTuple_Pack(2, sx, sy);
    Py_XDECREF(sx);
    Py_XDECREF(sy);
    return shapes;
}

/* record._unary's and record._binary's fn after their guard, for the n (1 or 2) inputs xs: the tensor, or None
 * where apply() must run (an input that is not NumPy's). */
static PyObject *record_inputs(PyObject *op, PyObject *const *xs, Py_ssize_t n) {
    PyObject *owned[2] = {NULL, NULL}, *datas[2] = {NULL, NULL}, *keys[2] = {NULL, NULL};
    PyObject *t = NULL, *out = NULL, *active = NULL, *top = NULL, *srcs = NULL, *saved = NULL, *shapes = NULL;
    PyObject *rec = NULL;
    int needs[2] = {0, 0}, foreign_input = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        datas[i] = data_of(xs[i], &owned[i]);
        if (datas[i] == NULL) goto fail;
        int plain = PySet_Contains(PLAIN, (PyObject *)Py_TYPE(datas[i]));
        if (plain < 0) goto fail;
        if (!plain) {
            t = Py_NewRef(Py_None);
            goto done;
        }
    }
    out = run_forward(op, datas, n, xs);
    if (out == NULL) goto fail;
    t = new_tensor(out);
    if (t == NULL) goto fail;
    int any = active_tapes(&active, &top);
    if (any < 0) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) { /* a node (recorded), the leaf itself, or none (a constant) */
        int needed = key_of(xs[i], &keys[i]);
        if (needed < 0) goto fail;
        needs[i] = needed && keys[i] != NULL;
    }
    if (!any || !(needs[0] || needs[1])) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        int is_foreign = 0;
        if (needs[i] && foreign(keys[i], xs[i], top, &is_foreign) < 0) goto fail;
        foreign_input |= is_foreign;
    }
    srcs = n == 1 ? PyTuple_Pack(1, keys[0] ? keys[0] : Py_None)
                  : PyTuple_Pack(2, keys[0] ? keys[0] : Py_None, keys[1] ? keys[1] : Py_None);
    saved = srcs == NULL ? NULL : (n == 1 ? PyTuple_Pack(1, datas[0]) : PyTuple_Pack(2, datas[0], datas[1]));
    if (saved == NULL || (foreign_input && report_foreign(op, srcs, top, active) < 0)) goto fail;
    shapes = n == 1 ? Py_NewRef(Py_None) : broadcast_shapes(op, out, datas[0], datas[1], needs[0], needs[1]);
    if (shapes == NULL) goto fail;
    rec = make_record(op, saved, srcs, out, shapes, needs[0] | needs[1] << 1);
    if (rec == NULL || append_entries(t, rec, active, top) < 0) goto fail;
done:
    for (Py_ssize_t i = 0; i < 2; i++) {
        Py_XDECREF(owned[i]);
        Py_XDECREF(keys[i]);
    }
    Py_XDECREF(out);
    Py_XDECREF(active);
    Py_XDECREF(top);
    Py_XDECREF(srcs);
    Py_XDECREF(saved);
    Py_XDECREF(shapes);
    Py_XDECREF(rec);
    return t;
fail:
    Py_CLEAR(t);
    goto done;
}

static PyObject *record_unary(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "record_unary(op, x)");
        return NULL;
    }
    return record_inputs(argv[0], argv + 1, 1);
}

static PyObject *record_binary(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "record_binary(op, x, y)");
        return NULL;
    }
    return record_inputs(argv[0], argv + 1, 2);
}

/* -- Tensor methods -----------------------------------------------------------------------------------------
 * A Tensor method or operator that is an op of one or two inputs (x.exp(), x * y, 2 - x), as a callable that
 * binds as a function does. Called with its inputs alone while nothing is traced, it records in C; anything
 * else, and the inputs record.py's fast paths pass to apply(), go to the Python function of its row. */
typedef struct {
    PyObject_HEAD
    PyObject *op;
    PyObject *function; /* the row's Python function: the fallback, and every attribute but these */
    int arity;
    int reflected; /* other <op> self: the op's inputs swapped */
    vectorcallfunc vectorcall;
} Method;

static int tracing(void) {
    PyObject *n = get(TRACING, &R_n, s_n);
    if (n == NULL) return -1;
    int on = PyObject_IsTrue(n);
    Py_DECREF(n);
    return on;
}

static PyObject *method_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Method *m = (Method *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs == m->arity) {
        int on = tracing();
        if (on < 0) return NULL;
        if (!on) {
            PyObject *swapped[2] = {args[nargs - 1], args[0]};
            PyObject *t = record_inputs(m->op, m->reflected ? swapped : args, m->arity);
            if (t != Py_None) return t;
            Py_DECREF(t);
        }
    }
    return PyObject_Vectorcall(m->function, args, nargsf, kwnames);
}

static PyObject *method_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *method_getattro(PyObject *self, PyObject *name) {
    PyObject *v = PyObject_GenericGetAttr(self, name);
    if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return v;
    PyErr_Clear();
    return PyObject_GetAttr(((Method *)self)->function, name);
}

static PyObject *method_forward(PyObject *self, void *name) {
    return PyObject_GetAttrString(((Method *)self)->function, (const char *)name);
}

static PyObject *method_repr(PyObject *self) {
    return PyUnicode_FromFormat("<compiled %R>", ((Method *)self)->function);
}

/* inspect.signature, help() and the docs see the row's Python function */
static PyObject *method_wrapped(PyObject *self, void *unused) {
    Py_INCREF(((Method *)self)->function);
    return ((Method *)self)->function;
}

static int method_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Method *)self)->op);
    Py_VISIT(((Method *)self)->function);
    return 0;
}

static int method_clear(PyObject *self) {
    Py_CLEAR(((Method *)self)->op);
    Py_CLEAR(((Method *)self)->function);
    return 0;
}

static void method_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    method_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyGetSetDef method_getset[] = {
    {"__doc__", method_forward, NULL, NULL, "__doc__"},
    {"__name__", method_forward, NULL, NULL, "__name__"},
    {"__qualname__", method_forward, NULL, NULL, "__qualname__"},
    {"__module__", method_forward, NULL, NULL, "__module__"},
    {"__wrapped__", method_wrapped, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tapegrad.core.native.Method",
    .tp_basicsize = sizeof(Method),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Method, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_get,
    .tp_getattro = method_getattro,
    .tp_getset = method_getset,
    .tp_repr = method_repr,
    .tp_traverse = method_traverse,
    .tp_clear = method_clear,
    .tp_dealloc = method_dealloc,
    .tp_doc = "A Tensor method that is an op of one or two inputs, recorded in C (tapegrad/speedups.py).",
};

/* method(op, function, arity, reflected) */
static PyObject *make_method(PyObject *self, PyObject *args) {
    PyObject *op, *function;
    int arity, reflected;
    if (!PyArg_ParseTuple(args, "OOip:method", &op, &function, &arity, &reflected)) return NULL;
    if (arity != 1 && arity != 2) {
        PyErr_SetString(PyExc_ValueError, "method: an op of one or two inputs");
        return NULL;
    }
    Method *m = PyObject_GC_New(Method, &MethodType);
    if (m == NULL) return NULL;
    Py_INCREF(op);
    m->op = op;
    Py_INCREF(function);
    m->function = function;
    m->arity = arity;
    m->reflected = reflected;
    m->vectorcall = method_call;
    PyObject_GC_Track((PyObject *)m);
    return (PyObject *)m;
}

/* -- the plain walk ---------------------------------------------------------------------------------------- */

/* grads.pop(key, None): a new reference, or NULL with no error when absent. */
static PyObject *dict_pop(PyObject *grads, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(grads, key);
    if (v == NULL) return NULL;
    Py_INCREF(v);
    if (PyDict_DelItem(grads, key) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* (mask >> i) & 1, for a mask of any size */
static int mask_bit(PyObject *mask, long long small, int big, Py_ssize_t i) {
    if (!big) return i < 63 ? (int)((small >> i) & 1) : 0;
    PyObject *shift = PyLong_FromSsize_t(i);
    PyObject *shifted = shift == NULL ? NULL : PyNumber_Rshift(mask, shift);
    Py_XDECREF(shift);
    if (shifted == NULL) return -1;
    PyObject *one = PyLong_FromLong(1);
    PyObject *bit = one == NULL ? NULL : PyNumber_And(shifted, one);
    Py_DECREF(shifted);
    Py_XDECREF(one);
    if (bit == NULL) return -1;
    int set = PyObject_IsTrue(bit);
    Py_DECREF(bit);
    return set;
}

/* vjp(xp, g, ans, *vals, **params) */
static PyObject *call_rule(PyObject *vjp, PyObject *xp, PyObject *g, PyObject *ans, PyObject *vals, PyObject *params,
                           int has_params) {
    PyObject *fast = PySequence_Fast(vals, "an entry's saved values are a sequence");
    if (fast == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    PyObject *result;
    if (!has_params && n <= 13) {
        PyObject *argv[16] = {xp, g, ans};
        for (Py_ssize_t k = 0; k < n; k++) argv[3 + k] = items[k];
        result = PyObject_Vectorcall(vjp, argv, 3 + n, NULL);
    } else {
        PyObject *args = PyTuple_New(3 + n);
        if (args == NULL) {
            Py_DECREF(fast);
            return NULL;
        }
        Py_INCREF(xp);
        PyTuple_SET_ITEM(args, 0, xp);
        Py_INCREF(g);
        PyTuple_SET_ITEM(args, 1, g);
        Py_INCREF(ans);
        PyTuple_SET_ITEM(args, 2, ans);
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_INCREF(items[k]);
            PyTuple_SET_ITEM(args, 3 + k, items[k]);
        }
        PyObject *kwargs = NULL;
        if (has_params) {
            kwargs = PyDict_New();
            if (kwargs == NULL || PyDict_Update(kwargs, params) < 0) {
                Py_XDECREF(kwargs);
                Py_DECREF(args);
                Py_DECREF(fast);
                return NULL;
            }
        }
        result = PyObject_Call(vjp, args, kwargs);
        Py_XDECREF(kwargs);
        Py_DECREF(args);
    }
    Py_DECREF(fast);
    return result;
}

/* replay._add: a small cotangent's further contribution makes a new array here (the common case of a leaf
 * used many times); a large one goes to replay._add, which may add in place. */
static int add_into(PyObject *grads, PyObject *key, PyObject *old, PyObject *g) {
    PyObject *size = PyObject_GetAttr(old, s_size);
    int small = size == NULL ? -1 : PyObject_RichCompareBool(size, IN_PLACE_FROM, Py_LT);
    Py_XDECREF(size);
    if (small < 0) return -1;
    if (small) {
        PyObject *sum = PyNumber_Add(old, g);
        int status = sum == NULL ? -1 : PyDict_SetItem(grads, key, sum);
        Py_XDECREF(sum);
        return status;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(add, grads, key, old, g, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* One entry's rules for the inputs that need a gradient, each result summed back to its input's shape and
 * added into the input's cotangent (replay._walk_plain's inner loop). */
static int run_rules(PyObject *op, PyObject *xp, PyObject *g, PyObject *ans, PyObject *srcs, PyObject *vals,
                     PyObject *shapes, PyObject *params, PyObject *mask, PyObject *grads) {
    if (O_vjps.type == NULL) find_op_slots(op);
    PyObject *vjps = get(op, &O_vjps, s_vjps);
    if (vjps == NULL) return -1;
    int overflow;
    long long small = PyLong_AsLongLongAndOverflow(mask, &overflow);
    if (small == -1 && PyErr_Occurred()) goto fail;
    int big = overflow != 0 || small < 0;
    int has_params = PyObject_IsTrue(params);
    if (has_params < 0) goto fail;
    PyObject *fast_srcs = PySequence_Fast(srcs, "an entry's inputs are a sequence");
    if (fast_srcs == NULL) goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast_srcs);
    for (Py_ssize_t i = 0; i < n; i++) {
        int set = mask_bit(mask, small, big, i);
        if (set < 0) goto fail_srcs;
        if (!set) continue;
        PyObject *src = PySequence_Fast_GET_ITEM(fast_srcs, i);
        PyObject *vjp = PySequence_GetItem(vjps, i);
        if (vjp == NULL) goto fail_srcs;
        PyObject *gi = call_rule(vjp, xp, g, ans, vals, params, has_params);
        Py_DECREF(vjp);
        if (gi == NULL) goto fail_srcs;
        if (gi == Py_None) {
            Py_DECREF(gi);
            continue;
        }
        if (shapes != Py_None) {
            PyObject *shape = PySequence_GetItem(shapes, i);
            if (shape == NULL) {
                Py_DECREF(gi);
                goto fail_srcs;
            }
            if (shape != Py_None) {
                PyObject *summed = PyObject_CallFunctionObjArgs(unbroadcast, xp, gi, shape, NULL);
                Py_DECREF(gi);
                gi = summed;
            }
            Py_DECREF(shape);
            if (gi == NULL) goto fail_srcs;
        }
        Py_INCREF(src);
        PyObject *old = PyDict_GetItemWithError(grads, src);
        int status;
        if (old == NULL) {
            status = PyErr_Occurred() ? -1 : PyDict_SetItem(grads, src, gi);
        } else { /* a further contribution; held as the Python holds it (replay._add counts references) */
            Py_INCREF(old);
            status = add_into(grads, src, old, gi);
            Py_DECREF(old);
        }
        Py_DECREF(src);
        Py_DECREF(gi);
        if (status < 0) goto fail_srcs;
    }
    Py_DECREF(fast_srcs);
    Py_DECREF(vjps);
    return 0;
fail_srcs:
    Py_DECREF(fast_srcs);
fail:
    Py_DECREF(vjps);
    return -1;
}

/* e(): the entry's output node, or None where it died (a new reference) */
static PyObject *live_node(PyObject *e) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *node;
    if (PyWeakref_GetRef(e, &node) < 0) return NULL;
    return node == NULL ? Py_NewRef(Py_None) : node;
#else
    PyObject *node = PyWeakref_GetObject(e);
    Py_XINCREF(node);
    return node;
#endif
}

/* walk_plain(entries, grads, xp, retain, kept): replay._walk_plain without optional steps (steps is None).
 * Returns None, or (position, op, error) where it raised. */
static PyObject *walk_plain(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "walk_plain(entries, grads, xp, retain, kept)");
        return NULL;
    }
    PyObject *entries = argv[0], *grads = argv[1], *xp = argv[2], *kept = argv[4];
    if (!PyList_Check(entries) || !PyDict_Check(grads) || !PyList_Check(kept)) {
        PyErr_SetString(PyExc_TypeError, "walk_plain: entries and kept are lists, grads a dict");
        return NULL;
    }
    int retain = PyObject_IsTrue(argv[3]);
    if (retain < 0) return NULL;
    PyObject *op = Py_None; /* the last op reached, as the Python's `op` (strong) */
    Py_INCREF(op);
    Py_ssize_t idx = PyList_GET_SIZE(entries) - 1;
    for (; idx >= 0; idx--) {
        if (idx >= PyList_GET_SIZE(entries)) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            goto fail;
        }
        PyObject *e = PyList_GET_ITEM(entries, idx);
        Py_INCREF(e);
        PyObject *rec = get(e, &E_rec, s_rec);
        if (rec == NULL) {
            Py_DECREF(e);
            goto fail;
        }
        if (rec == Py_None) {
            Py_DECREF(rec);
            Py_DECREF(e);
            continue;
        }
        PyObject *node = live_node(e);
        int status = node == NULL ? -1 : 0;
        if (status == 0 && !retain) status = set(e, &E_rec, s_rec, Py_None);
        Py_DECREF(e);
        if (status == 0) status = PyList_Append(kept, node);
        PyObject *g = NULL;
        if (status == 0) {
            g = dict_pop(grads, node);
            if (g == NULL && PyErr_Occurred()) status = -1;
        }
        if (status == 0 && g == NULL && Py_TYPE(node) == (PyTypeObject *)Outputs) {
            PyObject *pop = PyObject_GetAttr(grads, s_pop);
            g = pop == NULL ? NULL : PyObject_CallFunctionObjArgs(cotangents, node, pop, NULL);
            Py_XDECREF(pop);
            if (g == NULL) status = -1;
            else if (g == Py_None) Py_CLEAR(g);
        }
        Py_XDECREF(node);
        if (status < 0) {
            Py_XDECREF(g);
            Py_DECREF(rec);
            goto fail;
        }
        if (g == NULL) { /* nothing asked for depends on it */
            Py_DECREF(rec);
            continue;
        }
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 8) {
            PyErr_SetString(PyExc_ValueError, "an entry's record is a tuple of 8 fields");
            Py_DECREF(g);
            Py_DECREF(rec);
            goto fail;
        }
        PyObject *srcs = PyTuple_GET_ITEM(rec, 1), *vals = PyTuple_GET_ITEM(rec, 2), *ans = PyTuple_GET_ITEM(rec, 3);
        PyObject *shapes = PyTuple_GET_ITEM(rec, 4), *params = PyTuple_GET_ITEM(rec, 5);
        PyObject *epoch = PyTuple_GET_ITEM(rec, 6), *mask = PyTuple_GET_ITEM(rec, 7);
        Py_INCREF(PyTuple_GET_ITEM(rec, 0));
        Py_SETREF(op, PyTuple_GET_ITEM(rec, 0));
        PyObject *tick = epoch_now();
        status = tick == NULL ? -1 : PyObject_RichCompareBool(epoch, tick, Py_LT);
        Py_XDECREF(tick);
        if (status > 0) { /* something was changed in place since: was it what this entry saved? */
            PyObject *r = PyObject_CallFunctionObjArgs(check_saved, op, vals, ans, epoch, NULL);
            status = r == NULL ? -1 : 0;
            Py_XDECREF(r);
        }
        if (status == 0) {
            if (O_joint.type == NULL) find_op_slots(op);
            PyObject *flag = get(op, &O_joint, s_joint);
            int joint = flag == NULL ? -1 : PyObject_IsTrue(flag);
            Py_XDECREF(flag);
            if (joint < 0) {
                status = -1;
            } else if (joint) {
                PyObject *r = PyObject_CallFunctionObjArgs(pull, op, xp, g, ans, vals, rec, grads, Py_False, NULL);
                status = r == NULL ? -1 : 0;
                Py_XDECREF(r);
            } else {
                status = run_rules(op, xp, g, ans, srcs, vals, shapes, params, mask, grads);
            }
        }
        Py_DECREF(g);
        /* a failed entry's record goes to kept, as the Python walk's does: its inputs' entries stay as they were
         * until the tape has numbered the failure (a record freed here would free nodes only it held) */
        if (status < 0) { /* the rule's error stays the one reported */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            if (PyList_Append(kept, rec) < 0) PyErr_Clear();
            PyErr_Restore(type, value, tb);
        }
        Py_DECREF(rec); /* nothing of the entry outlives its step */
        if (status < 0) goto fail;
    }
    Py_DECREF(op);
    Py_RETURN_NONE;
fail: {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) PyException_SetTraceback(value, tb);
    PyObject *where = PyLong_FromSsize_t(idx);
    PyObject *result = where == NULL ? NULL : PyTuple_Pack(3, where, op, value ? value : Py_None);
    Py_XDECREF(where);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    Py_DECREF(op);
    return result;
}
}

static PyMethodDef methods[] = {
    {"bind_recorder", (PyCFunction)(void (*)(void))bind_recorder, METH_VARARGS | METH_KEYWORDS,
     "bind_recorder(**names): the classes, context variables and helpers of core/record.py the fast paths use."},
    {"bind_replay", (PyCFunction)(void (*)(void))bind_replay, METH_VARARGS | METH_KEYWORDS,
     "bind_replay(**names): the helpers of core/replay.py the plain walk calls back."},
    {"record_unary", (PyCFunction)(void (*)(void))record_unary, METH_FASTCALL,
     "record_unary(op, x): record._unary's fast path; None where apply() must run instead."},
    {"record_binary", (PyCFunction)(void (*)(void))record_binary, METH_FASTCALL,
     "record_binary(op, x, y): record._binary's fast path; None where apply() must run instead."},
    {"method", (PyCFunction)make_method, METH_VARARGS,
     "method(op, function, arity, reflected): a Tensor method recorded in C, falling back to function."},
    {"walk_plain", (PyCFunction)(void (*)(void))walk_plain, METH_FASTCALL,
     "walk_plain(entries, grads, xp, retain, kept): replay._walk_plain without optional steps."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tapegrad.core.native",
    "The engine's hot path in C, the optional twin of core/record.py's fast paths and core/replay.py's plain walk.",
    -1, methods,
};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit_native(void) {
    INTERN(s_data, "_data");
    INTERN(s_grad, "grad");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_node, "_node");
    INTERN(s_tape, "tape");
    INTERN(s_rec, "rec");
    INTERN(s_ref, "_ref");
    INTERN(s_append, "append");
    INTERN(s_forward, "forward");
    INTERN(s_save, "save");
    INTERN(s_save_ans, "save_ans");
    INTERN(s_nosave, "nosave");
    INTERN(s_broadcast, "broadcast");
    INTERN(s_shape, "shape");
    INTERN(s_tick, "tick");
    INTERN(s_joint, "joint");
    INTERN(s_vjps, "vjps");
    INTERN(s_pop, "pop");
    INTERN(s_n, "n");
    INTERN(s_size, "size");
    if (PyType_Ready(&MethodType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE", TAPEGRAD_NATIVE_SOURCE) < 0) Py_CLEAR(m);
    return m;
}
