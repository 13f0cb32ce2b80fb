"""The pinned requirements files (what `make setup` installs) and pyproject.toml (what
`pip install .` / `pip install .[embeddings]` installs) declare the same packages and pins."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

#: requirements file -> where pyproject.toml declares the same pins.
FILES = {
    "requirements.txt": "dependencies",
    "requirements-embeddings.txt": "embeddings",
    "requirements-spark.txt": "spark",
    "requirements-dev.txt": "dev",
}


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-r"):
            continue
        req = Requirement(line)
        out[req.name.lower()] = str(req)
    return out


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_requirements_files_and_pyproject_agree():
    project = _project()
    for name, key in FILES.items():
        text = (ROOT / name).read_text(encoding="utf-8").splitlines()
        declared = (
            project["dependencies"]
            if key == "dependencies"
            else project["optional-dependencies"][key]
        )
        assert _pins(text) == _pins(declared), name


def test_every_runtime_pin_is_exact():
    project = _project()
    every = [project["dependencies"], *project["optional-dependencies"].values()]
    loose = [r for group in every for r in group if "==" not in r]
    assert loose == []


def test_console_script_and_packages():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"] == {"medsim": "medsim_annot.cli:main"}
    assert pyproject["tool"]["setuptools"]["packages"]["find"]["include"] == [
        "medsim_annot*",
        "data_schemas*",
    ]


def test_license_is_an_spdx_string():
    """A ``project.license`` table makes setuptools warn at every build (PEP 639)."""
    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "Apache-2.0"


def test_pages_use_no_deprecated_container_width():
    """``use_container_width`` logs a deprecation warning on every run; ``width`` replaces it."""
    root = Path(__file__).resolve().parents[1]
    for path in [root / "app.py", *(root / "pages").rglob("*.py")]:
        assert "use_container_width" not in path.read_text(), path
