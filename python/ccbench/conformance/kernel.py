"""packetdrill scripts on this machine's kernel: each in a fresh network namespace, one at a
time (a second run on the machine waits for the first), bounded in time; timing-only
failures re-run.

Each script runs as ``unshare --net --mount sh -c "ip link set lo up; exec packetdrill ARGS
SCRIPT"`` from the script's directory, as the Linux selftests' ksft_runner.sh runs them:
the namespaces are anonymous and die with packetdrill, so the tun device, the routes and the
script's sysctls go with them. The private mount namespace lets a copy of the scripts whose
symbolic links became one-line files (``common/defaults.sh`` holding the path it linked to,
as git writes them where symlinks are off) run unchanged: the target is bind-mounted over the
stand-in inside the namespace only.

The scripts set ``net.ipv4.tcp_congestion_control`` (cubic in packetdrill's defaults). A
network namespace may only choose an algorithm in the host's
``net.ipv4.tcp_allowed_congestion_control``; otherwise the sysctl fails and the script
quietly runs with the host's default (BBR on many hosts). So for the duration of the run
the algorithms the scripts name are added to that list, and removed again afterwards.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import shlex
import signal
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from ..errors import ScenarioError
from ..lifecycle import die_with_parent, signals_interrupt
from ..vm.guest import cache_dir
from . import packetdrill as pd
from .packetdrill_output import Reading, qdisc_kinds, read_output
from .verdict import Verdict

# Per script: the longest of the 47 takes about 20 s; packetdrill's run_all.py allows 180 s.
SCRIPT_TIMEOUT_S = 120
# A failure that is only a packet's time is re-run up to this many times (a busy machine
# delays packets by milliseconds; the default tolerance is 4 ms).
TIMING_RERUNS = 3
# The arguments tools/testing/selftests/net/packetdrill/ksft_runner.sh gives packetdrill.
IPV4_ARGS = (
    "--ip_version=ipv4",
    "--local_ip=192.168.0.1",
    "--gateway_ip=192.168.0.1",
    "--netmask_ip=255.255.0.0",
    "--remote_ip=192.0.2.1",
    "-D",
    "TFO_COOKIE=3021b9d889017eeb",
    "-D",
    "TFO_COOKIE_ZERO=b7c12350a90dc8f5",
    "-D",
    "CMSG_LEVEL_IP=SOL_IP",
    "-D",
    "CMSG_TYPE_RECVERR=IP_RECVERR",
)
IPV6_ARGS = (
    "--ip_version=ipv6",
    "--mtu=1520",
    "--local_ip=fd3d:0a0b:17d6::1",
    "--gateway_ip=fd3d:0a0b:17d6:8888::1",
    "--remote_ip=fd3d:fa7b:d17d::1",
    "-D",
    "TFO_COOKIE=c1d1e9742a47a9bc",
    "-D",
    "TFO_COOKIE_ZERO=82af1a8f9a205c34",
    "-D",
    "CMSG_LEVEL_IP=SOL_IPV6",
    "-D",
    "CMSG_TYPE_RECVERR=IPV6_RECVERR",
)
ALLOWED_CC = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
# A symbolic link written as a file holds one relative path and nothing else.
_STUB_MAX_BYTES = 512
_CC_SYSCTL = re.compile(r"tcp_congestion_control\s*=\s*[\"']?(\w+)")


def stack_name() -> str:
    return f"linux {platform.release()}"


def run_kernel(
    paths: list[Path],
    packetdrill: Optional[Path],
    tolerance_usecs: Optional[int],
    progress: Callable[[Verdict], None],
    *,
    timeout_s: float = SCRIPT_TIMEOUT_S,
) -> list[Verdict]:
    """Run every script in ``paths`` (files, or directories searched for ``*.pkt``) with
    packetdrill on this kernel, in sorted order, one at a time; ``progress`` sees each
    verdict as it is reached."""
    check_tolerance(tolerance_usecs)
    scripts = collect(paths)
    require_root_and_tools()
    binary = pd.binary(packetdrill, [s for _, s in scripts])
    wanted = set().union(*(congestion_controls(s) for _, s in scripts))
    verdicts = []
    with signals_interrupt(), one_run_at_a_time(), congestion_controls_allowed(wanted):
        for name, script in scripts:
            verdict = run_script(binary, script, name, tolerance_usecs, timeout_s)
            progress(verdict)
            verdicts.append(verdict)
    return verdicts


def check_tolerance(tolerance_usecs: Optional[int]) -> None:
    if tolerance_usecs is not None and not 0 <= tolerance_usecs <= 10_000_000:
        raise ScenarioError("--tolerance-usecs", "must be from 0 to 10000000 (10 s)")


@contextlib.contextmanager
def one_run_at_a_time() -> Iterator[None]:
    """Scripts are timed: a second kernel run on this machine waits for the first."""
    lock = cache_dir() / "packetdrill" / "run.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def collect(paths: Sequence[Path]) -> list[tuple[str, Path]]:
    """(name, script) for each script, sorted by name: a directory's scripts are named
    relative to it, a file relative to its parent's parent (``slow_start/x.pkt``)."""
    found: dict[Path, str] = {}
    for path in paths:
        if path.is_dir():
            root = path.resolve()
            scripts = sorted(p for p in root.rglob("*.pkt") if p.is_file())
            if not scripts:
                raise ScenarioError("PATH", f"{str(path)!r} holds no *.pkt scripts")
        elif path.is_file():
            root = path.resolve().parent.parent
            scripts = [path.resolve()]
        else:
            raise ScenarioError(
                "PATH", f"{str(path)!r} does not exist; give packetdrill scripts or directories of them"
            )
        for script in scripts:
            found.setdefault(script, script.relative_to(root).as_posix())
    return sorted(((name, script) for script, name in found.items()), key=lambda t: (t[0], str(t[1])))


