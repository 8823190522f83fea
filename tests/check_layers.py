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

Inside runtime/ the same rule holds between sub-layers (SUBLAYERS below,
from the bottom up): base (errors, dtypes, the allocator and memory plans,
call sites), tensor core (tensors, shapes, iteration, boxed values, the
views, copies and factories), op machinery (schemas, registry, dispatcher,
autograd, checked mode, kernel frames). Every runtime file must be in the
table, so a new file is placed on purpose. The calls up that remain are
listed in KNOWN_UP with the reason each is still there; a listed call that
is gone fails too, so the list only shrinks.

Prints a Check-style summary line so tools/run counts each layer (and each
runtime sub-layer) as a check.
"""
import os
import subprocess
import sys


# runtime/'s sub-layers, bottom up: file stems (runtime/alloc.c -> alloc).
SUBLAYERS = [
    ("base", ["error", "dtype", "alloc", "plan_memory", "callsite"]),
    ("tensor core", ["tensor", "shape_env", "iter", "value", "tensor_views", "copy",
                     "factory"]),
    ("op machinery", ["schema", "registry", "dispatch", "autograd", "checked", "frame"]),
]

# Calls up between runtime's sub-layers that remain: (caller stem, symbol).
KNOWN_UP = {
    ("tensor", "tt__data_read_hook"): "a hook variable the dispatcher defines and sets "
                                      "(its modes hear of data reads)",
    ("tensor", "tt__autograd_meta_free"): "releasing a tensor frees its autograd record",
}


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


def check_sublayers(objs, table):
    """(failures, checks) of the runtime sub-layer rule; prints each call up."""
    rank_of = {}
    for rank, (_, stems) in enumerate(SUBLAYERS):
        for stem in stems:
            rank_of[stem] = rank
    stem_of = {}
    for obj in objs:
        stem = os.path.basename(obj)[len("runtime_"):-len(".c.o")]
        if stem not in rank_of:
            print("check_layers: runtime/%s.c belongs to no sub-layer of runtime "
                  "(SUBLAYERS in tests/check_layers.py)" % stem)
            return 1, 1
        stem_of[obj] = stem
    defined_in = {}
    for obj in objs:
        for s in table[obj][0]:
            defined_in.setdefault(s, obj)
    bad = {name: [] for name, _ in SUBLAYERS}
    seen = set()
    for obj in objs:
        stem = stem_of[obj]
        for s in sorted(table[obj][1]):
            up = defined_in.get(s)
            if up is None or rank_of[stem_of[up]] <= rank_of[stem]:
                continue
            if (stem, s) in KNOWN_UP:
                seen.add((stem, s))
                continue
            bad[SUBLAYERS[rank_of[stem]][0]].append(
                "runtime/%s.c calls %s, defined in runtime/%s.c (%s, above %s)" % (
                    stem, s, stem_of[up], SUBLAYERS[rank_of[stem_of[up]]][0],
                    SUBLAYERS[rank_of[stem]][0]))
    for stem, s in sorted(set(KNOWN_UP) - seen):
        if stem in rank_of:
            bad[SUBLAYERS[rank_of[stem]][0]].append(
                "runtime/%s.c no longer calls %s up: remove it from KNOWN_UP" % (stem, s))
    failures = 0
    for name, _ in SUBLAYERS:
        for line in bad[name]:
            print("check_layers: " + line)
        failures += 1 if bad[name] else 0
    return failures, len(SUBLAYERS)


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
    if "runtime" in objects:
        sub_failures, sub_checks = check_sublayers(objects["runtime"], table)
        failures += sub_failures
        n += sub_checks
    print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (100 * (n - failures) // n, n, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
