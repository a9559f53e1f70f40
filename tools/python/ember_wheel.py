"""Builds Ember's Python wheel: the `ember` package (python/ember), its native half (libember.so
over the C API and the `ember` command line, built by Bazel with -c opt) and the shared
libraries they need that a fresh Debian does not have, so `pip install` of the wheel is all a
user does.

Two ways in:
  * PEP 517 build backend (pyproject.toml names it): `python3 -m pip install .` or
    `python3 -m pip wheel . -w dist` in the repository;
  * directly: `python3 tools/python/ember_wheel.py --out dist [--library L --cli C]` (prebuilt
    binaries instead of the Bazel build, as the tests do).

The wheel is py3-none-linux_<arch>: the package binds the C API with ctypes, so no CPython ABI
is in it and one wheel serves every CPython 3. Bundled libraries sit in ember/_native beside
libember.so and the command line, whose run paths are set to $ORIGIN (DT_RPATH, which also
serves the bundled libraries' own dependencies) with patchelf; what is left to the system is the
C and C++ runtime every Debian has (SYSTEM_LIBRARIES). Each bundled library's Debian copyright
file travels with it (ember/_native/licenses).
"""
import base64
import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DIST_NAME = "ember_runtime"  # the distribution ("pip install ember-runtime"); the import name is `ember`
TARGETS = {"libember.so": "//python:libember.so", "ember": "//tools:ember"}
BAZEL_FLAGS = ["-c", "opt", "--force_pic"]  # the SDK's configuration: CI builds it once for both
# Present on every Debian / glibc system: never bundled (bundling libc breaks the loader).
SYSTEM_LIBRARIES = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|"
                              r"libgcc_s|libutil)\.so")


