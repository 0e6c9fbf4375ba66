"""Reports of runs, shared by every layer that shows one: the text timeline of a trace (``rmqha show``), the SVG
timeline and the HTML pieces of the fuzz campaign's report (``rmqha.spark_fuzz.report``), of the cluster test's
report (``rmqha.cluster.report``) and of a real RocketMQ run's report (``rmqha.real.report``)."""

from .html import STYLE, escape, page_head, table
from .svg import timeline_data, timeline_svg
from .text import render, timeline

__all__ = ["STYLE", "escape", "page_head", "render", "table", "timeline", "timeline_data", "timeline_svg"]
