"""`load_all` is done for every thread only once every policy module is imported.

Rule: a thread that asks for the registry while another is still importing waits for it
(a worker's first requests come in parallel); before the fix the flag was set first, so the
second thread went on with a partial registry ("fifo is not one of the available choices").
"""

from __future__ import annotations

import threading

import simulation.policies as policies


def test_a_second_thread_waits_until_every_policy_module_is_imported(monkeypatch):
    importing, release = threading.Event(), threading.Event()
    imported: list[str] = []

    def slow_import(name: str):
        importing.set()
        release.wait(5)
        imported.append(name)

    monkeypatch.setattr(policies, "_loaded", False)
    monkeypatch.setattr(policies.importlib, "import_module", slow_import)
    first = threading.Thread(target=policies.load_all)
    first.start()
    assert importing.wait(5)
    seen_by_second: list[int] = []
    second = threading.Thread(target=lambda: (policies.load_all(),
                                              seen_by_second.append(len(imported))))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # still waiting: the first thread has not finished importing
    release.set()
    first.join(5)
    second.join(5)
    assert seen_by_second == [len(imported)] and len(imported) > 10
