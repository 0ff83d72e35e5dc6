"""Layers: the simulation package stays pure Python (nothing in it imports Django or the
planner), and no module of the project imports, directly or through others, a module that
imports it back."""

import ast
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parent.parent
SIMULATION = REPO / "simulation"
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


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = REPO, packages: tuple[str, ...] = ("planner", "simulation")
                 ) -> nx.DiGraph:
    """Module -> module it imports, anywhere in its body (a function-level import hides a
    circle from Python at start-up, not from a reader). A module importing its own package
    is left out: Python imports a package before its submodules, so that is no circle."""
    paths = {_module_name(p, root): p for package in packages
             for p in (root / package).rglob("*.py") if "migrations" not in p.parts}
    graph = nx.DiGraph()
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                if target in paths and target != name and not name.startswith(target + "."):
                    graph.add_edge(name, target)
    return graph


def test_no_module_imports_itself_back():
    graph = import_graph()
    assert graph.number_of_nodes() > 100
    assert sorted(" -> ".join(cycle) for cycle in nx.simple_cycles(graph)) == []


def test_the_import_check_sees_a_circle_through_a_function_level_import(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("from app.dispatch import send\n")
    (package / "services.py").write_text("from app.dispatch import send\n")
    (package / "dispatch.py").write_text("import app\n\ndef send():\n    pass\n")
    (package / "tasks.py").write_text("def run():\n    from app import services\n")
    graph = import_graph(tmp_path, ("app",))
    # dispatch imports its own package, which imports dispatch: no circle.
    assert list(nx.simple_cycles(graph)) == []
    (package / "dispatch.py").write_text("def send():\n    from app.tasks import run\n")
    (package / "tasks.py").write_text("def run():\n    from app import services\n")
    cycles = list(nx.simple_cycles(import_graph(tmp_path, ("app",))))
    assert len(cycles) == 1 and set(cycles[0]) == {"app.services", "app.dispatch", "app.tasks"}
