#!/usr/bin/env python3
"""No call from a lower layer to a higher one.

Usage: check_layers.py OBJECT_DIR LAYER...

The core library's objects are named after their source files by meson
(runtime_tensor.c.o, ops_reduce.c.o, tracer_trace.c.o). LAYER... lists the
folders from the bottom up (runtime ops tracer). An object of one layer may
use a symbol defined by an object of its own layer or of a layer below it;
a symbol it uses that only a higher layer defines is a call up, and each is
reported with both object files. Reading the objects' symbols (nm) checks
calls, not only includes: a lower layer that declared a higher one's
function by hand would pass an include check and fail this one.

A higher layer plugs into a lower one through a hook the lower one defines
(the tracer is a dispatch mode of the runtime); those calls go through
function pointers and never show up as symbols, as intended.

Prints a Check-style summary line so tools/run counts each layer as a check.
"""
import os
import subprocess
import sys


def symbols(objs):
    """{object: (defined, undefined)} global symbols, from one nm run."""
    out = subprocess.run(["nm", "-A"] + objs, check=True, capture_output=True,
                         text=True).stdout
    table = {obj: (set(), set()) for obj in objs}
    for line in out.splitlines():
        obj, _, rest = line.partition(":")
        parts = rest.split()
        if obj not in table:
            continue
        if len(parts) == 2 and parts[0] == "U":
            table[obj][1].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWG":  # global definitions only
            table[obj][0].add(parts[2])
    return table


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: check_layers.py OBJECT_DIR LAYER...")
    objdir, layers = sys.argv[1], sys.argv[2:]
    objects = {layer: [] for layer in layers}
    for name in sorted(os.listdir(objdir)):
        if not name.endswith(".o"):
            continue
        layer = name.split("_", 1)[0]
        if layer not in objects:
            sys.exit("check_layers: %s belongs to no layer of %s" % (name, " ".join(layers)))
        objects[layer].append(os.path.join(objdir, name))
    table = symbols([o for layer in layers for o in objects[layer]])
    defined_in = {}  # symbol -> (layer index, object)
    uses = []  # (layer index, object, undefined symbols)
    for rank, layer in enumerate(layers):
        if not objects[layer]:
            sys.exit("check_layers: no object of layer '%s' in %s" % (layer, objdir))
        for obj in objects[layer]:
            d, u = table[obj]
            for s in d:
                defined_in.setdefault(s, (rank, obj))
            uses.append((rank, obj, u))
    bad = {layer: [] for layer in layers}
    for rank, obj, undefined in uses:
        for s in sorted(undefined):
            if s in defined_in and defined_in[s][0] > rank:
                up_rank, up_obj = defined_in[s]
                bad[layers[rank]].append("%s calls %s, defined in %s (layer %s, above %s)" % (
                    os.path.basename(obj), s, os.path.basename(up_obj), layers[up_rank],
                    layers[rank]))
    failures = 0
    for layer in layers:
        for line in bad[layer]:
            print("check_layers: " + line)
        failures += 1 if bad[layer] else 0
    n = len(layers)
    print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (100 * (n - failures) // n, n, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
