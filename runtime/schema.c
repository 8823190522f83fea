/* The operator schema language: PyTorch's FunctionSchema text, parsed into a
 * tt_schema and printed back in canonical form.
 *
 *   ns::name.overload(Tensor(a!) self, int[2] size, *, float eps=1e-05) -> Tensor(a!)
 *
 * The grammar and the rules follow the JIT's schema parser
 * (torch/csrc/jit/frontend/function_schema_parser.cpp, schema_type_parser.cpp)
 * and FunctionSchema's checks, restricted to the types tensortrace has
 * values for. Where we are stricter than PyTorch (a default of the wrong
 * kind, None for a type that is not optional, a sized list default of the
 * wrong length) the comment at the check says so: PyTorch stores such
 * defaults and fails later, or never, and a C caller is better served by
 * an error that points at the column.
 *
 * Memory: a schema owns one arena (a list of chunks) for every string and
 * list it points at, plus the two argument arrays. All of it comes from
 * tt__malloc, so a failed allocation anywhere makes the parse return NULL
 * with TT_ENOMEM, having freed what it took. */
#include "schema_impl.h"

#include "dispatch_impl.h" /* tt__schema_mark_write */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the struct */

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[]; /* cap bytes */
} arena_chunk;

struct tt_schema {
    const char *ns, *name, *overload; /* in the arena */
    tt_arg *args, *rets;              /* tt__malloc'd arrays */
    int nargs, nrets, cap_args, cap_rets;
    bool writes; /* some argument is written: asked per traced call */
    arena_chunk *arena;
};

/* The largest N of a sized list `int[N]`: a default repeats N values, so an
 * absurd N would be an absurd allocation. */
#define MAX_LIST_SIZE 65536

static const char *const base_names[] = {
    [TT_T_TENSOR] = "Tensor",  [TT_T_INT] = "int",       [TT_T_SYMINT] = "SymInt",
    [TT_T_FLOAT] = "float",    [TT_T_BOOL] = "bool",     [TT_T_STR] = "str",
    [TT_T_SCALAR] = "Scalar",  [TT_T_SCALARTYPE] = "ScalarType",
    [TT_T_DEVICE] = "Device",  [TT_T_LAYOUT] = "Layout",   [TT_T_MEMORY_FORMAT] = "MemoryFormat",
};
#define N_BASE_TYPES ((int)(sizeof base_names / sizeof base_names[0]))
#define KNOWN_TYPES                                                            \
    "Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Device, Layout, MemoryFormat"

/* Types PyTorch's schema parser knows that have no tt_value here. */
static const char *const pytorch_only_types[] = {
    "Generator", "Dimname", "Storage", "Stream",
    "QScheme", "Quantizer", "ConstQuantizerPtr", "DeviceIndex", "complex",
    "SymBool", "Any", "AnyClassType", "AnyEnumType", "Capsule", "None",
    "NoneType", "Dict", "Future", "Await", "RRef", "Union",
};

/* Identifiers the JIT lexer turns into keyword tokens, so PyTorch cannot
 * take them as names either. */
static const char *const reserved_words[] = {
    "True", "False", "None", "NoneType", "Ellipsis", "def", "if", "else",
    "elif", "while", "return", "is", "and", "or", "not", "in", "for",
    "global", "raise", "assert", "break", "continue", "del", "pass",
    "class", "import", "with", "as",
};

/* ------------------------------------------------------------- the lexer */

enum { T_EOF, T_IDENT, T_NUMBER, T_STRING, T_ARROW, T_DCOLON, T_PUNCT, T_BAD };

typedef struct {
    int kind;
    size_t pos, len; /* byte offset in the text and length */
} token;

typedef struct {
    const char *src;
    size_t next; /* where the token after `tok` starts scanning */
    token tok;   /* the current token */
    tt_schema *s;
    bool failed; /* an error is set; the first one wins */
    bool code_default; /* the last ScalarType default was a numeric code */
} parser;

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
static bool digit(char c) { return c >= '0' && c <= '9'; }

static void advance(parser *p)
{
    const char *s = p->src;
    size_t i = p->next, j = i;
    while (s[i] && isspace((unsigned char)s[i]))
        i++;
    token t = {T_EOF, i, 0};
    char c = s[i];
    if (c == '\0') {
        /* T_EOF */
    } else if (ident_start(c)) {
        for (j = i; ident_char(s[j]); j++)
            ;
        t.kind = T_IDENT;
        t.len = j - i;
    } else if (digit(c) || (c == '.' && digit(s[i + 1]))) {
        for (j = i; digit(s[j]); j++)
            ;
        if (s[j] == '.')
            for (j++; digit(s[j]); j++)
                ;
        if (s[j] == 'e' || s[j] == 'E') {
            size_t k = j + 1;
            if (s[k] == '+' || s[k] == '-')
                k++;
            if (digit(s[k]))
                for (j = k; digit(s[j]); j++)
                    ;
        }
        t.kind = T_NUMBER;
        t.len = j - i;
    } else if (c == '\'' || c == '"') {
        for (j = i + 1; s[j] && s[j] != c && s[j] != '\n'; j++)
            if (s[j] == '\\' && s[j + 1])
                j++;
        t.kind = s[j] == c ? T_STRING : T_BAD;
        t.len = s[j] == c ? j + 1 - i : j - i;
    } else if (c == '-' && s[i + 1] == '>') {
        t.kind = T_ARROW;
        t.len = 2;
    } else if (c == ':' && s[i + 1] == ':') {
        t.kind = T_DCOLON;
        t.len = 2;
    } else if (strchr("()[],?!*=.|-:", c)) {
        t.kind = T_PUNCT;
        t.len = 1;
    } else {
        t.kind = T_BAD;
        t.len = 1;
    }
    p->tok = t;
    p->next = i + t.len;
}

