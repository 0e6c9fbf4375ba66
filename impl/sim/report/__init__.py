"""Reports of runs, shared by every layer that shows one: the text timeline of a trace (``rmqha show``), the SVG
timeline, the charts' pieces (``draw``: ticks, label lanes, legends, the line chart), the formatting of values
(``fmt``) and the HTML pieces of the fuzz campaign's report (``rmqha.spark_fuzz.report``), of the cluster test's
report (``rmqha.cluster.report``) and of a real RocketMQ run's report (``rmqha.real.report``)."""

from .draw import line_chart
from .fmt import DASH, cell, members, offset, partition_label, seconds
from .html import STYLE, escape, page_head, table
from .svg import timeline_data, timeline_svg
from .text import render, timeline

__all__ = ["DASH", "STYLE", "cell", "escape", "line_chart", "members", "offset", "page_head", "partition_label",
           "render", "seconds", "table", "timeline", "timeline_data", "timeline_svg"]
