"""Compiling congestion controls written in BPF C (``bpf:PATH.c``): the example, the
kernel's selftests kept as test inputs, the objects a loader must refuse, the cache, and
the one-line errors."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from ccbench.bpf import compile as bpf_compile
from ccbench.bpf.compile import compile_source, vmlinux_header
from ccbench.errors import ScenarioError
from conftest import ROOT

BPF = ROOT / "tests" / "bpf"
RENO = ROOT / "scenarios" / "bpf" / "reno.bpf.c"
TCP_CA_H = ROOT / "python" / "ccbench" / "bpf" / "include" / "ccbench" / "tcp_ca.h"
INSTALL = "apt-get install clang llvm libbpf-dev bpftool"

# Where CI is set, a missing tool fails the tests that need it instead of skipping them.
CI = bool(os.environ.get("CI"))
HAVE_CLANG = shutil.which("clang") is not None and Path("/usr/include/bpf/bpf_helpers.h").is_file()
HAVE_BPFTOOL = (shutil.which("bpftool") or shutil.which("bpftool", path="/usr/sbin:/sbin")) is not None
needs_clang = pytest.mark.skipif(not HAVE_CLANG and not CI, reason=f"clang or libbpf's headers missing ({INSTALL})")


def needs_vmlinux(test):  # type: ignore[no-untyped-def]
    """clang, this kernel's BTF and bpftool, to make and use a vmlinux.h."""
    no_btf = pytest.mark.skipif(not bpf_compile.BTF.is_file(), reason=f"this kernel has no BTF ({bpf_compile.BTF})")
    no_bpftool = pytest.mark.skipif(not HAVE_BPFTOOL and not CI, reason=f"bpftool is not installed ({INSTALL})")
    return needs_clang(no_btf(no_bpftool(test)))


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One cache for the module (vmlinux.h is made once), apart from the user's."""
    root = tmp_path_factory.getbasetemp() / "bpf-cache"
    monkeypatch.delenv("CCBENCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    return root / "ccbench" / "bpf"


@needs_clang
def test_the_reno_example_compiles_without_vmlinux_h() -> None:
    compiled = compile_source(RENO)
    assert compiled.path.read_bytes()[:4] == b"\x7fELF"
    assert ".struct_ops" in section_names(compiled.path)
    assert re.fullmatch(r"clang [\d.]+\S*, -O2 -g -target bpf, without vmlinux\.h", compiled.description)


@needs_vmlinux
@pytest.mark.parametrize("source", ["bpf_cubic.c", "bpf_dctcp.c"])
def test_the_kernels_selftests_compile_against_this_hosts_vmlinux_h(source: str) -> None:
    compiled = compile_source(BPF / "linux" / source)
    assert ".struct_ops" in section_names(compiled.path)
    assert f"vmlinux.h from this host's BTF (kernel {os.uname().release})" in compiled.description


@needs_clang
def test_a_second_compile_runs_no_clang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = compile_source(RENO)
    assert first.path.parent.parent == tmp_path / "ccbench" / "bpf"
    assert first.path.name == "reno.bpf.o"

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"ran {args[0]!r} on a cache hit")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert compile_source(RENO) == first


@needs_clang
def test_a_changed_local_header_compiles_again(tmp_path: Path) -> None:
    (tmp_path / "window.h").write_text("#define INITIAL_CWND 10\n")
    src = tmp_path / "init.bpf.c"
    src.write_text(
        '#include <ccbench/tcp_ca.h>\n#include "window.h"\nchar _license[] SEC("license") = "GPL";\n'
        'SEC("struct_ops")\nvoid BPF_PROG(w_init, struct sock *sk) { tcp_sk(sk)->snd_cwnd = INITIAL_CWND; }\n'
    )
    before = compile_source(src).path
    (tmp_path / "window.h").write_text("#define INITIAL_CWND 32\n")
    after = compile_source(src).path
    assert after != before and before.is_file() and after.is_file()


@needs_clang
def test_a_syntax_error_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "broken.bpf.c"
    src.write_text("#include <ccbench/tcp_ca.h>\nint x = ;\n")
    with pytest.raises(ScenarioError) as caught:
        compile_source(src)
    assert caught.value.field == f"bpf:{src}"
    assert "\n" not in str(caught.value)
    assert re.search(rf"{re.escape(str(src))}:2:\d+: expected expression", caught.value.message)


