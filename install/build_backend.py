"""The build backend: maturin's, with the VM engine's static guest agent.

A wheel gets the agent as ``ccbench/vm/bin/ccbench-agent`` (where an installed ccbench
looks for it); an editable install leaves it in the workspace's ``target/``, where
ccbench run from the source tree looks. Where it cannot be built (no cargo, not
x86_64 Linux) the install goes on without it, and the VM engine says so.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any, Mapping, Optional

import maturin
from maturin import (  # noqa: F401  (the rest of PEP 517's hooks, unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

import static_agent  # beside this file: pyproject.toml's backend-path

IN_WHEEL = "ccbench/vm/bin/ccbench-agent"


def build_wheel(
    wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None
) -> str:
    name = maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
    built = static_agent.build()
    if built is not None:
        add_file(Path(wheel_directory) / name, IN_WHEEL, built.read_bytes())
    return name


def build_editable(
    wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None
) -> str:
    static_agent.build()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def add_file(wheel: Path, arcname: str, data: bytes) -> None:
    """Rewrite ``wheel`` with one more (executable) file, listed in its RECORD, which
    stays last; the new entry takes the RECORD's timestamp, so the wheel stays as
    reproducible as maturin made it."""
    staged = wheel.with_name(wheel.name + ".part")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as dst:
        record = next(i for i in src.infolist() if i.filename.endswith(".dist-info/RECORD"))
        for info in src.infolist():
            if info is not record:
                dst.writestr(info, src.read(info))
        entry = zipfile.ZipInfo(arcname, date_time=record.date_time)
        entry.external_attr = 0o100755 << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        dst.writestr(entry, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines = src.read(record).decode().rstrip("\n")
        dst.writestr(record, f"{lines}\n{arcname},sha256={digest},{len(data)}\n")
    staged.replace(wheel)
