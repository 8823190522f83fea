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

Inside tracer/ the levels of TRACER_LEVELS (bottom up) make the files a
DAG: the progress bar and the profiler's recorder (which need only the
runtime); the graph IR and what only needs it; tracing and the passes; the
compiled plan and explain (tracing that splits at breaks); compile; opcheck
(which compiles); the DOT printer, render and the profiler's reports; the
test helpers (which explain, compile and draw). A file may call its own
level or a lower one, never a higher one, and the calls between the files
of one level may form no cycle. Every tracer/*.c file of the source tree is
in exactly one level, and the table names no file that is gone. A higher
file plugs into a lower one through a hook (explain into trace through
the tracer's on_break), not a call. render.c is libtensortrace-render's
(OWN_LIBRARY): it has no object among the core's, and must not get one.
The tracer rule also runs on made-up symbol tables first (self_test), so
a rule that stopped catching a call up fails too.

Prints a Check-style summary line so tools/run counts each layer (and each
runtime sub-layer and tracer level) as a check.
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

# Calls up between runtime's sub-layers that remain: (caller stem, symbol)
# -> why. None remain: the tensor core reaches the op machinery only
# through the hooks it defines (tt__data_read_hook, the autograd record's
# free), set from above. A new entry needs its reason.
KNOWN_UP = {}


# tracer/'s levels, bottom up: file stems (tracer/trace.c -> trace).
TRACER_LEVELS = [
    ("progress bar and profiler", ["progress", "profile"]),
    ("graph IR", ["graph", "log", "values", "inspect", "symbolic_trace"]),
    ("tracing and passes", ["trace", "passes", "fuse", "interp"]),
    ("plan and explain", ["plan", "explain"]),
    ("compile", ["compile"]),
    ("opcheck", ["opcheck"]),
    ("output", ["dot", "render", "render_html", "profile_report"]),
    ("test helpers", ["testing", "bisect", "hash_log"]),
]
# Stems of TRACER_LEVELS built into a library of their own, not the core.
OWN_LIBRARY = {"render": "libtensortrace-render", "render_html": "libtensortrace-render"}
TRACER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tracer")


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


def tracer_sources():
    """The stems of tracer/*.c in the source tree."""
    return {f[:-2] for f in os.listdir(TRACER_SRC) if f.endswith(".c")}


def tracer_table_errors(stems_built, sources):
    """Messages for a TRACER_LEVELS that does not place each tracer file once."""
    errors = []
    placed = {}
    for name, stems in TRACER_LEVELS:
        for stem in stems:
            if stem in placed:
                errors.append("tracer/%s.c is in two levels of TRACER_LEVELS (%s and %s)"
                              % (stem, placed[stem], name))
            placed.setdefault(stem, name)
    for stem in sorted(sources - set(placed)):
        errors.append("tracer/%s.c belongs to no level of tracer (TRACER_LEVELS in "
                      "tests/check_layers.py)" % stem)
    for stem in sorted(set(placed) - sources):
        errors.append("TRACER_LEVELS names tracer/%s.c, which does not exist" % stem)
    for stem in sorted(stems_built - set(placed)):
        errors.append("the core library has an object of tracer/%s.c, which is in no level"
                      % stem)
    for stem in sorted(stems_built & set(OWN_LIBRARY)):
        errors.append("tracer/%s.c is %s's, but the core library has an object of it"
                      % (stem, OWN_LIBRARY[stem]))
    for stem in sorted(sources - stems_built - set(OWN_LIBRARY)):
        errors.append("tracer/%s.c has no object in the core library (built nowhere, or "
                      "in a library of its own: add it to OWN_LIBRARY)" % stem)
    return errors


def cycle_in(edges):
    """A list of nodes forming a cycle of edges {node: {node: ...}}, or None."""
    state = {}  # node -> 1 on the path, 2 done

    def visit(node, path):
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def tracer_level_errors(objs, table, sources):
    """[(level, message)] of the tracer level rule: the table's errors (level
    None), then each call up and each cycle inside a level."""
    stem_of = {obj: os.path.basename(obj)[len("tracer_"):-len(".c.o")] for obj in objs}
    errors = tracer_table_errors(set(stem_of.values()), sources)
    if errors:
        return [(None, e) for e in errors]
    rank_of = {}
    for rank, (_, stems) in enumerate(TRACER_LEVELS):
        for stem in stems:
            rank_of[stem] = rank
    defined_in = {}
    for obj in objs:
        for s in table[obj][0]:
            defined_in.setdefault(s, stem_of[obj])
    bad = []
    same_level = {}  # stem -> {stem of its own level it calls: a symbol}
    for obj in objs:
        stem = stem_of[obj]
        for s in sorted(table[obj][1]):
            up = defined_in.get(s)
            if up is None or up == stem:
                continue
            if rank_of[up] == rank_of[stem]:
                same_level.setdefault(stem, {}).setdefault(up, s)
            elif rank_of[up] > rank_of[stem]:
                level = TRACER_LEVELS[rank_of[stem]][0]
                bad.append((level, "tracer/%s.c calls %s, defined in tracer/%s.c (%s, above "
                                   "%s)" % (stem, s, up, TRACER_LEVELS[rank_of[up]][0], level)))
    for name, _ in TRACER_LEVELS:
        calls = {stem: c for stem, c in same_level.items()
                 if TRACER_LEVELS[rank_of[stem]][0] == name}
        cycle = cycle_in(calls)
        if cycle:
            bad.append((name, "a cycle of calls in tracer's level %s: tracer/%s.c%s" % (
                name, cycle[0], "".join(" calls %s, defined in tracer/%s.c, which" % (
                    calls[a][b], b) for a, b in zip(cycle, cycle[1:]))[:-len(", which")])))
    return bad


def check_tracer_levels(objs, table):
    """(failures, checks) of the tracer level rule; prints each call up."""
    bad = tracer_level_errors(objs, table, tracer_sources())
    for _, line in bad:
        print("check_layers: " + line)
    if any(level is None for level, _ in bad):
        return 1, 1
    return len({level for level, _ in bad}), len(TRACER_LEVELS)


def self_test():
    """(failures, checks): the tracer rule on made-up symbol tables, so a
    rule that stopped catching the cycles of issue 25 fails too."""
    sources = {stem for _, stems in TRACER_LEVELS for stem in stems}
    core = sorted(sources - set(OWN_LIBRARY))

    def run(calls, built=core, srcs=sources):
        """calls: (caller stem, symbol, callee stem); the messages."""
        objs = ["tracer_%s.c.o" % stem for stem in built]
        table = {o: (set(), set()) for o in objs}
        for caller, sym, callee in calls:
            table["tracer_%s.c.o" % callee][0].add(sym)
            table["tracer_%s.c.o" % caller][1].add(sym)
        return [m for _, m in tracer_level_errors(objs, table, srcs)]

    cases = [
        ("a DAG passes", run([("explain", "tt__tracer_run", "trace"),
                              ("opcheck", "tt__argset_copy", "values")]), []),
        ("trace calling explain fails", run([("trace", "tt__explain_probe_fake", "explain")]),
         ["tracer/trace.c calls tt__explain_probe_fake, defined in tracer/explain.c (plan "
          "and explain, above tracing and passes)"]),
        ("explain calling opcheck fails", run([("explain", "tt__argset_copy", "opcheck")]),
         ["tracer/explain.c calls tt__argset_copy, defined in tracer/opcheck.c (opcheck, "
          "above plan and explain)"]),
        ("a cycle inside a level fails", run([("plan", "tt_a", "explain"),
                                              ("explain", "tt_b", "plan")]),
         ["a cycle of calls in tracer's level plan and explain: tracer/explain.c calls "
          "tt_b, defined in tracer/plan.c, which calls tt_a, defined in tracer/explain.c"]),
        ("a file in no level fails", run([], srcs=sources | {"newpass"}),
         ["tracer/newpass.c belongs to no level of tracer (TRACER_LEVELS in "
          "tests/check_layers.py)", "tracer/newpass.c has no object in the core library "
          "(built nowhere, or in a library of its own: add it to OWN_LIBRARY)"]),
        ("render in the core fails", run([], built=core + ["render"]),
         ["tracer/render.c is libtensortrace-render's, but the core library has an "
          "object of it"]),
    ]
    failures = 0
    for name, got, want in cases:
        if got != want:
            failures += 1
            print("check_layers: self-test '%s': got %r, expected %r" % (name, got, want))
    return (1 if failures else 0), 1


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
    if "tracer" in objects:
        for sub_failures, sub_checks in (check_tracer_levels(objects["tracer"], table),
                                         self_test()):
            failures += sub_failures
            n += sub_checks
    print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (100 * (n - failures) // n, n, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