def require_root_and_tools() -> None:
    if os.geteuid() != 0:
        raise ScenarioError(
            "--kernel",
            "running scripts on the kernel needs root (a network namespace and a tun "
            "device per script); run as root, or without --kernel for the simulator",
        )
    missing = [tool for tool in ("unshare", "ip") if shutil.which(tool, path=_path()) is None]
    if missing:
        raise ScenarioError("--kernel", f"needs {' and '.join(missing)} (util-linux, iproute2), which is not installed")
    if not Path("/dev/net/tun").exists():
        raise ScenarioError("--kernel", "this machine has no /dev/net/tun; packetdrill needs a tun device")


def run_script(
    binary: Path, script: Path, name: str, tolerance_usecs: Optional[int], timeout_s: float = SCRIPT_TIMEOUT_S
) -> Verdict:
    """One script's verdict, re-running a timing-only failure up to TIMING_RERUNS times."""
    text = script.read_text(errors="replace")
    reason = missing_on_this_kernel(text, script.name)
    if reason is not None:
        return Verdict(name, stack_name(), "unsupported", reason=reason, attempts=0)
    stand_ins = symlink_stand_ins(script, text)
    attempts = 0
    while True:
        attempts += 1
        reading = run_once(binary, script, text, stand_ins, tolerance_usecs, timeout_s)
        m = reading.mismatch
        if not (reading.outcome == "fail" and m is not None and m.timing_only and attempts <= TIMING_RERUNS):
            return Verdict(name, stack_name(), reading.outcome, reading.mismatch, reading.reason, attempts)


def is_ipv6(text: str, file_name: str) -> bool:
    """The script's own ``--ip_version`` line decides (as in ksft_runner.sh); without one,
    ``*v6.pkt`` scripts run over IPv6 (as in packetdrill's run_all.py) and others over IPv4."""
    declared = re.search(r"^\s*--ip_version=(\S+)", text, re.M)
    if declared:
        return declared[1] == "ipv6"
    return file_name.endswith("v6.pkt")


def packetdrill_args(text: str, file_name: str, tolerance_usecs: Optional[int]) -> list[str]:
    args = list(IPV6_ARGS if is_ipv6(text, file_name) else IPV4_ARGS)
    if tolerance_usecs is not None:
        args.append(f"--tolerance_usecs={tolerance_usecs}")
    return args