@needs_clang
def test_a_source_that_needs_vmlinux_h_where_it_cannot_be_made_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bpf_compile, "BTF", Path("/nonexistent/btf/vmlinux"))
    with pytest.raises(ScenarioError) as caught:
        compile_source(BPF / "linux" / "bpf_dctcp.c")
    assert "\n" not in str(caught.value)
    assert "includes vmlinux.h" in caught.value.message and "CONFIG_DEBUG_INFO_BTF" in caught.value.message


def test_without_clang_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ScenarioError) as caught:
        compile_source(RENO)
    assert str(caught.value) == f"bpf:{RENO}: needs clang with its BPF target: {INSTALL}"


def test_a_missing_source_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        compile_source(tmp_path / "absent.bpf.c")


@needs_clang
@pytest.mark.parametrize("name", ["unknown_kfunc", "unbounded_loop", "readonly_write", "no_struct_ops"])
def test_the_objects_a_loader_must_refuse_compile(name: str) -> None:
    path = compile_source(BPF / "bad" / f"{name}.c").path
    sections = section_names(path)
    assert "struct_ops" in sections  # the programs
    assert (".struct_ops" in sections) == (name != "no_struct_ops")  # the tcp_congestion_ops value
    if name == "unknown_kfunc":
        assert b"bpf_ccbench_no_such_kfunc" in path.read_bytes()
    if name == "unbounded_loop":
        assert has_backward_jump(section(path, "struct_ops")), "clang dropped the loop"


@needs_vmlinux
def test_tcp_ca_h_gives_each_field_this_kernels_type() -> None:
    """Sizes, signedness and bitfield widths as this kernel's BTF has them, so a program
    built with the header relocates onto the kernel; and every callback, in order."""
    kernel, ours = vmlinux_header().read_text(), TCP_CA_H.read_text()
    for name in ("sock", "inet_connection_sock", "tcp_sock", "ack_sample", "rate_sample"):
        mine = fields(struct_body(ours, name))
        theirs = fields(struct_body(kernel, name))
        assert mine, name
        assert {f: theirs.get(f) for f in mine} == mine, name
    callbacks = re.compile(r"\(\*(\w+)\)\(")
    assert callbacks.findall(struct_body(ours, "tcp_congestion_ops")) == callbacks.findall(
        struct_body(kernel, "tcp_congestion_ops")
    )


# The kernel's spellings of the types tcp_ca.h writes as __u32, unsigned long, ...
SAME_TYPE = {"u8": "__u8", "u16": "__u16", "u32": "__u32", "u64": "__u64", "s32": "__s32", "s64": "__s64"}
SAME_TYPE |= {"long unsigned int": "unsigned long", "long int": "long"}


def struct_body(text: str, name: str) -> str:
    found = re.search(rf"^struct {name} \{{\n(.*?)\n\}};", text, re.S | re.M)
    assert found, f"struct {name}"
    return found.group(1)


def fields(body: str) -> dict[str, str]:
    """Plain fields (not function pointers) by name: their type, with bitfield width or
    array length; nested anonymous structs' fields too."""
    out = {}
    for line in body.splitlines():
        line = re.sub(r"/\*.*?\*/", "", line).strip()
        m = re.fullmatch(r"([A-Za-z_][\w ]*?)\s+(\w+)\s*(:\s*\d+|\[\w+\])?;", line)
        if m:
            kind = SAME_TYPE.get(m.group(1), m.group(1))
            out[m.group(2)] = kind + (m.group(3) or "").replace(" ", "")
    return out


def elf_sections(path: Path) -> dict[str, bytes]:
    """An ELF64 little-endian object's sections by name."""
    data = path.read_bytes()
    shoff, shentsize, shnum, shstrndx = struct.unpack_from("<Q10xHHH", data, 0x28)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    strtab = data[names[4] : names[4] + names[5]]
    out = {}
    for name_off, kind, _flags, _addr, offset, size in headers:
        name = strtab[name_off : strtab.index(b"\0", name_off)].decode()
        out[name] = b"" if kind == 8 else data[offset : offset + size]  # SHT_NOBITS holds nothing
    return out


def section_names(path: Path) -> set[str]:
    return set(elf_sections(path))


def section(path: Path, name: str) -> bytes:
    return elf_sections(path)[name]


def has_backward_jump(code: bytes) -> bool:
    """A jump (class BPF_JMP or BPF_JMP32, not a call or exit) with a negative offset."""
    for i in range(0, len(code), 8):
        op, _regs, off = struct.unpack_from("<BBh", code, i)
        if op & 0x07 in (0x05, 0x06) and op & 0xF0 not in (0x80, 0x90) and off < 0:
            return True
    return False
