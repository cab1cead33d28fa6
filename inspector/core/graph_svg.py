"""A graph picture as SVG text (the `graph --svg` output, the PNG's source) and as
plain data (`graph --json`). Every text from the file is escaped: a name is data,
never markup."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from inspector.core.graph_layout import LINE_H, PAD_Y
from inspector.core.graph_model import INPUT, MODULE, NODE, OUTPUT, SUBGRAPH
from inspector.core.graph_picture import TITLE_H, Picture, PictureBox

MARGIN = 16.0
FILL = {NODE: "#e8f0fa", MODULE: "#fdf1dc", SUBGRAPH: "#efe6f7", INPUT: "#e4f4e4",
        OUTPUT: "#f9e3e3"}
STROKE = {NODE: "#4a6fa5", MODULE: "#b07a1e", SUBGRAPH: "#7b52a1", INPUT: "#3f8a3f",
          OUTPUT: "#b04040"}


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def picture_svg(pic: Picture, title: str = "") -> str:
    w, h = pic.width + 2 * MARGIN, pic.height + 2 * MARGIN
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(w)}" height="{_f(h)}" '
           f'viewBox="0 0 {_f(w)} {_f(h)}" font-family="DejaVu Sans, sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>" if title else "",
           '<rect width="100%" height="100%" fill="white"/>',
           f'<g transform="translate({_f(MARGIN)},{_f(MARGIN)})">']
    for b in pic.boxes:  # frames first: open groups under their contents
        if b.open:
            out.append(_frame(b))
    for e in pic.edges:
        pts = e.points
        if len(pts) < 4:
            continue
        d = [f"M{_f(pts[0][0])},{_f(pts[0][1])}"]
        for k in range(1, len(pts) - 2, 3):
            d.append("C" + " ".join(f"{_f(x)},{_f(y)}" for x, y in pts[k:k + 3]))
        tip = ", ".join(e.values)
        dash = ' stroke-dasharray="4 3"' if e.back else ""
        out.append(f'<path d="{" ".join(d)}" fill="none" stroke="#8a8f98" stroke-width="1.2"'
                   f'{dash}><title>{escape(tip)}</title></path>')
    for b in pic.boxes:
        if not b.open:
            out.append(_box(b))
    out.append("</g></svg>")
    return "\n".join(x for x in out if x) + "\n"


def _frame(b: PictureBox) -> str:
    kind = b.box.kind
    return (f'<g><rect x="{_f(b.x)}" y="{_f(b.y)}" width="{_f(b.w)}" height="{_f(b.h)}" rx="6" '
            f'fill="#fffaf0" stroke="{STROKE[kind]}" stroke-dasharray="5 3"/>'
            f'<text x="{_f(b.x + 8)}" y="{_f(b.y + TITLE_H - 7)}" font-weight="bold">'
            f'{escape(b.box.module or b.box.label)}  {escape(b.box.detail)}</text></g>')


def _box(b: PictureBox) -> str:
    kind = b.box.kind
    rx = 12 if kind in (INPUT, OUTPUT) else 4
    tip = b.box.node or b.box.module or b.box.graph or b.box.value or ""
    if b.weights:
        tip += "\nweights: " + ", ".join(b.weights)
    lines = [b.box.label] + ([b.box.detail] if b.box.detail else [])
    text = []
    for i, line in enumerate(lines):
        y = b.y + PAD_Y + LINE_H * (i + 1) - 3.5
        weight = ' font-weight="bold"' if i == 0 and kind != NODE else ""
        fill = "#222" if i == 0 else "#555"
        text.append(f'<text x="{_f(b.x + b.w / 2)}" y="{_f(y)}" text-anchor="middle" '
                    f'fill="{fill}"{weight}>{escape(line)}</text>')
    return (f"<g><title>{escape(tip)}</title>"
            f'<rect x="{_f(b.x)}" y="{_f(b.y)}" width="{_f(b.w)}" height="{_f(b.h)}" rx="{rx}" '
            f'fill="{FILL[kind]}" stroke="{STROKE[kind]}"/>' + "".join(text) + "</g>")


def picture_dict(pic: Picture) -> dict[str, Any]:
    """`graph --json`: what a test needs to check the picture."""
    def box(b: PictureBox) -> dict[str, Any]:
        d: dict[str, Any] = {"id": b.id, "kind": b.kind, "label": b.box.label,
                             "detail": b.box.detail, "x": b.x, "y": b.y, "w": b.w, "h": b.h,
                             "parent": b.parent, "open": b.open}
        for key in ("node", "module", "graph", "value"):
            v = getattr(b.box, key)
            if v is not None:
                d[key] = v
        if b.box.count:
            d["count"] = b.box.count
        if b.weights:
            d["weights"] = b.weights
        return d

    return {"graph": pic.graph, "module": pic.scope, "width": pic.width, "height": pic.height,
            "boxes": [box(b) for b in pic.boxes],
            "edges": [{"from": e.src, "to": e.dst, "points": [list(p) for p in e.points],
                       "values": e.values, "back": e.back, "parent": e.parent}
                      for e in pic.edges]}

