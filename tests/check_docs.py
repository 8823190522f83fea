#!/usr/bin/env python3
"""The programs and commands that README.md and docs/*.md show.

Usage:
  check_docs.py extract ROOT WORK   writes the pages' programs into WORK
  check_docs.py expect SHOWN ACTUAL compares a shown output with a real one

tools/run's install check calls both: it builds every extracted program
against the installed library (pkg-config, only <tensortrace.h>), runs it,
and compares its output with what the page shows; it runs the pages' `tt`
commands with the installed `tt` the same way.

extract: every C block of a page that is a whole translation unit (it has
an #include) becomes WORK/doc-PAGE-N.c, PAGE being "readme" or the docs
page's name ("custom-ops"). With a main() it is built and run (in WORK,
which is also its first argument), without one it is compiled. Other
blocks are fragments of those (a kernel, a registration), shown for
reading. A program followed directly by a ```text block must print that
text: WORK/doc-PAGE-N.expected. A ```sh block of `tt` commands (and `cat`
of a file they wrote) followed by a ```text block becomes
WORK/doc-PAGE-tt-K.sh and its .expected. A block quoting an example of
examples/ (same first line) must quote all of it.

expect: lines must match in order; a line "..." stands for any number of
lines, and a line ending in "..." for any line starting with the text
before it. Prints the first difference.
"""
import glob
import os
import re
import sys


def pages(root):
    out = [("readme", os.path.join(root, "README.md"))]
    for p in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        stem = os.path.basename(p)[:-3]
        out.append((re.sub(r"[^\w-]", "_", stem), p))
    return out


def extract_page(root, tag, path, work):
    text = open(path, encoding="utf-8").read()
    rel = os.path.relpath(path, root)
    blocks = list(re.finditer(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S))
    n = 0
    for i, b in enumerate(blocks):
        if b.group(1) != "c":
            continue
        n += 1
        # Its __FILE__ is the example's name when it quotes one, and that
        # of a block whose first line is "/* NAME.c: ..." is NAME.c, so the
        # source lines a printed graph shows are the ones a reader sees.
        first = b.group(2).split("\n", 1)[0]
        m = re.match(r"/\* ([\w-]+\.c):", first)
        name = m.group(1) if m else None
        for ex in glob.glob(os.path.join(root, "examples", "*.c")):
            src = open(ex, encoding="utf-8").read()
            if src.split("\n", 1)[0] == first:
                name = os.path.basename(ex)
                if src != b.group(2):
                    sys.exit("%s quotes %s, and the quote differs from the file"
                             % (rel, os.path.relpath(ex, root)))
        base = "%s/doc-%s-%d" % (work, tag, n)
        with open(base + ".c", "w", encoding="utf-8") as f:
            f.write(('#line 1 "%s"\n' % name if name else "") + b.group(2))
        with open(base + ".page", "w", encoding="utf-8") as f:
            f.write("%s, C block %d\n" % (rel, n))
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if (nxt and nxt.group(1) == "text" and not text[b.end():nxt.start()].strip()
                and "int main" in b.group(2)):
            with open(base + ".expected", "w", encoding="utf-8") as f:
                f.write(nxt.group(2))
    k = 0
    for i, b in enumerate(blocks[:-1]):
        nxt = blocks[i + 1]
        cmds = b.group(2).replace("\\\n", " ").splitlines()
        if (b.group(1) != "sh" or nxt.group(1) != "text"
                or text[b.end():nxt.start()].strip()
                or not cmds or not all(c.startswith(("tt ", "cat ")) for c in cmds)):
            continue
        k += 1
        base = "%s/doc-%s-tt-%d" % (work, tag, k)
        with open(base + ".sh", "w", encoding="utf-8") as f:
            f.write("".join(c + " 2>&1\n" for c in cmds))
        with open(base + ".expected", "w", encoding="utf-8") as f:
            f.write(nxt.group(2))
        with open(base + ".page", "w", encoding="utf-8") as f:
            f.write("%s, tt commands %d\n" % (rel, k))
    return n, k


def extract(root, work):
    os.makedirs(work, exist_ok=True)
    total = 0
    for tag, path in pages(root):
        n, k = extract_page(root, tag, path, work)
        total += n + k
    print("check_docs: %d programs and command blocks from %d pages"
          % (total, len(pages(root))))
    return 0


def expect(shown_path, actual_path):
    shown = open(shown_path, encoding="utf-8").read().splitlines()
    actual = open(actual_path, encoding="utf-8", errors="replace").read().splitlines()

    def line_ok(pat, line):
        if pat.endswith("...") and pat != "...":
            return line.startswith(pat[:-3])
        return pat == line

    def match(i, j):
        if i == len(shown):
            return j == len(actual)
        if shown[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and line_ok(shown[i], actual[j]) and match(i + 1, j + 1)

    if match(0, 0):
        return 0
    k = 0
    while k < len(shown) and k < len(actual) and line_ok(shown[k], actual[k]):
        k += 1
    print("the page shows (line %d): %s" % (k + 1, shown[k] if k < len(shown) else "<end>"),
          file=sys.stderr)
    print("the program prints:      %s" % (actual[k] if k < len(actual) else "<end>"),
          file=sys.stderr)
    return 1


def main(argv):
    if len(argv) == 3 and argv[0] == "extract":
        return extract(argv[1], argv[2])
    if len(argv) == 3 and argv[0] == "expect":
        return expect(argv[1], argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