static bool at_punct(const parser *p, char c)
{
    return p->tok.kind == T_PUNCT && p->src[p->tok.pos] == c;
}

static bool tok_is(const parser *p, const token *t, const char *word)
{
    size_t n = strlen(word);
    return t->kind == T_IDENT && t->len == n && memcmp(p->src + t->pos, word, n) == 0;
}

static bool at_word(const parser *p, const char *word) { return tok_is(p, &p->tok, word); }

/* "'foo'", "the end of the schema", "an unterminated string" ... */
static const char *describe_tok(const parser *p, const token *t, char *buf, size_t n)
{
    if (t->kind == T_EOF)
        snprintf(buf, n, "the end of the schema");
    else if (t->kind == T_BAD && (p->src[t->pos] == '\'' || p->src[t->pos] == '"'))
        snprintf(buf, n, "an unterminated string");
    else if (t->len > 40)
        snprintf(buf, n, "'%.37s...'", p->src + t->pos);
    else
        snprintf(buf, n, "'%.*s'", (int)t->len, p->src + t->pos);
    return buf;
}

/* -------------------------------------------------------------- errors */

/* Sets TT_ESCHEMA: "schema '<text>': column <c>: <reason>". Columns are
 * 1-based byte offsets into the text. */
__attribute__((format(printf, 3, 4)))
static bool fail_at(parser *p, size_t pos, const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    size_t tl = strlen(p->src);
    int shown = tl > 400 ? 400 : (int)tl;
    tt_error(TT_ESCHEMA, "schema '%.*s%s': column %zu: %s", shown, p->src,
             tl > 400 ? "..." : "", pos + 1, why);
    return false;
}

static bool expected(parser *p, const char *what)
{
    char got[64];
    return fail_at(p, p->tok.pos, "expected %s but found %s", what,
                   describe_tok(p, &p->tok, got, sizeof got));
}

/* ------------------------------------------------------------- memory */

/* Arena memory owned by the schema, 8-byte aligned, never NULL unless the
 * allocation failed (then p->failed is set, TT_ENOMEM is the error). */
static void *palloc(parser *p, size_t n)
{
    if (p->failed)
        return NULL;
    if (n > SIZE_MAX / 2) {
        p->failed = true;
        tt_error(TT_ENOMEM, "out of memory: schema needs %zu bytes", n);
        return NULL;
    }
    n = n ? (n + 7) & ~(size_t)7 : 8;
    arena_chunk *c = p->s->arena;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 1024 ? n : 1024;
        c = tt__malloc(sizeof *c + cap);
        if (!c) {
            p->failed = true;
            return NULL;
        }
        c->used = 0;
        c->cap = cap;
        c->next = p->s->arena;
        p->s->arena = c;
    }
    void *r = (char *)c->data + c->used;
    c->used += n;
    return r;
}

