"""Build a wheelhouse for installing agentgym on a machine without network access (docs/install.md).

Run it on a connected machine; it downloads, for the target Python and platform, binary wheels of
what the target lacks and nothing else: never torch, transformers or tokenizers (the node keeps its
own CUDA builds), and with ``--node-packages`` none of the packages the node already has.

    # on the node (no network needed): what it has
    python -m pip list --format=freeze > node-packages.txt
    # on a connected machine, in a checkout of this repository
    python scripts/wheelhouse.py --out wheelhouse --python-version 3.12 --platform manylinux_2_35_x86_64 \\
        --extras train,alfworld --node-packages node-packages.txt
    # on the node, in the same checkout: torch and transformers stay as they are
    pip install --no-index --find-links wheelhouse -e ".[train,alfworld]"

The wheelhouse also holds the project's own wheel (``pip install --no-index --find-links wheelhouse
"agentgym[train,alfworld]"`` works without a checkout) and its build backend (setuptools, wheel),
which ``pip install -e`` needs offline.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "agentgym"
# The node's own: the wheelhouse never holds them, whatever the node list says.
NEVER = ("torch", "transformers", "tokenizers")
# Extras with packages that require torch themselves (vllm; trl and accelerate): pip would download
# torch to resolve them, and a wheelhouse does not carry torch.
NEEDS_TORCH = ("vllm", "trl", "bench", "dev")
# Packages ALFWorld's engine needs that publish source releases only, and the requirements that pull
# them in: built here (build_from_source) when one of those is wanted.
SOURCE_ONLY = {"jericho": ("textworld", "alfworld"), "fast-downward-textworld": ("textworld", "alfworld")}
# What `pip install -e` builds the project with, offline (pyproject.toml's [build-system]).
BUILD = ("setuptools>=77", "wheel")

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version
except ImportError:  # pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import InvalidVersion, Version


class UsageError(Exception):
    """Bad input: printed as one line."""


def _load_pyproject() -> dict:
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError("reading pyproject.toml needs Python 3.11+ or `pip install tomli`") from None
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def requirements(extras: list[str], target_env: dict[str, str]) -> list[Requirement]:
    """The project's dependencies plus those of ``extras`` (extras that name the project itself,
    as ``agentgym[train,datasets]``, are followed), markers evaluated for the target."""
    project = _load_pyproject()
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise UsageError(f"unknown extra {', '.join(unknown)}; pyproject.toml has {', '.join(sorted(optional))}")
    heavy = [e for e in extras if e in NEEDS_TORCH]
    if heavy:
        raise UsageError(f"extra {', '.join(heavy)} has packages that require torch themselves, which a wheelhouse "
                         "does not carry: install it where pip can reach an index")
    out: dict[str, Requirement] = {}
    seen: set[str] = set()

    def add(text: str) -> None:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate(target_env):
            return
        name = canonicalize_name(req.name)
        if name == PROJECT:
            for extra in sorted(req.extras):
                if extra not in seen:
                    seen.add(extra)
                    for t in optional[extra]:
                        add(t)
            return
        if name in out:  # the same package from two extras: both ranges apply
            merged = Requirement(str(out[name]))
            merged.specifier &= req.specifier
            merged.extras |= req.extras
            out[name] = merged
        else:
            req.marker = None
            out[name] = req

    for text in project.get("dependencies", []):
        add(text)
    for extra in extras:
        add(f"{PROJECT}[{extra}]")
    return list(out.values())


def read_node_packages(path: str) -> dict[str, Version | None]:
    """``pip list --format=freeze`` (or ``pip freeze``) output: name -> version (None: name only)."""
    found: dict[str, Version | None] = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise UsageError(f"cannot read --node-packages {path}: {e.strerror}") from None
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(===?)\s*(\S+)|@.*)?$", line)
        if not m:
            raise UsageError(f"--node-packages {path}: cannot read the line {line!r} "
                             "(expected NAME==VERSION, as `pip list --format=freeze` writes)")
        version = None
        if m.group(3):
            try:
                version = Version(m.group(3))
            except InvalidVersion:
                pass
        found[canonicalize_name(m.group(1))] = version
    return found


def _manylinux(tag: str) -> tuple[tuple[int, int], str] | None:
    """``manylinux_2_35_x86_64`` -> ((2, 35), "x86_64")."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(.+)", tag)
    return ((int(m.group(1)), int(m.group(2))), m.group(3)) if m else None


