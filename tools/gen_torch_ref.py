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
    arg I V | F V | B 0/1 | S STR | N | L N V.. | BL N 0/1.. | D DTYPE
    arg FL N V..                    a float list (any element a float)
    meta                            compare dtype, sizes, strides only
    tol T                           the case's tolerance (else the dtype's)
    out DTYPE NDIM SIZES.. STRIDES.. VALUES..   (values in row-major order)
    out none                        one line per result, in order
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


class TL:
    def __init__(self, *ts):
        self.ts = ts


def arg_line(a):
    if isinstance(a, T):
        return [a.line()]
    if isinstance(a, TL):
        return ["arg TL %d" % len(a.ts)] + [t.line() for t in a.ts]
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

META_ONLY = {"tt::empty", "tt::empty_strided", "tt::rand", "tt::randn", "tt::new_empty",
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
    case("tt::arange.start_step", 0, 5, 0, None)
    case("tt::arange.start_step", 5, 0, -2, None)
    case("tt::linspace", 0, 1, 1, None)
    case("tt::linspace", 0, 1, -1, None)
    case("tt::new_empty", T(I32, [2], "c"), [3, 2])
    case("tt::empty_like", T(F64, [2, 3, 4], ("p", [2, 0, 1])))
    case("tt::empty_like", T(F64, [2, 3], "s"))
    conv_cases()
    pool_pad_cases()
    norm_dropout_cases()
    activation_loss_cases()


# The convolutional-network families (issue 26), each with its own OPS
# entries and cases.

def conv_cases():
    """convolution, convolution_backward, im2col, col2im."""


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


def norm_dropout_cases():
    """Batch norm, group norm, native_layer_norm, native_dropout."""


def activation_loss_cases():
    """The CNN activations, the losses, sgd_step."""


# ------------------------------------------------------------- running

def torch_arg(a, bufs):
    if isinstance(a, T):
        return a.torch(bufs)
    if isinstance(a, TL):
        return [t.torch() for t in a.ts]  # list items never share
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
    if op in META_ONLY:
        w("meta\n")
        w("out %s %d %s \n" % (DTN[r.dtype], r.dim(),
                               " ".join(str(v) for v in list(r.shape) + list(r.stride()))))
    elif isinstance(r, (tuple, list)):  # several results; () for a mutating op
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
            leaves += [((i, j), x) for j, (s, x) in enumerate(zip(a.ts, t)) if s.rg]
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
