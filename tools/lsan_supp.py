#!/usr/bin/env python3
"""Writes LeakSanitizer's suppressions file from tools/lsan_graphviz.h's
list (its "leak:..." entries), so the installed file and the hooks header
cannot differ.

    tools/lsan_supp.py HEADER OUT
"""
import re
import sys

entries = re.findall(r"leak:[\w.+-]+", open(sys.argv[1]).read())
if not entries:
    sys.exit("lsan_supp.py: no leak: entries in " + sys.argv[1])
with open(sys.argv[2], "w") as f:
    f.write("# LeakSanitizer suppressions for graphviz's own leaks (tensortrace):\n"
            "# LSAN_OPTIONS=suppressions=THIS_FILE:fast_unwind_on_malloc=0\n")
    f.write("".join(e + "\n" for e in entries))