static char *pstrndup(parser *p, const char *s, size_t n)
{
    char *d = palloc(p, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static bool push_arg(parser *p, const tt_arg *a, bool is_return)
{
    tt_schema *s = p->s;
    tt_arg **arr = is_return ? &s->rets : &s->args;
    int *cnt = is_return ? &s->nrets : &s->nargs;
    int *cap = is_return ? &s->cap_rets : &s->cap_args;
    if (*cnt == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        tt_arg *na = tt__realloc(*arr, (size_t)*cap * sizeof **arr, (size_t)nc * sizeof **arr);
        if (!na) {
            p->failed = true;
            return false;
        }
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*cnt)++] = *a;
    return true;
}

/* ------------------------------------------------------------- names */

/* The identifier `t`, checked and copied into the arena; `what` names it in
 * the error ("an argument name"). */
static const char *name_of(parser *p, const token *t, const char *what)
{
    for (size_t i = 0; i < sizeof reserved_words / sizeof reserved_words[0]; i++)
        if (tok_is(p, t, reserved_words[i])) {
            fail_at(p, t->pos, "'%s' is a reserved word and cannot be %s",
                    reserved_words[i], what);
            return NULL;
        }
    return pstrndup(p, p->src + t->pos, t->len);
}

/* The identifier at the current token, as name_of, then moves past it. */
static const char *take_name(parser *p, const char *what)
{
    if (p->tok.kind != T_IDENT) {
        expected(p, what);
        return NULL;
    }
    const char *r = name_of(p, &p->tok, what);
    if (r)
        advance(p);
    return r;
}

static bool parse_op_name(parser *p)
{
    tt_schema *s = p->s;
    token first = p->tok;
    if (first.kind != T_IDENT)
        return expected(p, "an operator name like 'mylib::name'");
    advance(p);
    if (p->tok.kind != T_DCOLON) {
        if (at_punct(p, ':'))
            return expected(p, "'::'");
        /* torch.library only defines namespaced ops ("mylib::name"). */
        return fail_at(p, first.pos, "expected a namespace, like 'mylib::%.*s'",
                       first.len > 40 ? 40 : (int)first.len, p->src + first.pos);
    }
    if (!(s->ns = name_of(p, &first, "a namespace")))
        return false;
    advance(p); /* the '::' */
    if (!(s->name = take_name(p, "an operator name after '::'")))
        return false;
    s->overload = "";
    if (at_punct(p, '.')) {
        advance(p);
        size_t pos = p->tok.pos;
        if (!(s->overload = take_name(p, "an overload name after '.'")))
            return false;
        /* As PyTorch: "default" is how torch.ops spells the overload-less
         * op, and dunder names are Python's attributes. */
        if (strcmp(s->overload, "default") == 0 || strncmp(s->overload, "__", 2) == 0)
            return fail_at(p, pos,
                           "'%s' is not a legal overload name ('default' names the "
                           "op without an overload, and names starting with '__' "
                           "are reserved)", s->overload);
    }
    /* The registry keeps qualified names in fixed buffers: a longer name
     * is refused here rather than truncated there (where two long names
     * would collide and neither could be found). */
    size_t qlen = strlen(s->ns) + 2 + strlen(s->name) +
                  (s->overload[0] ? 1 + strlen(s->overload) : 0);
    if (qlen > TT_MAX_OP_NAME)
        return fail_at(p, first.pos,
                       "the op name '%s::%.20s...' is %zu characters long; at most %d are "
                       "supported (namespace, '::', name and overload together)",
                       s->ns, s->name, qlen, TT_MAX_OP_NAME);
    if (!at_punct(p, '('))
        return expected(p, "'(' to open the argument list");
    return true;
}

/* -------------------------------------------------------------- types */

static bool parse_alias(parser *p, tt_arg *a)
{
    if (at_punct(p, '!')) { /* Tensor!: written, in a fresh set */
        a->is_write = true;
        advance(p);
        return true;
    }
    if (!at_punct(p, '('))
        return true;
    advance(p);
    if (at_punct(p, '*'))
        return fail_at(p, p->tok.pos, "wildcard alias sets ('Tensor(*)') are not "
                                      "supported; name a set, as in 'Tensor(a)'");
    if (!(a->alias_set = take_name(p, "an alias set name like 'a'")))
        return false;
    if (at_punct(p, '|'))
        return fail_at(p, p->tok.pos, "alias annotations with several sets "
                                      "('a|b') are not supported");
    if (at_punct(p, '!')) {
        a->is_write = true;
        advance(p);
    }
    if (p->tok.kind == T_ARROW) {
        advance(p);
        if (!at_punct(p, '*'))
            return expected(p, "'*' after '->' (the only after-set supported is "
                               "the wildcard, as in 'Tensor(a -> *)')");
        a->alias_after_wildcard = true;
        advance(p);
    }
    if (!at_punct(p, ')'))
        return expected(p, "')' to close the alias annotation");
    advance(p);
    return true;
}

static int find_base(const parser *p, const token *t)
{
    for (int i = 0; i < N_BASE_TYPES; i++)
        if (tok_is(p, t, base_names[i]))
            return i;
    return -1;
}

/* type := base [alias] { '?' | '[' [N] ']' }, where the alias annotation is
 * only for Tensor and the suffixes give T?, T[], T[N], T[]?, Tensor?[]. */
static bool parse_type(parser *p, tt_arg *a)
{
    token t = p->tok;
    if (t.kind != T_IDENT)
        return expected(p, "a type");
    const char *text = p->src + t.pos;
    int tl = t.len > 40 ? 40 : (int)t.len;
    int base = find_base(p, &t);
    if (base < 0) {
        if (tok_is(p, &t, "int64_t"))
            return fail_at(p, t.pos, "unknown type 'int64_t'; use 'int' instead "
                                     "(or 'SymInt'): 'int' in a schema is int64_t in C");
        if (tok_is(p, &t, "double"))
            return fail_at(p, t.pos, "unknown type 'double'; use 'float' instead: "
                                     "'float' in a schema is double in C");
        for (size_t i = 0; i < sizeof pytorch_only_types / sizeof pytorch_only_types[0]; i++)
            if (tok_is(p, &t, pytorch_only_types[i]))
                return fail_at(p, t.pos, "type '%.*s' is not supported by tensortrace; "
                                         "known types are " KNOWN_TYPES, tl, text);
        return fail_at(p, t.pos, "unknown type '%.*s'; known types are " KNOWN_TYPES,
                       tl, text);
    }
    tt_type *ty = &a->type;
    ty->base = (tt_base_type)base;
    advance(p);
    if (base == TT_T_TENSOR) {
        if (!parse_alias(p, a))
            return false;
    } else if (at_punct(p, '(') || at_punct(p, '!')) {
        return fail_at(p, p->tok.pos, "alias annotations are only allowed on Tensor, "
                                      "not on '%s'", base_names[base]);
    }

    bool pre_opt = false; /* a '?' before the list brackets */
    size_t pre_opt_pos = 0, list_pos = 0;
    for (;;) {
        if (at_punct(p, '?')) {
            if (ty->is_list ? ty->optional : pre_opt)
                return fail_at(p, p->tok.pos, "'?' twice: a type is optional once");
            if (ty->is_list) {
                ty->optional = true;
            } else {
                pre_opt = true;
                pre_opt_pos = p->tok.pos;
            }
            advance(p);
        } else if (at_punct(p, '[')) {
            list_pos = p->tok.pos;
            if (ty->is_list)
                return fail_at(p, list_pos, "lists of lists are not supported");
            if (ty->optional)
                return fail_at(p, list_pos, "lists of optional lists are not supported");
            advance(p);
            if (p->tok.kind == T_NUMBER) {
                const char *d = p->src + p->tok.pos;
                long v = 0;
                for (size_t i = 0; i < p->tok.len; i++) {
                    if (!digit(d[i]) || v > MAX_LIST_SIZE)
                        return fail_at(p, p->tok.pos, "the size of a list must be an "
                                                      "integer from 1 to %d, got '%.*s'",
                                       MAX_LIST_SIZE, (int)p->tok.len, d);
                    v = v * 10 + (d[i] - '0');
                }
                if (v < 1 || v > MAX_LIST_SIZE)
                    return fail_at(p, p->tok.pos, "the size of a list must be an integer "
                                                  "from 1 to %d, got '%.*s'",
                                   MAX_LIST_SIZE, (int)p->tok.len, d);
                ty->list_size = (int)v;
                advance(p);
            }
            if (!at_punct(p, ']'))
                return expected(p, ty->list_size ? "']'" : "a list size or ']'");
            advance(p);
            ty->is_list = true;
        } else {
            break;
        }
    }
    if (ty->is_list) {
        ty->elem_optional = pre_opt;
        if (pre_opt && base != TT_T_TENSOR)
            return fail_at(p, pre_opt_pos, "only Tensor lists may have optional "
                                           "elements (Tensor?[]); '%s?[]' is not supported",
                           base_names[base]);
        if (base == TT_T_STR || base == TT_T_SCALARTYPE || base == TT_T_DEVICE ||
            base == TT_T_LAYOUT || base == TT_T_MEMORY_FORMAT)
            return fail_at(p, list_pos, "lists of %s are not supported; lists are "
                                        "int[], SymInt[], float[], bool[], Scalar[], "
                                        "Tensor[], Tensor?[]", base_names[base]);
        if (ty->list_size && base != TT_T_INT && base != TT_T_SYMINT &&
            base != TT_T_FLOAT && base != TT_T_BOOL)
            return fail_at(p, list_pos, "a sized list like %s[%d] is only supported "
                                        "for int, SymInt, float and bool",
                           base_names[base], ty->list_size);
    } else {
        ty->optional = pre_opt;
    }
    return true;
}

/* ----------------------------------------------------------- defaults */

static bool number_is_integer(const parser *p, const token *t)
{
    for (size_t i = 0; i < t->len; i++)
        if (!digit(p->src[t->pos + i]))
            return false;
    return true;
}

/* A number, with an optional leading '-', into *out as an int (when the
 * text is an integer and `want_float` is false) or a float. */
static bool parse_number(parser *p, bool want_float, bool allow_float,
                         const char *tname, tt_value *out)
{
    size_t pos = p->tok.pos;
    bool neg = false;
    if (at_punct(p, '-')) {
        neg = true;
        advance(p);
        if (p->tok.kind != T_NUMBER)
            return expected(p, "a number after '-'");
    }
    token t = p->tok;
    if (t.kind != T_NUMBER) {
        char got[64];
        describe_tok(p, &t, got, sizeof got);
        if (at_word(p, "inf") || at_word(p, "nan"))
            return fail_at(p, t.pos, "expected a number as the default of '%s' but "
                                     "found %s (the schema language, like PyTorch's, "
                                     "has no literal for it)", tname, got);
        return fail_at(p, t.pos, "expected %s as the default of '%s' but found %s",
                       allow_float ? "a number" : "an integer", tname, got);
    }
    bool integral = number_is_integer(p, &t);
    if (!integral && !allow_float)
        return fail_at(p, pos, "expected an integer as the default of '%s' but found "
                               "'%s%.*s'", tname, neg ? "-" : "", (int)t.len,
                       p->src + t.pos);
    char num[72];
    if (t.len > 64)
        return fail_at(p, pos, "the number '%.20s...' is too long", p->src + t.pos);
    snprintf(num, sizeof num, "%s%.*s", neg ? "-" : "", (int)t.len, p->src + t.pos);
    errno = 0;
    if (integral && !want_float) {
        long long v = strtoll(num, NULL, 10);
        if (errno == ERANGE)
            return fail_at(p, pos, "the integer %s is out of range (64 bits)", num);
        *out = tt_v_int(v);
    } else {
        double v = strtod(num, NULL);
        if (isinf(v))
            return fail_at(p, pos, "the number %s is out of range for a float", num);
        *out = tt_v_float(v);
    }
    advance(p);
    return true;
}

/* The body of a string literal token, unescaped into the arena. */
static const char *parse_string(parser *p)
{
    const char *s = p->src + p->tok.pos + 1;
    size_t n = p->tok.len - 2;
    char *d = palloc(p, n + 1);
    if (!d)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\') {
            d[k++] = c;
            continue;
        }
        size_t at = p->tok.pos + 1 + i;
        c = s[++i];
        switch (c) {
        case 'n': d[k++] = '\n'; break;
        case 't': d[k++] = '\t'; break;
        case 'r': d[k++] = '\r'; break;
        case 'a': d[k++] = '\a'; break;
        case 'b': d[k++] = '\b'; break;
        case 'f': d[k++] = '\f'; break;
        case 'v': d[k++] = '\v'; break;
        case '\\': case '\'': case '"': d[k++] = c; break;
        default:
            if (c >= '0' && c <= '7') {
                int v = 0, m = 0;
                while (m < 3 && i < n && s[i] >= '0' && s[i] <= '7') {
                    v = v * 8 + (s[i++] - '0');
                    m++;
                }
                i--;
                if (v == 0 || v > 255) {
                    fail_at(p, at, "a string default cannot hold '\\%.*s'", m, s + i + 1 - m);
                    return NULL;
                }
                d[k++] = (char)v;
            } else {
                fail_at(p, at, "unknown escape sequence '\\%c' in a string", c);
                return NULL;
            }
        }
    }
    d[k] = '\0';
    advance(p);
    return d;
}

