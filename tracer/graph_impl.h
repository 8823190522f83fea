/* Internal to tracer/: the graph IR. */
#ifndef TT_GRAPH_IMPL_H
#define TT_GRAPH_IMPL_H

#include "tensor_impl.h" /* the allocator hook: tt__malloc ... */
#include "tt_trace.h"
#include "error_impl.h"

#include <stdio.h>

/* The most results an op may have (TT_MAX_RETURNS in the runtime). */
#define TT_MAX_RETURNS_PUBLIC 8

/* A reference to output `out` of node `node`. */
typedef struct {
    int node;
    int out;
} gref;

/* An argument of an op node: a constant (a deep copy the graph owns), a
 * reference to a tensor value, or a list of references (Tensor[] whose
 * entries may be -1 for None). */
typedef struct {
    enum { GARG_CONST, GARG_REF, GARG_REFS } kind;
    tt_value v;   /* GARG_CONST */
    gref ref;     /* GARG_REF */
    gref *refs;   /* GARG_REFS */
    int nrefs;
} garg;

/* A node's arrays (args, vals, outs, users) live in its graph's arena, in
 * the order the nodes were made, so a pass over the graph streams through
 * them; they are freed with the graph, not with the node. */
typedef struct {
    /* The ints first and the pointers after, so the struct has no holes:
     * a graph of 100,000 nodes is 100,000 of these in one array. */
    tt_node_kind kind;
    int nargs;
    int nvals;
    /* A mutating op's written arguments that it does not return get an
     * "after-write" value each, after its results: vals[nvals - nafter +
     * k] is the tensor of argument after[2k] (list element after[2k+1],
     * -1 for a lone tensor) once the op wrote it. Later reads of that
     * tensor refer to it, so a read is a data edge from the write, as a
     * built-in in-place op's result is. At run time it is the argument
     * itself (tt__node_fill_after). */
    int nafter;
    int nouts;
    int nusers, cap_users;
    /* An op with a Tensor[] result (split_with_sizes -> Tensor(a)[]) has
     * one value per list element: its values are its results flattened,
     * result j's elements one after the other. ncall is how many results
     * the op returns (a list counts once), rlen[j] the length of result j
     * as traced (-1: not a list); rlen is NULL when no result is a list,
     * and then ncall equals tt__node_nrets. */
    int ncall;
    char name[40];
    const tt_op *op;    /* TT_NODE_OP */
    /* The named scope the op was called in ("block3/attn"; NULL: none):
     * the tracer's copy, alive as long as the process (tt_scope_name_push). */
    const char *scope;
    garg *args;         /* TT_NODE_OP: schema order, defaults filled */
    tt_tensor **vals;   /* value of each output (owned) */
    int *after;         /* nafter (argument, list element) pairs */
    int *rlen;          /* ncall list lengths, or NULL (see ncall) */
    gref *outs;         /* TT_NODE_OUTPUT: the graph's results */
    int *users;         /* nodes that read this one */
    /* The user's call that made it (op nodes; {0} when unknown): file and
     * func point into the graph's string table, so the graph outlives the
     * code it traced (a model library may be unloaded). */
    tt_srcloc loc;
} gnode;

struct tt_graph {
    gnode *nodes;
    int n, cap;
    tt__arena arena; /* the nodes' arrays */
    int ninputs;
    int nconstants; /* constants added, to number the next one */
    int output; /* index of the output node, -1 until set */
    char name[64];
    tt_trace_mode mode;
    /* The names in use, for naming a new node in constant time (see
     * name_node in graph.c): the names taken as given, and a counter per
     * base name that numbered repeats were made from. */
    struct name_table {
        struct name_slot {
            int node;     /* -1: empty */
            int next;     /* counters: the next number to try */
            uint64_t hash; /* of the key, so a probe rarely reads a node */
        } *slots;
        int cap, used;
    } names, counters;
    bool names_lost; /* out of memory rebuilding them: name by node index */
    /* Copies of the source file and function names nodes refer to, found
     * by the address of the caller's string (__func__ is one array per
     * function, __FILE__ mostly one per file): an open hash set, with the
     * last hits kept aside since consecutive nodes mostly share both. */
    struct str_slot {
        const char *key;
        char *copy;
    } *strs, last_file, last_func;
    int nstrs, str_cap;
};

/* tt_graph_to_text, with the user's lines in the comments or without
 * (what a snapshot that survives edits of the traced code compares). */
char *tt__graph_text(const tt_graph *g, bool lines);

/* DOT of two graphs side by side (clusters "expected" and "actual"), the
 * nodes marked in each (NULL: none) drawn red. */
