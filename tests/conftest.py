"""Shared fixtures and settings.

- ``backend`` runs a test once per array backend (see tests/backends.py).
- Hypothesis profiles: ``ci`` (derandomized, more examples, no deadline) when the environment sets ``CI``, as
  ``.ci/run`` does in CI; otherwise ``dev``, a fast run for local work; ``thorough`` for a long local hunt.
  ``HYPOTHESIS_PROFILE=<name>`` picks one explicitly. Property tests scale their costlier example counts
  from the loaded profile's ``max_examples``.
"""

import os

from backends import backend, other_backend  # noqa: F401  (the fixtures, for every test file)
from hypothesis import HealthCheck, settings

# Row files are imported by op_table (which they import in turn): collecting them for doctests first would
# import them before op_table, which then finds them half-initialised.
collect_ignore_glob = ["op_rows_*.py"]

settings.register_profile(
    "ci",
    max_examples=30,  # beside the op table's fixed cases; the whole CI run stays within 15 minutes on 2 cores
    derandomize=True,  # the same examples on every run: a red CI build is reproducible
    database=None,
    deadline=None,  # shared 2-core machines: timing is not a property
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=12, deadline=None)
settings.register_profile("thorough", max_examples=400, deadline=None)  # a deep local hunt, minutes not seconds
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_configure(config):
    config.addinivalue_line("markers", "backend: runs once per array backend (tests/backends.py)")


def pytest_collection_modifyitems(items):
    for item in items:
        if {"backend", "other_backend"} & set(getattr(item, "fixturenames", ())):
            item.add_marker("backend")
