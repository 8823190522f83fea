#!/usr/bin/python3
"""Records PyTorch's answers for a table of calls of tensortrace's built-in
ops into tests/data/torch_ref.txt, which tests/test_torch_ref.c replays: a
differential test that needs no PyTorch when it runs.

    tools/gen_torch_ref.py [OUT]     (needs python3-torch, PyTorch 1.13)

Re-running it rewrites the file from the table below; the output depends
only on the table and PyTorch's version (no random values are recorded).

Every case names a tt op and its arguments in the op's schema order. A
tensor argument is rebuilt exactly on both sides from a closed form: a
buffer of n elements whose element k is ((k*A + B) % M + C) / D (bool:
non-zero), seen through as_strided(sizes, strides, offset), optionally a
leaf that requires grad. PyTorch's call, written per op below, must be
what the tt op means; where the two differ (tt passes a reduction as a
string, has ops of its own) the mapping says so.

The file, one record per line, tokens separated by blanks:

    case NAME                       a call starts
    op tt::NAME.OVERLOAD
    arg T DTYPE A B M C D N NDIM SIZES.. STRIDES.. OFFSET RG
    arg TL N                        a tensor list: the next N 'arg T' lines
                                    ('arg N' for a None entry of a Tensor?[])
    arg I V | F V | B 0/1 | S STR | N | L N V.. | BL N 0/1.. | D DTYPE
    arg FL N V..                    a float list (any element a float)
    meta                            compare dtype, sizes, strides only
    tol T                           the case's tolerance (else the dtype's)
    out DTYPE NDIM SIZES.. STRIDES.. VALUES..   (values in row-major order)
    out none                        one line per result, in order
    list N                          a Tensor[] result (split, chunk): its N
                                    elements are the next N out lines
    after I VALUES..                argument I's values after the call (a
                                    mutated argument), row-major
    err MESSAGE                     PyTorch refused the call
    grad I none | grad I VALUES..   d(sum(out * g))/d(argument I), out the
                                    first result, g from the closed form
                                    (5, 2, 9, -4, 8)
    note TEXT                       why PyTorch 1.13 is not followed here
    end
"""
import math
import sys
import warnings

import torch
import torch.nn.functional as F

warnings.simplefilter("ignore")  # where's uint8 condition warns, as it should

DT = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64,
      "i32": torch.int32, "u8": torch.uint8, "bool": torch.bool}
DTN = {v: k for k, v in DT.items()}
GRAD_FORM = (5, 2, 9, -4, 8)


def contig(sizes):
    st, acc = [], 1
    for s in reversed(sizes):
        st.append(acc)
        acc *= max(s, 1)
    return list(reversed(st))


def default_form(dt):
    if dt == "u8":
        return (7, 3, 11, 0, 1)
    if dt == "bool":
        return (1, 0, 3, -1, 1)
    if dt in ("i64", "i32"):
        return (7, 3, 11, -5, 1)
    return (7, 3, 11, -5, 4)


POS = (7, 3, 11, 1, 4)  # positive values, for log, sqrt, pow bases


class T:
    """A tensor argument: dtype, the view's sizes, a layout, a formula."""

    def __init__(self, dt, sizes, layout="c", form=None, rg=False, share=None):
        self.dt, self.sizes, self.rg, self.share = dt, list(sizes), rg, share
        self.form = form or default_form(dt)
        n = len(sizes)
        lay = layout if isinstance(layout, tuple) else (layout,)
        if lay[0] == "c":
            base, strides, off = list(sizes), contig(sizes), 0
        elif lay[0] == "o":  # contiguous from an offset
            base, strides, off = list(sizes), contig(sizes), 3
        elif lay[0] == "t":  # the last two dims of a contiguous base swapped
            base = list(sizes)
            base[-1], base[-2] = base[-2], base[-1]
            strides = contig(base)
            strides[-1], strides[-2] = strides[-2], strides[-1]
            off = 0
        elif lay[0] == "p":  # a permutation of a contiguous base
            perm = lay[1]
            base = [0] * n
            for i, p in enumerate(perm):
                base[p] = sizes[i]
            bst = contig(base)
            strides, off = [bst[p] for p in perm], 0
        elif lay[0] == "s":  # every other element of the last dim, from 1
            base = list(sizes)
            base[-1] = 2 * sizes[-1]
            strides = contig(base)
            strides[-1] = 2
            off = 1
        elif lay[0] == "v":  # any view: ("v", strides, offset) over a big enough buffer
            strides, off = list(lay[1]), lay[2]
            base = [1 + sum((s - 1) * st for s, st in zip(sizes, strides))]
            if len(lay) > 3:  # a bigger buffer, for views of it in later arguments
                base = [lay[3] - off]
        elif lay[0] == "e":  # dim lay[1] expanded from size 1
            base = list(sizes)
            base[lay[1]] = 1
            strides = contig(base)
            strides[lay[1]] = 0
            off = 0
        else:
            raise ValueError(layout)
        self.strides, self.off = strides, off
        self.nbuf = off + max([1] + [math.prod(max(b, 1) for b in base)])

    def values(self):
        a, b, m, c, d = self.form
        return [((k * a + b) % m + c) / d for k in range(self.nbuf)]

    def torch(self, bufs=None):
        if self.share is not None:  # a view of an earlier argument's buffer
            buf = bufs[self.share]
        else:
            buf = torch.tensor(self.values(), dtype=torch.float64)
            buf = buf != 0 if self.dt == "bool" else buf.to(DT[self.dt])
        if bufs is not None:
            bufs.append(buf)
        x = torch.as_strided(buf, self.sizes, self.strides, self.off)
        if self.rg:
            x = x.detach().requires_grad_(True)
        return x

    def line(self):
        line = "arg T %s %s %d %d %s %d %d" % (
            self.dt, " ".join(str(v) for v in self.form), self.nbuf, len(self.sizes),
            " ".join(str(v) for v in self.sizes + self.strides) or "", self.off, int(self.rg))
        return line + (" %d" % self.share if self.share is not None else "")


class ListResult(list):
    """What an OPS entry returns for a Tensor[] result (torch.split's
    tuple), so the record says the results are one list."""


class TL:
    def __init__(self, *ts):
        self.ts = ts


def arg_line(a):
    if isinstance(a, T):
        return [a.line()]
    if isinstance(a, TL):
        # a None entry (Tensor?[]) is an 'arg N' line inside the list
        return ["arg TL %d" % len(a.ts)] + [t.line() if t is not None else "arg N"
                                             for t in a.ts]
    if a is None:
        return ["arg N"]
    if isinstance(a, bool):
        return ["arg B %d" % a]
    if isinstance(a, int):
        return ["arg I %d" % a]
    if isinstance(a, float):
        return ["arg F %r" % a]
    if isinstance(a, list) and a and all(isinstance(v, bool) for v in a):
        return ["arg BL %d %s" % (len(a), " ".join(str(int(v)) for v in a))]
    if isinstance(a, list) and any(isinstance(v, float) for v in a):
        return ["arg FL %d %s" % (len(a), " ".join(repr(float(v)) for v in a))]
    if isinstance(a, list):
        return ["arg L %d %s" % (len(a), " ".join(str(v) for v in a))]
    if isinstance(a, torch.dtype):
        return ["arg D %s" % DTN[a]]
    if isinstance(a, str):
        return ["arg S %s" % a]
    raise TypeError(a)


def fmt(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def grad_out(t):
    a, b, m, c, d = GRAD_FORM
    n = t.numel()
    g = torch.tensor([((k * a + b) % m + c) / d for k in range(n)], dtype=torch.float64)
    return g.to(t.dtype).reshape(t.shape)


# ------------------------------------------------------------ the ops
# How PyTorch computes each tt op, from the tt op's positional arguments.

def ce_backward(g, x, t, red):
    x = x.detach().requires_grad_(True)
    F.cross_entropy(x, t, reduction=red).backward(g)
    return x.grad


def gelu_bw_ref(g, s, approximate="none"):
    x = s.detach().requires_grad_(True)
    d, = torch.autograd.grad(F.gelu(x, approximate=approximate).sum(), x)
    return g * d


def squeeze_dims(x, dims):
    # PyTorch 2.0's squeeze.dims (1.13 has one dim at a time): the dims
    # that have size 1 among those named, dropped at once.
    nd = max(x.dim(), 1)
    for d in dims:
        if not -nd <= d < nd:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], "
                             "but got %d)" % (-nd, nd - 1, d))
    ds = sorted({d % nd for d in dims}, reverse=True)
    for d in ds:
        if x.dim() > 0:
            x = x.squeeze(d)
    return x


MF = {"preserve_format": torch.preserve_format, "contiguous_format": torch.contiguous_format,
      "channels_last": torch.channels_last, "channels_last_3d": torch.channels_last_3d}

OPS = {
    "tt::view": lambda s, size: s.view(size),
    "tt::reshape": lambda s, size: s.reshape(size),
    "tt::permute": lambda s, d: s.permute(d),
    "tt::transpose.int": lambda s, a, b: s.transpose(a, b),
    "tt::t": lambda s: s.t(),
    "tt::narrow": lambda s, d, a, n: s.narrow(d, a, n),
    "tt::slice.Tensor": lambda s, d=0, a=None, e=None, st=1: torch.ops.aten.slice(s, d, a, e, st),
    "tt::select.int": lambda s, d, i: s.select(d, i),
    "tt::expand": lambda s, size, implicit=False: s.expand(size),
    "tt::squeeze.dim": lambda s, d: s.squeeze(d),
    "tt::squeeze": lambda s: s.squeeze(),
    "tt::squeeze.dims": squeeze_dims,
    "tt::unsqueeze": lambda s, d: s.unsqueeze(d),
    "tt::flatten.using_ints": lambda s, a=0, b=-1: s.flatten(a, b),
    "tt::as_strided": lambda s, size, st, off=None: torch.as_strided(s, size, st, off),
    "tt::detach": lambda s: s.detach(),
    "tt::contiguous": lambda s, mf="contiguous_format": s.contiguous(memory_format=MF[mf]),
    "tt::clone": lambda s, mf="preserve_format": s.clone(memory_format=MF[mf]),
    "tt::_to_copy": lambda s, dt: torch.ops.aten._to_copy(s, dtype=dt),
    "tt::copy_": lambda s, src: s.copy_(src),
    "tt::fill_.Scalar": lambda s, v: s.fill_(v),
    "tt::slice_backward": lambda g, sz, d, a, e, st: torch.ops.aten.slice_backward(g, sz, d, a, e, st),
    "tt::select_backward": lambda g, sz, d, i: torch.ops.aten.select_backward(g, sz, d, i),
    "tt::add.Tensor": lambda s, o, alpha=1: torch.add(s, o, alpha=alpha),
    "tt::add.Scalar": lambda s, o, alpha=1: torch.add(s, o, alpha=alpha),
    "tt::add_.Tensor": lambda s, o, alpha=1: s.add_(o, alpha=alpha),
    "tt::add_.Scalar": lambda s, o, alpha=1: s.add_(o, alpha=alpha),
    "tt::sub.Tensor": lambda s, o, alpha=1: torch.sub(s, o, alpha=alpha),
    "tt::sub.Scalar": lambda s, o, alpha=1: torch.sub(s, o, alpha=alpha),
    "tt::sub_.Tensor": lambda s, o, alpha=1: s.sub_(o, alpha=alpha),
    "tt::sub_.Scalar": lambda s, o, alpha=1: s.sub_(o, alpha=alpha),
    "tt::mul.Tensor": lambda s, o: torch.mul(s, o),
    "tt::mul.Scalar": lambda s, o: torch.mul(s, o),
    "tt::mul_.Tensor": lambda s, o: s.mul_(o),
    "tt::mul_.Scalar": lambda s, o: s.mul_(o),
    "tt::div.Tensor": lambda s, o: torch.div(s, o),
    "tt::div.Scalar": lambda s, o: torch.div(s, o),
    "tt::div_.Tensor": lambda s, o: s.div_(o),
    "tt::div_.Scalar": lambda s, o: s.div_(o),
    "tt::div.Tensor_mode": lambda s, o, m: torch.div(s, o, rounding_mode=m),
    "tt::fmod.Tensor": torch.fmod, "tt::fmod.Scalar": torch.fmod,
    "tt::remainder.Tensor": torch.remainder, "tt::remainder.Scalar": torch.remainder,
    "tt::atan2": torch.atan2,
    "tt::atan2.out": lambda s, o, out: torch.atan2(s, o, out=out),
    "tt::addmm": lambda s, a, b, beta=1, alpha=1: torch.addmm(s, a, b, beta=beta, alpha=alpha),
    "tt::alias": torch.ops.aten.alias, "tt::copy": torch.ops.aten.copy,
    "tt::fill.Scalar": torch.ops.aten.fill.Scalar,
    "tt::adaptive_avg_pool1d": torch.ops.aten.adaptive_avg_pool1d,
    "tt::grid_sampler_2d": torch.ops.aten.grid_sampler_2d,
    "tt::grid_sampler_2d_backward": torch.ops.aten.grid_sampler_2d_backward,
    "tt::_softmax": torch.ops.aten._softmax, "tt::_log_softmax": torch.ops.aten._log_softmax,
    "tt::var.dim": lambda s, d, u=True, k=False: torch.ops.aten.var.dim(s, d, u, k),
    "tt::div.Scalar_mode": lambda s, o, m: torch.div(s, o, rounding_mode=m),
    "tt::div_.Tensor_mode": lambda s, o, m: s.div_(o, rounding_mode=m),
    "tt::div_.Scalar_mode": lambda s, o, m: s.div_(o, rounding_mode=m),
    "tt::pow.Tensor_Tensor": lambda s, e: torch.pow(s, e),
    "tt::pow.Tensor_Scalar": lambda s, e: torch.pow(s, e),
    "tt::pow.Scalar": lambda s, e: torch.pow(s, e),
    "tt::neg": torch.neg, "tt::exp": torch.exp, "tt::log": torch.log, "tt::sqrt": torch.sqrt,
    "tt::rsqrt": torch.rsqrt, "tt::sin": torch.sin, "tt::cos": torch.cos, "tt::tanh": torch.tanh,
    "tt::sigmoid": torch.sigmoid, "tt::relu": torch.relu, "tt::abs": torch.abs,
    "tt::sign": torch.sign, "tt::relu_": lambda s: s.relu_(),
    "tt::acos": torch.acos,
    "tt::asin": torch.asin,
    "tt::atan": torch.atan,
    "tt::acosh": torch.acosh,
    "tt::asinh": torch.asinh,
    "tt::atanh": torch.atanh,
    "tt::sinh": torch.sinh,
    "tt::cosh": torch.cosh,
    "tt::tan": torch.tan,
    "tt::erf": torch.erf,
    "tt::expm1": torch.expm1,
    "tt::log1p": torch.log1p,
    "tt::log2": torch.log2,
    "tt::log10": torch.log10,
    "tt::reciprocal": torch.reciprocal,
    "tt::floor": torch.floor,
    "tt::ceil": torch.ceil,
    "tt::trunc": torch.trunc,
    "tt::round": torch.round,
    "tt::gelu": lambda s, approximate="none": F.gelu(s, approximate=approximate),
    "tt::gelu_backward": lambda g, s, approximate="none":
        torch.ops.aten.gelu_backward(g, s, approximate=approximate),
    "tt::where.self": torch.where, "tt::where.ScalarSelf": torch.where,
    "tt::where.ScalarOther": torch.where, "tt::where.Scalar": torch.where,
    "tt::clamp": lambda s, lo=None, hi=None: torch.clamp(s, lo, hi),
    "tt::clamp.Tensor": lambda s, lo=None, hi=None: torch.clamp(s, lo, hi),
    "tt::zero_": lambda s: s.zero_(),
    "tt::sum.dim_IntList": lambda s, d, k=False, dt=None: torch.sum(s, d, k, dtype=dt),
    "tt::sum": lambda s, dt=None: torch.sum(s, dtype=dt),
    "tt::mean.dim": lambda s, d, k=False, dt=None: torch.mean(s, d, k, dtype=dt),
    "tt::mean": lambda s, dt=None: torch.mean(s, dtype=dt),
    "tt::amax": lambda s, d=[], k=False: torch.amax(s, d, k),
    "tt::amin": lambda s, d=[], k=False: torch.amin(s, d, k),
    "tt::argmax": lambda s, d=None, k=False: torch.argmax(s, d, k),
    "tt::softmax.int": lambda s, d, dt=None: torch.softmax(s, d, dtype=dt),
    "tt::log_softmax.int": lambda s, d, dt=None: torch.log_softmax(s, d, dtype=dt),
    "tt::mm": torch.mm, "tt::bmm": torch.bmm, "tt::matmul": torch.matmul,
    "tt::linear": lambda x, w, b=None: F.linear(x, w, b),
    "tt::cat": lambda ts, d=0: torch.cat(ts, d),
    "tt::stack": lambda ts, d=0: torch.stack(ts, d),
    # tt passes the reduction as a string, PyTorch's aten op as an enum.
    "tt::cross_entropy": lambda x, t, red="mean", w=None, ii=-100, ls=0.0:
        F.cross_entropy(x, t, weight=w, reduction=red, ignore_index=ii, label_smoothing=ls),
    "tt::cross_entropy_backward": ce_backward,
    "tt::empty": lambda size, dt=None: torch.empty(size, dtype=dt),
    "tt::empty_strided": lambda size, st, dt=None: torch.empty_strided(size, st, dtype=dt),
    "tt::empty.memory_format": lambda size, dt=None, lay=None, dev=None, pin=None, mf=None:
        torch.ops.aten.empty.memory_format(
            size, dtype=dt, pin_memory=pin,
            memory_format=None if mf is None else [torch.contiguous_format,
                                                   torch.preserve_format, torch.channels_last,
                                                   torch.channels_last_3d][mf]),
    "tt::full": lambda size, v, dt=None: torch.full(size, v, dtype=dt),
    "tt::arange.start_step": lambda a, b, st=1, dt=None: torch.arange(a, b, st, dtype=dt),
    "tt::linspace": lambda a, b, n, dt=None: torch.linspace(a, b, n, dtype=dt),
    "tt::rand": lambda size, dt=None: torch.rand(size, dtype=dt),
    "tt::randn": lambda size, dt=None: torch.randn(size, dtype=dt),
    "tt::new_empty": lambda s, size: s.new_empty(size),
    "tt::empty_like": torch.empty_like,
}

for _c in ["eq", "ne", "lt", "le", "gt", "ge"]:
    OPS["tt::%s.Tensor" % _c] = OPS["tt::%s.Scalar" % _c] = getattr(torch, _c)

META_ONLY = {"tt::empty", "tt::empty_strided", "tt::empty.memory_format", "tt::rand", "tt::randn", "tt::new_empty",
             "tt::empty_like"}

# ---------------------------------------------------------- the cases

CASES = []  # (name, op, args, note)


def case(op, *args, name=None, note=None, ref=None, tol=None, after=()):
    """A call of tt op `op`. `ref`, with a `note` saying why, computes the
    answer instead of OPS[op] where PyTorch 1.13 is not followed. `tol`
    replaces the dtype's tolerance (a kernel that sums in another order);
    `after` lists the arguments whose values are compared after the call
    (what a mutating op wrote)."""
    CASES.append((name or op, op, list(args), note, ref, tol, tuple(after)))


F32, F64, I64, I32, U8, BOOL = "f32", "f64", "i64", "i32", "u8", "bool"
ALL = [F32, F64, I64, I32, U8, BOOL]
LAYOUTS = ["c", "t", "s", "o", ("e", 0)]


