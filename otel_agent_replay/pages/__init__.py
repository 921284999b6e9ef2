"""Pages: a report or a comparison as one self-contained HTML page, with charts drawn by Chart.js
(embedded) from the data embedded in the page; nothing is fetched when it opens."""

from __future__ import annotations

from ._cases import case_section
from ._diff import diff_page
from ._html import CSP, chart_label, chart_library
from ._report import report_page

__all__ = ["CSP", "case_section", "chart_label", "chart_library", "diff_page", "report_page"]
