"""The graph picture on a QGraphicsView: a box per node, module, subgraph or port,
open groups as frames, edges as the layout's curves (core/graph_picture.py computes
all of it; this only draws and answers the mouse and keys).

Text from the file is drawn with QPainter.drawText (never rich text) and shown in
tooltips through plain_tip. Keys: arrows move along edges (Down to a box this one
feeds, Up to one feeding it, Left/Right to the neighbours of its layer), Enter
opens a group (or a subgraph), Backspace closes the group around the selection.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (QBrush, QColor, QFont, QKeyEvent, QPainter, QPainterPath,
                           QPainterPathStroker, QPen, QWheelEvent)
from PySide6.QtWidgets import (QGraphicsItem, QGraphicsPathItem, QGraphicsScene,
                               QGraphicsView, QStyleOptionGraphicsItem, QWidget)

from inspector.core.graph_layout import LINE_H, PAD_Y
from inspector.core.graph_model import INPUT, MODULE, NODE, OUTPUT, SUBGRAPH
from inspector.core.graph_overlay import BoxOverlay
from inspector.core.graph_picture import TITLE_H, Picture, PictureBox, PictureEdge
from inspector.ui.plain import plain_tip, shown

_LIGHT = {NODE: ("#e8f0fa", "#4a6fa5"), MODULE: ("#fdf1dc", "#b07a1e"),
          SUBGRAPH: ("#efe6f7", "#7b52a1"), INPUT: ("#e4f4e4", "#3f8a3f"),
          OUTPUT: ("#f9e3e3", "#b04040")}
_DARK = {NODE: ("#24344a", "#7aa2d6"), MODULE: ("#3d3220", "#d9a441"),
         SUBGRAPH: ("#33284a", "#b08ad6"), INPUT: ("#203a20", "#6cbf6c"),
         OUTPUT: ("#4a2424", "#e07a7a")}
SELECTED = QColor("#ff8c1a")
LIT = QColor(255, 213, 0, 150)  # a highlighted box's halo (the listing's highlight)
# an overlay's outline by severity, and its heat (tint and bar): core/graph_overlay.py
SEVERITY_COLORS = {"error": QColor("#d1242f"), "warning": QColor("#c98a00"),
                   "info": QColor("#3b7dd8")}
HEAT = QColor("#f0643c")
HEAT_BAR_H = 3.0
# Below this zoom a box is too small to read: the picture is a map, boxes plain
# rectangles and nothing antialiased (a zoomed-out 100k picture's repaint: the
# antialiased edges took half the frame's CPU; issue 31's pan target).
MAP_LOD = 0.35
MAX_TIP_WEIGHTS = 12  # a module box's tooltip names this many of its folded weights


def _blend(a: QColor, b: QColor, t: float) -> QColor:
    return QColor(round(a.red() + (b.red() - a.red()) * t),
                  round(a.green() + (b.green() - a.green()) * t),
                  round(a.blue() + (b.blue() - a.blue()) * t))


class BoxItem(QGraphicsItem):
    """One box: a rounded rectangle with its label and the detail line under it."""

    def __init__(self, box: PictureBox, dark: bool) -> None:
        super().__init__()
        self.box = box
        self.selected_box = False
        fill, stroke = (_DARK if dark else _LIGHT)[box.kind]
        self.fill, self.stroke = QColor(fill), QColor(stroke)
        self.text = QColor("#e6e6e6" if dark else "#1f2328")
        self.frame_bg = QColor("#26231d" if dark else "#fffaf0")
        self.overlay = BoxOverlay()
        self.lit = False
        self.setPos(box.x, box.y)
        self.setZValue(-1 if box.open else 1)
        self._set_tip()
        self.setAcceptHoverEvents(True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def _set_tip(self) -> None:
        box = self.box
        tip = box.box.node or box.box.module or box.box.graph or box.box.value or ""
        # the overlay before the weights: a module's weights list can fill the tip
        lines = [tip, box.box.detail, self.overlay.tooltip]
        if box.weights:
            names = box.weights[:MAX_TIP_WEIGHTS]
            more = len(box.weights) - len(names)
            lines.append("weights: " + ", ".join(names) + (f" and {more:,} more" if more else ""))
        self.setToolTip(plain_tip("\n".join(x for x in lines if x)))

    def set_overlay(self, overlay: BoxOverlay) -> None:
        if overlay != self.overlay:
            self.overlay = overlay
            self._set_tip()
            self.update()

    def set_lit(self, on: bool) -> None:
        if on != self.lit:
            self.lit = on
            self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802
        return QRectF(-4, -4, self.box.w + 8, self.box.h + 8)

    def paint(self, p: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        b, ov = self.box, self.overlay
        rect = QRectF(0, 0, b.w, b.h)
        marked = SEVERITY_COLORS.get(ov.severity) if ov.severity else None
        if self.selected_box:
            pen = QPen(SELECTED, 3)
        elif marked is not None and not b.open:
            pen = QPen(marked, 2.5)
        else:
            pen = QPen(self.stroke, 1)
        lod = option.levelOfDetailFromTransform(p.worldTransform())
        if b.open:
            pen.setStyle(Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(self.frame_bg)
            p.drawRoundedRect(rect, 6, 6)
            if lod > 0.3:
                p.setPen(self.text)
                font = QFont(p.font())
                font.setBold(True)
                p.setFont(font)
                p.drawText(QRectF(8, 0, b.w - 16, TITLE_H), Qt.AlignmentFlag.AlignVCenter,
                           shown(f"{b.box.module or b.box.label}  {b.box.detail}", 200))
            return
        if self.lit:
            p.setPen(QPen(LIT, 6))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(rect, 4, 4)
        p.setPen(pen)
        level = ov.level
        p.setBrush(self.fill if level is None else _blend(self.fill, HEAT, 0.7 * level))
        if lod < MAP_LOD:
            p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            pen.setWidthF(0)  # cosmetic
            p.setPen(pen)
            p.drawRect(rect)
        else:
            radius = 11 if b.kind in (INPUT, OUTPUT) else 4
            p.drawRoundedRect(rect, radius, radius)
        if level is not None and level > 0:
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(HEAT)
            p.drawRect(QRectF(2, b.h - HEAT_BAR_H - 1, (b.w - 4) * level, HEAT_BAR_H))
        if marked is not None:
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(marked)
            p.drawEllipse(QPointF(b.w - 5, 5), 3.5, 3.5)
        if lod < MAP_LOD:
            return  # too small to read: boxes only, as a map
        detail = "  ".join(x for x in (b.box.detail, ov.text) if x)
        lines = [b.box.label] + ([detail] if detail else [])
        font = QFont(p.font())
        font.setPointSizeF(8.5)
        for i, line in enumerate(lines):
            font.setBold(i == 0 and b.kind != NODE)
            p.setFont(font)
            p.setPen(self.text if i == 0 else QColor(self.text.red(), self.text.green(),
                                                     self.text.blue(), 170))
            p.drawText(QRectF(2, PAD_Y + LINE_H * i, b.w - 4, LINE_H),
                       Qt.AlignmentFlag.AlignCenter, shown(line, 200))

    def set_selected_box(self, on: bool) -> None:
        if on != self.selected_box:
            self.selected_box = on
            self.update()


class EdgeItem(QGraphicsPathItem):
    """An edge's curve; its tooltip names the values it carries with their dtype
    and shape. The hover area is the stroke, not the curve's enclosed area."""

    def __init__(self, edge: PictureEdge, tip: str, color: QColor) -> None:
        path = QPainterPath(QPointF(*edge.points[0]))
        pts = edge.points
        for k in range(1, len(pts) - 2, 3):
            path.cubicTo(QPointF(*pts[k]), QPointF(*pts[k + 1]), QPointF(*pts[k + 2]))
        super().__init__(path)
        self.edge = edge
        pen = QPen(color, 1.2)
        if edge.back:
            pen.setStyle(Qt.PenStyle.DashLine)
        self.setPen(pen)
        self.setToolTip(plain_tip(tip))
        self.setZValue(0)
        self._shape: QPainterPath | None = None  # made when first hit-tested
        self.setAcceptHoverEvents(True)

    def shape(self) -> QPainterPath:
        if self._shape is None:
            stroker = QPainterPathStroker()
            stroker.setWidth(7)
            self._shape = stroker.createStroke(self.path())
        return self._shape

    def hoverEnterEvent(self, event) -> None:  # noqa: N802
        pen = self.pen()
        pen.setWidthF(2.5)
        self.setPen(pen)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event) -> None:  # noqa: N802
        pen = self.pen()
        pen.setWidthF(1.2)
        self.setPen(pen)
        super().hoverLeaveEvent(event)