def build_cases():
    # ---- views and copies
    for lay in ["c", "t", "s"]:
        case("tt::view", T(F32, [2, 6], lay), [3, 4])
        case("tt::view", T(F32, [2, 6], lay), [-1])
        case("tt::reshape", T(F32, [2, 6], lay, rg=True), [4, -1])
        case("tt::permute", T(F64, [2, 3, 4], "c", rg=True), [2, 0, 1])
        case("tt::transpose.int", T(I32, [2, 3, 4], lay), 0, -1)
        case("tt::flatten.using_ints", T(F64, [2, 3, 4], lay, rg=True), 1, 2)
        case("tt::contiguous", T(F32, [3, 4], lay))
        case("tt::clone", T(F64, [3, 4], lay, rg=True))
        for dt in ALL:
            case("tt::_to_copy", T(F32, [3, 4], lay), DT[dt])
    case("tt::view", T(F32, [2, 6], "c"), [5, -1])
    case("tt::view", T(F32, [4, 6], ("p", [1, 0])), [-1])
    case("tt::permute", T(F32, [2, 3], "c"), [0, 0])
    case("tt::t", T(F64, [2, 3], "c", rg=True))
    case("tt::t", T(F64, [3], "c"))
    case("tt::t", T(F64, [2, 3, 4], "c"))
    for a, n in [(1, 2), (-2, 2), (0, 0), (3, 2), (-6, 1)]:
        case("tt::narrow", T(F64, [3, 5], "c", rg=True), 1, a, n)
    for a, e, st in [(None, None, 1), (1, None, 2), (-3, -1, 1), (0, 100, 3), (4, 2, 1)]:
        case("tt::slice.Tensor", T(F64, [3, 5], "t", rg=True), 1, a, e, st)
    case("tt::slice.Tensor", T(F64, [3, 5], "c"), 1, 0, 5, 0)
    for d, i in [(0, 1), (1, -1), (1, 5)]:
        case("tt::select.int", T(F64, [3, 5], "c", rg=True), d, i)
    case("tt::expand", T(F64, [3, 1], "c", rg=True), [2, 3, 4])
    case("tt::expand", T(F64, [3, 2], "c"), [3, 4])
    case("tt::expand", T(F64, [3, 1], "c"), [-1, 4])
    for d in [0, 1, -1, 2]:
        case("tt::squeeze.dim", T(F64, [1, 3, 1], "c", rg=True), d)
    case("tt::squeeze", T(F64, [1, 3, 1], "c", rg=True))
    case("tt::squeeze", T(F64, [], "c"))
    for dims in [[0, 2], [0, 1], [-1], [], [0, -3]]:
        case("tt::squeeze.dims", T(F64, [1, 3, 1], "c", rg=True), dims,
             note="PyTorch 1.13 has no squeeze.dims; recorded from its 2.0 semantics "
                  "(the named dims of size 1 dropped at once) through squeeze.dim")
    case("tt::squeeze.dims", T(F64, [1, 3, 1], "c"), [3],
         note="PyTorch 2.0's squeeze.dims: a dim out of range is an error")
    for d in [0, 2, -1, 3]:
        case("tt::unsqueeze", T(F64, [2, 3], "c", rg=True), d)
    case("tt::as_strided", T(F32, [4, 4], "c"), [2, 2], [1, 4], 1)
    case("tt::as_strided", T(F32, [4, 4], "c"), [3, 3], [4, 1], None)
    case("tt::detach", T(F32, [2, 3], "t"))
    # preserve_format on non-dense layouts: the input's stride order.
    for lay in [("p", [2, 0, 1]), ("p", [1, 2, 0]), ("s",), ("e", 1)]:
        case("tt::clone", T(F32, [2, 3, 4], lay))
        case("tt::_to_copy", T(F32, [2, 3, 4], lay), torch.float64)
    for mf in ["preserve_format", "contiguous_format", "channels_last"]:
        case("tt::clone", T(F32, [2, 3, 2, 2], ("p", [0, 2, 3, 1])), mf)
        case("tt::clone", T(F32, [2, 3, 2, 2], "c", rg=True), mf)
        case("tt::contiguous", T(F32, [2, 3, 2, 2], "t"), mf)
    case("tt::clone", T(F32, [2, 3], "c"), "channels_last")
    case("tt::clone", T(F32, [2, 3, 2, 2, 2], "c"), "channels_last_3d")
    case("tt::contiguous", T(F32, [2, 3, 2, 2, 2], "c"), "channels_last_3d")
    case("tt::contiguous", T(F32, [2, 3, 2, 2], ("p", [0, 2, 3, 1])), "channels_last")
    case("tt::contiguous", T(F32, [2, 3], "c"), "channels_last")
    # copy_: broadcasting, dtype conversion, overlap.
    for dt in ALL:
        case("tt::copy_", T(F32, [2, 3], "c"), T(dt, [3], "c"))
    case("tt::copy_", T(F64, [2, 3], "t"), T(I64, [2, 3], "s"))
    case("tt::copy_", T(F64, [2, 3], "c"), T(F64, [4], "c"))
    case("tt::copy_", T(F64, [2, 3], ("e", 0)), T(F64, [2, 3], "c"))
    case("tt::fill_.Scalar", T(I32, [2, 3], "t"), 2.5)
    case("tt::fill_.Scalar", T(F32, [2, 3], ("e", 0)), 3)
    case("tt::fill_.Scalar", T(BOOL, [2, 3], "c"), 2)
    case("tt::slice_backward", T(F64, [3, 2], "c"), [3, 5], 1, 1, 5, 2)
    case("tt::select_backward", T(F64, [5], "c"), [3, 5], 0, 1)

    # ---- elementwise binary: every dtype pair, broadcasting, layouts
    bins = ["tt::add.Tensor", "tt::sub.Tensor", "tt::mul.Tensor", "tt::div.Tensor",
            "tt::pow.Tensor_Tensor", "tt::eq.Tensor", "tt::ne.Tensor", "tt::lt.Tensor",
            "tt::le.Tensor", "tt::gt.Tensor", "tt::ge.Tensor"]
    for op in bins:
        for da in ALL:
            for db in ALL:
                fa = POS if op.startswith("tt::pow") and da not in (BOOL,) else None
                fb = (1, 0, 4, 0, 1) if op.startswith("tt::pow") and db != BOOL else None
                rg = da in (F32, F64) and db in (F32, F64) and op.split(".")[0] in (
                    "tt::add", "tt::sub", "tt::mul", "tt::div", "tt::pow")
                case(op, T(da, [2, 3], "c", fa, rg), T(db, [3], "t" if False else "c", fb, rg))
        for la, lb in [("t", "c"), ("s", "t"), (("e", 0), "s"), ("c", ("p", [1, 0]))]:
            case(op, T(F32, [3, 3], la, POS), T(F64, [3, 3], lb, (1, 0, 4, 0, 1)))
        case(op, T(F32, [2, 3], "c"), T(F32, [4], "c"))
        case(op, T(F32, [2, 1, 3], "t"), T(I64, [4, 1], "c"))
        case(op, T(I32, [], "c"), T(U8, [3], "c"))
        case(op, T(F64, [], "c"), T(I32, [2, 2], "c"))
    for op in ["tt::add.Tensor", "tt::sub.Tensor"]:
        for alpha in [2, 0.5, True, -1]:
            for da, db in [(F32, F32), (I64, I64), (BOOL, BOOL), (I32, F64)]:
                case(op, T(da, [2, 3], "c"), T(db, [2, 3], "c"), alpha)
        case(op, T(F64, [2, 3], "c", rg=True), T(F64, [3], "c", rg=True), 3)
    scalars = [2, -3, 2.5, True, False, 0]
    for op in ["tt::add.Scalar", "tt::sub.Scalar", "tt::mul.Scalar", "tt::div.Scalar",
               "tt::pow.Tensor_Scalar", "tt::eq.Scalar", "tt::ne.Scalar", "tt::lt.Scalar",
               "tt::le.Scalar", "tt::gt.Scalar", "tt::ge.Scalar"]:
        for dt in ALL:
            for sv in scalars:
                fa = POS if op.startswith("tt::pow") and dt != BOOL else None
                rg = dt in (F32, F64) and op.split(".")[0] in (
                    "tt::add", "tt::sub", "tt::mul", "tt::div", "tt::pow")
                case(op, T(dt, [2, 3], "t", fa, rg), sv)
    case("tt::add.Scalar", T(I64, [3], "c"), 2, 3)
    case("tt::add.Scalar", T(I64, [3], "c"), 2, 1.5)
    case("tt::sub.Scalar", T(F32, [3], "c", rg=True), 2, 0.5)
    # in place: dtype must fit, overlap refused
    for op in ["tt::add_.Tensor", "tt::sub_.Tensor", "tt::mul_.Tensor", "tt::div_.Tensor"]:
        for da, db in [(F32, F32), (F32, I64), (I64, F32), (I32, I32), (F64, F32), (BOOL, BOOL)]:
            case(op, T(da, [2, 3], "t"), T(db, [3], "c"))
        case(op, T(F32, [2, 3], ("e", 0)), T(F32, [2, 3], "c"))
        case(op, T(F32, [3], "c"), T(F32, [2, 3], "c"))
    for op in ["tt::add_.Scalar", "tt::sub_.Scalar", "tt::mul_.Scalar", "tt::div_.Scalar"]:
        for dt in [F32, F64, I64, I32, U8, BOOL]:
            for sv in [2, 2.5, True]:
                case(op, T(dt, [2, 3], "s"), sv)
    case("tt::add_.Scalar", T(I64, [3], "c"), 2, 3)
    case("tt::add_.Scalar", T(F32, [3], "c"), 2, 0.5)
    case("tt::sub_.Scalar", T(I64, [3], "c"), 2, 0.5)
    # In place with an input over the written tensor's own memory: PyTorch
    # refuses a partial overlap of dense operands and allows the exact one.
    sq = T(F32, [3, 3], "c")
    for op in ["tt::add_.Tensor", "tt::mul_.Tensor", "tt::sub_.Tensor", "tt::div_.Tensor"]:
        case(op, sq, T(F32, [3, 3], "t", share=0))                      # x op= x.t()
        case(op, sq, T(F32, [3, 3], "c", share=0))                      # x op= x
        case(op, T(F32, [8], ("v", [1], 1)), T(F32, [8], ("v", [1], 0), share=0))  # x[1:] op= x[:-1]
        case(op, T(F32, [3, 3], "c"), T(F32, [3], ("v", [1], 0), share=0))  # x op= x[0]
        case(op, T(F32, [4], ("v", [1], 0, 8)), T(F32, [4], ("v", [1], 4), share=0))  # disjoint
    case("tt::copy_", T(F64, [8], ("v", [1], 1)), T(F64, [8], ("v", [1], 0), share=0))
    case("tt::copy_", T(F64, [3, 3], "c"), T(F64, [3, 3], "t", share=0))
    case("tt::copy_", T(F64, [3, 3], "c"), T(F64, [3, 3], "c", share=0))
    case("tt::add_.Scalar", T(F32, [2, 3], ("e", 0)), 1)
    case("tt::relu_", T(F32, [2, 3], ("e", 1)))
    case("tt::div_.Tensor_mode", T(F32, [3, 3], "c"), T(F32, [3, 3], "t", share=0), "floor")
    case("tt::add_.Tensor", T(F32, [2, 3], "c"), T(F32, [2, 3], "c"), 2)
    case("tt::add_.Tensor", T(I32, [2, 3], "c"), T(I32, [2, 3], "c"), 2.0)
    # div with a rounding mode
    for m in ["trunc", "floor"]:
        for da, db in [(F32, F32), (F64, I64), (I64, I64), (I32, I32), (U8, U8), (I32, F32),
                       (BOOL, BOOL)]:
            fb = (3, 1, 5, -2, 1) if db != U8 and db != BOOL else (3, 1, 5, 1, 1)
            case("tt::div.Tensor_mode", T(da, [2, 3], "c"), T(db, [3], "c", fb), m)
        case("tt::div.Tensor_mode", T(I64, [2, 3], "c"), T(I64, [3], "c"), m)  # has a zero
        case("tt::div.Tensor_mode", T(F32, [2, 3], "c"), T(F32, [3], "c"), m)  # x / 0
        case("tt::div.Tensor_mode", T(F64, [2, 3], "c", rg=True),
             T(F64, [3], "c", (3, 1, 5, -2, 1), rg=True), m)
        for dt in [F32, I64, U8]:
            for sv in [2, -3, 2.5, 0]:
                case("tt::div.Scalar_mode", T(dt, [2, 3], "t"), sv, m)
        case("tt::div_.Tensor_mode", T(I32, [2, 3], "c"), T(I32, [3], "c", (3, 1, 5, -2, 1)), m)
        case("tt::div_.Scalar_mode", T(I64, [2, 3], "t"), -2, m)
        case("tt::div_.Scalar_mode", T(I64, [2, 3], "t"), 2.5, m)
    # fmod and remainder: every dtype pair (a divisor without zeros, then
    # one with), the signs' four cases, gradients; atan2 likewise
    for op in ["tt::fmod.Tensor", "tt::remainder.Tensor", "tt::atan2"]:
        for da in ALL:
            for db in ALL:
                fb = (2, 1, 5, -2, 1) if db not in (U8, BOOL) else (3, 1, 5, 1, 1)
                fb = (1, 0, 2, 1, 1) if db == BOOL else fb
                case(op, T(da, [2, 3], "c"), T(db, [3], "c", fb))
        case(op, T(I64, [2, 3], "c"), T(I64, [3], "c"))  # a zero divisor
        case(op, T(F32, [2, 3], "c"), T(F32, [3], "c"))  # x % 0.0: NaN
        case(op, T(F64, [2, 3], "t", (7, 3, 11, -5, 2), rg=True),
             T(F64, [3], "c", (2, 1, 5, -2, 3), rg=True))
        case(op, T(F32, [3, 2], "s", (7, 3, 11, -5, 2)), T(F64, [3, 2], ("e", 0), (2, 1, 5, -2, 3)))
    # atan2.out: into out of each dtype (an integer one refused), of any
    # strides, out being self; partial overlaps and grad refused
    for da, db in [(F32, F32), (F64, F32), (I64, I32), (BOOL, U8)]:
        for do in [F32, F64, I64]:
            case("tt::atan2.out", T(da, [2, 3], "c"), T(db, [3], "c", (2, 1, 5, -2, 1)),
                 T(do, [2, 3], "t"), after=(2,))
    case("tt::atan2.out", T(F64, [3, 3], "c"), T(F64, [3], "c"), T(F64, [3, 3], "c", share=0),
         after=(2,))
    case("tt::atan2.out", T(F32, [8], ("v", [1], 1)), T(F32, [7], "c"),
         T(F32, [8], ("v", [1], 0), share=0))  # atan2(x[1:], o, out=x[:-1])
    case("tt::atan2.out", T(F64, [3], "c", rg=True), T(F64, [3], "c"), T(F64, [3], "c"))
    case("tt::atan2.out", T(F64, [3], "c"), T(F64, [3], "c"), T(F64, [3], "c", rg=True))
    case("tt::atan2.out", T(F32, [2, 3], "c"), T(F32, [3], "c"), T(F32, [3], "c"),
         ref=refuse("atan2.out: out of another shape"),
         note="tt's tensors keep their sizes: an out of another shape is refused where "
              "PyTorch resizes it")
    for op in ["tt::fmod.Scalar", "tt::remainder.Scalar"]:
        for dt in ALL:
            for sv in [2, -3, 2.5, -0.75, True, 0]:
                case(op, T(dt, [2, 3], "t"), sv)
        case(op, T(F64, [2, 3], "c", (7, 3, 11, -5, 2), rg=True), -1.5)
    # adaptive_avg_pool1d: any output size, 2-d and 3-d inputs
    for osz in [[1], [3], [4], [9]]:
        case("tt::adaptive_avg_pool1d", T(F64, [2, 3, 7], "c", rg=True), osz)
    case("tt::adaptive_avg_pool1d", T(F32, [3, 8], "t", rg=True), [3])
    case("tt::adaptive_avg_pool1d", T(F32, [2, 3, 7], "c"), [0])
    case("tt::adaptive_avg_pool1d", T(F32, [2, 3, 7], "c"), [-1])
    case("tt::adaptive_avg_pool1d", T(F32, [2, 3, 7], "c"), [2, 2])
    case("tt::adaptive_avg_pool1d", T(F32, [7], "c"), [2])
    case("tt::adaptive_avg_pool1d", T(I64, [2, 7], "c"), [2])
    # grid_sampler_2d: every interpolation x padding x align_corners, grid
    # points on pixel centres and half-way ties (GA), anywhere (GB), far
    # outside for several reflections (GC); gradients of input and grid
    GS, GSB = "tt::grid_sampler_2d", "tt::grid_sampler_2d_backward"
    GA, GB, GC = (7, 3, 13, -6, 4), (5, 1, 17, -8, 6), (7, 3, 41, -20, 4)
    for im in range(3):
        for pm in range(3):
            for ac in [False, True]:
                for gf in [GA, GB]:
                    case(GS, T(F64, [2, 3, 4, 5], "c", rg=True),
                         T(F64, [2, 3, 4, 2], "c", gf, rg=True), im, pm, ac)
                case(GS, T(F32, [2, 3, 4, 5], ("p", [0, 2, 3, 1])),
                     T(F32, [2, 3, 4, 2], "s", GB), im, pm, ac)
                if im != 1:
                    case(GS, T(F64, [1, 2, 3, 4], "t", rg=True),
                         T(F64, [1, 5, 3, 2], ("p", [0, 2, 1, 3]), GC, rg=True), im, pm, ac)
            case(GS, T(F64, [1, 2, 1, 3], "c", rg=True), T(F64, [1, 2, 3, 2], "c", GB, rg=True),
                 im, pm, True)
            case(GSB, T(F64, [2, 3, 3, 4], "t", GRAD_FORM), T(F64, [2, 3, 4, 5], "c"),
                 T(F64, [2, 3, 4, 2], "c", GB), im, pm, im == 1, [True, True])
        case(GS, T(F32, [2, 3, 4, 5], "c", rg=True), T(F32, [2, 3, 4, 2], "c", GB, rg=True),
             im, 2, False)
        case(GSB, T(F32, [2, 3, 3, 4], "c", GRAD_FORM), T(F32, [2, 3, 4, 5], "t"),
             T(F32, [2, 3, 4, 2], "c", GA), im, 1, False, [True, False])
        case(GSB, T(F64, [2, 3, 3, 4], "c", GRAD_FORM), T(F64, [2, 3, 4, 5], "c"),
             T(F64, [2, 3, 4, 2], "c", GA), im, 0, True, [False, True],
             ref=lambda *a: (torch.empty(0, dtype=torch.float64),
                             torch.ops.aten.grid_sampler_2d_backward(*a)[1]),
             note="a masked-out grad_input is an empty [0] tensor (PyTorch: None), as "
                  "convolution_backward's")
    for xs, gsz in [([0, 3, 4, 5], [0, 3, 4, 2]), ([2, 0, 4, 5], [2, 3, 4, 2]),
                    ([2, 3, 4, 5], [2, 0, 4, 2])]:
        case(GS, T(F32, xs, "c"), T(F32, gsz, "c", GB), 0, 0, False)
    case(GS, T(I64, [2, 3, 4, 5], "c"), T(I64, [2, 3, 4, 2], "c"), 0, 0, False)
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F64, [2, 3, 4, 2], "c", GB), 0, 0, False)
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F32, [1, 3, 4, 2], "c", GB), 0, 0, False)
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F32, [2, 3, 4, 3], "c", GB), 0, 0, False)
    case(GS, T(F32, [3, 4, 5], "c"), T(F32, [3, 4, 2], "c", GB), 0, 0, False)
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F32, [2, 3, 2], "c", GB), 0, 0, False)
    case(GS, T(F32, [2, 3, 0, 5], "c"), T(F32, [2, 3, 4, 2], "c", GB), 0, 0, False)
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F32, [2, 3, 4, 2], "c", GB), 3, 0, False,
         ref=refuse("interpolation_mode 3"),
         note="PyTorch 1.13 takes any interpolation_mode (3 leaves the output unwritten)")
    case(GS, T(F32, [2, 3, 4, 5], "c"), T(F32, [2, 3, 4, 2], "c", GB), 0, -1, False,
         ref=refuse("padding_mode -1"),
         note="PyTorch 1.13 takes any padding_mode")
    case(GSB, T(I64, [2, 3, 3, 4], "c"), T(I64, [2, 3, 4, 5], "c"), T(I64, [2, 3, 4, 2], "c"),
         0, 0, False, [True, True])
    case(GSB, T(F32, [2, 2, 3, 4], "c"), T(F32, [2, 3, 4, 5], "c"),
         T(F32, [2, 3, 4, 2], "c", GB), 0, 0, False, [True, True],
         ref=refuse("grad_output [2, 2, 3, 4]"),
         note="PyTorch 1.13 does not check grad_output's shape (it reads out of bounds)")
    # Core ATen's addmm, alias, copy, fill.Scalar
    for dt in [F32, F64, I64]:
        case("tt::addmm", T(dt, [3], "c"), T(dt, [2, 4], "c"), T(dt, [4, 3], "t"))
    case("tt::addmm", T(F64, [2, 3], "t", rg=True), T(F64, [2, 4], "c", rg=True),
         T(F64, [4, 3], "c", rg=True), 0.5, -2)
    case("tt::addmm", T(F64, [1, 3], "c", rg=True), T(F64, [2, 4], "s", rg=True),
         T(F64, [4, 3], ("e", 0), rg=True), 2, 1.5)
    case("tt::addmm", T(F64, [], "c", rg=True), T(F64, [2, 4], "c", rg=True),
         T(F64, [4, 3], "t", rg=True), 1, 1)
    case("tt::addmm", T(F32, [2, 3], "c"), T(F32, [2, 4], "c"), T(F32, [4, 3], "c"), 0, 1)
    case("tt::addmm", T(I64, [2, 3], "c"), T(I64, [2, 4], "c"), T(I64, [4, 3], "c"), 2, 3)
    case("tt::addmm", T(I64, [2, 3], "c"), T(I64, [2, 4], "c"), T(I64, [4, 3], "c"), 0.5, 1.5)
    case("tt::addmm", T(I32, [3], "c"), T(I32, [2, 4], "t"), T(I32, [4, 3], "c"), -2, 2.5)
    case("tt::addmm", T(F32, [4], "c"), T(F32, [2, 4], "c"), T(F32, [4, 3], "c"))
    case("tt::addmm", T(F32, [3], "c"), T(F32, [2, 4], "c"), T(F32, [5, 3], "c"))
    case("tt::addmm", T(F32, [3], "c"), T(F32, [2, 4], "c"), T(F64, [4, 3], "c"))
    case("tt::addmm", T(F64, [3], "c"), T(F32, [2, 4], "c"), T(F32, [4, 3], "c"))
    case("tt::addmm", T(F32, [3], "c"), T(F32, [4], "c"), T(F32, [4, 3], "c"))
    for lay in ["c", "t", ("e", 0)]:
        case("tt::alias", T(F64, [2, 3], lay, rg=True))
    for da, ds in [(F32, F32), (I64, F64), (F64, I32), (BOOL, F32)]:
        case("tt::copy", T(da, [2, 3], "t"), T(ds, [3], "c"))
    case("tt::copy", T(F64, [2, 3], "c", rg=True), T(F64, [2, 1], "c", rg=True))
    case("tt::copy", T(F64, [2, 3], "c"), T(F64, [4], "c"))
    case("tt::copy", T(F32, [2, 3], "c"), T(F32, [2, 3], "c"), True)
    for dt in ALL:
        case("tt::fill.Scalar", T(dt, [2, 3], "t"), 2.5)
    case("tt::fill.Scalar", T(F64, [2, 3], ("p", [1, 0]), rg=True), -1)
    case("tt::fill.Scalar", T(I32, [2, 3], "c"), True)
    # Core ATen's _softmax, _log_softmax (no half_to_float on CPU) and var.dim
    for op in ["tt::_softmax", "tt::_log_softmax"]:
        for dt in [F32, F64, I64]:
            case(op, T(dt, [2, 3], "c"), 1, False)
        case(op, T(F64, [3, 4], "t", rg=True), 0, False)
        case(op, T(F32, [2, 3, 2], ("p", [2, 0, 1]), rg=True), -1, False)
        case(op, T(F32, [2, 3], "c"), 1, True)
        case(op, T(F32, [2, 3], "c"), 2, False)
    var_all = lambda s, d, u=True, k=False: torch.ops.aten.var.dim(s, None, u, k)
    for dims in [[1], [0, 1], None, []]:
        for unb in [True, False]:
            for keep in [False, True]:
                if dims == []:
                    case("tt::var.dim", T(F64, [3, 4], "t", rg=True), dims, unb, keep,
                         ref=var_all,
                         note="PyTorch 1.13's var.dim with dim=[] reduces every dim but its "
                              "gradient counts none (inf, or a wrong value, for x - mean); "
                              "recorded as dim=None, what the forward computes")
                else:
                    case("tt::var.dim", T(F64, [3, 4], "t", rg=True), dims, unb, keep)
    case("tt::var.dim", T(F32, [2, 3], "c"), [1])
    case("tt::var.dim", T(I64, [2, 3], "c"), [1])
    case("tt::var.dim", T(F32, [1, 3], "c"), [0], True)
    case("tt::div.Tensor_mode", T(F32, [3], "c"), T(F32, [3], "c"), "bad")
    case("tt::div.Tensor_mode", T(F32, [3], "c"), T(F32, [3], "c"), None)
    # pow with a scalar base
    for sv in [2, 2.5, -2, 0, True]:
        for dt in [F32, F64, I64, I32, U8, BOOL]:
            form = (1, 0, 5, -2, 1) if dt != U8 else (1, 0, 5, 0, 1)
            case("tt::pow.Scalar", sv, T(dt, [2, 3], "t", form))
    case("tt::pow.Scalar", 2.5, T(F64, [2, 3], "c", rg=True))
    case("tt::pow.Scalar", 0, T(F64, [5], "c", (1, 0, 5, -2, 1), rg=True))
    # pow's gradient edge cases: base 0 with exponents -1, 0, 2; negative base
    case("tt::pow.Tensor_Tensor", T(F64, [6], "c", (1, 0, 1, 0, 1), rg=True),
         T(F64, [6], "c", (1, 0, 6, -2, 2), rg=True))
    case("tt::pow.Tensor_Tensor", T(F64, [6], "c", (1, 0, 6, -3, 1), rg=True),
         T(F64, [6], "c", (1, 1, 3, 0, 2), rg=True))
    case("tt::pow.Tensor_Scalar", T(F64, [5], "c", (1, 0, 5, -2, 1), rg=True), 0)
    case("tt::pow.Tensor_Scalar", T(F64, [5], "c", (1, 0, 5, -2, 1), rg=True), -1)
    case("tt::pow.Tensor_Scalar", T(I64, [3], "c"), -1)

    # ---- unary
    unary = ["tt::neg", "tt::exp", "tt::log", "tt::sqrt", "tt::rsqrt", "tt::sin", "tt::cos",
             "tt::tanh", "tt::sigmoid", "tt::relu", "tt::abs", "tt::sign", "tt::gelu"]
    for op in unary:
        pos = op in ("tt::log", "tt::sqrt", "tt::rsqrt")
        for dt in ALL:
            case(op, T(dt, [2, 3], "c", POS if pos and dt != BOOL else None))
        for lay in ["t", "s", ("e", 1), ("p", [2, 0, 1])]:
            shape = [3, 2, 2] if lay[0] == "p" else [2, 3]
            case(op, T(F64, shape, lay, POS if pos else None,
                       rg=op not in ("tt::sign",)))
    # Core ATen's other math functions: every dtype, strided and expanded
    # views with gradients, inside each function's domain
    unit = (7, 3, 11, -5, 6)  # inside (-1, 1): acos, asin, atanh
    ge1 = (7, 3, 11, 5, 4)  # from 1.25: acosh
    halves = (7, 3, 11, -5, 2)  # -2.5 .. 2.5 by halves: round's ties to even
    domains = {"tt::acos": unit, "tt::asin": unit, "tt::atanh": unit, "tt::acosh": ge1,
               "tt::log1p": POS, "tt::log2": POS, "tt::log10": POS, "tt::reciprocal": POS,
               "tt::floor": halves, "tt::ceil": halves, "tt::trunc": halves,
               "tt::round": halves}
    for op in ["tt::acos", "tt::asin", "tt::atan", "tt::acosh", "tt::asinh", "tt::atanh",
               "tt::sinh", "tt::cosh", "tt::tan", "tt::erf", "tt::expm1", "tt::log1p",
               "tt::log2", "tt::log10", "tt::reciprocal", "tt::floor", "tt::ceil",
               "tt::trunc", "tt::round"]:
        form = domains.get(op)
        for dt in ALL:
            case(op, T(dt, [2, 3], "c", form if dt in (F32, F64) else None))
        for lay in ["t", ("e", 1)]:
            case(op, T(F64, [2, 3], lay, form, rg=True))
        case(op, T(F32, [3, 2], "s", form, rg=True))
        # outside the domain: NaN (or inf) as PyTorch's
        case(op, T(F32, [11], "c", (1, 0, 11, -5, 1)))
    case("tt::relu_", T(F32, [2, 3], "t"))
    case("tt::relu_", T(F32, [2, 3], ("e", 0)))
    case("tt::relu_", T(I64, [2, 3], "c"))
    for ap in ["none", "tanh"]:
        case("tt::gelu", T(F64, [2, 3], "t", rg=True), ap)
        case("tt::gelu", T(F32, [2, 3], "s"), ap)
        case("tt::gelu_backward", T(F64, [2, 3], "c"), T(F64, [2, 3], "t"), ap)
    case("tt::gelu_backward", T(F32, [3], "c"), T(F32, [2, 3], "c"), ref=gelu_bw_ref,
         note="PyTorch 1.13's oneDNN gelu_backward fails when grad_output broadcasts "
              "(could not create a primitive descriptor); recorded as grad_output * gelu'(self), "
              "what the op means")
    case("tt::gelu", T(F32, [3], "c"), "bad")
    case("tt::gelu", T(I64, [3], "c"), "tanh")

    # ---- where, clamp
    cond = T(BOOL, [2, 3], "c", (1, 0, 2, 0, 1))
    for da, db in [(F32, F32), (F32, I64), (I32, U8), (BOOL, F64), (BOOL, BOOL)]:
        case("tt::where.self", cond, T(da, [2, 3], "t"), T(db, [3], "c"))
    case("tt::where.self", cond, T(F64, [2, 3], "t", rg=True), T(F64, [3], "c", rg=True))
    case("tt::where.self", T(U8, [2, 3], "c", (1, 0, 2, 0, 1)), T(F32, [2, 3], "c"),
         T(F32, [2, 3], "c"))
    case("tt::where.self", T(I64, [2, 3], "c"), T(F32, [2, 3], "c"), T(F32, [2, 3], "c"))
    case("tt::where.self", cond, T(F32, [4], "c"), T(F32, [3], "c"))
    for sv in [2, 2.5, True]:
        for dt in [F32, I32, BOOL]:
            case("tt::where.ScalarSelf", cond, sv, T(dt, [3], "c"))
            case("tt::where.ScalarOther", cond, T(dt, [2, 3], "t"), sv)
        case("tt::where.Scalar", cond, sv, 0)
        case("tt::where.Scalar", cond, sv, 0.5)
        case("tt::where.Scalar", cond, sv, False)
    case("tt::where.ScalarSelf", cond, 2.5, T(F64, [3], "c", rg=True))
    case("tt::where.ScalarOther", cond, T(F64, [2, 3], "c", rg=True), -1)
    case("tt::where.ScalarOther", T(U8, [2, 3], "c", (1, 0, 2, 0, 1)), T(F64, [2, 3], "c"), 1)
    for lo, hi in [(-0.5, 0.5), (None, 0.25), (0, None), (1, -1), (None, None), (-2, 2)]:
        for dt in [F32, F64, I64, U8]:
            case("tt::clamp", T(dt, [2, 3], "t"), lo, hi)
        case("tt::clamp", T(F64, [2, 3], "c", rg=True), lo, hi)
    # clamp with tensor bounds (broadcast)
    lo = T(F64, [3], "c", (1, 0, 3, -2, 4), rg=True)
    hi = T(F64, [2, 1], "c", (1, 0, 2, 1, 4), rg=True)
    case("tt::clamp.Tensor", T(F64, [2, 3], "t", rg=True), lo, hi)
    case("tt::clamp.Tensor", T(F64, [2, 3], "c", rg=True), lo, None)
    case("tt::clamp.Tensor", T(F64, [2, 3], "c", rg=True), None, hi)
    case("tt::clamp.Tensor", T(F64, [2, 3], "c", rg=True), hi, lo)
    case("tt::clamp.Tensor", T(I32, [2, 3], "c"), T(I64, [3], "c"), T(I64, [3], "c", (1, 0, 2, 2, 1)))
    case("tt::clamp.Tensor", T(I32, [2, 3], "c"), T(F32, [], "c"), None)
    case("tt::clamp.Tensor", T(U8, [2, 3], "s"), None, T(U8, [2, 3], "c"))
    case("tt::clamp.Tensor", T(F32, [2, 3], "c"), None, None)
    case("tt::clamp.Tensor", T(F32, [2, 3], "c"), T(F32, [4], "c"), None)
    for dt in [F32, I64, BOOL]:
        case("tt::zero_", T(dt, [2, 3], "s"))
    case("tt::zero_", T(F32, [2, 3], ("e", 0)))

    # ---- reductions
    for op in ["tt::sum.dim_IntList", "tt::mean.dim"]:
        for dt in ALL:
            for dims, k in [([1], False), ([0, -1], True), (None, False), ([], True)]:
                case(op, T(dt, [2, 3], "t", rg=dt in (F32, F64)), dims, k)
        case(op, T(I64, [2, 3], "c"), [0], False, torch.float64)
        case(op, T(F32, [2, 3], "c"), [0, 0], False)
        case(op, T(F32, [2, 3], "c"), [2], False)
        case(op, T(F64, [2, 0], "c"), [1], False)
    for dt in ALL:
        case("tt::sum", T(dt, [2, 3], "s"))
        case("tt::mean", T(dt, [2, 3], "s"))
    case("tt::sum", T(I32, [2, 3], "c"), torch.float32)
    case("tt::mean", T(F64, [2, 3], "c", rg=True))
    for op in ["tt::amax", "tt::amin"]:
        for dt in ALL:
            for dims, k in [([1], False), ([0, 1], True), ([], False)]:
                case(op, T(dt, [2, 3], "t", rg=dt in (F32, F64)), dims, k)
        case(op, T(F64, [2, 3], "c", (1, 0, 2, 0, 1), rg=True), [1], False)  # ties
        case(op, T(F32, [2, 0], "c"), [1], False)
    for dt in [F32, I64, U8, BOOL]:
        for d, k in [(None, False), (1, True), (-2, False)]:
            case("tt::argmax", T(dt, [2, 3], "t"), d, k)
    for op in ["tt::softmax.int", "tt::log_softmax.int"]:
        for lay in ["c", "t", "s"]:
            case(op, T(F64, [2, 3], lay, rg=True), 1)
            case(op, T(F32, [2, 3], lay), 0)
        case(op, T(F32, [2, 3], "c"), 1, torch.float64)
        case(op, T(I64, [2, 3], "c"), 1)
        case(op, T(F64, [], "c", rg=True), 0)

    # ---- linalg
    for dt in [F32, F64, I64, I32]:
        rg = dt == F64
        case("tt::mm", T(dt, [2, 3], "c", rg=rg), T(dt, [3, 4], "t", rg=rg))
        case("tt::bmm", T(dt, [2, 2, 3], "s", rg=rg), T(dt, [2, 3, 2], "c", rg=rg))
    case("tt::mm", T(F32, [2, 3], "c"), T(F64, [3, 4], "c"))
    case("tt::mm", T(F32, [2, 3], "c"), T(F32, [2, 4], "c"))
    for sa, sb in [([3], [3]), ([2, 3], [3]), ([3], [3, 2]), ([2, 2, 3], [3, 4]),
                   ([3], [2, 3, 4]), ([2, 1, 2, 3], [3, 3, 2]), ([2, 3], [4, 2])]:
        case("tt::matmul", T(F64, sa, "c", rg=True), T(F64, sb, "c", rg=True))
    case("tt::linear", T(F64, [2, 3], "c", rg=True), T(F64, [3], "c", rg=True),
         T(F64, [], "c", rg=True), ref=lambda x, w, b: torch.matmul(x, w) + b,
         note="PyTorch 1.13 refuses a 1-d weight with a bias for a 2-d input only because "
              "its addmm fast path needs a matrix; tensortrace computes x @ w + b, what "
              "linear documents")
    for sx, sw, b in [([2, 3], [4, 3], [4]), ([3], [4, 3], None), ([2, 2, 3], [4, 3], [4]),
                      ([2, 3], [3], None), ([3], [3], None),
                      ([2, 3], [4, 3], [2, 4]), ([2, 3], [4, 2], None)]:
        case("tt::linear", T(F64, sx, "c", rg=True), T(F64, sw, "c", rg=True),
             T(F64, b, "c", rg=True) if b is not None else None)

    # ---- cat, stack
    for dt in [F32, I64, BOOL]:
        case("tt::cat", TL(T(dt, [2, 3], "t"), T(dt, [1, 3], "c")), 0)
        case("tt::stack", TL(T(dt, [2, 3], "t"), T(dt, [2, 3], "c")), -1)
    case("tt::cat", TL(T(F64, [2, 3], "c", rg=True), T(F64, [2, 2], "s", rg=True)), 1)
    case("tt::cat", TL(T(F32, [2, 3], "c"), T(I64, [2, 1], "c")), 1)
    case("tt::cat", TL(T(F32, [2, 3], "c"), T(F32, [2, 2], "c")), 0)
    case("tt::stack", TL(T(F64, [3], "c", rg=True), T(F64, [3], "c", rg=True)), 0)
    case("tt::stack", TL(T(F32, [3], "c"), T(F32, [2], "c")), 0)

    # ---- cross_entropy
    ti = lambda n, m=4, form=None: T(I64, n, "c", form or (3, 1, m, 0, 1))
    for red in ["mean", "sum", "none"]:
        case("tt::cross_entropy", T(F64, [3, 4], "t", rg=True), ti([3]), red)
        case("tt::cross_entropy", T(F32, [4], "c"), ti([]), red)
        case("tt::cross_entropy", T(F64, [2, 4, 3], "c", rg=True), ti([2, 3]), red)
        case("tt::cross_entropy", T(F64, [2, 4, 2, 2], "c", rg=True), ti([2, 2, 2]), red)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), T(F64, [3, 4], "c", POS, rg=True), red)
        case("tt::cross_entropy", T(F64, [2, 4, 3], "c", rg=True), T(F64, [2, 4, 3], "t", POS), red)
        w = T(F64, [4], "c", POS)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), ti([3]), red, w)
        case("tt::cross_entropy", T(F64, [2, 4, 3], "c", rg=True), ti([2, 3]), red, w)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), T(F64, [3, 4], "c", POS), red, w)
        case("tt::cross_entropy", T(F64, [5, 4], "c", rg=True), ti([5], 5), red, None, 4)
        case("tt::cross_entropy", T(F64, [5, 4], "c", rg=True), ti([5], 5), red, w, 4)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), ti([3], 1), red, None, 0)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), ti([3]), red, None, -100, 0.2)
        case("tt::cross_entropy", T(F64, [5, 4], "c", rg=True), ti([5], 5), red, w, 4, 0.1)
        case("tt::cross_entropy", T(F64, [2, 4, 3], "c", rg=True), ti([2, 3]), red, w, 1, 0.3)
        case("tt::cross_entropy", T(F64, [3, 4], "c", rg=True), T(F64, [3, 4], "c", POS), red, w,
             -100, 0.25)
        case("tt::cross_entropy_backward", T(F64, [3] if red == "none" else [], "c"),
             T(F64, [3, 4], "c"), ti([3]), red)
    case("tt::cross_entropy", T(F32, [3, 4], "c"), ti([3], 5, (3, 1, 5, 1, 1)), "mean")
    case("tt::cross_entropy", T(F32, [3, 4], "c"), ti([2]), "mean")
    case("tt::cross_entropy", T(I64, [3, 4], "c"), ti([3]), "mean")
    case("tt::cross_entropy", T(F32, [3, 4], "c"), ti([3]), "max")
    case("tt::cross_entropy", T(F32, [3, 4], "c"), ti([3]), "mean", T(F32, [3], "c"))
    case("tt::cross_entropy", T(F32, [3, 4], "c"), T(F32, [3, 4], "c"), "mean", None, 1)
    case("tt::cross_entropy", T(F32, [3, 4], "c"), ti([3]), "mean", None, -100, 1.5)
    case("tt::cross_entropy", T(F64, [0, 4], "c"), ti([0]), "mean")

    # ---- factories
    for dt in [None, torch.float64, torch.int32, torch.bool]:
        case("tt::empty", [2, 3], dt)
        case("tt::full", [2, 3], 2.5, dt)
        case("tt::full", [2, 3], 3, dt)
        case("tt::full", [2], True, dt)
        case("tt::rand", [2, 3], dt)
        case("tt::randn", [2, 3], dt)
        case("tt::arange.start_step", 0, 5, 1, dt)
        case("tt::arange.start_step", 0.5, 3, 0.5, dt)
        case("tt::linspace", -1, 1, 5, dt)
    case("tt::empty", [2, -1], None)
    case("tt::empty_strided", [2, 3], [1, 2], None)
    for dt in [None, torch.float64, torch.int32]:
        case("tt::empty.memory_format", [2, 3], dt)
    case("tt::empty.memory_format", [2, 3, 4, 5], None, None, None, None, 2)
    case("tt::empty.memory_format", [2, 1, 4, 5], None, None, None, None, 2)
    case("tt::empty.memory_format", [2, 3, 4, 5, 6], torch.float64, None, None, None, 3)
    case("tt::empty.memory_format", [2, 3], None, None, None, None, 0)
    case("tt::empty.memory_format", [2, 3], None, None, None, None, 2)
    case("tt::empty.memory_format", [2, 3], None, None, None, None, 1)
    case("tt::empty.memory_format", [2, 3], None, None, None, True, None)
    case("tt::empty.memory_format", [2, -1], None)
    case("tt::arange.start_step", 0, 5, 0, None)
    case("tt::arange.start_step", 5, 0, -2, None)
    case("tt::linspace", 0, 1, 1, None)
    case("tt::linspace", 0, 1, -1, None)
    case("tt::new_empty", T(I32, [2], "c"), [3, 2])
    case("tt::empty_like", T(F64, [2, 3, 4], ("p", [2, 0, 1])))
    case("tt::empty_like", T(F64, [2, 3], "s"))
    conv_cases()
    pool_pad_cases()
    pool3d_cases()
    norm_dropout_cases()
    activation_loss_cases()
    index_cases()
    adv_index_cases()
    sort_scan_cases()
    pointwise_shape_cases()
    random_cases()
    transformer_cases()
    split_cases()
    distance_cases()