/* One value of type `base` (a scalar default, or one element of a list
 * default when in_list). */
static bool parse_value(parser *p, tt_base_type base, bool in_list,
                        const char *tname, tt_value *out)
{
    char got[64];
    describe_tok(p, &p->tok, got, sizeof got);
    size_t pos = p->tok.pos;
    switch (base) {
    case TT_T_INT:
    case TT_T_SYMINT:
        /* Stricter than PyTorch, which stores True for an int. */
        return parse_number(p, false, false, tname, out);
    case TT_T_FLOAT:
        return parse_number(p, true, true, tname, out);
    case TT_T_SCALAR:
        if (!in_list && (at_word(p, "True") || at_word(p, "False"))) {
            *out = tt_v_bool(at_word(p, "True"));
            advance(p);
            return true;
        }
        return parse_number(p, in_list, true, tname, out);
    case TT_T_BOOL:
        if (at_word(p, "True") || at_word(p, "False")) {
            *out = tt_v_bool(at_word(p, "True"));
            advance(p);
            return true;
        }
        /* Stricter than PyTorch, which stores the int 2 for `bool b=2`. */
        return fail_at(p, pos, "expected True or False as the default of '%s' but "
                               "found %s", tname, got);
    case TT_T_STR: {
        if (p->tok.kind != T_STRING)
            return fail_at(p, pos, "expected a string like \"mean\" as the default of "
                                   "'%s' but found %s", tname, got);
        const char *s = parse_string(p);
        if (!s)
            return false;
        *out = tt_v_str(s);
        return true;
    }
    case TT_T_SCALARTYPE: {
        int dt = -1;
        if (p->tok.kind == T_NUMBER && number_is_integer(p, &p->tok)) {
            /* PyTorch prints a dtype default as its c10::ScalarType code
             * (randperm's `ScalarType? dtype=4` is long). */
            static const int codes[][2] = {{0, TT_U8}, {3, TT_I32}, {4, TT_I64},
                                           {6, TT_F32}, {7, TT_F64}, {11, TT_BOOL}};
            long code = p->tok.len < 4 ? strtol(p->src + p->tok.pos, NULL, 10) : -1;
            for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
                if (codes[i][0] == code)
                    dt = codes[i][1];
            if (dt < 0)
                return fail_at(p, pos, "the ScalarType code %s (the default of '%s') names "
                                       "no dtype tensortrace has; the codes are 0 (uint8), "
                                       "3 (int32), 4 (int64), 6 (float32), 7 (float64), "
                                       "11 (bool)", got, tname);
            *out = tt_v_dtype((tt_dtype)dt);
            p->code_default = true;
            advance(p);
            return true;
        }
        if (p->tok.kind == T_IDENT) {
            char name[48];
            snprintf(name, sizeof name, "%.*s", (int)(p->tok.len < 40 ? p->tok.len : 40),
                     p->src + p->tok.pos);
            dt = tt_dtype_from_name(name);
        }
        if (dt < 0)
            return fail_at(p, pos, "expected a dtype as the default of '%s' (float32, "
                                   "float64, int64, int32, uint8, bool, or float, long, "
                                   "...) but found %s", tname, got);
        *out = tt_v_dtype((tt_dtype)dt);
        advance(p);
        return true;
    }
    case TT_T_DEVICE: {
        if (p->tok.kind != T_STRING)
            return fail_at(p, pos, "expected a device string like \"cpu\" as the "
                                   "default of '%s' but found %s", tname, got);
        const char *s = parse_string(p);
        if (!s)
            return false;
        int d = tt_device_from_name(s);
        if (d < 0)
            return fail_at(p, pos, "unknown device '%.40s'; known devices are cpu, "
                                   "cuda, meta", s);
        *out = tt_v_device((tt_device)d);
        return true;
    }
    case TT_T_LAYOUT:
    case TT_T_MEMORY_FORMAT: {
        /* Their int codes, as PyTorch prints these defaults. */
        int64_t max = base == TT_T_LAYOUT ? 0 : 3;
        if (p->tok.kind == T_NUMBER && number_is_integer(p, &p->tok) && p->tok.len < 4) {
            int64_t v = strtol(p->src + p->tok.pos, NULL, 10);
            if (v <= max) {
                *out = tt_v_int(v);
                advance(p);
                return true;
            }
        }
        return fail_at(p, pos, "expected %s as the default of '%s' but found %s",
                       base == TT_T_LAYOUT ? "0 (torch.strided, the only layout)"
                                           : "a memory format code from 0 to 3 "
                                             "(contiguous, preserve, channels_last, "
                                             "channels_last_3d)", tname, got);
    }
    case TT_T_TENSOR:
        break;
    }
    return fail_at(p, pos, "a '%s' argument can only default to None", tname);
}

