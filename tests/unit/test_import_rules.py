"""House rules of DESIGN.md, enforced: core and jobs never import Qt; core never
imports torch at module level (opening an archive must not need it)."""

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
