"""Which trace format a file is in, and reading any of them into a Workload.

The CLI and the upload form share this entry point: the header decides the format (units
included), and ``format=`` overrides it when a header is ambiguous or missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from simulation.errors import InputError
from simulation.workloads._rows import LoadedWorkload, Table, read_text_file
from simulation.workloads.canonical import parse_canonical
from simulation.workloads.importers import PAI_COLUMNS, TABLE_IMPORTERS, import_philly_json

FORMATS = ("canonical", "tiresias", "muri", "philly_summary", "pollux_workload",
           "philly_json", "helios", "pai")
_PAI_STATUSES = frozenset({"terminated", "failed", "running", "waiting"})


def detect_format(header_columns: Sequence[str]) -> str:
    """Name the trace format from a CSV's first row (a header, or PAI's headerless data).

    Raises InputError for a row no importer recognises, and for files that are not job
    traces but look like neighbours of one (a cluster spec, PAI's job table).
    """
    cols = {c.strip().lower() for c in header_columns}
    if {"job_id", "num_gpus", "duration"} <= cols:
        return "canonical"
    if "resource_time_0" in cols and "num_gpu" in cols:
        return "muri"
    if {"num_gpu", "interval"} <= cols:
        return "tiresias"
    if {"timestamp", "duration", "num_gpus", "gpu_time"} <= cols:
        return "philly_summary"
    if {"application", "num_replicas"} <= cols:
        return "pollux_workload"
    if {"gpu_num", "node_num"} <= cols:
        return "helios"
    if "plan_gpu" in cols or _is_pai_task_row(header_columns):
        return "pai"
    if {"job_name", "inst_id", "start_time"} <= cols:
        raise InputError("this is PAI's job table, which has no GPU counts; load "
                         "pai_task_table.csv instead", line=1)
    if "num_switch" in cols:
        raise InputError("this is a cluster spec, not a job trace", line=1)
    if "job_id" in cols:  # meant as canonical: let its reader name the missing column
        return "canonical"
    raise InputError("unrecognised trace header (formats: " + ", ".join(FORMATS) + "); "
                     "a canonical trace needs job_id, submit_time, num_gpus, duration", line=1)


def _is_pai_task_row(cells: Sequence[str]) -> bool:
    return len(cells) == len(PAI_COLUMNS) and cells[3].strip().lower() in _PAI_STATUSES


def parse_trace_text(text: str, source: str = "upload", format: str | None = None,
                     ) -> LoadedWorkload:
    """Read a trace held in a string (an upload); `format` overrides detection."""
    if format is not None and format not in FORMATS:
        raise InputError(f"unknown format '{format}' (known: {', '.join(FORMATS)})",
                         source=source, field="format")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError("the file is empty", source=source)
    if format == "philly_json" or (format is None and text.lstrip().startswith("[")):
        return import_philly_json(text, source)
    table = Table(text, source)
    if format is None:
        try:
            format = detect_format(table.header)
        except InputError as exc:
            raise InputError(exc.message, source=source, line=table.header_line) from None
    if format == "pai" and "plan_gpu" not in table.header:
        table = Table(text, source, fieldnames=PAI_COLUMNS)
    if format == "canonical":
        return parse_canonical(table)
    return TABLE_IMPORTERS[format](table)


def load_trace(path: str | Path, format: str | None = None) -> LoadedWorkload:
    """Read a trace file in any supported format (``.json`` means a Philly job log)."""
    path = Path(path)
    text = read_text_file(path)
    if format is None and path.suffix.lower() == ".json":
        format = "philly_json"
    return parse_trace_text(text, str(path), format)