# ---- _cdist_forward, _pdist_forward and their backward ops (ops/distance.c)
def distance_cases():
    OPS.update({
        "tt::_cdist_forward": torch.ops.aten._cdist_forward,
        "tt::_cdist_backward": torch.ops.aten._cdist_backward,
        # tt's _pdist_forward takes any strides and refuses p < 0 and a self
        # that is not 2-d, as torch.pdist does before it calls
        # aten::_pdist_forward on a contiguous copy (the same gradient).
        "tt::_pdist_forward": lambda s, p=2.0: torch.pdist(s, p),
        "tt::_pdist_backward": torch.ops.aten._pdist_backward,
    })
    cd, pd = "tt::_cdist_forward", "tt::_pdist_forward"
    X2 = (5, 2, 9, -4, 4)
    inf = float("inf")
    ps = [0.0, 0.5, 1.0, 1.5, 2.0, 3.5, inf]
    # every p, values and both gradients, batched, x2 transposed
    for p in ps:
        case(cd, T(F64, [2, 3, 4], "c", rg=True), T(F64, [2, 5, 4], "t", X2, rg=True), p, None)
        case(cd, T(F32, [3, 5], "s"), T(F32, [4, 5], "c", X2), p, None)
        case(pd, T(F64, [5, 4], "c", rg=True), p)
        case(pd, T(F32, [6, 3], "t"), p)
        case("tt::_cdist_backward", T(F64, [2, 3, 5], "c", GRAD_FORM), T(F64, [2, 3, 4], "c"),
             T(F64, [2, 5, 4], "c", X2), p, T(F64, [2, 3, 5], "c", POS))
        case("tt::_pdist_backward", T(F64, [10], "c", GRAD_FORM), T(F64, [5, 4], "c"), p,
             T(F64, [10], "c", POS))
    # the matrix-product form: P or R above 25 (compute_mode None or 0), or
    # mode 1 at any size; mode 2 never
    for mode in [None, 0, 2]:
        case(cd, T(F32, [30, 4], "c"), T(F32, [7, 4], "c", X2), 2.0, mode)
        case(cd, T(F64, [6, 3], "c", rg=True), T(F64, [27, 3], "t", X2, rg=True), 2.0, mode)
    case(cd, T(F64, [3, 4], "c", rg=True), T(F64, [5, 4], "c", X2, rg=True), 2.0, 1)
    case(cd, T(F32, [2, 30, 3], "c"), T(F32, [1, 6, 3], "c", X2), 2.0, None)
    case(cd, T(F64, [30, 3], "c", rg=True), T(F64, [30, 3], "c", rg=True), 1.0, None)
    # batch dims broadcast; expanded and offset inputs
    case(cd, T(F64, [2, 1, 3, 4], "c", rg=True), T(F64, [3, 5, 4], "c", X2, rg=True), 2.0, None)
    case(cd, T(F64, [3, 4], "c", rg=True), T(F64, [2, 5, 4], "c", X2, rg=True), 3.5, None)
    case(cd, T(F32, [3, 2, 4], ("e", 0)), T(F32, [1, 2, 4], "o", X2), inf, None)
    case(pd, T(F64, [4, 3], ("e", 0), rg=True), 2.0)
    case(pd, T(F64, [4, 3], "o", rg=True), 1.5)
    case(pd, T(F64, [5, 4], "c", rg=True))
    # empty inputs
    case(cd, T(F32, [0, 4], "c"), T(F32, [3, 4], "c"), 2.0, None)
    case(cd, T(F64, [3, 0], "c"), T(F64, [2, 0], "c"), 1.0, None)
    case(cd, T(F64, [0, 3, 4], "c"), T(F64, [1, 2, 4], "c"), 2.0, None)
    case(pd, T(F32, [1, 4], "c"), 2.0)
    case(pd, T(F64, [3, 0], "c"), 2.0)
    case(pd, T(F64, [0, 3], "c"), 2.0)
    # the backward ops: the gradient of the broadcast x1; x1's own shape and
    # layout when there is nothing to sum; a broadcast grad
    case("tt::_cdist_backward", T(F64, [2, 3, 5], "c", GRAD_FORM), T(F64, [1, 3, 4], "c"),
         T(F64, [2, 5, 4], "c", X2), 2.0, T(F64, [2, 3, 5], "c", POS))
    case("tt::_cdist_backward", T(F64, [3, 0], "c"), T(F64, [3, 4], "t"), T(F64, [0, 4], "c"),
         2.0, T(F64, [3, 0], "c"))
    case("tt::_pdist_backward", T(F64, [10], ("e", 0)), T(F64, [5, 4], "c"), 1.5,
         T(F64, [10], "c", POS))
    # errors
    case(cd, T(F32, [3, 4], "c"), T(F32, [5, 4], "c"), -1.0, None)
    case(cd, T(I64, [3, 4], "c"), T(I64, [5, 4], "c"), 2.0, None)
    case(cd, T(F32, [3, 4], "c"), T(I64, [5, 4], "c"), 2.0, None)
    case(cd, T(F32, [3, 4], "c"), T(F64, [5, 4], "c"), 2.0, None)
    case(cd, T(F32, [3, 4], "c"), T(F32, [5, 3], "c"), 2.0, None)
    case(cd, T(F32, [4], "c"), T(F32, [5, 4], "c"), 2.0, None)
    case(cd, T(F32, [3, 4], "c"), T(F32, [4], "c"), 2.0, None)
    case(cd, T(F32, [3, 4], "c"), T(F32, [5, 4], "c"), 2.0, 3)
    case(cd, T(F32, [3, 4], "c"), T(F32, [5, 4], "c"), 2.0, -1)
    case(cd, T(F32, [2, 3, 4], "c"), T(F32, [3, 5, 4], "c"), 2.0, None)
    case("tt::_cdist_backward", T(I64, [3, 5], "c"), T(I64, [3, 4], "c"), T(I64, [5, 4], "c"),
         2.0, T(I64, [3, 5], "c"))
    case("tt::_cdist_backward", T(F32, [3, 5], "c"), T(F64, [3, 4], "c"), T(F64, [5, 4], "c"),
         2.0, T(F64, [3, 5], "c"))
    case(pd, T(F32, [4], "c"), 2.0)
    case(pd, T(F32, [2, 3, 4], "c"), 2.0)
    case(pd, T(I64, [3, 4], "c"), 2.0)
    case(pd, T(F32, [3, 4], "c"), -0.5)
    case("tt::_pdist_backward", T(I64, [3], "c"), T(I64, [3, 4], "c"), 2.0, T(I64, [3], "c"))


# ---- split_with_sizes, split.Tensor, chunk (ops/shape.c): a Tensor[]
# result of views, one 'out' line per piece after 'list N'; gradients are
# of the first piece (the others' gradients are zeros).
def split_cases():
    OPS.update({
        "tt::split_with_sizes": lambda s, sizes, dim=0:
            ListResult(torch.split_with_sizes(s, sizes, dim)),
        "tt::split.Tensor": lambda s, size, dim=0: ListResult(torch.split(s, size, dim)),
        "tt::chunk": lambda s, chunks, dim=0: ListResult(torch.chunk(s, chunks, dim)),
    })
    SWS, SPL, CHK = "tt::split_with_sizes", "tt::split.Tensor", "tt::chunk"
    for dt in ALL:  # data movement: every dtype
        case(SWS, T(dt, [4, 5], "c"), [2, 0, 3], 1)
        case(SPL, T(dt, [4, 5], "t"), 2, 1)
        case(CHK, T(dt, [5, 3], "s"), 2, 0)
    for lay in ["c", "t", "s", "o", ("p", [1, 0])]:
        case(SWS, T(F64, [4, 5], lay, rg=True), [1, 3], 0)
        case(SWS, T(F32, [4, 5], lay), [2, 2, 1], -1)
        case(SPL, T(F64, [4, 5], lay, rg=True), 3, -1)
        case(CHK, T(F64, [4, 5], lay, rg=True), 3, 1)
    case(SWS, T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True), [1, 2], 1)
    case(SWS, T(F64, [2, 3, 4], "c", rg=True), [0, 4], 2)  # an empty first piece
    case(SWS, T(F64, [4, 5], "c", rg=True), [5], 1)
    case(SWS, T(F32, [0, 3], "c"), [0, 0], 0)
    case(SWS, T(F32, [4], "c"), [1, 1, 1, 1])
    # split: pieces of split_size, the last shorter; one piece for a large
    # split_size; split_size 0 only for an empty dim
    for size in [1, 2, 4, 5, 7]:
        case(SPL, T(F32, [3, 5], "c"), size, 1)
    case(SPL, T(F64, [6, 2], "t", rg=True), 4)
    case(SPL, T(F32, [0, 3], "c"), 0, 0)
    case(SPL, T(F32, [0, 3], "c"), 2, 0)
    case(SPL, T(F32, [2, 3, 4], "c"), 2, -2)
    # chunk: ceil(n / chunks) per piece, so fewer pieces than asked when
    # the size does not divide; `chunks` empty pieces of an empty dim
    for chunks in [1, 2, 3, 4, 6]:
        case(CHK, T(F32, [2, 5], "c"), chunks, 1)
    case(CHK, T(F64, [6, 3], "c", rg=True), 4, 0)
    case(CHK, T(F32, [0, 3], "c"), 3, 0)
    case(CHK, T(F32, [3, 0], "c"), 2, 1)
    case(CHK, T(F64, [2, 3, 4], "t", rg=True), 2, -1)
    # errors
    case(SWS, T(F32, [2, 5], "c"), [2, 2], 1)  # does not sum to the size
    case(SWS, T(F32, [2, 5], "c"), [2, 4], 1)
    case(SWS, T(F32, [2, 5], "c"), [6, -1], 1)  # negative
    case(SWS, T(F32, [2, 5], "c"), [], 1)
    case(SWS, T(F32, [2, 5], "c"), [2, 3], 2)  # dim out of range
    case(SWS, T(F32, [], "c"), [1], 0)  # 0-dim
    case(SPL, T(F32, [2, 5], "c"), 0, 1)
    case(SPL, T(F32, [2, 5], "c"), -1, 1)
    case(SPL, T(F32, [2, 5], "c"), 2, -3)
    case(SPL, T(F32, [], "c"), 1, 0)
    case(CHK, T(F32, [2, 5], "c"), 0, 1)
    case(CHK, T(F32, [2, 5], "c"), -2, 1)
    case(CHK, T(F32, [2, 5], "c"), 3, 5)
    case(CHK, T(F32, [], "c"), 3, 0)


# ---- random ops (ops/random.c). tt's generator is not PyTorch's, so a
# call whose values are random records metadata only (dtype, sizes,
# strides: META_ONLY); calls whose values are certain (probabilities 0
# and 1, a one-value range, from == to, std 0, one category) compare
# values and go through tt_opcheck; the errors PyTorch raises are
# recorded as for any op. The statistics are tests/test_ops_random.c's.


def random_cases():
    OPS.update({
        "tt::bernoulli": lambda s: torch.bernoulli(s),
        "tt::bernoulli.p": lambda s, p: torch.bernoulli(s, p),
        "tt::uniform_": lambda s, a=0.0, b=1.0: s.uniform_(a, b),
        "tt::normal_": lambda s, m=0.0, sd=1.0: s.normal_(m, sd),
        "tt::randint": lambda hi, size, dt=None:
            torch.randint(hi, size, dtype=torch.int64 if dt is None else dt),
        "tt::randint.low": lambda lo, hi, size, dt=None:
            torch.randint(lo, hi, size, dtype=torch.int64 if dt is None else dt),
        "tt::randperm": lambda n, dt=None:
            torch.randperm(n, dtype=torch.int64 if dt is None else dt),
        "tt::multinomial": lambda s, n, repl=False: torch.multinomial(s, n, repl),
    })
    PROB = (3, 1, 5, 0, 4)    # 1/4, 1, 0, 3/4, 1/2, ...: probabilities in [0, 1]
    BITS = (1, 0, 2, 0, 1)    # 0, 1, 0, 1, ...: certain outcomes
    ONES = (0, 1, 2, 0, 1)    # every element 1
    M = " [meta]"
    for dt in [F64, F32]:
        for sizes, lay in [([3, 4], "c"), ([3, 4], "t"), ([2, 3, 4], ("p", [2, 0, 1])),
                           ([5], "s"), ([], "c")]:
            case("tt::bernoulli", T(dt, sizes, lay, PROB), name="tt::bernoulli" + M)
            case("tt::bernoulli", T(dt, sizes, lay, BITS))
            case("tt::bernoulli.p", T(dt, sizes, lay), 0.5, name="tt::bernoulli.p" + M)
            case("tt::uniform_", T(dt, sizes, lay), -2.0, 3.0, name="tt::uniform_" + M)
            case("tt::normal_", T(dt, sizes, lay), 1.0, 2.0, name="tt::normal_" + M)
            case("tt::uniform_", T(dt, sizes, lay), 0.5, 0.5, after=[0])
            case("tt::normal_", T(dt, sizes, lay), -1.5, 0.0, after=[0])
    for dt in ALL:
        for p in [0.0, 1.0]:
            case("tt::bernoulli.p", T(dt, [3, 4], "t"), p)
        case("tt::bernoulli.p", T(dt, [2, 3], "c"), 0.25, name="tt::bernoulli.p" + M)
    # errors
    case("tt::bernoulli", T(I64, [3], "c", ONES))
    case("tt::bernoulli", T(BOOL, [3], "c"))
    case("tt::bernoulli", T(F32, [3], "c", (1, 0, 3, 0, 1)))   # 2 is not a probability
    case("tt::bernoulli.p", T(F32, [3], "c"), 1.5)
    case("tt::bernoulli.p", T(F32, [3], "c"), -0.1)
    case("tt::uniform_", T(I64, [3], "c"), 0.0, 1.0)
    case("tt::uniform_", T(F32, [3], "c"), 1.0, 0.0)
    case("tt::uniform_", T(F32, [3], "c"), 0.0, math.inf)
    case("tt::normal_", T(I32, [3], "c"), 0.0, 1.0)
    case("tt::normal_", T(F64, [3], "c"), 0.0, -1.0)
    # randint, randperm
    for dt in [None, torch.int32, torch.float32, torch.float64, torch.uint8]:
        case("tt::randint", 5, [2, 3], dt, name="tt::randint" + M)
        case("tt::randint.low", -3 if dt != torch.uint8 else 3, 7, [4], dt,
             name="tt::randint.low" + M)
        case("tt::randint", 1, [2, 3], dt)
        case("tt::randint.low", 4, 5, [3], dt)
        case("tt::randperm", 6, dt, name="tt::randperm" + M)
        case("tt::randperm", 1, dt)
        case("tt::randperm", 0, dt)
    case("tt::randint", 2, [2, 3], torch.bool, name="tt::randint" + M)
    case("tt::randint", 5, [0], None)
    case("tt::randint", 0, [2], None)
    case("tt::randint.low", 5, 5, [2], None)
    case("tt::randint.low", 5, 3, [2], None)
    case("tt::randint", 300, [2], torch.uint8)
    case("tt::randint.low", -3, 3, [2], torch.uint8)
    case("tt::randint", 5, [-1, 3], None)
    case("tt::randperm", -1, None)
    case("tt::randperm", 3, torch.bool)
    case("tt::randperm", 300, torch.uint8)
    # multinomial
    MN = "tt::multinomial"
    for dt in [F64, F32]:
        for sizes, lay in [([4], "c"), ([3, 4], "c"), ([4, 3], "t"), ([2, 5], "s")]:
            case(MN, T(dt, sizes, lay, ONES), 2, False, name=MN + M)
            case(MN, T(dt, sizes, lay, ONES), 6, True, name=MN + M)
        case(MN, T(dt, [3, 1], "c", ONES), 4, True)    # one category: certain
        case(MN, T(dt, [1], "c", ONES), 1, False)
        case(MN, T(dt, [0, 3], "c", ONES), 2, False, name=MN + M)
    case(MN, T(F32, [3], "c"), 2, False)               # a negative weight
    case(MN, T(F32, [3], "c", ONES), 4, False)
    case(MN, T(F32, [3], "c", ONES), 0, True)
    case(MN, T(F32, [3], "c", ONES), -1, True)
    case(MN, T(F64, [2, 3], "c", (0, 0, 1, 0, 1)), 1, True)   # rows summing to 0
    case(MN, T(F32, [2, 2, 2], "c", ONES), 1, True)
    case(MN, T(F32, [], "c", ONES), 1, True)
    case(MN, T(I64, [3], "c", ONES), 1, True)
    case(MN, T(F32, [3, 0], "c"), 1, False)
    case(MN, T(F32, [0], "c"), 1, True)
    case(MN, T(F32, [2, 0], "c"), 1, True)


# Issue 27's families, each with its own OPS entries and cases.

def ix(sizes, m, a=1, b=0, lay="c", dt="i64", c=0):
    """An index tensor: element k is (k*a + b) % m + c (in [c, m + c))."""
    return T(dt, sizes, lay, form=(a, b, m, c, 1))


