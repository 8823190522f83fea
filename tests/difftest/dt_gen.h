/* tt-difftest's generator internals shared by gen.c and gen_cnn.c (the
 * CNN ops' rules, proposals and calls). Internal to tests/difftest. */
#ifndef DT_GEN_H
#define DT_GEN_H

#include "dt_ops.h"

typedef struct { uint64_t s; } rng;
uint64_t rnext(rng *r);
int rint_(rng *r, int n);
bool rbool(rng *r, int pct);
double pick_scalar(rng *r);

bool is_f(tt_dtype d);
dt_vtype fresh(tt_dtype dt, int nd, const int64_t *s, int slot);
bool bcast(int na, const int64_t *a, int nb, const int64_t *b, int *nr, int64_t *r);
int64_t cnumel(const dt_vtype *v, int *nb);

/* gen_cnn.c: model(), propose() and exec1() for the ops from DT_FIRST_CNN. */
bool dt_model_cnn(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res);
void dt_propose_cnn(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in);
tt_tensor *dt_exec_cnn(const dt_instr *in, tt_tensor **S);

/* gen_index.c: the same for issue 27's ops (from DT_FIRST_INDEX); its
 * index tensors' sizes and values (returns the rank). */
bool dt_model_index(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res);
void dt_propose_index(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in);
tt_tensor *dt_exec_index(const dt_instr *in, tt_tensor **S);
bool dt_index_uses_b(int op);
int dt_index_data(const dt_instr *in, int64_t *sizes, int64_t *vals);

/* gen_adv.c: the same for the ops from DT_FIRST_ADV; which of b, c they read. */
bool dt_model_adv(const dt_program *p, const dt_instr *in, dt_vtype *T, int slot, dt_vtype *res);
void dt_propose_adv(rng *r, const dt_program *p, const dt_vtype *T, int nslots, int op, dt_instr *in);
tt_tensor *dt_exec_adv(const dt_instr *in, tt_tensor **S);
void dt_adv_operands(int op, bool *b, bool *c);

#endif