class GraphView(QGraphicsView):
    boxActivated = Signal(str)  # box id: clicked (select) — a node's selects it in the listing
    openRequested = Signal(str)  # box id: Enter or a double click on a group or subgraph
    closeRequested = Signal(str)  # box id: Backspace (close the group holding it)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphView")
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.picture: Picture | None = None
        self.items_by_id: dict[str, BoxItem] = {}
        self.selected: str | None = None
        self._out: dict[str, list[str]] = {}
        self._in: dict[str, list[str]] = {}
        self.value_text = lambda value: ""
        self.overlays: dict[str, BoxOverlay] = {}
        self.lit: set[str] = set()

    # --- content ----------------------------------------------------------------------

    def show_picture(self, pic: Picture | None, dark: bool = False, keep_view: bool = False) -> None:
        centre = self.mapToScene(self.viewport().rect().center())
        scene = self.scene()
        scene.clear()
        self.items_by_id = {}
        self._out, self._in = {}, {}
        self.picture = pic
        if pic is None:
            self.overlays, self.lit = {}, set()  # another program (or none): its marks go too
            return
        edge_color = QColor("#8a8f98" if not dark else "#7d8590")
        for e in pic.edges:
            if len(e.points) < 4:
                continue
            tip = "\n".join(f"{v}: {self.value_text(v)}".rstrip(": ") for v in e.values)
            scene.addItem(EdgeItem(e, tip, edge_color))
            self._out.setdefault(e.src, []).append(e.dst)
            self._in.setdefault(e.dst, []).append(e.src)
        for b in pic.boxes:
            item = BoxItem(b, dark)
            if b.id in self.overlays:
                item.set_overlay(self.overlays[b.id])
            item.lit = b.id in self.lit
            scene.addItem(item)
            self.items_by_id[b.id] = item
        scene.setSceneRect(QRectF(-40, -40, pic.width + 80, pic.height + 80))
        if self.selected in self.items_by_id:
            self.items_by_id[self.selected].set_selected_box(True)
        else:
            self.selected = None
        if keep_view:
            self.centerOn(centre)

    def paintEvent(self, event) -> None:  # noqa: N802
        # one check a frame, whatever changed the zoom (wheel, keys, fit, a caller)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, self.transform().m11() >= MAP_LOD)
        super().paintEvent(event)

    def set_overlay(self, boxes: dict[str, BoxOverlay]) -> None:
        """Put what the window knows about nodes on the boxes (an empty dict clears)."""
        self.overlays = dict(boxes)
        for box_id, item in self.items_by_id.items():
            item.set_overlay(self.overlays.get(box_id, BoxOverlay()))

    def set_lit(self, boxes: set[str]) -> None:
        """Light up the boxes drawing the listing's highlighted lines."""
        self.lit = set(boxes)
        for box_id, item in self.items_by_id.items():
            item.set_lit(box_id in self.lit)

    def fit(self) -> None:
        if self.picture is not None:
            self.fitInView(self.scene().sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
            if self.transform().m11() > 1.0:
                self.resetTransform()

    def select(self, box_id: str | None, centre: bool = True) -> None:
        if self.selected in self.items_by_id:
            self.items_by_id[self.selected].set_selected_box(False)
        self.selected = box_id if box_id in self.items_by_id else None
        if self.selected is not None:
            item = self.items_by_id[self.selected]
            item.set_selected_box(True)
            if centre:
                self.centerOn(item.sceneBoundingRect().center())

    # --- mouse and keys ---------------------------------------------------------------

    def _box_at(self, pos) -> BoxItem | None:
        for item in self.items(pos):
            if isinstance(item, BoxItem) and not item.box.open:
                return item
        for item in self.items(pos):
            if isinstance(item, BoxItem):
                return item
        return None

    def mousePressEvent(self, event) -> None:  # noqa: N802
        item = self._box_at(event.position().toPoint())
        if item is not None and event.button() == Qt.MouseButton.LeftButton:
            self.select(item.box.id, centre=False)
            self.boxActivated.emit(item.box.id)
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        item = self._box_at(event.position().toPoint())
        if item is not None and item.box.kind in (MODULE, SUBGRAPH):
            (self.closeRequested if item.box.open else self.openRequested).emit(item.box.id)
            return
        super().mouseDoubleClickEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        # the wheel zooms (about the pointer); dragging pans
        factor = 1.0015 ** event.angleDelta().y()
        if 0.03 <= self.transform().m11() * factor <= 4.0:
            self.scale(factor, factor)
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key, sel = event.key(), self.selected
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and sel:
            self.openRequested.emit(sel)
        elif key == Qt.Key.Key_Backspace and sel:
            self.closeRequested.emit(sel)
        elif key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_Left, Qt.Key.Key_Right):
            target = self._step(key) if sel else self._first()
            if target is not None:
                self.select(target)
                self.boxActivated.emit(target)
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.scale(1.25, 1.25)
        elif key == Qt.Key.Key_Minus:
            self.scale(0.8, 0.8)
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    def _first(self) -> str | None:
        if self.picture is None or not self.picture.boxes:
            return None
        return min((b for b in self.picture.boxes if not b.open), key=lambda b: (b.y, b.x)).id

    def _step(self, key: int) -> str | None:
        """The box an arrow key leads to from the selection: along an edge (Down: a
        box it feeds, Up: one feeding it; the nearest in x), or the next box of its
        layer (Left/Right)."""
        here = self.items_by_id[self.selected].box  # type: ignore[index]
        cx = here.x + here.w / 2

        def nearest(ids: list[str]) -> str | None:
            boxes = [self.items_by_id[i].box for i in ids if i in self.items_by_id]
            if not boxes:
                return None
            return min(boxes, key=lambda b: abs(b.x + b.w / 2 - cx)).id

        if key == Qt.Key.Key_Down:
            return nearest(self._out.get(here.id, []))
        if key == Qt.Key.Key_Up:
            return nearest(self._in.get(here.id, []))
        assert self.picture is not None
        row = [b for b in self.picture.boxes if b.parent == here.parent and b is not here
               and b.y < here.y + here.h and here.y < b.y + b.h]
        if key == Qt.Key.Key_Right:
            right = [b for b in row if b.x > here.x]
            return min(right, key=lambda b: b.x).id if right else None
        left = [b for b in row if b.x < here.x]
        return max(left, key=lambda b: b.x).id if left else None
