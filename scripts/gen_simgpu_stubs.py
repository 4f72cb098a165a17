#!/usr/bin/env python3
"""Generates simgpu's not-supported stubs for every CUDA symbol the pinned PyTorch imports.

Python loads torch's CUDA libraries with RTLD_NOW, so every function they import from
libcudart.so.13, libcuda.so.1, libcudnn.so.9, libcublas.so.13 and libcublasLt.so.13 must be
defined, under the version node the importer names, or `import torch` fails. simgpu implements
what torch needs to train; the rest gets a stub generated here from the REAL prototype (the
toolkit's headers, preprocessed), defined `extern "C" __attribute__((weak))` so that a
hand-written (strong) definition anywhere in the same library wins at link time, and returning
the library's not-supported status after one `simgpu: NAME: not supported` line on stderr (once
per name). Functions that return anything but the status enum cannot be stubbed truthfully:
they are listed (stdout and the generated file's header) and implemented by hand.

Usage:
  scripts/gen_simgpu_stubs.py --site-packages build/torch-venv/lib/python3.11/site-packages
      recomputes tests/simgpu/torch_imports.txt (name@version per line) from the wheel, then
      regenerates the stubs from it;
  scripts/gen_simgpu_stubs.py
      regenerates the stubs from the checked-in tests/simgpu/torch_imports.txt (no wheel needed).
Options: --cuda DIR (default $CUDA_HOME or /usr/local/cuda), --cxx COMPILER (default c++).
Python 3 standard library only.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPORTS = "tests/simgpu/torch_imports.txt"

# Per version node: the headers with the prototypes, the status enum, what a stub returns, the
# extra includes the return needs, and the generated file. libcuda.so.1's functions are listed
# for completeness: torch reaches the driver through entry points, not imports.
LIBS = {
    "libcudart.so.13": dict(
        headers=["cuda_runtime_api.h", "cuda_profiler_api.h"],
        status="cudaError_t",
        # A failed runtime call is also this thread's last error, as in the real runtime.
        ret="::simgpu::runtime::Record(cudaErrorNotSupported)",
        includes=['"tests/simgpu/driver/libcudart/runtime_driver.h"'],
        out="tests/simgpu/driver/libcudart/cudart_unsupported.gen.cc",
    ),
    "libcuda.so.1": dict(
        headers=["cuda.h"],
        status="CUresult",
        ret="CUDA_ERROR_NOT_SUPPORTED",
        includes=[],
        out="tests/simgpu/driver/libcuda/cuda_unsupported.gen.cc",
    ),
    "libcudnn.so.9": dict(
        headers=["cudnn.h"],
        status="cudnnStatus_t",
        ret="CUDNN_STATUS_NOT_SUPPORTED",
        includes=[],
        out="tests/simgpu/cudnn/cudnn_unsupported.gen.cc",
    ),
    "libcublas.so.13": dict(
        headers=["cublas_v2.h", "cublasXt.h"],
        status="cublasStatus_t",
        ret="CUBLAS_STATUS_NOT_SUPPORTED",
        includes=[],
        out="tests/simgpu/cublas/cublas_unsupported.gen.cc",
    ),
    "libcublasLt.so.13": dict(
        headers=["cublasLt.h"],
        status="cublasStatus_t",
        ret="CUBLAS_STATUS_NOT_SUPPORTED",
        includes=[],
        out="tests/simgpu/cublaslt/cublaslt_unsupported.gen.cc",
    ),
}

# The libraries simgpu replaces are not importers (they import from each other).
REPLACED = re.compile(r"nvidia/(cudnn/.*|cu13/lib/(libcudart|libcublas|libcublasLt)\.so\.13)$")


def importers(site):
    pats = ["torch/lib/*.so*", "torchvision/*.so", "nvidia/*/lib/*.so*"]
    files = sorted({f for p in pats for f in glob.glob(os.path.join(site, p))})
    return [f for f in files if os.path.isfile(f) and not REPLACED.search(os.path.relpath(f, site))]


def compute_imports(site):
    """name@version for every undefined symbol with one of LIBS's version nodes."""
    files = importers(site)
    if not files:
        sys.exit(f"gen_simgpu_stubs: no torch libraries under {site}")
    out = set()
    for f in files:
        nm = subprocess.run(["nm", "-D", "--undefined-only", "--with-symbol-versions", f],
                            capture_output=True, text=True)
        for line in nm.stdout.splitlines():
            sym = line.split()[-1] if line.split() else ""
            name, _, version = sym.partition("@")
            if version.lstrip("@") in LIBS:
                out.add(f"{name}@{version.lstrip('@')}")
    return sorted(out)


