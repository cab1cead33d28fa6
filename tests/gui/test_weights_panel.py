"""The Weights panel, on real archives exported by real torch (in a child process, so
this test process never imports torch): its statistics are `weights --json`'s and
torch's own, NaN/Inf rows are marked in the theme's colours, the histogram is core's,
Cancel stops the pass and leaves no thread running, a weight that cannot be read
says so in its row (no dialog), and a weight jumps to its placeholder in the listing.

Screenshots: PT2I_SHOT_DIR=DIR saves the window with the panel shown at 1024x700 and
1400x880 (light and dark) as DIR/ui19-*.png.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _panel_helpers import no_leaks  # noqa: F401 (a fixture)
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QMessageBox

from inspector.core.archive import open_archive
from inspector.core.weight_stats import compute_stats, histogram
from inspector.core.weight_table import CANCELLED_NOTE
from inspector.core.weights import WeightReader, list_weights
from inspector.ui.widgets.theme import DARK, LIGHT
from inspector.ui.widgets.weights_view import COLUMNS, FLAG_ROLE, SORT_ROLE, STAT_KEYS, format_value

ROOT = Path(__file__).resolve().parents[2]

# Exported in a child: a NaN/Inf weight, a bfloat16 one, a half one, a transposed one,
# a buffer, a lifted constant, and a big one (several MB) for the cancel test. The child
# prints torch's own statistics of every state_dict entry and constant.
_EXPORT = r'''
import json, math, sys, warnings
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.lin = nn.Linear(6, 4)
        w = torch.randn(5, 6, generator=g)
        w[0, 1], w[2, 2], w[3, 0], w[4, 4] = math.nan, math.inf, -math.inf, 0.0
        self.wnan = nn.Parameter(w)
        self.wbf = nn.Parameter(torch.randn(9, 6, generator=g).bfloat16())
        self.w16 = nn.Parameter(torch.randn(3, 6, generator=g).half())
        self.wt = nn.Parameter(torch.randn(6, 4, generator=g).t())
        self.big = nn.Parameter(torch.randn(int(sys.argv[2]), generator=g) * 2 + 0.5)
        self.register_buffer("scale", torch.ones(4) * 3)
        self.const = torch.randn(4, generator=g)

    def forward(self, x):
        y = self.lin(x) * self.scale + self.const
        y = y + (self.wnan.nan_to_num() @ x.T).sum() + self.wbf.float().sum() + self.w16.float().sum()
        return y + self.wt.sum() + self.big[:4]

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ep = torch.export.export(M(), (torch.randn(2, 6),))
    torch.export.save(ep, sys.argv[1])
out = {}
for name, t in [*ep.state_dict.items(), *ep.constants.items()]:
    t = t.detach().double()
    finite = t[torch.isfinite(t)]
    out[name] = {"nan": int(torch.isnan(t).sum()), "inf": int(torch.isinf(t).sum()),
                 "zeros": int((t == 0).sum()), "min": float(finite.min()),
                 "max": float(finite.max()), "mean": float(finite.mean()),
                 "std": float(finite.std())}
print(json.dumps(out))
'''
BIG = 6_000_000  # 24 MB of float32: ~90 blocks, long enough to cancel in


def _export(path: Path, big: int = 2000) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _EXPORT, str(path), str(big)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("weights-gui") / "nan-bf16.pt2"
    return path, _export(path)


@pytest.fixture(scope="module")
def big_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("weights-gui-big") / "big.pt2"
    _export(path, BIG)
    return path


def _cli_json(path: Path) -> list[dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "inspector", "weights", str(path), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    programs = json.loads(proc.stdout)["programs"]
    assert len(programs) == 1
    return programs[0]["weights"]


def _panel(window):
    panel = window.job_panels["weights"]
    window.job_panels.docks["weights"].raise_()
    return panel


def _open(qtbot, window, open_wait, path: Path):
    panel = _panel(window)
    with qtbot.waitSignal(panel.statsReady, timeout=60000):
        tab = open_wait(path)
    return panel, tab


def _row_of(panel, name: str) -> int:
    return next(i for i, e in enumerate(panel.model.entries) if e.info.name == name)


def test_statistics_are_the_commands_and_torchs(qtbot, no_leaks, window, open_wait, exported):  # noqa: F811
    path, torch_stats = exported
    panel, _tab = _open(qtbot, window, open_wait, path)
    cli = _cli_json(path)
    assert not panel.result.cancelled
    # the same rows as `weights --json` (through JSON, as the command prints them)
    assert json.loads(json.dumps(panel.result.rows)) == cli
    model = panel.model
    assert model.rowCount() == len(cli)
    for r, row in enumerate(cli):
        assert model.data(model.index(r, 0)) == row["name"]
        for c, key in STAT_KEYS.items():
            assert COLUMNS[c].lower() == key
            assert model.data(model.index(r, c)) == format_value(row["stats"][key]), (row["name"], key)
            assert model.data(model.index(r, c), SORT_ROLE) == pytest.approx(float(row["stats"][key]))
        ref = torch_stats[row["name"]]  # torch's own numbers on the loaded program
        for key in ("nan", "inf", "zeros"):
            assert row["stats"][key] == ref[key], (row["name"], key)
        for key in ("min", "max", "mean", "std"):
            assert math.isclose(row["stats"][key], ref[key], rel_tol=1e-4, abs_tol=1e-6), (row["name"], key)
    assert {"wbf", "w16", "wnan", "const", "scale"} <= {r["name"] for r in cli}
    assert next(r for r in cli if r["name"] == "wbf")["dtype"] == "bfloat16"
    assert window.last_error is None


def test_nan_inf_rows_are_marked_in_theme_colours(qtbot, no_leaks, window, open_wait, exported):  # noqa: F811
    path, torch_stats = exported
    panel, _tab = _open(qtbot, window, open_wait, path)
    model = panel.model
    marked = {model.entries[r].info.name for r in range(model.rowCount())
              if model.data(model.index(r, 0), FLAG_ROLE) == "nonfinite"}
    assert marked == {n for n, s in torch_stats.items() if s["nan"] or s["inf"]} == {"wnan"}
    r = _row_of(panel, "wnan")
    clean = _row_of(panel, "wbf")
    app = QApplication.instance()
    old = app.palette()
    try:
        for palette_window, theme in (("#f0f0f0", LIGHT), ("#202124", DARK)):
            pal = QPalette(old)
            pal.setColor(QPalette.ColorRole.Window, QColor(palette_window))
            app.setPalette(pal)
            qtbot.wait(10)
            model.refresh_theme()
            fg = model.data(model.index(r, COLUMNS.index("NaN")), 9)  # ForegroundRole
            bg = model.data(model.index(r, COLUMNS.index("Shape")), 8)  # BackgroundRole
            assert QColor(fg).name() == theme.severity["error"].name()
            assert QColor(bg).rgb() == theme.severity["error"].rgb() and QColor(bg).alpha() < 255
            assert model.data(model.index(clean, COLUMNS.index("Shape")), 8) is None
    finally:
        app.setPalette(old)
        model.refresh_theme()


def test_sorting_by_a_statistic(qtbot, no_leaks, window, open_wait, exported):  # noqa: F811
    path, _ = exported
    panel, _tab = _open(qtbot, window, open_wait, path)
    panel.table.sortByColumn(COLUMNS.index("Max"), Qt.SortOrder.DescendingOrder)
    proxy = panel.proxy
    shown = [proxy.index(i, COLUMNS.index("Max")).data(SORT_ROLE) for i in range(proxy.rowCount())]
    assert shown == sorted(shown, reverse=True) and len(shown) == panel.model.rowCount()


def test_histogram_is_cores(qtbot, no_leaks, window, open_wait, exported):  # noqa: F811
    path, _ = exported
    panel, _tab = _open(qtbot, window, open_wait, path)
    with open_archive(path) as a, WeightReader(a) as reader:
        weights = {w.name: w for w in list_weights(a, "model", a.program("model"))}
        for name in ("wnan", "wbf", "big"):
            with qtbot.waitSignal(panel.histogramReady, timeout=20000) as got:
                assert panel.select_weight(name)
            expected = histogram(reader, weights[name], 64, stats=compute_stats(reader, weights[name]))
            assert np.array_equal(got.args[0].counts, expected.counts), name
            assert np.array_equal(panel.histogram.counts, expected.counts)
            assert np.allclose(panel.histogram.edges, expected.edges)
            n = weights[name].numel
            finite = n - (2 + 1 if name == "wnan" else 0)  # wnan: one NaN, two Inf left out
            assert int(panel.histogram.counts.sum()) == finite
            assert panel.histogram.title.text().startswith(name)


def test_jump_selects_the_placeholder_and_users(qtbot, no_leaks, window, open_wait, exported):  # noqa: F811
    path, _ = exported
    panel, tab = _open(qtbot, window, open_wait, path)
    view = tab.view
    specs = {s.target: s.name for s in view.program.input_specs if s.target}
    with qtbot.waitSignal(panel.histogramReady, timeout=20000):
        panel.select_weight("wnan")
    entry = panel.selected_entry()
    assert entry.placeholder == specs["wnan"] == "p_wnan"
    tab.listing.set_current_line(len(view.listing) - 1)
    with qtbot.waitSignal(window.workspace.nodeRequested, timeout=5000) as req:
        assert panel.jump_to_placeholder()
    assert req.args[1:] == ["model", "p_wnan"]
    line = tab.listing.current_line()
    assert line == view.listing.definitions[("", "p_wnan")]
    assert "p_wnan" in view.listing.lines[line]
    # its users: the nodes whose inputs name the placeholder; clicking one shows it
    users = [n.name for n in view.program.graph.nodes if "p_wnan" in n.input_names()]
    assert users and [panel.users.itemText(i) for i in range(panel.users.count())] == users
    panel.users.activated.emit(0)
    node = view.node_at(tab.listing.current_line())
    assert node is not None and node.name == users[0]


def test_cancel_stops_and_leaves_no_thread(qtbot, no_leaks, window, open_wait, big_archive):  # noqa: F811
    panel, _tab = _open(qtbot, window, open_wait, big_archive)
    assert not panel.result.cancelled and all(r["stats"] for r in panel.result.rows)
    with qtbot.waitSignal(panel.statsReady, timeout=60000) as got:
        panel.compute()
        assert panel.cancel_button.isEnabled() and panel.busy()
        panel.cancel()
    result = got.args[0]
    assert result.cancelled
    big = _row_of(panel, "big")
    assert result.rows[big]["stats"] is None and result.rows[big]["note"] == CANCELLED_NOTE
    assert panel.model.data(panel.model.index(big, COLUMNS.index("Note"))) == CANCELLED_NOTE
    assert "cancelled" in panel.summary.text()
    doc = window.workspace.current
    qtbot.waitUntil(lambda: not doc.tasks.busy(), timeout=5000)
    assert window.workspace.pool.waitForDone(5000)
    assert window.workspace.pool.activeThreadCount() == 0
    assert not panel.cancel_button.isEnabled() and panel.compute_button.isEnabled()
    assert not panel.progress.isVisible()


def _rewrite(src: Path, dst: Path, edit) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("model_weights_config.json"):
                doc = json.loads(data)
                edit(doc["config"])
                data = json.dumps(doc).encode()
            zout.writestr(info, data)


HOSTILE = '<img src="x.png"><b>scale</b>'


def test_unreadable_weights_say_why_in_their_row(qtbot, no_leaks, window, open_wait, exported,  # noqa: F811
                                                  tmp_path):
    path, _ = exported
    bad = tmp_path / "bad.pt2"

    def edit(config: dict[str, Any]) -> None:
        config["wbf"]["use_pickle"] = True
        config["w16"]["tensor_meta"]["storage_offset"] = {"as_int": 10_000}  # past its record
        config["wt"]["tensor_meta"]["sizes"] = [{"as_int": 4}, {"as_int": '<b>x</b>'}]
        config[HOSTILE] = config.pop("scale")  # a name that is markup

    _rewrite(path, bad, edit)
    panel, _tab = _open(qtbot, window, open_wait, bad)
    cli = {r["name"]: r for r in _cli_json(bad)}
    rows = {r["name"]: r for r in panel.result.rows}
    assert json.loads(json.dumps(rows)) == cli
    model = panel.model
    note = COLUMNS.index("Note")
    assert model.data(model.index(_row_of(panel, "wbf"), note)) == "not read (pickled)"
    w16 = model.data(model.index(_row_of(panel, "w16"), note))
    assert w16.startswith("error: ") and "record" in w16
    assert model.data(model.index(_row_of(panel, "w16"), 0), FLAG_ROLE) == "error"
    wt = model.data(model.index(_row_of(panel, "wt"), note))
    assert wt.startswith(("error: ", "not read"))
    # notes are tooltips shown literally, not as markup
    tip = model.data(model.index(_row_of(panel, "w16"), note), 3)  # ToolTipRole
    assert "<b>" not in tip.replace("<p style='white-space:pre-wrap'>", "")
    assert all(r["stats"] for n, r in rows.items() if n not in ("wbf", "w16", "wt"))
    hostile = _row_of(panel, HOSTILE)  # shown as the text it is
    assert model.data(model.index(hostile, 0)) == HOSTILE
    assert "<img" not in model.data(model.index(hostile, 0), 3)  # its tooltip, escaped
    panel.select_weight(HOSTILE)
    assert panel.histogram.title.textFormat() == Qt.TextFormat.PlainText
    assert window.last_error is None
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    with qtbot.waitSignal(panel.histogramReady, timeout=1000, raising=False) as got:
        panel.select_weight("w16")
    assert not got.signal_triggered and "error" in panel.histogram.title.text()


def test_screenshots(qtbot, no_leaks, window, open_wait, exported, tmp_path):  # noqa: F811
    path, _ = exported
    folder = Path(os.environ.get("PT2I_SHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    panel, _tab = _open(qtbot, window, open_wait, path)
    app = QApplication.instance()
    old = app.palette()
    try:
        for scheme in ("light", "dark"):
            if scheme == "dark":
                app.setPalette(_dark_palette())
                panel.model.refresh_theme()
            for w, h in ((1024, 700), (1400, 880)):
                window.resize(w, h)
                with qtbot.waitSignal(panel.histogramReady, timeout=20000):
                    panel.select_weight("wnan" if w == 1024 else "big")
                qtbot.wait(50)
                image = window.grab().toImage()
                out = folder / f"ui19-weights-{w}x{h}-{scheme}.png"
                assert image.save(str(out))
                assert image.width() == w and image.height() == h
                assert out.stat().st_size > 10_000
        # after the jump: the listing on the weight's placeholder (light)
        app.setPalette(old)
        panel.model.refresh_theme()
        with qtbot.waitSignal(panel.histogramReady, timeout=20000):
            panel.select_weight("wnan")
        assert panel.jump_to_placeholder()
        qtbot.wait(50)
        image = window.grab().toImage()
        assert image.save(str(folder / "ui19-weights-jump-1400x880-light.png"))
    finally:
        app.setPalette(old)


def _dark_palette() -> QPalette:
    pal = QPalette()
    for role, color in ((QPalette.ColorRole.Window, "#202124"), (QPalette.ColorRole.Base, "#1e1f22"),
                        (QPalette.ColorRole.AlternateBase, "#26282c"),
                        (QPalette.ColorRole.Text, "#d4d4d4"), (QPalette.ColorRole.WindowText, "#d4d4d4"),
                        (QPalette.ColorRole.Button, "#2b2d31"), (QPalette.ColorRole.ButtonText, "#d4d4d4"),
                        (QPalette.ColorRole.Highlight, "#2f5d9e"),
                        (QPalette.ColorRole.HighlightedText, "#ffffff")):
        pal.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.ButtonText, QPalette.ColorRole.Text, QPalette.ColorRole.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#6b717a"))
    return pal


def test_toy_programs_match_the_command(qtbot, no_leaks, window, open_wait, toy_archive):  # noqa: F811
    """The real toy (ViT encoder + GPT-2 decoder, two programs): each program's table is
    `weights --json`'s, after switching programs in the panel; tied weights (lm_head and
    wte share one record) each jump to their own placeholder."""
    panel, tab = _open(qtbot, window, open_wait, toy_archive)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "inspector", "weights", str(toy_archive), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    cli = {p["name"]: p["weights"] for p in json.loads(proc.stdout)["programs"]}
    assert len(cli) == 2
    first = panel.program
    assert json.loads(json.dumps(panel.result.rows)) == cli[first]
    other = next(n for n in cli if n != first)
    with qtbot.waitSignal(panel.statsReady, timeout=60000):
        tab.select_program(other)  # the archive tab's switcher: the panel follows the window
    assert panel.program == other and panel.programs.currentText() == other
    assert json.loads(json.dumps(panel.result.rows)) == cli[other]
    decoder = next(n for n in cli if "decoder" in n or any("lm_head" in r["name"] for r in cli[n]))
    if panel.program != decoder:
        with qtbot.waitSignal(panel.statsReady, timeout=60000):
            panel.programs.setCurrentText(decoder)
    view = window.current_tab().doc.views[decoder]
    specs = {s.target: s.name for s in view.program.input_specs if s.target}
    tied = [n for n in ("decoder.lm_head.weight", "decoder.transformer.wte.weight") if n in specs]
    assert tied, sorted(specs)[:10]
    for name in tied:
        assert panel.select_weight(name)
        with qtbot.waitSignal(window.workspace.nodeRequested, timeout=5000):
            assert panel.jump_to_placeholder()
        tab = window.current_tab()
        assert tab.view is view
        assert tab.listing.current_line() == view.listing.definitions[("", specs[name])]


# Tied weights (one storage, two names), a buffer: torch says which names share data
# and on which device each lives; the panel's Device / Record / Shared with columns
# (once the Tables dock's Weights tab) must say the same.
_TIED = r'''
import json, sys, warnings
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.head(self.emb(x) * self.scale)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ep = torch.export.export(M(), (torch.tensor([[1, 2]]),))
    torch.export.save(ep, sys.argv[1])
tensors = {**ep.state_dict, **ep.constants}
by_storage = {}
for name, t in tensors.items():
    by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(name)
print(json.dumps({name: {"device": str(t.device),
                         "tied": sorted(n for n in by_storage[t.untyped_storage().data_ptr()]
                                        if n != name)} for name, t in tensors.items()}))
'''


def test_device_record_and_sharing_columns_are_torchs(qtbot, no_leaks, window, open_wait,  # noqa: F811
                                                      tmp_path):
    path = tmp_path / "tied.pt2"
    proc = subprocess.run([sys.executable, "-c", _TIED, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    torch_says = json.loads(proc.stdout.strip().splitlines()[-1])
    panel, _tab = _open(qtbot, window, open_wait, path)
    model = panel.model
    device, record, shared = (COLUMNS.index(c) for c in ("Device", "Record", "Shared with"))
    names = [model.data(model.index(r, 0)) for r in range(model.rowCount())]
    assert sorted(names) == sorted(torch_says) == ["emb.weight", "head.weight", "scale"]
    with zipfile.ZipFile(path) as zf:  # the record each name's config points at
        configs = {}
        for n in zf.namelist():
            if n.endswith(("weights_config.json", "constants_config.json")):
                configs.update(json.loads(zf.read(n)).get("config", {}))
    for r, name in enumerate(names):
        assert model.data(model.index(r, device)) == torch_says[name]["device"]
        shown = model.data(model.index(r, shared))
        assert sorted(filter(None, shown.split(", "))) == torch_says[name]["tied"], name
        assert model.data(model.index(r, record)) == configs[name]["path_name"]
    # the Tables dock no longer has a Weights tab of its own
    tables = window.tables
    assert [tables.tabText(i).split(" (")[0] for i in range(tables.count())] == [
        "Signature", "Records", "Ranges"]