def index_cases():
    """gather, scatter, index_select, index_copy (ops/indexing.c)."""
    OPS.update({
        "tt::gather": lambda s, d, i, sg=False: torch.gather(s, d, i, sparse_grad=sg),
        "tt::scatter.src": lambda s, d, i, src: torch.scatter(s, d, i, src),
        "tt::scatter.value": lambda s, d, i, v: torch.scatter(s, d, i, v),
        "tt::scatter_add": torch.scatter_add,
        "tt::scatter_reduce.two": lambda s, d, i, src, r, include_self=True:
            torch.scatter_reduce(s, d, i, src, r, include_self=include_self),
        "tt::index_select": torch.index_select,
        "tt::index_copy": torch.index_copy,
        "tt::index_copy_": lambda s, d, i, src: s.index_copy_(d, i, src),
        "tt::index_add": lambda s, d, i, src, alpha=1: torch.index_add(s, d, i, src, alpha=alpha),
        "tt::slice_scatter": lambda s, src, d=0, a=None, e=None, st=1:
            torch.slice_scatter(s, src, d, a, e, st),
        "tt::select_scatter": torch.select_scatter,
        "tt::diagonal": lambda s, o=0, d1=0, d2=1: torch.diagonal(s, o, d1, d2),
        "tt::diagonal_backward": torch.ops.aten.diagonal_backward,
    })
    G = "tt::gather"
    # ---- gather: every dtype, layouts, dims, gradients, the error paths
    for dt in ALL:
        case(G, T(dt, [3, 4], "c"), 1, ix([2, 5], 4, 3, 1), False)
    for lay in ["c", "t", "s"]:
        case(G, T(F64, [3, 4], lay, rg=True), 1, ix([3, 6], 4, 3, 1), False)
        case(G, T(F32, [4, 3], lay), 0, ix([5, 3], 4, 7, 2, lay="t" if lay == "s" else "c"),
             False)
    case(G, T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True), -2, ix([2, 5, 3], 3, 5, 1), False)
    case(G, T(F64, [2, 3, 4], "c", rg=True), 0, ix([4, 2, 4], 2, 3, 1), True,
         ref=lambda s, d, i, sg: torch.gather(s, d, i),
         note="sparse_grad is accepted; tt has no sparse tensors, its gradient is dense")
    case(G, T(F64, [], "c", rg=True), 0, ix([], 1), False)
    case(G, T(F64, [], "c"), 0, ix([3], 1), False)
    case(G, T(F64, [3, 4], "c"), 1, ix([0, 4], 4), False)
    case(G, T(F64, [3, 4], "c"), 1, ix([2, 3], 11, 7, 3), False, name=G + " [out of range]")
    case(G, T(F64, [3, 4], "c"), 0, ix([2, 3], 3, 7, 3, c=-1), False, name=G + " [negative]")
    case(G, T(F64, [3, 4], "c"), 1, ix([2, 3], 3, dt=I32), False)
    case(G, T(F64, [3, 4], "c"), 1, ix([3], 3), False)
    case(G, T(F64, [3, 4], "c"), 0, ix([2, 5], 3), False)
    case(G, T(F64, [3, 4], "c"), 2, ix([2, 3], 3), False)

    # ---- scatter.src and .value: no two positions of a line name one
    # element (PyTorch leaves the winner unspecified); dims 1 and 0
    S = "tt::scatter.src"
    for dt in ALL:
        case(S, T(dt, [3, 5], "c"), 1, ix([2, 4], 5, 1, 2), T(dt, [2, 4], "c", GRAD_FORM))
    for lay in ["c", "t", "s"]:
        # src no larger than the index where it needs a gradient: PyTorch
        # 1.13's engine refuses its own gradient otherwise (tests/
        # test_ops_index.c checks tt's, padded with zeros)
        case(S, T(F64, [3, 5], lay, rg=True), 1, ix([2, 4], 5, 1, 2),
             T(F64, [2, 4], lay, GRAD_FORM, rg=True))
        case(S, T(F64, [3, 4], lay, rg=True), 0, ix([3, 2], 3),
             T(F64, [3, 2], "c", GRAD_FORM, rg=True))
        case(S, T(F64, [3, 4], lay), 0, ix([3, 2], 3), T(F64, [4, 3], lay, GRAD_FORM))
    case(S, T(F64, [2, 3, 4], "c", rg=True), -1, ix([2, 3, 4], 4, 1, 1),
         T(F64, [2, 3, 4], ("p", [1, 2, 0]), GRAD_FORM, rg=True))
    case(S, T(F64, [3, 5], "c"), 1, ix([2, 4], 11, 7, 3), T(F64, [2, 4], "c"))
    case(S, T(F64, [3, 5], "c"), 1, ix([2, 4], 5, 1, 2), T(F32, [2, 4], "c"))
    case(S, T(F64, [3, 5], "c"), 1, ix([2, 4], 5, 1, 2), T(F64, [1, 4], "c"))
    case(S, T(F64, [1, 5], "c"), 1, ix([2, 4], 5, 1, 2), T(F64, [2, 4], "c"))
    case(S, T(F64, [3, 5], "c"), 1, ix([2, 4], 5, 1, 2, dt=I32), T(F64, [2, 4], "c"))
    V = "tt::scatter.value"
    for dt in ALL:
        case(V, T(dt, [3, 5], "c"), 1, ix([2, 4], 5, 1, 2), 2.5)
    case(V, T(F64, [3, 5], "t", rg=True), 0, ix([3, 2], 3), -1.25)
    case(V, T(I64, [3, 5], "c"), 0, ix([3, 2], 3), 7)
    case(V, T(F64, [3, 5], "c"), 0, ix([3, 2], 9, 5, 4), 7)

    # ---- scatter_add and scatter_reduce: repeated positions add up in
    # index order (as PyTorch's CPU kernel)
    SA = "tt::scatter_add"
    for dt in ALL:
        case(SA, T(dt, [3, 5], "c"), 0, ix([4, 3], 3, 7, 3), T(dt, [4, 3], "c", GRAD_FORM))
    for lay in ["c", "t", "s"]:
        case(SA, T(F64, [3, 5], lay, rg=True), 0, ix([4, 3], 3, 7, 3),
             T(F64, [4, 3], lay, GRAD_FORM, rg=True))
        case(SA, T(F32, [3, 5], lay), 1, ix([3, 7], 5, 3, 1), T(F32, [3, 7], lay, GRAD_FORM))
    case(SA, T(F64, [], "c", rg=True), 0, ix([], 1), T(F64, [], "c", GRAD_FORM, rg=True))
    case(SA, T(F64, [3, 5], "c"), 0, ix([4, 3], 3, 7, 3), T(F64, [4, 2], "c"))
    case(SA, T(F64, [3, 5], "c"), 0, ix([4, 3], 9, 7, 3), T(F64, [4, 3], "c"))
    R = "tt::scatter_reduce.two"
    for red in ["sum", "prod", "mean", "amax", "amin"]:
        for inc in [True, False]:
            case(R, T(F64, [3, 5], "c", rg=True), 0, ix([4, 3], 3, 7, 3),
                 T(F64, [4, 3], "c", GRAD_FORM, rg=True), red, inc)
            case(R, T(F64, [4, 5], "t", rg=True), 1, ix([3, 7], 5, 3, 1),
                 T(F64, [3, 7], "s", (3, 1, 7, -3, 2), rg=True), red, inc)
            for dt in [F32, I64, I32, U8, BOOL]:
                case(R, T(dt, [3, 5], "c"), 0, ix([4, 3], 3, 7, 3),
                     T(dt, [4, 3], "c", GRAD_FORM), red, inc)
    # zeros in a product: the derivative of the others' product
    case(R, T(F64, [3, 4], "c", (1, 0, 3, 0, 1), rg=True), 0, ix([4, 4], 3, 5, 1),
         T(F64, [4, 4], "c", (1, 0, 4, -1, 1), rg=True), "prod", True)
    case(R, T(F64, [3, 4], "c", (1, 0, 3, 0, 1), rg=True), 0, ix([4, 4], 3, 5, 1),
         T(F64, [4, 4], "c", (1, 0, 4, -1, 1), rg=True), "prod", False)
    # ties in amax/amin share the gradient
    case(R, T(F64, [3, 4], "c", (1, 0, 2, 0, 1), rg=True), 0, ix([4, 4], 3, 5, 1),
         T(F64, [4, 4], "c", (1, 0, 2, 0, 1), rg=True), "amax", True)
    case(R, T(F64, [3, 4], "c", (1, 0, 2, 0, 1), rg=True), 0, ix([4, 4], 3, 5, 1),
         T(F64, [4, 4], "c", (1, 0, 2, 0, 1), rg=True), "amin", False)
    case(R, T(F64, [3, 5], "c"), 0, ix([4, 3], 3, 7, 3), T(F64, [4, 3], "c"), "max", True)
    case(R, T(F64, [3, 5], "c"), 0, ix([4, 3], 7, 7, 3), T(F64, [4, 3], "c"), "sum", True)

    # ---- index_select: any dim, i64 or i32, 0-d or 1-d index
    IS = "tt::index_select"
    for dt in ALL:
        case(IS, T(dt, [3, 4], "c"), 1, ix([5], 4, 3, 1))
    for lay in ["c", "t", "s"]:
        case(IS, T(F64, [3, 4], lay, rg=True), 0, ix([5], 3, 2, 1))
        case(IS, T(F32, [3, 4, 2], ("p", [1, 2, 0]) if lay == "t" else lay), 1,
             ix([6], 4, 3, 1, dt=I32))
    case(IS, T(F64, [3, 4], "c", rg=True), -1, ix([], 4, 1, 2))
    case(IS, T(F64, [3, 4], "c", rg=True), 1, ix([7], 4, 1, 2, lay="s"))
    case(IS, T(F64, [3, 4], "c"), 1, ix([0], 4))
    case(IS, T(F64, [], "c", rg=True), 0, ix([1], 1))
    case(IS, T(F64, [], "c"), 0, ix([3], 1))
    case(IS, T(I32, [], "c"), -1, ix([], 1))
    case(IS, T(F64, [], "c"), 0, ix([2], 2))
    case(IS, T(F64, [3, 4], "c"), 1, ix([2, 2], 4))
    case(IS, T(F64, [3, 4], "c"), 1, T(F32, [2], "c", (1, 0, 4, 0, 1)))
    case(IS, T(F64, [3, 4], "c"), 1, ix([3], 9, 5, 4))
    case(IS, T(F64, [3, 4], "c"), 1, ix([3], 4, 5, 4, c=-2))

    # ---- index_copy (distinct positions) and index_add (repeated ones)
    IC = "tt::index_copy"
    for dt in ALL:
        case(IC, T(dt, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(dt, [4, 3], "c", GRAD_FORM))
    for lay in ["c", "t", "s"]:
        case(IC, T(F64, [4, 5], lay, rg=True), 1, ix([3], 5, 2, 1),
             T(F64, [4, 3], lay, GRAD_FORM, rg=True))
        case(IC, T(F64, [4, 5], lay, rg=True), 0, ix([2], 4, 3, 1),
             T(F64, [2, 5], "c", GRAD_FORM, rg=True))
    case(IC, T(F64, [4, 5], "c", rg=True), 0, ix([], 4, 1, 2),
         T(F64, [1, 5], "c", GRAD_FORM, rg=True))
    case(IC, T(F64, [5], "c", rg=True), 0, ix([], 5, 1, 3), T(F64, [], "c", GRAD_FORM, rg=True))
    case(IC, T(F64, [4, 5], "c"), 1, ix([3], 5, 2, 1, dt=I32), T(F64, [4, 3], "c"))
    case(IC, T(F64, [4, 5], "c"), 1, ix([3], 9, 2, 4), T(F64, [4, 3], "c"))
    case(IC, T(F64, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(F64, [3, 3], "c"))
    case(IC, T(F64, [4, 5], "c"), 1, ix([2], 5, 2, 1), T(F64, [4, 3], "c"))
    case(IC, T(F64, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(F32, [4, 3], "c"))
    case(IC, T(F64, [4, 5], "c"), 1, ix([1, 3], 5, 2, 1), T(F64, [4, 3], "c"))
    ICI = "tt::index_copy_"
    for dt in [F64, I32, BOOL]:
        case(ICI, T(dt, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(dt, [4, 3], "c", GRAD_FORM),
             after=[0])
    case(ICI, T(F32, [4, 5], "t"), 0, ix([2], 4, 3, 1), T(F32, [2, 5], "s", GRAD_FORM),
         after=[0])
    IA = "tt::index_add"
    for dt in ALL:
        case(IA, T(dt, [4, 5], "c"), 1, ix([6], 5, 2, 1), T(dt, [4, 6], "c", GRAD_FORM))
    for lay in ["c", "t", "s"]:
        case(IA, T(F64, [4, 5], lay, rg=True), 1, ix([6], 5, 2, 1),
             T(F64, [4, 6], lay, GRAD_FORM, rg=True), 2.5)
        case(IA, T(F32, [4, 5], lay), 0, ix([6], 4, 3, 1, dt=I32), T(F32, [6, 5], lay, GRAD_FORM))
    case(IA, T(I64, [4, 5], "c"), 0, ix([6], 4, 3, 1), T(I64, [6, 5], "c", GRAD_FORM), 3)
    case(IA, T(I64, [4, 5], "c"), 0, ix([6], 4, 3, 1), T(I64, [6, 5], "c", GRAD_FORM), 0.5)
    case(IA, T(F64, [4, 5], "c", rg=True), 0, ix([], 4, 1, 2),
         T(F64, [1, 5], "c", GRAD_FORM, rg=True), -1.5)
    case(IA, T(F64, [4, 5], "c"), 1, ix([3], 9, 2, 4), T(F64, [4, 3], "c"))
    case(IA, T(F64, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(F64, [3, 3], "c"))
    case(IA, T(F64, [4, 5], "c"), 1, ix([3], 5, 2, 1), T(F32, [4, 3], "c"))

    # ---- slice_scatter, select_scatter: self's layout kept
    SS = "tt::slice_scatter"
    for lay in ["c", "t", "s"]:
        case(SS, T(F64, [4, 5], lay, rg=True), T(F64, [4, 2], "c", GRAD_FORM, rg=True), 1, 1, 5, 2)
        case(SS, T(F64, [4, 5], lay, rg=True), T(F64, [2, 5], lay, GRAD_FORM, rg=True), 0, None,
             None, 3)
    for dt in ALL:
        case(SS, T(dt, [4, 5], "c"), T(dt, [1, 5], "c", GRAD_FORM), 0, -1, None, 1)
    case(SS, T(F64, [4, 5], "c"), T(F64, [4, 5], "c", GRAD_FORM))
    case(SS, T(F64, [4, 5], "c"), T(F32, [4, 2], "c", GRAD_FORM), 1, 1, 5, 2)
    case(SS, T(F64, [4, 5], "c"), T(F64, [4, 3], "c"), 1, 1, 5, 2)
    SL = "tt::select_scatter"
    for lay in ["c", "t", "s"]:
        case(SL, T(F64, [4, 5], lay, rg=True), T(F64, [5], "c", GRAD_FORM, rg=True), 0, 2)
        case(SL, T(F64, [4, 5], lay, rg=True), T(F64, [4], "c", GRAD_FORM, rg=True), 1, -1)
    for dt in ALL:
        case(SL, T(dt, [2, 3, 4], "c"), T(dt, [2, 4], "c", GRAD_FORM), 1, 1)
    case(SL, T(F64, [4, 5], "c"), T(F64, [4], "c"), 0, 2)
    case(SL, T(F64, [4, 5], "c"), T(F64, [5], "c"), 0, 4)

    # ---- diagonal: a view, any offset and pair of dims
    D = "tt::diagonal"
    for off in [0, 1, -1, 3, -3, 5, -4]:
        case(D, T(F64, [3, 4], "c", rg=True), off)
    for lay in ["t", "s"]:
        case(D, T(F64, [3, 4], lay, rg=True), 1, 1, 0)
    case(D, T(F64, [2, 3, 4], "c", rg=True), 1, 0, 2)
    case(D, T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True), -1, -1, -2)
    for dt in ALL:
        case(D, T(dt, [3, 3], "c"))
    case(D, T(F64, [3, 4], "c"), 0, 1, 1)
    case(D, T(F64, [3, 4], "c"), 0, 0, 2)
    case(D, T(F64, [4], "c"))
    case("tt::diagonal_backward", T(F64, [3], "c"), [3, 4], 1, 0, 1)
    case("tt::diagonal_backward", T(F64, [2, 3], "c"), [2, 4, 3], -1, 1, 2)


def refuse(what):
    """A ref= for a call tt refuses where PyTorch 1.13 answers."""
    def f(*args):
        raise RuntimeError(what + " is refused")
    return f


def masked_scatter_backward_ref(g, m, sizes):
    # PyTorch 2's masked_scatter_backward (1.13 has it inline in
    # derivatives.yaml): grad where mask holds, then zeros, viewed as sizes.
    sel = torch.masked_select(g, m)
    n = math.prod(sizes)
    if sel.numel() > n:
        raise RuntimeError("the mask has more set elements than the source")
    return torch.cat([sel, sel.new_zeros(n - sel.numel())]).view(sizes)


def embedding_bag_ref(w, i, o, sc=False, mode=0, sp=False, psw=None, last=False, pad=-1):
    # Result 0 is PyTorch's; results 1-3 are tt's documented ones (each
    # index's bag, each bag's count of non-padding indices, and max's rows
    # or else the counts again), which PyTorch's CPU kernel fills per code
    # path (its sum fast path: an empty offset2bag and zero bag_size).
    r = torch.ops.aten._embedding_bag(w, i, o, sc, mode, sp, psw, last, pad)
    n, ol, il = i.numel(), o.tolist(), i.tolist()
    bags = len(ol) - 1 if last else len(ol)
    o2b, bsz = [0] * n, [0] * bags
    for b in range(bags):
        for k in range(ol[b], ol[b + 1] if b + 1 < len(ol) else n):
            o2b[k] = b
            bsz[b] += il[k] != pad
    out = r[0]
    if sc and mode != 2:
        # PyTorch 1.13's backward divides by another index's count here
        # (indices [0, 0, 1] give row 1 half its gradient); tt divides each
        # row by its own count, as embedding does: recorded through
        # embedding(scale_grad_by_freq=True) and a sum per bag.
        e = torch.embedding(w, i, -1, True)
        keep = (i != pad).to(w.dtype) * (psw if psw is not None else 1)
        e = e * keep[:, None]
        rows = []
        for b in range(bags):
            lo, hi = ol[b], ol[b + 1] if b + 1 < len(ol) else n
            rows.append(e[lo:hi].sum(0) / (max(bsz[b], 1) if mode == 1 else 1))
        out = torch.stack(rows) if rows else w.new_zeros(0, w.shape[1])
    it = i.dtype  # PyTorch's: the aux results have the indices' dtype
    bt = torch.tensor(bsz, dtype=it)
    return (out, torch.tensor(o2b, dtype=it), bt, r[3] if mode == 2 else bt)


def adv_index_cases():
    """index.Tensor, index_put, masks, nonzero (ops/advanced_index.c)."""
    A = torch.ops.aten
    OPS.update({
        "tt::masked_fill.Scalar": lambda s, m, v: torch.masked_fill(s, m, v),
        "tt::masked_fill.Tensor": lambda s, m, v: torch.masked_fill(s, m, v),
        "tt::index.Tensor": lambda s, ix: A.index.Tensor(s, ix),
        "tt::index_put": lambda s, ix, v, acc=False: A.index_put(s, ix, v, acc),
        "tt::index_put_": lambda s, ix, v, acc=False: A.index_put_(s, ix, v, acc),
        "tt::nonzero": lambda s: torch.nonzero(s),
        "tt::masked_scatter": lambda s, m, src: A.masked_scatter(s, m, src),
        "tt::masked_scatter_backward": masked_scatter_backward_ref,
        "tt::masked_select": lambda s, m: torch.masked_select(s, m),
        "tt::embedding": lambda w, i, p=-1, sc=False, sp=False: torch.embedding(w, i, p, sc, sp),
        "tt::embedding_dense_backward": lambda g, i, n, p=-1, sc=False:
            A.embedding_dense_backward(g, i, n, p, sc),
    })

    def ix(n, sizes=(3,), neg=False, dup=False):
        """An i64 index tensor for a dim of size n: in [0, n), [-n, n) when
        neg, with repeats when dup (values then repeat anyway once the
        tensor has more than n elements)."""
        if neg:
            return T(I64, list(sizes), "c", (3, 1, 2 * n, -n, 1))
        return T(I64, list(sizes), "c", (1 if dup else 2, 1, n, 0, 1))

    mask23 = T(BOOL, [2, 3], "c")  # True, False, True, True, False, True
    # ---- masked_fill: dtypes, broadcasting both ways, layouts, gradients
    for dt in ALL:
        case("tt::masked_fill.Scalar", T(dt, [2, 3], "c"), mask23, 2.7)
        case("tt::masked_fill.Scalar", T(dt, [2, 3], "t"), T(BOOL, [3], "c"), -1)
        case("tt::masked_fill.Tensor", T(dt, [2, 3], "s"), mask23, T(F64, [], "c"))
    for lay in LAYOUTS:
        case("tt::masked_fill.Scalar", T(F32, [3, 4], lay), T(BOOL, [3, 4], "t"), -0.5)
    case("tt::masked_fill.Scalar", T(F64, [3], "c", rg=True), mask23, 1.5)
    case("tt::masked_fill.Scalar", T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True),
         T(BOOL, [3, 1], "c"), 0)
    case("tt::masked_fill.Scalar", T(F32, [2, 3], "c"), T(U8, [2, 3], "c", (1, 0, 2, 0, 1)), 4)
    case("tt::masked_fill.Scalar", T(F32, [2, 3], "c"), T(F32, [2, 3], "c"), 4,
         ref=refuse("masked_fill: a f32 mask"),
         note="PyTorch 1.13 takes a mask of any dtype and reads its bytes as bools; "
              "tt takes bool and uint8 masks only")
    for v in [-1, 255, 256, -0.5, 1e40]:
        case("tt::masked_fill.Scalar", T(U8, [2, 3], "c"), mask23, v)
        case("tt::masked_fill.Scalar", T(F32, [2, 3], "c"), mask23, v)
    case("tt::masked_fill.Scalar", T(F32, [2, 3], "c"), T(BOOL, [4], "c"), 4)
    case("tt::masked_fill.Tensor", T(F64, [2, 3], "t", rg=True), mask23, T(F64, [], "c", rg=True))
    case("tt::masked_fill.Tensor", T(F32, [2, 3], "c"), mask23, T(F32, [1], "c"))
    case("tt::masked_fill.Tensor", T(I32, [2, 3], "c"), mask23, T(F64, [], "c"))

    # ---- index.Tensor: every placement, broadcasting, masks, layouts
    forms = [
        [ix(2)],
        [None, ix(3)],
        [None, None, ix(4, (2, 3), dup=True)],
        [ix(2, (3,), neg=True), ix(3, (3,))],
        [None, ix(3, (2, 1)), ix(4, (3,))],          # adjacent: in place
        [ix(2, (2,)), None, ix(4, (2,), neg=True)],  # separated: first
        [ix(2, (4, 1)), None, ix(4, (1, 3))],
        [ix(2, (1,)), ix(3, (1,)), ix(4, (1,))],
        [ix(2, (0,))],
        [T(BOOL, [2], "c", (1, 1, 2, 0, 1))],
        [T(BOOL, [2, 3], "c")],
        [None, T(BOOL, [3, 4], "c")],
        [T(BOOL, [2], "c", (1, 1, 2, 0, 1)), None, ix(4, (1,))],
        [T(U8, [2, 3], "c", (1, 0, 2, 0, 1))],
        [None, T(BOOL, [3], "c", (1, 0, 2, 0, 1)), ix(4, (2,))],
    ]
    for f in forms:
        # A bool index's count is data: the compiled backward through it
        # needs a size the plan cannot bind (see test_ops_adv_index.c).
        masked = any(t is not None and t.dt in (BOOL, U8) for t in f)
        case("tt::index.Tensor", T(F64, [2, 3, 4], "c", rg=not masked), TL(*f))
    for lay in [("p", [2, 0, 1]), ("p", [1, 2, 0]), "t", "s", ("e", 1)]:
        for f in forms[1:7]:
            case("tt::index.Tensor", T(F32, [2, 3, 4], lay), TL(*f))
    for dt in ALL:
        case("tt::index.Tensor", T(dt, [5, 3], "t"), TL(ix(5, (2, 2), neg=True)))
        case("tt::index.Tensor", T(dt, [5, 3], "c"), TL(None, ix(3, (4,), dup=True)))
    case("tt::index.Tensor", T(F64, [6], "c", rg=True), TL(ix(6, (3, 4), dup=True)))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(T(I64, [2], "c", (1, 0, 5, 0, 1))))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(T(I64, [2], "c", (1, 0, 5, -5, 1))))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(ix(3), ix(4), ix(4)))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(ix(3, (2,)), ix(4, (3,))))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(T(I32, [2], "c", (1, 0, 3, 0, 1))))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(T(F32, [2], "c", (1, 0, 3, 0, 1))))
    case("tt::index.Tensor", T(F64, [3, 4], "c"), TL(T(BOOL, [2], "c")))

    # ---- index_put, index_put_: values broadcast, accumulate, masks
    puts = [
        ([ix(2)], [3, 4]),
        ([None, ix(3, (2,))], [4]),
        ([None, ix(3, (2, 1)), ix(4, (3,))], [2, 2, 3]),
        ([ix(2, (2,)), None, ix(4, (2,), neg=True)], [2, 1]),
        ([T(BOOL, [2, 3], "c")], [4]),
        ([None, T(BOOL, [3, 4], "c")], []),
    ]
    for f, vs in puts:
        for acc in [False, True]:
            case("tt::index_put", T(F64, [2, 3, 4], "c", rg=True), TL(*f),
                 T(F64, vs, "c", GRAD_FORM, rg=True), acc)
    for lay in ["t", ("p", [2, 0, 1]), "s"]:
        case("tt::index_put", T(F32, [2, 3, 4], lay), TL(None, ix(3, (2,))), T(F32, [4], "c"))
        case("tt::index_put_", T(F32, [2, 3, 4], lay), TL(None, ix(3, (2,))), T(F32, [4], "c"),
             after=[0])
    for dt in ALL:
        case("tt::index_put", T(dt, [5, 3], "c"), TL(ix(5, (2,))), T(dt, [3], "c"), False)
        case("tt::index_put_", T(dt, [5, 3], "c"), TL(ix(5, (2,))), T(dt, [3], "c"), False,
             after=[0])
    for dt in [F32, F64, I64, I32, U8]:
        # repeated rows (1, 0, 2, 1, 0, 2) add up
        case("tt::index_put", T(dt, [3, 2], "c"), TL(T(I64, [6], "c", (1, 1, 3, 0, 1))),
             T(dt, [6, 2], "c"), True)
        case("tt::index_put_", T(dt, [3, 2], "c"), TL(T(I64, [6], "c", (1, 1, 3, 0, 1))),
             T(dt, [2], "c"), True, after=[0])
    case("tt::index_put", T(F32, [3, 4], "c"), TL(ix(3, (2,))), T(F64, [4], "c"))
    case("tt::index_put", T(F32, [3, 4], "c"), TL(ix(3, (2,))), T(F32, [3], "c"))
    case("tt::index_put", T(F32, [3, 4], "c"), TL(T(I64, [2], "c", (1, 0, 5, 0, 1))),
         T(F32, [4], "c"))
    case("tt::index_put_", T(F32, [3, 4], "c"), TL(T(I64, [2], "c", (1, 0, 5, 0, 1))),
         T(F32, [4], "c"))

    # ---- masked_scatter, masked_select: dtypes, broadcasting, layouts
    for dt in ALL:
        case("tt::masked_scatter", T(dt, [2, 3], "t"), mask23, T(dt, [7], "c"))
        case("tt::masked_select", T(dt, [2, 3], "s"), mask23)
    for lay in LAYOUTS:
        case("tt::masked_scatter", T(F32, [3, 4], lay), T(BOOL, [4], "c"), T(F32, [3, 4], "t"))
        case("tt::masked_select", T(F32, [3, 4], lay), T(BOOL, [3, 1], "c"))
    case("tt::masked_scatter", T(F64, [2, 3], "c", rg=True), mask23,
         T(F64, [2, 4], "t", rg=True))
    case("tt::masked_scatter", T(F64, [3], "c", rg=True), mask23, T(F64, [5], "c", rg=True))
    case("tt::masked_scatter", T(F64, [2, 3], "c", rg=True), T(BOOL, [3], "c"),
         T(F64, [4], "c", rg=True))
    case("tt::masked_scatter", T(F32, [2, 3], "c"), T(U8, [2, 3], "c", (1, 0, 2, 0, 1)),
         T(F32, [6], "c"))
    case("tt::masked_scatter", T(F32, [2, 3], "c"), mask23, T(F32, [3], "c"))
    case("tt::masked_scatter", T(F32, [2, 3], "c"), mask23, T(F64, [6], "c"))
    case("tt::masked_scatter", T(F32, [2, 3], "c"), T(I64, [2, 3], "c"), T(F32, [6], "c"),
         ref=refuse("masked_scatter: an i64 mask"),
         note="PyTorch 1.13 takes a mask of any dtype and reads its bytes as bools; "
              "tt takes bool and uint8 masks only")
    case("tt::masked_scatter_backward", T(F64, [2, 3], "t"), mask23, [2, 4])
    case("tt::masked_scatter_backward", T(F64, [2, 3], "c"), T(BOOL, [3], "c"), [5])
    case("tt::masked_scatter_backward", T(F64, [2, 3], "c"), mask23, [3])
    case("tt::masked_select", T(F32, [3], "c"), mask23)
    case("tt::masked_select", T(F32, [2, 3], "c"), T(U8, [2, 3], "c", (1, 0, 2, 0, 1)))
    case("tt::masked_select", T(F32, [2, 3], "c"), T(F32, [2, 3], "c"))
    case("tt::masked_select", T(F32, [2, 3], "c"), T(BOOL, [4], "c"))

    # ---- embedding: padding_idx, scale_grad_by_freq, index dtypes, layouts
    rows = T(I64, [2, 4], "c", (3, 1, 5, 0, 1))  # 1, 4, 2, 0, 3, 1, 4, 2: repeats
    for p in [-1, 0, 2, 4]:
        for sc in [False, True]:
            case("tt::embedding", T(F64, [5, 3], "c", rg=True), rows, p, sc)
    case("tt::embedding", T(F64, [5, 3], "t", rg=True), T(I32, [7], "c", (3, 1, 5, 0, 1)), 1,
         True)
    case("tt::embedding", T(F32, [5, 3], "s", rg=True), T(I64, [3, 2], "t", (3, 1, 5, 0, 1)))
    case("tt::embedding", T(F64, [5, 3], "c", rg=True), T(I64, [], "c", (1, 2, 5, 0, 1)), 2)
    for dt in ALL:
        case("tt::embedding", T(dt, [5, 3], "c"), rows)
    case("tt::embedding", T(F32, [5, 3], "c"), T(I64, [2], "c", (1, 4, 6, 0, 1)))
    case("tt::embedding", T(F32, [5, 3], "c"), T(F32, [2], "c", (1, 0, 5, 0, 1)))
    case("tt::embedding", T(F32, [5, 3], "c"), rows, -1, False, True,
         ref=refuse("embedding: sparse=True"),
         note="tt has no sparse tensors: sparse=True is refused")
    for p in [-1, 1]:
        for sc in [False, True]:
            case("tt::embedding_dense_backward", T(F64, [2, 4, 3], "c"), rows, 5, p, sc)
    case("tt::embedding_dense_backward", T(F32, [7, 3], "t"), T(I32, [7], "c", (3, 1, 5, 0, 1)),
         6, 0, True)

    # ---- _embedding_bag: modes, empty bags, include_last_offset, padding
    BAG_NOTE = ("results 1-3 are tt's (offset2bag, bag_size, max_indices as documented); "
                "PyTorch 1.13 fills them per code path")
    bidx = T(I64, [6], "c", (3, 1, 5, 0, 1))       # 1, 4, 2, 0, 3, 1
    boff = T(I64, [3], "c", (7, 0, 8, 0, 2))       # 0, 3, 3: the middle bag is empty
    for mode in [0, 1, 2]:
        # include_last_offset: the last offset is the end (3 indices here);
        # PyTorch 1.13 corrupts its heap when it is not (tt refuses that)
        for last in [False, True]:
            case("tt::_embedding_bag", T(F64, [5, 3], "c", rg=True),
                 T(I64, [3], "c", (3, 1, 5, 0, 1)) if last else bidx, boff, False, mode,
                 False, None, last, -1, ref=embedding_bag_ref, note=BAG_NOTE)
        case("tt::_embedding_bag", T(F64, [5, 3], "c", rg=True), bidx, boff, True, mode,
             False, None, False, -1, ref=embedding_bag_ref,
             note=BAG_NOTE + "; with scale_grad_by_freq PyTorch 1.13 divides a row's gradient "
                  "by another index's count, tt by its own (as embedding)")
        case("tt::_embedding_bag", T(F32, [5, 3], "t"), T(I32, [6], "c", (3, 1, 5, 0, 1)),
             T(I32, [3], "c", (7, 0, 8, 0, 2)), False, mode, ref=embedding_bag_ref,
             note=BAG_NOTE)
    case("tt::_embedding_bag", T(F64, [5, 3], "c", rg=True), bidx, boff, False, 0, False,
         T(F64, [6], "c", rg=True), ref=embedding_bag_ref, note=BAG_NOTE)
    case("tt::_embedding_bag", T(F64, [5, 3], "c", rg=True), bidx, boff, False, 0, False,
         T(F64, [6], "c", rg=True), False, 4, ref=embedding_bag_ref, note=BAG_NOTE)
    case("tt::_embedding_bag", T(F64, [5, 3], "c", rg=True), bidx, boff, False, 2, False,
         None, False, 4, ref=embedding_bag_ref, note=BAG_NOTE)
    case("tt::_embedding_bag", T(F64, [5, 3], "c"), bidx, T(I64, [3], "c", (1, 1, 5, 0, 1)),
         ref=embedding_bag_ref)
    case("tt::_embedding_bag", T(F64, [5, 3], "c"), T(I64, [6], "c", (3, 1, 7, 0, 1)), boff,
         ref=embedding_bag_ref)
    case("tt::_embedding_bag", T(F64, [5, 3], "c"), bidx, boff, False, 1, False,
         T(F64, [6], "c"), ref=embedding_bag_ref)
    case("tt::_embedding_bag", T(I64, [5, 3], "c"), bidx, boff, ref=embedding_bag_ref)
    case("tt::_embedding_bag", T(F64, [5, 3], "c"), bidx, boff, False, 0, True,
         ref=refuse("_embedding_bag: sparse=True"),
         note="tt has no sparse tensors: sparse=True is refused")

    # ---- nonzero: every dtype, layouts, 0-dim, empty
    for dt in ALL:
        case("tt::nonzero", T(dt, [3, 4], "t"))
    case("tt::nonzero", T(F64, [2, 3, 4], ("p", [2, 0, 1])))
    case("tt::nonzero", T(F32, [5], "s"))
    case("tt::nonzero", T(F32, [], "c"))
    case("tt::nonzero", T(F32, [0, 3], "c"))
    case("tt::nonzero", T(F32, [2, 3], "c", (0, 0, 1, 0, 1)))


