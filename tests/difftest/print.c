/* tt-difftest: programs printed as standalone C reproducers (a main()
 * calling the public API) and as one-line summaries. */
#include "dt_ops.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------ C reproducers */

static const char *dt_c(tt_dtype d)
{
    static const char *n[] = {"TT_F32", "TT_F64", "TT_I64", "TT_I32", "TT_U8", "TT_BOOL"};
    return (int)d >= 0 && d < TT_DTYPE_COUNT ? n[d] : "TT_F32";
}

static void pr_ints(FILE *f, int n, const int64_t *v)
{
    fprintf(f, "(const int64_t[]){");
    for (int k = 0; k < n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
    fprintf(f, n ? "}" : "0}");
}

static void pr_shape(FILE *f, const dt_instr *in)
{
    fprintf(f, "(const int64_t[]){");
    for (int k = 0; k < in->ni; k++) {
        if (in->i[k] == DT_B) fprintf(f, "%stt_dim_size(v%d, %d)", k ? ", " : "", in->bslot, in->bdim);
        else fprintf(f, "%s%lld", k ? ", " : "", (long long)in->i[k]);
    }
    fprintf(f, in->ni ? "}" : "0}");
}

static void pr_num(FILE *f, double x)
{
    if (isnan(x)) fprintf(f, "NAN");
    else fprintf(f, "%.17g", x);
}

static void pr_val(FILE *f, double x)
{
    if (dt_integral(x)) fprintf(f, "tt_v_int(%lld)", (long long)x);
    else { fprintf(f, "tt_v_float("); pr_num(f, x); fprintf(f, ")"); }
}

static void print_instr(FILE *f, const dt_program *p, int k)
{
    const dt_instr *in = &p->ins[k];
    int s = p->nin + k;
    bool ip = (in->op >= OP_IADD && in->op <= OP_IFILL) || in->op == OP_SGD;
    if (ip) fprintf(f, "    CHECK_OK(");
    else fprintf(f, "    tt_tensor *v%d = CHECK(", s);
#define A in->a
#define B in->b
#define Cc in->c
#define D in->d
    switch (in->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW:
        fprintf(f, "tt_%s(v%d, v%d)", dt_op_names[in->op], A, B); break;
    case OP_ADDS: fprintf(f, "tt_add_scaled(v%d, v%d, ", A, B); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_ADD_SC: case OP_SUB_SC: case OP_MUL_SC: case OP_DIV_SC: case OP_POW_SC:
        fprintf(f, "tt_%s(v%d, ", dt_op_names[in->op], A); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_SC_POW: fprintf(f, "tt_scalar_pow("); pr_num(f, in->f); fprintf(f, ", v%d)", A); break;
    case OP_DIV_MODE: fprintf(f, "tt_div_mode(v%d, v%d, \"%s\")", A, B, dt_modes[in->mode & 1]); break;
    case OP_DIV_SC_MODE: fprintf(f, "tt_div_scalar_mode(v%d, ", A); pr_num(f, in->f); fprintf(f, ", \"%s\")", dt_modes[in->mode & 1]); break;
    case OP_CMP: fprintf(f, "%s(v%d, v%d)", dt_cmp_fn[in->mode], A, B); break;
    case OP_CMP_SC: fprintf(f, "tt_call(tt_op_find(\"%s\"), tt_v_tensor(v%d), ", dt_cmp_sc_op[in->mode], A); pr_val(f, in->f); fprintf(f, ")"); break;
    case OP_WHERE: fprintf(f, "tt_where(v%d, v%d, v%d)", A, B, Cc); break;
    case OP_WHERE_SC: fprintf(f, "tt_where_scalar(v%d, ", A); pr_num(f, in->f); fprintf(f, ", v%d)", B); break;
    case OP_WHERE_OSC: fprintf(f, "tt_where_other_scalar(v%d, v%d, ", A, B); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_WHERE_SS: fprintf(f, "tt_call(tt_op_find(\"tt::where.Scalar\"), tt_v_tensor(v%d), ", A); pr_val(f, in->f); fprintf(f, ", "); pr_val(f, in->g); fprintf(f, ")"); break;
    case OP_AS_STRIDED:
        fprintf(f, "tt_as_strided(v%d, %d, (const int64_t[]){%lld, %lld}, (const int64_t[]){%lld, %lld}, %lld)", A, in->ni,
                (long long)in->i[0], (long long)in->i[1], (long long)in->i[2], (long long)in->i[3], (long long)in->i[4]);
        break;
    case OP_CLAMP: fprintf(f, "tt_clamp(v%d, ", A); pr_num(f, in->f); fprintf(f, ", "); pr_num(f, in->g); fprintf(f, ")"); break;
    case OP_CLAMP_T:
        fprintf(f, "tt_clamp_tensor(v%d, ", A);
        if (B >= 0) fprintf(f, "v%d, ", B); else fprintf(f, "NULL, ");
        if (Cc >= 0) fprintf(f, "v%d)", Cc); else fprintf(f, "NULL)");
        break;
    case OP_UNARY:
        if (in->mode == U_SIGN) fprintf(f, "tt_call(tt_op_find(\"tt::sign\"), tt_v_tensor(v%d))", A);
        else fprintf(f, "%s(v%d)", dt_unary_fn[in->mode], A);
        break;
    case OP_IADD: case OP_ISUB: case OP_IMUL: case OP_IDIV:
        fprintf(f, "tt_%s(v%d, v%d)", dt_op_names[in->op], A, B); break;
    case OP_IADDS: fprintf(f, "tt_add_scaled_(v%d, v%d, ", A, B); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_IMUL_SC: case OP_IADD_SC: case OP_ISUB_SC: case OP_IDIV_SC:
        fprintf(f, "tt_%s(v%d, ", dt_op_names[in->op], A); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_IDIV_MODE:
        if (B >= 0) fprintf(f, "call_inplace(tt_call(tt_op_find(\"tt::div_.Tensor_mode\"), tt_v_tensor(v%d), tt_v_tensor(v%d), tt_v_str(\"%s\")))", A, B, dt_modes[in->mode & 1]);
        else { fprintf(f, "call_inplace(tt_call(tt_op_find(\"tt::div_.Scalar_mode\"), tt_v_tensor(v%d), ", A); pr_val(f, in->f); fprintf(f, ", tt_v_str(\"%s\")))", dt_modes[in->mode & 1]); }
        break;
    case OP_IRELU: fprintf(f, "tt_relu_(v%d)", A); break;
    case OP_IZERO: fprintf(f, "tt_zero_(v%d)", A); break;
    case OP_ICOPY: fprintf(f, "tt_copy_(v%d, v%d)", A, B); break;
    case OP_IFILL: fprintf(f, "tt_fill_(v%d, ", A); pr_num(f, in->f); fprintf(f, ")"); break;
    case OP_SUM: case OP_MEAN: case OP_AMAX: case OP_AMIN:
        fprintf(f, "tt_%s(v%d, %d, ", dt_op_names[in->op], A, in->ni); pr_ints(f, in->ni, in->i);
        fprintf(f, ", %s)", in->mode & 1 ? "true" : "false"); break;
    case OP_SUM_ALL: case OP_MEAN_ALL: fprintf(f, "tt_%s(v%d)", dt_op_names[in->op], A); break;
    case OP_ARGMAX: fprintf(f, "tt_argmax(v%d, %d, %s)", A, (int)in->i[0], in->mode & 1 ? "true" : "false"); break;
    case OP_SOFTMAX: case OP_LOG_SOFTMAX: fprintf(f, "tt_%s(v%d, %d)", dt_op_names[in->op], A, (int)in->i[0]); break;
    case OP_MM: case OP_BMM: case OP_MATMUL: fprintf(f, "tt_%s(v%d, v%d)", dt_op_names[in->op], A, B); break;
    case OP_LINEAR:
        if (Cc >= 0) fprintf(f, "tt_linear(v%d, v%d, v%d)", A, B, Cc);
        else fprintf(f, "tt_linear(v%d, v%d, NULL)", A, B);
        break;
    case OP_VIEW: case OP_RESHAPE: case OP_EXPAND:
        fprintf(f, "tt_%s(v%d, %d, ", dt_op_names[in->op], A, in->ni); pr_shape(f, in); fprintf(f, ")"); break;
    case OP_PERMUTE: fprintf(f, "tt_permute(v%d, %d, ", A, in->ni); pr_ints(f, in->ni, in->i); fprintf(f, ")"); break;
    case OP_TRANSPOSE: fprintf(f, "tt_transpose(v%d, %d, %d)", A, (int)in->i[0], (int)in->i[1]); break;
    case OP_T: fprintf(f, "tt_t(v%d)", A); break;
    case OP_NARROW: fprintf(f, "tt_narrow(v%d, %d, %lld, %lld)", A, (int)in->i[0], (long long)in->i[1], (long long)in->i[2]); break;
    case OP_SLICE: fprintf(f, "tt_slice(v%d, %d, %lld, %lld, %lld)", A, (int)in->i[0], (long long)in->i[1], (long long)in->i[2], (long long)in->i[3]); break;
    case OP_SELECT: fprintf(f, "tt_select(v%d, %d, %lld)", A, (int)in->i[0], (long long)in->i[1]); break;
    case OP_SQUEEZE: fprintf(f, "tt_squeeze(v%d, %d)", A, (int)in->i[0]); break;
    case OP_SQUEEZE_ALL: fprintf(f, "tt_squeeze_all(v%d)", A); break;
    case OP_SQUEEZE_DIMS: fprintf(f, "tt_squeeze_dims(v%d, %d, ", A, in->ni); pr_ints(f, in->ni, in->i); fprintf(f, ")"); break;
    case OP_UNSQUEEZE: fprintf(f, "tt_unsqueeze(v%d, %d)", A, (int)in->i[0]); break;
    case OP_FLATTEN: fprintf(f, "tt_flatten(v%d, %d, %d)", A, (int)in->i[0], (int)in->i[1]); break;
    case OP_CONTIGUOUS: case OP_CLONE: case OP_DETACH: fprintf(f, "tt_%s(v%d)", dt_op_names[in->op], A); break;
    case OP_TO_DTYPE: fprintf(f, "tt_to_dtype(v%d, %s)", A, dt_c((tt_dtype)in->mode)); break;
    case OP_CAT: case OP_STACK: {
        int n = Cc >= 0 ? 3 : (B >= 0 ? 2 : 1);
        fprintf(f, "tt_%s(%d, (tt_tensor *[]){v%d", dt_op_names[in->op], n, A);
        if (n > 1) fprintf(f, ", v%d", B);
        if (n > 2) fprintf(f, ", v%d", Cc);
        fprintf(f, "}, %d)", (int)in->i[0]);
        break;
    }
    case OP_CE: fprintf(f, "tt_cross_entropy(v%d, v%d)", A, B); break;
    case OP_EMBEDDING: fprintf(f, "tt_embedding(v%d, v%d)", A, B); break;
    case OP_LAYER_NORM:
        fprintf(f, "tt_layer_norm(v%d, 1, (const int64_t[]){tt_dim_size(v%d, -1)}, ", A, A);
        if (B >= 0) fprintf(f, "v%d, ", B); else fprintf(f, "NULL, ");
        if (Cc >= 0) fprintf(f, "v%d, 1e-5)", Cc); else fprintf(f, "NULL, 1e-5)");
        break;
    case OP_SDPA: fprintf(f, "tt_scaled_dot_product_attention(v%d, v%d, v%d, %s, 0)", A, A, A, in->mode & 1 ? "true" : "false"); break;
    case OP_GLOBAL_NORM:
        if (B >= 0) fprintf(f, "tt_global_norm(2, (tt_tensor *[]){v%d, v%d})", A, B);
        else fprintf(f, "tt_global_norm(1, (tt_tensor *[]){v%d})", A);
        break;
    case OP_FULL: {
        fprintf(f, "tt_full(tt_ndim(v%d), sizes_of(v%d), ", A, A); pr_num(f, in->f); fprintf(f, ", %s)", dt_c((tt_dtype)in->mode));
        break;
    }
    case OP_ARANGE: fprintf(f, "tt_arange(0, %lld, 1, %s)", (long long)in->i[0], dt_c((tt_dtype)in->mode)); break;
    case OP_LINSPACE: fprintf(f, "tt_linspace(-1, 2, %lld, %s)", (long long)in->i[0], dt_c((tt_dtype)in->mode)); break;
    case OP_BREAK: fprintf(f, "explicit_break()"); break;
    case OP_ITEM: fprintf(f, "item_scale%s(v%d, v%d)", in->mode & 1 ? "_by_op" : "", A, B); break;
    case OP_CONV2D: case OP_CONV1D: {
        int sp = in->op == OP_CONV2D ? 2 : 1;
        int64_t cin = (int64_t)in->g, o = in->i[0], g = in->mode & 0xff, opad = (in->mode >> 12) & 0xf;
        bool tr = in->mode & 0x200;
        int64_t ws[4] = {tr ? cin : o, tr ? o / g : cin / g, in->i[1], in->i[2]}, nw = 1;
        for (int k = 0; k < sp + 2; k++) nw *= ws[k];
        fprintf(f, "%stt_%s(v%d, pv(v%d, 0, %d, ", in->mode & 0x400 ? "tt_relu(" : "", dt_op_names[in->op], A, D, sp + 2);
        pr_ints(f, sp + 2, ws);
        if (in->mode & 0x100) fprintf(f, "), pv(v%d, %lld, 1, (const int64_t[]){%lld}), ", D, (long long)nw, (long long)o);
        else fprintf(f, "), NULL, ");
        fprintf(f, "&(tt_conv_opts){.stride = {%lld, %lld}, .padding = {%lld, %lld}, .dilation = {%lld, %lld}, "
                   ".output_padding = {%lld, %lld}, .groups = %lld, .transposed = %s})",
                (long long)in->i[3], (long long)in->i[3], (long long)in->i[4], (long long)in->i[4],
                (long long)in->i[5], (long long)in->i[5], (long long)opad, (long long)opad, (long long)g,
                tr ? "true" : "false");
        if (in->mode & 0x400) fprintf(f, ")");
        break;
    }
    case OP_MAXPOOL2D: case OP_AVGPOOL2D: case OP_MAXPOOL1D: case OP_AVGPOOL1D: {
        tt_pool_opts o;
        dt_pool_opts(in, &o);
        fprintf(f, "tt_%s(v%d, &(tt_pool_opts){.kernel = {%lld, %lld}, .stride = {%lld, %lld}, "
                   ".padding = {%lld, %lld}, .dilation = {%lld, %lld}, .ceil_mode = %s, "
                   ".exclude_pad = %s, .divisor_override = %lld})",
                dt_op_names[in->op], A, (long long)o.kernel[0], (long long)o.kernel[1],
                (long long)o.stride[0], (long long)o.stride[1], (long long)o.padding[0],
                (long long)o.padding[1], (long long)o.dilation[0], (long long)o.dilation[1],
                o.ceil_mode ? "true" : "false", o.exclude_pad ? "true" : "false",
                (long long)o.divisor_override);
        break;
    }
    case OP_MAXPOOL3D: case OP_AVGPOOL3D: {
        tt_pool3d_opts o;
        dt_pool3d_opts(in, &o);
        fprintf(f, "tt_%s(v%d, &(tt_pool3d_opts){.kernel = {%lld, %lld, %lld}, "
                   ".stride = {%lld, %lld, %lld}, .padding = {%lld, %lld, %lld}, "
                   ".dilation = {%lld, %lld, %lld}, .ceil_mode = %s, .exclude_pad = %s, "
                   ".divisor_override = %lld})",
                dt_op_names[in->op], A, (long long)o.kernel[0], (long long)o.kernel[1],
                (long long)o.kernel[2], (long long)o.stride[0], (long long)o.stride[1],
                (long long)o.stride[2], (long long)o.padding[0], (long long)o.padding[1],
                (long long)o.padding[2], (long long)o.dilation[0], (long long)o.dilation[1],
                (long long)o.dilation[2], o.ceil_mode ? "true" : "false",
                o.exclude_pad ? "true" : "false", (long long)o.divisor_override);
        break;
    }
    case OP_ADAPTIVE:
        if (in->mode == 2)
            fprintf(f, "tt_adaptive_avg_pool3d(v%d, %lld, %lld, %lld)", A, (long long)in->i[0],
                    (long long)in->i[1], (long long)in->i[2]);
        else if (in->mode & 1)
            fprintf(f, "tt_adaptive_avg_pool1d(v%d, %lld)", A, (long long)in->i[1]);
        else
            fprintf(f, "tt_adaptive_avg_pool2d(v%d, %lld, %lld)", A, (long long)in->i[0], (long long)in->i[1]);
        break;
    case OP_PAD:
        fprintf(f, "tt_pad(v%d, %d, ", A, in->ni); pr_ints(f, in->ni, in->i);
        fprintf(f, ", \"%s\", ", dt_pad_modes[in->mode]); pr_num(f, in->f); fprintf(f, ")");
        break;
    case OP_UPSAMPLE: {
        const char *ac = in->mode & 4 ? "true" : "false";
        const char *fn = (in->mode & 3) < 2 ? "tt_upsample_nearest2d" : "tt_upsample_bilinear2d";
        if (in->mode & 1) { fprintf(f, "%s_scale(v%d, ", fn, A); pr_num(f, in->f); fprintf(f, ", "); pr_num(f, in->g); }
        else fprintf(f, "%s(v%d, %lld, %lld", fn, A, (long long)in->i[0], (long long)in->i[1]);
        fprintf(f, "%s%s)", (in->mode & 3) >= 2 ? ", " : "", (in->mode & 3) >= 2 ? ac : "");
        break;
    }
    case OP_GRID_SAMPLE:
        fprintf(f, "tt_grid_sample(v%d, tt_permute(tt_narrow(v%d, 1, 0, 2), 4, "
                   "(const int64_t[]){0, 2, 3, 1}), \"%s\", \"%s\", %s)", A, B,
                dt_grid_modes[in->mode & 3], dt_grid_pads[(in->mode >> 2) & 3],
                in->mode & 16 ? "true" : "false");
        break;
    case OP_BATCH_NORM: case OP_GROUP_NORM: {
        long long ch = (long long)in->g;
        char w[96] = "NULL", bi[96] = "NULL";
        if (in->mode & 2) snprintf(w, sizeof w, "pv(v%d, 0, 1, (const int64_t[]){%lld})", D, ch);
        if (in->mode & 4) snprintf(bi, sizeof bi, "pv(v%d, %lld, 1, (const int64_t[]){%lld})", D, ch, ch);
        if (in->op == OP_GROUP_NORM) {
            fprintf(f, "tt_group_norm(v%d, %lld, %s, %s, 1e-5)", A, (long long)in->i[0], w, bi);
            break;
        }
        fprintf(f, "tt_batch_norm(v%d, %s, %s, ", A, w, bi);
        if (B >= 0) fprintf(f, "v%d, v%d, ", B, Cc); else fprintf(f, "NULL, NULL, ");
        fprintf(f, "%s, ", in->mode & 1 ? "true" : "false"); pr_num(f, in->f); fprintf(f, ", 1e-5)");
        break;
    }
    case OP_NATIVE_LN: {
        int k = (int)in->i[0];
        int64_t n = in->i[1] * (k > 1 ? in->i[2] : 1);
        fprintf(f, "nln(v%d, %d, ", A, k); pr_ints(f, k, in->i + 1);
        if (in->mode & 4) { fprintf(f, ", pv(v%d, 0, %d, ", D, k); pr_ints(f, k, in->i + 1); fprintf(f, ")"); }
        else fprintf(f, ", NULL");
        if (in->mode & 8) { fprintf(f, ", pv(v%d, %lld, %d, ", D, (long long)n, k); pr_ints(f, k, in->i + 1); fprintf(f, ")"); }
        else fprintf(f, ", NULL");
        fprintf(f, ", %d)", in->mode & 3);
        break;
    }
    case OP_DROPOUT:
        fprintf(f, "tt_dropout(v%d, ", A); pr_num(f, in->f); fprintf(f, ", %s)", in->mode != 2 ? "true" : "false");
        break;
    case OP_ACT:
        fprintf(f, "%s(v%d", dt_act_fn[in->mode], A);
        if (in->mode == ACT_LEAKY || in->mode == ACT_ELU) { fprintf(f, ", "); pr_num(f, in->f); }
        if (in->mode == ACT_HARDTANH || in->mode == ACT_SOFTPLUS) {
            fprintf(f, ", "); pr_num(f, in->f); fprintf(f, ", "); pr_num(f, in->g);
        }
        fprintf(f, ")");
        break;
    case OP_MSE: fprintf(f, "tt_mse_loss(v%d, v%d, \"%s\")", A, B, dt_reductions[in->mode & 3]); break;
    case OP_SMOOTH_L1:
        fprintf(f, "tt_smooth_l1_loss(v%d, v%d, \"%s\", ", A, B, dt_reductions[in->mode & 3]);
        pr_num(f, in->f); fprintf(f, ")");
        break;
    case OP_BCE_LOGITS:
        fprintf(f, "tt_binary_cross_entropy_with_logits(v%d, v%d, ", A, B);
        if (Cc >= 0) fprintf(f, "v%d, ", Cc); else fprintf(f, "NULL, ");
        if (D >= 0) fprintf(f, "v%d, ", D); else fprintf(f, "NULL, ");
        fprintf(f, "\"%s\")", dt_reductions[in->mode & 3]);
        break;
    case OP_NLL:
        fprintf(f, "tt_nll_loss(v%d, v%d, &(tt_nll_loss_opts){.reduction = \"%s\", .weight = ", A, B,
                dt_reductions[in->mode & 3]);
        if (in->mode & 4) fprintf(f, "pv(v%d, 0, 1, (const int64_t[]){%lld})", D, (long long)in->g);
        else fprintf(f, "NULL");
        fprintf(f, ", .ignore_index = %lld, .ignore = %s})", (long long)in->i[0], in->mode & 8 ? "true" : "false");
        break;
    case OP_SGD: {
        tt_sgd_opts o;
        dt_sgd_opts(in, &o);
        fprintf(f, "tt_sgd_(v%d, v%d, ", A, B);
        if (Cc >= 0) fprintf(f, "v%d, ", Cc); else fprintf(f, "NULL, ");
        fprintf(f, "tt_scalar(%lld, TT_I64), &(tt_sgd_opts){.lr = ", (long long)in->i[0]); pr_num(f, o.lr);
        fprintf(f, ", .momentum = "); pr_num(f, o.momentum);
        fprintf(f, ", .dampening = "); pr_num(f, o.dampening);
        fprintf(f, ", .weight_decay = "); pr_num(f, o.weight_decay);
        fprintf(f, ", .nesterov = %s, .maximize = %s})", o.nesterov ? "true" : "false", o.maximize ? "true" : "false");
        break;
    }
    default:
        if (!dt_print_index(f, in) && !dt_print_adv(f, in)) fprintf(f, "NULL");
        break;
    }
#undef A
#undef B
#undef Cc
#undef D
    fprintf(f, ");\n");
    if (!ip) /* the first error is the one to see: stop there */
        fprintf(f, "    if (!v%d) goto fail;\n", s);
    if (ip) fprintf(f, "    tt_tensor *v%d = v%d;\n", s, in->a);
    fprintf(f, "    (void)v%d;\n", s);
}

static const char *lay_name[] = {"contiguous", "transposed", "strided", "offset", "expanded"};

void dt_print_summary(FILE *f, const dt_program *p)
{
    fprintf(f, "in:");
    for (int i = 0; i < p->nin; i++) {
        const dt_input *x = &p->in[i];
        fprintf(f, "%s %s[", i ? "," : "", tt_dtype_name(x->dt));
        for (int k = 0; k < x->nd; k++) {
            if (x->s[k] == DT_B) fprintf(f, "%sB", k ? "," : "");
            else fprintf(f, "%s%lld", k ? "," : "", (long long)x->s[k]);
        }
        fprintf(f, "]%s%s%s", x->lay ? " " : "", x->lay ? lay_name[x->lay] : "", x->rg ? " rg" : "");
    }
    fprintf(f, "; ops:");
    for (int k = 0; k < p->n; k++) {
        const dt_instr *in = &p->ins[k];
        fprintf(f, " %s", dt_op_names[in->op]);
        if (in->op == OP_UNARY) fprintf(f, "(%s)", dt_unary_fn[in->mode] + (in->mode == U_SIGN ? 0 : 3));
        if (in->op == OP_CMP) fprintf(f, "(%s)", dt_cmp_fn[in->mode] + 3);
        if (in->op == OP_ACT) fprintf(f, "(%s)", dt_act_fn[in->mode] + 3);
    }
    fprintf(f, "; out: %d%s\n", p->nout, p->grad == 1 ? "; tt_grad + sgd" : p->grad == 2 ? "; tt_backward + sgd" : "");
}

static const char *repro_prelude =
    "#include <tensortrace.h>\n\n"
    "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
    "#define UNUSED __attribute__((unused))\n"
    "/* Fails the program (the op's error is in tt_errmsg()). */\n"
    "#define CHECK(x) must(x, #x)\n"
    "#define CHECK_OK(x) do { if ((x) != TT_OK) { fail_at(#x); goto fail; } } while (0)\n"
    "UNUSED static int failed;\n"
    "UNUSED static void fail_at(const char *what) { if (!failed) fprintf(stderr, \"error: %s: %s\\n\", what, tt_errmsg()); failed = 1; }\n"
    "UNUSED static tt_tensor *must(tt_tensor *t, const char *what) { if (!t) fail_at(what); return t; }\n"
    "UNUSED static tt_status call_inplace(tt_tensor *r) { if (!r) return tt_errcode(); tt_release(r); return TT_OK; }\n"
    "UNUSED static int64_t sizes_buf[8];\n"
    "UNUSED static const int64_t *sizes_of(const tt_tensor *t) { for (int k = 0; k < tt_ndim(t); k++) sizes_buf[k] = tt_dim_size(t, k); return sizes_buf; }\n"
    "UNUSED static tt_tensor *explicit_break(void) { tt_graph_break(\"difftest: explicit break\"); tt_clear_error(); return tt_scalar(1.0, TT_F32); }\n"
    "/* n elements of the parameter vector d from off, viewed as sizes s (a weight). */\n"
    "UNUSED static tt_tensor *pv(tt_tensor *d, int64_t off, int nd, const int64_t *s) { int64_t n = 1; for (int k = 0; k < nd; k++) n *= s[k]; tt_tensor *v = tt_narrow(d, 0, off, n); return v ? tt_reshape(v, nd, s) : NULL; }\n"
    "/* One of tt_native_layer_norm's three results (all three in the scope). */\n"
    "UNUSED static tt_tensor *nln(tt_tensor *x, int k, const int64_t *ns, tt_tensor *w, tt_tensor *b, int which) { tt_tensor *m = NULL, *r = NULL, *y = tt_native_layer_norm(x, k, ns, w, b, 1e-5, &m, &r); return !y ? NULL : which == 0 ? y : which == 1 ? m : r; }\n"
    "/* An i64 index tensor of the values v; one of a (values, indices) pair (both in the scope). */\n"
    "UNUSED static tt_tensor *ixt(int nd, const int64_t *s, const int64_t *v) { return tt_from_data(nd, s, TT_I64, v); }\n"
    "UNUSED static tt_tensor *ix_out;\n"
    "UNUSED static tt_tensor *mskt(int nd, const int64_t *s, const int64_t *v) { return tt_to_dtype(ixt(nd, s, v), TT_BOOL); }\n"
    "UNUSED static tt_tensor *fill_then(tt_tensor *t, double v) { return t && tt_fill_(t, v) == TT_OK ? t : NULL; }\n"
    "UNUSED static int64_t rsizes_buf[8];\n"
    "UNUSED static const int64_t *reversed_sizes_of(const tt_tensor *t) { int n = tt_ndim(t); for (int k = 0; k < n; k++) rsizes_buf[k] = tt_dim_size(t, n - 1 - k); return rsizes_buf; }\n"
    "/* empty_strided with a's sizes, contiguous strides (the last two dims' swapped when tr). */\n"
    "UNUSED static tt_tensor *empty_strided_of(const tt_tensor *a, int tr, tt_dtype dt) { int n = tt_ndim(a); int64_t s[8], st[8], x = 1; for (int k = n - 1; k >= 0; k--) { s[k] = tt_dim_size(a, k); st[k] = x; x = tt_sym_mul(x, s[k]); } if (tr && n >= 2) { st[n - 1] = s[n - 2]; st[n - 2] = 1; } return tt_empty_strided(n, s, st, dt); }\n"
    "UNUSED static tt_tensor *ok_then(tt_status st, tt_tensor *t) { return st == TT_OK ? t : NULL; }\n"
    "UNUSED static tt_tensor *pick2(tt_tensor *v, int which) { return !v ? NULL : which ? ix_out : v; }\n"
    "UNUSED static tt_tensor *item_scale(tt_tensor *a, tt_tensor *b) { double v = 0; tt_item(tt_sum_all(b), &v); tt_clear_error(); return tt_mul_scalar(a, v > 0 ? 1.0 : 2.0); }\n\n";

static const char *repro_helpers =
    "/* An input: values (doubles) stored as `base` sizes in dtype dt, then viewed\n"
    " * with layout lay (0 contiguous, 1 transposed, 2 strided, 3 offset, 4 expanded). */\n"
    "static tt_tensor *mk(int nd, const int64_t *base, const int64_t *s, tt_dtype dt, int lay, const double *v, int rg)\n"
    "{\n"
    "    tt_tensor *d = tt_from_data(nd, base, TT_F64, v), *b = tt_to_dtype(d, dt), *t;\n"
    "    tt_release(d);\n"
    "    switch (lay) {\n"
    "    case 1: t = tt_transpose(b, -1, -2); break;\n"
    "    case 2: t = tt_slice(b, -1, 0, base[nd - 1], 2); break;\n"
    "    case 3: t = tt_narrow(b, 0, 1, s[0]); break;\n"
    "    case 4: t = tt_expand(b, nd, s); break;\n"
    "    default: t = tt_retain(b); break;\n"
    "    }\n"
    "    tt_release(b);\n"
    "    if (rg) tt_set_requires_grad(t, true);\n"
    "    return t;\n"
    "}\n\n"
    "/* Largest difference of two tensors (NaN equals NaN); INFINITY when their\n"
    " * dtypes or shapes differ. */\n"
    "static double maxdiff(const tt_tensor *a, const tt_tensor *b)\n"
    "{\n"
    "    if (!a || !b || tt_dtype_of(a) != tt_dtype_of(b) || tt_ndim(a) != tt_ndim(b)) return INFINITY;\n"
    "    for (int k = 0; k < tt_ndim(a); k++) if (tt_dim_size(a, k) != tt_dim_size(b, k)) return INFINITY;\n"
    "    tt_tensor *x = tt_to_dtype(a, TT_F64), *y = tt_to_dtype(b, TT_F64);\n"
    "    int64_t n = tt_numel(a);\n"
    "    double *p = malloc(sizeof(double) * (size_t)(n + 1)), *q = malloc(sizeof(double) * (size_t)(n + 1)), m = 0;\n"
    "    tt_to_buffer(x, p, sizeof(double) * (size_t)n);\n"
    "    tt_to_buffer(y, q, sizeof(double) * (size_t)n);\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "        if (isnan(p[i]) && isnan(q[i])) continue;\n"
    "        if (p[i] == q[i]) continue;\n"
    "        double d = fabs(p[i] - q[i]);\n"
    "        if (isnan(d)) d = INFINITY;\n"
    "        if (d > m) m = d;\n"
    "    }\n"
    "    free(p); free(q); tt_release(x); tt_release(y);\n"
    "    return m;\n"
    "}\n\n";

void dt_print_c(FILE *f, const dt_program *p, int64_t b, const char *comment, int mode,
                bool fullgraph, unsigned passes_off, int check_kind)
{
    int nout = dt_num_outputs(p);
    fprintf(f, "/* %s */\n", comment);
    fputs(repro_prelude, f);
    fprintf(f, "static tt_status fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)\n{\n");
    fprintf(f, "    (void)nin; (void)nout; (void)ud;\n    failed = 0;\n    tt_scope_begin();\n");
    for (int i = 0; i < p->nin; i++) fprintf(f, "    tt_tensor *v%d = in[%d];\n    (void)v%d;\n", i, i, i);
    for (int k = 0; k < p->n; k++) print_instr(f, p, k);
    for (int j = 0; j < p->nout; j++) fprintf(f, "    out[%d] = tt_retain(v%d);\n", j, p->out[j]);
    if (p->grad) {
        fprintf(f, "    tt_tensor *loss = NULL;\n");
        for (int j = 0; j < p->nout; j++)
            fprintf(f, "    if (tt_dtype_is_float(tt_dtype_of(out[%d])) && tt_requires_grad(out[%d])) { tt_tensor *s = tt_sum_all(out[%d]); loss = loss ? tt_add(loss, s) : s; }\n", j, j, j);
        int nx = 0;
        fprintf(f, "    tt_tensor *X[] = {");
        for (int i = 0; i < p->nin; i++) if (p->in[i].rg) fprintf(f, "%sv%d", nx++ ? ", " : "", i);
        fprintf(f, "}, *G[%d] = {0};\n", nx);
        if (p->grad == 1) {
            fprintf(f, "    CHECK_OK(tt_grad(1, &loss, NULL, %d, X, G));\n", nx);
            fprintf(f, "    for (int i = 0; i < %d; i++) tt_scope_adopt(G[i]);\n", nx);
        } else {
            fprintf(f, "    CHECK_OK(tt_backward(loss, NULL));\n");
            fprintf(f, "    for (int i = 0; i < %d; i++) { G[i] = tt_get_grad(X[i]); if (G[i]) tt_scope_adopt(G[i]); else G[i] = tt_zeros(tt_ndim(X[i]), tt_sizes(X[i]), tt_dtype_of(X[i])); }\n", nx);
        }
        fprintf(f, "    for (int i = 0; i < %d; i++) out[%d + i] = tt_retain(G[i]);\n", nx, p->nout);
        fprintf(f, "    tt_no_grad_begin();\n");
        for (int i = 0, k = 0; i < p->nin; i++) {
            if (!p->in[i].rg) continue;
            if (p->in[i].lay != LAY_EXPANDED) fprintf(f, "    tt_add_scaled_(v%d, G[%d], -0.5);\n", i, k);
            k++;
        }
        fprintf(f, "    tt_no_grad_end();\n");
    }
    fprintf(f, "    if (failed) goto fail;\n    tt_scope_end();\n    return TT_OK;\nfail:\n    tt_scope_end();\n");
    fprintf(f, "    for (int j = 0; j < %d; j++) out[j] = tt_release(out[j]);\n    return tt_errcode();\n}\n\n", nout);
    fputs(repro_helpers, f);
    fprintf(f, "static void inputs(tt_tensor **in)\n{\n");
    for (int i = 0; i < p->nin; i++) {
        const dt_input *x = &p->in[i];
        int64_t bs[DT_MAX_ND], s[DT_MAX_ND], n = 1;
        int nd = dt_base_sizes_of(x, b, bs, s);
        for (int k = 0; k < nd; k++) n *= bs[k];
        double v[4096];
        if (n > 4096) n = 4096;
        dt_input_values(p, i, 1, n, v);
        fprintf(f, "    static const double d%d[] = {", i);
        for (int64_t k = 0; k < n; k++) fprintf(f, "%s%g", k ? ", " : "", v[k]);
        fprintf(f, "%s};\n", n ? "" : "0");
        fprintf(f, "    in[%d] = mk(%d, ", i, nd); pr_ints(f, nd, bs); fprintf(f, ", "); pr_ints(f, nd, s);
        fprintf(f, ", %s, %d, d%d, %d);\n", dt_c(x->dt), (int)x->lay, i, x->rg);
    }
    fprintf(f, "}\n\n");
    fprintf(f, "int main(void)\n{\n    tt_tensor *ein[%d], *cin[%d], *eout[%d] = {0}, *cout[%d] = {0};\n", p->nin, p->nin, nout, nout);
    fprintf(f, "    int bad = 0;\n    inputs(ein);\n    inputs(cin);\n");
    fprintf(f, "    tt_manual_seed(1000); /* dropout draws the same mask on both sides */\n");
    fprintf(f, "    if (fn(ein, %d, eout, %d, NULL) != TT_OK) { printf(\"eager failed: %%s\\n\", tt_errmsg()); return 2; }\n", p->nin, nout);
    static const char *mode_c[] = {"TT_TRACE_FAKE", "TT_TRACE_REAL", "TT_TRACE_SYMBOLIC"};
    fprintf(f, "    tt_trace_opts o = {.mode = %s, .fullgraph = %s, .nout = %d, .passes_off = 0x%x};\n",
            mode_c[mode], fullgraph ? "true" : "false", nout, passes_off);
    if (check_kind == 0) {
        fprintf(f, "    tt_compiled *c = tt_compile(fn, %d, %d, &o);\n", p->nin, nout);
        fprintf(f, "    tt_manual_seed(1000);\n");
        fprintf(f, "    tt_status st = c ? tt_compiled_call(c, cin, cout) : tt_errcode();\n");
    } else {
        fprintf(f, "    tt_graph *g = tt_trace(fn, %d, cin, &o);\n", p->nin);
        fprintf(f, "    for (int i = 0; i < %d; i++) { tt_release(cin[i]); } inputs(cin);\n", p->nin);
        /* the trace's outputs' metadata against eager's (sizes by their hints) */
        fprintf(f, "    for (int j = 0, on = g ? tt_graph_num_nodes(g) - 1 : -1; on >= 0 && j < %d; j++) {\n", nout);
        fprintf(f, "        int nd = tt_graph_node_arg_node(g, on, j);\n");
        fprintf(f, "        const tt_tensor *v = nd >= 0 ? tt_graph_node_value(g, nd, 0) : NULL;\n");
        fprintf(f, "        char a[128], b[128], sa[128], sb[128];\n");
        fprintf(f, "        int same = v && tt_dtype_of(v) == tt_dtype_of(eout[j]) && tt_ndim(v) == tt_ndim(eout[j]);\n");
        fprintf(f, "        for (int k = 0; same && k < tt_ndim(v); k++)\n");
        fprintf(f, "            same = tt_sym_hint(tt_dim_size(v, k)) == tt_dim_size(eout[j], k) &&\n");
        fprintf(f, "                   (tt_dim_size(eout[j], k) <= 1 || tt_sym_hint(tt_dim_stride(v, k)) == tt_dim_stride(eout[j], k));\n");
        fprintf(f, "        if (v && !same) { printf(\"output %%d: traced %%s strides %%s, eager %%s strides %%s\\n\", j, tt_describe(v, a, sizeof a), tt_strides_str(v, sa, sizeof sa), tt_describe(eout[j], b, sizeof b), tt_strides_str(eout[j], sb, sizeof sb)); bad = 1; }\n");
        fprintf(f, "    }\n");
        if (check_kind == 2) fprintf(f, "    if (g && tt_graph_functionalize(g) != TT_OK) { printf(\"functionalize failed: %%s\\n\", tt_errmsg()); return 1; }\n");
        fprintf(f, "    tt_manual_seed(1000);\n");
        fprintf(f, "    tt_status st = g ? tt_graph_run(g, %d, cin, %d, cout) : tt_errcode();\n", p->nin, nout);
    }
    fprintf(f, "    if (st != TT_OK) { printf(\"compiled/traced run failed: %%s: %%s\\n\", tt_status_name(st), tt_errmsg()); return 1; }\n");
    fprintf(f, "    for (int j = 0; j < %d; j++) {\n        double d = maxdiff(eout[j], cout[j]);\n", nout);
    fprintf(f, "        if (d > 1e-3) { printf(\"output %%d differs by %%g\\neager:\\n\", j, d); tt_print(eout[j]); printf(\"compiled:\\n\"); tt_print(cout[j]); bad = 1; }\n    }\n");
    fprintf(f, "    for (int i = 0; i < %d; i++) {\n        double d = maxdiff(ein[i], cin[i]);\n", p->nin);
    fprintf(f, "        if (d > 1e-3) { printf(\"input %%d's final value differs by %%g\\neager:\\n\", i, d); tt_print(ein[i]); printf(\"compiled:\\n\"); tt_print(cin[i]); bad = 1; }\n    }\n");
    fprintf(f, "    for (int j = 0; j < %d; j++) { tt_release(eout[j]); tt_release(cout[j]); }\n", nout);
    fprintf(f, "    for (int i = 0; i < %d; i++) { tt_release(ein[i]); tt_release(cin[i]); }\n", p->nin);
    fprintf(f, "    %s;\n", check_kind == 0 ? "tt_compiled_free(c)" : "tt_graph_free(g)");
    fprintf(f, "    if (tt_live_tensors() != 0) { printf(\"LEAK: %%lld tensors alive at the end\\n\", (long long)tt_live_tensors()); bad = 1; }\n");
    fprintf(f, "    printf(bad ? \"MISMATCH\\n\" : \"ok\\n\");\n    return bad;\n}\n");
}