/* A list default: `[1, 2]`, `[]`, or for a sized list one value repeated N
 * times (`int[2] stride=1` is [1, 1], as PyTorch reads it). */
static bool parse_list_default(parser *p, tt_arg *a, const char *tname)
{
    tt_type *ty = &a->type;
    size_t pos = p->tok.pos;
    tt_value *tmp = NULL;
    int n = 0, cap = 0;
    bool ok = false;
    if (!at_punct(p, '[')) {
        if (!ty->list_size) {
            /* PyTorch's parser too wants '[' here. */
            char got[64];
            return fail_at(p, pos, "expected a list like [1, 2] as the default of '%s' "
                                   "but found %s (a single value is repeated only for a "
                                   "sized list such as int[2])",
                           tname, describe_tok(p, &p->tok, got, sizeof got));
        }
        tt_value v;
        if (!parse_value(p, ty->base, true, tname, &v))
            return false;
        if (!(tmp = tt__malloc(sizeof *tmp * (size_t)ty->list_size))) {
            p->failed = true;
            return false;
        }
        for (n = 0; n < ty->list_size; n++)
            tmp[n] = v;
    } else {
        advance(p);
        while (!at_punct(p, ']')) {
            if (n == cap) {
                int nc = cap ? cap * 2 : 8;
                tt_value *nt = tt__realloc(tmp, sizeof *tmp * (size_t)cap,
                                           sizeof *tmp * (size_t)nc);
                if (!nt) {
                    p->failed = true;
                    goto out;
                }
                tmp = nt;
                cap = nc;
            }
            if (n >= MAX_LIST_SIZE) {
                fail_at(p, p->tok.pos, "a list default holds at most %d values",
                        MAX_LIST_SIZE);
                goto out;
            }
            if (!parse_value(p, ty->base, true, tname, &tmp[n]))
                goto out;
            n++;
            if (at_punct(p, ','))
                advance(p);
            else if (!at_punct(p, ']')) {
                expected(p, "',' or ']' in the list");
                goto out;
            }
        }
        advance(p);
        /* Stricter than PyTorch, which keeps a list of the wrong length,
         * but with its two idioms: the empty list means "unset" (avg_pool2d's
         * `int[2] stride=[]` is "as kernel_size"), and `int[1]` is how aten
         * spells "one dim or several" (`int[1] dims=[]`), any length. */
        if (ty->list_size > 1 && n != 0 && n != ty->list_size) {
            fail_at(p, pos, "the default of '%s' has %d value%s, expected %d (or [] for "
                            "\"unset\")", tname, n, n == 1 ? "" : "s", ty->list_size);
            goto out;
        }
    }
    switch (ty->base) {
    case TT_T_INT:
    case TT_T_SYMINT: {
        int64_t *v = palloc(p, sizeof *v * (size_t)n);
        if (!v)
            goto out;
        for (int i = 0; i < n; i++)
            v[i] = tmp[i].u.i;
        a->default_value = tt_v_ints(n, v);
        break;
    }
    case TT_T_FLOAT:
    case TT_T_SCALAR: { /* a Scalar list is stored as floats */
        double *v = palloc(p, sizeof *v * (size_t)n);
        if (!v)
            goto out;
        for (int i = 0; i < n; i++)
            v[i] = tmp[i].kind == TT_V_INT ? (double)tmp[i].u.i : tmp[i].u.f;
        a->default_value = tt_v_floats(n, v);
        break;
    }
    case TT_T_BOOL: {
        bool *v = palloc(p, sizeof *v * (size_t)n);
        if (!v)
            goto out;
        for (int i = 0; i < n; i++)
            v[i] = tmp[i].u.b;
        a->default_value = tt_v_bools(n, v);
        break;
    }
    default:
        fail_at(p, pos, "a '%s' argument can only default to None", tname);
        goto out;
    }
    ok = true;
out:
    tt__free(tmp);
    return ok;
}

