"""The window on a real X server (issue 16, item 1), and the xcb library check.

Every other window test uses Qt's offscreen platform, which needs none of the
X client libraries a user's desktop must have. Here the CLI starts the window
as a user would, with QT_QPA_PLATFORM=xcb, on an Xvfb server; and a plugin
whose libraries are missing gives one error line naming all of them, where Qt
itself aborts (exit 134) naming only the first.

This process never imports Qt: each window is a real `pt2-inspector` child.
Needs Xvfb and xwininfo (`apt-get install xvfb x11-utils`, which .ci/run does);
the C compiler test needs gcc. A missing tool is a skip that names it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inspector import xcb_check

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo" / "toy-tiny.pt2"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("QT_QPA_PLATFORM", "QT_QPA_PLATFORM_PLUGIN_PATH", "DISPLAY",
                        "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    assert "XDG_CONFIG_HOME" in extra, "the window must not touch the user's settings"
    env.update(extra)
    return env


def _cli(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


# --- which libraries are missing --------------------------------------------------------


def test_platform_name_follows_qt_rules() -> None:
    assert xcb_check.platform_name({"QT_QPA_PLATFORM": "xcb"}) == "xcb"
    assert xcb_check.platform_name({"QT_QPA_PLATFORM": "offscreen"}) == "offscreen"
    assert xcb_check.platform_name({"QT_QPA_PLATFORM": "xcb:dpi=96;wayland"}) == "xcb"
    assert xcb_check.platform_name({"QT_QPA_PLATFORM": "wayland;xcb"}) == "wayland"
    if sys.platform.startswith("linux"):
        assert xcb_check.platform_name({}) == "xcb"
        assert xcb_check.platform_name({"XDG_SESSION_TYPE": "wayland",
                                        "WAYLAND_DISPLAY": "wayland-0"}) == "wayland"


def test_message_names_every_library_and_one_apt_line() -> None:
    text = xcb_check.message(["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"])
    assert text.startswith("cannot start the window on X11 (") and text.endswith(")")
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4, libxcb-keysyms.so.1" in text
    assert "sudo apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1;" in text
    assert "\n" not in text


@pytest.fixture(scope="module")
def broken_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real libqxcb.so stand-in linked against two libraries that are then
    removed: the dynamic linker cannot find either, as on a desktop without them."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler (apt-get install gcc)")
    if shutil.which("ldd") is None:
        pytest.skip("needs ldd (glibc's libc-bin)")
    work = tmp_path_factory.mktemp("xcb-plugin")
    libs = work / "libs"
    libs.mkdir()
    for name in ("pt2ifakexcba", "pt2ifakexcbb"):
        (work / f"{name}.c").write_text(f"int {name}_f(void) {{ return 1; }}\n")
        subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,lib{name}.so.0", "-o",
                        str(libs / f"lib{name}.so.0"), str(work / f"{name}.c")], check=True)
        (libs / f"lib{name}.so").symlink_to(f"lib{name}.so.0")
    (work / "plugin.c").write_text(
        "int pt2ifakexcba_f(void); int pt2ifakexcbb_f(void);\n"
        "int plugin_f(void) { return pt2ifakexcba_f() + pt2ifakexcbb_f(); }\n")
    platforms = work / "platforms"
    platforms.mkdir()
    plugin = platforms / "libqxcb.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(plugin), str(work / "plugin.c"),
                    "-Wl,--no-as-needed", f"-L{libs}", f"-Wl,-rpath,{libs}", "-lpt2ifakexcba",
                    "-lpt2ifakexcbb"], check=True)
    assert xcb_check.missing_libraries(plugin) == []  # found while they are there
    shutil.rmtree(libs)
    return plugin


def test_missing_libraries_come_from_the_dynamic_linker(broken_plugin: Path) -> None:
    assert xcb_check.missing_libraries(broken_plugin) == ["libpt2ifakexcba.so.0",
                                                          "libpt2ifakexcbb.so.0"]


def test_installed_plugin_has_all_its_libraries() -> None:
    """This machine's own PySide6 xcb plugin (what .ci/run installs the libraries for)."""
    plugin = xcb_check.xcb_plugin({})
    assert plugin is not None and plugin.name == "libqxcb.so"
    missing = xcb_check.missing_libraries(plugin)
    assert missing == [], ("install them: apt-get install "
                           + " ".join(xcb_check.DEBIAN_PACKAGES.get(m, m) for m in missing or []))


