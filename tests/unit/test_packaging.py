"""The wheel: it carries the resources, installs, and its command runs.

Builds the real wheel from this checkout (hatchling, no network), installs it into a
fresh virtual environment, and runs the installed `pt2-inspector`. The new venv has
no packages of its own: a .pth file lends it the running interpreter's
site-packages (torch, PySide6, ... as installed by .ci/run), and since lines of a
.pth only extend sys.path (their own .pth files, e.g. an editable install of this
checkout, are not processed) the only `inspector` it can import is the wheel's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import inspector
from inspector.resources import APP_ID

ROOT = Path(__file__).resolve().parents[2]
RESOURCES = ROOT / "resources"


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Building needs the backend in this environment (it is in the `test` extra);
    # without it an offline build is impossible, which is the one reason to skip.
    pytest.importorskip("hatchling", reason="hatchling not installed: cannot build offline")
    out = tmp_path_factory.mktemp("wheel")
    result = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                   "--no-index", "-q", "-w", str(out), str(ROOT)])
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("pt2_inspector-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; returns its bin/ (Scripts\\ on Windows)."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    # pip of this environment installs into the new one (pip >= 22.3: --python).
    result = _run([sys.executable, "-m", "pip", "--python", str(python), "install",
                   "--no-deps", "--no-index", "-q", str(wheel)])
    assert result.returncode == 0, result.stdout + result.stderr
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    lent = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site.stdout.strip(), "zz_lent_dependencies.pth").write_text("\n".join(sorted(lent)) + "\n")
    return bindir


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def test_wheel_carries_every_resource(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(p.relative_to(RESOURCES).as_posix()
                     for p in RESOURCES.rglob("*") if p.is_file())
    assert shipped, "resources/ is empty"
    missing = [p for p in shipped if f"inspector/_resources/{p}" not in names]
    assert not missing, f"not in the wheel: {missing}"
    assert "inspector/resources.py" in names
    # The desktop files also go to PREFIX/share (found there after `pip install --user`).
    data = f"pt2_inspector-{inspector.__version__}.data/data/share"
    for path in (f"applications/{APP_ID}.desktop", f"metainfo/{APP_ID}.metainfo.xml",
                 f"mime/packages/{APP_ID}.xml", f"icons/hicolor/scalable/apps/{APP_ID}.svg",
                 f"icons/hicolor/48x48/apps/{APP_ID}.png"):
        assert f"{data}/{path}" in names, path
    entry_points = zipfile.ZipFile(wheel).read(
        f"pt2_inspector-{inspector.__version__}.dist-info/entry_points.txt").decode()
    assert "pt2-inspector = inspector.cli:console" in entry_points


def test_install_puts_the_launcher_entry_under_the_prefix(installed):
    share = installed.parent / "share"
    assert (share / "applications" / f"{APP_ID}.desktop").is_file()
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png").is_file()


def test_installed_command_reports_its_version(installed, tmp_path):
    result = _run([str(installed / "pt2-inspector"), "--version"], cwd=tmp_path, env=_clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"pt2-inspector {inspector.__version__}"


def test_installed_copy_finds_its_resources_inside_the_package(installed, tmp_path):
    code = ("import inspector, inspector.resources as r; "
            "print(inspector.__file__); print(r.resources_dir()); print(r.demo_archive())")
    result = _run([str(installed / "python"), "-c", code], cwd=tmp_path, env=_clean_env())
    assert result.returncode == 0, result.stderr
    package_file, folder, demo = (Path(line) for line in result.stdout.split())
    venv_dir = installed.parent
    assert venv_dir in package_file.parents, "imported the checkout, not the installed wheel"
    assert folder == package_file.parent / "_resources"
    assert demo.is_file() and folder in demo.parents


def test_installed_info_reads_the_demo_archive(installed, tmp_path):
    demo = _run([str(installed / "python"), "-c",
                 "import inspector.resources as r; print(r.demo_archive())"],
                cwd=tmp_path, env=_clean_env())
    assert demo.returncode == 0, demo.stderr
    result = _run([str(installed / "pt2-inspector"), "info", demo.stdout.strip()],
                  cwd=tmp_path, env=_clean_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in result.stderr.lower()
    # What the checkout's own reader says about the same file, line for line.
    from inspector.core.archive import open_archive

    with open_archive(demo.stdout.strip()) as archive:
        programs = {name: archive.program(name) for name in archive.program_names}
    assert sorted(programs) == ["decoder", "encoder"]
    for name, program in programs.items():
        major, minor = program.schema_version
        head = f"program {name}: {program.node_count} nodes, schema {major}.{minor}, " \
               f"exported with torch {program.torch_version}"
        assert head in result.stdout, (head, result.stdout[:800])


def test_bundle_entry_runs_modules_like_python_m(tmp_path):
    # A bundle's job runner calls [sys.executable, "-m", "inspector.jobs", ...] with
    # sys.executable being the bundle itself; packaging/entry.py must route that.
    entry = str(ROOT / "packaging" / "entry.py")
    env = {**_clean_env(), "PYTHONPATH": str(ROOT)}
    result = _run([sys.executable, entry, "-m", "inspector.jobs", "no-such-job"], env=env,
                  cwd=tmp_path)
    # The jobs entry point answered (one error event on stdout), not the CLI's parser.
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"event":"error"' in result.stdout and "inspector.jobs JOB" in result.stdout
    result = _run([sys.executable, entry, "-m", "inspector.desktop_install",
                   "--data-home", str(tmp_path / "share")], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "share" / "applications" / f"{APP_ID}.desktop").is_file()
    result = _run([sys.executable, entry, "--version"], env=env, cwd=tmp_path)
    assert result.stdout.strip() == f"pt2-inspector {inspector.__version__}", result.stderr


def test_jobs_without_torch_say_so_in_one_clear_error(tmp_path):
    # What the viewer bundle meets: no torch at all. -S drops site-packages, so the
    # child really cannot find torch (nor anything else installed).
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from inspector.jobs.__main__ import main; sys.exit(main(['export', '-o', 'x.pt2']))")
    result = _run([sys.executable, "-S", "-c", code, str(ROOT)], cwd=tmp_path, env=_clean_env())
    assert result.returncode == 1, result.stdout + result.stderr
    event = json.loads(result.stdout.splitlines()[-1])
    assert event["event"] == "error"
    assert event["message"].startswith("export needs torch")
    assert "internal error" not in event["message"]
    assert not (tmp_path / "x.pt2").exists()
