#!/usr/bin/env python3
"""The shared library exports exactly the public API.

Usage: check_exports.py [--not-needed LIB,LIB...] LIBRARY HEADER...

Every function (and extern variable) declared in the public headers must be
defined and exported by LIBRARY, and LIBRARY must export nothing else (no internal tt__ symbol,
no helper that lost its `static`). Prints a Check-style summary line so
tools/run counts each direction as a check.

--not-needed names libraries (by prefix: "libgvc" matches libgvc.so.6)
LIBRARY must not link (its DT_NEEDED entries, from readelf): the core
library keeps graphviz out, as only libtensortrace-render needs it. That is
a third check.
"""
import re
import subprocess
import sys


def declared_functions(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # Macros (with their continuation lines) declare nothing exported.
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    # static inline functions: drop their bodies and their names.
    out, i = [], 0
    for m in re.finditer(r"static\s+inline\b", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        j = text.index("{", m.end())
        depth = 0
        for k in range(j, len(text)):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            if depth == 0:
                i = k + 1
                break
    out.append(text[i:])
    text = "".join(out)
    # Function-pointer typedefs and struct members are not functions, and
    # a type name before "(" is a return type, not a call.
    text = re.sub(r"\(\s*\*\s*\w+\s*\)", " ", text)
    # Exported variables ("extern _Thread_local ... tt_x;") are declared
    # too; other "tt_x;" are type names.
    data = set(re.findall(r"\bextern\b[^;{}()\"]*?\b(tt_\w+)\s*"
                          r"(?:__attribute__\s*\(\(.*?\)\)\s*)?;", text, re.S))
    types = set(re.findall(r"\b(tt_\w+)\s*;", text)) - data
    return set(re.findall(r"\b(tt_\w+)\s*\(", text)) | data, types


def exported_symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWiu":
            syms.add(parts[2].split("@")[0])
    return syms


def needed_libraries(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def main():
    args = sys.argv[1:]
    not_needed = []
    if args[:1] == ["--not-needed"]:
        not_needed = [n for n in args[1].split(",") if n]
        args = args[2:]
    lib, headers = args[0], args[1:]
    declared, types = set(), set()
    for h in headers:
        funcs, ts = declared_functions(h)
        declared |= funcs
        types |= ts
    declared -= types
    exported = {s for s in exported_symbols(lib) if not s.startswith("_")}
    failures = 0
    extra = sorted(exported - declared)
    if extra:
        failures += 1
        print("exported but not declared in a public header: " + ", ".join(extra))
    missing = sorted(declared - exported)
    if missing:
        failures += 1
        print("declared in a public header but not exported: " + ", ".join(missing))
    checks = 2
    if not_needed:
        checks += 1
        linked = [n for n in needed_libraries(lib)
                  if any(n.startswith(prefix) for prefix in not_needed)]
        if linked:
            failures += 1
            print("links what it must not: " + ", ".join(linked))
    print("%d public functions, %d exported symbols" % (len(declared), len(exported)))
    print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (100 * (checks - failures) // checks,
                                                         checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
