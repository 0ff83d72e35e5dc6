"""Gandiva's packing (OSDI'18 §4.2.2 Packing, §6.1 Fig. 10, Table 1).

Mixed into `simulation.policies.gandiva.Gandiva`, which keeps the packs and their members.
Only during overload, 1-GPU jobs below `pack_max_util` are packed, lowest GPU utilisation
first, onto the GPU of their server with the lowest utilisation whose memory fits; after a
quantum a packing is kept if its measured progress beats time-slicing, else undone and its
model combination not tried again. A job spread over servers never hosts a pack (our
reading of "packs jobs on a GPU": it has no GPU of its own), so a job is in one pack at most.
"""

from __future__ import annotations

from simulation.dlt_models import model_info
from simulation.policies.gandiva_index import Pack
from simulation.view import ClusterView, JobView


class GandivaPacking:
    """Greedy packing on trial, kept or undone after a quantum."""

    def _review_packs(self, view: ClusterView) -> None:
        """Keep a trial packing that beats time-slicing (one GPU's worth), else undo it."""
        for pid in sorted(self._trials):
            pack = self._packs[pid]
            shares = {j: self._slice_share(view, pack.server, ("pack", pid))
                      for j in pack.members}
            if shares != pack.shares or set(pack.snapshot) != set(pack.members):
                self._start_trial(view, pid)  # the server's load changed: measure afresh
                continue
            elapsed = view.now - pack.since
            if elapsed < self.time_slice:
                continue
            measured = 0.0
            for job_id in pack.members:
                job = view.job(job_id)
                solo = self._solo_rate(view, job) * shares[job_id]
                done = pack.snapshot[job_id] - job.remaining_work
                measured += done / (elapsed * solo) if solo > 0 else 0.0
            if measured > 1.0 + 1e-9:
                pack.kept = True
                self._trials.discard(pid)
                self._counts["packings_kept"] += 1
            else:
                self._failed_combos.add(self._combo(pack.members))
                self._changes += 1  # a combination packing may no longer try
                self._counts["packings_undone"] += 1
                self._dissolve(view, pid)

    def _solo_rate(self, view: ClusterView, job: JobView) -> float:
        speed = min(view.servers[s.server].speed for s in job.placement)
        rate = view.throughput.rate(job.spec.model, job.spec.num_gpus, job.gpus, speed)
        return rate * self._locality(view, job)

    def _combo(self, members: list[str]) -> tuple[str, ...]:
        return tuple(sorted(self._model_of[j] for j in members))

    def _start_trial(self, view: ClusterView, pid: int) -> None:
        pack = self._packs[pid]
        pack.since = view.now
        pack.snapshot = {j: view.job(j).remaining_work for j in pack.members}
        pack.shares = {j: self._slice_share(view, pack.server, ("pack", pid))
                       for j in pack.members}

    def _pack(self, view: ClusterView) -> None:
        """Greedy packing, lowest GPU utilisation first; each packing starts a trial.

        Packing reads only servers, packs and the combinations that failed, so a pass that
        packed nothing is not repeated until one of them changes."""
        if self._changes == self._pack_idle_at:
            return
        packed = False
        for _, job_id in list(self._pack_candidates):
            if job_id in self._pack_of:
                continue
            sid = view.job(job_id).placement[0].server
            server = view.servers[sid]
            if self._load(view, sid) <= server.gpus:
                continue  # no time-slicing here: nothing to gain
            memory = view.spec.gpu_types[server.gpu_type].memory_gb
            best: tuple[float, str, object] | None = None
            for unit, gpus in self._units(view, sid).items():
                if gpus != 1 or unit == job_id or unit in self._spread:
                    continue  # a job spread over servers has no GPU of its own to share
                members = (self._packs[unit[1]].members if isinstance(unit, tuple)
                           else [unit])
                if (sum(model_info(self._model_of[m]).memory_gb for m in members)
                        + model_info(self._model_of[job_id]).memory_gb > memory):
                    continue
                if self._combo([*members, job_id]) in self._failed_combos:
                    continue
                key = (sum(self._util(m) for m in members), str(unit), unit)
                if best is None or key[:2] < best[:2]:
                    best = key
            if best is None:
                continue
            unit = best[2]
            if isinstance(unit, tuple):
                pid = unit[1]
                self._packs[pid].members.append(job_id)
                self._packs[pid].kept = False
                self._trials.add(pid)
            else:
                pid = self._next_pack
                self._next_pack += 1
                self._packs[pid] = Pack(sid, [str(unit), job_id], view.now)
                self._trials.add(pid)
                self._point(str(unit), pid, view)
            self._point(job_id, pid, view)
            self._mark(sid)
            packed = True
            self._counts["packings"] += 1
            self._start_trial(view, pid)
        if not packed:
            self._pack_idle_at = self._changes

    def _util(self, job_id: str) -> float:
        return model_info(self._model_of[job_id]).gpu_util
