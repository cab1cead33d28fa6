"""The module tree built from every node's `nn_module_stack`: selecting a module
selects the listing lines of the nodes inside it (submodules included)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from inspector.core.annotations import Heat
from inspector.ui.plain import plain_tip, shown
from inspector.core.document import ProgramView
from inspector.ui.widgets.share_bar import SHARE_ROLE, ShareBarDelegate

PATH_ROLE = Qt.ItemDataRole.UserRole
TIME_COLUMN = 3  # a profile's time per module (set_heat), hidden until there is one


class ModuleTree(QWidget):
    moduleSelected = Signal(str)  # module path ("" = whole program)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("moduleTree")
        self.tree.setHeaderLabels(["Module", "Class", "Nodes", "Time"])
        self.tree.setItemDelegateForColumn(TIME_COLUMN, ShareBarDelegate(self.tree))
        self.tree.setColumnHidden(TIME_COLUMN, True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        # The module names are what one reads (`h.0`, `attn`): their column fits them
        # and never shrinks; the class column takes what is left (elided, full class in
        # the tooltip), and a narrow dock scrolls sideways rather than hide names.
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(40)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.tree.setIndentation(12)  # deep models: names, not indentation, get the width
        header.setSectionResizeMode(TIME_COLUMN, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(TIME_COLUMN, 90)
        self.tree.itemSelectionChanged.connect(self._selected)
        lay.addWidget(self.tree)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._view: ProgramView | None = None
        self._heat: dict[str, Heat] = {}

    def set_heat(self, heat: dict[str, Heat], title: str = "Time") -> None:
        """Module path -> heat (a profile's inclusive time per module, the memory
        plan's peak per module): the heat column, headed `title`, with a bar for the
        part of the largest value (the root: the summed node time)."""
        self._heat = dict(heat)
        self.tree.headerItem().setText(TIME_COLUMN, title)
        top = max((abs(h.value) for h in heat.values()), default=0.0) or 1.0
        for path, item in self._items.items():
            h = heat.get(path)
            item.setText(TIME_COLUMN, h.text if h else "")
            item.setData(TIME_COLUMN, SHARE_ROLE, abs(h.value) / top if h else None)
            item.setToolTip(TIME_COLUMN, h.tooltip if h else "")
        if heat and self.tree.isColumnHidden(TIME_COLUMN):
            # next to the module's name, so a narrow dock shows it without scrolling
            header = self.tree.header()
            header.moveSection(header.visualIndex(TIME_COLUMN), 1)
            header.resizeSection(TIME_COLUMN, 76)
            header.resizeSection(1, min(header.sectionSize(1), 84))  # Class: the name needs room
        self.tree.setColumnHidden(TIME_COLUMN, not heat)

    def time_text(self, path: str) -> str:
        item = self._items.get(path)
        return item.text(TIME_COLUMN) if item is not None else ""

    def set_view(self, view: ProgramView | None) -> None:
        if view is self._view:
            return
        self._view = view
        self.tree.blockSignals(True)
        self.tree.clear()
        self._items = {}
        self._heat = {}  # another program's times: the window sets this one's after
        self.tree.setColumnHidden(TIME_COLUMN, True)
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
                item.setToolTip(1, plain_tip(info.cls))
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
