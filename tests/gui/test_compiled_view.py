"""AOTInductor packages in the window (issue 14, item 2): real packages
compiled here on CPU, opened in a real window offscreen.

One tiny model, compiled the ways torch does (tests/conftest.py's
`aoti_packages`, shared with tests/unit/test_aoti.py): `aoti_compile_and_package`
(compiled code only) and
`package_pt2(exported_programs=..., aoti_files=...)` (compiled code with its
program). What the window shows is compared with what torch's own package
loader reports (`load_package(...).get_metadata()`, which dlopens the
library: tests may, the inspector never does) and with inspector.core.aoti.
"""

from __future__ import annotations

import json
import zipfile
from html import escape
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from inspector.core.aoti import compiled_models, kernel_lines, kernels, read_source
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.source_spans import lexer_for, line_spans


@pytest.fixture(scope="module")
def packages(aoti_packages: dict[str, Path]) -> dict[str, Path]:
    # compiled once per session in tests/conftest.py, shared with tests/unit/test_aoti.py;
    # "only" here is the one `aoti_compile_and_package` wrote
    return {"only": aoti_packages["compiled"], "both": aoti_packages["both"]}


def _torch_metadata(path: Path) -> dict[str, str]:
    from torch._inductor.package import load_package

    return dict(load_package(str(path), "model").get_metadata())


def _open_compiled(qtbot, open_wait, path: Path):
    tab = open_wait(path)
    assert tab is not None and tab.compiled is not None
    view = tab.compiled
    qtbot.waitUntil(lambda: bool(view.models) or bool(view.error), timeout=60000)
    assert not view.error
    # the first source is read and coloured in the background
    qtbot.waitUntil(lambda: view.is_coloured(view.source_path), timeout=60000)
    return tab, view


def _tree_rows(tree) -> list[list[str]]:
    return [[tree.topLevelItem(i).text(c) for c in range(tree.columnCount())]
            for i in range(tree.topLevelItemCount())]


def test_compiled_only_package_opens(qtbot, window, open_wait, packages):
    path = packages["only"]
    tab, view = _open_compiled(qtbot, open_wait, path)
    theirs = _torch_metadata(path)
    # no program: the tab is the compiled model's page alone, and the status
    # bar says what the package is (it used to stay on "Opening …")
    assert tab.view is None and tab.doc.program_names == []
    assert tab.pages.count() == 1 and tab.pages.currentWidget() is view
    status = window.status_label.text()
    assert not status.startswith("Opening"), status
    assert status == tab.summary()
    assert "1 compiled model" in status and "built for cpu" in status
    assert window.windowTitle().startswith(path.name)
    assert "compiled code only" in window.details.plain_text()

    f = view.fields
    assert f["device"].text() == theirs["AOTI_DEVICE_KEY"] == "cpu"
    assert f["platform"].text() == theirs["AOTI_PLATFORM"]
    assert f["machine"].text() == theirs["AOTI_MACHINE"]
    assert f["cpu_isa"].text() == (theirs["AOTI_CPU_ISA"] or "—")
    assert f["compute_capability"].text() == (theirs["AOTI_COMPUTE_CAPABILITY"]
                                              or "none (a CPU build)")
    assert f["program"].text().startswith("no program in the package")
    assert f"built for cpu ({theirs['AOTI_PLATFORM']} {theirs['AOTI_MACHINE']}" in status
    # text from the package is never read as markup
    for label in (*f.values(), view.target, view.title, view.source_note):
        assert label.textFormat() == Qt.TextFormat.PlainText

    # the files: every record of data/aotinductor/model/, the .so flagged
    with zipfile.ZipFile(path) as zf:
        names = sorted(n.split("/data/aotinductor/model/", 1)[1] for n in zf.namelist()
                       if "/data/aotinductor/model/" in n)
    rows = _tree_rows(view.files)
    paths = [view.files.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
             for i in range(view.files.topLevelItemCount())]
    assert sorted(p.split("data/aotinductor/model/", 1)[1] for p in paths) == names
    # inductor's hashes cut short, the full path in the tooltip
    for row, p in zip(rows, paths):
        stem, _, rest = p.rsplit("/", 1)[1].partition(".")
        assert row[0].removeprefix("! ") == f"{stem[:8]}….{rest}"
    native = [r for r in rows if r[0].startswith("! ")]
    assert [r[0].endswith(".wrapper.so") for r in native] == [True]
    assert "native code" in native[0][2] and "never loaded" in native[0][2]
    assert all(not r[0].startswith("! ") for r in rows if r[0].endswith(".cpp"))

    # the kernels: what core/aoti.py finds in the wrapper's comments
    with open_archive(path) as archive:
        (model,) = compiled_models(archive)
        expected = kernels(archive, model)
        wrapper = read_source(archive, model.wrappers[0])
    rows = _tree_rows(view.kernels)
    assert [r[0] for r in rows] == [k.name for k in expected]
    assert [r[1] for r in rows] == [", ".join(k.source_nodes) or "—" for k in expected]
    assert [r[2] for r in rows] == [", ".join(k.aten_ops) or "—" for k in expected]
    commented = [k for k in expected if k.source_nodes]
    assert commented and all(op.startswith("aten.") for k in commented for op in k.aten_ops)
    # the wrapper is shown first, as the package holds it
    assert view.source_path == model.wrappers[0]
    assert view.code.toPlainText() == wrapper
    assert view.code.isReadOnly()
    assert [view.sources.itemData(i) for i in range(view.sources.count())] == model.sources