def platforms(platform: str) -> list[str]:
    """``manylinux_2_28_x86_64`` -> itself and every older manylinux tag of the arch: pip matches
    ``--platform`` tags exactly, and a wheel built for an older glibc runs on a newer one."""
    m = _manylinux(platform)
    if not m or m[0][0] != 2:
        return [platform]
    glibc, arch = m[0][1], m[1]
    tags = [f"manylinux_2_{n}_{arch}" for n in range(glibc, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return tags + [f"{name}_{arch}" for n, name in legacy.items() if n <= glibc]


def this_platform() -> str:
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if plat.startswith("linux_"):
        libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
        if libc and libc.startswith("glibc "):
            major, minor = libc.split()[1].split(".")[:2]
            return f"manylinux_{major}_{minor}_{plat[len('linux_'):]}"
    return plat


def target_environment(python_version: str, platform: str) -> dict[str, str]:
    """Marker values of the target (for requirements with ``; python_version < ...`` and the like)."""
    system = "Linux" if "linux" in platform else "Darwin" if platform.startswith("macosx") else \
        "Windows" if platform.startswith("win") else sys.platform
    return {"python_version": python_version, "python_full_version": python_version + ".0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "platform_system": system, "sys_platform": {"Linux": "linux", "Darwin": "darwin",
                                                        "Windows": "win32"}.get(system, system),
            "os_name": "nt" if system == "Windows" else "posix",
            "platform_machine": (_manylinux(platform) or (None, platform.split("_", 1)[-1]))[1],
            "platform_release": "", "platform_version": "", "implementation_version": python_version + ".0"}


def plan(reqs: list[Requirement], node: dict[str, Version | None] | None) -> tuple[list[str], set[str], list[str]]:
    """(requirements to download, names the node provides, notes). A node package whose version is
    outside a requirement is not provided: the wheelhouse holds a version inside it."""
    notes, wanted = [], []
    provided = {name for name in node or {} if name not in NEVER}
    for req in reqs:
        name = canonicalize_name(req.name)
        have = node.get(name, "missing") if node is not None else "missing"
        if name in NEVER:
            if node is not None and have == "missing":
                notes.append(f"the node has no {req.name}: install it there first (the wheelhouse never holds it)")
            elif isinstance(have, Version) and not req.specifier.contains(have, prereleases=True):
                raise UsageError(f"the node's {req.name} {have} is outside {req}: upgrade it on the node first "
                                 "(the wheelhouse never holds it)")
            continue
        if have != "missing" and (have is None or req.specifier.contains(have, prereleases=True)):
            continue  # the node's own copy does
        if isinstance(have, Version):
            notes.append(f"the node's {req.name} {have} is outside {req}: the wheelhouse holds one inside it")
            provided.discard(name)
        wanted.append(str(req))
    return wanted, provided, notes


def pip(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pip", *args]
    print("+", " ".join(cmd), flush=True)
    if not capture:
        return subprocess.run(cmd, check=True)
    return subprocess.run(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _needs_glibc(whl: Path) -> tuple[int, int] | None:
    """The newest glibc symbol version the wheel's compiled files ask for (None: no ELF files)."""
    import zipfile

    found = None
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            data = z.read(name)
            if data[:4] == b"\x7fELF":
                versions = [tuple(map(int, v.split(b"."))) for v in re.findall(rb"GLIBC_(2\.\d+)", data)]
                found = max([found or (0, 0), *versions])
    return found


def _loader_view(data: bytes) -> bytes | None:
    """What the dynamic loader reads of an ELF file: the fields of its header that it uses, its
    program headers and the bytes of every segment (never the section headers, which is where
    ``strip --strip-debug`` is meant to act); None when the file cannot be read that way."""
    import struct

    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    end = "<" if data[5] == 1 else ">"
    wide = data[4] == 2  # ELFCLASS64
    header = struct.Struct(end + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
    (e_type, machine, version, entry, phoff, _shoff, flags, ehsize, phentsize, phnum,
     *_sections) = header.unpack_from(data, 16)
    # PN_XNUM: the real count lives in the first section header, which this check does not read
    if phnum == 0xFFFF or phentsize != (56 if wide else 32) or phoff + phnum * phentsize > len(data):
        return None
    # the first segment maps the header too: the section header fields in it are blanked, as the loader
    # never reads them (e_shoff; e_shentsize, e_shnum, e_shstrndx)
    data = bytearray(data)
    shoff, shfields = (0x28, 0x3A) if wide else (0x20, 0x2E)
    data[shoff:shoff + (8 if wide else 4)] = bytes(8 if wide else 4)
    data[shfields:shfields + 6] = bytes(6)
    view = [data[:16], struct.pack(end + "HHIQQIHHH", e_type, machine, version, entry, phoff, flags, ehsize,
                                   phentsize, phnum), data[phoff:phoff + phnum * phentsize]]
    for n in range(phnum):
        at = phoff + n * phentsize
        if wide:
            _type, _flags, offset, _vaddr, _paddr, filesz = struct.unpack_from(end + "IIQQQQ", data, at)
        else:
            _type, offset, _vaddr, _paddr, filesz = struct.unpack_from(end + "IIIII", data, at)
        if offset + filesz > len(data):
            return None
        view.append(data[offset:offset + filesz])
    return b"".join(view)


def strip_debug(whl: Path) -> tuple[int, int]:
    """Drop the debug information of the compiled files in ``whl`` (``strip --strip-debug``),
    rewriting its RECORD; returns (bytes the wheel lost, compiled files left as published).

    A stripped file is kept only when what the dynamic loader reads of it is byte for byte what it
    read of the original (:func:`_loader_view`: header, program headers, every segment), so it loads
    as the published one does. strip is not always so careful: on libraries that auditwheel's
    patchelf rewrote (scipy's OpenBLAS and gfortran) it moves segments off page alignment, and the
    loader refuses them ("ELF load command address/offset not page-aligned"); such files stay as
    published. Wheels where nothing is dropped are left as they are, byte for byte. Needs binutils'
    strip (without it, nothing changes)."""
    import base64
    import hashlib
    import zipfile

    strip = shutil.which("strip")
    if not strip:
        return 0, 0
    with zipfile.ZipFile(whl) as z:
        infos = z.infolist()
        compiled = [i for i in infos if re.search(r"\.so(\.[\d.]+)?$", i.filename)]
        if not compiled:
            return 0, 0
        with tempfile.TemporaryDirectory(prefix="agentgym-strip-") as tmp:
            paths, originals = {}, {}
            for i in compiled:
                data = z.read(i)
                if data[:4] == b"\x7fELF":
                    path = paths[i.filename] = Path(tmp) / str(len(paths))
                    path.write_bytes(data)
                    originals[i.filename] = data
            if paths:
                subprocess.run([strip, "--strip-debug", *map(str, paths.values())], check=True)
            stripped, kept_as_published = {}, 0
            for name, path in paths.items():
                data, original = path.read_bytes(), originals[name]
                if len(data) >= len(original):
                    continue  # nothing to drop (strip may even grow a file)
                view = _loader_view(original)
                if view is not None and _loader_view(data) == view:
                    stripped[name] = data
                else:
                    kept_as_published += 1
            if not stripped:
                return 0, kept_as_published
            record = next(i.filename for i in infos if i.filename.endswith(".dist-info/RECORD"))
            members, rows = [], []
            for i in infos:
                data = b"" if i.filename == record else stripped.get(i.filename) or z.read(i)
                if not i.is_dir() and i.filename != record:
                    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    rows.append(f"{i.filename},sha256={digest},{len(data)}")
                members.append((i, data))
            rebuilt = whl.with_name(whl.name + ".part")
            with zipfile.ZipFile(rebuilt, "w", zipfile.ZIP_DEFLATED) as out:
                for i, data in members:  # the same order: the .dist-info files stay last, as the format asks
                    if i.filename == record:
                        data = ("\n".join(rows + [f"{record},,"]) + "\n").encode()
                    out.writestr(i, data, zipfile.ZIP_DEFLATED)
    lost = whl.stat().st_size - rebuilt.stat().st_size
    if lost <= 0:  # compressed, the saving can vanish: then the published wheel is the better one
        rebuilt.unlink()
        return 0, kept_as_published
    rebuilt.replace(whl)
    return lost, kept_as_published


def build_from_source(req: str, built: Path, constraints: Path, platform: str) -> Path:
    """A wheel of ``req`` built here from its source release, for a package that publishes no wheel
    (textworld's jericho and fast-downward-textworld). Such a build holds this machine's compiled
    code under a ``py3-none-any`` name, so it must be a machine of the node's kind: the same OS and
    architecture, and a glibc no newer than the node's."""
    before = set(built.glob("*.whl"))
    pip("wheel", "--quiet", "--no-deps", "--no-binary=:all:", "-w", str(built), "-c", str(constraints), req)
    (whl,) = set(built.glob("*.whl")) - before
    here = this_platform()
    glibc = _needs_glibc(whl)
    if glibc:
        target, mine = _manylinux(platform), _manylinux(here)
        if not target or not mine or target[1] != mine[1]:
            raise UsageError(f"{req} publishes no wheel and its build holds compiled code: build the wheelhouse on "
                             f"a machine of the node's kind ({platform}; this one is {here})")
        node_glibc = target[0]
        if glibc > node_glibc:
            raise UsageError(f"{whl.name}, built here from source, needs glibc {glibc[0]}.{glibc[1]} and the node "
                             f"({platform}) has {node_glibc[0]}.{node_glibc[1]}: give the node's own --platform "
                             "(its glibc), or build the wheelhouse on a machine whose glibc is no newer than "
                             "the node's")
    print(f"wheelhouse: built {whl.name} from source here"
          + (f" (compiled; needs glibc {glibc[0]}.{glibc[1]} or newer)" if glibc else ""), flush=True)
    return whl


def build_project_wheel(out: Path) -> None:
    """The project's wheel, built from a copy of the source (the checkout gets no build files)."""
    with tempfile.TemporaryDirectory(prefix="agentgym-src-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
            ".git", "*.egg-info", "build", "dist", "__pycache__", "runs", "outputs", ".venv", ".whl", "wheelhouse*",
            "benchmarks", "tests", "docs"))
        pip("wheel", "--no-deps", "--quiet", "-w", str(out), str(src))


def wheel_name(path: Path) -> str:
    return canonicalize_name(path.name.split("-", 1)[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the wheelhouse directory (created)")
    p.add_argument("--python-version", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                   help="the node's Python, MAJOR.MINOR (default: this interpreter's)")
    p.add_argument("--platform", default=None,
                   help="the node's platform tag, e.g. manylinux_2_28_x86_64 (glibc 2.28 or newer); "
                        "default: this machine's")
    p.add_argument("--extras", default="train",
                   help="comma-separated extras to install on the node, e.g. train,alfworld (default: train)")
    p.add_argument("--node-packages", default=None,
                   help="the node's `python -m pip list --format=freeze`: its packages are left out and their "
                        "versions pinned (default: the node is taken to have torch, transformers and tokenizers only)")
    p.add_argument("--no-project", action="store_true", help="leave out the project's own wheel")
    p.add_argument("--keep-debug", action="store_true",
                   help="keep the wheels byte for byte as published (by default the debug information of their "
                        "compiled files is dropped where the dynamic loader reads the same bytes after: spacy's "
                        "wheel 35 -> 7 MB)")
    args = p.parse_args(argv)

    try:
        if not re.fullmatch(r"3\.\d+", args.python_version):
            raise UsageError(f"--python-version {args.python_version}: give MAJOR.MINOR, e.g. 3.12")
        platform = args.platform or this_platform()
        extras = [e.strip() for e in args.extras.split(",") if e.strip()]
        reqs = requirements(extras, target_environment(args.python_version, platform))
        node = read_node_packages(args.node_packages) if args.node_packages else None
        wanted, provided, notes = plan(reqs, node)
    except UsageError as e:
        print(f"wheelhouse: {e}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"wheelhouse: {note}", file=sys.stderr)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = ["--only-binary=:all:", "--python-version", args.python_version, "--implementation", "cp"]
    for tag in platforms(platform):
        target += ["--platform", tag]
    with tempfile.TemporaryDirectory(prefix="agentgym-wheelhouse-") as tmp:
        cfile = Path(tmp) / "constraints.txt"
        # the node's versions of what it provides: what the wheelhouse holds must work with them
        cfile.write_text("".join(f"{name}=={node[name]}\n" for name in sorted(provided) if node[name] is not None))
        built = Path(tmp) / "built"
        built.mkdir()
        try:
            wanted_names = {canonicalize_name(Requirement(w).name) for w in wanted}
            for name, parents in SOURCE_ONLY.items():
                if wanted_names & set(parents) and name not in provided:
                    build_from_source(name, built, cfile, platform)
            for _ in range(10):  # each pass builds one more package that has no wheel
                if not wanted:
                    break
                r = pip("download", "--quiet", "-d", str(out), *target, "--find-links", str(built), "-c", str(cfile),
                        *wanted, capture=True)
                if r.returncode == 0:
                    break
                missing = re.search(r"No matching distribution found for (\S+)", r.stdout)
                if not missing or any(wheel_name(w) == canonicalize_name(Requirement(missing.group(1)).name)
                                      for w in built.glob("*.whl")):
                    sys.stdout.write(r.stdout)
                    raise subprocess.CalledProcessError(r.returncode, "pip download")
                build_from_source(missing.group(1), built, cfile, platform)
            # pip builds a checkout in an environment of its own, which sees none of the node's packages:
            # the backend and everything it needs stay in the wheelhouse
            backend = Path(tmp) / "backend"
            pip("download", "--quiet", "-d", str(backend), *target, *BUILD)
            build_names = {wheel_name(w) for w in backend.glob("*.whl")}
            for w in backend.glob("*.whl"):
                shutil.copy2(w, out / w.name)
            if not args.no_project:
                build_project_wheel(out)
        except UsageError as e:
            print(f"wheelhouse: {e}", file=sys.stderr)
            return 2
        except subprocess.CalledProcessError as e:
            print(f"wheelhouse: pip stopped with status {e.returncode} (its message is above); a package with no "
                  f"wheel for Python {args.python_version} on {platform} cannot go into a wheelhouse", file=sys.stderr)
            return 1
    # pip downloads the whole dependency tree: drop what the node already has (and never torch & co)
    for whl in sorted(out.glob("*.whl")):
        name = wheel_name(whl)
        if name in NEVER or (name in provided and name not in build_names):
            whl.unlink()
    wheels = sorted(out.glob("*.whl"))
    if not args.keep_debug:
        saved = {w.name: strip_debug(w) for w in wheels}
        lost = [v[0] for v in saved.values() if v[0]]
        if lost:
            print(f"wheelhouse: dropping the debug information of compiled files made {len(lost)} wheels "
                  f"{sum(lost) / 1e6:.1f} MB smaller (--keep-debug keeps them as published)")
        refused = sum(v[1] for v in saved.values())
        if refused:
            print(f"wheelhouse: {refused} compiled files stay as published: stripping them would change what "
                  "the dynamic loader reads")
    size = sum(w.stat().st_size for w in wheels)
    print(f"wheelhouse: {len(wheels)} wheels, {size / 1e6:.1f} MB in {out} (Python {args.python_version}, {platform})")
    print(f'on the node: pip install --no-index --find-links {out} -e ".[{",".join(extras)}]"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
