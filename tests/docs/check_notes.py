#!/usr/bin/env python3
"""docs_notes: every Note is defined once, every reference resolves, and the index is exact.

A Note is defined by a comment line that holds only the word Note and its bracketed name,
underlined by a comment line of tildes (`//` in C++, `#` in CMake and shell); a heading line
without the underline is a pointer to the Note at that place. Code and docs refer to it by the
same words anywhere, and a reference may wrap across lines; one followed by "in FILE" must name
the file that defines it. docs/architecture.md's table under "Where each Note lives" lists each
defined Note once, with the file that defines it.

Usage: check_notes.py SOURCE_ROOT. Prints one line per problem and exits 1 if there is any.
"""
import bisect
import os
import re
import sys

# Where Notes live; build trees and anything else at the top are not scanned.
SCANNED = ["core", "interpose", "cli", "samples", "tests", "cmake", "scripts", "docs",
           "README.md", "CMakeLists.txt"]
INDEX = "docs/architecture.md"
INDEX_HEADING = "## Where each Note lives"

WORD = "Note"  # kept apart from the bracket so that this file holds no reference itself
HEADING = re.compile(r"^\s*(?://|#)\s*" + WORD + r" \[([^\]]+)\]\s*$")
UNDERLINE = re.compile(r"^\s*(?://|#)\s*~{3,}\s*$")
# A reference, and the file it names when "in FILE" follows.
REFERENCE = re.compile(r"\b" + WORD + r"\s+\[([^\]\[]+)\]"
                       r"(?:\s+in\s+`?([\w./-]+\.(?:h|cc|cmake|md|py|sh|txt))\b)?")
# A comment marker at the start of a line, dropped when lines are joined so that a reference
# wrapped across comment lines reads as one.
COMMENT_LEAD = re.compile(r"^\s*(?://+|#+|\*+(?!\*)|<!--)?\s*")


def source_files(root):
    for top in SCANNED:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "build")))
            for name in sorted(filenames):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def read_lines(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read().split("\n")
    except (UnicodeDecodeError, OSError):
        return None  # not text


def references(lines):
    """(line number, name, file named after "in" or None) of each reference, names with their
    whitespace collapsed."""
    text, starts = [], []
    offset = 0
    for line in lines:
        body = COMMENT_LEAD.sub("", line, count=1)
        starts.append(offset)
        text.append(body)
        offset += len(body) + 1
    joined = " ".join(text)
    for m in REFERENCE.finditer(joined):
        line = bisect.bisect_right(starts, m.start())
        yield line, " ".join(m.group(1).split()), m.group(2)


def names_file(referrer, named, defining):
    """Whether `named` (as written after "in": a path from the root, one relative to the
    referring file, or its tail) is the file `defining`."""
    if named.startswith(("./", "../")):
        named = os.path.normpath(os.path.join(os.path.dirname(referrer), named))
    return defining == named or defining.endswith("/" + named)


def index_rows(lines):
    """(line number, name, defining file) for each row of the index table."""
    inside = False
    for number, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = line.strip() == INDEX_HEADING
            continue
        if not inside or not line.startswith("| ["):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0][1:-1] if cells[0].startswith("[") and cells[0].endswith("]") else None
        path = re.fullmatch(r"`([^`]+)`", cells[1]) if len(cells) > 1 else None
        yield number, name or cells[0], path.group(1) if path else None


def main(root):
    problems = []
    definitions = {}  # name -> [(file, line)]
    refs = []  # (file, line, name, the file it names or None)
    for rel in source_files(root):
        lines = read_lines(root, rel)
        if lines is None:
            continue
        heading_lines = set()
        for i, line in enumerate(lines):
            m = HEADING.match(line)
            # A heading without its underline is a pointer to the Note at that place.
            if m and i + 1 < len(lines) and UNDERLINE.match(lines[i + 1]):
                heading_lines.add(i + 1)
                definitions.setdefault(m.group(1), []).append((rel, i + 1))
        for line, name, where in references(lines):
            if line not in heading_lines:
                refs.append((rel, line, name, where))

    for name, places in sorted(definitions.items()):
        if len(places) > 1:
            where = ", ".join(f"{f}:{n}" for f, n in places)
            problems.append(f"{places[1][0]}:{places[1][1]}: {WORD} [{name}] is defined "
                            f"{len(places)} times ({where}); keep one, refer to it elsewhere")
    for rel, line, name, where in refs:
        if name in definitions and where and not names_file(rel, where, definitions[name][0][0]):
            problems.append(f"{rel}:{line}: {WORD} [{name}] is said to be in {where} but is "
                            f"defined in {definitions[name][0][0]}")
        if name not in definitions:
            problems.append(f"{rel}:{line}: {WORD} [{name}] is referenced but defined nowhere "
                            "(renamed or removed? point to the right name; a definition is a "
                            f"comment line holding only '{WORD} [{name}]', a ~~~ line under it)")

    index_lines = read_lines(root, INDEX) or []
    listed = {}
    for number, name, path in index_rows(index_lines):
        where = f"{INDEX}:{number}"
        if name in listed:
            problems.append(f"{where}: [{name}] is listed again (first at line {listed[name]})")
            continue
        listed[name] = number
        if name not in definitions:
            problems.append(f"{where}: [{name}] is in the index but defined nowhere; remove "
                            "the row or rename it")
        elif path is None:
            problems.append(f"{where}: [{name}]: the second cell must be the defining file in "
                            f"backticks, `{definitions[name][0][0]}`")
        elif len(definitions[name]) == 1 and path != definitions[name][0][0]:
            problems.append(f"{where}: [{name}] is listed in `{path}` but defined in "
                            f"`{definitions[name][0][0]}`")
    for name, places in sorted(definitions.items()):
        if name not in listed:
            problems.append(f"{places[0][0]}:{places[0][1]}: {WORD} [{name}] is missing from "
                            f"the index in {INDEX} (add | [{name}] | `{places[0][0]}` |)")

    for p in problems:
        print(p)
    if problems:
        print(f"docs_notes: {len(problems)} problem(s)")
        return 1
    print(f"docs_notes: {len(definitions)} Notes, each defined once and in the index; "
          f"{len(refs)} references resolve (OK)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
