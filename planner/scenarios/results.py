"""Result files of runs: Parquet tables under MEDIA_ROOT, written atomically.

A result is written into a fresh hidden folder and renamed into place with ``os.replace``, so
readers see either no folder or a complete one. Each attempt of a run writes its own folder
(``results/run-<id>-a<attempt>``), so an attempt that lost the race never touches the files
of the one that won. Reused results share the folder of the run they came from.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings

from simulation.metrics import JOB_COLUMNS
from simulation.metrics import RunResult as SimRunResult

RESULTS_FOLDER = "results"
JOBS_FILE = "jobs.parquet"
TIMESERIES_FILE = "timeseries.parquet"
SUMMARY_FILE = "summary.json"


def _absolute(directory: str) -> Path:
    return Path(settings.MEDIA_ROOT) / directory


def _table(rows: list[dict[str, Any]], empty_columns: tuple[str, ...]) -> pa.Table:
    if not rows:
        return pa.table({name: pa.array([], pa.float64()) for name in empty_columns})
    return pa.Table.from_pylist(rows)


def result_write(*, run_id: int, attempt: int, result: SimRunResult) -> str:
    """Write summary, jobs and time series; returns the folder relative to MEDIA_ROOT."""
    directory = f"{RESULTS_FOLDER}/run-{run_id}-a{attempt}"
    final = _absolute(directory)
    partial = final.parent / f".partial-{uuid.uuid4().hex}"
    partial.mkdir(parents=True)
    try:
        (partial / SUMMARY_FILE).write_text(json.dumps(result.summary, sort_keys=True))
        pq.write_table(_table(result.jobs, JOB_COLUMNS), partial / JOBS_FILE)
        pq.write_table(_table(result.timeseries, ("time",)), partial / TIMESERIES_FILE)
        if final.exists():  # a complete folder from an attempt whose database write failed
            shutil.rmtree(final)
        os.replace(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return directory


def result_frames(*, directory: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-job and time-series tables of a result folder."""
    folder = _absolute(directory)
    jobs = pq.read_table(folder / JOBS_FILE).to_pandas()
    timeseries = pq.read_table(folder / TIMESERIES_FILE).to_pandas()
    return jobs, timeseries


def result_remove(*, directory: str) -> None:
    shutil.rmtree(_absolute(directory), ignore_errors=True)
