"""The one thing setup.cfg cannot declare: the engine's optional compiled hot path (tapegrad/speedups.py).

It is built where a C compiler is and skipped where none is (``optional``); the engine uses it only with
``TAPEGRAD_SPEEDUPS=1``. The module carries a digest of the source it was built from (``native.SOURCE``), so that
a checkout whose ``native.c`` changed since its last install is not run with the old build. Everything else about
the package is in setup.cfg.
"""

import hashlib
import pathlib

from setuptools import Extension, setup

SOURCE = "tapegrad/core/native.c"
DIGEST = hashlib.sha256((pathlib.Path(__file__).parent / SOURCE).read_bytes()).hexdigest()[:16]

setup(
    ext_modules=[
        Extension(
            "tapegrad.core.native", [SOURCE], define_macros=[("TAPEGRAD_NATIVE_SOURCE", f'"{DIGEST}"')], optional=True
        )
    ]
)
