"""CSV plumbing shared by every trace reader: physical line numbers and typed cells.

Every reader reports errors as (file, line, field) so the CLI can exit with code 2 and the
upload form can point at the offending cell. Line 1 is the header; blank lines are skipped
but still counted, so the numbers match what a user sees in an editor.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from simulation.errors import InputError
from simulation.limits import (
    MAX_GPUS_PER_JOB,
    MAX_JOB_SECONDS,
    MAX_JOBS,
    MAX_SUBMIT_SECONDS,
    printable,
    unstorable_char,
)
from simulation.model import JobSpec, Workload


def read_text_file(path: Path) -> str:
    """A trace, spec or load file as text (a BOM dropped), or `InputError` naming the file."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         source=str(path)) from None


_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


@dataclass(frozen=True, slots=True)
class LoadedWorkload(Workload):
    """A workload read from a file, with the rows that were deliberately not turned into jobs.

    `skipped` holds (reason, count) pairs, e.g. ("never started", 12) for Philly jobs without
    a started attempt; `source` repeats the same numbers for people reading a page.
    """

    skipped: tuple[tuple[str, int], ...] = ()

    @property
    def skipped_total(self) -> int:
        return sum(count for _, count in self.skipped)


class Table:
    """A CSV text with its header; iterating yields (line number, cells) for non-blank rows."""

    def __init__(self, text: str, source: str, fieldnames: Sequence[str] | None = None) -> None:
        self.source = source
        self._reader = csv.reader(io.StringIO(text))
        self._last_line = 0
        self.header_line = 0  # 0: headerless file, the column names were given
        if fieldnames is not None:
            self.header = tuple(fieldnames)
        else:
            for line, cells in self._rows():
                self.header = tuple(cell.strip().lower() for cell in cells)
                self.header_line = line
                break
            else:
                raise InputError("the file is empty (no header row)", source=source)
        self._index = {name: i for i, name in enumerate(self.header)}

    def _rows(self) -> Iterator[tuple[int, list[str]]]:
        reader = self._reader
        try:
            for cells in reader:
                line = self._last_line + 1
                self._last_line = reader.line_num
                if "".join(cells).strip():
                    yield line, cells
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", source=self.source,
                             line=reader.line_num) from None

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        width = len(self.header)
        for line, cells in self._rows():
            if len(cells) != width:
                if len(cells) < width:
                    raise InputError(
                        f"row has {len(cells)} values but the header has {width} columns",
                        source=self.source, line=line, field=self.header[len(cells)])
                if any(cell.strip() for cell in cells[width:]):
                    raise InputError(
                        f"row has {len(cells)} values but the header has {width} columns",
                        source=self.source, line=line)
            yield line, cells

    def column(self, name: str) -> int | None:
        return self._index.get(name)

    def require(self, *names: str) -> list[int]:
        """Column indexes of `names`, or an InputError naming the first missing column."""
        indexes = []
        for name in names:
            index = self.column(name)
            if index is None:
                raise InputError(f"missing required column '{name}'", source=self.source,
                                 line=self.header_line or None, field=name)
            indexes.append(index)
        return indexes


def parse_text(value: str, source: str, line: int, field: str) -> str:
    value = value.strip()
    if not value:
        raise InputError("empty value", source=source, line=line, field=field)
    return value


def parse_float(value: str, source: str, line: int, field: str) -> float:
    value = value.strip()
    if not value:
        raise InputError("empty value", source=source, line=line, field=field)
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"expected a number, got '{value}'", source=source, line=line,
                         field=field) from None
    if not math.isfinite(number):
        raise InputError(f"expected a finite number, got '{value}'", source=source, line=line,
                         field=field)
    return number


def parse_int(value: str, source: str, line: int, field: str) -> int:
    """A whole number; '4.0' is accepted because some traces store counts as floats."""
    try:
        return int(value)
    except ValueError:
        number = parse_float(value, source, line, field)
        if not number.is_integer():
            raise InputError(f"expected a whole number, got '{value.strip()}'", source=source,
                             line=line, field=field) from None
        return int(number)


