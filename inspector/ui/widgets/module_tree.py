"""The module tree built from every node's `nn_module_stack`: selecting a module
selects the listing lines of the nodes inside it (submodules included)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from inspector.ui.plain import plain_tip, shown
from inspector.core.document import ProgramView

PATH_ROLE = Qt.ItemDataRole.UserRole


class ModuleTree(QWidget):
    moduleSelected = Signal(str)  # module path ("" = whole program)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("moduleTree")
        self.tree.setHeaderLabels(["Module", "Class", "Nodes"])
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(40)
        header.resizeSection(1, 120)
        self.tree.itemSelectionChanged.connect(self._selected)
        lay.addWidget(self.tree)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._view: ProgramView | None = None

    def set_view(self, view: ProgramView | None) -> None:
        if view is self._view:
            return
        self._view = view
        self.tree.blockSignals(True)
        self.tree.clear()
        self._items = {}
        if view is not None and view.modules is None:
            self.tree.addTopLevelItem(QTreeWidgetItem(["indexing…", "", ""]))
            self._view = None  # set again once the index is there
        elif view is not None:
            totals: dict[str, int] = {}
            for path, info in view.modules.items():
                # a node inside a.b.c counts for a.b.c, a.b and a
                p = path
                while True:
                    totals[p] = totals.get(p, 0) + info.count
                    if "." not in p:
                        break
                    p = p.rsplit(".", 1)[0]
            for path in sorted(view.modules, key=_sort_key):
                info = view.modules[path]
                # containers such as ModuleList (h) are not in the stack: hang
                # h.0 under the nearest ancestor that is, labelled "h.0"
                parent, parent_path = None, path
                while "." in parent_path and parent is None:
                    parent_path = parent_path.rsplit(".", 1)[0]
                    parent = self._items.get(parent_path)
                if parent is None and path and "" in self._items and "." not in path:
                    parent, parent_path = self._items[""], ""
                label = path[len(parent_path) + 1:] if parent is not None and parent_path else path
                label = label or "(root)"
                item = QTreeWidgetItem([shown(label, 300), shown(info.cls, 300), f"{totals.get(path, 0):,}"])
                item.setData(0, PATH_ROLE, path)
                item.setToolTip(0, plain_tip(path or "(root)"))
                item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if parent is None:
                    self.tree.addTopLevelItem(item)
                else:
                    parent.addChild(item)
                self._items[path] = item
            for path, item in self._items.items():
                # open the model's skeleton (root, model, blocks), not every leaf
                item.setExpanded(path.count(".") < 3 and item.childCount() > 0
                                 and (path.count(".") < 2 or item.childCount() > 3))
        self.tree.blockSignals(False)

    def select_path(self, path: str) -> bool:
        item = self._items.get(path)
        if item is None:
            return False
        self.tree.setCurrentItem(item)
        self.tree.scrollToItem(item)
        return True

    def paths(self) -> list[str]:
        return list(self._items)

    def _selected(self) -> None:
        items = self.tree.selectedItems()
        if items:
            self.moduleSelected.emit(items[0].data(0, PATH_ROLE))


def _sort_key(path: str):
    # numeric parts in order: h.2 before h.10
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.split(".")]
