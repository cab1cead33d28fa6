"""The node under the cursor: target, inputs, outputs, metadata, the full stack
trace (library frames folded), the module path as a breadcrumb, users.

One QTextBrowser with generated HTML: links (`kind:value` anchors) carry the
actions — jump to a value's definition, open a frame in the source pane, select a
module, go to a user — and the window wires them through `linkActivated`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QTextBrowser, QVBoxLayout, QWidget

from inspector.core.annotations import AnnotationLayer
from inspector.core.frames import Frame, parse_module_stack, parse_stack_trace
from inspector.core.program import Argument, Graph, Node
from inspector.ui import settings as keys
from inspector.ui.plain import shown
from inspector.ui.widgets.theme import Theme, current_theme

_SHOWN_META = ("stack_trace", "nn_module_stack")
_MAX_USERS = 200
# Laying out a megabyte line freezes the window (QTextBrowser): every text from the
# file is cut, code lines of a stack trace included.
MAX_CODE = 400
MAX_TEXT = 600


def _show(text: str | None, limit: int = MAX_TEXT) -> str:
    """File text as HTML: marked (bidi, zero-width), cut, escaped."""
    return escape(shown(text, limit))


class DetailsPane(QWidget):
    linkActivated = Signal(str, str)  # kind, value
    frameSelected = Signal(object)  # Frame

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.browser = QTextBrowser(self)
        self.browser.setObjectName("detailsBrowser")
        self.browser.setOpenLinks(False)
        self.browser.anchorClicked.connect(self._anchor)
        lay.addWidget(self.browser)
        self.fold = keys.get_bool(keys.FOLD_LIBRARY_FRAMES, True)
        self.theme: Theme = current_theme()
        self.node: Node | None = None
        self.frames: tuple[Frame, ...] = ()
        self.users: dict[str, list[int]] = {}
        self.annotations: list[AnnotationLayer] = []
        self._shown = lambda name: name
        self.show_message("Click a line of the listing to see its node.")

    def show_message(self, text: str) -> None:
        self.node = None
        self.frames = ()
        self.users = {}
        # closures over the shown view (line labels, printed names): never keep a closed one
        self._label = None
        self._shown = lambda name: name
        self.annotations = []
        self.browser.setHtml(f"<p style='color:gray'>{escape(text)}</p>")

    def show_node(self, node: Node | None, line: int, users: dict[str, list[int]],
                  line_label, annotations: Sequence[AnnotationLayer] = (),
                  shown=None) -> None:
        """`users`: output value name (as the listing prints it) -> listing lines
        reading it; `line_label(line) -> str` names a listing line for the users
        list; `annotations`: the program's layers (a profile's time, a check's
        failure); `shown(name) -> str`: how the listing prints a value of the file
        (`input_1` for an input `input`); names and links follow the listing."""
        self.annotations = list(annotations)
        if node is None:
            self.show_message("No node on this line.")
            return
        self.node = node
        self.users = users
        self._label = line_label
        self._shown = shown or (lambda name: name)
        self.frames = parse_stack_trace(node.stack_trace)
        self._render()

    def _render(self) -> None:
        node, t = self.node, self.theme
        if node is None:
            return
        g = node.graph
        link = t.link.name()
        h: list[str] = [_style(t)]
        h.append(f"<div class='title'>{_show(self._shown(node.name))}</div>")
        h.append(f"<div class='target'>{_show(node.target)}</div>")
        h.append(self._breadcrumb(node, link))
        h.append(self._notes(node, t))
        h.append("<h3>Inputs</h3><table>")
        for inp in node.inputs:
            h.append(f"<tr><td class='k'>{_show(inp.name)}</td><td>{self._arg(inp.arg, g)}</td></tr>")
        if not node.inputs:
            h.append("<tr><td class='dim'>none</td></tr>")
        h.append("</table><h3>Outputs</h3><table>")
        for out in node.outputs:
            for name in out.tensor_names() or [out.kind]:
                printed = self._shown(name)
                users = self.users.get(printed, [])
                n = len(users)
                use = (f" <a href='users:{escape(printed)}'>{n} user{'s' if n != 1 else ''}</a>"
                       if n else " <span class='dim'>no users</span>")
                h.append(f"<tr><td class='k'>{_show(printed)}</td><td>{_meta(g, name)}{use}</td></tr>")
        h.append("</table>")
        extra = {k: v for k, v in node.metadata.items() if k not in _SHOWN_META}
        if extra:
            h.append("<h3>Metadata</h3><table>")
            for k, v in sorted(extra.items()):
                h.append(f"<tr><td class='k'>{_show(k)}</td><td><code>{_show(v)}</code></td></tr>")
            h.append("</table>")
        h.append(self._trace())
        users_all = sorted({u for lst in self.users.values() for u in lst})
        if users_all:
            h.append(f"<h3>Users ({len(users_all)})</h3><div>")
            for u in users_all[:_MAX_USERS]:
                h.append(f"<a href='line:{u}'>{_show(self._label(u))}</a><br>")
            if len(users_all) > _MAX_USERS:
                h.append(f"<span class='dim'>… {len(users_all) - _MAX_USERS} more</span>")
            h.append("</div>")
        self.browser.setHtml("".join(h))

    def _notes(self, node: Node, t: Theme) -> str:
        """What the annotation layers say of this node: its time, its failure."""
        rows = []
        for layer in self.annotations:
            heat = layer.heat.get(node.name)
            if heat is not None:
                rows.append(f"<tr><td class='k'>{escape(layer.title or layer.source)}</td>"
                            f"<td><b>{escape(heat.text)}</b> <span class='dim'>"
                            f"{escape(heat.tooltip)}</span></td></tr>")
            mark = layer.marks.get(node.name)
            if mark is not None:
                color = t.severity.get(mark.severity, t.severity["info"]).name()
                text = "<br>".join(escape(x) for x in mark.tooltip.splitlines())
                rows.append(f"<tr><td class='k' style='color:{color}'>{escape(layer.source)}</td>"
                            f"<td>{text}</td></tr>")
        return f"<table class='notes'>{''.join(rows)}</table>" if rows else ""

    def _breadcrumb(self, node: Node, link: str) -> str:
        entries = parse_module_stack(node.nn_module_stack)
        if not entries:
            return "<div class='crumb dim'>no module (top level)</div>"
        parts = []
        prev = ""
        for e in entries:
            # relative to the enclosing module: "h.1", not "1" (ModuleList hops)
            if prev and e.path.startswith(prev + "."):
                label = e.path[len(prev) + 1:]
            else:
                label = e.path or "(root)"
            prev = e.path
            parts.append(f"<a href='module:{escape(e.path)}' title='{_show(e.cls)}'>{_show(label)}</a>"
                         f"<span class='dim'>:{_show(e.class_name)}</span>")
        return "<div class='crumb'>" + " › ".join(parts) + "</div>"

    def _arg(self, arg: Argument, g: Graph) -> str:
        names = arg.tensor_names()
        if names:
            return ", ".join(f"<a href='def:{escape(self._shown(n))}'>{_show(self._shown(n))}</a>"
                             f" {_meta(g, n)}" for n in names)
        from inspector.core.listing import arg_text  # the listing's own rendering

        return f"<code>{_show(arg_text(arg), 4 * MAX_TEXT)}</code>"

    def _trace(self) -> str:
        frames = self.frames
        if not frames:
            return "<h3>Stack trace</h3><div class='dim'>no stack trace recorded</div>"
        n_lib = sum(not f.is_user for f in frames[:-1])
        toggle = ("show" if self.fold else "fold") + f" {n_lib} library frame{'s' if n_lib != 1 else ''}"
        head = f"<h3>Stack trace ({len(frames)} frames) " \
               + (f"<a href='fold:1' class='small'>{toggle}</a>" if n_lib else "") + "</h3>"
        rows: list[str] = []
        folded = 0
        # innermost first: that is where the node came from
        for i in range(len(frames) - 1, -1, -1):
            f = frames[i]
            # the innermost frame is where the node came from: never folded
            if self.fold and not f.is_user and i != len(frames) - 1:
                folded += 1
                continue
            if folded:
                rows.append(f"<div class='dim'>⋯ {folded} library frame{'s' if folded > 1 else ''}</div>")
                folded = 0
            cls = "frame user" if f.is_user else "frame lib"
            rows.append(f"<div class='{cls}'><a href='frame:{i}'>{_show(_short(f.file))}:{_show(f.line_text)}</a>"
                        f" <span class='dim'>in {_show(f.function)}</span>"
                        + (f"<br><code>{_show(f.code, MAX_CODE)}</code>" if f.code else "") + "</div>")
        if folded:
            rows.append(f"<div class='dim'>⋯ {folded} library frame{'s' if folded > 1 else ''}</div>")
        return head + "".join(rows)

    def _anchor(self, url: QUrl) -> None:
        text = url.toString()
        kind, _, value = text.partition(":")
        if kind == "fold":
            self.set_fold(not self.fold)
        elif kind == "frame":
            self.frameSelected.emit(self.frames[int(value)])
        else:
            self.linkActivated.emit(kind, value)

    def set_fold(self, fold: bool) -> None:
        self.fold = fold
        keys.set_value(keys.FOLD_LIBRARY_FRAMES, fold)
        self._render()

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._render()

    def plain_text(self) -> str:
        return self.browser.toPlainText()


def _short(path: str) -> str:
    """Trim site-packages prefixes: `transformers/models/gpt2/modeling_gpt2.py`."""
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    return p


def _meta(g: Graph, name: str) -> str:
    m = g.tensor_values.get(name)
    if m is not None:
        return (f"<span class='meta'>{_show(m.dtype_name)} {_show(m.shape_text())}"
                f" on {_show(str(m.device))}</span>")
    for table in (g.sym_int_values, g.sym_float_values, g.sym_bool_values):
        if name in table:
            return f"<span class='meta'>Sym({_show(str(table[name]))})</span>"
    return ""


def _style(t: Theme) -> str:
    dim = t.gutter_text.name()
    return f"""<style>
      body {{ font-size: 10pt; }}
      a {{ color: {t.link.name()}; text-decoration: none; }}
      .title {{ font-size: 13pt; font-weight: 600; }}
      .target {{ font-family: monospace; color: {t.tokens['target'].name()}; margin-bottom: 4px; }}
      .crumb {{ margin: 4px 0 6px 0; }}
      .dim {{ color: {dim}; }}
      .small {{ font-size: 9pt; font-weight: normal; }}
      .meta {{ color: {t.tokens['annotation'].name()}; font-family: monospace; }}
      h3 {{ font-size: 10pt; margin: 10px 0 3px 0; }}
      td.k {{ padding-right: 10px; font-family: monospace; vertical-align: top; }}
      .frame {{ margin: 2px 0 4px 0; }}
      .lib {{ color: {dim}; }}
      code {{ font-family: monospace; }}
    </style>"""
