"""Drive a live cluster through the live REST API by replaying a real trace on a fast clock.

The demo's operator page needs something to watch: this is a REST client like any other (an
inference-cluster scheduler and a training job launcher in one) that speaks only HTTP to
`/api/v1/`. Every tick it submits the trace's jobs that are due, reports the ones whose work is
done, lends idle inference servers and reclaims them when the inference load rises, and asks
for a schedule (Aryl by default), so loans, reclaims with their preemptions, launches and
scale-outs appear on the page as they happen.

Choices where a real client would know more than a trace says:

- **Clock.** Trace seconds run `speed` times faster: submit times and durations are divided by
  `speed` before they are sent, so the live API, whose clock is the wall clock, sees a
  consistent, compressed workload.
- **Progress.** A job with `w` workers, asking for `n`, does `w / n` seconds of its work per
  second (linear scaling), and keeps its progress when preempted (it checkpoints). Progress is
  reported every `report_seconds` and at the end.
- **Elasticity.** The trace has none; every job of at least 2 GPUs is submitted elastic
  between half and twice its size, as in our EDL reproduction.
- **Inference load.** Aryl's diurnal load (Figure 1) on the inference pool, on the same clock.
  Servers the load leaves idle are lent, within the pool's lending limit; when the load needs
  more servers than are idle, that many are reclaimed.
"""

from __future__ import annotations

import json
import logging
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulation.workloads.formats import load_trace

logger = logging.getLogger(__name__)

DEMO_TRACE = Path(__file__).with_name("demo") / "philly_6c71a0_2017-10-19.csv"
RETRY_AFTER_CAP_SECONDS = 10.0


class LiveApiError(Exception):
    """A request the live API refused; the message holds its status and answer."""


@dataclass
class LiveApi:
    """A small JSON client of `/api/v1/` with token authentication; waits out a 429."""

    base_url: str
    token: str
    timeout: float = 30.0

    def get(self, path: str) -> Any:
        return self._call("GET", path, None)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._call("POST", path, body)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base_url.rstrip("/") + path, data=data, method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json",
                     "Accept": "application/json"})
        while True:
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read() or b"null")
            except urllib.error.HTTPError as error:
                if error.code == 429:
                    wait = float(error.headers.get("Retry-After") or 1)
                    time.sleep(min(wait, RETRY_AFTER_CAP_SECONDS))
                    continue
                raise LiveApiError(f"{method} {path}: HTTP {error.code} "
                                   f"{error.read().decode(errors='replace')[:500]}") from None

    def get_all(self, path: str) -> list[dict[str, Any]]:
        """Every row of a paginated list."""
        rows: list[dict[str, Any]] = []
        page: Any = self.get(path)
        while True:
            rows += page["results"]
            if not page.get("next"):
                return rows
            parts = urllib.parse.urlsplit(page["next"])
            page = self.get(f"{parts.path}?{parts.query}")


@dataclass(frozen=True)
class ReplayJob:
    """One trace job on the compressed clock (seconds since the replay began)."""

    name: str
    submit: float
    work: float  # seconds at its requested size
    num_gpus: int
    min_workers: int
    max_workers: int

    def body(self, *, cluster_id: int) -> dict[str, Any]:
        return {"cluster": cluster_id, "name": self.name, "num_gpus": self.num_gpus,
                "duration_seconds": self.work, "min_workers": self.min_workers,
                "max_workers": self.max_workers}


