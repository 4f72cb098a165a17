#!/usr/bin/env python3
"""Classifies every CUDA export (interpose/symbols/classes.tsv) and generates the opaque hooks.

Note [Opaque calls] (interpose/process/opaque.h). Reads classes.tsv, the exports of the toolkit's
five libraries (`nm -D --defined-only`) and the names cudaTypedefs.h lets cuGetProcAddress hand
out, and gives every name exactly one class. Fails (status 1, one line per problem) when an export
or look-up name matches no row, two equally long patterns disagree, a row matches nothing, a
`modelled` row is not a hook of hooked_symbols.def or a hook is not `modelled`, or an `opaque`
function has no prototype in the toolkit's headers (unless its row says "[internal]").

Usage:
  gen_opaque_hooks.py --check                     the table test (interpose_classes_test)
  gen_opaque_hooks.py --out-dir DIR               also writes DIR/opaque_*.gen.cc (the hooks, one
                                                  file per header set), DIR/opaque_exports.inc
                                                  (version-script lines) and DIR/opaque_names.inc
Options: --cuda DIR (default $CUDA_HOME or /usr/local/cuda), --cxx COMPILER (default c++),
--list (print name, library, class for every name). Python 3 standard library only.
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_simgpu_stubs import prototype, preprocess  # noqa: E402  (the shared prototype parser)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSES = os.path.join(ROOT, "interpose/symbols/classes.tsv")
DEF = os.path.join(ROOT, "interpose/symbols/hooked_symbols.def")

# library key -> (candidate paths under CUDA, the soname the hooks find the real function in)
LIBS = {
    "cudart": (["lib64/libcudart.so.13", "targets/x86_64-linux/lib/libcudart.so.13"],
               "libcudart.so.13"),
    "cuda": (["lib64/libcuda.so.1", "lib64/stubs/libcuda.so",
              "targets/x86_64-linux/lib/stubs/libcuda.so"], "libcuda.so.1"),
    "cudnn": (["lib64/libcudnn.so.9", "lib/libcudnn.so.9",
               "targets/x86_64-linux/lib/libcudnn.so.9"], "libcudnn.so.9"),
    "cublas": (["lib64/libcublas.so.13", "targets/x86_64-linux/lib/libcublas.so.13"],
               "libcublas.so.13"),
    "cublasLt": (["lib64/libcublasLt.so.13", "targets/x86_64-linux/lib/libcublasLt.so.13"],
                 "libcublasLt.so.13"),
}
# NCCL is hooked (hooked_symbols.def) but not classified: it is no toolkit library, and pooch
# models the calls it hooks; its other exports touch no program memory or are named in
# docs/usage.md ("NCCL on GPUs") as not handled.
DEF_LIBS = {"CUDART": "cudart", "CUDA": "cuda", "CUDNN": "cudnn", "CUBLAS": "cublas",
            "CUBLASLT": "cublasLt", "NCCL": "nccl"}

# One generated file per header set: (file stem, library, headers, -D defines, status type of
# the API, whether names must be per-thread variants). The first set (of a library) whose
# preprocessed headers declare a name generates its hook.
PT = re.compile(r"_pt[sd][sz]$")
SETS = [
    ("cudart", "cudart", ["cuda_runtime.h", "cuda_profiler_api.h"], [], "cudaError_t", False),
    ("cudart_ptds", "cudart", ["cuda_runtime.h"], ["CUDA_API_PER_THREAD_DEFAULT_STREAM"],
     "cudaError_t", True),
    ("cuda", "cuda", ["cuda.h"], [], "CUresult", False),
    ("cuda_ptds", "cuda", ["cuda.h"], ["CUDA_API_PER_THREAD_DEFAULT_STREAM"], "CUresult", True),
    ("cudnn", "cudnn", ["cudnn.h"], [], "cudnnStatus_t", False),
    ("cublas", "cublas", ["cublas_v2.h", "cublasXt.h"], [], "cublasStatus_t", False),
    ("cublas_legacy", "cublas", ["cublas.h"], [], None, False),
    ("cublaslt", "cublasLt", ["cublasLt.h"], [], "cublasStatus_t", False),
]
API = {"cudaError_t": "kRuntime", "CUresult": "kDriver", "cudnnStatus_t": "kCudnn",
       "cublasStatus_t": "kCublas"}


def find_lib(cuda, key):
    for rel in LIBS[key][0]:
        path = os.path.join(cuda, rel)
        if os.path.exists(path):
            return path
    return None


def exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] != "A":
            names.add(parts[2].split("@")[0])
    return names


def lookup_names(cuda):
    """The base names cudaTypedefs.h declares PFN_ typedefs for: what cuGetProcAddress serves."""
    text = open(os.path.join(cuda, "include/cudaTypedefs.h")).read()
    return {m.group(1) for m in re.finditer(r"\bPFN_(cu\w+?)_v\d+(?:_pt[sd][sz])?\b", text)}


def read_rows(path):
    rows = []
    for n, line in enumerate(open(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if len(f) < 3 or f[2] not in ("none", "modelled", "opaque") or f[1] not in LIBS:
            sys.exit(f"{path}:{n}: want NAME<TAB>LIBRARY<TAB>none|modelled|opaque<TAB>WHY")
        rows.append(dict(pattern=f[0], lib=f[1], cls=f[2], why=f[3] if len(f) > 3 else "",
                         line=n, used=False))
    return rows


def literal_length(pattern):
    return len(pattern.replace("*", "").replace("?", ""))


def classify(name, lib, rows, errors):
    exact = [r for r in rows if r["lib"] == lib and r["pattern"] == name]
    if exact:
        if len(exact) > 1:
            errors.append(f"{name} ({lib}): listed {len(exact)} times")
        exact[0]["used"] = True
        return exact[0]
    matches = [r for r in rows if r["lib"] == lib and any(c in r["pattern"] for c in "*?")
               and fnmatch.fnmatchcase(name, r["pattern"])]
    if not matches:
        errors.append(f"{name} ({lib}): exported but not classified: add a row to classes.tsv")
        return None
    best = max(literal_length(r["pattern"]) for r in matches)
    top = [r for r in matches if literal_length(r["pattern"]) == best]
    if len({r["cls"] for r in top}) > 1:
        errors.append(f"{name} ({lib}): patterns " + ", ".join(r["pattern"] for r in top) +
                      " are equally specific and disagree")
    top[0]["used"] = True
    return top[0]


def hooked_names(cxx):
    """(library key, name) of every hook hooked_symbols.def exports (its POOCH_DRIVER_HOOK*
    forms default to POOCH_HOOK(CUDA, ...)), read through the preprocessor as the build does."""
    src = '#define POOCH_HOOK(lib, ret, name, params, args) @@lib:name@@\n' \
          '#include "interpose/symbols/hooked_symbols.def"\n'
    out = subprocess.run([cxx, "-E", "-P", "-x", "c++", f"-I{ROOT}", "-"], input=src, check=True,
                         capture_output=True, text=True).stdout
    return {(DEF_LIBS[lib], name) for lib, name in re.findall(r"@@(\w+):(\w+)@@", out)}


def stream_expression(params):
    """(expression giving the call's stream as uintptr_t, known) from the parameter list."""
    names = []
    for p in params.split(", ") if params != "void" else []:
        m = re.search(r"(\w+)\s*(\[\s*\])?$", p)
        names.append((p, m.group(1) if m else ""))
    for p, n in names:
        if re.match(r"^(const\s+)?(cudaStream_t|CUstream)\s+\w+$", p):
            return f"reinterpret_cast<uintptr_t>({n})", "true"
    if names and re.match(r"^cublasHandle_t\s+\w+$", names[0][0]):
        return f"pi::OpaqueCublasStream({names[0][1]})", "true"
    if names and re.match(r"^cudnnHandle_t\s+\w+$", names[0][0]):
        return f"pi::OpaqueCudnnStream({names[0][1]})", "true"
    return "0", "false"


def arg_names(params):
    if params == "void":
        return []
    out = []
    for p in params.split(", "):
        p = re.sub(r"\[[^\]]*\]\s*$", "", p).strip()
        m = re.search(r"(\w+)$", p)
        if not m or m.group(1) in ("int", "float", "double", "char", "void", "size_t"):
            return None  # an unnamed parameter: cannot forward
        out.append(m.group(1))
    return out


def write_set(out_dir, stem, lib, headers, defines, status, entries, declared_text=""):
    soname = LIBS[lib][1]
    lines = [
        "// GENERATED by scripts/gen_opaque_hooks.py from interpose/symbols/classes.tsv and the",
        f"// toolkit's {', '.join(headers)}: do not edit. Note [Opaque calls] in",
        "// interpose/process/opaque.h: every `opaque` function of " + soname + ", with its",
        "// header's prototype in scope (the compiler checks each definition against it).",
        "",
    ]
    lines += [f"#define {d} 1" for d in defines]
    lines += ["#define CUDA_ENABLE_DEPRECATED 1", "#include <cstdint>"]
    lines += [f"#include <{h}>" for h in headers]
    lines += ['#include "interpose/process/opaque_api.h"', ""]
    lines += ['#define POOCH_EXPORT extern "C" __attribute__((visibility("default")))', ""]
    lines += ["namespace pi = ::pooch::interpose;", ""]
    declared = set()
    for name, ret, params, undef in entries:
        args = ", ".join(arg_names(params))
        stream, known = stream_expression(params)
        if undef:  # a base driver name cuda.h #defines to its _v2 form (decl from cudaTypedefs.h)
            # Its 32-bit-era structs (CUDA_MEMCPY2D_v1) are declared only for the driver's own
            # build; it takes them by pointer, so an incomplete type is the same ABI.
            for t in sorted(set(re.findall(r"\b(CU\w+_v1)\b", params))):
                if t not in declared and not re.search(r"\b" + t + r"\b", declared_text):
                    lines += [f"typedef struct {t}_st {t};"]
                    declared.add(t)
            lines += [f"#undef {name}", f'extern "C" {ret} {name}({params});']
        lines += [
            f"POOCH_EXPORT {ret} {name}({params}) {{",
            f'  static constinit pi::OpaqueFunction pooch_fn_{{"{name}", "{soname}"}};',
            f"  using PoochFn_ = {ret}({params});  // the declaration's type (cuda_runtime.h overloads some)",
            "  const auto pooch_real_ = reinterpret_cast<PoochFn_*>(pooch_fn_.Real());",
        ]
        if ret in API:
            lines += [
                f"  if (pooch_real_ == nullptr) return static_cast<{ret}>(pi::OpaqueNotInitialized(pi::OpaqueApi::{API[ret]}));",
                "  pi::OpaqueScope pooch_scope_(pooch_fn_);",
                f"  if (!pooch_scope_.intercept()) return pooch_real_({args});",
                f"  return static_cast<{ret}>(pi::OpaqueRun(pooch_fn_, pi::OpaqueApi::{API[ret]}, {stream}, {known},",
                f"                                        [&] {{ return static_cast<int>(pooch_real_({args})); }}));",
                "}",
                "",
            ]
        else:
            # The legacy cuBLAS API returns results, not a status: a refused call cannot be
            # reported to the program, so it ends the process (OpaqueRunOrDie) after the line.
            call = f"pooch_real_({args})" if ret == "void" else f"pooch_result_ = pooch_real_({args})"
            lines += [
                "  if (pooch_real_ == nullptr) pi::OpaqueMissing(pooch_fn_);",
                "  pi::OpaqueScope pooch_scope_(pooch_fn_);",
                f"  if (!pooch_scope_.intercept()) return pooch_real_({args});",
            ]
            if ret != "void":
                lines += [f"  {ret} pooch_result_{{}};"]
            lines += [
                f"  pi::OpaqueRunOrDie(pooch_fn_, {stream}, {known}, [&] {{ {call}; return 0; }});",
            ]
            if ret != "void":
                lines += ["  return pooch_result_;"]
            lines += ["}", ""]
    path = os.path.join(out_dir, f"opaque_{stem}.gen.cc")
    text = "\n".join(lines).rstrip("\n") + "\n"
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


def base_prototype(typedefs, name):
    """The oldest form of a driver function that cuda.h #defines to a newer one (cuMemAdvise ->
    cuMemAdvise_v2 exports both): the lowest-versioned PFN_ typedef of cudaTypedefs.h."""
    base = PT.sub("", name)
    suffix = name[len(base):]
    best = None
    for m in re.finditer(r"typedef\s+(\w+)\s*\(CUDAAPI \*PFN_" + re.escape(base) +
                         r"_v(\d+)" + re.escape(suffix) + r"\)\((.*?)\);", typedefs, re.S):
        if best is None or int(m.group(2)) < best[0]:
            best = (int(m.group(2)), m.group(1), " ".join(m.group(3).split()))
    return None if best is None else (best[1], best[2])


def raw_prototype(cuda, header, name):
    """A declaration the header makes only for nvcc (crt/device_functions.h's __cudaLaunchKernel),
    taken from its text."""
    text = open(os.path.join(cuda, "include", header)).read()
    m = re.search(r'extern "C"\s+(\w+)\s+CUDARTAPI\s+' + re.escape(name) + r"\s*\((.*?)\);",
                  text, re.S)
    return None if m is None else (m.group(1), " ".join(m.group(2).split()))


class Index:
    """prototype() of gen_simgpu_stubs.py, but searching only where the name occurs."""

    def __init__(self, pp):
        self.pp = pp
        self.at = {}
        for m in re.finditer(r"(?<![\w.>])(\w+)\s*\(", pp):
            self.at.setdefault(m.group(1), []).append(m.start())

    def prototype(self, name):
        for start in self.at.get(name, []):
            lo = max(self.pp.rfind(";", 0, start), self.pp.rfind("}", 0, start),
                     self.pp.rfind("{", 0, start))
            end = self.pp.find(";", start)
            piece = self.pp[lo + 1:end + 1]
            proto = prototype(piece, name)
            if proto is not None:
                return proto
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("--classes", default=CLASSES)
    ap.add_argument("--out-dir")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()

    rows = read_rows(args.classes)
    errors = []
    names = {}  # (lib, name) -> row
    for lib in LIBS:
        path = find_lib(args.cuda, lib)
        if path is None:
            errors.append(f"{lib}: no library under {args.cuda} ({', '.join(LIBS[lib][0])})")
            continue
        for name in sorted(exports(path)):
            names[(lib, name)] = classify(name, lib, rows, errors)
    for name in sorted(lookup_names(args.cuda)):
        if ("cuda", name) not in names:
            names[("cuda", name)] = classify(name, "cuda", rows, errors)
    for r in rows:
        if not r["used"]:
            errors.append(f"classes.tsv:{r['line']}: {r['pattern']} ({r['lib']}) matches no export")
    hooks = hooked_names(args.cxx)
    for (lib, name), row in sorted(names.items()):
        if row is None:
            continue
        if row["cls"] == "modelled" and (lib, name) not in hooks:
            errors.append(f"{name} ({lib}): `modelled` but libpooch.so does not hook it "
                          "(hooked_symbols.def)")
        if row["cls"] != "modelled" and (lib, name) in hooks:
            errors.append(f"{name} ({lib}): hooked in hooked_symbols.def but classes.tsv says "
                          f"`{row['cls']}` (line {row['line']}): make it `modelled`")

    # Prototypes of the opaque functions (the build's job; --check only classifies).
    opaque = [] if not args.out_dir else sorted((lib, n) for (lib, n), r in names.items()
                    if r is not None and r["cls"] == "opaque" and not r["why"].startswith("[internal]"))
    typedefs = open(os.path.join(args.cuda, "include/cudaTypedefs.h")).read()
    per_set = {s[0]: [] for s in SETS}
    pp_cache = {}
    for lib, name in opaque:
        found = None
        for stem, slib, headers, defines, status, per_thread in SETS:
            if slib != lib or bool(PT.search(name)) != per_thread:
                continue
            if stem not in pp_cache:
                hdrs = [f"CUDA_ENABLE_DEPRECATED 1"] and headers
                src = "".join(f"#define {d} 1\n" for d in defines + ["CUDA_ENABLE_DEPRECATED"])
                pp_cache[stem] = Index(preprocess_with(args.cuda, args.cxx, src, headers))
            proto = pp_cache[stem].prototype(name)
            if proto is not None and (status is None or proto[0] == status):
                found = (stem, name, proto[0], proto[1], False)
                break
            if proto is not None and status is not None:
                errors.append(f"{name} ({lib}): returns {proto[0]}, not {status}: cannot refuse it")
                found = ()
                break
        if found is None and lib == "cuda":
            old = base_prototype(typedefs, name)
            if old is not None:
                stem = "cuda_ptds" if PT.search(name) else "cuda"
                found = (stem, name, old[0], old[1].replace("CUdeviceptr_v1", "unsigned int"), True)
        if found is None and lib == "cudart" and name.startswith("__cuda"):
            raw = raw_prototype(args.cuda, "crt/device_functions.h", name)
            if raw is not None:
                found = ("cudart_ptds" if PT.search(name) else "cudart", name, raw[0], raw[1], True)
        if found is None:
            errors.append(f"{name} ({lib}): `opaque` but no prototype in the toolkit's headers "
                          "(mark its row [internal] if only the libraries call it)")
        elif found:
            if arg_names(found[3]) is None:
                errors.append(f"{name} ({lib}): a parameter without a name: cannot forward")
            else:
                per_set[found[0]].append(found[1:])

    if args.list:
        for (lib, name), r in sorted(names.items()):
            print(f"{name}\t{lib}\t{r['cls'] if r else '?'}")
    for e in errors:
        print(f"gen_opaque_hooks: {e}", file=sys.stderr)
    if errors:
        return 1
    counts = {}
    for r in names.values():
        counts[r["cls"]] = counts.get(r["cls"], 0) + 1
    hooked = sum(len(v) for v in per_set.values())
    print(f"gen_opaque_hooks: {len(names)} names: " +
          ", ".join(f"{counts.get(c, 0)} {c}" for c in ("none", "modelled", "opaque")) +
          f"; {hooked} opaque hooks")
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        all_names = []
        for stem, lib, headers, defines, status, _ in SETS:
            known = pp_cache[stem].pp if stem in pp_cache else ""
            write_set(args.out_dir, stem, lib, headers, defines, status, per_set[stem], known)
            all_names += [e[0] for e in per_set[stem]]
        for fname, fmt in (("opaque_exports.inc", "    {};\n"), ("opaque_names.inc", "{}\n")):
            text = "".join(fmt.format(n) for n in sorted(all_names))
            path = os.path.join(args.out_dir, fname)
            if not os.path.exists(path) or open(path).read() != text:
                with open(path, "w") as f:
                    f.write(text)
    return 0


def preprocess_with(cuda, cxx, prefix, headers):
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as src:
        src.write(prefix + "".join(f"#include <{h}>\n" for h in headers))
    try:
        return subprocess.run([cxx, "-E", "-P", "-std=c++17", f"-I{cuda}/include", src.name],
                              check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(src.name)


if __name__ == "__main__":
    sys.exit(main())
