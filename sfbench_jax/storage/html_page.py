"""The kit of the project's self-contained HTML pages, shared by the report page of stored runs (`report/html.py`)
and the agent evaluation's page (`agent_eval/html.py`, through `sfbench_jax.api.html_page`).

What lives here: escaping of stored text (`esc`), the sortable table (`sortable_table`), the style both pages share
(`STYLE`) and the few lines of script that sort a table by a click on its header (`SORT_SCRIPT`), the page shell
(`page_html`: inline style and script, nothing fetched when the page is viewed) and the atomic write of a page
(`write_page`, temporary file then rename). What does not: what a page shows (its sections, cells and numbers) and
the style and script of one page only; each page passes those to `page_html`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.storage.atomic import write_atomically

__all__ = ["SORT_SCRIPT", "STYLE", "esc", "page_html", "sortable_table", "write_page"]

#: The style of both pages; a page adds the classes of its own sections (`page_html(..., style=...)`).
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}caption{text-align:left;color:#555;padding:.3em 0}
th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top}th{background:#f4f4f4;cursor:pointer}
td[data-value]{text-align:right;font-variant-numeric:tabular-nums}.ci{color:#777;font-size:11px}
.note{color:#666;font-style:italic}.meta{color:#777}.scroll{overflow-x:auto;max-width:100%}
"""

#: Sorting: click a header of a `table.sortable`; numbers by the cell's `data-value`, text by its content; a second
#: click reverses.
SORT_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
var body=th.closest('table').tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
var up=th.dataset.order!=='asc';th.dataset.order=up?'asc':'desc';
var key=function(r){var c=r.children[i];if(!c)return '';var v=c.dataset.value;return v!==undefined&&v!==''?
parseFloat(v):c.textContent;};
Array.from(body.rows).sort(function(a,b){var x=key(a),y=key(b);var d=(typeof x==='number'&&typeof y==='number')?
x-y:String(x).localeCompare(String(y));return up?d:-d;}).forEach(function(r){body.appendChild(r);});});});
"""


def esc(value: Any) -> str:
    """Stored text, escaped for HTML (None is empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def sortable_table(table_id: str, headers: Sequence[str], rows: Sequence[str], caption: str = "") -> str:
    """A table whose headers sort it (`SORT_SCRIPT`), in a box that scrolls sideways when it is wide; `rows` are
    whole `<tr>` elements."""
    head = "".join(f'<th scope="col" title="sort">{esc(name)}</th>' for name in headers)
    caption_html = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="sortable" id="{esc(table_id)}">{caption_html}<thead><tr>{head}'
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def page_html(title: str, body: str, *, style: str = "", script: str = "") -> str:
    """A complete, self-contained page: `STYLE` and the page's own `style`, the body, then `SORT_SCRIPT` and the
    page's own `script`."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<style>{STYLE}{style}</style></head><body>{body}<script>{SORT_SCRIPT}{script}</script></body></html>")


def write_page(text: str, target: Path) -> Path:
    """Write a page to `target` atomically, in UTF-8 as its `<meta charset>` says (its folder made where missing);
    returns `target`."""
    return write_atomically(Path(target), lambda path: path.write_text(text, encoding="utf-8"))
