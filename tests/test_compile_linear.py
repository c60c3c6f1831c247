"""The compiler's passes do work linear in the program: counted, never timed.

The work of :func:`tapegrad.compile.api.build` (every pass, the plan, the source) is the number of lines of
``tapegrad/compile/`` that Python runs (``sys.settrace``'s line events: a loop's body counts once per turn,
so a pass that scans a list inside a loop over the program counts the scan). Per traced op it must stay the
same when the program grows tenfold. On the passes this replaced (a scheduler that rescanned its ready
steps, an arena packer that compared each buffer with every one placed, a donation pass that walked the
program once per parameter) it grew from 20 to 200 cycles of the chain by 8% for the value and gradient
and 2.2x for a training step with a donated parameter; ``benchmarks/compile_time.py`` times it.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._tree import tree_flatten
from tapegrad.compile import api
from tapegrad.compile.trace import trace

COMPILE_DIR = str(pathlib.Path(api.__file__).parent)


def _chain(cycles):
    def chain(x, w):
        for _ in range(cycles):
            x = tg.tanh(x * w + 0.1)
        return x.sum()

    return chain


def _value_and_grad(cycles):
    return tg.value_and_grad(_chain(cycles)), (False, False)


def _sgd_step(cycles):
    """A training step on the chain whose parameter is donated: donation edges and fused updates run too."""
    grad = tg.value_and_grad(_chain(cycles), argnums=1)

    def step(x, w):
        loss, g = grad(x, w)
        return loss, w - 0.1 * g

    return step, (False, True)


def lines_run(fn, arrays, donated, arena_limit, where=(COMPILE_DIR,)) -> tuple:
    """(ops traced, lines of tapegrad/compile/ (or the files under ``where``) run while building the program of
    ``fn`` on ``arrays``)."""
    _, spec = tree_flatten((tuple(arrays), {}), static=True)
    graph, _, _ = trace(fn, arrays, spec)
    ops = len(graph.steps)
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(where) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        api.build(graph, donated, arena_limit=arena_limit)
    finally:
        sys.settrace(previous)
    return ops, count


@pytest.mark.parametrize("program", [_value_and_grad, _sgd_step])
@pytest.mark.parametrize("arena_limit", [None, 0])
def test_the_passes_work_per_op_does_not_grow_with_the_program(program, arena_limit):
    per_op = []
    for cycles in (20, 200):
        fn, donated = program(cycles)
        ops, count = lines_run(fn, [np.linspace(0.1, 0.4, 4), np.full(4, 0.9)], donated, arena_limit)
        per_op.append(count / ops)
    assert per_op[1] <= 1.03 * per_op[0], f"lines run per op: {per_op[0]:.0f} at 20 cycles, {per_op[1]:.0f} at 200"


def test_the_count_sees_a_quadratic_pass(monkeypatch):
    """The measure itself: a pass that rescans the program for each step is caught (so the test above can fail)."""
    real = api.dead_code

    def quadratic(graph):
        for n in graph.steps:
            for m in graph.steps:
                if m is n:
                    break
        real(graph)

    monkeypatch.setattr(api, "dead_code", quadratic)
    per_op = []
    for cycles in (20, 200):
        fn, donated = _value_and_grad(cycles)
        ops, count = lines_run(fn, [np.linspace(0.1, 0.4, 4), np.full(4, 0.9)], donated, None, (COMPILE_DIR, __file__))
        per_op.append(count / ops)
    assert per_op[1] > 1.5 * per_op[0]
