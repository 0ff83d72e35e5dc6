"""Each web process's copy of the live state it last decided on, so the next decision can
skip reading and validating the whole cluster again.

A stateful reclaim over 500 servers and 2,000 jobs spent most of its time re-reading those
rows (`cluster_snapshot`) and re-validating every job (`parse_snapshot`) although one
decision changes a handful of them. A `CachedState` holds the snapshot (without `now`) and
the parsed jobs, keyed by the cluster's `LiveStateVersion`, which every write to the live
state bumps (`planner.live.signals`, `services`). A decision that finds the version it
cached under the cluster lock decides on the copy; after applying its answer it derives the
next version's snapshot from the answer (`CachedState.after`) and caches that once the
transaction commits. A decision that finds a later version (a job's report, another
process's decision) brings its copy up to date from just the rows the change log
(`planner.live.versions`) names (`CachedState.refreshed`); where the log cannot say (a
server or pool edit), it reads the database again.

A derived or refreshed snapshot must be exactly what `cluster_snapshot` would read back;
the tests check it after every kind of answer and write.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable, Iterable, Mapping
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
    submitted: Mapping[str, Any]  # job -> exact submit seconds: with its id, the job order

    @classmethod
    def from_state(cls, version: int, state: Mapping[str, Any], server_ids: Mapping[str, int],
                   job_ids: Mapping[str, int], submitted: Mapping[str, Any],
                   reuse: CachedState | None = None) -> CachedState:
        """Parse `state` (`selectors.StateRead`'s fields), reusing `reuse`'s parse of every
        job entry it shares."""
        jobs = state["jobs"]
        known = None if reuse is None else reuse.parsed_jobs()
        snapshot = parse_snapshot({**state, "now": 0.0}, known=known)
        latest = max((job["submit_time"] for job in jobs), default=0.0)
        return cls(version, state, snapshot, latest, server_ids, job_ids, submitted)

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
                                      self.submitted, reuse=self)

    def refreshed(self, version: int, job_ids: Collection[int],
                  jobs: Iterable[tuple[int, Any, dict[str, Any]]], server_ids: Collection[int],
                  servers: Mapping[int, tuple[str, bool]]) -> CachedState | None:
        """This state after later writes that changed only the jobs `job_ids` (whose current
        rows, those still queued or running, are `jobs`: `selectors.cluster_jobs_read`) and
        the loans of the servers `server_ids` (`servers`: `selectors.servers_on_loan_read`).

        `None` where patching cannot give exactly what reading the whole state would: a
        changed server gone offline or renamed, a job renamed or its submit time edited, or
        a new job that does not sort after all the others.
        """
        names = {pk: name for name, pk in self.server_ids.items()}
        if any(pk not in servers or servers[pk][0] != names.get(pk) for pk in server_ids):
            return None
        loans = {names[pk]: servers[pk][1] for pk in server_ids}
        server_list = [{**server, "on_loan": loans[server["id"]]}
                       if server["id"] in loans and loans[server["id"]] != server["on_loan"]
                       else server for server in self.state["servers"]]
        current = {pk: (exact, entry) for pk, exact, entry in jobs}
        job_list, kept_ids, submitted = [], {}, {}
        for entry in self.state["jobs"]:
            name = entry["id"]
            pk = self.job_ids[name]
            if pk in job_ids:
                if pk not in current:
                    continue  # finished, cancelled or deleted
                exact, entry = current.pop(pk)
                if entry["id"] != name or exact != self.submitted[name]:
                    return None
            job_list.append(entry)
            kept_ids[name], submitted[name] = pk, self.submitted[name]
        last = (submitted[job_list[-1]["id"]], kept_ids[job_list[-1]["id"]]) \
            if job_list else None
        for pk, (exact, entry) in sorted(current.items(), key=lambda item: (item[1][0], item[0])):
            if last is not None and (exact, pk) <= last or entry["id"] in kept_ids:
                return None
            job_list.append(entry)
            kept_ids[entry["id"]], submitted[entry["id"]] = pk, exact
            last = (exact, pk)
        state = {**self.state, "servers": server_list, "jobs": job_list}
        return CachedState.from_state(version, state, self.server_ids, kept_ids, submitted,
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

    def latest(self, key: Hashable) -> CachedState | None:
        """The copy held for `key`, whatever its version."""
        with self._lock:
            return self._states.get(key)

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
