"""The simulation package stays pure Python: nothing in it imports Django or the planner."""

import ast
from pathlib import Path

SIMULATION = Path(__file__).resolve().parent.parent / "simulation"
FORBIDDEN = {"django", "planner", "rest_framework", "celery"}


def _imported_roots(tree: ast.AST) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_simulation_imports_neither_django_nor_planner():
    files = sorted(SIMULATION.rglob("*.py"))
    assert files, f"no Python files under {SIMULATION}"

    offenders = {
        str(path.relative_to(SIMULATION.parent)): sorted(roots & FORBIDDEN)
        for path in files
        if (roots := _imported_roots(ast.parse(path.read_text(), filename=str(path)))) & FORBIDDEN
    }

    assert offenders == {}