static bool parse_default(parser *p, tt_arg *a)
{
    char tname[48];
    tt_type_str(&a->type, tname, sizeof tname);
    size_t pos = p->tok.pos;
    a->has_default = true;
    if (at_word(p, "None")) {
        /* Stricter than PyTorch's parser, which also takes `int x=None`:
         * None is the value of an optional type only. */
        if (!a->type.optional)
            return fail_at(p, pos, "None is not a valid default for '%s', which is not "
                                   "optional (write '%s?')", tname, tname);
        a->default_value = tt_v_none();
        advance(p);
        return true;
    }
    if (a->type.base == TT_T_TENSOR)
        return fail_at(p, pos, "a '%s' argument can only default to None%s", tname,
                       a->type.optional ? "" : ", and only when it is optional");
    if (a->type.is_list)
        return parse_list_default(p, a, tname);
    p->code_default = false;
    if (!parse_value(p, a->type.base, false, tname, &a->default_value))
        return false;
    a->default_is_code = p->code_default;
    return true;
}

/* --------------------------------------------------------- arguments */

static bool parse_argument(parser *p, bool kwarg_only, bool *seen_default)
{
    tt_arg a;
    memset(&a, 0, sizeof a);
    a.default_value = tt_v_none();
    if (!parse_type(p, &a))
        return false;
    size_t name_pos = p->tok.pos;
    if (!(a.name = take_name(p, "an argument name")))
        return false;
    for (int i = 0; i < p->s->nargs; i++)
        if (strcmp(p->s->args[i].name, a.name) == 0)
            return fail_at(p, name_pos, "duplicate argument name '%s'", a.name);
    a.kwarg_only = kwarg_only;
    if (at_punct(p, '=')) {
        advance(p);
        if (!parse_default(p, &a))
            return false;
        *seen_default = true;
    } else if (*seen_default && !kwarg_only &&
               !(a.type.is_list && !a.type.optional)) {
        /* FunctionSchema::checkSchema's rule, with its exception for
         * (non-optional) lists, which PyTorch keeps for old schemas. */
        return fail_at(p, name_pos, "non-default argument '%s' follows an argument "
                                    "with a default; give it a default or make it "
                                    "keyword-only (after '*')", a.name);
    }
    return push_arg(p, &a, false);
}

static bool parse_arguments(parser *p)
{
    advance(p); /* the '(' */
    bool kwarg_only = false, seen_default = false, star_pending = false;
    size_t star_pos = 0;
    if (at_punct(p, ')')) {
        advance(p);
        return true;
    }
    for (;;) {
        if (at_punct(p, '*')) {
            if (kwarg_only)
                return fail_at(p, p->tok.pos, "'*' appears twice; keyword-only "
                                              "arguments are marked once");
            kwarg_only = star_pending = true;
            star_pos = p->tok.pos;
            advance(p);
        } else {
            if (!parse_argument(p, kwarg_only, &seen_default))
                return false;
            star_pending = false;
        }
        if (at_punct(p, ',')) {
            advance(p);
        } else if (at_punct(p, ')')) {
            advance(p);
            break;
        } else {
            return expected(p, "',' or ')'");
        }
    }
    if (star_pending)
        return fail_at(p, star_pos, "'*' must be followed by a keyword-only argument");
    return true;
}

