#!/usr/bin/env python3
"""Man pages (section 3) from the public headers' comments.

Usage:
  gen_man.py --list HEADER...               the page names, one a line
  gen_man.py --outdir DIR [--version V] [--expect NAME...] -- HEADER...

A header is read as a sequence of comment blocks and declarations. A
comment block and the declarations right under it (up to a blank line or
the next comment) form a group: the functions (and call-site macros) of a
group share one page, named after the first of them, and every other name
of the group gets a page that is a `.so` link to it, so `man 3 NAME` works
for each name. A comment after a declaration on its own line belongs to
that declaration. Section banners (`/* ---- errors */`) name the page's
section in the header.

--expect lists the pages meson was told at configure time; when the headers
now declare other names the run fails, so a new function cannot silently go
without a page (meson reconfigures when a header changes; see
docs/meson.build).
"""
import os
import re
import sys


def strip_strings(s):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', s)


def items(text):
    """Yields (kind, text, line) with kind 'comment', 'decl', 'pp' or
    'blank', at brace depth 0 (bodies of static inline functions and
    struct definitions are kept inside their declaration)."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            j = i + 1
            # two newlines with only spaces between: a blank line
            m = re.match(r"[ \t]*\n", text[j:])
            if m:
                yield ("blank", "", line)
                line += 1
                i = j
                continue
            line += 1
            i += 1
            continue
        if c in " \t":
            i += 1
            continue
        if text.startswith("/*", i):
            j = text.index("*/", i) + 2
            yield ("comment", text[i:j], line)
            line += text.count("\n", i, j)
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield ("comment", text[i:j], line)
            i = j
            continue
        if c == "#":
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            yield ("pp", text[i:k], line)
            line += text.count("\n", i, k)
            i = k
            continue
        m = re.match(r'extern\s+"C"\s*\{', text[i:])
        if m:  # C++ linkage braces enclose the whole header
            line += m.group(0).count("\n")
            i += m.end()
            continue
        if c == "}":
            i += 1
            continue
        # A declaration: up to ';' at depth 0, or a '}' closing depth 0 that
        # is not followed by a declarator (a function body).
        j, depth, brace = i, 0, i
        while j < n:
            ch = text[j]
            if text.startswith("/*", j):
                j = text.index("*/", j) + 2
                continue
            if ch == '"':
                m = re.match(r'"(?:\\.|[^"\\])*"', text[j:])
                j += m.end()
                continue
            if ch in "({[":
                if ch == "{" and depth == 0:
                    brace = j
                depth += 1
            elif ch in ")}]":
                depth -= 1
                if ch == "}" and depth == 0:
                    # a function body ends the declaration; a struct body
                    # is followed by its declarator
                    if text[i:brace].rstrip().endswith(")"):
                        j += 1
                        break
            elif ch == ";" and depth == 0:
                j += 1
                break
            j += 1
        yield ("decl", text[i:j], line)
        line += text.count("\n", i, j)
        i = j


def comment_text(c):
    if c.startswith("//"):
        return c[2:].strip()
    body = c[2:-2]
    lines = [re.sub(r"^\s*\* ?", "", l) for l in body.split("\n")]
    return "\n".join(l.rstrip() for l in lines).strip()


BANNER = re.compile(r"^/\*\s*-{3,}\s*([^*]*?)\s*\*/$")


def decl_names(kind, text):
    """The public names a declaration or #define declares."""
    if kind == "pp":
        m = re.match(r"#\s*define\s+(tt_\w+)\(", text)
        return [m.group(1)] if m else []
    flat = re.sub(r"/\*.*?\*/", " ", strip_strings(text), flags=re.S)
    if re.match(r"\s*(typedef|struct|enum|union)\b", flat):
        return []
    if re.match(r"\s*static\s+inline\b", flat):
        m = re.search(r"\b(tt_\w+)\s*\(", flat)
        return [m.group(1)] if m else []
    m = re.search(r"\b(tt_\w+)\s*\(", flat)
    if m and not re.match(r"\s*\(\s*\*", flat[m.end() - 1:]):
        return [m.group(1)]
    # An exported variable.
    m = re.search(r"\bextern\b.*?\b(tt_\w+)\s*(?:__attribute__.*)?;\s*$", flat, re.S)
    return [m.group(1)] if m else []


def groups(path):
    """Returns a list of dicts: names, decls (source text), comment,
    section, header."""
    text = open(path, encoding="utf-8").read()
    out = []
    pending = None      # the comment the next declarations belong to
    cur = None          # the group being filled
    section = ""
    last = None
    prev_line_end = -1
    # Types (and TT_ constants) declared since the last function group, with
    # their comments: a header often explains a function above the types
    # it takes (tt_compile under "typedef struct tt_compiled"), so they go
    # on the page of the functions that follow them.
    types = []
    for kind, s, line in items(text):
        if kind == "blank":
            cur = None
            pending = None
            last = kind
            continue
        if kind == "comment":
            m = BANNER.match(s)
            if m:
                section = m.group(1)
                cur = pending = None
                types = []
            elif cur is not None and last in ("decl", "pp") and prev_line_end == line:
                # a trailing comment on the declaration's own line
                cur["notes"].append((cur["decls"][-1][0], comment_text(s)))
            else:
                if cur is not None and last == "comment":
                    pending = (pending or "") + "\n\n" + comment_text(s)
                else:
                    pending = comment_text(s)
                cur = None
            last = kind
            prev_line_end = line + s.count("\n")
            continue
        names = decl_names(kind, s)
        prev_line_end = line + s.count("\n")
        last = kind
        if kind == "pp" and not names:
            if re.match(r"#\s*define\s+TT_[A-Z0-9_]+\s", s) and pending:
                types.append((pending, s.strip()))
                pending = None
            continue
        if not names:
            # a type or a non-function: it ends the group that the comment
            # above it describes
            if re.match(r"\s*(typedef|struct|enum|union)\b", s):
                types.append((pending or "", s.strip()))
            cur = None
            pending = None
            continue
        if cur is None:
            cur = {"names": [], "decls": [], "comment": pending or "", "notes": [],
                   "section": section, "header": os.path.basename(path), "types": types}
            types = []
            out.append(cur)
        for nm in names:
            if nm not in cur["names"]:
                cur["names"].append(nm)
        cur["decls"].append((names[0], s.strip()))
    return out


