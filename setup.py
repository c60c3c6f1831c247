"""The one thing setup.cfg cannot declare: the engine's optional compiled hot path (tapegrad/core/speedups.py).

It is built where a C compiler is and skipped where none is (``optional``); the engine uses it only with
``TAPEGRAD_SPEEDUPS=1``. Everything else about the package is in setup.cfg.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tapegrad.core.native", ["tapegrad/core/native.c"], optional=True)])