char *tt__graphs_dot(const tt_graph *a, const bool *marked_a, const tt_graph *b,
                     const bool *marked_b, const char *title);

/* Whether some output of node `node` is among the graph's results. */
static inline bool tt__graph_is_output(const tt_graph *g, int node)
{
    const gnode *o = &g->nodes[g->output];
    for (int k = 0; k < o->nouts; k++)
        if (o->outs[k].node == node)
            return true;
    return false;
}

/* The values of the node's results (its values less the after-write
 * ones; a Tensor[] result gives one per element). */
static inline int tt__node_nrets(const gnode *n) { return n->nvals - n->nafter; }
/* The results the node's op returns (a Tensor[] result counts once): what
 * a run asks the op for. */
static inline int tt__node_ncall(const gnode *n) { return n->rlen ? n->ncall : tt__node_nrets(n); }

/* After a run of node n's op, moves its results outs[0 .. ncall) into
 * vals[0 .. nrets), a list's elements one value each (the list's array is
 * freed). A list whose length differs from the traced one is an error
 * naming the node (every result is released then, vals left NULL): the
 * graph's references were made for the traced count. */
tt_status tt__node_take_outs(const tt_graph *g, const gnode *n, tt_value *outs,
                             tt_tensor **vals);

/* The argument index and list element (-1: a lone tensor) of after-write
 * value k of node n. */
static inline int tt__after_arg(const gnode *n, int k) { return n->after[2 * k]; }
static inline int tt__after_elem(const gnode *n, int k) { return n->after[2 * k + 1]; }

/* After a run of node n's op with arguments args, fills its after-write
 * values (vals[tt__node_nrets(n) ..]) with new references to the written
 * arguments. */
static inline void tt__node_fill_after(const gnode *n, const tt_value *args, tt_tensor **vals)
{
    for (int k = 0; k < n->nafter; k++) {
        const tt_value *a = &args[tt__after_arg(n, k)];
        int elem = tt__after_elem(n, k);
        tt_tensor *t = elem < 0 ? a->u.t : a->u.tensors[elem];
        vals[tt__node_nrets(n) + k] = tt_retain(t);
    }
}

/* Whether r is an after-write value. */
static inline bool tt__ref_is_after_write(const tt_graph *g, gref r)
{
    return r.out >= tt__node_nrets(&g->nodes[r.node]);
}

tt_graph *tt__graph_new(const char *name, tt_trace_mode mode);
/* Appends an after-write value to op node `node` for its argument arg
 * (list element elem, or -1), whose tensor is value (retained); returns
 * its output index or -1 (error set). */
int tt__graph_add_after_write(tt_graph *g, int node, int arg, int elem, tt_tensor *value);
/* Appends a node; returns its index or -1 (error set). Takes no
 * ownership of anything passed. */
/* name NULL: "in<k>" for the k-th input. */
int tt__graph_add_placeholder(tt_graph *g, tt_tensor *value, const char *name);
int tt__graph_add_constant(tt_graph *g, tt_tensor *value);
/* args are resolved by `resolve` (tensor -> reference); values are the
 * op's outputs (retained); loc is the user's call (its strings copied). */
int tt__graph_add_op(tt_graph *g, const tt_op *op, const garg *args, int nargs,
                     const tt_value *outs, int nouts, tt_srcloc loc);
int tt__graph_set_output(tt_graph *g, const gref *outs, int nouts);
/* Recomputes every node's users from the references (after a pass
 * rewrote the graph). Capacity only grows, so it cannot fail when the
 * lists were built once. */
void tt__graph_rebuild_users(tt_graph *g);
/* Keeps the nodes order[0..n) in that order and frees the others (which
 * no kept node may reference), renumbering references, users and the
 * input count. Placeholders must come first. */
tt_status tt__graph_reorder(tt_graph *g, const int *order, int n);
/* Rebuilds the name index after a pass renumbered the nodes. */
void tt__graph_reindex_names(tt_graph *g);
/* Frees what a node owns (not the node itself: it lives in the array;
 * nor its arrays: they live in the graph's arena). */
void tt__gnode_free(gnode *n);
/* Writes text to f (stdout when NULL) and frees it; a NULL text is the
 * error its maker set; a failed write is an error naming fn. */
tt_status tt__print_text(const char *fn, const char *what, char *text, FILE *f);
/* Frees what an argument owns. */
void tt__garg_clear(garg *a);
/* Deep copy of a constant value (lists and strings duplicated). */
tt_status tt__value_copy(tt_value *dst, const tt_value *src);
void tt__value_free(tt_value *v);

#endif
