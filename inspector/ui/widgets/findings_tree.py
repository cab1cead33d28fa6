"""The findings tree of the Audit panel: rule -> group -> finding, with counts and
severity dots. Each leaf carries its Finding (FINDING_ROLE).

A group shows its first LEAF_BATCH findings and a "show more" row for the rest
(a 400k-node program has ~31,000 findings: making every item took ~0.7 s on the
GUI thread); the rule and group rows always count them all."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from inspector.ui.plain import plain_tip, shown
from inspector.core.audit import ERROR, INFO, RULE_TITLES, RULES, WARNING, Finding
from inspector.ui.widgets.wrapping import WrappingDelegate

SEVERITY_COLORS = {ERROR: "#d32f2f", WARNING: "#f9a825", INFO: "#1e88e5"}
FINDING_ROLE = Qt.ItemDataRole.UserRole + 1
MORE_ROLE = Qt.ItemDataRole.UserRole + 2  # a "show more" row: (findings, first not shown)
LEAF_BATCH = 500
PREFERRED_HEIGHT = 120


def _dot(color: str) -> QIcon:
    pix = QPixmap(12, 12)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(QColor(color))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawEllipse(1, 1, 10, 10)
    p.end()
    return QIcon(pix)


class FindingsTree(QTreeWidget):
    """Rule -> group -> finding, with counts and severity dots."""

    HEADERS = ("Finding", "Where")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(len(self.HEADERS))
        self.setHeaderLabels(self.HEADERS)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.header().setSectionResizeMode(0, QHeaderView.Stretch)
        self.header().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.header().setStretchLastSection(False)
        # Rule titles wrap in a narrow dock rather than end in "…".
        self.setItemDelegate(WrappingDelegate(self))
        self._icons = {sev: _dot(color) for sev, color in SEVERITY_COLORS.items()}
        self.itemClicked.connect(self._more_clicked)
        self.itemActivated.connect(self._more_clicked)  # Enter on the row

    def sizeHint(self) -> QSize:  # noqa: N802
        # Modest: the panel sits in a scroll area that sizes it by preferred heights;
        # the tree still takes whatever room the dock has (it expands).
        hint = super().sizeHint()
        return QSize(hint.width(), min(hint.height(), PREFERRED_HEIGHT))

    def show_findings(self, findings: list[Finding]) -> None:
        self.clear()
        by_rule: dict[str, list[Finding]] = defaultdict(list)
        for f in findings:
            by_rule[f.rule].append(f)
        for rule in [r for r in RULES if r in by_rule] + [r for r in by_rule if r not in RULES]:
            items = by_rule[rule]
            worst = min(items, key=lambda f: (ERROR, WARNING, INFO).index(f.severity)).severity
            counts = Counter(f.severity for f in items)
            summary = ", ".join(plural(counts[s], s) for s in (ERROR, WARNING, INFO) if counts[s])
            title = f"{RULE_TITLES.get(rule, rule)}  ({len(items)})"
            # the severities as the tooltip: the Where column stays narrow (line numbers)
            top = QTreeWidgetItem([title, ""])
            top.setToolTip(0, plain_tip(f"{title}\n{summary}"))
            top.setIcon(0, self._icons[worst])
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            top.setData(0, Qt.ItemDataRole.UserRole, rule)
            top.setFirstColumnSpanned(False)
            self.addTopLevelItem(top)
            groups: dict[str, list[Finding]] = defaultdict(list)
            for f in items:
                groups[f.group or ""].append(f)
            for group, members in groups.items():
                parent = top
                if group and len(groups) > 1 or group and len(members) > 3:
                    parent = QTreeWidgetItem([f"{shown(group, 300)}  ({len(members)})"])
                    top.addChild(parent)
                self._add_leaves(parent, members, 0)
            top.setExpanded(worst == ERROR or len(by_rule) <= 2)

    def _add_leaves(self, parent: QTreeWidgetItem, members: list[Finding], start: int) -> None:
        """Leaves start.. of `members` under `parent`, at most LEAF_BATCH, then a
        "show more" row for the rest."""
        end = min(len(members), start + LEAF_BATCH)
        parent.addChildren([self._leaf(f) for f in members[start:end]])
        if end < len(members):
            rest = len(members) - end
            more = QTreeWidgetItem([f"show {min(rest, LEAF_BATCH):,} more of {rest:,}…", ""])
            more.setToolTip(0, plain_tip(f"{end:,} of {len(members):,} findings are listed "
                                         "here; click (or press Enter) for more"))
            more.setForeground(0, self.palette().link())  # reads as something to click
            more.setData(0, MORE_ROLE, (members, end))
            parent.addChild(more)

    def _more_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        self.show_more(item)

    def show_more(self, item: QTreeWidgetItem) -> QTreeWidgetItem | None:
        """Replace a "show more" row by the next batch; the batch's first leaf."""
        pending = item.data(0, MORE_ROLE)
        parent = item.parent()
        if pending is None or parent is None:
            return None
        members, start = pending
        index = parent.indexOfChild(item)
        parent.removeChild(item)
        self._add_leaves(parent, members, start)
        return parent.child(index)

    def _leaf(self, f: Finding) -> QTreeWidgetItem:
        # Docks are narrow: the node names the finding, the message is one click away.
        label = f"{f.program} · {f.node}" if f.node else first_clause(f.message)
        where = f"line {f.line + 1}" if f.line is not None else (f.program or "archive")
        item = QTreeWidgetItem([shown(label, 300), where])
        item.setIcon(0, self._icons.get(f.severity, QIcon()))
        tip = f"<b>{f.severity}</b>: {html(f.message)}"
        if f.fix:
            tip += f"<br><br><b>Fix:</b> {html(f.fix)}"
        if f.source:
            tip += f"<br><b>Source:</b> {html(f.source)}"
        item.setToolTip(0, tip)
        item.setToolTip(1, plain_tip(f.source))
        item.setData(0, FINDING_ROLE, f)
        return item

    def findings_shown(self) -> list[Finding]:
        out = []
        stack = [self.topLevelItem(i) for i in range(self.topLevelItemCount())]
        while stack:
            item = stack.pop()
            f = item.data(0, FINDING_ROLE)
            if f is not None:
                out.append(f)
            stack.extend(item.child(i) for i in range(item.childCount()))
        return out

    def rule_counts(self) -> dict[str, int]:
        """rule -> the count its row shows."""
        return {self.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole):
                _count(self.topLevelItem(i).text(0)) for i in range(self.topLevelItemCount())}

    def leaf_for(self, pred: Callable[[Finding], bool]) -> QTreeWidgetItem | None:
        """The first leaf whose finding satisfies `pred`, listing more of a group
        where the finding is among those not listed yet."""
        stack = [self.topLevelItem(i) for i in range(self.topLevelItemCount())]
        while stack:
            item = stack.pop(0)
            f = item.data(0, FINDING_ROLE)
            if f is not None and pred(f):
                return item
            pending = item.data(0, MORE_ROLE)
            if pending is not None and any(pred(g) for g in pending[0][pending[1]:]):
                parent, first = item.parent(), item.parent().indexOfChild(item)
                self.show_more(item)  # the new batch (and its own "more" row) next
                stack[0:0] = [parent.child(i) for i in range(first, parent.childCount())]
                continue
            stack.extend(item.child(i) for i in range(item.childCount()))
        return None


def plural(n: int, severity: str) -> str:
    return f"{n} {severity}{'s' if n != 1 and severity != INFO else ''}"


def _count(text: str) -> int:
    inside = text.rsplit("(", 1)[-1].rstrip(")")
    return int(inside) if inside.isdigit() else 0


def first_clause(message: str) -> str:
    """The headline of a finding's message: up to its first ': ' outside parentheses."""
    depth = 0
    for i, ch in enumerate(message):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0 and message[i + 1:i + 2] == " ":
            return message[:i]
    return message


def html(text: str | None) -> str:
    """File text inside a rich tooltip: marked (bidi, zero-width), cut, escaped."""
    return shown(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