def replay_jobs(*, path: Path = DEMO_TRACE, speed: float, prefix: str) -> list[ReplayJob]:
    """The trace's jobs in submit order, times divided by `speed`, names under `prefix`; a job
    of at least 2 GPUs is elastic between half and twice its size."""
    jobs = sorted(load_trace(path).jobs, key=lambda job: (job.submit_time, job.job_id))
    return [ReplayJob(name=f"{prefix}{job.job_id}", submit=job.submit_time / speed,
                      work=max(job.duration / speed, 1.0), num_gpus=job.num_gpus,
                      min_workers=max(1, job.num_gpus // 2) if job.num_gpus >= 2 else 1,
                      max_workers=2 * job.num_gpus if job.num_gpus >= 2 else 1)
            for job in jobs]


@dataclass
class _Running:
    job_id: int
    left: float
    requested_workers: int
    workers: int = 0
    reported: float = 0.0


@dataclass
class LiveReplay:
    """One replay of `jobs` on a live cluster; `tick(now)` does everything due by `now`.

    `inference_busy(now)` is how many inference servers serve inference at `now`.
    """

    api: LiveApi
    cluster_id: int
    jobs: list[ReplayJob]
    inference_servers: int
    lending_limit: int
    inference_busy: Callable[[float], int]
    policy: str = "aryl"
    report_seconds: float = 30.0
    submitted: int = 0
    active: dict[str, _Running] = field(default_factory=dict)
    on_loan: set[str] = field(default_factory=set)
    finished: int = 0
    last_tick: float = 0.0

    @property
    def done(self) -> bool:
        return self.submitted == len(self.jobs) and not self.active

    def tick(self, now: float) -> None:
        """Advance the jobs to `now`, then submit, lend or reclaim, and schedule."""
        changed = self._progress(elapsed=max(0.0, now - self.last_tick), now=now)
        self.last_tick = now
        while self.submitted < len(self.jobs) and self.jobs[self.submitted].submit <= now:
            job = self.jobs[self.submitted]
            answer = self.api.post("/api/v1/jobs/", job.body(cluster_id=self.cluster_id))
            self.active[job.name] = _Running(job_id=answer["id"], left=job.work,
                                             requested_workers=job.num_gpus, reported=now)
            self.submitted += 1
            changed = True
        changed |= self._inference(now=now)
        if changed and self.active:  # a schedule on an unchanged state would change nothing
            self.api.post(f"/api/v1/clusters/{self.cluster_id}/decisions/schedule",
                          {"policy": self.policy})
            self._workers_refresh()

    def _progress(self, *, elapsed: float, now: float) -> bool:
        """Advance every running job; report the finished ones. Whether any finished."""
        finished = False
        for name, job in list(self.active.items()):
            if not job.workers:
                continue
            job.left -= elapsed * job.workers / job.requested_workers
            if job.left <= 0:
                self.api.post(f"/api/v1/jobs/{job.job_id}/progress", {"finished": True})
                del self.active[name]
                self.finished += 1
                finished = True
            elif now - job.reported >= self.report_seconds:
                self.api.post(f"/api/v1/jobs/{job.job_id}/progress",
                              {"remaining_seconds": round(job.left, 3)})
                job.reported = now
        return finished

    def _inference(self, *, now: float) -> bool:
        """Lend what the inference load leaves idle, reclaim what it needs back; whether any
        server changed hands."""
        busy = min(self.inference_busy(now), self.inference_servers)
        idle = self.inference_servers - busy - len(self.on_loan)
        base = f"/api/v1/clusters/{self.cluster_id}/decisions"
        if idle < 0 and self.on_loan:
            answer = self.api.post(f"{base}/reclaim", {"count": min(-idle, len(self.on_loan))})
            self.on_loan -= set(answer["servers"])
            return True
        if idle > 0 and len(self.on_loan) < self.lending_limit:
            count = min(idle, self.lending_limit - len(self.on_loan))
            answer = self.api.post(f"{base}/loan", {"count": count})
            self.on_loan |= set(answer["servers"])
            return bool(answer["servers"])
        return False

    def _workers_refresh(self) -> None:
        workers = {row["name"]: row["workers"] for row in self.api.get_all(
            f"/api/v1/jobs/?cluster={self.cluster_id}&status=running")}
        for name, job in self.active.items():
            job.workers = workers.get(name, 0)


def replay_reset(*, api: LiveApi, cluster_id: int) -> int:
    """Cancel the cluster's queued and running jobs and take back every server on loan, so a
    new replay starts from an empty cluster; returns how many jobs were cancelled."""
    jobs = [row for status in ("queued", "running") for row in api.get_all(
        f"/api/v1/jobs/?cluster={cluster_id}&status={status}")]
    for row in jobs:
        api.post(f"/api/v1/jobs/{row['id']}/cancel", {})
    lent = api.get_all(f"/api/v1/servers/?cluster={cluster_id}&status=on_loan")
    if lent:
        api.post(f"/api/v1/clusters/{cluster_id}/decisions/reclaim", {"count": len(lent)})
    return len(jobs)


def diurnal_busy(*, servers: int, speed: float, seed: int = 0) -> Callable[[float], int]:
    """Aryl's diurnal inference load on `servers` servers, on the compressed clock."""
    from simulation.workloads.inference_load import generate_inference_load

    load = generate_inference_load(servers, days=31, seed=seed)
    step = load.times[1] - load.times[0]

    def busy(now: float) -> int:
        index = min(int(now * speed / step), len(load.busy_servers) - 1)
        return load.busy_servers[index]

    return busy


def replay_run(*, replay: LiveReplay, tick_seconds: float = 1.0,
               stop_after: float = math.inf, clock: Callable[[], float] = time.monotonic
               ) -> LiveReplay:
    """Tick `replay` every `tick_seconds` of wall time until it is done or `stop_after`."""
    start = clock()
    while not replay.done:
        now = clock() - start
        if now > stop_after:
            break
        replay.tick(now)
        time.sleep(max(0.0, tick_seconds - (clock() - start - now)))
    return replay