def sort_scan_cases():
    """sort, topk, max/min along a dim, scans (ops/sort_scan.c)."""
    OPS.update({
        "tt::sort": lambda s, d=-1, desc=False: torch.sort(s, d, desc),
        "tt::sort.stable": lambda s, stable=None, d=-1, desc=False:
            torch.sort(s, stable=stable, dim=d, descending=desc),
        "tt::topk": lambda s, k, d=-1, lg=True, so=True: torch.topk(s, k, d, lg, so),
        "tt::max.dim": lambda s, d, k=False: torch.max(s, d, k),
        "tt::min.dim": lambda s, d, k=False: torch.min(s, d, k),
        "tt::argmin": lambda s, d=None, k=False: torch.argmin(s, d, k),
        "tt::value_selecting_reduction_backward": lambda g, d, i, sz, k:
            torch.ops.aten.value_selecting_reduction_backward(g, d, i, sz, k),
    })
    # Distinct values (37 is invertible mod 101): an unstable sort and topk
    # then have one answer. Equal keys are for stable=True only; the suite
    # tests the rest (tests/test_ops_sort.c).
    DIST = (37, 11, 101, -50, 8)
    DIST_I = (37, 11, 101, -50, 1)
    DIST_U = (37, 11, 101, 0, 1)
    TIES = (5, 3, 7, 0, 1)

    def dist(dt):
        return DIST if dt in (F32, F64) else DIST_U if dt in (U8, BOOL) else DIST_I

    srt, stb, tk = "tt::sort", "tt::sort.stable", "tt::topk"
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t", "s"]:
            for d in [-1, 0]:
                for desc in [False, True]:
                    if dt != BOOL:
                        case(srt, T(dt, [3, 5], lay, dist(dt), rg=rg), d, desc)
                    case(stb, T(dt, [3, 5], lay, TIES, rg=rg), True, d, desc)
    case(srt, T(F64, [2, 3, 4], ("p", [2, 0, 1]), DIST, rg=True), 1, False)
    case(srt, T(F64, [2, 3, 4], ("p", [1, 2, 0]), DIST, rg=True), 2, True)
    case(srt, T(F64, [4, 3], ("e", 1), DIST), 0, False)
    case(srt, T(F64, [40], "c", DIST, rg=True), 0, True)
    case(srt, T(F64, [], "c", rg=True), -1, False)
    case(srt, T(F64, [0, 3], "c"), 0, False)
    case(srt, T(F64, [2, 3], "c"), 2, False)
    case(srt, T(F64, [2, 3], "c"), -3, False)
    case(stb, T(F64, [60], "c", TIES, rg=True), None, 0, False,
         ref=lambda s, st, d, desc: torch.sort(s, stable=True, dim=d, descending=desc),
         note="stable=None: PyTorch 1.13 fails an internal assert (later versions sort as "
              "with False); tt's sort is always stable, one of the orders False allows")
    case(stb, T(I64, [2, 30], "t", TIES), True, 1, True)
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t"]:
            for k, d in [(2, 1), (1, 0), (5, -1), (0, 1)]:
                for largest in [True, False]:
                    case(tk, T(dt, [3, 5], lay, dist(dt), rg=rg), k, d, largest, True)
    case(tk, T(F64, [2, 40], "s", DIST, rg=True), 3, 1, True, True)
    case(tk, T(F64, [2, 40], "c", DIST, rg=True), 3, 1, False, False,
         ref=lambda s, k, d, lg, so: torch.topk(s, k, d, lg, True),
         note="sorted=False leaves the order unspecified; tt returns the sorted one")
    case(tk, T(F64, [40, 2], "c", DIST, rg=True), 35, 0, True, True)
    case(tk, T(F64, [2, 3, 4], ("p", [2, 0, 1]), DIST, rg=True), 2, 1, True, True)
    case(tk, T(F64, [], "c", rg=True), 1, 0, True, True)
    case(tk, T(F64, [0, 3], "c"), 0, 0, True, True)
    case(tk, T(F64, [3, 4], "c"), 5, 1, True, True)
    case(tk, T(F64, [3, 4], "c"), -1, 1, True, True)
    case(tk, T(F64, [3, 4], "c"), 1, 2, True, True)
    for op in ["tt::max.dim", "tt::min.dim"]:
        for dt in ALL:
            rg = dt in (F32, F64)
            for d, k in [(1, False), (0, True), (-1, True)]:
                case(op, T(dt, [3, 4], "t", rg=rg), d, k)
                case(op, T(dt, [3, 4], "c", TIES, rg=rg), d, k)  # ties: the first
        case(op, T(F64, [2, 3, 4], ("p", [1, 2, 0]), rg=True), 1, False)
        case(op, T(F64, [2, 3, 4], "s", rg=True), 2, True)
        case(op, T(F64, [], "c", rg=True), 0, False)
        case(op, T(F64, [], "c", rg=True), -1, True)
        case(op, T(F64, [0, 3], "c"), 1, False)
        case(op, T(F64, [0, 3], "c"), 0, False)
        case(op, T(F64, [2, 3], "c"), 2, False)
    for dt in ALL:
        for d, k in [(None, False), (None, True), (1, True), (-2, False)]:
            case("tt::argmin", T(dt, [2, 3], "t", TIES), d, k)
    case("tt::argmin", T(F64, [], "c"), None, False)
    case("tt::argmin", T(F64, [0, 3], "c"), 1, False)
    case("tt::argmin", T(F64, [0, 3], "c"), None, False)
    OPS.update({
        "tt::kthvalue": lambda s, k, d=-1, kd=False: torch.kthvalue(s, k, d, kd),
        "tt::median.dim": lambda s, d, kd=False: torch.median(s, d, kd),
        "tt::median": torch.median,
    })
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t"]:
            for k, d, kd in [(1, 1, False), (3, 0, True), (5, -1, False)]:
                case("tt::kthvalue", T(dt, [3, 5], lay, dist(dt), rg=rg), k, d, kd)
            for d, kd in [(1, False), (0, True)]:
                case("tt::median.dim", T(dt, [3, 5], lay, dist(dt), rg=rg), d, kd)
                case("tt::median.dim", T(dt, [4, 6], lay, dist(dt), rg=rg), d, kd)
            case("tt::median", T(dt, [3, 5], lay, dist(dt), rg=rg))
            case("tt::median", T(dt, [2, 3], lay, dist(dt), rg=rg))
    case("tt::kthvalue", T(F64, [2, 3, 4], ("p", [1, 2, 0]), DIST, rg=True), 2, 1, False)
    case("tt::kthvalue", T(F64, [2, 40], "s", DIST, rg=True), 17, 1, True)
    case("tt::kthvalue", T(F64, [], "c", rg=True), 1, 0, False)
    case("tt::kthvalue", T(F64, [3, 4], "c"), 5, 1, False)
    case("tt::kthvalue", T(F64, [3, 4], "c"), 0, 1, False)
    case("tt::kthvalue", T(F64, [3, 4], "c"), 1, 2, False)
    case("tt::kthvalue", T(F64, [0, 4], "c"), 1, 0, False)
    case("tt::median.dim", T(F64, [], "c", rg=True), 0, False)
    case("tt::median.dim", T(F64, [0, 4], "c"), 0, False)
    case("tt::median.dim", T(F64, [0, 4], "c"), 1, False)
    case("tt::median.dim", T(F64, [3, 4], "c"), 2, False)
    case("tt::median", T(F64, [3, 4], "c", TIES, rg=True))  # the gradient is shared
    case("tt::median", T(F64, [], "c", rg=True))
    case("tt::median", T(F64, [0, 4], "c"))
    def no_median(s):
        raise RuntimeError("median of an empty integer tensor")

    case("tt::median", T(I64, [0, 4], "c"), ref=no_median,
         note="PyTorch 1.13 returns NaN converted to the integer dtype (INT64_MIN); tt refuses")
    vsr = "tt::value_selecting_reduction_backward"
    ii = (1, 0, 3, 0, 1)  # 0, 1, 2, 0, 1, 2, ...
    case(vsr, T(F64, [2, 3], "c"), 1, T(I64, [2, 3], "c", ii), [2, 3], True)
    case(vsr, T(F64, [2], "c"), 1, T(I64, [2], "c", ii), [2, 3], False)
    case(vsr, T(F32, [4], "c"), 0, T(I64, [4], "c", ii), [3, 4], False)

    # ---- scans and products
    OPS.update({
        "tt::cumsum": lambda s, d, dt=None: torch.cumsum(s, d, dtype=dt),
        "tt::cumprod": lambda s, d, dt=None: torch.cumprod(s, d, dtype=dt),
        "tt::logsumexp": lambda s, d, k=False: torch.logsumexp(s, d, k),
        "tt::prod": lambda s, dt=None: torch.prod(s, dtype=dt),
        "tt::prod.dim_int": lambda s, d, k=False, dt=None: torch.prod(s, d, k, dtype=dt),
    })
    # the default forms have zeros (cumprod's and prod's special gradients)
    for op in ["tt::cumsum", "tt::cumprod"]:
        for dt in ALL:
            rg = dt in (F32, F64)
            for lay in ["c", "t", "s"]:
                for d in [1, -2]:
                    case(op, T(dt, [3, 4], lay, rg=rg), d)
        case(op, T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True), 1)
        case(op, T(F64, [2, 3, 4], ("e", 1), rg=True), 1)
        case(op, T(F64, [], "c", rg=True), 0)
        case(op, T(F64, [0, 3], "c"), 0)
        case(op, T(F64, [30], "c", POS, rg=True), 0)
        case(op, T(F32, [3, 4], "c", rg=op == "tt::cumsum"), 1, torch.float64)
        case(op, T(F64, [3, 4], "c"), 0, torch.int32)
        case(op, T(I32, [3, 4], "c"), 0, torch.float32)
        case(op, T(U8, [3, 4], "c"), 1, torch.uint8)
        case(op, T(BOOL, [3, 4], "c"), 1, torch.bool)
        case(op, T(F64, [3, 4], "c"), 2)
    # cumprod_backward and prod_backward take the forward's result: the
    # closed forms cannot make it, so they are checked as cumprod's and
    # prod's gradients (rg=True) and in tests/test_ops_sort.c.
    lcse = "tt::logcumsumexp"
    OPS[lcse] = lambda s, d: torch.logcumsumexp(s, d)
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t", "s"]:
            for d in [1, -2]:
                case(lcse, T(dt, [3, 4], lay, rg=rg), d)
    case(lcse, T(F64, [2, 3, 4], ("p", [2, 0, 1]), rg=True), 1)
    case(lcse, T(F64, [], "c", rg=True), 0)
    case(lcse, T(F64, [0, 3], "c"), 0)
    case(lcse, T(F64, [30], "c", (7, 3, 11, 700, 1), rg=True), 0)  # exp would overflow
    case(lcse, T(F64, [3, 4], "c"), 2)
    lse = "tt::logsumexp"
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t", "s"]:
            for d, k in [([1], False), ([0], True), ([0, 1], False), ([-1, 0], True)]:
                case(lse, T(dt, [3, 4], lay, rg=rg), d, k)
    case(lse, T(F64, [2, 3, 4], ("p", [1, 2, 0]), rg=True), [2, 0], False)
    case(lse, T(F64, [], "c", rg=True), [0], False)
    case(lse, T(F64, [0, 3], "c"), [0], False)
    case(lse, T(F64, [3, 4], "c", (7, 3, 11, 1000, 1), rg=True), [1], False)  # large
    case(lse, T(F64, [3, 4], "c"), [1, 1], False)
    case(lse, T(F64, [3, 4], "c"), [2], False)
    for dt in ALL:
        rg = dt in (F32, F64)
        for lay in ["c", "t"]:
            case("tt::prod", T(dt, [2, 3], lay, rg=rg))
            for d, k in [(1, False), (0, True), (-1, True)]:
                case("tt::prod.dim_int", T(dt, [3, 4], lay, rg=rg), d, k)
                case("tt::prod.dim_int", T(dt, [3, 4], lay, POS, rg=rg), d, k)
    case("tt::prod", T(F64, [2, 3], "c", POS, rg=True))
    case("tt::prod", T(F64, [2, 3], "c", (3, 1, 5, 0, 1), rg=True))  # one zero
    case("tt::prod", T(F64, [], "c", rg=True))
    case("tt::prod", T(F64, [0, 3], "c"))
    case("tt::prod", T(I32, [2, 3], "c"), torch.float64)
    case("tt::prod", T(F64, [2, 3], "c", POS), torch.int64)
    case("tt::prod", T(BOOL, [2, 3], "c"), torch.bool)
    case("tt::prod.dim_int", T(F64, [2, 3, 4], "s", rg=True), 1, False)
    case("tt::prod.dim_int", T(F64, [], "c", rg=True), 0, False)
    case("tt::prod.dim_int", T(F64, [0, 3], "c"), 0, True)
    case("tt::prod.dim_int", T(F32, [3, 4], "c", rg=True), 1, False, torch.float64)
    case("tt::prod.dim_int", T(F64, [3, 4], "c"), 2, False)


def rms_norm_ref(x, ns, w=None, eps=None):
    """PyTorch 2.4's F.rms_norm written out (1.13 has none): x * rsqrt(mean
    of x^2 over the trailing dims ns + eps) * weight, eps None the dtype's
    epsilon."""
    nd = len(ns)
    if nd < 1 or nd > x.dim() or list(x.shape[x.dim() - nd:]) != list(ns):
        raise RuntimeError("rms_norm: normalized_shape is not input's trailing sizes")
    if w is not None and list(w.shape) != list(ns):
        raise RuntimeError("rms_norm: weight has the wrong shape")
    if not x.is_floating_point():
        raise RuntimeError("rms_norm: expects a floating point input")
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = tuple(range(-nd, 0))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * w if w is not None else y


def rms_norm_bw_ref(g, x, ns, w, eps):
    x = x.detach().requires_grad_(True)
    wv = (w.detach() if w is not None else torch.ones(ns, dtype=x.dtype)).requires_grad_(True)
    rms_norm_ref(x, ns, wv, eps).backward(g)
    return x.grad, wv.grad


def rope_ref(x, c, s, interleaved=False):
    """tt's rotary_embedding written with PyTorch ops: x * cos + rot(x) *
    sin, rot the pairs' quarter turn (rotate_half, or GGML's interleaved
    pairs). tt takes tables of exactly [T, D] (no broadcasting)."""
    if not x.is_floating_point() or x.dim() < 2 or x.shape[-1] % 2:
        raise RuntimeError("rotary_embedding: bad x")
    for t in (c, s):
        if list(t.shape) != list(x.shape[-2:]) or t.dtype != x.dtype:
            raise RuntimeError("rotary_embedding: tables must be [T, D] of x's dtype")
    if interleaved:
        rot = torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
    else:
        h = x.shape[-1] // 2
        rot = torch.cat((-x[..., h:], x[..., :h]), -1)
    return x * c + rot * s


def rope_bw_ref(g, c, s, interleaved=False):
    x = torch.zeros(g.shape, dtype=g.dtype, requires_grad=True)
    rope_ref(x, c, s, interleaved).backward(g)
    return x.grad


def transformer_cases():
    """rms_norm, silu, rotary_embedding (issue 27's transformer ops)."""
    OPS.update({
        "tt::rms_norm": rms_norm_ref,
        "tt::rms_norm_backward": rms_norm_bw_ref,
        "tt::silu": F.silu,
        "tt::silu_backward": lambda g, x: torch.ops.aten.silu_backward(g, x),
    })
    RN = "tt::rms_norm"
    for dt in [F64, F32]:
        rg = dt == F64
        for sizes, lay, ns in [([4, 3], "c", [3]), ([4, 3], "t", [3]), ([2, 3, 5], "s", [5]),
                               ([2, 3, 5], "c", [3, 5]), ([2, 3, 4], ("p", [2, 0, 1]), [4]),
                               ([7], "c", [7]), ([3, 37], "c", [37]), ([0, 4], "c", [4])]:
            case(RN, T(dt, sizes, lay, rg=rg), ns)
            case(RN, T(dt, sizes, lay, rg=rg), ns, T(dt, ns, "c", POS, rg=rg), 1e-5)
            case(RN, T(dt, sizes, lay, rg=rg), ns, None, None)
            case(RN, T(dt, sizes, lay, rg=rg), ns, T(dt, ns, "s", rg=rg), 0.0)
        for w in [None, T(dt, [5], "c", POS)]:
            case(RN + "_backward", T(dt, [2, 3, 5], "c", (5, 2, 9, -4, 8)),
                 T(dt, [2, 3, 5], "t"), [5], w, 1e-6,
                 ref=lambda *a: tuple(r.contiguous() for r in rms_norm_bw_ref(*a)),
                 note="tt's one-kernel rms_norm_backward returns contiguous gradients; "
                      "autograd through the composition follows input's layout")
            case(RN + "_backward", T(dt, [4, 5], "s", (5, 2, 9, -4, 8)),
                 T(dt, [4, 5], "c"), [5], w, None)
    # errors: normalized_shape not the trailing sizes, weight's shape, dtype
    case(RN, T(F32, [4, 3], "c"), [4])
    case(RN, T(F32, [4, 3], "c"), [2, 4, 3])
    case(RN, T(F32, [4, 3], "c"), [3], T(F32, [4], "c"), None)
    case(RN, T(I64, [4, 3], "c"), [3])
    # silu: f32 and f64, layouts, gradients; integers refused
    for dt in [F64, F32]:
        for sizes, lay in [([2, 3], "c"), ([3, 4], "t"), ([2, 5], "s"), ([3, 2], ("e", 0)),
                           ([], "c"), ([0, 3], "c")]:
            case("tt::silu", T(dt, sizes, lay, rg=dt == F64))
        case("tt::silu_backward", T(dt, [2, 3], "c", (5, 2, 9, -4, 8)), T(dt, [2, 3], "t"))
        case("tt::silu_backward", T(dt, [2, 3], "s", (5, 2, 9, -4, 8)), T(dt, [3], "c"))
    for dt in [I64, I32, U8, BOOL]:
        case("tt::silu", T(dt, [2, 3], "c"))
    # rotary_embedding: both pairings, [B, H, T, D] and [T, D], layouts,
    # gradients of x and of the tables
    OPS.update({"tt::rotary_embedding": rope_ref, "tt::rotary_embedding_backward": rope_bw_ref})
    RE = "tt::rotary_embedding"
    no_bc = "tt takes cos and sin of exactly [T, D]; PyTorch's composition would broadcast"
    for dt in [F64, F32]:
        rg = dt == F64
        for il in [False, True]:
            for sizes, lay in [([2, 3, 4, 6], "c"), ([2, 3, 4, 6], ("p", [0, 2, 1, 3])),
                               ([3, 8], "t"), ([1, 2, 5, 4], "s"), ([2, 0, 4], "c")]:
                TD = sizes[-2:]
                case(RE, T(dt, sizes, lay, rg=rg), T(dt, TD, "c", (3, 1, 7, -3, 4), rg=rg),
                     T(dt, TD, "t" if sizes[-1] == sizes[-2] else "c", (5, 2, 9, -4, 8), rg=rg),
                     il)
            case(RE + "_backward", T(dt, [2, 3, 4], "s", (5, 2, 9, -4, 8)),
                 T(dt, [3, 4], "c", (3, 1, 7, -3, 4)), T(dt, [3, 4], "c"), il)
        case(RE, T(dt, [2, 4], "c", rg=rg), T(dt, [2, 4], "c"), T(dt, [2, 4], "c"))
    case(RE, T(F32, [2, 3, 5], "c"), T(F32, [3, 5], "c"), T(F32, [3, 5], "c"), False)
    case(RE, T(F32, [6], "c"), T(F32, [1, 6], "c"), T(F32, [1, 6], "c"), False)
    case(RE, T(F32, [2, 3, 4], "c"), T(F32, [1, 4], "c"), T(F32, [3, 4], "c"), False,
         note=no_bc)
    case(RE, T(F32, [2, 3, 4], "c"), T(F32, [3, 4], "c"), T(F32, [3, 2], "c"), False)
    case(RE, T(F32, [2, 3, 4], "c"), T(F64, [3, 4], "c"), T(F32, [3, 4], "c"), False,
         note="tt wants the tables in x's dtype; PyTorch's composition would promote")
    case(RE, T(I64, [2, 3, 4], "c"), T(I64, [3, 4], "c"), T(I64, [3, 4], "c"), False)