static bool parse_return(parser *p)
{
    tt_arg r;
    memset(&r, 0, sizeof r);
    r.name = "";
    r.default_value = tt_v_none();
    if (!parse_type(p, &r))
        return false;
    if (p->tok.kind == T_IDENT) {
        size_t name_pos = p->tok.pos;
        if (!(r.name = take_name(p, "a return name")))
            return false;
        for (int i = 0; i < p->s->nrets; i++)
            if (strcmp(p->s->rets[i].name, r.name) == 0)
                return fail_at(p, name_pos, "duplicate return name '%s'", r.name);
    }
    if (at_punct(p, '='))
        return fail_at(p, p->tok.pos, "a return cannot have a default");
    return push_arg(p, &r, true);
}

static bool parse_returns(parser *p)
{
    if (p->tok.kind != T_ARROW)
        return expected(p, "'->' after the argument list");
    advance(p);
    if (!at_punct(p, '('))
        return parse_return(p);
    advance(p);
    if (at_punct(p, ')')) {
        advance(p);
        return true;
    }
    for (;;) {
        if (!parse_return(p))
            return false;
        if (at_punct(p, ',')) {
            advance(p);
        } else if (at_punct(p, ')')) {
            advance(p);
            return true;
        } else {
            return expected(p, "',' or ')' in the returns");
        }
    }
}

/* ------------------------------------------------------------ public */

tt_schema *tt_schema_parse(const char *text)
{
    if (!text) {
        tt_error(TT_EINVAL, "tt_schema_parse: argument 'text' expects a schema, got NULL");
        return NULL;
    }
    tt_schema *s = tt__calloc(1, sizeof *s);
    if (!s)
        return NULL;
    parser P = {.src = text, .s = s};
    parser *p = &P;
    advance(p);
    if (parse_op_name(p) && parse_arguments(p) && parse_returns(p) &&
        p->tok.kind != T_EOF) {
        char got[64];
        fail_at(p, p->tok.pos, "unexpected %s after the end of the schema",
                describe_tok(p, &p->tok, got, sizeof got));
    }
    if (p->failed) {
        tt_schema_free(s);
        return NULL;
    }
    for (int i = 0; i < s->nargs; i++)
        s->writes |= s->args[i].is_write;
    return s;
}

void tt_schema_free(tt_schema *s)
{
    if (!s)
        return;
    for (arena_chunk *c = s->arena, *next; c; c = next) {
        next = c->next;
        tt__free(c);
    }
    tt__free(s->args);
    tt__free(s->rets);
    tt__free(s);
}

const char *tt_schema_ns(const tt_schema *s) { return s ? s->ns : ""; }
const char *tt_schema_name(const tt_schema *s) { return s ? s->name : ""; }
const char *tt_schema_overload(const tt_schema *s) { return s ? s->overload : ""; }
int tt_schema_nargs(const tt_schema *s) { return s ? s->nargs : 0; }
int tt_schema_nreturns(const tt_schema *s) { return s ? s->nrets : 0; }

const tt_arg *tt_schema_arg(const tt_schema *s, int i)
{
    return s && i >= 0 && i < s->nargs ? &s->args[i] : NULL;
}

const tt_arg *tt_schema_return(const tt_schema *s, int i)
{
    return s && i >= 0 && i < s->nrets ? &s->rets[i] : NULL;
}

bool tt_schema_is_mutable(const tt_schema *s) { return s && s->writes; }

/* Argument i becomes Tensor(a<i>!), the annotation torch.library's
 * infer_schema writes for a name in mutates_args. The set names are static
 * strings, so this cannot fail; past a63 the write has no set name (as
 * Tensor!), which no op reaches (the registry takes 32 arguments). */
void tt__schema_mark_write(tt_schema *s, int i)
{
    static const char *const names[] = {
        "a0",  "a1",  "a2",  "a3",  "a4",  "a5",  "a6",  "a7",  "a8",  "a9",
        "a10", "a11", "a12", "a13", "a14", "a15", "a16", "a17", "a18", "a19",
        "a20", "a21", "a22", "a23", "a24", "a25", "a26", "a27", "a28", "a29",
        "a30", "a31", "a32", "a33", "a34", "a35", "a36", "a37", "a38", "a39",
        "a40", "a41", "a42", "a43", "a44", "a45", "a46", "a47", "a48", "a49",
        "a50", "a51", "a52", "a53", "a54", "a55", "a56", "a57", "a58", "a59",
        "a60", "a61", "a62", "a63",
    };
    if (!s || i < 0 || i >= s->nargs)
        return;
    tt_arg *a = &s->args[i];
    a->is_write = true;
    s->writes = true;
    if (!a->alias_set && i < (int)(sizeof names / sizeof names[0]))
        a->alias_set = names[i];
}

/* ---------------------------------------------------------- printing */

/* Appends into a caller's buffer, counting what it would need. */
typedef struct {
    char *buf;
    size_t cap, len;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->len < b->cap) {
        size_t room = b->cap - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
    }
    b->len += n;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3)))
