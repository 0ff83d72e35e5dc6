"""Each web process's copy of the live state it last decided on, so the next decision can
skip reading and validating the whole cluster again.

A stateful reclaim over 500 servers and 2,000 jobs spent most of its time re-reading those
rows (`cluster_snapshot`) and re-validating every job (`parse_snapshot`) although one
decision changes a handful of them. A `CachedState` holds the snapshot (without `now`) and
the parsed jobs, keyed by the cluster's `LiveStateVersion`, which every write to the live
state bumps (`planner.live.signals`, `services`). A decision that finds the version it
cached under the cluster lock decides on the copy; after applying its answer it derives the
next version's snapshot from the answer (`CachedState.after`) and caches that once the
transaction commits. Anything else (a job submitted, an admin edit, another process's
decision) moves the version on and the next decision reads the database again.

The derived snapshot must be exactly what `cluster_snapshot` would read back; the tests
check it after every kind of answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulation.snapshot import Snapshot, SnapshotJob, parse_snapshot

CACHED_CLUSTERS = 8  # per process; a cluster's copy is a few MB of Python objects


@dataclass(frozen=True, slots=True)
class CachedState:
    """A cluster's live snapshot at one version, and its parse, both read-only."""

    version: int
    state: Mapping[str, Any]  # `cluster_snapshot` without "now"
    snapshot: Snapshot  # `parse_snapshot(state)` (with `now` 0; callers replace it)
    latest_submit: float
    server_ids: Mapping[str, int]  # database ids by name, which no decision changes
    job_ids: Mapping[str, int]

    @classmethod
    def from_state(cls, version: int, state: Mapping[str, Any], server_ids: Mapping[str, int],
                   job_ids: Mapping[str, int], reuse: CachedState | None = None) -> CachedState:
        """Parse `state`, reusing `reuse`'s parse of every job entry it shares."""
        jobs = state["jobs"]
        known = None if reuse is None else reuse.parsed_jobs()
        snapshot = parse_snapshot({**state, "now": 0.0}, known=known)
        latest = max((job["submit_time"] for job in jobs), default=0.0)
        return cls(version, state, snapshot, latest, server_ids, job_ids)

    def parsed_jobs(self) -> dict[str, tuple[Any, SnapshotJob]]:
        """Job id -> (entry, its parse), for `parse_snapshot(known=...)`."""
        return {job.spec.job_id: (raw, job)
                for raw, job in zip(self.state["jobs"], self.snapshot.jobs, strict=True)}

    def after(self, version: int, kind: str, response: Mapping[str, Any]) -> CachedState:
        """This state with a decision's answer applied, as `services._apply` writes it."""
        lent = set(response.get("servers", ())) if kind in ("loan", "reclaim") else set()
        servers = self.state["servers"]
        if lent:
            on_loan = kind == "loan"
            servers = [{**server, "on_loan": on_loan} if server["id"] in lent else server
                       for server in servers]
        changes = _job_changes(response)
        jobs = self.state["jobs"]
        if changes:
            jobs = [_job_after(job, changes[job["id"]]) if job["id"] in changes else job
                    for job in jobs]
        state = {**self.state, "servers": servers, "jobs": jobs}
        return CachedState.from_state(version, state, self.server_ids, self.job_ids,
                                      reuse=self)


def _job_changes(response: Mapping[str, Any]) -> dict[str, tuple[str, list[Any]]]:
    """Job id -> (status, placement) for every job an answer stops, starts or moves."""
    changes: dict[str, tuple[str, list[Any]]] = {}
    stopped: Iterable[str] = [*response.get("preempted_jobs", ()), *response.get("preempt", ())]
    for job_id in stopped:
        changes[job_id] = ("queued", [])
    for key in ("scaled_in", "scale_in", "scale_out", "migrate", "launch"):
        for entry in response.get(key, ()):
            changes[entry["job"]] = ("running", entry["placement"])
    return changes


def _job_after(job: Mapping[str, Any], change: tuple[str, list[Any]]) -> dict[str, Any]:
    status, placement = change
    return {**job, "status": status,
            "placement": [{"server": slot["server"], "gpus": slot["gpus"],
                           "flexible": slot["flexible"]} for slot in placement]}


class StateCache:
    """The last `CACHED_CLUSTERS` clusters' states in this process (thread-safe).

    Keys are `(cluster id, created_at)`: an id the database hands out again after a cluster
    was deleted (SQLite does) never finds the old cluster's state.
    """

    def __init__(self, size: int = CACHED_CLUSTERS) -> None:
        self._size = size
        self._states: OrderedDict[Hashable, CachedState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, version: int) -> CachedState | None:
        with self._lock:
            cached = self._states.get(key)
            if cached is None or cached.version != version:
                return None
            self._states.move_to_end(key)
            return cached

    def put(self, key: Hashable, cached: CachedState) -> None:
        with self._lock:
            current = self._states.get(key)
            if current is not None and current.version > cached.version:
                return  # a later decision in another thread got here first
            self._states[key] = cached
            self._states.move_to_end(key)
            while len(self._states) > self._size:
                self._states.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()


LIVE_STATES = StateCache()