def pointwise_shape_cases():
    """logical, bitwise, maximum/minimum, statistics, shape ops."""
    OPS.update({
        "tt::maximum": torch.maximum, "tt::minimum": torch.minimum,
        "tt::isnan": torch.isnan, "tt::isinf": torch.isinf,
        "tt::logical_and": torch.logical_and, "tt::logical_or": torch.logical_or,
        "tt::logical_xor": torch.logical_xor, "tt::logical_not": torch.logical_not,
        "tt::bitwise_and.Tensor": torch.bitwise_and, "tt::bitwise_and.Scalar": torch.bitwise_and,
        "tt::bitwise_or.Tensor": torch.bitwise_or, "tt::bitwise_or.Scalar": torch.bitwise_or,
        "tt::bitwise_xor.Tensor": torch.bitwise_xor, "tt::bitwise_xor.Scalar": torch.bitwise_xor,
        "tt::bitwise_not": torch.bitwise_not,
    })
    # maximum/minimum: every dtype pair (promotion), broadcasting, layouts,
    # gradients with ties (the default forms repeat values across operands).
    for op in ["tt::maximum", "tt::minimum"]:
        for da in ALL:
            for db in ALL:
                rg = da in (F32, F64) and db in (F32, F64)
                case(op, T(da, [2, 3], "c", rg=rg), T(db, [3], "c", rg=rg))
        for la, lb in [("t", "c"), ("s", "t"), (("e", 0), "s"), ("c", ("p", [1, 0]))]:
            case(op, T(F64, [3, 3], la, rg=True), T(F64, [3, 3], lb, (3, 1, 7, -3, 2), rg=True))
        case(op, T(F64, [2, 1, 3], "t", rg=True), T(F64, [4, 1], "c", rg=True))
        case(op, T(F64, [], "c", rg=True), T(F64, [2, 2], "c", rg=True))
        case(op, T(F32, [2, 3], "c"), T(F32, [4], "c"))
        case(op, T(F64, [0, 3], "c"), T(F64, [3], "c"))
    # predicates and logical ops: any dtype in, bool out
    for dt in ALL:
        for op in ["tt::isnan", "tt::isinf", "tt::logical_not"]:
            case(op, T(dt, [2, 3], "t"))
        case("tt::bitwise_not", T(dt, [2, 3], "s"))
    case("tt::logical_not", T(F64, [2, 3], "c", rg=True))
    case("tt::isnan", T(F64, [2, 3], ("p", [1, 0]), rg=True))
    for op in ["tt::logical_and", "tt::logical_or", "tt::logical_xor"]:
        for da in ALL:
            for db in ALL:
                case(op, T(da, [2, 3], "c"), T(db, [3], "c"))
        case(op, T(F32, [3, 3], "t"), T(I64, [3, 3], "s"))
        case(op, T(F32, [2, 3], "c"), T(F32, [4], "c"))
    # bitwise: integers and bool; floats refused (either side, Scalar too)
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        top, sop = "tt::%s.Tensor" % name, "tt::%s.Scalar" % name
        for da in ALL:
            for db in ALL:
                case(top, T(da, [2, 3], "c"), T(db, [3], "c"))
        case(top, T(I64, [3, 3], "t"), T(I32, [3, 3], "s"))
        case(top, T(I32, [2, 3], "c"), T(I32, [4], "c"))
        for dt in ALL:
            for sv in [6, -3, True, 2.5]:
                case(sop, T(dt, [2, 3], "t"), sv)
    # var/std.correction: dims None, one, several, negative, keepdim,
    # corrections 0, 1, 2 and one past n (inf / NaN), layouts, gradients
    OPS.update({
        "tt::var.correction": lambda s, d=None, correction=None, keepdim=False:
            torch.var(s, d, correction=correction, keepdim=keepdim),
        "tt::std.correction": lambda s, d=None, correction=None, keepdim=False:
            torch.std(s, d, correction=correction, keepdim=keepdim),
        "tt::any": torch.any, "tt::all": torch.all,
        "tt::any.dim": lambda s, d, k=False: torch.any(s, d, k),
        "tt::all.dim": lambda s, d, k=False: torch.all(s, d, k),
    })
    for op in ["tt::var.correction", "tt::std.correction"]:
        for dims in [None, [1], [0, 2], [-1], [2, 0]]:
            for corr in [None, 0, 2]:
                for keep in [False, True]:
                    case(op, T(F64, [3, 4, 5], "c", rg=True), dims, corr, keep)
        for lay in ["t", "s", ("p", [2, 0, 1])]:
            case(op, T(F32, [3, 4, 5], lay), [1], 1, False)
            case(op, T(F64, [3, 4, 5], lay, rg=True), [0, 1], 1, True)
        case(op, T(F64, [4, 3], "c"), [0], 4, False)
        case(op, T(F64, [4, 3], "c"), [0], 5, False)
        case(op, T(F64, [1, 3], "c"), [0], 1, False)
        case(op, T(F64, [0, 3], "c"), [0], 1, False)
        case(op, T(F64, [0, 3], "c"), [1], 1, False)
        case(op, T(F64, [], "c", rg=True), None, 0, False)
        case(op, T(F32, [2, 3], "c"), [0, 0], 1, False)
        case(op, T(F32, [2, 3], "c"), [2], 1, False)
        for dt in [I64, I32, U8, BOOL]:
            case(op, T(dt, [2, 3], "c"), [1], 1, False)
    for dt in ALL:
        for lay in ["c", "t", "s"]:
            case("tt::any", T(dt, [3, 4], lay))
            case("tt::all", T(dt, [3, 4], lay))
            for d in [0, -1]:
                for k in [False, True]:
                    case("tt::any.dim", T(dt, [3, 4], lay), d, k)
                    case("tt::all.dim", T(dt, [3, 4], lay), d, k)
    for dt in [F32, U8, BOOL]:
        for sz, d in [([0, 3], 0), ([0, 3], 1), ([], 0)]:
            case("tt::any.dim", T(dt, sz, "c"), d, False)
            case("tt::all.dim", T(dt, sz, "c"), d, True)
        case("tt::any", T(dt, [0], "c"))
        case("tt::all", T(dt, [0], "c"))
    # all-ones and all-zeros rows, so both answers appear
    case("tt::all.dim", T(F32, [3, 4], "c", (0, 1, 5, 0, 1)), 1, False)
    case("tt::any.dim", T(F32, [3, 4], "c", (0, 0, 5, 0, 1)), 1, False)
    case("tt::all", T(I64, [3, 4], "c", (0, 1, 5, 0, 1)))
    case("tt::any.dim", T(F32, [3, 4], "c"), 2, False)
    # shape ops: every dtype (data movement), layouts, argument forms,
    # errors, gradients
    OPS.update({
        "tt::repeat": lambda s, r: s.repeat(r),
        "tt::flip": torch.flip,
        "tt::roll": lambda s, sh, d=[]: torch.roll(s, sh, d),
        "tt::tril": lambda s, d=0: torch.tril(s, d),
        "tt::triu": lambda s, d=0: torch.triu(s, d),
        "tt::full_like": lambda s, v, dtype=None: torch.full_like(s, v, dtype=dtype),
        "tt::scalar_tensor": lambda v, dtype=None: torch.scalar_tensor(v, dtype=dtype),
    })
    for dt in ALL:
        case("tt::repeat", T(dt, [2, 3], "t"), [2, 1, 2])
        case("tt::flip", T(dt, [2, 3], "s"), [0, 1])
        case("tt::roll", T(dt, [2, 3], "t"), [1], [1])
        case("tt::tril", T(dt, [3, 4], "t"))
        case("tt::triu", T(dt, [3, 4], "s"), 1)
        case("tt::full_like", T(dt, [2, 3], "c"), 2)
        case("tt::scalar_tensor", 3, DT[dt])
    for lay in ["c", "t", "s", ("p", [2, 0, 1]), ("e", 1)]:
        case("tt::repeat", T(F64, [2, 3, 4], lay, rg=True), [1, 2, 1, 3])
        case("tt::flip", T(F64, [2, 3, 4], lay, rg=True), [0, -1])
        case("tt::roll", T(F64, [2, 3, 4], lay, rg=True), [1, -2], [2, 0])
        case("tt::roll", T(F64, [2, 3, 4], lay, rg=True), [5])
        case("tt::tril", T(F64, [2, 3, 4], lay, rg=True), -1)
        case("tt::triu", T(F64, [2, 3, 4], lay, rg=True), 2)
        case("tt::full_like", T(F32, [2, 3, 4], lay), 1.5)
    for r in [[2, 3], [1, 1], [0, 2], [3, 1, 2, 1], [2]]:
        case("tt::repeat", T(F64, [2, 3], "c", rg=True), r)
    case("tt::repeat", T(F64, [], "c", rg=True), [2, 3])
    case("tt::repeat", T(F64, [], "c"), [])
    case("tt::repeat", T(F64, [2], "c"), [-1])
    for d in [[], [1], [0, 0], [2]]:
        case("tt::flip", T(F64, [2, 3], "c", rg=True), d)
    case("tt::flip", T(F64, [], "c"), [0])
    for sh, d in [([7], [0]), ([-4], [1]), ([1, 1], [0, 0]), ([1], [0, 1]), ([1, 2], []),
                  ([0], [1]), ([3], [2])]:
        case("tt::roll", T(F64, [3, 4], "c", rg=True), sh, d)
    case("tt::roll", T(F64, [0, 4], "c"), [1], [0])
    case("tt::roll", T(F64, [], "c"), [1])
    for d in [0, 1, -1, 3, -3, 10, -10]:
        case("tt::tril", T(F64, [3, 4], "c", rg=True), d)
        case("tt::triu", T(F64, [4, 3], "c", rg=True), d)
    case("tt::tril", T(F64, [3], "c"))
    case("tt::triu", T(F64, [0, 3], "c"))
    for v in [True, -3, 2.5]:
        case("tt::full_like", T(I32, [2, 3], "t"), v)
    case("tt::full_like", T(I64, [2, 3], "c"), 2.5, torch.float64)
    case("tt::full_like", T(F32, [2, 3], "c", rg=True), 1)
    case("tt::scalar_tensor", 2.5)
    case("tt::scalar_tensor", True, torch.bool)


# The convolutional-network families (issue 26), each with its own OPS
# entries and cases.

def conv_backward_ref(g, x, w, bs, s, p, d, tr, op, groups, mask):
    r = torch.ops.aten.convolution_backward(g, x, w, bs, s, p, d, tr, op, groups, mask)
    # a masked-out result: PyTorch's undefined tensor, tt's empty [0]
    return tuple(t if t is not None else torch.empty(0, dtype=x.dtype) for t in r)


def conv_cases():
    """convolution, convolution_backward, im2col, col2im."""
    A = torch.ops.aten
    OPS.update({
        "tt::convolution": lambda x, w, b, s, p, d, tr, op, g: A.convolution(
            x, w, b, s, p, d, tr, op, g),
        "tt::im2col": lambda x, k, d, p, s: A.im2col(x, k, d, p, s),
        "tt::col2im": lambda x, o, k, d, p, s: A.col2im(x, o, k, d, p, s),
    })
    conv = "tt::convolution"
    CL = ("p", [0, 3, 1, 2])  # channels_last strides of an NCHW tensor
    # (input, weight, bias?, stride, padding, dilation, transposed,
    #  output_padding, groups)
    shapes = [
        ([2, 3, 7, 6], [4, 3, 3, 3], True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        ([2, 3, 9, 8], [5, 3, 3, 2], True, [2, 3], [1, 2], [1, 1], False, [0, 0], 1),
        ([1, 2, 9, 9], [3, 2, 3, 3], False, [1, 2], [2, 0], [2, 3], False, [0, 0], 1),
        ([2, 4, 6, 5], [6, 2, 3, 3], True, [1, 1], [1, 1], [1, 1], False, [0, 0], 2),
        ([2, 4, 6, 7], [4, 1, 3, 3], True, [2, 1], [1, 1], [1, 1], False, [0, 0], 4),
        ([3, 5, 4, 3], [4, 5, 1, 1], True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        ([2, 3, 11], [4, 3, 3], True, [2], [1], [1], False, [0], 1),
        ([2, 4, 9], [2, 2, 2], False, [1], [0], [3], False, [0], 2),
        ([2, 3, 4, 5], [3, 4, 3, 3], True, [1, 1], [0, 0], [1, 1], True, [0, 0], 1),
        ([2, 3, 4, 3], [3, 2, 3, 2], True, [2, 3], [1, 0], [1, 1], True, [1, 2], 1),
        ([1, 4, 3, 4], [4, 3, 2, 3], False, [2, 1], [0, 1], [2, 1], True, [1, 0], 2),
        ([2, 3, 5], [3, 2, 4], True, [3], [1], [1], True, [2], 1),
    ]
    for xs, ws, bias, st, pad, dil, tr, op, g in shapes:
        oc = ws[1] * g if tr else ws[0]
        for dt in [F64, F32]:
            rg = dt == F64
            case(conv, T(dt, xs, "c", rg=rg), T(dt, ws, "c", rg=rg),
                 T(dt, [oc], "c", rg=rg) if bias else None, st, pad, dil, tr, op, g,
                 tol=1e-4 if dt == F32 else None)
    # one value for every spatial dim, as PyTorch's expand_param_if_needed
    case(conv, T(F64, [2, 3, 7, 6], "c", rg=True), T(F64, [4, 3, 3, 2], "c", rg=True),
         T(F64, [4], "c", rg=True), [2], [1], [1], False, [0], 1)
    case(conv, T(F64, [1, 4, 5, 5], "c", rg=True), T(F64, [4, 2, 2, 2], "c", rg=True), None,
         [2], [0], [2], True, [1], 2)
    # non-contiguous inputs and weights; channels_last in, channels_last out
    for lay in ["t", "s", CL]:
        for dt in [F64, F32]:
            case(conv, T(dt, [2, 3, 6, 5], lay, rg=dt == F64), T(dt, [4, 3, 3, 2], "c"),
                 T(dt, [4], "c"), [1, 1], [1, 0], [1, 1], False, [0, 0], 1,
                 tol=1e-4 if dt == F32 else None)
    case(conv, T(F64, [2, 3, 6, 5], "c", rg=True), T(F64, [4, 3, 3, 2], CL, rg=True), None,
         [2, 1], [0, 0], [1, 1], False, [0, 0], 1)
    case(conv, T(F32, [2, 3, 4, 5], CL), T(F32, [3, 4, 3, 3], "c"), None, [1, 1], [0, 0],
         [1, 1], True, [0, 0], 1, tol=1e-4)
    # PyTorch's refusals
    x, w = T(F32, [2, 3, 8, 8], "c"), T(F32, [4, 3, 3, 3], "c")
    z2, o2 = [0, 0], [1, 1]
    case(conv, x, T(F32, [4, 2, 3, 3], "c"), None, o2, z2, o2, False, z2, 1)
    case(conv, x, w, None, o2, z2, o2, False, z2, 2)
    case(conv, x, T(F32, [5, 3, 3, 3], "c"), None, o2, z2, o2, False, z2, 2)
    case(conv, T(F32, [2, 3, 2, 2], "c"), w, None, o2, z2, o2, False, z2, 1)
    case(conv, x, w, T(F32, [3], "c"), o2, z2, o2, False, z2, 1)
    case(conv, x, w, None, [0, 1], z2, o2, False, z2, 1)
    case(conv, x, w, None, o2, [-1, 0], o2, False, z2, 1)
    case(conv, x, w, None, o2, z2, [0, 1], False, z2, 1)
    case(conv, x, w, None, o2, z2, o2, False, z2, 0)
    case(conv, x, w, None, [1, 1, 1], z2, o2, False, z2, 1)
    case(conv, x, T(F32, [3, 4, 3, 3], "c"), None, o2, z2, o2, True, [2, 2], 1)
    case(conv, T(F32, [2, 4, 8, 8], "c"), T(F32, [3, 4, 3, 3], "c"), None, o2, z2, o2, True,
         z2, 1)
    case(conv, x, T(F32, [3, 4, 3, 3], "c"), T(F32, [3], "c"), o2, z2, o2, True, z2, 1)
    case(conv, T(F64, [2, 3, 8, 8], "c"), w, None, o2, z2, o2, False, z2, 1)
    case(conv, x, w, T(F64, [4], "c"), o2, z2, o2, False, z2, 1)
    case(conv, T(F32, [3, 8, 8], "c"), w, None, o2, z2, o2, False, z2, 1)
    case(conv, x, T(F32, [4, 3], "c"), None, o2, z2, o2, False, z2, 1)

    def no_integer_conv(*a):
        raise RuntimeError("tt refuses integer convolution")
    case(conv, T(I64, [2, 3, 5, 5], "c"), T(I64, [4, 3, 3, 3], "c"), None, o2, z2, o2,
         False, z2, 1, ref=no_integer_conv,
         note="PyTorch 1.13's slow CPU convolution accepts int64; tensortrace convolves "
              "f32 and f64 only (oneDNN and BLAS have no integer GEMM), as PyTorch's "
              "oneDNN and CUDA paths")

    # convolution_backward: every mask; a None bias_sizes
    OPS["tt::convolution_backward"] = conv_backward_ref
    note = ("a masked-out result is PyTorch's undefined tensor (None); a tt op's Tensor "
            "result cannot be None, so it is an empty [0] tensor")
    cb = "tt::convolution_backward"
    for mask in [[True, True, True], [True, False, False], [False, True, True]]:
        case(cb, T(F64, [2, 5, 5, 4], "c"), T(F64, [2, 3, 9, 8], "c"),
             T(F64, [5, 3, 3, 2], "c"), [5], [2, 3], [1, 2], [1, 1], False, [0, 0], 1, mask,
             note=None if all(mask) else note)
        case(cb, T(F32, [2, 4, 10, 12], "c"), T(F32, [2, 3, 4, 5], "c"),
             T(F32, [3, 4, 3, 3], "c"), [4], [2, 2], [0, 0], [1, 1], True, [1, 1], 1, mask,
             tol=1e-4, note=None if all(mask) else note)
    case(cb, T(F32, [2, 6, 6, 5], "c"), T(F32, [2, 4, 6, 5], "c"), T(F32, [6, 2, 3, 3], "c"),
         None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2, [True, True, False], tol=1e-4,
         note=note)
    case(cb, T(F32, [2, 5, 5, 4], "c"), T(F32, [2, 3, 9, 8], "c"), T(F32, [5, 3, 3, 2], "c"),
         [5], [2, 3], [1, 2], [1, 1], False, [0, 0], 1, [True, True, True])

    # gradients in the input's layout: channels_last in, channels_last out
    case(cb, T(F32, [2, 5, 5, 4], CL), T(F32, [2, 3, 9, 8], CL), T(F32, [5, 3, 3, 2], "c"),
         [5], [2, 3], [1, 2], [1, 1], False, [0, 0], 1, [True, True, True], tol=1e-4)
    case(cb, T(F64, [2, 5, 5, 4], "c"), T(F64, [2, 3, 9, 8], "c"), T(F64, [5, 3, 3, 2], CL),
         None, [2, 3], [1, 2], [1, 1], False, [0, 0], 1, [True, True, False], note=note)
    case(cb, T(F32, [2, 4, 10, 12], CL), T(F32, [2, 3, 4, 5], CL), T(F32, [3, 4, 3, 3], "c"),
         [4], [2, 2], [0, 0], [1, 1], True, [1, 1], 1, [True, True, True], tol=1e-4)

    # im2col and col2im (F.unfold, F.fold)
    k, d, p, s = [2, 3], [1, 2], [1, 0], [2, 1]
    for dt in [F64, F32]:
        rg = dt == F64
        case("tt::im2col", T(dt, [2, 3, 6, 7], "c", rg=rg), k, d, p, s)
        case("tt::im2col", T(dt, [3, 5, 4], "t", rg=rg), [2, 2], [1, 1], [0, 1], [1, 2])
        case("tt::col2im", T(dt, [2, 18, 12], "c", rg=rg), [6, 7], k, d, p, s)
        case("tt::col2im", T(dt, [12, 9], "s", rg=rg), [4, 5], [2, 2], [1, 1], [0, 1], [1, 2])
        case("tt::col2im", T(dt, [2, 18, 8], "c"), [6, 7], k, d, p, s)
    case("tt::im2col", T(F32, [4, 3], "c"), k, d, p, s)
    case("tt::im2col", T(F32, [1, 3, 2, 2], "c"), [3, 3], [1, 1], [0, 0], [1, 1])
    case("tt::im2col", T(F32, [1, 3, 4, 4], "c"), [2, 2], [1, 1], [0, 0], [0, 1])
    case("tt::col2im", T(F32, [1, 4, 3], "c"), [4, 4], [3, 3], [1, 1], [0, 0], [1, 1])
    case("tt::col2im", T(F32, [1, 4, 3], "c"), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1])
    case("tt::col2im", T(F32, [4, 3], "c"), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1])


def pool3d_cases():
    """3-d pooling (ops/pool3d.c): values, layouts (results contiguous even
    for channels_last_3d, as 1.13's), gradients, errors."""
    A = torch.ops.aten
    OPS.update({
        "tt::avg_pool3d": lambda s, k, st=[], p=0, c=False, cip=True, dv=None:
            A.avg_pool3d(s, k, st, p, c, cip, dv),
        "tt::avg_pool3d_backward": A.avg_pool3d_backward,
        "tt::max_pool3d_with_indices": lambda s, k, st=[], p=0, d=1, c=False:
            A.max_pool3d_with_indices(s, k, st, p, d, c),
        "tt::max_pool3d_with_indices_backward": A.max_pool3d_with_indices_backward,
        "tt::_adaptive_avg_pool3d": A._adaptive_avg_pool3d,
        "tt::_adaptive_avg_pool3d_backward": A._adaptive_avg_pool3d_backward,
    })
    CL3 = ("p", [0, 2, 3, 4, 1])  # channels_last_3d
    ap = "tt::avg_pool3d"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", "s", CL3]:
            case(ap, T(dt, [2, 3, 4, 5, 6], lay, rg=rg), [2, 2, 2])
            case(ap, T(dt, [2, 3, 4, 5, 6], lay, rg=rg), [3, 2, 3], [2, 1, 2], [1, 1, 1], True,
                 False)
        case(ap, T(dt, [3, 4, 5, 5], "s", rg=rg), [3, 3, 3], [2, 2, 2], [1, 0, 1], False, True)
        case(ap, T(dt, [2, 2, 5, 5, 5], "c", rg=rg), [3, 3, 3], [2, 2, 2], [1, 1, 1], True, True)
        case(ap, T(dt, [2, 2, 4, 5, 6], "c", rg=rg), [2, 3, 2], [1, 2, 1], [1, 1, 1], False, True,
             5)
        case(ap, T(dt, [2, 2, 4, 4, 4], "c", rg=rg), 2, 1, 1, True, True, -3)
        case(ap, T(dt, [0, 2, 4, 4, 4], "c"), [2, 2, 2])
    case(ap, T(I64, [1, 2, 4, 5, 5], "c"), [2, 2, 2])
    case(ap, T(I64, [1, 2, 4, 5, 5], "c"), [3, 3, 3], [2, 2, 2], [1, 1, 1], True, False)
    case(ap, T(I32, [1, 2, 4, 5, 5], "c"), [2, 2, 2])
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [], 0, False, True, 0)
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 1, 1], [0, 2, 0])
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 1, 1], [0, -1, 0])
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 0, 2], [1, 1, 1])
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 0, 1])
    case(ap, T(F32, [1, 1, 2, 2, 2], "c"), [3, 3, 3], [1, 1, 1], [1, 1, 1])
    case(ap, T(F32, [5, 5, 5], "c"), [2, 2, 2])
    case(ap, T(F32, [1, 0, 4, 4, 4], "c"), [2, 2, 2])
    case(ap, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2])
    for lay in ["c", CL3]:
        case("tt::avg_pool3d_backward", T(F64, [2, 3, 3, 3, 3], lay),
             T(F64, [2, 3, 5, 5, 5], lay), [3, 3, 3], [2, 2, 2], [1, 1, 1], True, False, None)
    case("tt::avg_pool3d_backward", T(F64, [2, 3, 3, 3, 2], "c"), T(F64, [2, 3, 5, 5, 5], "c"),
         [3, 3, 3], [2, 2, 2], [1, 1, 1], True, False, None)
    case("tt::avg_pool3d_backward", T(F32, [2, 3, 3, 3, 3], "c"), T(F64, [2, 3, 5, 5, 5], "c"),
         [3, 3, 3], [2, 2, 2], [1, 1, 1], True, False, None)
    mp = "tt::max_pool3d_with_indices"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", "s", CL3]:
            case(mp, T(dt, [2, 3, 4, 5, 6], lay, rg=rg), [2, 2, 2])
            case(mp, T(dt, [2, 3, 4, 5, 6], lay, rg=rg), [3, 2, 3], [2, 1, 2], [1, 1, 1],
                 [1, 1, 1], True)
        case(mp, T(dt, [3, 5, 6, 5], "c", rg=rg), [3, 3, 3], [2, 2, 2], [1, 0, 1], [2, 1, 1],
             False)
        case(mp, T(dt, [1, 2, 7, 6, 5], "c", rg=rg), [2, 3, 2], [3, 2, 1], [1, 1, 1], [2, 2, 1],
             True)
        case(mp, T(dt, [2, 2, 4, 4, 4], "c", rg=rg), 2)
        case(mp, T(dt, [2, 1, 3, 3, 3], "c", rg=rg), [3, 3, 3], [], 1)
        case(mp, T(dt, [0, 2, 4, 4, 4], "c"), [2, 2, 2])
    case(mp, T(F32, [2, 3, 4, 4, 4], "c", form=(1, 0, 1, 0, 1)), [2, 2, 2], [1, 1, 1])
    case(mp, T(I64, [1, 2, 4, 4, 4], "c"), [2, 2, 2])
    case(mp, T(F32, [4, 4, 4], "c"), [2, 2, 2])
    case(mp, T(F32, [1, 0, 4, 4, 4], "c"), [2, 2, 2])
    case(mp, T(F32, [1, 2, 2, 2, 2], "c"), [3, 3, 3])
    case(mp, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 1, 1], [0, 0, 2])
    case(mp, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 1, 1], [0, -1, 0])
    case(mp, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 0, 1])
    case(mp, T(F32, [1, 2, 4, 5, 5], "c"), [0, 2, 2], [1, 1, 1])
    case(mp, T(F32, [1, 2, 4, 5, 5], "c"), [2, 2, 2], [], 0, [1, 1])
    for lay in ["c", CL3]:
        case("tt::max_pool3d_with_indices_backward", T(F64, [2, 3, 2, 2, 2], lay),
             T(F64, [2, 3, 4, 5, 5], lay), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
             T(I64, [2, 3, 2, 2, 2], "c", form=(7, 3, 20, 0, 1)))
    case("tt::max_pool3d_with_indices_backward", T(F64, [2, 3, 2, 2, 2], "c"),
         T(F64, [2, 3, 4, 5, 5], "c"), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
         T(I32, [2, 3, 2, 2, 2], "c", form=(7, 3, 20, 0, 1)))
    case("tt::max_pool3d_with_indices_backward", T(F64, [2, 3, 2, 2, 1], "c"),
         T(F64, [2, 3, 4, 5, 5], "c"), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
         T(I64, [2, 3, 2, 2, 2], "c", form=(7, 3, 20, 0, 1)))
    aap = "tt::_adaptive_avg_pool3d"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL3]:
            case(aap, T(dt, [2, 3, 7, 5, 6], lay, rg=rg), [3, 2, 4])
            case(aap, T(dt, [2, 3, 7, 5, 6], lay, rg=rg), [1, 1, 1])
        case(aap, T(dt, [3, 5, 4, 3], "s", rg=rg), [7, 6, 2])
        case(aap, T(dt, [0, 3, 4, 4, 4], "c"), [2, 2, 2])
    case(aap, T(F32, [2, 3, 6, 6, 6], "c"), [0, 2, 2])
    case(aap, T(F32, [2, 3, 6, 6, 6], "c"), [-1, 2, 2])
    case(aap, T(I64, [2, 3, 6, 6, 6], "c"), [2, 2, 2])
    case(aap, T(F32, [6, 6, 6], "c"), [2, 2, 2])
    case(aap, T(F32, [2, 0, 6, 6, 6], "c"), [2, 2, 2])
    case(aap, T(F32, [2, 3, 0, 6, 6], "c"), [2, 2, 2])
    case(aap, T(F32, [2, 3, 6, 6, 6], "c"), [2, 2])
    for lay in ["c", CL3]:
        case("tt::_adaptive_avg_pool3d_backward", T(F64, [2, 3, 3, 2, 2], lay),
             T(F64, [2, 3, 7, 5, 4], lay))
    case("tt::_adaptive_avg_pool3d_backward", T(F32, [2, 3, 3, 2, 2], "c"),
         T(F64, [2, 3, 7, 5, 4], "c"))