static void putf(sbuf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(b, tmp, n < (int)sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_double(sbuf *b, double v)
{
    char tmp[40];
    tt__format_double(v, tmp, sizeof tmp);
    puts_(b, tmp);
}

/* Double quotes, with C escapes; other control bytes as \ooo. */
static void put_quoted(sbuf *b, const char *s)
{
    puts_(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *e = NULL;
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\t': e = "\\t"; break;
        case '\r': e = "\\r"; break;
        case '\a': e = "\\a"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\v': e = "\\v"; break;
        }
        if (e)
            puts_(b, e);
        else if (c < 0x20 || c == 0x7f)
            putf(b, "\\%03o", c);
        else
            put(b, (const char *)&c, 1);
    }
    puts_(b, "\"");
}

static void put_type(sbuf *b, const tt_type *t, const tt_arg *alias)
{
    puts_(b, (unsigned)t->base < (unsigned)N_BASE_TYPES ? base_names[t->base] : "?");
    if (alias && alias->alias_set) {
        puts_(b, "(");
        puts_(b, alias->alias_set);
        if (alias->is_write)
            puts_(b, "!");
        if (alias->alias_after_wildcard)
            puts_(b, " -> *");
        puts_(b, ")");
    } else if (alias && alias->is_write) {
        puts_(b, "!");
    }
    if (t->elem_optional)
        puts_(b, "?");
    if (t->is_list) {
        if (t->list_size > 0)
            putf(b, "[%d]", t->list_size);
        else
            puts_(b, "[]");
    }
    if (t->optional)
        puts_(b, "?");
}

static bool list_all_equal(const tt_value *v)
{
    for (int i = 1; i < v->n; i++) {
        if (v->kind == TT_V_INTS && v->u.ints[i] != v->u.ints[0])
            return false;
        if (v->kind == TT_V_FLOATS && memcmp(&v->u.floats[i], &v->u.floats[0], sizeof(double)))
            return false;
        if (v->kind == TT_V_BOOLS && v->u.bools[i] != v->u.bools[0])
            return false;
    }
    return true;
}

static void put_list_elem(sbuf *b, const tt_value *v, int i)
{
    if (v->kind == TT_V_INTS)
        putf(b, "%lld", (long long)v->u.ints[i]);
    else if (v->kind == TT_V_FLOATS)
        put_double(b, v->u.floats[i]);
    else
        puts_(b, v->u.bools[i] ? "True" : "False");
}

static void put_default(sbuf *b, const tt_arg *a)
{
    const tt_value *v = &a->default_value;
    switch (v->kind) {
    case TT_V_NONE: puts_(b, "None"); break;
    case TT_V_INT: putf(b, "%lld", (long long)v->u.i); break;
    case TT_V_FLOAT: put_double(b, v->u.f); break;
    case TT_V_BOOL: puts_(b, v->u.b ? "True" : "False"); break;
    case TT_V_STR: put_quoted(b, v->u.s); break;
    case TT_V_DTYPE:
        if (a->default_is_code)
            putf(b, "%d", tt__dtype_scalar_type_code(v->u.dtype));
        else
            puts_(b, tt__dtype_schema_name(v->u.dtype));
        break;
    case TT_V_DEVICE:
        /* PyTorch prints a Device default bare (cpu), which its own parser
         * does not read back; we keep the quotes it was written with. */
        put_quoted(b, tt_device_name(v->u.device));
        break;
    case TT_V_INTS:
    case TT_V_FLOATS:
    case TT_V_BOOLS:
        /* PyTorch's convention for sized lists: `int[2] stride=1`, not
         * [1, 1], when every value is the same. It applies it to unsized
         * int lists too, which its parser then rejects; we keep the brackets
         * there so that the text parses back, and for a sized list of
         * another length (`int[1]` takes any: `bool[1] m=[True, True]`),
         * whose one value would parse back as N of them. */
        if (a->type.list_size > 0 && v->n > 1 && v->n == a->type.list_size &&
            list_all_equal(v)) {
            put_list_elem(b, v, 0);
            break;
        }
        puts_(b, "[");
        for (int i = 0; i < v->n; i++) {
            if (i)
                puts_(b, ", ");
            put_list_elem(b, v, i);
        }
        puts_(b, "]");
        break;
    default: puts_(b, "?"); break;
    }
}

int tt__arg_print(const tt_arg *a, bool with_alias, char *buf, size_t n)
{
    sbuf b = {buf, n, 0};
    if (a->kwarg_only)
        puts_(&b, "*, ");
    put_type(&b, &a->type, with_alias ? a : NULL);
    puts_(&b, " ");
    puts_(&b, a->name);
    if (a->has_default) {
        puts_(&b, "=");
        put_default(&b, a);
    }
    if (n > 0)
        buf[b.len < n ? b.len : n - 1] = '\0';
    return b.len > INT_MAX ? INT_MAX : (int)b.len;
}

int tt_schema_print(const tt_schema *s, char *buf, size_t n)
{
    sbuf b = {buf, n, 0};
    if (!s) {
        puts_(&b, "(null)");
    } else {
        puts_(&b, s->ns); /* any length: putf cuts at 63 bytes */
        puts_(&b, "::");
        puts_(&b, s->name);
        if (s->overload[0]) {
            puts_(&b, ".");
            puts_(&b, s->overload);
        }
        puts_(&b, "(");
        bool star = false;
        for (int i = 0; i < s->nargs; i++) {
            const tt_arg *a = &s->args[i];
            if (i)
                puts_(&b, ", ");
            if (a->kwarg_only && !star) {
                puts_(&b, "*, ");
                star = true;
            }
            put_type(&b, &a->type, a);
            puts_(&b, " ");
            puts_(&b, a->name);
            if (a->has_default) {
                puts_(&b, "=");
                put_default(&b, a);
            }
        }
        puts_(&b, ") -> ");
        if (s->nrets != 1)
            puts_(&b, "(");
        for (int i = 0; i < s->nrets; i++) {
            const tt_arg *r = &s->rets[i];
            if (i)
                puts_(&b, ", ");
            put_type(&b, &r->type, r);
            if (r->name && r->name[0]) {
                puts_(&b, " ");
                puts_(&b, r->name);
            }
        }
        if (s->nrets != 1)
            puts_(&b, ")");
    }
    if (n > 0)
        buf[b.len < n ? b.len : n - 1] = '\0';
    return b.len > INT_MAX ? INT_MAX : (int)b.len;
}

char *tt_type_str(const tt_type *t, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    sbuf b = {buf, n, 0};
    if (t)
        put_type(&b, t, NULL);
    else
        puts_(&b, "?");
    buf[b.len < n ? b.len : n - 1] = '\0';
    return buf;
}
