"""A release a user can follow: one version, ``tapegrad.__version__`` in tapegrad/__init__.py, which setup.cfg
reads and the installed metadata, the changelog and the documentation's wheel names all give."""

import configparser
import importlib.metadata
import pathlib
import re

import tapegrad

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _version() -> str:
    """The version as tapegrad/__init__.py writes it (setup.cfg reads it from there)."""
    source = (ROOT / "tapegrad" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"$', source, re.M).group(1)


def test_setup_cfg_reads_the_version_from_the_package():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["metadata"]["version"] == "attr: tapegrad.__version__", (
        "setup.cfg writes a version of its own: the package's is tapegrad.__version__ (version = attr: ...)"
    )


def test_the_package_reports_the_installed_version_from_its_metadata():
    installed = importlib.metadata.version("tapegrad")
    assert tapegrad.__version__ == _version(), (
        f"the imported tapegrad says __version__ = {tapegrad.__version__!r} but tapegrad/__init__.py says "
        f"{_version()}: an older copy of the package is imported"
    )
    assert tapegrad.__version__ == installed
    assert installed == _version(), (
        f"the installed metadata says {installed} but tapegrad/__init__.py says {_version()}: reinstall "
        "(python -m pip install -e .) after changing the version"
    )


def test_the_changelog_opens_with_the_unreleased_changes_then_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, re.M)
    assert headings, "CHANGELOG.md has no '## [version] - date' headings"
    released = [(v, date) for v, date in headings if v != "Unreleased"]
    assert released[0][0] == _version(), (
        f"the newest release in CHANGELOG.md is {released[0][0]}, tapegrad.__version__ is {_version()}"
    )
    assert all(date for _, date in released), "every released version has its date"
    assert "Unreleased" not in [v for v, _ in headings[1:]], "[Unreleased] comes first, once"
    sections = re.findall(r"^### (.+)$", changelog, re.M)
    assert set(sections) <= {"Added", "Changed", "Changed (breaking)", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_wheel_names_in_the_docs_are_this_version():
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for version in re.findall(r"tapegrad-(\d+\.\d+\.\d+)-[*a-z0-9]", page.read_text()):
            assert version == _version(), f"{page.relative_to(ROOT)} names the wheel of {version}, not {_version()}"