def pool_pad_cases():
    """Pooling, padding and upsampling."""
    A = torch.ops.aten
    OPS.update({
        "tt::max_pool2d_with_indices": lambda s, k, st=[], p=0, d=1, c=False:
            A.max_pool2d_with_indices(s, k, st, p, d, c),
        "tt::max_pool2d_with_indices_backward": A.max_pool2d_with_indices_backward,
        "tt::avg_pool2d": lambda s, k, st=[], p=0, c=False, cip=True, dv=None:
            A.avg_pool2d(s, k, st, p, c, cip, dv),
        "tt::avg_pool2d_backward": A.avg_pool2d_backward,
        "tt::_adaptive_avg_pool2d": A._adaptive_avg_pool2d,
        "tt::_adaptive_avg_pool2d_backward": A._adaptive_avg_pool2d_backward,
        "tt::max_pool1d": lambda s, k, st=[], p=0, d=1, c=False: A.max_pool1d(s, k, st, p, d, c),
        "tt::avg_pool1d": lambda s, k, st=[], p=0, c=False, cip=True:
            A.avg_pool1d(s, k, st, p, c, cip),
        "tt::constant_pad_nd": lambda s, pad, v=0: A.constant_pad_nd(s, pad, v),
        "tt::reflection_pad1d": A.reflection_pad1d,
        "tt::reflection_pad2d": A.reflection_pad2d,
        "tt::replication_pad2d": A.replication_pad2d,
        "tt::reflection_pad1d_backward": A.reflection_pad1d_backward,
        "tt::reflection_pad2d_backward": A.reflection_pad2d_backward,
        "tt::replication_pad2d_backward": A.replication_pad2d_backward,
        "tt::replication_pad1d": A.replication_pad1d,
        "tt::reflection_pad3d": A.reflection_pad3d,
        "tt::replication_pad3d": A.replication_pad3d,
        "tt::replication_pad1d_backward": A.replication_pad1d_backward,
        "tt::reflection_pad3d_backward": A.reflection_pad3d_backward,
        "tt::replication_pad3d_backward": A.replication_pad3d_backward,
        "tt::upsample_nearest2d.vec": A.upsample_nearest2d.vec,
        "tt::upsample_bilinear2d.vec": A.upsample_bilinear2d.vec,
        "tt::upsample_nearest2d_backward.vec": A.upsample_nearest2d_backward.vec,
        "tt::upsample_bilinear2d_backward.vec": A.upsample_bilinear2d_backward.vec,
    })
    CL = ("p", [0, 2, 3, 1])  # channels last: a permutation of an NHWC base
    mp = "tt::max_pool2d_with_indices"
    # max pooling: every argument form, odd shapes, layouts, gradients
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", "s", CL]:
            case(mp, T(dt, [2, 3, 5, 7], lay, rg=rg), [2, 2])
            case(mp, T(dt, [2, 3, 5, 7], lay, rg=rg), [3, 2], [2, 1], [1, 1], [1, 1], True)
        case(mp, T(dt, [3, 6, 5], "c", rg=rg), [3, 3], [2, 2], [1, 0], [2, 1], False)
        case(mp, T(dt, [1, 2, 7, 6], "c", rg=rg), [2, 3], [3, 2], [1, 1], [2, 2], True)
        case(mp, T(dt, [2, 2, 4, 4], "c", rg=rg), 2)
        case(mp, T(dt, [2, 1, 5, 5], "c", rg=rg), [5, 5], [], 2)
        case(mp, T(dt, [0, 2, 4, 4], "c"), [2, 2])
    case(mp, T(F32, [2, 3, 5, 5], "c", form=(1, 0, 1, 0, 1)), [2, 2], [1, 1])  # all equal: first wins
    case(mp, T(I64, [1, 2, 4, 4], "c"), [2, 2])
    case(mp, T(F32, [4, 4], "c"), [2, 2])
    case(mp, T(F32, [1, 0, 4, 4], "c"), [2, 2])
    case(mp, T(F32, [1, 2, 2, 2], "c"), [3, 3])
    case(mp, T(F32, [1, 2, 5, 5], "c"), [2, 2], [1, 1], [2, 2])
    case(mp, T(F32, [1, 2, 5, 5], "c"), [2, 2], [0, 1])
    case(mp, T(F32, [1, 2, 5, 5], "c"), [2, 2], [1, 1], [0, 0], [0, 1])
    case(mp, T(F32, [1, 2, 5, 5], "c"), [2, 2, 2])
    for lay in ["c", CL]:
        case("tt::max_pool2d_with_indices_backward", T(F64, [2, 3, 2, 2], lay),
             T(F64, [2, 3, 4, 5], lay), [2, 2], [2, 2], [0, 0], [1, 1], False,
             T(I64, [2, 3, 2, 2], "c", form=(7, 3, 20, 0, 1)))
    # avg pooling
    ap = "tt::avg_pool2d"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL]:
            case(ap, T(dt, [2, 3, 5, 7], lay, rg=rg), [2, 2])
            case(ap, T(dt, [2, 3, 5, 7], lay, rg=rg), [3, 2], [2, 1], [1, 1], True, False)
        case(ap, T(dt, [3, 6, 5], "s", rg=rg), [3, 3], [2, 2], [1, 0], False, True)
        case(ap, T(dt, [2, 2, 5, 5], "c", rg=rg), [3, 3], [2, 2], [1, 1], True, True)
        case(ap, T(dt, [2, 2, 5, 5], "c", rg=rg), [3, 3], [2, 2], [1, 1], True, False)
        case(ap, T(dt, [2, 2, 5, 6], "c", rg=rg), [2, 3], [1, 2], [1, 1], False, True, 5)
        case(ap, T(dt, [2, 2, 4, 4], "c", rg=rg), 2, 1, 1, True, True, -3)
    case(ap, T(I64, [1, 2, 5, 5], "c"), [2, 2])
    case(ap, T(I64, [1, 2, 5, 5], "c"), [3, 3], [2, 2], [1, 1], True, False)
    case(ap, T(I32, [1, 2, 5, 5], "c"), [2, 2])
    case(ap, T(F32, [1, 2, 5, 5], "c"), [2, 2], [], 0, False, True, 0)
    case(ap, T(F32, [1, 2, 5, 5], "c"), [2, 2], [1, 1], [2, 2])
    case(ap, T(F32, [5, 5], "c"), [2, 2])
    for lay in ["c", CL]:
        case("tt::avg_pool2d_backward", T(F64, [2, 3, 3, 3], lay), T(F64, [2, 3, 5, 5], lay),
             [3, 3], [2, 2], [1, 1], True, False, None)
    # adaptive average pooling
    aap = "tt::_adaptive_avg_pool2d"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL]:
            case(aap, T(dt, [2, 3, 7, 5], lay, rg=rg), [3, 2])
            case(aap, T(dt, [2, 3, 7, 5], lay, rg=rg), [1, 1])
        case(aap, T(dt, [3, 5, 4], "c", rg=rg), [7, 6])
        case(aap, T(dt, [2, 3, 6, 6], "c", rg=rg), [4, 5])
    case(aap, T(F32, [2, 3, 6, 6], "c"), [0, 2])
    case(aap, T(F32, [2, 3, 6, 6], "c"), [-1, 2])
    case(aap, T(I64, [2, 3, 6, 6], "c"), [2, 2])
    case(aap, T(F32, [6, 6], "c"), [2, 2])
    case(aap, T(F32, [2, 0, 6, 6], "c"), [2, 2])
    for lay in ["c", CL]:
        case("tt::_adaptive_avg_pool2d_backward", T(F64, [2, 3, 3, 2], lay),
             T(F64, [2, 3, 7, 5], lay))
    # 1-d pooling
    for dt, rg in [(F64, True), (F32, False)]:
        case("tt::max_pool1d", T(dt, [2, 3, 9], "c", rg=rg), [3])
        case("tt::max_pool1d", T(dt, [3, 9], "t", rg=rg), [3], [2], [1], [2], True)
        case("tt::avg_pool1d", T(dt, [2, 3, 9], "s", rg=rg), [3])
        case("tt::avg_pool1d", T(dt, [3, 8], "c", rg=rg), [3], [2], [1], True, False)
    case("tt::max_pool1d", T(F32, [9], "c"), [3])
    case("tt::avg_pool1d", T(F32, [2, 3, 9], "c"), [3, 3])
    # constant padding: any dtype, negative pads crop, channels last stays
    cp = "tt::constant_pad_nd"
    for dt in ALL:
        case(cp, T(dt, [2, 3], "c"), [1, 2], 3)
    case(cp, T(F64, [2, 3, 4, 5], "c", rg=True), [1, 1, 2, 0], 0.5)
    case(cp, T(F64, [2, 3, 4, 5], CL, rg=True), [1, 1, 2, 0], -1.5)
    case(cp, T(F64, [2, 3, 4, 5], "t", rg=True), [-1, 2, 1, -2, 0, 1])
    case(cp, T(F64, [2, 3, 4, 5], "c", rg=True), [-1, -1, -1, -1, -1, -1, -1, -1])
    case(cp, T(F32, [4], "c"), [2, 3], 2.5)
    case(cp, T(F32, [3, 4], "s"), [])
    case(cp, T(F32, [3, 4], "c"), [-2, -2])
    case(cp, T(F32, [3, 4], "c"), [-3, -3])
    case(cp, T(F32, [3, 4], "c"), [1])
    case(cp, T(F32, [3, 4], "c"), [1, 1, 1, 1, 1, 1])
    # reflection and replication
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL]:
            case("tt::reflection_pad2d", T(dt, [2, 3, 4, 5], lay, rg=rg), [1, 2, 3, 0])
            case("tt::replication_pad2d", T(dt, [2, 3, 4, 5], lay, rg=rg), [1, 2, 3, 0])
        case("tt::reflection_pad2d", T(dt, [3, 4, 5], "c", rg=rg), [-1, 2, 1, -2])
        case("tt::replication_pad2d", T(dt, [3, 4, 5], "c", rg=rg), [-1, 4, 2, -2])
        case("tt::reflection_pad1d", T(dt, [3, 5], "c", rg=rg), [2, 4])
        case("tt::reflection_pad1d", T(dt, [2, 3, 5], "t", rg=rg), [-1, 3])
        case("tt::reflection_pad2d", T(dt, [0, 3, 4, 5], "c"), [1, 1, 1, 1])
    case("tt::reflection_pad2d", T(F32, [2, 3, 4, 5], "c"), [5, 1, 1, 1])
    case("tt::reflection_pad2d", T(F32, [2, 3, 4, 5], "c"), [1, 1, 4, 1])
    case("tt::reflection_pad1d", T(F32, [3, 5], "c"), [2, 5])
    case("tt::reflection_pad1d", T(F32, [5], "c"), [2, 2])
    case("tt::reflection_pad2d", T(F32, [4, 5], "c"), [1, 1, 1, 1])
    case("tt::replication_pad2d", T(F32, [1, 1, 0, 3], "c"), [1, 1, 1, 1])
    case("tt::replication_pad2d", T(I64, [1, 1, 2, 3], "c"), [1, 1, 1, 1])
    case("tt::reflection_pad2d", T(I32, [1, 1, 2, 3], "c"), [1, 1, 1, 1])
    for op, pad in [("tt::reflection_pad2d_backward", [1, 2, 3, 0]),
                    ("tt::replication_pad2d_backward", [2, 2, 1, 0])]:
        outs = [2, 3, 4 + pad[2] + pad[3], 5 + pad[0] + pad[1]]
        case(op, T(F64, outs, "c"), T(F64, [2, 3, 4, 5], CL), pad)
        case(op, T(F64, outs, CL), T(F64, [2, 3, 4, 5], "c"), pad)
        case(op, T(F64, [2, 3, 4, 4], CL), T(F64, [2, 3, 4, 5], "c"), pad)
    case("tt::reflection_pad1d_backward", T(F64, [3, 11], "c"), T(F64, [3, 5], "c"), [2, 4])
    # 3-d reflection and replication, 1-d replication
    CL3 = ("p", [0, 2, 3, 4, 1])  # channels last 3-d
    rf3, rp3, rp1 = "tt::reflection_pad3d", "tt::replication_pad3d", "tt::replication_pad1d"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL3]:
            case(rf3, T(dt, [2, 3, 3, 4, 5], lay, rg=rg), [1, 2, 3, 0, 2, 1])
            case(rp3, T(dt, [2, 3, 3, 4, 5], lay, rg=rg), [1, 2, 3, 0, 4, 1])
        case(rf3, T(dt, [3, 4, 5, 6], "c", rg=rg), [-1, 2, 1, -2, 3, -1])
        case(rp3, T(dt, [3, 4, 5, 6], "c", rg=rg), [-1, 7, 2, -2, 0, 5])
        case(rp1, T(dt, [3, 5], "c", rg=rg), [2, 6])
        case(rp1, T(dt, [2, 3, 5], "t", rg=rg), [-1, 3])
        case(rf3, T(dt, [0, 3, 2, 4, 5], "c"), [1, 1, 1, 1, 1, 1])
    case(rf3, T(F32, [2, 3, 4, 5, 6], "c"), [6, 1, 1, 1, 1, 1])
    case(rf3, T(F32, [2, 3, 4, 5, 6], "c"), [1, 1, 1, 1, 1, 4])
    case(rf3, T(F32, [2, 3, 4, 5, 6], "c"), [-2, -1, 1, 1, 1, 1])
    case(rp3, T(F32, [2, 3, 4, 5, 6], "c"), [-3, -3, 0, 0, 0, 0])
    case(rp3, T(F32, [2, 3, 4, 5, 6], "c"), [-4, -3, 0, 0, 0, 0])
    case(rp3, T(F32, [2, 0, 4, 5, 6], "c"), [1, 1, 1, 1, 1, 1])
    case(rp3, T(F32, [4, 5, 6], "c"), [1, 1, 1, 1, 1, 1])
    case(rp3, T(F32, [3, 4, 5, 6], "c"), [1, 1, 1, 1])
    case(rp3, T(I64, [1, 1, 2, 2, 3], "c"), [1, 1, 1, 1, 1, 1])
    case(rp1, T(F32, [3, 5], "c"), [-3, -2])
    case(rp1, T(F32, [5], "c"), [1, 1])
    case(rp1, T(I32, [2, 5], "c"), [1, 1])
    for op, pad in [("tt::reflection_pad3d_backward", [1, 2, 3, 0, 1, 1]),
                    ("tt::replication_pad3d_backward", [2, 2, 1, 0, 0, 3])]:
        outs = [2, 3, 3 + pad[4] + pad[5], 4 + pad[2] + pad[3], 5 + pad[0] + pad[1]]
        case(op, T(F64, outs, "c"), T(F64, [2, 3, 3, 4, 5], CL3), pad)
        case(op, T(F64, outs, CL3), T(F64, [2, 3, 3, 4, 5], "c"), pad)
    # (PyTorch 1.13's replication_pad3d_backward reads a grad_output of the
    # wrong shape without a check; tt refuses it, test_ops_pool asserts how)
    case("tt::reflection_pad3d_backward", T(F64, [2, 3, 3, 4, 4], "c"),
         T(F64, [2, 3, 3, 4, 5], "c"), [1, 2, 3, 0, 1, 1])
    case("tt::replication_pad1d_backward", T(F64, [3, 11], "c"), T(F64, [3, 5], "c"), [2, 4])
    # upsampling: output sizes and scale factors, both corner conventions
    un, ub = "tt::upsample_nearest2d.vec", "tt::upsample_bilinear2d.vec"
    for dt, rg in [(F64, True), (F32, False)]:
        for lay in ["c", "t", CL]:
            case(un, T(dt, [2, 3, 4, 5], lay, rg=rg), [7, 10], None)
            for ac in [False, True]:
                case(ub, T(dt, [2, 3, 4, 5], lay, rg=rg), [7, 9], ac, None)
        case(un, T(dt, [2, 3, 4, 5], "c", rg=rg), [3, 5], None)
        case(un, T(dt, [2, 3, 4, 5], "c", rg=rg), [8, 1], None)
        case(un, T(dt, [2, 3, 4, 5], "c", rg=rg), None, [1.5, 2.0])
        case(un, T(dt, [1, 2, 5, 3], "c", rg=rg), None, [2.7, 0.6])
        for ac in [False, True]:
            case(ub, T(dt, [2, 3, 4, 5], "c", rg=rg), [3, 1], ac, None)
            case(ub, T(dt, [2, 3, 4, 5], "c", rg=rg), [4, 5], ac, None)
            case(ub, T(dt, [2, 3, 4, 5], "c", rg=rg), None, ac, [1.5, 2.0])
            case(ub, T(dt, [1, 2, 5, 3], "c", rg=rg), None, ac, [2.7, 0.6])
    case(un, T(F32, [2, 3, 4, 5], "c"), [7, 8], [1.5, 2.0])
    case(un, T(F32, [2, 3, 4, 5], "c"), None, None)
    case(un, T(F32, [2, 3, 4, 5], "c"), [0, 8], None)
    case(un, T(F32, [2, 3, 4, 5], "c"), [7], None)
    case(un, T(F32, [2, 3, 4, 5], "c"), None, [-1.0, 2.0])
    case(un, T(F32, [3, 4, 5], "c"), [7, 8], None)
    case(un, T(F32, [1, 0, 4, 5], "c"), [7, 8], None)
    case(un, T(F32, [0, 3, 4, 5], "c"), [7, 8], None)
    case(ub, T(I64, [1, 2, 4, 5], "c"), [7, 8], False, None)
    case(un, T(I32, [1, 2, 4, 5], "c"), [7, 8], None)
    for lay in ["c", CL]:
        case("tt::upsample_nearest2d_backward.vec", T(F64, [2, 3, 7, 10], lay), [7, 10],
             [2, 3, 4, 5], None)
        case("tt::upsample_nearest2d_backward.vec", T(F64, [2, 3, 7, 10], lay), None,
             [2, 3, 5, 5], [1.5, 2.0])
        case("tt::upsample_bilinear2d_backward.vec", T(F64, [2, 3, 7, 9], lay), [7, 9],
             [2, 3, 4, 5], False, None)
        case("tt::upsample_bilinear2d_backward.vec", T(F64, [2, 3, 7, 9], lay), [7, 9],
             [2, 3, 4, 5], True, None)
    case("tt::upsample_nearest2d_backward.vec", T(F64, [2, 3, 7, 9], "c"), [7, 10],
         [2, 3, 4, 5], None)


def bn_no_stats(x, w, b, training, momentum, eps):
    if not training:  # PyTorch 1.13 crashes (a null running_var)
        raise RuntimeError("evaluation (training=False) needs running_mean and running_var")
    return torch.native_batch_norm(x, w, b, None, None, training, momentum, eps)


def refuse(msg):
    def fn(*args):
        raise RuntimeError(msg)
    return fn


def norm_dropout_cases():
    """Batch norm, group norm, native_layer_norm, native_dropout."""
    # PyTorch 1.13 has native_batch_norm; _native_batch_norm_legit is its
    # 2.x split by whether running stats are given / written.
    OPS.update({
        "tt::_native_batch_norm_legit": lambda x, w, b, rm, rv, tr, mom, eps:
            torch.native_batch_norm(x, w, b, rm, rv, tr, mom, eps),
        "tt::_native_batch_norm_legit.no_stats": bn_no_stats,
        "tt::_native_batch_norm_legit_no_training": lambda x, w, b, rm, rv, mom, eps:
            torch.native_batch_norm(x, w, b, rm, rv, False, mom, eps),
        "tt::native_batch_norm_backward": lambda g, x, w, rm, rv, sm, si, tr, eps, mask:
            torch.ops.aten.native_batch_norm_backward(g, x, w, rm, rv, sm, si, tr, eps, mask),
        "tt::native_dropout": lambda x, p, train: torch.native_dropout(x, p, train),
        "tt::native_dropout_backward": lambda g, m, scale:
            torch.ops.aten.native_dropout_backward(g, m, scale),
    })
    BN = "tt::_native_batch_norm_legit"
    RM, RV = (3, 1, 5, -2, 4), (3, 1, 5, 1, 2)  # running var positive
    for dt in [F64, F32]:
        rg = dt == F64
        for sizes, lay in [([4, 3], "c"), ([4, 3], "t"), ([2, 3, 5], "c"), ([2, 3, 5], "s"),
                           ([2, 3, 4, 5], "c"), ([2, 3, 4, 5], ("p", [0, 2, 3, 1])),
                           ([2, 5, 3, 4], ("p", [0, 3, 1, 2])), ([2, 3, 2, 3, 2], "c"),
                           ([2, 3, 2, 3, 2], ("p", [0, 4, 1, 2, 3])),
                           ([2, 3, 2, 3, 2], ("p", [0, 2, 3, 4, 1])), ([3, 2, 1, 1], "c")]:
            C = sizes[1]
            for affine in [False, True]:
                w = T(dt, [C], "c", POS, rg=rg) if affine else None
                b = T(dt, [C], "c", rg=rg) if affine else None
                for tr in [True, False]:
                    case(BN, T(dt, sizes, lay, rg=rg), w, b, T(dt, [C], "c", RM),
                         T(dt, [C], "c", RV), tr, 0.1, 1e-5, after=[3, 4])
                case(BN + ".no_stats", T(dt, sizes, lay, rg=rg), w, b, True, 0.3, 1e-3)
                case(BN + "_no_training", T(dt, sizes, lay, rg=rg), w, b, T(dt, [C], "c", RM),
                     T(dt, [C], "c", RV), 0.1, 1e-5)
    # large and odd: one chunk per thread and a remainder, channels last
    case(BN, T(F64, [5, 7, 9, 11], ("p", [0, 3, 1, 2])), T(F64, [7], "c", POS), None,
         T(F64, [7], "c", RM), T(F64, [7], "c", RV), True, 0.2, 1e-5, after=[3, 4])
    case(BN, T(F32, [8, 33, 3, 5], "c"), None, T(F32, [33], "c"), T(F32, [33], "c", RM),
         T(F32, [33], "c", RV), True, 0.1, 1e-5, after=[3, 4])
    case(BN, T(F32, [8, 33, 3, 5], ("p", [0, 3, 1, 2])), None, None, T(F32, [33], "c", RM),
         T(F32, [33], "c", RV), True, 0.1, 1e-5, after=[3, 4])
    # one value per channel: PyTorch's unbiased running variance is 0 / 0
    case(BN, T(F64, [1, 3], "c"), None, None, T(F64, [3], "c", RM), T(F64, [3], "c", RV),
         True, 0.1, 1e-5, after=[3, 4])
    # backward: any stats are valid inputs (save_invstd positive)
    BB = "tt::native_batch_norm_backward"
    for dt in [F64, F32]:
        for sizes, lay in [([4, 3], "c"), ([2, 3, 5], "s"), ([2, 3, 2, 2], ("p", [0, 3, 1, 2])),
                           ([2, 3, 2, 2], ("p", [0, 2, 3, 1]))]:
            if dt == F32 and lay != "c":  # PyTorch 1.13 crashes (f32, input and grad
                continue                  # in different layouts: SIGSEGV, SIGFPE)
            for w in [None, T(dt, [3], "c", POS)]:
                case(BB, T(dt, sizes, "c", (5, 2, 9, -4, 8)), T(dt, sizes, lay), w, None, None,
                     T(dt, [3], "c", RM), T(dt, [3], "c", RV), True, 1e-5, [True, True, True])
                case(BB, T(dt, sizes, lay, (5, 2, 9, -4, 8)), T(dt, sizes, "c"), w,
                     T(dt, [3], "c", RM), T(dt, [3], "c", RV), None, None, False, 1e-3,
                     [True, True, True])
    # errors
    case(BN, T(I64, [4, 3], "c"), None, None, T(F32, [3], "c"), T(F32, [3], "c"), True, 0.1,
         1e-5)
    case(BN + ".no_stats", T(F32, [3], "c"), None, None, True, 0.1, 1e-5)
    case(BN + ".no_stats", T(F64, [4, 3], "c"), None, None, False, 0.1, 1e-5,
         note="PyTorch 1.13 crashes on evaluation without running stats; tensortrace refuses")
    case(BN, T(F32, [4, 3], "c"), T(F32, [4], "c"), None, T(F32, [3], "c"), T(F32, [3], "c"),
         True, 0.1, 1e-5, ref=refuse("weight has the wrong size"),
         note="PyTorch 1.13 reads past a weight of the wrong size; tensortrace refuses")
    case(BN, T(F32, [4, 3], "c"), None, None, T(F32, [4], "c"), T(F32, [3], "c"),
         True, 0.1, 1e-5, ref=refuse("running_mean has the wrong size"),
         note="PyTorch 1.13 writes past a running_mean of the wrong size; tensortrace refuses")
    case(BN, T(F32, [4, 3], "c"), T(F64, [3], "c"), None, T(F32, [3], "c"), T(F32, [3], "c"),
         True, 0.1, 1e-5)
    case(BN + ".no_stats", T(F32, [0, 3], "c"), None, None, True, 0.1, 1e-5,
         ref=refuse("no value per channel"),
         note="PyTorch 1.13 divides by zero (SIGFPE) on an empty batch; tensortrace refuses")
    case(BN + "_no_training", T(F32, [0, 3], "c"), None, None, T(F32, [3], "c"),
         T(F32, [3], "c", RV), 0.1, 1e-5,
         ref=lambda x, *a: (torch.empty(0, 3), torch.empty(0), torch.empty(0)),
         note="PyTorch 1.13 divides by zero (SIGFPE) on an empty batch also in evaluation; "
              "tensortrace returns the empty results")

    # ---- native_group_norm
    GN = "tt::native_group_norm"
    OPS.update({
        GN: lambda x, w, b, N, C, HW, G, eps: torch.native_group_norm(x, w, b, N, C, HW, G, eps),
        GN + "_backward": lambda g, x, m, r, w, N, C, HW, G, mask:
            torch.ops.aten.native_group_norm_backward(g, x, m, r, w, N, C, HW, G, mask),
    })
    gn_any_layout = "PyTorch 1.13's kernel needs its input contiguous (F.group_norm makes " \
                    "it so); tensortrace reads any layout"
    gn_cl_note = "PyTorch 1.13's channels-last group norm backward is wrong (it differs " \
                 "from its contiguous one on the same values; fixed in 2.x): the reference " \
                 "computes contiguously, the result channels last as 1.13's forward"

    def gn_cl_ref(x, *a):
        mf = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        r = torch.native_group_norm(x.contiguous(), *a)
        return (r[0].contiguous(memory_format=mf), r[1], r[2])

    CL4, CL5, ODD = ("p", [0, 3, 1, 2]), ("p", [0, 4, 1, 2, 3]), ("p", [0, 2, 3, 1])
    for dt in [F64, F32]:
        rg = dt == F64
        for sizes, lay, G in [([2, 6], "c", 3), ([2, 6, 5], "c", 2), ([3, 4, 2, 3], "c", 4),
                              ([3, 4, 2, 3], CL4, 2), ([2, 4, 2, 2, 2], "c", 2),
                              ([2, 4, 2, 2, 2], CL5, 4), ([3, 4, 2, 3], ODD, 2),
                              ([2, 6, 5], "c", 1), ([2, 6, 5], "c", 6), ([2, 6, 5], "s", 3),
                              ([2, 6, 5], "t", 3), ([1, 3, 4], "c", 3)]:
            N, C, HW = sizes[0], sizes[1], math.prod(sizes[2:])
            ref = note = None
            if lay in ("s", "t") or lay == ODD:
                ref = lambda x, *a: torch.native_group_norm(x.contiguous(), *a)
                note = gn_any_layout
            elif lay != "c":
                ref, note = gn_cl_ref, gn_cl_note
            for affine in [False, True]:
                w = T(dt, [C], "c", POS, rg=rg) if affine else None
                b = T(dt, [C], "c", rg=rg) if affine else None
                case(GN, T(dt, sizes, lay, rg=rg), w, b, N, C, HW, G, 1e-5, ref=ref, note=note)
        for sizes, lay, G in [([2, 6, 5], "c", 3), ([3, 4, 2, 3], CL4, 2)]:
            N, C, HW = sizes[0], sizes[1], math.prod(sizes[2:])
            ref = note = None
            if lay != "c":
                note = gn_cl_note
                ref = lambda g, x, *a: tuple(
                    r.contiguous(memory_format=torch.channels_last) if r.dim() == 4 else r
                    for r in torch.ops.aten.native_group_norm_backward(
                        g.contiguous(), x.contiguous(), *a))
            case(GN + "_backward", T(dt, sizes, lay, (5, 2, 9, -4, 8)), T(dt, sizes, lay),
                 T(dt, [N, G], "c"), T(dt, [N, G], "c", POS), T(dt, [C], "c", POS), N, C, HW, G,
                 [True, True, True], ref=ref, note=note)
    case(GN, T(F64, [0, 6, 2], "c"), None, None, 0, 6, 2, 3, 1e-5)
    case(GN, T(F32, [2, 6], "c"), None, None, 2, 6, 1, 4, 1e-5)
    case(GN, T(F32, [2, 6], "c"), None, None, 2, 6, 1, 0, 1e-5)
    case(GN, T(F32, [2, 6], "c"), T(F32, [5], "c"), None, 2, 6, 1, 3, 1e-5)
    case(GN, T(I64, [2, 6], "c"), None, None, 2, 6, 1, 3, 1e-5)
    case(GN, T(F32, [2, 6], "c"), None, None, 3, 6, 1, 3, 1e-5)

    # ---- native_layer_norm (mean and rstd returned), its backward
    LN = "tt::native_layer_norm"
    OPS.update({
        LN: lambda x, ns, w, b, eps: torch.native_layer_norm(x, ns, w, b, eps),
        LN + "_backward": lambda g, x, ns, m, r, w, b, mask:
            torch.ops.aten.native_layer_norm_backward(g, x, ns, m, r, w, b, mask),
    })
    for dt in [F64, F32]:
        rg = dt == F64
        for sizes, lay, ns in [([2, 3, 4], "c", [4]), ([2, 3, 4], "c", [3, 4]),
                               ([2, 3, 4], "t", [3]), ([2, 3, 4], ("p", [2, 0, 1]), [3, 4]),
                               ([5], "s", [5]), ([4, 7], "c", [7]), ([0, 4], "c", [4])]:
            for affine in [False, True]:
                w = T(dt, ns, "c", POS, rg=rg) if affine else None
                b = T(dt, ns, "c", rg=rg) if affine else None
                case(LN, T(dt, sizes, lay, rg=rg), ns, w, b, 1e-5)
        for sizes, lay, ns in [([2, 3, 4], "c", [4]), ([2, 3, 4], "t", [3, 4])]:
            ssz = sizes[:len(sizes) - len(ns)] + [1] * len(ns)
            case(LN + "_backward", T(dt, sizes, lay, (5, 2, 9, -4, 8)), T(dt, sizes, lay), ns,
                 T(dt, ssz, "c"), T(dt, ssz, "c", POS), T(dt, ns, "c", POS), T(dt, ns, "c"),
                 [True, True, True])
    case(LN, T(F32, [2, 3, 4], "c"), [5], None, None, 1e-5)
    case(LN, T(I64, [2, 3, 4], "c"), [4], None, None, 1e-5)
    case(LN, T(F32, [2, 3, 4], "c"), [4], T(F32, [3], "c"), None, 1e-5)
    case(LN, T(F32, [2, 3, 4], "c"), [], None, None, 1e-5)

    # ---- native_dropout: PyTorch's draws cannot be matched, so p = 0, p = 1
    # and eval compare values, other p metadata only.
    DO = "tt::native_dropout"
    for dt in [F64, F32]:
        rg = dt == F64
        for sizes, lay in [([3, 4], "c"), ([3, 4], "t"), ([2, 3, 4], ("p", [2, 0, 1])),
                           ([5], "s"), ([], "c")]:
            for p in [0.0, 1.0]:
                for train in [True, None]:
                    case(DO, T(dt, sizes, lay, rg=rg), p, train)
            case(DO, T(dt, sizes, lay, rg=rg), 0.5, False)
            case(DO, T(dt, sizes, lay), 0.25, True, name=DO + " [meta]")
            case(DO, T(dt, sizes, lay), 0.75, None, name=DO + " [meta]")
    case(DO, T(I64, [3, 4], "c"), 0.5, False)
    case(DO, T(I64, [3, 4], "c"), 0.5, True)
    case(DO, T(F32, [3, 4], "c"), 1.5, True)
    case(DO, T(F32, [3, 4], "c"), -0.5, None)
    mask = (2, 0, 3, 0, 1)  # bool from the closed form: non-zero 1 in 3
    for dt in [F64, F32]:
        for lay in ["c", "t"]:
            case("tt::native_dropout_backward", T(dt, [3, 4], lay, rg=dt == F64),
                 T(BOOL, [3, 4], "c", mask), 2.0)
            case("tt::native_dropout_backward", T(dt, [3, 4], "c"), T(BOOL, [3, 4], lay, mask),
                 0.0)
    case("tt::native_dropout_backward", T(F32, [3, 4], "c"), T(F32, [3, 4], "c"), 2.0,
         ref=refuse("Mask should be Bool Scalar Type"),
         note="PyTorch 2 refuses a mask that is not bool (Mask should be Bool Scalar Type); "
              "1.13 multiplies by it")


