#!/usr/bin/env python3
"""Checks that the build enforces the layers (Note [Include views] in cmake/PoochLayers.cmake).

Usage: check_layers.py BUILD/compile_commands.json SOURCE_ROOT

For each case (folder, header, expected), it takes the compile command of a source file in that
folder, compiles a probe that includes only the header (-fsyntax-only), and compares the outcome
with the expectation: "fails" for a header of a layer the folder may not use, "builds" for one it
may. A probe that builds where it must fail means a layer can reach above itself. It also fails
when a file of core/ or interpose/ includes by a relative path ("../x.h"), which would get round
the views, and when a file of core/ includes a CUDA header (a toolkit installed on the default
search path, /usr/local/include, would be found whatever the view says). Prints one line per case and "N passed, M failed".
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

CASES = [
    # (folder whose compile command is used, header included, expected)
    ("core/sim", "core/model/model.h", "builds"),
    ("core/sim", "core/plan/plan.h", "fails"),            # a layer above
    ("core/model", "core/sim/sim.h", "fails"),            # the old model <-> sim cycle
    ("core/residency", "core/config/config.h", "fails"),  # the old residency -> config edge
    ("core/profile", "core/config/config.h", "fails"),    # the old tracker -> config edge
    ("core/config", "core/plan/plan.h", "builds"),
    ("core/zoo", "core/sim/sim.h", "fails"),              # beside, not below
    ("core/plot", "core/sim/sim.h", "builds"),
    ("core/plot", "core/plan/plan.h", "fails"),           # the picture needs no planner
    ("core/base", "core/model/model.h", "fails"),
    ("core/exec", "core/lineage/replay_recipe.h", "builds"),
    ("core/exec", "interpose/process/managed.h", "fails"),  # core never includes interpose
    ("core/exec", "core/testing/fake_device.h", "fails"),  # test doubles are for tests only
    ("interpose/symbols", "interpose/process/managed.h", "fails"),
    ("interpose/hooks/runtime", "interpose/process/managed.h", "builds"),
    ("interpose/hooks/runtime", "cuda_runtime_api.h", "builds"),
    ("interpose/hooks/cudnn", "interpose/hooks/cublas_gemm.h", "fails"),  # beside
    ("interpose/hooks/launch", "interpose/hooks/mem_pool.h", "fails"),   # beside
    ("interpose/process", "interpose/hooks/kernel_args.h", "fails"),      # above
    ("cli", "core/plan/plan.h", "builds"),
    ("cli", "interpose/process/managed.h", "fails"),
    ("tests/simgpu/device", "tests/simgpu/device/device.h", "builds"),
    ("tests/simgpu/device", "core/base/units.h", "fails"),  # simgpu never includes pooch
]


def command_for(entries, root, folder):
    prefix = os.path.join(root, folder) + os.sep
    for e in entries:
        f = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if f.startswith(prefix) and os.path.dirname(f) == prefix.rstrip(os.sep) \
                and not f.endswith("_test.cc"):
            args = e.get("arguments") or shlex.split(e["command"])
            return e["directory"], args, f
    return None


def probe(directory, args, source, header):
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        if a == "-c" or os.path.realpath(os.path.join(directory, a)) == source:
            continue
        out.append(a)
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as p:
        p.write('#include "%s"\n' % header)
        name = p.name
    try:
        r = subprocess.run(out + ["-fsyntax-only", name], cwd=directory,
                           capture_output=True, text=True)
    finally:
        os.unlink(name)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[0]


def relative_includes(root):
    bad = []
    pattern = re.compile(r'^\s*#\s*include\s*"\.\.?/')
    for top in ("core", "interpose"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".h", ".cc", ".def")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as src:
                    for n, line in enumerate(src, 1):
                        if pattern.match(line):
                            bad.append("%s:%d: %s" % (os.path.relpath(path, root), n, line.strip()))
    return bad


def cuda_in_core(root):
    bad = []
    pattern = re.compile(r'^\s*#\s*include\s*[<"](cuda|cudnn|cublas|nvtx|crt/|driver_types)')
    for d, _, files in os.walk(os.path.join(root, "core")):
        for f in files:
            path = os.path.join(d, f)
            with open(path, encoding="utf-8", errors="replace") as src:
                for n, line in enumerate(src, 1):
                    if pattern.match(line):
                        bad.append("%s:%d: %s" % (os.path.relpath(path, root), n, line.strip()))
    return bad


def main():
    db, root = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(db) as f:
        entries = json.load(f)
    passed = failed = 0
    for folder, header, expected in CASES:
        found = command_for(entries, root, folder)
        if found is None:
            print("FAIL %s: no compile command for a file of this folder" % folder)
            failed += 1
            continue
        ok, first = probe(*found, header)
        outcome = "builds" if ok else "fails"
        good = outcome == expected
        passed += good
        failed += not good
        print("%s %s includes %s: %s (expected %s)%s" % (
            "ok  " if good else "FAIL", folder, header, outcome, expected,
            "" if ok else "\n       " + first))
    for what, bad in (("relative include (write it from the source root)", relative_includes(root)),
                      ("a CUDA header in core/ (DESIGN.md: core has none)", cuda_in_core(root))):
        for b in bad:
            print("FAIL %s: %s" % (what, b))
        failed += len(bad)
        passed += not bad
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