def parse_bool(value: str, source: str, line: int, field: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InputError(f"expected true/false/1/0/yes/no, got '{value.strip()}'", source=source,
                     line=line, field=field)


def parse_datetime(value: str, source: str, line: int | None, field: str) -> datetime:
    """A naive date-time; one with a UTC offset is converted to UTC, so every row of a trace
    compares and subtracts with every other (a mix would raise TypeError)."""
    value = value.strip()
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):  # OverflowError: an offset past year 1 or 9999
        raise InputError(f"expected a date-time like 2017-10-09 07:01:55, got {value!r}",
                         source=source, line=line, field=field) from None
    return parsed


def non_negative(number: float, source: str, line: int, field: str) -> float:
    if number < 0:
        raise InputError(f"must not be negative, got {number:g}", source=source, line=line,
                         field=field)
    return number


def positive(number: int, source: str, line: int, field: str) -> int:
    if number <= 0:
        raise InputError(f"must be positive, got {number}", source=source, line=line,
                         field=field)
    return number


class JobIds:
    """Rejects a job id seen before, naming the line where it first appeared."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._first_line: dict[str, int] = {}

    def add(self, job_id: str, line: int, field: str = "job_id") -> str:
        first = self._first_line.setdefault(job_id, line)
        if first != line:
            raise InputError(f"duplicate job id '{job_id}' (first on line {first})",
                             source=self._source, line=line, field=field)
        return job_id


def finish(jobs: Iterable[JobSpec], source: str, fmt: str,
           skipped: Counter[str] | None = None, lines: Sequence[int] | None = None,
           ) -> LoadedWorkload:
    """Check every job against the input limits (`lines`, parallel to `jobs`, names the line
    of a refused one), sort them by submit time (stable: ties keep file order) and record
    what was skipped."""
    jobs = list(jobs)
    if len(jobs) > MAX_JOBS:
        raise InputError(f"{len(jobs):,} jobs; a trace is limited to {MAX_JOBS:,}",
                         source=source)
    for i, job in enumerate(jobs):
        check_job(job, source=source, line=lines[i] if lines is not None else None)
    ordered = tuple(sorted(jobs, key=lambda job: job.submit_time))
    skips = tuple(sorted((skipped or Counter()).items()))
    label = f"{source} ({fmt}: {len(ordered)} jobs"
    if skips:
        label += "; skipped " + ", ".join(f"{count} {reason}" for reason, count in skips)
    return LoadedWorkload(jobs=ordered, source=label + ")", format=fmt, skipped=skips)


def check_job(job: JobSpec, *, source: str, line: int | None = None) -> None:
    """Refuse a job over the limits of `simulation.limits` (time, size) or with text no
    database or result file can hold; without a line the message names the job."""
    where = "" if line is not None else f"job {printable(job.job_id)!r}: "

    def refuse(field: str, message: str) -> InputError:
        return InputError(where + message, source=source, line=line, field=field)

    if job.duration > MAX_JOB_SECONDS:
        raise refuse("duration", f"{job.duration:g} s is over the limit of "
                     f"{MAX_JOB_SECONDS:,.0f} s (366 days)")
    if job.submit_time > MAX_SUBMIT_SECONDS:
        raise refuse("submit_time", f"{job.submit_time:g} s is over the limit of "
                     f"{MAX_SUBMIT_SECONDS:,.0f} s (366 days after the first job)")
    for name, gpus in (("num_gpus", job.num_gpus), ("max_workers", job.max_gpus)):
        if gpus > MAX_GPUS_PER_JOB:
            raise refuse(name, f"{gpus:,} GPUs is over the limit of {MAX_GPUS_PER_JOB:,} "
                         "per job")
    if job.profile is not None and any(s > MAX_JOB_SECONDS for s in job.profile.stage_seconds):
        raise refuse("resource_time", f"a stage time is over {MAX_JOB_SECONDS:,.0f} s")
    for name in ("job_id", "model", "pool", "gpu_type", "user", "experiment"):
        value = getattr(job, name)
        if value and not value.isprintable():
            bad = unstorable_char(value)
            if bad is not None:
                raise refuse(name, f"contains {bad}, which is not allowed in text")
