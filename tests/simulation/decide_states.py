"""A generated mid-size snapshot (DESIGN.md's JSON) for pinning live decision answers.

Deterministic for a seed: training and inference pools (most inference servers on loan),
running jobs with base and flexible slots across servers, multi-GPU workers, GPU-type
constraints, non-preemptible and prioritised jobs, and a queue of waiting jobs.
"""

from __future__ import annotations

import random
from typing import Any


def generated_state(*, training: int = 12, inference: int = 40, jobs: int = 160,
                    queued: int = 40, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    servers: list[dict[str, Any]] = []
    free: dict[str, int] = {}
    for k in range(training):
        servers.append({"id": f"t{k}", "pool": "training", "kind": "training", "gpus": 8,
                        "gpu_type": "V100"})
        free[f"t{k}"] = 8
    lent = []
    for k in range(inference):
        on_loan = k % 8 != 7
        servers.append({"id": f"i{k}", "pool": "inference", "kind": "inference", "gpus": 8,
                        "gpu_type": "T4", "on_loan": on_loan})
        if on_loan:
            free[f"i{k}"] = 8
            lent.append(f"i{k}")
    usable = [s["id"] for s in servers if s["id"] in free]
    entries: list[dict[str, Any]] = []
    for j in range(jobs):
        per_worker = rng.choice([1, 1, 1, 2])
        base_workers = rng.choice([1, 1, 2, 2, 3, 4, 8]) // per_worker or 1
        placement: list[dict[str, Any]] = []
        need = base_workers * per_worker
        hosts = rng.sample(usable, k=min(len(usable), 3))
        for host in hosts:
            take = min(need, free[host] - free[host] % per_worker)
            if take > 0:
                placement.append({"server": host, "gpus": take})
                free[host] -= take
                need -= take
            if need == 0:
                break
        if need:  # could not place: undo and leave it to the queue
            for slot in placement:
                free[slot["server"]] += slot["gpus"]
            continue
        held = base_workers
        elastic = rng.random() < 0.3
        if elastic:
            flex_host = rng.choice(lent)
            extra = min(free[flex_host] // per_worker, rng.choice([1, 2, 4]))
            if extra:
                placement.append({"server": flex_host, "gpus": extra * per_worker,
                                  "flexible": True})
                free[flex_host] -= extra * per_worker
                held += extra
        entry: dict[str, Any] = {
            "id": f"job-{j}", "status": "running", "gpus_per_worker": per_worker,
            "min_workers": base_workers,
            "max_workers": max(held, base_workers * (4 if elastic else 1)),
            "num_gpus": held * per_worker, "remaining_seconds": 60.0 + rng.randrange(7200),
            "duration": 9000.0, "model": rng.choice(["generic", "resnet50", "bert"]),
            "preemptible": rng.random() > 0.05, "priority": rng.choice([0, 0, 1]),
            "submit_time": round(rng.uniform(0, 5000), 3), "placement": placement,
        }
        entries.append(entry)
    for q in range(queued):
        per_worker = rng.choice([1, 2])
        workers = rng.choice([1, 2, 4])
        entry = {"id": f"wait-{q}", "status": "queued", "gpus_per_worker": per_worker,
                 "min_workers": workers, "max_workers": workers * rng.choice([1, 1, 2]),
                 "remaining_seconds": 30.0 + rng.randrange(3600),
                 "submit_time": round(rng.uniform(0, 6000), 3)}
        if q % 9 == 0:
            entry["gpu_type"] = "V100"
        entries.append(entry)
    return {
        "now": 6500.0,
        "gpu_types": {"V100": {"speed": 1.0, "memory_gb": 32.0},
                      "T4": {"speed": 0.25, "memory_gb": 16.0}},
        "pools": [{"name": "training", "kind": "training", "lending_limit": None},
                  {"name": "inference", "kind": "inference", "lending_limit": inference - 2}],
        "servers": servers,
        "jobs": entries,
    }
