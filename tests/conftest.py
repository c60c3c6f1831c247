"""Shared fixtures: ``backend`` runs a test once per array backend (see tests/backends.py)."""

from backends import backend  # noqa: F401  (the fixture, for every test file)


def pytest_configure(config):
    config.addinivalue_line("markers", "backend: runs once per array backend (tests/backends.py)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker("backend")
