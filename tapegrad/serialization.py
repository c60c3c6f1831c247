"""Checkpoints: ``save(obj, path)`` and ``load(path)`` for state dicts, in NumPy's ``.npz`` format, no pickle.

What can be saved: nested dicts (string or integer keys), lists and tuples of NumPy arrays, NumPy scalars,
Python numbers, strings, booleans and None, which is what ``Module.state_dict()``, an optimizer's and a
scheduler's ``state_dict()`` and a generator's ``bit_generator.state`` are made of.

Format: each array is stored as its own ``.npy`` member (``a0``, ``a1``, ...); the nesting, the keys and
every non-array value are described by a small JSON document stored as a uint8 array under
``__tapegrad__``. Loading uses ``allow_pickle=False``, so a checkpoint can never run code.

Safety: ``save`` writes a temporary file in the target's directory, flushes and fsyncs it, then renames it
over the target (``os.replace`` is atomic): an interrupted save leaves the previous checkpoint intact.
``load`` reads and checks everything before returning; a truncated, corrupt or foreign file raises
:class:`CheckpointError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from ._tensor import Tensor
from .errors import CheckpointError

__all__ = ["save", "load", "CheckpointError"]

_HEADER = "__tapegrad__"
_FORMAT = "tapegrad-checkpoint"
_VERSION = 1
_MAX_DEPTH = 500  # state dicts nest a few levels; a structure this deep is damage, or refers to itself


def _encode(obj, arrays: dict, where: str, path=()):
    """The JSON description of ``obj``; arrays go to ``arrays`` and are referred to by name. ``path`` holds the
    ids of the containers above ``obj``, to refuse one that contains itself."""
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in path:
            raise ValueError(f"save: {where} contains itself; checkpoints hold trees, not cycles")
        if len(path) >= _MAX_DEPTH:
            raise ValueError(f"save: {where} is nested more than {_MAX_DEPTH} levels deep; flatten it first")
        path = (*path, id(obj))
    if isinstance(obj, Tensor):
        obj = obj.data
    if isinstance(obj, (np.ndarray, np.generic)):
        arr = np.asarray(obj)
        if arr.dtype.hasobject:
            raise TypeError(f"save: {where} is an object array, which would need pickle; convert it to numbers")
        name = f"a{len(arrays)}"
        arrays[name] = arr
        return {"array": name, "scalar": isinstance(obj, np.generic)}
    if obj is None or isinstance(obj, (bool, str)):
        return {"value": obj}
    if isinstance(obj, int):
        return {"int": str(obj)}  # as text: generator states hold 128-bit integers
    if isinstance(obj, float):
        return {"float": repr(obj)}  # repr round-trips exactly, inf and nan included
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"save: {where} has a key {k!r} of type {type(k).__name__}; keys must be str or int")
            items.append([k, _encode(v, arrays, f"{where}[{k!r}]", path)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{where}[{i}]", path) for i, v in enumerate(obj)]}
    raise TypeError(
        f"save: {where} is a {type(obj).__name__}; checkpoints hold dicts, lists, tuples, arrays, numbers, "
        "strings, booleans and None (save model.state_dict(), not the model)"
    )


def _decode(desc, arrays, depth=0):
    if depth > _MAX_DEPTH:
        raise ValueError(f"the structure is nested more than {_MAX_DEPTH} levels deep")
    if not isinstance(desc, dict) or len(desc) not in (1, 2):
        raise ValueError(f"bad structure entry {desc!r:.80}")
    if "array" in desc:
        name = desc["array"]
        if name not in arrays:
            raise ValueError(f"the structure names array {name!r}, which the file does not hold")
        arr = arrays[name]
        return arr[()] if desc.get("scalar") else arr
    ((kind, body),) = desc.items()
    if kind == "value":
        if body is not None and not isinstance(body, (bool, str)):
            raise ValueError(f"bad value {body!r:.80}")
        return body
    if kind == "int":
        return int(body)
    if kind == "float":
        return float(body)
    if kind == "dict":
        out = {}
        for k, v in body:
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise ValueError(f"bad key {k!r:.80}")
            out[k] = _decode(v, arrays, depth + 1)
        return out
    if kind == "list":
        return [_decode(v, arrays, depth + 1) for v in body]
    if kind == "tuple":
        return tuple(_decode(v, arrays, depth + 1) for v in body)
    raise ValueError(f"unknown structure kind {kind!r:.40}")


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777  # overwriting: keep the file's mode
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def save(obj, path: str | os.PathLike) -> None:
    """Write ``obj`` (a state dict, or a dict of them) to ``path`` atomically, as an ``.npz`` without pickle.

    The path is used as given (no ``.npz`` is appended). Nothing is written if ``obj`` holds something that
    cannot be saved, and an existing file at ``path`` stays as it was until the new one is complete.

    >>> import os, tempfile, numpy as np, tapegrad as tg
    >>> model = tg.nn.Linear(3, 1, rng=0)
    >>> opt = tg.optim.Adam(model.parameters())
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.npz")
    >>> tg.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    >>> tg.load(path)["epoch"]
    3
    """
    path = os.fspath(path)
    arrays: dict = {}
    desc = _encode(obj, arrays, "the object")
    header = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": desc}).encode()
    members = {_HEADER: np.frombuffer(header, dtype=np.uint8), **arrays}
    directory = os.path.dirname(os.path.abspath(path))
    prefix = f"{os.path.basename(path)}.{os.getpid()}."  # the writer's pid: a killed save's file can be found
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, _file_mode(path))  # mkstemp makes the file private; a checkpoint gets the usual mode
        with os.fdopen(fd, "wb") as f:
            np.savez(f, allow_pickle=False, **members)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _remove_abandoned(directory, os.path.basename(path))
    try:  # make the rename itself durable; not every platform lets a directory be opened
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _remove_abandoned(directory: str, name: str) -> None:
    """Delete the temporary files of saves to ``name`` whose process died before finishing (killed mid-save)."""
    for entry in os.listdir(directory):
        parts = entry[len(name) + 1 :].split(".") if entry.startswith(name + ".") and entry.endswith(".tmp") else []
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if pid == os.getpid():
            continue  # this process: a save still running in another thread
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(directory, entry))
            except OSError:
                pass
        except OSError:  # the process exists (owned by someone else): leave its file
            pass


def _check_sizes(path: str) -> None:
    """Refuse a member whose header declares more data than the member holds, before anything is allocated."""
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            with zf.open(info) as f:
                major, _ = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(f)
                needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
                held = info.file_size - f.tell()
            if needed > held:
                raise CheckpointError(
                    f"{path}: member {info.filename!r} declares an array of shape {shape} ({needed:,} bytes) but "
                    f"holds {held:,} bytes: the file is damaged or was crafted"
                )


def load(path: str | os.PathLike):
    """Read what :func:`save` wrote. Raises :class:`CheckpointError` for a file it did not write or that is damaged.

    Arrays come back as NumPy arrays (and NumPy scalars as NumPy scalars); tuples, lists, dicts and plain
    values as they were saved. Nothing is unpickled.

    >>> import os, tempfile, numpy as np, tapegrad as tg
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> tg.save({"w": np.arange(3.0), "lr": 0.1, "names": ["a", "b"]}, path)
    >>> tg.load(path)
    {'w': array([0., 1., 2.]), 'lr': 0.1, 'names': ['a', 'b']}
    """
    path = os.fspath(path)
    try:
        npz = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, MemoryError) as err:
        raise CheckpointError(f"{path} is truncated, corrupt or not a checkpoint: {err}") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise CheckpointError(f"{path} holds a single NumPy array (.npy), not a tapegrad checkpoint")
    try:
        with npz:
            _check_sizes(path)
            if _HEADER not in npz.files:
                raise CheckpointError(
                    f"{path} is an .npz file but not a tapegrad checkpoint (no {_HEADER} entry); "
                    "open it with numpy.load"
                )
            arrays = {name: npz[name] for name in npz.files}  # reads every member, checking its CRC
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, KeyError, MemoryError) as err:
        raise CheckpointError(f"{path} is truncated, corrupt or not a checkpoint: {err}") from None
    try:
        raw = arrays.pop(_HEADER)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError(f"the {_HEADER} entry is {raw.dtype} of shape {raw.shape}, not bytes")
        header = json.loads(raw.tobytes().decode())
        if header.get("format") != _FORMAT:
            raise ValueError(f"format {header.get('format')!r}")
        if header.get("version") != _VERSION:
            raise ValueError(f"version {header.get('version')!r}; this tapegrad reads version {_VERSION}")
        obj = _decode(header["tree"], arrays)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, RecursionError) as err:
        raise CheckpointError(f"{path}: its structure description is not valid: {err}") from None
    return obj
