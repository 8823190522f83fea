/* Internal to ops/: the convolution passes shared by ops/convolution.c (the
 * ops), ops/conv_gemm.c (im2col + GEMM) and ops/conv_dnnl.c (oneDNN). Not
 * installed. */
#ifndef TT_CONV_IMPL_H
#define TT_CONV_IMPL_H

#include "transformer_impl.h"

/* The concrete geometry of one convolution in convolution sense: x [N, C,
 * in0, in1] -> y [N, O, out0, out1], w [O, C/G, k0, k1]; stride s, padding
 * p, dilation d per spatial dim. A 1-d convolution has in0 = out0 = k0 = 1. */
typedef struct {
    int64_t N, C, O, G;
    int64_t in[2], out[2], k[2], s[2], p[2], d[2];
} conv_geom;

/* The three passes over contiguous buffers of dtype dt (f32 or f64):
 * y = conv(x, w); dx = conv^T(dy, w) (overwritten); dw = d/dw (overwritten).
 * Each picks oneDNN or im2col + GEMM (conv_gemm.c says which and why). */
tt_status conv_fwd(const conv_geom *g, tt_dtype dt, const char *x, const char *w, char *y);
tt_status conv_bwd_data(const conv_geom *g, tt_dtype dt, const char *dy, const char *w, char *dx);
tt_status conv_bwd_weight(const conv_geom *g, tt_dtype dt, const char *x, const char *dy,
                          char *dw);
/* The im2col + GEMM passes alone (the f64 path, and the comparison in the
 * bench and tests). */
tt_status conv_gemm_fwd(const conv_geom *g, tt_dtype dt, const char *x, const char *w, char *y);
tt_status conv_gemm_bwd_data(const conv_geom *g, tt_dtype dt, const char *dy, const char *w,
                             char *dx);
tt_status conv_gemm_bwd_weight(const conv_geom *g, tt_dtype dt, const char *x, const char *dy,
                               char *dw);
/* y [n, c, hw] = y * scale[c] + b[c] per channel (scale NULL: 1, b NULL:
 * 0), then ReLU with relu: a fused convolution's epilogue in one pass.
 * db[c] = sum over n, hw of dy. */
void conv_add_bias(tt_dtype dt, char *y, const char *scale, const char *b, bool relu, int64_t n,
                   int64_t c, int64_t hw);
void conv_bias_grad(tt_dtype dt, const char *dy, char *db, int64_t n, int64_t c, int64_t hw);
/* im2col of N images [C, in0, in1] into [N, C k0 k1, out0 out1], and its
 * adjoint (col2im sums into a zeroed image). */
void conv_im2col_batch(const conv_geom *g, tt_dtype dt, const char *x, char *col);
void conv_col2im_batch(const conv_geom *g, tt_dtype dt, const char *col, char *x);

/* conv_dnnl.c: pass `pass` (CONV_PASS_*) of geometry g through oneDNN
 * (f32). ptr: the pass's operands in its order (forward x, w, y;
 * backward-data dy, w, dx; backward-weights x, dy, dw). *ran is false when
 * oneDNN has no primitive for the geometry (nothing was done: the caller
 * takes im2col + GEMM); an error is oneDNN's failure while running. */
enum { CONV_PASS_FWD, CONV_PASS_BWD_DATA, CONV_PASS_BWD_WEIGHTS };
tt_status conv_dnnl_run(int pass, const conv_geom *g, void *const ptr[3], bool *ran);
/* The backend tt_debug_conv_backend chose (TT_CONV_AUTO unless a test or
 * the bench forced one). */
int conv_backend(void);

#endif