def version():
    with open(os.path.join(ROOT, "runtime", "version.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define EMBER_VERSION_{p} (\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise RuntimeError("runtime/version.h: EMBER_VERSION_MAJOR/MINOR/PATCH not found")
    return ".".join(p.group(1) for p in parts)


def bazel_environment():
    """The caller's environment less what pip adds for an isolated build: pip puts a fresh
    temporary directory on PATH each time, and Bazel keys every action on PATH, so keeping it
    would rebuild everything on every `pip install .` (minutes) instead of reusing the cache."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "pip-build-env" not in p)
    for name in ("PYTHONPATH", "PYTHONNOUSERSITE", "PIP_BUILD_TRACKER", "PEP517_BUILD_BACKEND"):
        env.pop(name, None)
    return env


def bazel_build():
    """Builds the native half with Bazel; returns {name: path}."""
    if not shutil.which("bazel"):
        raise RuntimeError("building the wheel needs Bazel and the dependencies ./setup.sh installs; run ./setup.sh")
    env = bazel_environment()
    done = subprocess.run(["bazel", "build"] + BAZEL_FLAGS + list(TARGETS.values()), cwd=ROOT, env=env)
    if done.returncode != 0:
        raise RuntimeError("bazel build failed (above); on a fresh checkout run ./setup.sh first")
    bin_dir = subprocess.run(["bazel", "info"] + BAZEL_FLAGS + ["bazel-bin"], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
    return {"libember.so": os.path.join(bin_dir, "python", "libember.so"), "ember": os.path.join(bin_dir, "tools", "ember")}


def needed_libraries(binaries):
    """{soname: path as the loader found it} of every library the binaries load (ldd), less
    SYSTEM_LIBRARIES."""
    found = {}
    for binary in binaries:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+)\s*=>\s*(\S+)", line)
            if not m:
                continue
            soname, path = m.groups()
            if SYSTEM_LIBRARIES.match(soname):
                continue
            if path == "not":
                raise RuntimeError(f"{binary} needs {soname}, which is not installed here; run ./setup.sh")
            found.setdefault(soname, path)
    return found


def copyright_file(library):
    """(package, its copyright file) for a bundled library, or (None, None). Debian's dpkg knows
    a library by the path its package installed (/lib or /usr/lib: usrmerge gives both), so each
    spelling is asked; a library from a .deb extracted into a prefix (cpuinfo, by setup.sh) has
    its copyright under that prefix's usr/share/doc."""
    spellings = [library]
    for a, b in (("/usr/lib/", "/lib/"), ("/lib/", "/usr/lib/")):
        if library.startswith(a):
            spellings.append(b + library[len(a):])
    for path in spellings:
        done = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if done.returncode == 0:
            package = done.stdout.split(":")[0].strip()
            notice = f"/usr/share/doc/{package}/copyright"
            return (package, notice) if os.path.isfile(notice) else (package, None)
    if "/usr/lib/" in library:
        doc = os.path.join(library.split("/usr/lib/")[0], "usr", "share", "doc")
        stem = os.path.basename(library).split(".so")[0]
        for package in sorted(os.listdir(doc)) if os.path.isdir(doc) else []:
            notice = os.path.join(doc, package, "copyright")
            if package.startswith(stem) and os.path.isfile(notice):
                return package, notice
    return None, None


def stage(binaries, staging):
    """Lays out the package under `staging`: ember/*.py, ember/_native/{libember.so, ember, bundled
    libraries, licenses}. Returns the bundled sonames."""
    pkg = os.path.join(staging, "ember")
    native = os.path.join(pkg, "_native")
    os.makedirs(os.path.join(native, "licenses"))
    src = os.path.join(ROOT, "python", "ember")
    for name in sorted(os.listdir(src)):
        if name.endswith(".py"):
            shutil.copyfile(os.path.join(src, name), os.path.join(pkg, name))
    libraries = needed_libraries([binaries["libember.so"], binaries["ember"]])
    for name in ("libember.so", "ember"):
        shutil.copyfile(binaries[name], os.path.join(native, name))
    for soname, path in sorted(libraries.items()):
        shutil.copyfile(os.path.realpath(path), os.path.join(native, soname))
        package, notice = copyright_file(path)
        if not notice:
            package, notice = copyright_file(os.path.realpath(path))
        if notice:
            shutil.copyfile(notice, os.path.join(native, "licenses", f"{package}.copyright"))
    for name in os.listdir(native):
        path = os.path.join(native, name)
        if os.path.isfile(path):
            os.chmod(path, 0o755 if name == "ember" else 0o644)
            # Everything loads from beside itself; DT_RPATH (--force-rpath) reaches dependencies
            # of dependencies too, where RUNPATH would stop at the first level.
            subprocess.run(["patchelf", "--force-rpath", "--set-rpath", "$ORIGIN", path], check=True)
    return sorted(libraries)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def pack(staging, wheel_directory):
    """Zips `staging` (with the .dist-info written here) into a wheel; returns its file name."""
    ver = version()
    tag = f"py3-none-linux_{platform.machine()}"
    dist_info = f"{DIST_NAME}-{ver}.dist-info"
    metadata = "\n".join([
        "Metadata-Version: 2.1", f"Name: {DIST_NAME.replace('_', '-')}", f"Version: {ver}",
        "Summary: Ember: export PyTorch models to .pte programs and run them on CPUs, GPUs and NPUs",
        "Requires-Python: >=3.8", "Requires-Dist: numpy", "Provides-Extra: torch", "Requires-Dist: torch; extra == 'torch'",
        "", "The `ember` package and command line; see docs/python.md in the repository.", ""])
    files = {
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: ember_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n",
        f"{dist_info}/entry_points.txt": "[console_scripts]\nember = ember._cli:main\n",
        f"{dist_info}/top_level.txt": "ember\n",
    }
    name = f"{DIST_NAME}-{ver}-{tag}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        def add(arcname, data, mode):
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            records.append(_record_line(arcname, data))

        for directory, _, names in sorted(os.walk(staging)):
            for n in sorted(names):
                path = os.path.join(directory, n)
                with open(path, "rb") as f:
                    add(os.path.relpath(path, staging), f.read(), os.stat(path).st_mode & 0o777)
        for arcname, text in files.items():
            add(arcname, text.encode(), 0o644)
        record = f"{dist_info}/RECORD"
        whl.writestr(zipfile.ZipInfo(record, date_time=(2020, 1, 1, 0, 0, 0)),
                     "\n".join(records + [f"{record},,"]) + "\n")
    return name


def build(wheel_directory, binaries=None):
    binaries = binaries or bazel_build()
    for name, path in binaries.items():
        if not os.path.isfile(path):
            raise RuntimeError(f"{name}: {path} does not exist")
    with tempfile.TemporaryDirectory(prefix="ember_wheel_") as staging:
        bundled = stage(binaries, staging)
        name = pack(staging, wheel_directory)
    print(f"ember_wheel: {name} (bundled: {', '.join(bundled) or 'none'})", file=sys.stderr)
    return name


# --- PEP 517 hooks ------------------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return build(wheel_directory)


def main(argv):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="directory for the wheel")
    p.add_argument("--library", help="a built libember.so (with --cli: skip the Bazel build)")
    p.add_argument("--cli", help="a built ember command line")
    args = p.parse_args(argv)
    if bool(args.library) != bool(args.cli):
        p.error("--library and --cli go together")
    binaries = {"libember.so": args.library, "ember": args.cli} if args.library else None
    print(os.path.join(args.out, build(args.out, binaries)))


if __name__ == "__main__":
    main(sys.argv[1:])
