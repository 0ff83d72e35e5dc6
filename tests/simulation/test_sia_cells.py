"""The buddy cell allocator of SIA §5.5 (HiveD's buddy cells), on hand-derived cases."""

from __future__ import annotations

import pytest

from simulation.policies.sia.cells import (
    DEDICATED,
    OPPORTUNISTIC,
    RESERVED,
    BuddyCells,
    Cell,
    fits_in_cells,
    quota_cells,
)


def two_servers() -> BuddyCells:
    return BuddyCells({"A": 8, "B": 8})


def test_allocating_4_2_1_1_fills_one_server_by_the_buddy_rule() -> None:
    cells = two_servers()
    # 4: both servers are free 8-cells, A comes first; A splits into [0,4) and [4,8).
    assert cells.allocate(4, "j4", kind=DEDICATED) == Cell("A", 0, 4)
    # 2: the smallest free cell holding 2 GPUs is A[4,8) (B is 8): split, take [4,6).
    assert cells.allocate(2, "j2", kind=DEDICATED) == Cell("A", 4, 2)
    # 1 and 1: A[6,8) splits into GPU 6 and its buddy GPU 7.
    assert cells.allocate(1, "j1a", kind=DEDICATED) == Cell("A", 6, 1)
    assert cells.allocate(1, "j1b", kind=DEDICATED) == Cell("A", 7, 1)
    assert cells.free_cells() == [Cell("B", 0, 8)]  # B stays whole for an 8-GPU job


def test_freed_buddies_merge_back_to_the_parent_cell() -> None:
    cells = two_servers()
    for size, owner in ((4, "j4"), (2, "j2"), (1, "j1a"), (1, "j1b")):
        cells.allocate(size, owner, kind=DEDICATED)
    assert cells.release("j1a") == Cell("A", 6, 1)  # its buddy GPU 7 is still held
    assert cells.release("j1b") == Cell("A", 6, 2)  # GPUs 6 and 7 merge
    assert cells.release("j2") == Cell("A", 4, 4)  # [4,6) + [6,8)
    assert cells.free_cells() == [Cell("A", 4, 4), Cell("B", 0, 8)]
    assert cells.release("j4") == Cell("A", 0, 8)  # the whole server again
    assert cells.free_cells() == [Cell("A", 0, 8), Cell("B", 0, 8)]


def test_buddy_keeps_a_whole_server_where_first_fit_splits_it() -> None:
    # B (listed first) is empty; A has 6 GPUs held by lent jobs. First fit by server order
    # would put a 2-GPU job on B and leave no 8-GPU cell, and so would keeping away from lent
    # jobs; the buddy rule comes first and takes A's last 2-GPU cell.
    cells = BuddyCells({"B": 8, "A": 8})
    cells.allocate(8, "whole", kind=OPPORTUNISTIC)  # takes B (first), given back below
    cells.allocate(4, "a4", kind=OPPORTUNISTIC)
    cells.allocate(2, "a2", kind=OPPORTUNISTIC)
    cells.release("whole")
    assert cells.free_cells() == [Cell("B", 0, 8), Cell("A", 6, 2)]
    assert cells.allocate(2, "job", kind=DEDICATED) == Cell("A", 6, 2)
    assert cells.allocate(8, "big", kind=DEDICATED) == Cell("B", 0, 8)


def test_quota_cells_come_from_the_queues_own_servers_only() -> None:
    cells = BuddyCells({"A": 8, "B": 8})
    assert cells.allocate(2, "d", kind=DEDICATED, queue="q2", servers=("B",)) == Cell("B", 0, 2)
    # The next 2-GPU cell: B[2,4), the buddy of d's cell, though A comes first.
    assert cells.allocate(2, "d2", kind=DEDICATED, queue="q2", servers=("B",)) == Cell("B", 2, 2)
    # No 8-GPU cell is left on B: the request fails though A is free.
    assert cells.allocate(8, "d8", kind=DEDICATED, queue="q2", servers=("B",)) is None
    assert cells.clearable(4, lambda h: True, servers=("A",)) == (Cell("A", 0, 4), [])


def _layout(order: tuple[str, str]) -> BuddyCells:
    """A: dedicated d in [0,2), opportunistic o in [4,8), free [2,4).
    B: opportunistic oB in [0,2), free [2,4) and [4,8). (A filler steers oB to B.)"""
    cells = BuddyCells(dict.fromkeys(order, 8))
    cells.allocate(2, "d", kind=DEDICATED, servers=("A",))
    cells.allocate(4, "o", kind=OPPORTUNISTIC, guard=False)
    cells.allocate(2, "filler", kind=DEDICATED, servers=("A",))
    cells.allocate(2, "oB", kind=OPPORTUNISTIC, guard=False)
    cells.release("filler")
    assert [cells.cell_of(x) for x in ("d", "o", "oB")] == [
        Cell("A", 0, 2), Cell("A", 4, 4), Cell("B", 0, 2)]
    return cells


def test_dedicated_cells_go_next_to_dedicated_ones() -> None:
    # Free 2-cells A[2,4) (buddy holds d) and B[2,4) (buddy holds oB). B comes first and
    # holds fewer opportunistic GPUs (2 against 4); closeness to d still picks A.
    cells = _layout(("B", "A"))
    assert cells.allocate(2, "new", kind=DEDICATED) == Cell("A", 2, 2)