def sgd_ref(p, g, buf, step, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
            nesterov=False, maximize=False):
    """tt::sgd_step through torch.optim.SGD itself: the buffer the call
    gets is the optimizer's state after step - 1 updates (none at step 1,
    where PyTorch starts it from the gradient), written back after."""
    p.grad = g
    opt = torch.optim.SGD([p], lr=lr, momentum=momentum, dampening=dampening,
                          weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
    if momentum != 0 and step.item() > 1:
        opt.state[p]["momentum_buffer"] = buf.clone()
    opt.step()
    if momentum != 0:
        buf.copy_(opt.state[p]["momentum_buffer"])
    return ()


def with_grad(fwd, bwd):
    """fwd with the derivative bwd(grad, self) instead of PyTorch's."""
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return fwd(x)

        @staticmethod
        def backward(ctx, g):
            return bwd(g, ctx.saved_tensors[0])
    return Fn.apply


def hardswish_bw(g0, x0):
    # PyTorch 1.13's vectorized kernel: 0 below -3, grad from 3 on; in the
    # layout PyTorch's own op gives.
    g, x = torch.broadcast_tensors(g0, x0)
    v = torch.where(x < -3, torch.zeros_like(g), torch.where(x >= 3, g, g * (x / 3 + 0.5)))
    return torch.ops.aten.hardswish_backward(g0, x0).copy_(v)


def hardsigmoid_bw(g0, x0):
    # grad / 6 inside (-3, 3), with 1/6 in the dtype (PyTorch 1.13 rounds
    # it to f32 first, so its f64 gradient is off by 7e-9 relative).
    g, x = torch.broadcast_tensors(g0, x0)
    v = torch.where((x > -3) & (x < 3), g * (1.0 / 6), torch.zeros_like(g))
    return torch.ops.aten.hardsigmoid_backward(g0, x0).copy_(v)


HARDSWISH_NOTE = ("PyTorch 1.13's hardswish_backward gives grad at x = 3 in its vectorized "
                  "kernel and 1.5 grad in its scalar tail; tt follows the vectorized one "
                  "everywhere (recorded through it)")
HARDSIGMOID_NOTE = ("PyTorch 1.13's hardsigmoid_backward multiplies an f64 gradient by 1/6 "
                    "rounded to f32; tt uses 1/6 in the dtype (recorded so)")


def bce_backward(g, x, y, w=None, pw=None, r=1):
    x = x.detach().requires_grad_(True)
    red = {0: "none", 1: "mean", 2: "sum"}[r]
    F.binary_cross_entropy_with_logits(x, y, w, reduction=red, pos_weight=pw).backward(g)
    return x.grad


def activation_loss_cases():
    """The CNN activations, the losses, sgd_step."""
    OPS.update({
        "tt::leaky_relu": lambda s, ns=0.01: F.leaky_relu(s, ns),
        "tt::elu": lambda s, a=1, sc=1, isc=1: torch.ops.aten.elu(s, a, sc, isc),
        "tt::hardtanh": lambda s, lo=-1, hi=1: F.hardtanh(s, lo, hi),
        "tt::hardswish": F.hardswish,
        "tt::hardsigmoid": F.hardsigmoid,
        "tt::softplus": lambda s, b=1, t=20: F.softplus(s, b, t),
        "tt::leaky_relu_backward": torch.ops.aten.leaky_relu_backward,
        "tt::elu_backward": torch.ops.aten.elu_backward,
        "tt::hardtanh_backward": torch.ops.aten.hardtanh_backward,
        "tt::hardswish_backward": torch.ops.aten.hardswish_backward,
        "tt::hardsigmoid_backward": torch.ops.aten.hardsigmoid_backward,
        "tt::softplus_backward": torch.ops.aten.softplus_backward,
        "tt::sgd_step": sgd_ref,
    })
    # ---- activations: every dtype, layouts with gradients, each argument
    # form (defaults left out, given, ints and floats), values across the
    # kinks (WIDE spans [-5, 5], past hardswish's -3 and 3).
    WIDE = (7, 3, 11, -5, 1)
    acts = [("tt::leaky_relu", [(), (0.2,), (-1.5,), (0,), (2,)]),
            ("tt::elu", [(), (0.5,), (1.5, 2, 0.5), (1, 1, 3)]),
            ("tt::hardtanh", [(), (-0.5, 2), (0, 6), (2, -1), (-2.5, 2.5)]),
            ("tt::hardswish", [()]),
            ("tt::hardsigmoid", [()]),
            ("tt::softplus", [(), (2,), (2, 1), (0.5, 1.5), (-1, 2)])]
    refs = {"tt::hardswish": dict(ref=with_grad(F.hardswish, hardswish_bw), note=HARDSWISH_NOTE),
            "tt::hardsigmoid": dict(ref=with_grad(F.hardsigmoid, hardsigmoid_bw),
                                    note=HARDSIGMOID_NOTE)}
    for op, forms in acts:
        rg = refs.get(op, {})  # the cases with gradients
        for dt in ALL:
            case(op, T(dt, [2, 3], "c", WIDE))
        for lay in ["t", "s", ("e", 1), ("p", [2, 0, 1])]:
            shape = [3, 2, 2] if lay[0] == "p" else [2, 3]
            case(op, T(F64, shape, lay, WIDE, rg=True), **rg)
            case(op, T(F32, shape, lay, WIDE))
        for params in forms:
            case(op, T(F64, [3, 4], "c", WIDE, rg=True), *params, **rg)
            case(op, T(F32, [3, 4], "t"), *params)
        case(op, T(F64, [], "c", rg=True), **rg)
        case(op, T(F32, [0, 3], "c"))
    case("tt::hardtanh", T(I64, [2, 3], "c", WIDE), -2, 3)
    case("tt::hardtanh", T(I32, [2, 3], "t", WIDE), -0.5, 1.5)
    case("tt::hardtanh", T(U8, [2, 3], "c"), 2, 5)
    # ---- the backward ops on their own (broadcast operands, both forms)
    g = lambda sizes, lay="c": T(F64, sizes, lay, GRAD_FORM)
    for dt in [F64, F32]:
        gg = T(dt, [2, 3], "t", GRAD_FORM)
        x = T(dt, [2, 3], "c", WIDE)
        case("tt::leaky_relu_backward", gg, x, 0.2, False)
        case("tt::leaky_relu_backward", gg, x, 0.2, True)
        case("tt::elu_backward", gg, 0.5, 2, 1.5, False, x)
        case("tt::elu_backward", gg, 1, 1, 1, True, T(dt, [2, 3], "c", (7, 3, 11, -10, 11)))
        case("tt::hardtanh_backward", gg, x, -2, 3)
        case("tt::hardswish_backward", gg, x, ref=hardswish_bw, note=HARDSWISH_NOTE)
        case("tt::hardsigmoid_backward", gg, x, ref=hardsigmoid_bw, note=HARDSIGMOID_NOTE)
        case("tt::softplus_backward", gg, x, 2, 3)
    case("tt::hardswish_backward", g([3]), T(F64, [2, 3], "s", WIDE), ref=hardswish_bw,
         note=HARDSWISH_NOTE)
    case("tt::leaky_relu_backward", g([2, 3]), T(F64, [2, 3], "c", WIDE), -0.2, True)
    case("tt::hardswish_backward", g([4]), T(F64, [2, 3], "c", WIDE), ref=hardswish_bw,
         note=HARDSWISH_NOTE)
    case("tt::softplus_backward", T(F32, [2, 3], "c"), T(F64, [2, 3], "c", WIDE), 1, 20)
    case("tt::hardtanh_backward", T(I64, [2, 3], "c"), T(I64, [2, 3], "c"), -1, 1)

    # ---- losses (the aten ops take the reduction as 0 none, 1 mean, 2 sum)
    RED = {0: "none", 1: "mean", 2: "sum"}
    A = torch.ops.aten
    OPS.update({
        "tt::nll_loss_forward": A.nll_loss_forward,
        "tt::nll_loss_backward": A.nll_loss_backward,
        "tt::nll_loss2d_forward": A.nll_loss2d_forward,
        "tt::nll_loss2d_backward": A.nll_loss2d_backward,
        "tt::mse_loss": lambda x, y, r=1: A.mse_loss(x, y, r),
        "tt::mse_loss_backward": A.mse_loss_backward,
        "tt::smooth_l1_loss": lambda x, y, r=1, b=1.0: A.smooth_l1_loss(x, y, r, b),
        "tt::smooth_l1_loss_backward": A.smooth_l1_loss_backward,
        # (PyTorch 1.13 has no such op: its autograd's gradient)
        "tt::binary_cross_entropy_with_logits_backward": bce_backward,
        # F's form: it checks that target has input's size.
        "tt::binary_cross_entropy_with_logits": lambda x, y, w=None, pw=None, r=1:
            F.binary_cross_entropy_with_logits(x, y, w, reduction=RED.get(r, "bad"),
                                               pos_weight=pw),
    })

    def refuse(*args):
        raise RuntimeError("reduction must be 0 (none), 1 (mean) or 2 (sum)")
    RED_NOTE = ("PyTorch 1.13 takes any reduction other than 0 and 1 as sum (and asserts "
                "in mse_loss); tt refuses it")
    tgt = lambda sizes, m=4, form=None: T(I64, sizes, "c", form or (3, 1, m, 0, 1))
    w4 = T(F64, [4], "c", POS)
    for r in [0, 1, 2]:
        case("tt::nll_loss_forward", T(F64, [3, 4], "t", rg=True), tgt([3]), None, r, -100)
        case("tt::nll_loss_forward", T(F64, [3, 4], "c", rg=True), tgt([3]), w4, r, -100)
        case("tt::nll_loss_forward", T(F64, [5, 4], "s", rg=True), tgt([5], 5), w4, r, 4)
        case("tt::nll_loss_forward", T(F64, [3, 4], "c", rg=True), tgt([3]), None, r, 0)
        case("tt::nll_loss_forward", T(F64, [4], "c", rg=True), tgt([]), w4, r, -100)
        case("tt::nll_loss_forward", T(F32, [3, 4], "c"), tgt([3]), T(F32, [4], "c", POS), r,
             -100)
        case("tt::nll_loss2d_forward", T(F64, [2, 4, 2, 3], "c", rg=True), tgt([2, 2, 3]),
             None, r, -100)
        # (no gradient: PyTorch 1.13's nll_loss2d_backward refuses a
        # non-contiguous self, "grad_input must be contiguous")
        case("tt::nll_loss2d_forward", T(F64, [2, 4, 3, 2], ("p", [0, 3, 1, 2])),
             tgt([2, 3, 2], 5), w4, r, 4)
        gsz = [3] if r == 0 else []
        case("tt::nll_loss_backward", T(F64, gsz, "c"), T(F64, [3, 4], "c"), tgt([3]), w4, r,
             -100, T(F64, [], "c", (1, 3, 10, 0, 1)))
        case("tt::nll_loss2d_backward", T(F64, [2, 2, 3] if r == 0 else [], "c"),
             T(F64, [2, 4, 2, 3], "c"), tgt([2, 2, 3]), None, r, -100,
             T(F64, [], "c", (1, 3, 10, 0, 1)))
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), T(U8, [3], "c", (3, 1, 4, 0, 1)), None, 1,
         -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), T(I32, [3], "c", (3, 1, 4, 0, 1)), None, 1,
         -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([3], 6, (3, 1, 6, 0, 1)), None, 1,
         -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([2]), None, 1, -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([3, 1]), None, 1, -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([3]), T(F64, [3], "c"), 1, -100)
    case("tt::nll_loss_forward", T(F32, [3, 4], "c"), tgt([3]), w4, 1, -100)
    case("tt::nll_loss_forward", T(F64, [3, 2, 2], "c"), tgt([3, 2]), None, 1, -100)
    case("tt::nll_loss_forward", T(I64, [3, 4], "c"), tgt([3]), None, 1, -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([3], 1), None, 1, 0)  # all ignored
    case("tt::nll_loss_forward", T(F64, [0, 4], "c"), tgt([0]), None, 1, -100)
    case("tt::nll_loss_forward", T(F64, [3, 4], "c"), tgt([3]), None, 3, -100, ref=refuse,
         note=RED_NOTE)
    case("tt::nll_loss2d_forward", T(F64, [3, 4], "c"), tgt([3]), None, 1, -100)
    case("tt::nll_loss2d_forward", T(F64, [2, 4, 2, 3], "c"), tgt([2, 3, 2]), None, 1, -100)

    YF = (3, 1, 5, 0, 4)  # targets in [0, 1]
    BCAST_NOTE = ("PyTorch 1.13's mse_loss and smooth_l1_loss backward scale 'mean' by the "
                  "element count of the input they differentiate, not of the broadcast loss, "
                  "so a broadcast operand's gradient is off; recorded on operands broadcast "
                  "first")
    for r in [0, 1, 2]:
        for op in ["tt::mse_loss", "tt::smooth_l1_loss"]:
            extra = [] if op == "tt::mse_loss" else [0.5]
            case(op, T(F64, [2, 3], "t", rg=True), T(F64, [2, 3], "c", POS, rg=True), r, *extra)
            bc = dict(ref=lambda x, y, *a, op=op: OPS[op](*torch.broadcast_tensors(x, y), *a),
                      note=BCAST_NOTE)
            case(op, T(F64, [2, 3], "c", rg=True), T(F64, [3], "c", POS, rg=True), r, *extra,
                 **bc)
            case(op, T(F64, [3], "s", rg=True), T(F64, [2, 3], "c", POS), r, *extra, **bc)
            case(op, T(F32, [2, 3], "c"), T(F64, [2, 3], "t"), r, *extra)
        for b in [1.0, 0.0, 2.5]:
            case("tt::smooth_l1_loss", T(F64, [3, 4], "c", WIDE, rg=True),
                 T(F64, [3, 4], "t", POS), r, b)
        case("tt::mse_loss_backward", T(F64, [2, 3] if r == 0 else [], "c", GRAD_FORM),
             T(F64, [2, 3], "c"), T(F64, [3], "c", POS), r)
        case("tt::smooth_l1_loss_backward", T(F64, [2, 3] if r == 0 else [], "c", GRAD_FORM),
             T(F64, [2, 3], "c", WIDE), T(F64, [2, 3], "t", POS), r, 1.5)
        bce = "tt::binary_cross_entropy_with_logits"
        case(bce, T(F64, [2, 3], "t", WIDE, rg=True), T(F64, [2, 3], "c", YF, rg=True), None,
             None, r)
        case(bce, T(F64, [2, 3], "c", WIDE, rg=True), T(F64, [2, 3], "s", YF, rg=True),
             T(F64, [3], "c", POS), None, r)
        case(bce, T(F64, [2, 3], "c", WIDE, rg=True), T(F64, [2, 3], "c", YF, rg=True), None,
             T(F64, [3], "c", POS), r)
        case(bce, T(F64, [2, 3], "c", WIDE, rg=True), T(F64, [2, 3], "c", YF, rg=True),
             T(F64, [2, 1], "c", POS), T(F64, [3], "c", POS), r)
        case(bce, T(F32, [4, 3], "t", WIDE), T(F32, [4, 3], "c", YF), None, None, r)
    for r in [0, 1, 2]:
        case("tt::binary_cross_entropy_with_logits_backward",
             T(F64, [2, 3] if r == 0 else [], "c", GRAD_FORM), T(F64, [2, 3], "c", WIDE),
             T(F64, [2, 3], "t", YF), T(F64, [3], "c", POS), T(F64, [2, 1], "c", POS), r)
    case("tt::mse_loss", T(F64, [2, 3], "c"), T(F64, [2, 3], "c"))
    case("tt::mse_loss", T(I64, [2, 3], "c"), T(I64, [2, 3], "c"), 1)
    case("tt::mse_loss", T(F64, [2, 3], "c"), T(F64, [4], "c"), 1)
    case("tt::mse_loss", T(F64, [0, 3], "c"), T(F64, [0, 3], "c"), 1)
    case("tt::smooth_l1_loss", T(F64, [2, 3], "c"), T(F64, [2, 3], "c"))
    case("tt::smooth_l1_loss", T(F64, [2, 3], "c"), T(F64, [2, 3], "c"), 1, -1.0)
    case("tt::smooth_l1_loss", T(I64, [2, 3], "c"), T(I64, [2, 3], "c"), 1, 1.0)
    case("tt::smooth_l1_loss", T(F64, [2, 3], "c"), T(F64, [2, 3], "c"), 3, 1.0, ref=refuse,
         note=RED_NOTE)
    case("tt::binary_cross_entropy_with_logits", T(F64, [3], "c"), T(F64, [2], "c"))
    case("tt::binary_cross_entropy_with_logits", T(F64, [2, 3], "c"), T(F64, [2, 3], "c"))
    case("tt::binary_cross_entropy_with_logits", T(F64, [3], "c"), T(F64, [3], "c"),
         T(F64, [2], "c"), None, 1)
    case("tt::binary_cross_entropy_with_logits", T(F64, [3], "c", (1, 0, 3, 30, 1), rg=True),
         T(F64, [3], "c", YF, rg=True), None, T(F64, [3], "c", POS), 2)

    # ---- sgd_step: each configuration at step 1 (the buffer's values do
    # not count) and at a later step (the buffer is PyTorch's state), the
    # parameter and buffer compared after the call.
    one, later = T(F32, [], "c", (1, 1, 10, 0, 1)), T(F32, [], "c", (1, 4, 10, 0, 1))
    configs = [(0.1,), (0.05, 0, 0, 0.01), (0.1, 0.9), (0.1, 0.9, 0.3, 0.02),
               (0.01, 0.8, 0.0, 0.1, True), (0.02, 0.5, 0.0, 0.0, False, True),
               (0.1, 0.0, 0.0, 0.1, False, True)]
    for dt in [F64, F32]:
        for cfg in configs:
            mom = len(cfg) > 1 and cfg[1] != 0
            for st in [one, later]:
                buf = T(dt, [3, 4], "c", (5, 2, 7, -3, 2)) if mom else None
                case("tt::sgd_step", T(dt, [3, 4], "t"), T(dt, [3, 4], "s", GRAD_FORM), buf, st,
                     *cfg, after=[0, 2] if mom else [0])
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [2], "c"), None, one, 0.1)
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [3], "c"), None, one, -0.1)
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [3], "c"), T(F64, [3], "c"), one, 0.1, -0.9)
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [3], "c"), None, one, 0.1, 0.0, 0.0, -1.0)
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [3], "c"), None, one, 0.1, 0.0, 0.0, 0.0,
         True)
    case("tt::sgd_step", T(F64, [3], "c"), T(F64, [3], "c"), T(F64, [3], "c"), one, 0.1, 0.9,
         0.5, 0.0, True)


# ------------------------------------------------------------- running

def torch_arg(a, bufs):
    if isinstance(a, T):
        return a.torch(bufs)
    if isinstance(a, TL):
        return [t.torch() if t is not None else None for t in a.ts]  # items never share
    return a


def out_line(r):
    if r is None:
        return "out none\n"
    vals = r.detach().reshape(-1).tolist()
    return "out %s %d %s %s\n" % (DTN[r.dtype], r.dim(),
                                  " ".join(str(v) for v in list(r.shape) + list(r.stride())),
                                  " ".join(fmt(v) for v in vals))


def record(name, op, args, note, ref, tol, after, out):
    w = out.write
    w("case %s\n" % name)
    w("op %s\n" % op)
    if note:
        w("note %s\n" % note)
    if tol:
        w("tol %r\n" % tol)
    for a in args:
        for line in arg_line(a):
            w(line + "\n")
    bufs = []  # each tensor argument's buffer, for arguments that share one
    targs = [torch_arg(a, bufs) for a in args]
    fn = ref or OPS[op]  # a case for an op with no mapping is the table's mistake
    try:
        r = fn(*targs)
    except Exception as e:  # PyTorch refused the call
        w("err %s: %s\n" % (type(e).__name__, str(e).split("\n")[0]))
        w("end\n")
        return
    if op in META_ONLY or name.endswith(" [meta]"):  # values unspecified (random)
        w("meta\n")
        for x in (r if isinstance(r, (tuple, list)) else [r]):
            w("out %s %d %s \n" % (DTN[x.dtype], x.dim(),
                                   " ".join(str(v) for v in list(x.shape) + list(x.stride()))))
        r = r[0] if isinstance(r, (tuple, list)) else r
    elif isinstance(r, (tuple, list)):  # several results; () for a mutating op
        if isinstance(r, ListResult):
            w("list %d\n" % len(r))
        for x in r:
            w(out_line(x))
        r = r[0] if r else None
    else:
        w(out_line(r))
    for i in after:
        w("after %d %s\n" % (i, " ".join(fmt(v) for v in targs[i].detach().reshape(-1).tolist())))
    leaves = []
    for i, (a, t) in enumerate(zip(args, targs)):
        if isinstance(a, T) and a.rg:
            leaves.append((i, t))
        if isinstance(a, TL):
            leaves += [((i, j), x) for j, (s, x) in enumerate(zip(a.ts, t)) if s is not None and s.rg]
    if leaves and r is not None and r.requires_grad:
        r.backward(grad_out(r))
        for i, t in leaves:
            idx = "%d.%d" % i if isinstance(i, tuple) else str(i)
            if t.grad is None:
                w("grad %s none\n" % idx)
            else:
                w("grad %s %s\n" % (idx, " ".join(fmt(v) for v in t.grad.reshape(-1).tolist())))
    w("end\n")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/torch_ref.txt"
    build_cases()
    with open(path, "w") as out:
        out.write("# PyTorch %s's answers for tensortrace's built-in ops, written by "
                  "tools/gen_torch_ref.py\n# (re-run it to regenerate; "
                  "tests/test_torch_ref.c replays this file). %d cases.\n"
                  % (torch.__version__.split("+")[0].split("a")[0], len(CASES)))
        for c in CASES:
            record(*c, out)
    print("%s: %d cases" % (path, len(CASES)))


if __name__ == "__main__":
    main()