def test_sources_are_coloured_lazily(qtbot, open_wait, packages):
    _tab, view = _open_compiled(qtbot, open_wait, packages["only"])
    code = view.code
    text = code.toPlainText()
    spans = line_spans(text, lexer_for(view.source_path))
    assert code.line_count() > 300  # more than a screen: laziness is visible
    done = code.formatted_lines()
    first = code.first_visible_line()
    # only the lines on screen (and a margin) got their colours
    assert done and max(done) < first + 200 and len(done) < code.line_count() / 2
    coloured = [n for n in sorted(done) if spans.get(n)]
    assert coloured
    for n in coloured:
        block = code.document().findBlockByNumber(n)
        got = [(r.start, r.start + r.length) for r in block.layout().formats()]
        assert got == [(s, e) for s, e, _cat in spans[n]], n
    # a kernel click shows its call, marked, and colours what scrolled in
    k = next(k for k in view.model.kernels if k.source_nodes)
    item = view.kernels.topLevelItem(view.model.kernels.index(k))
    rect = view.kernels.visualItemRect(item)
    qtbot.mouseClick(view.kernels.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert code.marked_line() == k.line - 1
    assert k.name in code.line_text(code.marked_line())
    assert k.line - 1 in code.formatted_lines()
    # the comment naming its nodes is coloured as a comment
    comment = next(n for n in range(k.line - 2, 0, -1)
                   if "Topologically Sorted Source Nodes" in code.line_text(n))
    assert any(cat == "comment" for _s, _e, cat in spans.get(comment, []))


def test_a_kernel_source_node_selects_the_node(qtbot, window, open_wait, packages):
    tab, view = _open_compiled(qtbot, open_wait, packages["both"])
    # program and compiled code: the listing first, the compiled model beside it
    assert tab.view is not None and tab.view.name == "model"
    assert tab.pages.count() == 2 and tab.pages.currentWidget() is tab.listing_page
    assert view.fields["program"].text().startswith("program model is in the package")
    with open_archive(packages["both"]) as archive:
        listing = render_listing(archive.program("model"))
    tab.listing.set_current_line(tab.listing.line_count() - 1)  # away from every node
    tab.pages.setCurrentWidget(view)
    k_index, k = next((i, k) for i, k in enumerate(view.model.kernels) if k.source_nodes)
    parent = view.kernels.topLevelItem(k_index)
    parent.setExpanded(True)
    child = parent.child(0)
    node = k.source_nodes[0]
    line = kernel_lines(k, listing)[node]
    assert child.text(0) == node
    assert child.text(1) == f"listing line {line + 1}"
    assert escape(listing.lines[line].strip()) in child.toolTip(1)
    rect = view.kernels.visualItemRect(child)
    qtbot.mouseClick(view.kernels.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: tab.listing.current_line() == line, timeout=5000)
    assert tab.pages.currentWidget() is tab.listing_page
    assert tab.listing.line_text(line).strip().startswith(f"{node}:")
    assert window.details.node is not None and window.details.node.name == node
    # the kernel's call was shown too, for going back to it
    assert view.code.marked_line() == k.line - 1



def test_a_file_click_shows_that_source(qtbot, open_wait, packages):
    _tab, view = _open_compiled(qtbot, open_wait, packages["only"])
    with open_archive(packages["only"]) as archive:
        (model,) = compiled_models(archive)
        rel = next(p for p in model.sources if p.endswith(".kernel.cpp"))
        text = read_source(archive, rel)
    view.lists.setCurrentWidget(view.files)
    row = next(i for i in range(view.files.topLevelItemCount())
               if view.files.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole) == rel)
    rect = view.files.visualItemRect(view.files.topLevelItem(row))
    with qtbot.waitSignal(view.sourceColoured, timeout=60000):
        qtbot.mouseClick(view.files.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert view.source_path == rel and view.sources.currentData() == rel
    assert view.code.toPlainText() == text
    # the .so is listed, never opened
    so = next(i for i in range(view.files.topLevelItemCount())
              if view.files.topLevelItem(i).text(0).endswith(".wrapper.so"))
    rect = view.files.visualItemRect(view.files.topLevelItem(so))
    qtbot.mouseClick(view.files.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert view.source_path == rel


def _rewritten(src: Path, dst: Path, edit) -> Path:
    """A copy of package `src` with each record's bytes passed through edit(name, data)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename, zin.read(info.filename)))
    return dst


def test_markup_in_a_package_stays_text(qtbot, open_wait, packages, tmp_path):
    markup = "<b>bold</b><img src=x>"

    def edit(name: str, data: bytes) -> bytes:
        if name.endswith("wrapper_metadata.json"):
            meta = json.loads(data)
            meta["AOTI_PLATFORM"] = markup
            return json.dumps(meta).encode()
        if name.endswith(".wrapper.cpp"):
            return data.replace(b"Topologically Sorted Source Nodes: [linear]",
                                f"Topologically Sorted Source Nodes: [{markup}]".encode())
        return data

    path = _rewritten(packages["only"], tmp_path / "markup.pt2", edit)
    _tab, view = _open_compiled(qtbot, open_wait, path)
    assert view.fields["platform"].text() == markup
    assert view.fields["platform"].textFormat() == Qt.TextFormat.PlainText
    rows = _tree_rows(view.kernels)
    assert any(r[1] == markup for r in rows)
    item = next(view.kernels.topLevelItem(i) for i, r in enumerate(rows) if r[1] == markup)
    assert item.child(0).text(0) == markup
    assert "<b>" not in item.child(0).toolTip(0) and "&lt;b&gt;" in item.child(0).toolTip(0)
    assert markup in view.code.toPlainText()