def test_missing_libraries_are_one_error_line_not_qts_abort(broken_plugin: Path,
                                                            tmp_path: Path) -> None:
    env = _env(QT_QPA_PLATFORM="xcb", QT_QPA_PLATFORM_PLUGIN_PATH=str(broken_plugin.parent),
               DISPLAY=":97", XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = _cli("--demo", env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: cannot start the window on X11 (")
    assert "libpt2ifakexcba.so.0, libpt2ifakexcbb.so.0" in lines[0]
    assert "Traceback" not in proc.stderr
    # What the check spares the user: Qt, given the same plugin, aborts.
    qt = subprocess.run([sys.executable, "-c",
                         "from PySide6.QtWidgets import QApplication; QApplication([])"],
                        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert qt.returncode == -6 or qt.returncode == 134, qt.returncode
    assert "could not load the qt platform plugin" in qt.stderr.lower()


def test_xcb_without_a_display_is_one_error_line(tmp_path: Path) -> None:
    proc = _cli("--demo", env=_env(QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(tmp_path)),
                cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: cannot start the window on X11 (DISPLAY is not set: no X server to show it "
        "on; start from a desktop session, or set QT_QPA_PLATFORM=offscreen for headless use)"]


# --- the window on a real X server ------------------------------------------------------


@pytest.fixture(scope="module")
def xvfb() -> Iterator[str]:
    """A private Xvfb server; yields its DISPLAY."""
    if shutil.which("Xvfb") is None:
        pytest.skip("needs Xvfb (apt-get install xvfb)")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1600x1000x24",
                               "-nolisten", "tcp"], pass_fds=(write,),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as fp:
            number = fp.readline().strip()  # Xvfb writes it once it accepts clients
        assert number, "Xvfb did not start"
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_window_starts_on_xvfb_with_the_xcb_platform(xvfb: str, tmp_path: Path) -> None:
    if shutil.which("xwininfo") is None:
        pytest.skip("needs xwininfo (apt-get install x11-utils)")
    env = _env(QT_QPA_PLATFORM="xcb", DISPLAY=xvfb, XDG_CONFIG_HOME=str(tmp_path / "config"))
    # the console script, as a user starts it (its name is the X11 WM_CLASS instance)
    script = shutil.which("pt2-inspector")
    argv = [script] if script else [sys.executable, "-m", "inspector"]
    window = subprocess.Popen([*argv, str(DEMO)], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    title = f"{DEMO.name} — PT2 Inspector"
    tree = ""
    try:
        deadline = time.monotonic() + 120  # a loaded CI machine: start-up, not speed
        while window.poll() is None and time.monotonic() < deadline:
            tree = subprocess.run(["xwininfo", "-root", "-tree", "-display", xvfb],
                                  capture_output=True, text=True, timeout=30).stdout
            if f'"{title}"' in tree:
                break
            time.sleep(0.2)  # polling the X server for the window, not waiting for work
        running = window.poll() is None
    finally:
        window.terminate()
        out, err = window.communicate(timeout=30)
    assert running, f"the window exited {window.returncode}: {err[-2000:]}"
    mapped = [line for line in tree.splitlines() if f'"{title}"' in line]
    assert mapped, f"no window titled {title!r} on the X server:\n{tree[-2000:]}"
    # WM_CLASS (instance, class): what the desktop entry's StartupWMClass matches
    instance = "pt2-inspector" if script else "__main__.py"
    assert f'("{instance}" "PT2 Inspector")' in mapped[0], mapped[0]
    assert "qt.qpa" not in err, err


def test_screenshot_renders_through_xcb(xvfb: str, tmp_path: Path) -> None:
    out = tmp_path / "x11.png"
    env = _env(QT_QPA_PLATFORM="xcb", DISPLAY=xvfb, XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = _cli("--screenshot", str(out), str(DEMO), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1500, 900)  # gui._screenshot's size, drawn by the X server
