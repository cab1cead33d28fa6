"""The house rules of docs/ARCHITECTURE.md ("Layers and contracts"), enforced: core
and jobs never import Qt; core never imports torch at module level (opening an
archive must not need it); no module reaches into another's private names (a
seam is public: program/lean.py uses parser.py's parse_graph, not _parse_graph);
the import-linter contracts of pyproject.toml hold (the ui layers, the selection
model's leaf, the jobs reached only through the job runner, no cycles)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import inspector

PACKAGE = Path(inspector.__file__).parent
QT = ("PySide6", "pyqtgraph", "superqt", "qtpy", "inspector.ui")


def _module_level_imports(path: Path) -> list[str]:
    """Imports executed when the module is imported (not inside functions)."""
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.append(node.module)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                    continue
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []) or [])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return names


def _all_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def test_core_and_jobs_never_import_qt() -> None:
    offenders = []
    for room in ("core", "jobs"):
        for path in (PACKAGE / room).rglob("*.py"):
            for name in _all_imports(path):
                if name.startswith(QT):
                    offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert offenders == []


def test_core_never_imports_torch_at_module_level() -> None:
    offenders = []
    for path in (PACKAGE / "core").rglob("*.py"):
        for name in _module_level_imports(path):
            if name == "torch" or name.startswith(("torch.", "transformers", "sympy")):
                offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert offenders == []


def test_importing_core_loads_no_torch_or_qt() -> None:
    code = ("import sys, importlib, pkgutil, inspector.core as c\n"
            "for m in pkgutil.iter_modules(c.__path__): importlib.import_module('inspector.core.' + m.name)\n"
            "print(sorted(k for k in ('torch', 'PySide6', 'sympy') if k in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_import_linter_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the test extra"
    proc = subprocess.run([lint], capture_output=True, text=True, timeout=300,
                          cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def private_reaches(path: Path) -> list[str]:
    """`from inspector.x import _name` and `module._name` (module: imported from
    inspector) in one file: another module's private names."""
    tree = ast.parse(path.read_text(), str(path))
    modules: set[str] = set()
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("inspector"):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"from {node.module} import {a.name}")
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names
                           if a.name.startswith("inspector"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in modules and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            out.append(f"{node.value.id}.{node.attr}")
    return out


def test_no_module_reaches_into_another_s_private_names() -> None:
    offenders = [f"{path.relative_to(PACKAGE)}: {reach}"
                 for path in sorted(PACKAGE.rglob("*.py")) for reach in private_reaches(path)]
    assert offenders == []


def test_the_private_reach_check_sees_one(tmp_path: Path) -> None:
    """The check above can fail: the lean parse as it was (calling the full
    parser's `_parse_graph` and `_node`) is caught."""
    sample = tmp_path / "lean_before.py"
    sample.write_text("from inspector.core.program import parser as full\n"
                      "from inspector.core.line_highlight import _category\n"
                      "graph = full._parse_graph(small, '', 0, counter, where)\n"
                      "node = full._node(record, i, graph, where)\n")
    assert private_reaches(sample) == ["from inspector.core.line_highlight import _category",
                                       "full._parse_graph", "full._node"]
