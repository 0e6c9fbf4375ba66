"""HTML pieces shared by the kit's reports (the fuzz campaign's, the cluster test's and the real RocketMQ run's):
escaping, tables (every cell formatted by ``fmt.cell``: no Python repr reaches a page) and the page's head, so that
every report looks alike."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from .fmt import cell

STYLE = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}"
         "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}"
         "code{background:#f5f5f5;padding:1px 4px;overflow-wrap:anywhere}.bad{color:#c62828}.ok{color:#2e7d32}"
         "svg{max-width:100%;height:auto;display:block;margin:8px 0}.note{color:#555;font-size:13px}")


def escape(x: Any) -> str:
    """``str(x)``, escaped for HTML text and attribute values."""
    return html.escape(str(x), quote=True)


def table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain HTML table: a header row, then one row per item (every cell formatted by ``cell``, then escaped)."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def page_head(title: str, css: str = "") -> str:
    """The start of a self-contained report page (its ``<head>`` and the opening ``<body>``); ``css``: rules added
    to the shared style."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{STYLE}{css}"
            "</style></head><body>")
