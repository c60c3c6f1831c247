"""Measurement hygiene for benchmarks on a shared machine: allocator, core and BLAS threads pinned, clocks, and
a description of the environment to print beside the figures.

Call :func:`cap_blas_threads_by_env` before NumPy is first imported (BLAS reads its thread count once, when it
loads); everything else works at any time. This module imports NumPy only inside functions, for that reason.

>>> from benchmarks import hygiene
>>> sorted(hygiene.CLOCKS)
['cpu', 'wall']
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_env_capped = False

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h
MMAP_THRESHOLD = 32 * 2**20  # glibc's maximum on 64-bit: every array of these workloads comes from the heap
TRIM_THRESHOLD = 256 * 2**20  # freed heap memory is kept for reuse instead of being returned at once

CLOCKS = {
    "wall": time.perf_counter,
    # CPU time of the whole process: not inflated while the scheduler runs someone else's work on our core, but it
    # adds up every thread's time, so it is meaningful with --pin (one BLAS thread), not with several threads.
    "cpu": time.process_time,
}


def cap_blas_threads_by_env() -> bool:
    """Set ``OMP/OPENBLAS/MKL/BLIS_NUM_THREADS=1``; True if NumPy was not imported yet (so that it takes effect)."""
    global _env_capped
    _env_capped = "numpy" not in sys.modules
    for var in THREAD_VARS:
        os.environ[var] = "1"
    return _env_capped


def pin_allocator() -> str:
    """Fix glibc's mmap and trim thresholds (which glibc otherwise moves as the program runs); say what was done."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = (
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        )
    except (OSError, AttributeError):
        return "not glibc: allocator left as it is"
    if not ok:
        return "mallopt refused: allocator left as it is"
    return f"glibc mallopt M_MMAP_THRESHOLD={MMAP_THRESHOLD >> 20} MiB, M_TRIM_THRESHOLD={TRIM_THRESHOLD >> 20} MiB"


def pin_to_one_core(cpu: int | None) -> str:
    """Run on one core with one BLAS thread (and one PyTorch thread); say how the BLAS cap was applied."""
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    how = []
    if _env_capped:
        how.append(f"{'/'.join(THREAD_VARS)}=1 set before NumPy was imported")
    try:
        from threadpoolctl import threadpool_limits

        pin_to_one_core.limits = threadpool_limits(limits=1)  # kept: the limit lasts as long as the object
        how.append("threadpoolctl.threadpool_limits(1)")
    except ImportError:
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
        how.append("torch.set_num_threads(1)")
    return f"pinned to CPU {cpu}; BLAS threads capped by: {', '.join(how) or 'nothing (NumPy was imported first)'}"


def environment(notes: list[str]) -> list[str]:
    """Lines describing what the figures were measured on."""
    import numpy as np

    lines = [
        f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"CPU: {_cpu_model()}; {os.cpu_count()} logical CPUs, this process may use {len(os.sched_getaffinity(0))}; "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"NumPy {np.__version__}; BLAS: {_blas()}",
    ]
    for name in ("tapegrad", "autograd", "torch"):
        mod = sys.modules.get(name)
        if mod is not None:
            extra = f", {mod.get_num_threads()} threads" if name == "torch" else ""
            extra += f", commit {_commit()}" if name == "tapegrad" else ""
            lines.append(f"{name} {_version(name)}{extra}")
    return lines + notes


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return getattr(sys.modules[dist], "__version__", "?")


def _commit() -> str:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _blas() -> str:
    import numpy as np

    try:
        from threadpoolctl import threadpool_info

        found = [
            f"{i['internal_api']} {i.get('version')} (kernel {i.get('architecture')}, {i['num_threads']} threads, "
            f"{os.path.basename(i['filepath'])})"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        ]
        if found:
            return "; ".join(found)
    except ImportError:
        pass
    try:  # without threadpoolctl: NumPy's build configuration names the library, not the kernel or threads
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')} (install threadpoolctl to see its kernel and threads)"
    except Exception:  # noqa: BLE001 (older NumPy: no dict mode)
        return "unknown (install threadpoolctl)"


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import cli

    sys.exit(
        cli.library_main(
            __doc__, "benchmarks/hygiene.py", "python -m benchmarks.speed (its measurement hygiene lives here)"
        )
    )