def all_pages(headers):
    """name -> (primary name, group). A call-site macro over a function
    of the same name (tt_zeros over tt_zeros) adds nothing: the
    function's page is the page; "Call sites" in tt_dispatch.h explains
    the macros. Other function-like macros (tt_data) get pages."""
    gs = [g for h in headers for g in groups(h)]
    funcs = {n for g in gs for kind_n, d in g["decls"]
             if not d.startswith("#") for n in [kind_n]}
    pages = {}
    for g in gs:
        keep = [(n, d) for n, d in g["decls"]
                if not (d.startswith("#") and n in funcs) and n not in pages]
        if not keep:
            continue
        g["decls"] = keep
        g["names"] = []
        for n, _ in keep:
            if n not in g["names"]:
                g["names"].append(n)
        for n in g["names"]:
            pages[n] = (g["names"][0], g)
    return pages


def roff(s):
    s = s.replace("\\", "\\e")
    out = []
    for l in s.split("\n"):
        if l.startswith((".", "'")):
            l = "\\&" + l
        out.append(l)
    return "\n".join(out)


def write_page(outdir, name, g, version):
    title = name
    # An inline function shows its prototype; its body is no interface.
    decls = [re.sub(r"\)\s*\{.*\}\s*$", ");", d, flags=re.S) if re.match(r"static\s+inline", d) else d
             for _, d in g["decls"]]
    desc = "\n\n".join([c for c, _ in g["types"] if c] + ([g["comment"]] if g["comment"] else []))
    names = g["names"]
    types = [d for _, d in g["types"]]
    lines = [
        '.TH %s 3 "" "tensortrace %s" "tensortrace API"' % (title, version),
        ".SH NAME",
        roff(", ".join(names)) + " \\- " + roff(g["section"] or g["header"]),
        ".SH SYNOPSIS",
        ".nf",
        ".B #include <tensortrace.h>",
        "",
        roff("\n\n".join(types + ["\n".join(decls)])),
        ".fi",
        ".SH DESCRIPTION",
    ]
    if desc:
        paras = [p for p in re.split(r"\n\s*\n", desc) if p.strip()]
        for k, p in enumerate(paras):
            if k:
                lines.append(".PP")
            # Keep the comment's own line breaks: lists and code read right.
            lines += [".nf", roff(p), ".fi"]
    else:
        lines.append("Declared in %s, section \"%s\"; see the header's conventions."
                     % (g["header"], g["section"]))
    for n, note in g["notes"]:
        lines += [".PP", ".nf", roff("%s: %s" % (n, note)), ".fi"]
    lines += [
        ".PP",
        "Declared in",
        ".IR %s ." % g["header"],
        "Conventions: a function returning a tensor returns a new reference (release it",
        "with tt_release) or NULL with the error set; tensor arguments are borrowed;",
        "a status other than TT_OK comes with a message from tt_errmsg.",
        ".SH SEE ALSO",
        ".BR tt (1),",
        ".BR tt_errmsg (3),",
        ".BR tt_release (3)",
    ]
    with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    if argv[:1] == ["--list"]:
        for n in sorted(all_pages(argv[1:])):
            print(n)
        return 0
    outdir, version, expect, headers = None, "", None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--outdir":
            outdir = argv[i + 1]
            i += 2
        elif a == "--version":
            version = argv[i + 1]
            i += 2
        elif a == "--expect":
            expect = []
            i += 1
            while i < len(argv) and argv[i] != "--":
                expect.append(argv[i])
                i += 1
        elif a == "--":
            headers = argv[i + 1:]
            break
        else:
            headers.append(a)
            i += 1
    if not outdir or not headers:
        sys.stderr.write(__doc__)
        return 2
    pages = all_pages(headers)
    if expect is not None:
        exp = {os.path.basename(e)[:-2] if e.endswith(".3") else e for e in expect}
        if exp != set(pages):
            sys.stderr.write(
                "gen_man.py: the headers declare other names than configured "
                "(new: %s; gone: %s); run meson setup --reconfigure\n"
                % (", ".join(sorted(set(pages) - exp)) or "-",
                   ", ".join(sorted(exp - set(pages))) or "-"))
            return 1
    os.makedirs(outdir, exist_ok=True)
    for name, (primary, g) in sorted(pages.items()):
        if name == primary:
            write_page(outdir, name, g, version)
        else:
            with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as f:
                f.write(".so man3/%s.3\n" % primary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
