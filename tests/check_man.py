#!/usr/bin/env python3
"""Every exported function of the library has a man page, and pages render.

Usage: check_man.py MANDIR LIBRARY[,LIBRARY...] HEADER...

MANDIR holds the generated pages (MANDIR/NAME.3, as docs/gen_man.py wrote
them for `meson install` to put in man3/). Checks, in Check's summary
format so tools/run counts them:
  1. every function the headers declare and a LIBRARY exports (the list
     check_exports.py reads) has a page NAME.3;
  2. `man -l` renders a page with its own text and one that is a .so link
     to another page, without warnings;
  3. the check of 1 fails, naming the function, when a page is missing
     (it is run on a copy of MANDIR with one page removed).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_exports  # noqa: E402


def public_exported(libs, headers):
    declared, types = set(), set()
    for h in headers:
        funcs, ts = check_exports.declared_functions(h)
        declared |= funcs
        types |= ts
    exported = set()
    for lib in libs.split(","):
        exported |= check_exports.exported_symbols(lib)
    return sorted((declared - types) & exported)


def missing_pages(mandir, names):
    return [n for n in names if not os.path.isfile(os.path.join(mandir, n + ".3"))]


def render(mandir, name):
    """man -l NAME.3 from a man root holding man3/ (a .so request is
    relative to it); returns (ok, text)."""
    with tempfile.TemporaryDirectory() as root:
        shutil.copytree(mandir, os.path.join(root, "man3"))
        r = subprocess.run(["man", "-l", "-P", "cat", os.path.join("man3", name + ".3")],
                           cwd=root, capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
    return r.returncode == 0 and not r.stderr.strip(), r.stdout + r.stderr


def main():
    mandir, lib, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not os.path.isdir(mandir) and os.path.isfile(mandir):
        mandir = os.path.dirname(mandir)  # meson passes a page of the target
    names = public_exported(lib, headers)
    failures = 0

    missing = missing_pages(mandir, names)
    if missing:
        failures += 1
        print("exported functions without a man page: " + ", ".join(missing))
    print("%d exported public functions, %d pages" %
          (len(names), len([f for f in os.listdir(mandir) if f.endswith(".3")])))

    # A page with its own text, and one that is a link to it.
    links = [n for n in names if n + ".3" in os.listdir(mandir) and
             open(os.path.join(mandir, n + ".3"), encoding="utf-8").read().startswith(".so ")]
    own = "tt_trace" if "tt_trace" in names else names[0]
    for name, want in [(own, own)] + ([(links[0], None)] if links else []):
        ok, text = render(mandir, name)
        head = "SYNOPSIS" in text and "DESCRIPTION" in text
        if not ok or not head or (want and want + "(" not in text):
            failures += 1
            print("man -l %s.3 did not render a page:\n%s" % (name, text[:2000]))
    if not links:
        failures += 1
        print("no page is a .so link: functions that share a comment should share a page")

    # The check itself fails on a missing page.
    with tempfile.TemporaryDirectory() as tmp:
        for f in os.listdir(mandir):
            shutil.copy(os.path.join(mandir, f), tmp)
        os.remove(os.path.join(tmp, own + ".3"))
        if own not in missing_pages(tmp, names):
            failures += 1
            print("removing %s.3 was not reported as a missing page" % own)

    print("%d%%: Checks: 3, Failures: %d, Errors: 0" % (100 * (3 - failures) // 3, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
