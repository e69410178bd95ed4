"""The machine's float32 FMA peak, measured by the native probe in fma_probe.c.

The probe is compiled on first use with the system C compiler (``$CC``, else ``cc``, ``gcc``
or ``clang``; ``-O2 -march=native``) into benchmarks/.build/ (git-ignored), under a name that
hashes the source, the compiler and the flags, and called through ctypes.

    python benchmarks/fma_probe.py    # prints the peak on 1 thread and on all threads
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "fma_probe.c"
BUILD_DIR = HERE / ".build"
FLAGS = ("-O2", "-march=native", "-shared", "-fPIC", "-pthread")
COMPILERS = ("cc", "gcc", "clang")


class ProbeUnavailable(Exception):
    """The probe cannot be built or run here (no compiler, a failed compile, no threads)."""


@dataclass(frozen=True)
class Peak:
    """Best GFLOP/s of several runs, on one thread and on ``threads`` threads at once."""

    isa: str
    one_thread: float
    all_threads: float
    threads: int
    runs: int

    def for_threads(self, threads: int) -> float:
        """The peak that bounds a workload on ``threads`` threads (1, or all of them)."""
        return self.one_thread if threads == 1 else self.all_threads


def find_compiler(environ: dict[str, str] | None = None) -> list[str] | None:
    """The C compiler's command: ``$CC`` if set (and found), else the first of cc, gcc, clang on PATH."""
    environ = os.environ if environ is None else environ
    path = environ.get("PATH", os.defpath)
    candidates = [shlex.split(environ["CC"])] if environ.get("CC", "").strip() else []
    candidates += [[name] for name in COMPILERS]
    for command in candidates:
        found = shutil.which(command[0], path=path)
        if found:
            return [found, *command[1:]]
    return None


def library_name(compiler: list[str], source_text: str, stem: str = "fma_probe") -> str:
    digest = hashlib.sha256("\0".join([*compiler, *FLAGS, source_text]).encode()).hexdigest()[:16]
    return f"{stem}-{digest}.so"


def build(build_dir: Path = BUILD_DIR, environ: dict[str, str] | None = None, source: Path = SOURCE) -> Path:
    """The compiled probe (``source``: fma_probe.c, or another probe beside it), compiling it
    unless this source, compiler and flags were built before."""
    compiler = find_compiler(environ)
    if compiler is None:
        raise ProbeUnavailable("no C compiler found ($CC, cc, gcc or clang)")
    target = build_dir / library_name(compiler, source.read_text(), source.stem)
    if target.exists():
        return target
    build_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build_dir) as scratch:
        partial = Path(scratch) / target.name
        result = subprocess.run([*compiler, *FLAGS, "-o", str(partial), str(source)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            first_line = (result.stderr.strip().splitlines() or ["no message"])[0]
            raise ProbeUnavailable(f"{compiler[0]} failed on {source.name}: {first_line}")
        os.replace(partial, target)  # atomic: a concurrent report never loads a half-written file
    return target


def load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.fma_probe_gflops.restype = ctypes.c_double
    lib.fma_probe_gflops.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.fma_probe_isa.restype = ctypes.c_char_p
    return lib


def best_gflops(lib: ctypes.CDLL, threads: int, runs: int, seconds: float) -> float:
    """The best of ``runs`` runs of about ``seconds`` each, after a short calibration run."""
    iterations = 100_000
    start = time.perf_counter()
    if lib.fma_probe_gflops(threads, iterations) <= 0:
        raise ProbeUnavailable(f"the probe could not start {threads} threads")
    elapsed = max(time.perf_counter() - start, 1e-6)
    iterations = max(iterations, int(iterations * seconds / elapsed))
    return max(lib.fma_probe_gflops(threads, iterations) for _ in range(runs))


def measure(threads: int | None = None, runs: int = 5, seconds: float = 0.05, build_dir: Path = BUILD_DIR,
            environ: dict[str, str] | None = None) -> Peak:
    """The FMA peak on 1 thread and on all ``threads`` (default: every CPU); raises ProbeUnavailable."""
    threads = threads or os.cpu_count() or 1
    lib = load(build(build_dir, environ))
    one = best_gflops(lib, 1, runs, seconds)
    every = best_gflops(lib, threads, runs, seconds) if threads > 1 else one
    return Peak(lib.fma_probe_isa().decode(), one, every, threads, runs)


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def main() -> None:
    try:
        peak = measure()
    except ProbeUnavailable as err:
        print(f"no FMA peak: {err}")
        return
    has_avx512 = "avx512f" in cpu_flags()
    print(f"float32 FMA peak ({peak.isa}; the CPU {'has' if has_avx512 else 'lacks'} avx512f), "
          f"best of {peak.runs} runs:")
    print(f"  1 thread     {peak.one_thread:7.1f} GFLOP/s")
    print(f"  {peak.threads} threads    {peak.all_threads:7.1f} GFLOP/s")


if __name__ == "__main__":
    main()