def test_dedicated_cells_keep_away_from_opportunistic_ones() -> None:
    # A: opportunistic in [0,4) and [4,6), free [6,8). B: opportunistic [0,2), free [2,4)
    # and [4,8).
    # Neither free 2-cell is a dedicated cell's buddy; B holds fewer opportunistic GPUs.
    cells = BuddyCells({"A": 8, "B": 8})
    cells.allocate(4, "o4", kind=OPPORTUNISTIC)
    cells.allocate(2, "o2", kind=OPPORTUNISTIC, guard=False)
    cells.allocate(2, "filler", kind=DEDICATED, servers=("A",))
    cells.allocate(2, "oB", kind=OPPORTUNISTIC, guard=False)
    cells.release("filler")
    assert [cells.cell_of(x) for x in ("o4", "o2", "oB")] == [
        Cell("A", 0, 4), Cell("A", 4, 2), Cell("B", 0, 2)]
    assert cells.free_cells() == [Cell("A", 6, 2), Cell("B", 2, 2), Cell("B", 4, 4)]
    assert cells.allocate(2, "d", kind=DEDICATED) == Cell("B", 2, 2)
    # The buddy rule comes before distance: a 1-GPU job takes A's 2-cell, not B's 4-cell.
    assert cells.allocate(1, "d1", kind=DEDICATED) == Cell("A", 6, 1)


def test_opportunistic_jobs_never_start_in_buddy_cells_of_dedicated_or_reserved_ones() -> None:
    cells = BuddyCells({"A": 8})
    cells.allocate(1, "d", kind=DEDICATED)  # A[0]; free: [1], [2,4), [4,8)
    # Every free cell's buddy holds d: the server is closed to opportunistic jobs.
    assert cells.allocate(1, "o", kind=OPPORTUNISTIC) is None
    assert cells.allocate(1, "o", kind=OPPORTUNISTIC, guard=False) == Cell("A", 1, 1)
    other = BuddyCells({"A": 8})
    other.allocate(4, "r", kind=RESERVED)  # A[0,4); its buddy [4,8) is closed too
    assert other.allocate(2, "o", kind=OPPORTUNISTIC) is None


def test_opportunistic_jobs_pack_next_to_each_other() -> None:
    cells = BuddyCells({"A": 8, "B": 8})
    cells.allocate(1, "o1", kind=OPPORTUNISTIC)  # A[0]
    cells.allocate(4, "d", kind=DEDICATED, servers=("B",))  # B[0,4)
    # Free: A[1] (buddy holds o1), A[2,4), A[4,8), B[4,8) (buddy holds d: closed).
    assert cells.allocate(1, "o2", kind=OPPORTUNISTIC) == Cell("A", 1, 1)
    assert cells.allocate(4, "o4", kind=OPPORTUNISTIC) == Cell("A", 4, 4)
    assert cells.allocate(4, "o5", kind=OPPORTUNISTIC) is None  # B[4,8) is d's buddy


def test_clearable_cell_evicts_the_fewest_gpus_of_evictable_holders_only() -> None:
    cells = BuddyCells({"A": 8, "B": 8})
    cells.allocate(4, "dA", kind=DEDICATED, servers=("A",))  # A[0,4)
    cells.allocate(4, "oA", kind=OPPORTUNISTIC, guard=False)  # A[4,8)
    cells.allocate(2, "o1", kind=OPPORTUNISTIC, guard=False)  # B[0,2)
    cells.allocate(1, "o2", kind=OPPORTUNISTIC, guard=False)  # B[2]
    cells.allocate(4, "o3", kind=OPPORTUNISTIC, guard=False)  # B[4,8)

    def lent(holder) -> bool:
        return holder.kind == OPPORTUNISTIC

    # A 4-cell: A[4,8) costs 4 GPUs, B[0,4) costs 3 (o1 + o2), B[4,8) costs 4.
    assert cells.clearable(4, lent) == (Cell("B", 0, 4), ["o1", "o2"])
    # An 8-cell: A holds a dedicated cell; B costs 7.
    assert cells.clearable(8, lent) == (Cell("B", 0, 8), ["o1", "o2", "o3"])
    assert cells.clearable(8, lambda h: lent(h) and h.owner != "o3") is None


def test_quota_as_cells_and_the_quota_check() -> None:
    assert quota_cells(8, 8) == [8]
    assert quota_cells(12, 8) == [8, 4]
    assert quota_cells(7, 8) == [4, 2, 1]
    assert fits_in_cells([8], [4, 2, 1, 1])
    assert not fits_in_cells([8], [4, 4, 1])
    assert fits_in_cells([8, 4], [4, 4, 4])
    # A count of GPUs is not enough: 8 GPUs of quota as two 4-cells cannot hold an 8.
    assert not fits_in_cells([4, 4], [8])
    assert not fits_in_cells([8, 4], [4, 2, 8])


def test_cells_refuse_what_they_cannot_describe() -> None:
    with pytest.raises(ValueError, match="power of two"):
        BuddyCells({"A": 6})
    cells = two_servers()
    with pytest.raises(ValueError, match="power of two"):
        cells.allocate(3, "x", kind=DEDICATED)
    cells.allocate(1, "x", kind=DEDICATED)
    with pytest.raises(ValueError, match="already holds"):
        cells.allocate(1, "x", kind=DEDICATED)
