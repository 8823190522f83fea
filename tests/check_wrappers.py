#!/usr/bin/env python3
"""Every typed wrapper of the ops' public headers (ops/tt_ops.h,
ops/tt_nn.h, ops/tt_index.h) has a row in tests/test_wrappers.c.

Usage: check_wrappers.py TEST_WRAPPERS_C HEADER...

test_wrappers.c checks that each wrapper reaches the op its name says, with
its arguments in the op's order (issue 25); a wrapper without a row would
go unchecked, and a row whose wrapper was removed or renamed would not
compile or would check nothing. So this fails naming every wrapper (a
function declared in a HEADER returning a tensor or a status) without a row,
and every row naming no such wrapper. Prints a Check-style summary line so
tools/run counts each direction as a check.
"""
import re
import sys

# Declared in tt_ops.h but no op's wrapper: the library's set-up, a string
# about BLAS, and gradcheck, which calls a user's function.
NOT_WRAPPERS = {"tt_ops_init", "tt_blas_kernels", "tt_gradcheck"}


def declared_wrappers(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # Macros (the call-site ones repeat every name) declare nothing.
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    names = re.findall(r"^\s*(?:tt_tensor\s*\*|tt_status\s+)\s*(tt_\w+)\s*\(", text,
                       flags=re.M)
    return {n for n in names if n not in NOT_WRAPPERS}


def table_rows(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"#define WRAPPERS\(X\)(.*?)\n\n", text, flags=re.S)
    if not m:
        sys.exit("%s: no WRAPPERS(X) table found" % path)
    rows = re.findall(r"\bX\(\s*(\w+)\s*,", m.group(1))
    dups = sorted({r for r in rows if rows.count(r) > 1})
    return set(rows), dups


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    table, headers = sys.argv[1], sys.argv[2:]
    wrappers = set()
    for h in headers:
        wrappers |= declared_wrappers(h)
    rows, dups = table_rows(table)
    failures = 0
    missing = sorted(wrappers - rows)
    if missing:
        failures += 1
        print("wrappers in %s without a row in %s: %s"
              % (" ".join(headers), table, ", ".join(missing)))
    stale = sorted(rows - wrappers)
    if stale:
        failures += 1
        print("rows in %s whose wrapper no header declares: %s"
              % (table, ", ".join(stale)))
    if dups:
        print("rows repeated in %s: %s" % (table, ", ".join(dups)))
        failures += 1
    print("%d wrappers, %d rows" % (len(wrappers), len(rows)))
    checks = 3
    print("%d%%: Checks: %d, Failures: %d, Errors: 0"
          % (100 * (checks - failures) // checks, checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
