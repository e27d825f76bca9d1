"""The HTML page kit at the door, for the agent side's page (`agent_eval/html.py`): the same kit the report page of
stored runs uses (`storage/html_page.py`: escaping, the sortable table, the shared style and sorting script, the
page shell, the atomic write). Light: it imports no JAX."""

from sfbench_jax.storage.html_page import SORT_SCRIPT, STYLE, esc, page_html, sortable_table, write_page

__all__ = ["SORT_SCRIPT", "STYLE", "esc", "page_html", "sortable_table", "write_page"]