def preprocess(cuda, cxx, headers):
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as src:
        src.write("".join(f"#include <{h}>\n" for h in headers))
    try:
        return subprocess.run([cxx, "-E", "-P", "-std=c++17", f"-I{cuda}/include", src.name],
                              check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(src.name)


def strip_attributes(text):
    """Removes __attribute__((...)) and __declspec(...) with balanced parentheses."""
    while True:
        m = re.search(r"__attribute__\s*\(|__declspec\s*\(", text)
        if not m:
            return text
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += text[i] == "("
            depth -= text[i] == ")"
            i += 1
            if depth == 0:
                break
        text = text[: m.start()] + " " + text[i:]


def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def prototype(pp, name):
    """(return type, parameter list) of `name`'s declaration in the preprocessed text, or None."""
    for m in re.finditer(r"(?<![\w.>])" + re.escape(name) + r"\s*\(", pp):
        start = max(pp.rfind(";", 0, m.start()), pp.rfind("}", 0, m.start()),
                    pp.rfind("{", 0, m.start()))
        prefix = "\n".join(l for l in pp[start + 1 : m.start()].splitlines()
                           if not l.lstrip().startswith("#"))
        prefix = strip_attributes(prefix)
        prefix = re.sub(r'\bextern\s*"C"|\bextern\b|\bstatic\b|\binline\b', " ", prefix)
        ret = " ".join(prefix.split())
        if not ret or "typedef" in ret or "return" in ret or "=" in ret or "(" in ret:
            continue
        depth, i = 0, m.end() - 1
        while i < len(pp):
            depth += pp[i] == "("
            depth -= pp[i] == ")"
            i += 1
            if depth == 0:
                break
        rest = strip_attributes(pp[i : i + 400]).lstrip()
        if not rest.startswith(";"):
            continue  # a call or a definition, not the declaration
        params = []
        for p in split_top(pp[m.end() : i - 1]):
            p = " ".join(strip_attributes(p).split())
            p = split_top(p, "=")[0].strip()  # default arguments are the declaration's
            if p:
                params.append(p)
        return ret, ", ".join(params) or "void"
    return None


def emit(lib, cfg, entries, hand):
    lines = [
        f"// GENERATED by scripts/gen_simgpu_stubs.py from {IMPORTS} and the toolkit's",
        f"// {', '.join(cfg['headers'])}: do not edit. Regenerate with `scripts/gen_simgpu_stubs.py`",
        "// (add `--site-packages DIR` to recompute the import list from a torch wheel).",
        "//",
        f"// Every function the pinned torch imports from {lib} that returns {cfg['status']}, with",
        "// its real signature, defined weak: a hand-written definition in the library wins. A stub",
        "// says `simgpu: NAME: not supported` once and returns the not-supported status.",
    ]
    if hand:
        lines += ["//", "// Implemented by hand (they do not return the status enum):"]
        lines += [f"//   {n}" for n in hand]
    lines += ["", "#include <atomic>", "#include <cstdio>", ""]
    lines += ["#pragma GCC visibility push(default)"]
    lines += [f"#include <{h}>" for h in cfg["headers"]]
    lines += ["#pragma GCC visibility pop", ""]
    lines += [f"#include {inc}" for inc in cfg["includes"]]
    if cfg["includes"]:
        lines.append("")
    lines += [
        "namespace {",
        "",
        "// One line per name and process, however often torch retries.",
        "void SayNotSupported(std::atomic<bool>& said, const char* fn) {",
        "  if (!said.exchange(true)) std::fprintf(stderr, \"simgpu: %s: not supported\\n\", fn);",
        "}",
        "",
        "}  // namespace",
        "",
        '#define SIMGPU_STUB extern "C" __attribute__((weak, visibility("default")))',
        "",
    ]
    for name, ret, params in entries:
        lines += [
            f"SIMGPU_STUB {ret} {name}({params}) {{",
            "  static std::atomic<bool> said{false};",
            f'  SayNotSupported(said, "{name}");',
            f"  return {cfg['ret']};",
            "}",
            "",
        ]
    path = os.path.join(ROOT, cfg["out"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")
    # The repository's style, when clang-format is there (the file compiles either way).
    try:
        subprocess.run(["clang-format", "-i", "--style=file", path], cwd=ROOT, check=True)
    except (OSError, subprocess.CalledProcessError):
        print(f"{os.path.relpath(path, ROOT)}: not clang-formatted", file=sys.stderr)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--site-packages", help="a torch wheel's site-packages: recompute the imports")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = ap.parse_args()

    imports_path = os.path.join(ROOT, IMPORTS)
    if args.site_packages:
        imports = compute_imports(args.site_packages)
        with open(imports_path, "w") as f:
            f.write("".join(s + "\n" for s in imports))
        print(f"{IMPORTS}: {len(imports)} symbols")
    with open(imports_path) as f:
        imports = [l.strip() for l in f if l.strip() and not l.startswith("#")]

    by_lib = {}
    for sym in imports:
        name, _, lib = sym.partition("@")
        by_lib.setdefault(lib, []).append(name)
    for lib, names in sorted(by_lib.items()):
        cfg = LIBS[lib]
        pp = preprocess(args.cuda, args.cxx, cfg["headers"])
        entries, hand = [], []
        for name in sorted(set(names)):
            proto = prototype(pp, name)
            if proto is None:
                hand.append(name)
                print(f"{lib}: {name}: no prototype in {cfg['headers']}: implement by hand")
            elif proto[0] != cfg["status"]:
                hand.append(name)
                print(f"{lib}: {name}: returns {proto[0]}: implement by hand")
            else:
                entries.append((name, proto[0], proto[1]))
        path = emit(lib, cfg, entries, hand)
        print(f"{lib}: {len(entries)} stubs in {os.path.relpath(path, ROOT)}, {len(hand)} by hand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
