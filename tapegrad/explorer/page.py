"""The explorer's page: one HTML file, its script and style inline (``explorer.js``, ``explorer.css`` beside this
module), its numbers a JavaScript literal (NaN and infinities are JavaScript's own ``NaN`` and ``Infinity``)."""

from __future__ import annotations

import html
import json
import pathlib

__all__ = ["render_page"]

_HERE = pathlib.Path(__file__).parent


def _asset(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


def _literal(data) -> str:
    # allow_nan writes NaN/Infinity, which are JavaScript; "</" is escaped so no string can close the script.
    return json.dumps(data, allow_nan=True, separators=(",", ":")).replace("</", "<\\/")


def render_page(data: dict) -> str:
    """The page for the explorer's ``data`` (see :mod:`tapegrad.explorer`).

    >>> page = render_page({"title": "t", "rows": [], "leaves": [], "steps": [], "forward_bytes": []})
    >>> page.startswith("<!doctype html>"), "<script src" in page, "<link" in page
    (True, False, False)
    """
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tapegrad explorer: {html.escape(str(data.get('title', 'tape')))}</title>"
        f"<style>\n{_asset('explorer.css')}</style></head>\n"
        '<body><div id="app"></div>\n'
        f"<script>window.TAPE_DATA = {_literal(data)};</script>\n"
        f"<script>\n{_asset('explorer.js')}</script>\n"
        "</body></html>\n"
    )
