"""What every benchmark's command line shares: help that shows the defaults, where outputs go, progress bars.

- :func:`parser`: an ``argparse`` parser whose ``--help`` shows each flag's default and runs nothing.
- Outputs go to ``--out`` (default: a folder under the system's temporary directory, never the checkout);
  ``--update-docs`` writes the committed copies under ``docs/`` instead, and only then.
- :func:`progress`: a tqdm bar on standard error (the ``bench`` extra installs tqdm; without it, nothing is shown).

>>> from benchmarks import cli
>>> p = cli.parser("python -m benchmarks.demo", "A demo.")
>>> cli.add_output_flags(p, "demo")
>>> args = p.parse_args([])
>>> args.out.endswith("demo"), args.update_docs
(True, False)
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A parser with the module docstring's first paragraph as description and every default shown."""
    paragraphs = doc.strip().split("\n\n")
    return argparse.ArgumentParser(
        prog=prog,
        description=paragraphs[0],
        epilog="\n\n".join(paragraphs[1:]) or None,
        formatter_class=RawDefaultsFormatter,
    )


class RawDefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each flag's help; the description and epilog keep their line breaks."""


def default_out(name: str) -> str:
    """``<temporary directory>/tapegrad/<name>``: outside any checkout, the same on every run."""
    return str(pathlib.Path(tempfile.gettempdir()) / "tapegrad" / name)


def add_output_flags(p: argparse.ArgumentParser, name: str, docs_what: str = "the committed results") -> None:
    p.add_argument("--out", default=default_out(name), help="folder for the results (created if needed)")
    p.add_argument(
        "--update-docs",
        action="store_true",
        help=f"write {docs_what} under docs/ instead of --out (the one way to overwrite committed files)",
    )


def replace_between_markers(path: pathlib.Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- NAME -->`` and ``<!-- end NAME -->`` in ``path`` with ``body``."""
    text = path.read_text()
    pattern = re.compile(rf"(<!-- {re.escape(name)}\b[^>]*-->\n)(.*?)(<!-- end {re.escape(name)} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path} has no <!-- {name} --> ... <!-- end {name} --> markers to write between")
    path.write_text(pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text, count=1))


@contextlib.contextmanager
def progress(total: int, desc: str, unit: str = "step", disable: bool = False):
    """A tqdm bar on stderr (``bar.update()``, ``bar.set_description()``); a silent stand-in without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or disable:
        yield _NoBar()
        return
    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def write(self, text: str) -> None:
        print(text, file=sys.stderr)


def library_main(module_doc: str, prog: str, used_by: str) -> int:
    """The command line of a module that is a part of the benchmarks rather than one: it says so."""
    p = parser(prog, module_doc)
    p.parse_args()
    print(f"{prog} is a part of the benchmarks, not one: run {used_by}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(library_main(__doc__, "benchmarks/cli.py", "python -m benchmarks.memory or python -m benchmarks.speed"))
