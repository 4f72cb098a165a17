"""The share of a run's kernel launches whose write sets pooch's analysis knows (issue 36, point 2).

Usage: kernel_share.py CACHE_DIR TRACE [BASE_TRACE] [--json OUT]
  CACHE_DIR   POOCH_KERNEL_CACHE of the run: the verdicts of every kernel it launched (libpooch.so
              analyses each kernel at its first launch and stores it there).
  TRACE       SIMGPU_TRACE of the run (timing mode): each kernel launch at its virtual duration.
  BASE_TRACE  the same program with fewer iterations: its launches are subtracted, so that what
              remains is the training iterations' (set-up and initialisation kernels left out).
Prints, by count of distinct kernels, by launches and by virtual kernel time: exact (writes and
reads known), replayable, unknown; and the unknown (and inexact) reasons grouped, largest time
first. A kernel's reason is the first of its write reasons (else of its read reasons) with the
location stripped, as `pooch kernels` counts them (KernelVerdict::ReasonClass).
"""
import collections
import glob
import json
import sys


def load_verdicts(cache_dir):
    """name -> verdict dict; a name in several modules gets the worst of them."""
    out = {}
    for path in glob.glob(f"{cache_dir}/*.json"):
        with open(path) as f:
            for v in json.load(f).get("kernels", []):
                old = out.get(v["name"])
                if old is None or rank(v) < rank(old):
                    out[v["name"]] = v
    return out


def exact(v):
    return v["writes_known"] and v["reads_known"]


def replayable(v):
    return (exact(v) and not v["uses_atomics"] and not v["reads_clock"]
            and not set(v["reads"]) & set(v["writes"]))


def rank(v):
    return 2 if replayable(v) else 1 if exact(v) else 0


def reason(v):
    if v is None:
        return "no verdict (module unknown or no SASS for the arch)"
    if not v["writes_known"]:
        return v["write_reasons"][0].split(" at ")[0]
    if not v["reads_known"]:
        return "reads unknown: " + v["read_reasons"][0].split(" at ")[0]
    if v["uses_atomics"]:
        return "exact, atomics"
    if v["reads_clock"]:
        return "exact, reads a clock"
    if set(v["reads"]) & set(v["writes"]):
        return "exact, reads what it writes"
    return "replayable"


def kernel_ops(trace):
    """name -> [launches, virtual µs] of the compute track's ops that are kernels (mangled names;
    library calls such as cudnnBackendExecute and copies are not kernel launches)."""
    with open(trace) as f:
        text = f.read().rstrip().rstrip(",")
    if not text.endswith("]"):
        text += "]"
    ops = collections.defaultdict(lambda: [0, 0.0])
    for e in json.loads(text):
        if e.get("ph") == "X" and e.get("tid") == 0 and e["name"].startswith("_Z"):
            ops[e["name"]][0] += 1
            ops[e["name"]][1] += e["dur"]
    return ops


def main(argv):
    out_json = None
    if "--json" in argv:
        i = argv.index("--json")
        out_json = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    verdicts = load_verdicts(argv[0])
    ops = kernel_ops(argv[1])
    if len(argv) > 2:
        for name, (n, us) in kernel_ops(argv[2]).items():
            ops[name][0] -= n
            ops[name][1] -= us
        ops = {k: v for k, v in ops.items() if v[0] > 0}
    total = [len(ops), sum(n for n, _ in ops.values()), sum(us for _, us in ops.values())]
    groups = {"exact": [0, 0, 0.0], "replayable": [0, 0, 0.0], "unknown": [0, 0, 0.0]}
    reasons = collections.defaultdict(lambda: [0, 0, 0.0])
    for name, (n, us) in ops.items():
        v = verdicts.get(name)
        keys = []
        if v is not None and exact(v):
            keys.append("exact")
            if replayable(v):
                keys.append("replayable")
        else:
            keys.append("unknown")
        for k in keys:
            groups[k][0] += 1
            groups[k][1] += n
            groups[k][2] += us
        if v is None or not replayable(v):
            r = reasons[reason(v)]
            r[0] += 1
            r[1] += n
            r[2] += us

    def pct(a, b):
        return 100.0 * a / b if b else 0.0

    print(f"kernels {total[0]}, launches {total[1]}, kernel time {total[2] / 1e3:.3f} ms (virtual)")
    for k, (c, n, us) in groups.items():
        print(f"  {k:<11} kernels {c:>4} ({pct(c, total[0]):5.1f} %)  launches {n:>6} "
              f"({pct(n, total[1]):5.1f} %)  time {pct(us, total[2]):5.1f} %")
    print("  not replayable, by reason (kernels, launches, share of kernel time):")
    for r, (c, n, us) in sorted(reasons.items(), key=lambda kv: -kv[1][2]):
        print(f"    {pct(us, total[2]):5.1f} %  {c:>4} {n:>6}  {r}")
    print("  the largest not replayable (share of kernel time, launches, reason):")
    worst = [(us, n, name) for name, (n, us) in ops.items()
             if verdicts.get(name) is None or not replayable(verdicts[name])]
    for us, n, name in sorted(worst, reverse=True)[:5]:
        print(f"    {pct(us, total[2]):5.1f} % {n:>6}  {reason(verdicts.get(name))}: {name[:100]}")
    if out_json:
        rows = []
        for name, (n, us) in sorted(ops.items(), key=lambda kv: -kv[1][1]):
            v = verdicts.get(name)
            rows.append({"name": name, "launches": n, "us": round(us, 3),
                         "class": reason(v), "exact": v is not None and exact(v)})
        with open(out_json, "w") as f:
            json.dump({"total": total, "groups": groups, "reasons": reasons, "kernels": rows}, f,
                      indent=1)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1:])