def run_once(
    binary: Path,
    script: Path,
    text: str,
    stand_ins: Sequence[tuple[Path, Path]],
    tolerance_usecs: Optional[int],
    timeout_s: float,
) -> Reading:
    """One packetdrill run in fresh network and mount namespaces; its process group is
    killed on timeout or interrupt, so nothing of it outlives the call."""
    steps = ["ip link set lo up"]
    steps += [f"mount --bind {shlex.quote(str(target))} {shlex.quote(str(stub))}" for stub, target in stand_ins]
    argv = [str(binary), *packetdrill_args(text, script.name, tolerance_usecs), script.name]
    steps.append("exec " + " ".join(shlex.quote(a) for a in argv))
    proc = subprocess.Popen(
        ["unshare", "--net", "--mount", "sh", "-c", " && ".join(steps)],
        cwd=script.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PATH=_path()),
        start_new_session=True,
        preexec_fn=die_with_parent(os.getpid()),
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return Reading("unsupported", reason=f"no verdict within {timeout_s:g} s; packetdrill was stopped")
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        # set_sysctls.py leaves a restore script named after packetdrill's pid (= proc.pid:
        # unshare and sh exec into it) in the host's /tmp.
        Path(f"/tmp/sysctl_restore_{proc.pid}.sh").unlink(missing_ok=True)
    return read_output(script.name, text, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _path() -> str:
    """PATH with the sbin directories, where ip, tc, sysctl and ethtool live."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(parts + [d for d in ("/usr/sbin", "/sbin") if d not in parts])


# -- what this kernel lacks --------------------------------------------------------------

_qdisc_cache: dict[str, bool] = {}


def qdisc_available(kind: str) -> bool:
    """Whether this kernel has the qdisc ``kind`` (tried on lo in a scratch namespace)."""
    if kind not in _qdisc_cache:
        try:
            done = subprocess.run(
                ["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", kind],
                capture_output=True,
                timeout=10,
                env=dict(os.environ, PATH=_path()),
            )
            _qdisc_cache[kind] = done.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _qdisc_cache[kind] = False
    return _qdisc_cache[kind]


def ipv6_on() -> bool:
    flag = Path("/proc/sys/net/ipv6/conf/default/disable_ipv6")
    return flag.is_file() and flag.read_text().strip() == "0"


def missing_on_this_kernel(text: str, file_name: str) -> Optional[str]:
    """Why the script cannot run as written here (checked before running it), or None."""
    for kind in qdisc_kinds(text):
        if not qdisc_available(kind):
            return f"this kernel has no {kind} qdisc (the script installs one with tc)"
    if is_ipv6(text, file_name) and not ipv6_on():
        return "IPv6 is off on this machine (no net.ipv6, or net.ipv6.conf.default.disable_ipv6 = 1)"
    return None


# -- the files a script's shell lines run ----------------------------------------------------


def referenced_files(script: Path, text: str) -> list[Path]:
    """The existing files the script's backtick commands name (``../common/defaults.sh``),
    resolved from the script's directory as packetdrill's shell resolves them."""
    found: list[Path] = []
    for block in re.findall(r"`([^`]*)`", text):
        for word in re.findall(r"[\w./-]*/[\w.-]+", block):
            path = Path(word) if word.startswith("/") else script.parent / word
            with contextlib.suppress(OSError):
                if path.is_file() and path not in found:
                    found.append(path)
    return found


def stand_in_target(path: Path) -> Optional[Path]:
    """What ``path`` stands for if it is a symbolic link written as a file: a small file,
    not executable, holding only a relative path to an existing file (git writes links so
    where symlinks are off; packetdrill's ``tcp/common/defaults.sh`` is one)."""
    try:
        if path.is_symlink() or os.access(path, os.X_OK) or path.stat().st_size > _STUB_MAX_BYTES:
            return None
        words = path.read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(words) != 1 or "/" not in words[0] or words[0].startswith(("/", "#")):
        return None
    target = (path.parent / words[0]).resolve()
    return target if target.is_file() and target != path.resolve() else None


def symlink_stand_ins(script: Path, text: str) -> list[tuple[Path, Path]]:
    """(stand-in, target) for the files the script runs that are symbolic links written as
    files; the run bind-mounts each target over its stand-in in its own mount namespace."""
    pairs = []
    for path in referenced_files(script, text):
        target = stand_in_target(path)
        if target is not None:
            pairs.append((path.resolve(), target))
    return pairs


def congestion_controls(script: Path) -> set[str]:
    """The algorithms the script's sysctls choose, in the script or a file its shell
    commands run (``../common/defaults.sh``, through a stand-in)."""
    text = script.read_text(errors="replace")
    names = set(_CC_SYSCTL.findall(text))
    for path in referenced_files(script, text):
        path = stand_in_target(path) or path
        with contextlib.suppress(OSError):
            if path.stat().st_size < 65536:
                names |= set(_CC_SYSCTL.findall(path.read_text(errors="replace")))
    return names


@contextlib.contextmanager
def congestion_controls_allowed(names: set[str]) -> Iterator[list[str]]:
    """Within the block, ``names`` (those this kernel has) are in the host's
    ``net.ipv4.tcp_allowed_congestion_control``, so that a network namespace may choose
    them; afterwards the ones added are taken out again."""
    try:
        available = set(AVAILABLE_CC.read_text().split())
        allowed = ALLOWED_CC.read_text().split()
    except OSError:
        yield []
        return
    added = sorted(n for n in names if n in available and n not in allowed)
    if added:
        ALLOWED_CC.write_text(" ".join(allowed + added))
    try:
        yield added
    finally:
        if added:
            with contextlib.suppress(OSError):
                now = ALLOWED_CC.read_text().split()
                ALLOWED_CC.write_text(" ".join(n for n in now if n not in added))


# -- the recorded verdicts -------------------------------------------------------------------


def record(verdicts: Sequence[Verdict], path: Path) -> None:
    """Write ``{"kernel": release, "scripts": [verdict, ...]}`` (sorted by script) to ``path``."""
    kernels = sorted({v.stack for v in verdicts})
    kernel = kernels[0].removeprefix("linux ") if len(kernels) == 1 else platform.release()
    doc = {"kernel": kernel, "scripts": [v.to_dict() for v in sorted(verdicts, key=lambda v: v.script)]}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def load_recorded(path: Path) -> list[Verdict]:
    """The verdicts ``record`` wrote."""
    doc = json.loads(path.read_text())
    return [Verdict.from_dict(d) for d in doc["scripts"]]
