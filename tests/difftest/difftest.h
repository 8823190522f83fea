/* tt-difftest: random valid tensor programs, run eagerly and through the
 * tracer and tt_compile, compared (Csmith/NNSmith style). Public API only.
 *
 * A program is data: inputs (dtype, shape, layout, values' kind) and a list
 * of instructions over value slots (slot i < nin is input i, slot nin + k
 * is instruction k's result). dt_program_fn interprets it through the
 * public API; that same function is what eager runs and what the tracer
 * traces and tt_compile compiles, so both sides run the exact same code.
 *
 * The generator keeps a shape/dtype model of every slot (PyTorch's
 * broadcasting and promotion), so it knows a program is valid before it
 * runs it: an eager error is a bug of the model (a "generator" finding),
 * not of the library. */
#ifndef DIFFTEST_H
#define DIFFTEST_H

#include "tensortrace.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define DT_MAX_IN 6
#define DT_MAX_INS 48
#define DT_MAX_SLOTS (DT_MAX_IN + DT_MAX_INS)
#define DT_MAX_OUT 4
#define DT_MAX_ND 5
/* The batch size in the model's sizes: one unknown B >= 2 that no
 * concrete size equals, read in the program with tt_dim_size. */
#define DT_B (-1000)

typedef enum { LAY_CONTIG, LAY_TRANSPOSED, LAY_STRIDED, LAY_OFFSET, LAY_EXPANDED, LAY_COUNT } dt_layout;
/* VAL_POS: values in (0, 2] (a batch norm's running variance). */
typedef enum { VAL_NORMAL, VAL_INDEX, VAL_POS } dt_valkind;

typedef struct {
    tt_dtype dt;
    int nd;
    int64_t s[DT_MAX_ND]; /* DT_B for the batch */
    dt_layout lay;
    int lay_dim;       /* LAY_EXPANDED: the dim stored with size 1 */
    dt_valkind val;
    int64_t range;     /* VAL_INDEX: values in [0, range) */
    bool rg;           /* requires grad */
} dt_input;

typedef struct {
    int op;
    int a, b, c;         /* slots, -1: none */
    int d;               /* a fourth slot (the CNN ops' parameter vector), -1: none */
    int mode;            /* op-specific choice (unary kind, comparison, keepdim ...) */
    int ni;
    int64_t i[DT_MAX_ND + 1]; /* dims, a shape (DT_B entries read with tt_dim_size) */
    double f, g;         /* scalars; NAN: none */
    int bslot, bdim;     /* where a DT_B entry of i[] is read */
} dt_instr;

typedef struct {
    uint64_t seed;
    int nin;
    dt_input in[DT_MAX_IN];
    int n;
    dt_instr ins[DT_MAX_INS];
    int nout;
    int out[DT_MAX_OUT];
    /* 0: no gradients; 1: tt_grad of the loss w.r.t. the rg inputs;
     * 2: tt_backward then the inputs' .grad; both then take an SGD step
     * on the writable rg inputs (under no-grad). */
    int grad;
    bool cnn; /* inputs are images for the CNN ops (gen_inputs) */
} dt_program;

/* The model's view of a slot. */
typedef struct {
    tt_dtype dt;
    int nd;
    int64_t s[DT_MAX_ND + 1];
    bool fuzzy;    /* a float value with rounding in it: no discrete op on it */
    bool rg;       /* requires grad */
    bool writable; /* no internal overlap (not from an expand) */
    bool contig;   /* known contiguous (view() is safe) */
    int root;      /* the slot whose storage it views */
    bool saved;    /* (on a root) some view may be saved for backward */
} dt_vtype;

/* Generator configuration: program features that can be switched off. */
typedef struct {
    bool no_inplace, no_grad, no_breaks, no_layouts, no_batch;
    int min_ins, max_ins;
    const char *ops; /* comma list of op short names, NULL: all */
    const char *no_ops; /* comma list of ops left out */
} dt_genopts;

/* ---- gen.c */
void dt_generate(dt_program *p, uint64_t seed, const dt_genopts *o);
/* Re-checks every instruction against the model; false when one is
 * invalid (after shrinking edits). types (may be NULL) gets every slot. */
bool dt_validate(const dt_program *p, dt_vtype *types);
/* The program as the traced function; ud is the dt_program. nout must be
 * dt_num_outputs(p). */
tt_status dt_program_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud);
int dt_num_outputs(const dt_program *p);
int dt_num_rg(const dt_program *p);
bool dt_has_break(const dt_program *p);
/* The inputs for batch size b and value set vs (new references). */
tt_status dt_make_inputs(const dt_program *p, int64_t b, uint64_t vs, tt_tensor **in);
/* Short name of instruction k's op, and the list of every op. */
const char *dt_op_name(int op);
int dt_op_count(void);
const char *dt_op_covers(int op); /* space-separated tt:: names */
/* The standalone C reproducer (a main() calling the public API). */
void dt_print_c(FILE *f, const dt_program *p, int64_t b, const char *cfg_comment,
                int mode, bool fullgraph, unsigned passes_off, int check_kind);
/* One line: "in: f32[B,3] T, i64[4]; ins: add mul(...) ..." */
void dt_print_summary(FILE *f, const dt_program *p);
int dt_op_of_last(const dt_program *p);
/* --self-test: 1 makes tt_neg on a fake tensor (what traces see) call
 * tt_abs, 2 makes it crash; 0 (the default) plants nothing. */
extern int dt_plant;

#endif
