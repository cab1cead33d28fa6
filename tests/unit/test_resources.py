"""The shipped desktop files: found through the package, consistent, and valid.

The validators are the real ones (desktop-file-validate, appstreamcli,
update-mime-database, xmllint from Debian's desktop-file-utils, appstream,
shared-mime-info, libxml2-utils); a test skips only when its tool is not installed.
"""

from __future__ import annotations

import configparser
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

import inspector
from inspector import resources
from inspector.resources import APP_ID, ICON_SIZES, MIME_TYPE, ResourceMissingError

ROOT = Path(__file__).resolve().parents[2]
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install desktop-file-utils appstream "
                    "shared-mime-info libxml2-utils)")
    return path


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive in .desktop files
    parser.read(resources.desktop_file(), encoding="utf-8")
    return parser["Desktop Entry"]


# --- finding the files -------------------------------------------------------------


def test_checkout_resources_found_through_the_package():
    # Tests run from the source tree: the package sits next to resources/.
    assert resources.resources_dir() == ROOT / "resources"
    for path in (resources.desktop_file(), resources.metainfo_file(), resources.mime_file(),
                 resources.icon_svg(), *(resources.icon_png(s) for s in ICON_SIZES)):
        assert path.is_file(), path


def _ours(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / f"{APP_ID}.desktop").write_text("[Desktop Entry]\n")
    return folder


def test_locate_prefers_the_copy_inside_the_package(tmp_path):
    package = tmp_path / "site-packages" / "inspector"
    shipped = _ours(package / "_resources")
    _ours(tmp_path / "site-packages" / "resources")
    assert resources.locate(package) == shipped


def test_locate_uses_the_checkout_folder_next_to_the_package(tmp_path):
    package = tmp_path / "checkout" / "inspector"
    package.mkdir(parents=True)
    checkout = _ours(tmp_path / "checkout" / "resources")
    assert resources.locate(package) == checkout


def test_locate_refuses_a_stray_resources_folder(tmp_path):
    # Another project's site-packages/resources/ must not be taken for ours.
    package = tmp_path / "site-packages" / "inspector"
    package.mkdir(parents=True)
    (tmp_path / "site-packages" / "resources").mkdir()
    with pytest.raises(ResourceMissingError, match="reinstall pt2-inspector"):
        resources.locate(package)


def test_missing_file_is_a_clear_error():
    with pytest.raises(ResourceMissingError, match="nope.svg is missing"):
        resources.resource_path("icons", "nope.svg")
    with pytest.raises(ValueError, match="no 17px icon"):
        resources.icon_png(17)


def test_demo_archive_is_shipped():
    demo = resources.demo_archive()
    assert demo.stat().st_size > 0
    with demo.open("rb") as f:
        assert f.read(4) == b"PK\x03\x04"


# --- icons ----------------------------------------------------------------------------


def _png_size_and_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (depth, color) == (8, 6), f"{path}: expected 8-bit RGBA"
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.parametrize("size", ICON_SIZES)
def test_png_icons_have_their_size_and_are_drawn(size):
    width, height, raw = _png_size_and_pixels(resources.icon_png(size))
    assert (width, height) == (size, size)
    # One filter byte per scanline, then RGBA: the inflated size proves the format.
    assert len(raw) == size * (1 + 4 * size)
    # The lens centre is the orange "baked constant" dot: the render did draw.
    r, g, b, a = _pixel(raw, size, size // 2 + size * 10 // 128, size // 2 + size * 10 // 128)
    assert a == 255 and r > 200 and g < 120 and b < 100, (r, g, b, a)


def _pixel(raw: bytes, width: int, x: int, y: int) -> tuple[int, int, int, int]:
    """Undo PNG scanline filters (RGBA8, bpp 4) down to row y; return pixel (x, y)."""
    stride = 4 * width
    prev = bytearray(stride)
    for row in range(y + 1):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - 4] if i >= 4 else 0
            up, up_left = prev[i], (prev[i - 4] if i >= 4 else 0)
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[i] = (line[i] + pred) & 0xFF
        prev = line
    return tuple(prev[4 * x:4 * x + 4])  # type: ignore[return-value]


def test_svg_icon_is_well_formed_and_square():
    root = ET.parse(resources.icon_svg()).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("width") == root.get("height")


# --- one application id everywhere -----------------------------------------------------


def test_desktop_file_names_our_id_icon_command_and_mime_type():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    entry = _desktop_entry()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entry["Icon"] == APP_ID
    assert entry["Exec"].split()[0] in scripts
    assert entry["Exec"].split()[1] == "%F"  # several archives open as tabs
    assert MIME_TYPE in entry["MimeType"].split(";")
    assert resources.desktop_file().name == f"{APP_ID}.desktop"


def test_metainfo_matches_the_app():
    root = ET.parse(resources.metainfo_file()).getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.findtext("launchable") == f"{APP_ID}.desktop"
    assert root.findtext("provides/binary") == _desktop_entry()["Exec"].split()[0]
    assert root.findtext("provides/mediatype") == MIME_TYPE
    # Each release needs an entry here, or software centres show a stale version.
    assert inspector.__version__ in [r.get("version") for r in root.iter("release")]


def test_mime_package_declares_the_type_glob_and_magic():
    root = ET.parse(resources.mime_file()).getroot()
    (mime,) = root.findall(f"{MIME_NS}mime-type")
    assert mime.get("type") == MIME_TYPE
    assert [g.get("pattern") for g in mime.findall(f"{MIME_NS}glob")] == ["*.pt2"]
    assert mime.find(f"{MIME_NS}sub-class-of").get("type") == "application/zip"
    (zip_match,) = mime.find(f"{MIME_NS}magic").findall(f"{MIME_NS}match")
    assert zip_match.get("value") == "PK\\003\\004"
    assert "/archive_format" in [m.get("value") for m in zip_match]


# --- the real validators --------------------------------------------------------------


def test_desktop_file_validates():
    result = _run(_tool("desktop-file-validate"), str(resources.desktop_file()))
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_metainfo_validates():
    result = _run(_tool("appstreamcli"), "validate", "--no-net", str(resources.metainfo_file()))
    assert result.returncode == 0, result.stdout + result.stderr


def test_xml_files_are_well_formed_for_xmllint():
    files = [resources.metainfo_file(), resources.mime_file(), resources.icon_svg()]
    result = _run(_tool("xmllint"), "--noout", *map(str, files))
    assert result.returncode == 0, result.stderr


def test_mime_package_compiles_with_update_mime_database(tmp_path):
    tool = _tool("update-mime-database")
    packages = tmp_path / "mime" / "packages"
    packages.mkdir(parents=True)
    shutil.copy(resources.mime_file(), packages)
    result = _run(tool, "-V", str(tmp_path / "mime"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    globs = (tmp_path / "mime" / "globs2").read_text()
    assert f"{MIME_TYPE}:*.pt2" in globs
    # The compiled type carries the magic (update-mime-database drops rules it can't parse).
    assert (tmp_path / "mime" / "magic").read_bytes().count(MIME_TYPE.encode()) == 1


def test_resources_module_imports_neither_qt_nor_torch():
    code = ("import sys, inspector.resources as r; r.resources_dir(); "
            "bad = [m for m in ('PySide6', 'torch') if m in sys.modules]; print(bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
