#!/usr/bin/env python3
"""Checks a POOCH_TRACE file: valid Chrome trace event JSON (what Perfetto and chrome://tracing
open) that shows the swaps.

  check_trace.py TRACE.json --limit BYTES [--summary STDERR] [--min-swaps N] [--allow-unfinished]

Checks:
  - the file parses as strict JSON (no NaN/Infinity) and is an object with a list "traceEvents";
  - every event has "ph", "name" (strings) and an integer "pid"; every event but metadata (ph M)
    has a finite number "ts" >= 0; complete events (ph X) have a finite "dur" >= 0 and a "tid";
    metadata events name a process or thread with a string args.name; counters (ph C) have
    numeric series;
  - swap-out and swap-in events ("swap out" / "swap in", ph X) exist (at least --min-swaps of
    each), each on a track (pid, tid) of its own: the two are distinct, named by a thread_name
    event, and hold no other kind of event;
  - a "memory" counter with a "device" series exists and never exceeds --limit;
  - with --summary (pooch's stderr): the swaps the trace shows equal the summary's counts and
    bytes: out = "swap out" events + "swap out cancelled" instants (bytes: of those with args.copied
    not 0; a swap-out whose host copy was current copies nothing), in = "swap in" events. With
    --allow-unfinished the trace may show fewer (a swap whose end pooch never observed, because
    the program freed the buffer first, has no complete event), never more.
Prints one line of counts on success; otherwise what failed, and exits 1.
"""
import argparse
import json
import math
import re
import sys


def fail(message):
    print(f"check_trace: {message}", file=sys.stderr)
    sys.exit(1)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def parse_summary(path):
    """The summary's swaps line: {"out": n, "out_bytes": n, "in": n, "in_bytes": n, ...}."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(
                r"pooch: swaps: out (\d+) \((\d+) bytes\) in (\d+) \((\d+) bytes\) "
                r"demand_in \d+ cancelled (\d+)", line)
            if m:
                out, out_bytes, in_, in_bytes, cancelled = map(int, m.groups())
                return {"out": out, "out_bytes": out_bytes, "in": in_, "in_bytes": in_bytes,
                        "cancelled": cancelled}
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--summary")
    parser.add_argument("--min-swaps", type=int, default=1)
    parser.add_argument("--allow-unfinished", action="store_true")
    args = parser.parse_args()

    try:
        with open(args.trace, encoding="utf-8") as f:
            doc = json.load(f, parse_constant=reject_constant)
    except (OSError, ValueError) as e:
        fail(f"{args.trace}: not valid JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("not an object with a list traceEvents")
    events = doc["traceEvents"]
    if not events:
        fail("traceEvents is empty")

    thread_names = {}  # (pid, tid) -> name
    kinds_on_track = {}  # (pid, tid) -> set of event names (ph X / i)
    swaps = {"swap out": [], "swap in": [], "swap out cancelled": []}
    device_values = []
    for i, e in enumerate(events):
        where = f"event {i} ({json.dumps(e)[:120]})"
        if not isinstance(e, dict):
            fail(f"{where}: not an object")
        ph, name, pid = e.get("ph"), e.get("name"), e.get("pid")
        if not isinstance(ph, str) or not isinstance(name, str):
            fail(f"{where}: ph and name must be strings")
        if not isinstance(pid, int) or isinstance(pid, bool):
            fail(f"{where}: pid must be an integer")
        if ph == "M":
            if name not in ("process_name", "thread_name", "process_sort_index",
                            "thread_sort_index"):
                fail(f"{where}: unknown metadata event")
            if name.endswith("_name") and not isinstance(e.get("args", {}).get("name"), str):
                fail(f"{where}: metadata without args.name")
            if name == "thread_name":
                thread_names[(pid, e.get("tid"))] = e["args"]["name"]
            continue
        ts = e.get("ts")
        if not is_number(ts) or ts < 0:
            fail(f"{where}: ts must be a number >= 0")
        if ph in ("X", "i", "I"):
            tid = e.get("tid")
            if not isinstance(tid, int) or isinstance(tid, bool):
                fail(f"{where}: tid must be an integer")
            kinds_on_track.setdefault((pid, tid), set()).add(name)
            if name in swaps:
                swaps[name].append(e)
        if ph == "X":
            dur = e.get("dur")
            if not is_number(dur) or dur < 0:
                fail(f"{where}: dur must be a number >= 0")
        elif ph == "C":
            series = e.get("args")
            if not isinstance(series, dict) or not series or not all(
                    is_number(v) for v in series.values()):
                fail(f"{where}: counter without numeric series")
            if name == "memory" and "device" in series:
                device_values.append(series["device"])
        elif ph not in ("i", "I"):
            fail(f"{where}: unexpected phase {ph!r}")

    # Swaps: present, complete events, each direction on a named track of its own.
    tracks = {}
    for kind in ("swap out", "swap in"):
        if len(swaps[kind]) < args.min_swaps:
            fail(f"{len(swaps[kind])} '{kind}' events, want >= {args.min_swaps}")
        if any(e["ph"] != "X" for e in swaps[kind]):
            fail(f"a '{kind}' event is not a complete (X) event")
        if any(not is_number(e.get("args", {}).get("bytes")) or e["args"]["bytes"] <= 0
               for e in swaps[kind]):
            fail(f"a '{kind}' event has no bytes > 0 in its args")
        tracks[kind] = {(e["pid"], e["tid"]) for e in swaps[kind]}
        for track in tracks[kind]:
            if track not in thread_names:
                fail(f"'{kind}' track {track} has no thread_name")
            allowed = {kind, "swap out cancelled"} if kind == "swap out" else {kind}
            others = kinds_on_track[track] - allowed
            if others:
                fail(f"'{kind}' track {track} also holds {sorted(others)}")
    if tracks["swap out"] & tracks["swap in"]:
        fail("swap-outs and swap-ins share a track")

    if not device_values:
        fail("no 'memory' counter with a 'device' series")
    peak = max(device_values)
    if min(device_values) < 0 or peak > args.limit:
        fail(f"device memory counter in [{min(device_values)}, {peak}], limit {args.limit}")

    n_out, n_in = len(swaps["swap out"]), len(swaps["swap in"])
    n_cancelled = len(swaps["swap out cancelled"])
    out_bytes = sum(e["args"]["bytes"] for e in swaps["swap out"] + swaps["swap out cancelled"]
                    if e["args"].get("copied", 1) != 0)
    in_bytes = sum(e["args"]["bytes"] for e in swaps["swap in"])
    compared = ""
    if args.summary:
        s = parse_summary(args.summary)
        if s is None:
            fail(f"{args.summary}: no 'pooch: swaps:' summary line")
        have = {"out": n_out + n_cancelled, "out_bytes": out_bytes, "in": n_in,
                "in_bytes": in_bytes, "cancelled": n_cancelled}
        for key, want in s.items():
            if have[key] > want or (have[key] < want and not args.allow_unfinished):
                fail(f"trace shows {key} {have[key]}, the summary {want}")
        compared = (f"; summary out {s['out']} in {s['in']} cancelled {s['cancelled']}"
                    f" ({'at most' if args.allow_unfinished else 'equal'})")
    print(f"{len(events)} events valid; swap out {n_out} ({out_bytes} bytes, {n_cancelled} "
          f"cancelled) swap in {n_in} ({in_bytes} bytes) on tracks "
          f"{sorted(tracks['swap out'])}/{sorted(tracks['swap in'])}; device counter peak "
          f"{peak} <= limit {args.limit}{compared}")


if __name__ == "__main__":
    main()
