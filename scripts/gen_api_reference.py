#!/usr/bin/env python3
"""gen_api_reference.py - makes docs/api.md from the public headers, and
checks that every public function says who owns what.

What it reads: the headers the build installs (the install_headers() calls
of the meson.build files reached from the top one), in the order the
umbrella header includes them. What it is not: a C parser. It understands
the way tapegrad's headers are written, and says so when it meets something
it does not understand:

- `/* ---------- name */` rules divide a header into sections; a comment on
  the line right after a rule is the section's introduction.
- A comment directly above a declaration (no blank line between) belongs to
  the run of declarations that follows it, up to the next blank line or
  comment; a `// ...` at the end of a line belongs to that declaration. A
  comment that no declaration follows is shown where it stands.
- Declarations are prototypes (possibly over several lines, #if lines and
  __attribute__ included), typedefs (structs, enums, function pointers,
  opaque types) and #define macros. The include guard, #include and the
  extern "C" lines are skipped.

docs/api.md shows, per header and per section, each run of declarations as
a C block copied verbatim from the header (tagged for
scripts/check_doc_samples.py, which checks that the copy is exact), its
comment as prose, and for each function an Ownership line.

Ownership is read from the comment of each function, clause by clause (a
clause ends at "; " or at a full stop before a space). The words it knows:

  what the function returns, for a function that returns a pointer:
    "new reference"             a new reference the caller releases
    "the caller frees"          memory or an object the caller frees (with
                                free(), "with tg_x_free()", ...)
    "borrowed" (not after an argument name, see below)
                                a borrowed pointer ("valid while ..." is
                                quoted when the comment says it)
  what happens to the arguments:
    "x borrowed", "a and b are borrowed", "arguments borrowed"
    "takes ownership of child"  the function takes the caller's reference
    "*mean ... new reference", "out receives new references"
                                an out-pointer receiving new references

A function returning a pointer must say what it returns; every pointer
argument must be covered, by name or by "arguments borrowed" (which a
section's introduction may also say once for the whole section); an
out-pointer (tg_tensor **, or a struct holding tensors that the function
fills) must be named.

Usage:
  gen_api_reference.py [--root DIR] --write    regenerate docs/api.md
  gen_api_reference.py [--root DIR] --check    exit 1 if docs/api.md is stale,
                                               a function's ownership cannot
                                               be derived, or a declared
                                               function is missing from it
  gen_api_reference.py --self-test             run the checks on fixture
                                               headers in a temporary dir

Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import sys
import tempfile

SCRIPT = "scripts/gen_api_reference.py"
PRELUDE = "types and macros"  # the section before a header's first rule
OUTPUT = "docs/api.md"

# --------------------------------------------------------------- headers


def meson_subdirs(root, rel):
    """Directories reached by subdir() from rel/meson.build, rel first."""
    path = os.path.join(root, rel, "meson.build")
    if not os.path.isfile(path):
        return []
    found = [rel]
    with open(path, encoding="utf-8") as f:
        text = strip_meson_comments(f.read())
    for name in re.findall(r"\bsubdir\(\s*'([^']+)'\s*\)", text):
        found += meson_subdirs(root, os.path.normpath(os.path.join(rel, name)))
    return found


def strip_meson_comments(text):
    return "\n".join(re.sub(r"#.*$", "", line) for line in text.splitlines())


def installed_headers(root):
    """Public headers, relative to root: what install_headers() installs,
    the umbrella header first and the others in the order it includes them."""
    headers = []
    for rel in meson_subdirs(root, "."):
        with open(os.path.join(root, rel, "meson.build"), encoding="utf-8") as f:
            text = strip_meson_comments(f.read())
        for call in re.finditer(r"\binstall_headers\(([^)]*)\)", text):
            positional = re.split(r"\b\w+\s*:", call.group(1))[0]
            for name in re.findall(r"'([^']+)'", positional):
                path = os.path.normpath(os.path.join(rel, name)).replace(os.sep, "/")
                if path not in headers:
                    headers.append(path)
    umbrella = [h for h in headers if "/" not in h]
    order = []
    for u in umbrella:
        order.append(u)
        with open(os.path.join(root, u), encoding="utf-8") as f:
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M):
                inc = os.path.normpath(inc).replace(os.sep, "/")
                if inc in headers and inc not in order:
                    order.append(inc)
    return order + [h for h in headers if h not in order]


# ---------------------------------------------------------------- lexing
#
# A header becomes a list of items, one per physical line or comment block:
#   ("blank", line)                      an empty line
#   ("rule", line, name)                 a /* ---- name */ section rule
#   ("comment", first, last, lines)      a comment on lines of its own
#   ("code", line, code, trailing)       a line of code, its comment removed
# (line numbers from 1).

RULE = re.compile(r"^\s*/\*\s*-{3,}\s*(.*?)\s*\*/\s*$")


def split_line(line, in_comment):
    """Splits one line into its code and its comment text. Returns (code,
    comment, in_comment after the line)."""
    code, comment = [], []
    i, n = 0, len(line)
    while i < n:
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                comment.append(line[i:])
                i = n
            else:
                comment.append(line[i:end])
                in_comment = False
                i = end + 2
        elif line.startswith("/*", i):
            in_comment = True
            i += 2
        elif line.startswith("//", i):
            comment.append(line[i + 2:])
            i = n
        elif line[i] in "\"'":
            quote, j = line[i], i + 1
            while j < n and line[j] != quote:
                j += 2 if line[j] == "\\" else 1
            code.append(line[i:j + 1])
            i = j + 1
        else:
            code.append(line[i])
            i += 1
    return "".join(code), " ".join(c.strip() for c in comment), in_comment


def comment_text(raw):
    """The text of a comment written on lines of its own, markers removed,
    indentation relative to the comment kept."""
    out = []
    for line in raw:
        s = line.strip()
        if s.startswith("//"):
            s = s[2:]
            s = s[1:] if s.startswith(" ") else s
        else:
            if s.startswith("/*"):
                s = s[2:]
                s = s[1:] if s.startswith(" ") else s
            elif s.startswith("*") and not s.startswith("*/"):
                s = s[1:]
                s = s[1:] if s.startswith(" ") else s
            if s.rstrip().endswith("*/"):
                s = s.rstrip()[:-2]
        out.append(s.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def lex(lines):
    items = []
    in_comment = False
    block = None  # (first line, raw lines) of the comment being read
    for num, line in enumerate(lines, 1):
        starts_in_comment = in_comment
        code, comment, in_comment = split_line(line, in_comment)
        if not code.strip() and (comment or starts_in_comment or in_comment
                                 or line.strip().startswith(("/*", "//"))):
            rule = RULE.match(line) if not starts_in_comment else None
            if rule and block is None:
                items.append(("rule", num, rule.group(1)))
                continue
            if block is None:
                block = (num, [])
            block[1].append(line)
            if not in_comment and not line.strip().startswith("//"):
                items.append(("comment", block[0], num, comment_text(block[1])))
                block = None
            elif not in_comment and line.strip().startswith("//"):
                # a run of // lines is one block: close it when the next
                # line is not one
                nxt = lines[num] if num < len(lines) else ""
                if not nxt.strip().startswith("//"):
                    items.append(("comment", block[0], num,
                                  comment_text(block[1])))
                    block = None
            continue
        if block is not None:  # a comment that ended on a line with code
            items.append(("comment", block[0], num - 1, comment_text(block[1])))
            block = None
        if not code.strip():
            items.append(("blank", num))
        else:
            items.append(("code", num, code.rstrip(), comment.strip()))
    if block is not None:
        items.append(("comment", block[0], len(lines), comment_text(block[1])))
    return items


# --------------------------------------------------------------- parsing


class Param:
    def __init__(self, text):
        self.text = " ".join(text.split())
        t = self.text
        self.is_func = False
        m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", t)
        if m:  # a function pointer: int (*cmp)(...)
            self.name, self.is_func, self.type = m.group(1), True, t
        elif t in ("void", "..."):
            self.name, self.type = None, t
        else:
            m = re.search(r"([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$", t)
            self.name = m.group(1) if m else None
            self.type = (t[:m.start()] + ("[]" if m.group(2) else "")).strip() if m else t
        compact = self.type.replace(" ", "")
        self.pointer = not self.is_func and self.name is not None and (
            "*" in compact or "[]" in compact)
        # tg_tensor **x: the function stores through it (not *const *)
        self.double_pointer = "**" in compact

    def base_type(self):
        return re.sub(r"\bconst\b|\*|\[\]", "", self.type).strip()


class Decl:
    """One declaration: a function, a type or a macro."""

    def __init__(self, kind, name, first, last, code):
        self.kind, self.name = kind, name
        self.first, self.last = first, last  # line span in the header
        self.code = code                     # code text, comments removed
        self.trailing = []                   # comments at the end of its lines
        self.ret = ""
        self.params = []
        self.body = ""                       # a struct's fields


def strip_attributes(code):
    while True:
        i = code.find("__attribute__")
        if i < 0:
            return code
        j = code.find("(", i)
        depth, k = 0, j
        while k < len(code):
            depth += {"(": 1, ")": -1}.get(code[k], 0)
            if depth == 0:
                break
            k += 1
        code = code[:i] + code[k + 1:]


def split_params(text):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def parse_statement(code, first, last):
    """A Decl for one complete statement, or a string saying why not."""
    code = " ".join(code.split())
    if code.startswith("#"):
        m = re.match(r"#\s*define\s+([A-Za-z_]\w*)", code)
        return Decl("macro", m.group(1), first, last, code) if m else \
            "a preprocessor line it cannot read"
    if code.startswith("typedef"):
        body = ""
        if "{" in code:
            body = code[code.index("{") + 1:code.rindex("}")]
        m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", code)
        if m and "{" not in code:
            name = m.group(1)
        else:
            m = re.search(r"([A-Za-z_]\w*)\s*;\s*$", code)
            if not m:
                return "a typedef without a name"
            name = m.group(1)
        d = Decl("type", name, first, last, code)
        d.body = body
        return d
    m = re.match(r"(?:struct|enum|union)\s+([A-Za-z_]\w*)\s*;$", code)
    if m:
        return Decl("forward", m.group(1), first, last, code)
    plain = strip_attributes(code).strip()
    m = re.match(r"^([A-Za-z_][\w\s\*]*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*;$", plain)
    if not m or not m.group(1).strip():
        return "a declaration it cannot read"
    d = Decl("function", m.group(2), first, last, code)
    d.ret = " ".join(m.group(1).split())
    d.params = [Param(p) for p in split_params(m.group(3))]
    if any(p.name is None and p.text not in ("void", "...") for p in d.params):
        return "a parameter without a name"
    return d


class Section:
    def __init__(self, name, line):
        self.name, self.line = name, line
        self.intro = []        # comment lines
        self.entries = []


class Entry:
    """A comment and the run of declarations it covers."""

    def __init__(self, comment, first):
        self.comment = comment  # lines (possibly empty)
        self.first = first      # first line of the code block
        self.decls = []

    @property
    def last(self):
        return self.decls[-1].last


class Header:
    def __init__(self, path, lines):
        self.path, self.lines = path, lines
        self.intro = []
        self.sections = []
        self.problems = []     # (line, message)

    def functions(self):
        for s in self.sections:
            for e in s.entries:
                for d in e.decls:
                    if d.kind == "function":
                        yield s, e, d


SKIP_PP = re.compile(r"^\s*#\s*(include|pragma|error|undef)\b")
COND_PP = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")


def parse_header(path, text):
    lines = text.splitlines()
    h = Header(path, lines)
    items = lex(lines)
    # The file's own comment: the first comment, before any code.
    if items and items[0][0] == "comment":
        h.intro = items[0][3]
        items = items[1:]
    guard = None
    section = Section("", 0)
    h.sections.append(section)
    entry = None           # the entry whose run is open
    pending = None         # the comment waiting for its declarations
    pp_start = None        # first of the #if lines right above a statement
    stmt = None            # [first, last, code pieces, trailing comments]
    macro_open = False
    intro_line = None      # the line where a section intro may start
    pending_end = None     # the last line of the pending comment

    def close_run():
        nonlocal entry
        entry = None

    def drop_pending():
        # a comment that no declaration follows is prose where it stands
        nonlocal pending
        if pending:
            section.entries.append(Entry(pending, None))
        pending = None

    def finish(stmt):
        nonlocal entry, pending, pp_start
        first, last, pieces, trailing = stmt
        d = parse_statement(" ".join(pieces), first, last)
        if isinstance(d, str):
            h.problems.append((first, "cannot read this declaration (%s): %s"
                               % (d, " ".join(" ".join(pieces).split()))))
            return
        if d.kind == "macro" and guard and d.name == guard and \
                not d.code.split()[2:]:
            return  # the include guard
        if d.kind == "forward":  # struct x; : nothing a user calls
            close_run()
            drop_pending()
            return
        d.trailing = trailing
        if entry is None:
            start = pp_start if pp_start is not None else first
            entry = Entry(pending or [], start)
            section.entries.append(entry)
            pending = None
        entry.decls.append(d)
        pp_start = None

    for item in items:
        kind = item[0]
        if stmt is not None and kind == "code":
            line, code, trailing = item[1], item[2], item[3]
            if COND_PP.match(code):
                stmt[1] = line
                continue
            stmt[1] = line
            stmt[2].append(code)
            if trailing:
                stmt[3].append(trailing)
            if macro_open:
                macro_open = code.rstrip().endswith("\\")
                if not macro_open:
                    stmt[2] = [c.rstrip().rstrip("\\") for c in stmt[2]]
                    finish(stmt)
                    stmt = None
            elif statement_complete(stmt[2]):
                finish(stmt)
                stmt = None
            continue
        if stmt is not None:
            if kind == "blank" or kind == "rule":
                h.problems.append((stmt[0], "a declaration that never ends"))
                stmt = None
            else:  # a comment inside a declaration
                continue
        if kind == "blank":
            close_run()
            drop_pending()
            pp_start = None
        elif kind == "rule":
            close_run()
            drop_pending()
            pp_start = None
            section = Section(item[2], item[1])
            h.sections.append(section)
            intro_line = item[1] + 1
        elif kind == "comment":
            close_run()
            pp_start = None
            if intro_line == item[1]:
                section.intro = item[3]
                pending = None
            elif pending is not None and pending_end == item[1] - 1:
                pending = pending + item[3]   # two comments in a row
            else:
                pending = item[3]
            pending_end = item[2]
        else:  # code
            line, code, trailing = item[1], item[2], item[3]
            s = code.strip()
            if SKIP_PP.match(s) or s in ('extern "C" {', "}"):
                close_run()
                drop_pending()
                pp_start = None
                continue
            m = re.match(r"#\s*ifndef\s+([A-Za-z_]\w*)\s*$", s)
            if m and guard is None and not h.sections[-1].entries and \
                    len(h.sections) == 1:
                guard = m.group(1)
                continue
            if COND_PP.match(s):
                if pp_start is None:
                    pp_start = line
                continue
            stmt = [line, line, [code], [trailing] if trailing else []]
            if s.startswith("#"):
                macro_open = s.endswith("\\")
                if not macro_open:
                    finish(stmt)
                    stmt = None
            elif statement_complete(stmt[2]):
                finish(stmt)
                stmt = None
        if kind != "rule":
            intro_line = None
    if stmt is not None:
        h.problems.append((stmt[0], "a declaration that never ends"))
    drop_pending()
    h.sections = [s for s in h.sections if s.entries or s.intro]
    return h


def statement_complete(pieces):
    depth = 0
    for ch in " ".join(pieces):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == ";" and depth == 0:
            return True
    return False


def declared_names(text):
    """Function names an independent, plainer scan finds: a line of code
    starting in column 0 with a type and then tg_name( , outside macros.
    Used to catch a prototype the parser above missed."""
    names = {}
    in_comment, in_macro = False, False
    for num, line in enumerate(text.splitlines(), 1):
        code, _, in_comment = split_line(line, in_comment)
        if in_macro:
            in_macro = code.rstrip().endswith("\\")
            continue
        if code.lstrip().startswith("#"):
            in_macro = code.rstrip().endswith("\\")
            continue
        m = re.match(r"^[A-Za-z_][\w \t\*]*?\b(tg_\w+)\s*\(", code)
        if m and not code.startswith("typedef"):
            names.setdefault(m.group(1), num)
    return names


# ------------------------------------------------------------- ownership

NEW_REF = re.compile(r"\bnew references?\b", re.I)
CALLER_FREES = re.compile(
    r"\bcaller frees\b(?:[^.;]*?\bwith\s+(tg_\w+|free)\b)?", re.I)
TAKES = re.compile(r"\btakes ownership of ([^.;,:()]+)", re.I)
VALID = re.compile(r"\bvalid (?:while|until|as long as) [^.;,:()]+", re.I)
ARG_WORDS = {"arguments", "argument"}


def clauses(text):
    text = " ".join(text.split())
    out = []
    for part in re.split(r";\s*|(?<=[.!?])\s+", text):
        part = part.strip()
        if part:
            out.append(part)
    return out


def names_before(clause, pos):
    """The names listed right before position pos ("a and b are borrowed"):
    a list of (name, starred), nearest last; empty when no word is there."""
    head = clause[:pos].rstrip()
    head = re.sub(r"\s+(?:is|are|stays?|remains?)$", "", head, flags=re.I)
    names = []
    while True:
        m = re.search(r"(\*?)([A-Za-z_]\w*)$", head)
        if not m:
            break
        names.append((m.group(2), bool(m.group(1))))
        head = head[:m.start()].rstrip()
        sep = re.search(r"(?:,\s*and|,|\band)$", head)
        if not sep:
            break
        head = head[:sep.start()].rstrip()
    return list(reversed(names))


class Ownership:
    def __init__(self):
        self.ret = None        # "new", "borrowed", "owned"
        self.valid = None      # "valid while m lives"
        self.free_with = None  # "tg_module_free()" / "free()"
        self.takes = []        # phrases
        self.taken = set()
        self.out = []          # param names in order
        self.borrowed = set()
        self.all_borrowed = False


def read_statements(text, params):
    """What the comment text says, as an Ownership (not yet checked)."""
    o = Ownership()
    names = {p.name: p for p in params if p.name}
    for c in clauses(text):
        for m in TAKES.finditer(c):
            phrase = m.group(1).strip()
            # "t and stores it in p": the phrase ends before an "and" that
            # does not list another argument
            for a in re.finditer(r"\s+and\s+\*?([A-Za-z_]\w*)", phrase):
                if a.group(1) not in names:
                    phrase = phrase[:a.start()]
                    break
            hit = [n for n in names if re.search(r"(?<![\w])\*?%s\b" % re.escape(n), phrase)]
            if hit:
                o.takes.append(phrase)
                o.taken.update(hit)
        if NEW_REF.search(c):
            outs = [n for n in names if re.search(r"(?<![\w*])\*%s\b" % re.escape(n), c)]
            for m in re.finditer(r"\breceives?\b", c, re.I):
                outs += [n for n, _ in names_before(c, m.start()) if n in names]
            outs = [n for i, n in enumerate(outs) if n not in outs[:i]]
            if outs:
                o.out += [n for n in outs if n not in o.out]
            else:
                o.ret = o.ret if o.ret == "owned" else "new"
        m = CALLER_FREES.search(c)
        if m:
            o.ret = "owned"
            fn = m.group(1)
            if fn:
                o.free_with = fn + "()"
            elif re.search(r"\bmalloc", c, re.I):
                o.free_with = "free()"
        for m in re.finditer(r"\bborrowed\b", c, re.I):
            listed = names_before(c, m.start())
            args = [n for n, _ in listed if n in names]
            if listed and listed[-1][0].lower() in ARG_WORDS:
                o.all_borrowed = True
            elif listed and listed[-1][0] in names:
                o.borrowed.update(args)
            elif o.ret is None:
                o.ret = "borrowed"
                v = VALID.search(c)
                o.valid = v.group(0).strip() if v else o.valid
    return o


def derive(fn, entry_text, section_text):
    """(ownership line, problems) for one function."""
    o = read_statements(entry_text, fn.params)
    sec = read_statements(section_text, fn.params)
    problems = []
    returns_pointer = "*" in fn.ret
    parts = []
    if returns_pointer:
        if o.ret == "new":
            parts.append("returns a new reference")
        elif o.ret == "owned":
            parts.append("returns memory the caller frees with " + o.free_with
                         if o.free_with == "free()" else
                         "returns an object the caller frees"
                         + (" with " + o.free_with if o.free_with else ""))
        elif o.ret == "borrowed":
            parts.append("returns a borrowed pointer"
                         + (" (%s)" % o.valid if o.valid else ""))
        else:
            problems.append("does not say what it returns (\"new reference\", "
                            "\"borrowed\" or \"the caller frees\")")
    elif fn.ret != "void":
        if o.ret == "new" and not o.out:
            problems.append("says \"new reference\" but returns %s: name the "
                            "out-pointer that receives it (*name, or \"name "
                            "receives\")" % fn.ret)
        parts.append("returns no reference")
    for phrase in o.takes:
        parts.append("takes ownership of " + phrase)
    outs = [p for p in fn.params if p.name in o.out and p.name not in o.taken]
    if outs:
        shown = [("*" if p.double_pointer else "") + p.name for p in outs]
        parts.append(join_names(shown) + (" receive" if len(shown) > 1 else " receives")
                     + " new references")
    pointer_params = [p for p in fn.params if p.pointer]
    rest = [p for p in pointer_params if p.name not in o.taken and p.name not in o.out]
    unsaid = []
    for p in rest:
        if p.name in o.borrowed:
            continue
        if p.double_pointer or fills_tensors(p):
            problems.append("does not say what %s%s receives (\"*%s ... new "
                            "reference\", \"%s receives new references\" or "
                            "\"%s borrowed\")" % ("*" if p.double_pointer else "",
                                                  p.name, p.name, p.name, p.name))
        elif not (o.all_borrowed or sec.all_borrowed):
            unsaid.append(p.name)
    if unsaid:
        problems.append("does not say whether %s %s borrowed (\"%s borrowed\", "
                        "\"arguments borrowed\" or \"takes ownership of %s\")"
                        % (join_names(unsaid), "is" if len(unsaid) == 1 else "are",
                           join_names(unsaid), unsaid[0]))
    if rest:
        parts.append(("other arguments" if o.takes or outs else "arguments")
                     + " borrowed")
    if not parts:
        parts.append("no references")
    return "; ".join(parts), problems


# Struct types with a tg_tensor * field, from the headers being read (load()
# fills it): a function given a non-const pointer to one may fill it.
STRUCTS_WITH_TENSORS = set()


def fills_tensors(p):
    """A non-const pointer to a struct that holds tensors (tg_dataset *out):
    the function may store references in it, so the comment must say."""
    return (not p.double_pointer and not p.type.replace(" ", "").startswith("const")
            and p.base_type() in STRUCTS_WITH_TENSORS)


def join_names(names):
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ------------------------------------------------------------- rendering

def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class Doc:
    def __init__(self, headers):
        self.headers = headers
        self.anchors = {}   # name -> anchor
        self.where = {}     # name -> (kind, header, section)
        self.first = {}     # name -> its first Decl
        for h in headers:
            for s in h.sections:
                for e in s.entries:
                    for d in e.decls:
                        if d.name not in self.anchors:
                            self.anchors[d.name] = d.name
                            self.where[d.name] = (d.kind, h, s)
                            self.first[d.name] = d
        self.ownership = {}  # function -> line
        self.problems = []   # (path, line, message)
        for h in headers:
            self.problems += [(h.path, ln, msg) for ln, msg in h.problems]
            for s, e, d in h.functions():
                text = "\n".join(e.comment + d.trailing)
                line, probs = derive(d, text, "\n".join(s.intro))
                self.ownership[d.name] = line
                self.problems += [(h.path, d.first, "%s %s" % (d.name, p)) for p in probs]

    def section_anchor(self, h, s):
        return slug(h.path) + "--" + slug(s.name or PRELUDE)

    # Prose: a comment's lines as Markdown. Lines indented under the rest
    # (formulas, code) become text blocks, "- " lines list items, the rest
    # paragraphs in which names become code and link to their entries.
    def prose(self, lines):
        out, para, block, in_item = [], [], [], False

        def flush_para():
            if para:
                text = " ".join(para)
                md = self.inline(text)
                if not text.startswith("- "):  # not a list, quote or heading
                    md = re.sub(r"^([-+>#=]|(\d+)([.)]))(?=\s|$)",
                                lambda m: m.group(2) + "\\" + m.group(3)
                                if m.group(2) else "\\" + m.group(1), md)
                out.append(md)
                out.append("")
                para.clear()

        def flush_block():
            if block:
                cut = min(len(l) - len(l.lstrip()) for l in block if l.strip())
                out.append("```text")
                out.extend(l[cut:] for l in block)
                out.append("```")
                out.append("")
                block.clear()

        base = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        for raw in lines:
            line = raw[base:] if raw.strip() else ""
            indent = len(line) - len(line.lstrip())
            if not line.strip():
                flush_para()
                flush_block()
                in_item = False
            elif line.startswith("- "):
                flush_para()
                flush_block()
                para.append("-")
                para.append(line[2:].strip())
                in_item = True
            elif indent >= 2 and in_item and not block:
                para.append(line.strip())
            elif indent >= 2:
                flush_para()
                block.append(line.rstrip())
            else:
                flush_block()
                if in_item:  # the text after a list
                    flush_para()
                in_item = False
                para.append(line.strip())
        flush_para()
        flush_block()
        # a list item is a paragraph that starts with "-": keep items
        # together, without blank lines between them
        merged = []
        for line in out:
            if line.startswith("- ") and len(merged) >= 2 and merged[-1] == "" \
                    and merged[-2].startswith("- "):
                merged.pop()
            merged.append(line)
        return merged

    CODE_TOKEN = re.compile(
        r"`[^`]*`"                                   # already code
        r"|\bdocs/[\w/.-]*\w\.md\b"                   # another page
        r"|(?<![\w*])\*[A-Za-z_]\w*(?:->\w+)?"       # *mean: an out-pointer
        r"|\b[A-Za-z_][\w]*(?:(?:\.|->)[A-Za-z_]\w*)*(?:\(\))?")

    def inline(self, text):
        if text.startswith("- "):
            return "- " + self.inline(text[2:])
        out, pos = [], 0
        for m in self.CODE_TOKEN.finditer(text):
            out.append(escape(text[pos:m.start()]))
            tok = m.group(0)
            pos = m.end()
            if tok.startswith("`"):
                out.append(tok)
                continue
            if tok.startswith("docs/"):  # api.md is in docs/ itself
                out.append("[%s](%s)" % (tok, os.path.relpath(tok, "docs")))
                continue
            bare = tok[:-2] if tok.endswith("()") else tok
            if bare in self.anchors:
                out.append("[`%s`](#%s)" % (tok, self.anchors[bare]))
            elif tok.startswith("*") or "_" in tok or "->" in tok or \
                    tok.endswith("()") or re.match(r"TG_\w+$", tok):
                out.append("`%s`" % tok)
            else:
                out.append(tok)
        out.append(escape(text[pos:]))
        return "".join(out)

    def render(self):
        w = []
        w.append("# API reference")
        w.append("")
        w.append("> Generated by `%s --write` from the public headers; do not"
                 " edit by hand. Change the comments in the headers and run it"
                 " again (`--check`, run by the test suite, fails when this"
                 " file is out of date)." % SCRIPT)
        w.append("")
        w.append("Every public type, macro and function of tapegrad, header by"
                 " header and section by section as the headers order them:"
                 " the declaration as written in the header, its comment, and"
                 " for each function who owns what it returns and what it is"
                 " given.")
        w.append("")
        w += self.render_rules()
        w += self.render_index()
        for h in self.headers:
            w += self.render_header(h)
        while w and w[-1] == "":
            w.pop()
        return "\n".join(w) + "\n"

    def render_rules(self):
        takers, fillers = [], []
        for h in self.headers:
            for s, e, d in h.functions():
                line = self.ownership[d.name]
                m = re.search(r"takes ownership of ([^;]+)", line)
                if m:
                    takers.append("[`%s`](#%s) (%s)" % (d.name, self.anchors[d.name],
                                                       self.inline(m.group(1))))
                m = re.search(r"([^;]+) receives? new references", line)
                if m:
                    fillers.append("[`%s`](#%s) (%s)" % (d.name, self.anchors[d.name],
                                                        self.inline(m.group(1).strip())))
        w = ["## Ownership rules", ""]
        w += [
            "- **Tensors are reference-counted**, as CPython's objects are. A"
            " function that returns a `tg_tensor *` returns a **new reference**:"
            " the caller owns it and gives it up with `tg_release()`"
            " (`tg_release(NULL)` does nothing). `tg_live_tensors()` counts the"
            " tensors alive, so a forgotten release shows.",
            "- **Arguments are borrowed**: the function neither keeps nor"
            " releases the caller's reference. A function that needs a tensor"
            " longer (a module registering a parameter, an optimiser, a saved"
            " tensor) takes a reference of its own, so the caller may release"
            " its one at once.",
            "- A **borrowed** return value belongs to something else (a module,"
            " a tensor, the library) and is valid while that lives; `tg_retain()`"
            " a borrowed tensor to keep it longer.",
            "- An **out-pointer** (`tg_tensor **`, or a struct the function fills)"
            " receives new references, which the caller releases like a return"
            " value.",
            "- **Objects that are not tensors** (modules, optimisers, generators,"
            " batch iterators) are not reference-counted: whoever makes one frees"
            " it with its `_free` function, unless it hands it over: a module"
            " added to a parent belongs to the parent, which frees it.",
        ]
        if takers:
            w.append("- Functions that **take ownership** of an argument: "
                     + ", ".join(takers) + ".")
        if fillers:
            w.append("- Functions with **out-pointers**: " + ", ".join(fillers) + ".")
        w += ["",
              "Each function's **Ownership** line below is read from its comment"
              " in the header (the comment right above it, which covers every"
              " declaration that follows without a blank line, and the comment"
              " at the end of its line): `new reference`, `borrowed`, `the"
              " caller frees`, `takes ownership of`, and `*name` or `name"
              " receives` for an out-pointer. A section's opening comment may say"
              " once that its arguments are borrowed. The test suite fails when"
              " a function does not say.", ""]
        return w

    def render_index(self):
        w = ["## Index", "", "| Name | Kind | Header | Section |",
             "| --- | --- | --- | --- |"]
        for name in sorted(self.where, key=lambda n: (n.lower(), n)):
            kind, h, s = self.where[name]
            w.append("| [`%s`](#%s) | %s | `%s` | [%s](#%s) |" % (
                name, self.anchors[name], kind, h.path, s.name or PRELUDE,
                self.section_anchor(h, s)))
        w.append("")
        return w

    def render_header(self, h):
        w = ["## `%s`" % h.path, ""]
        w += self.prose(h.intro)
        for s in h.sections:
            w.append('<a id="%s"></a>' % self.section_anchor(h, s))
            w.append("")
            w.append("### %s" % (s.name or PRELUDE))
            w.append("")
            w += self.prose(s.intro)
            for e in s.entries:
                w += self.render_entry(h, e)
        return w

    def render_entry(self, h, e):
        if not e.decls:
            return self.prose(e.comment)
        names = [d.name for d in e.decls]
        # a name declared twice gets its anchor at the first declaration
        w = ["".join('<a id="%s"></a>' % self.anchors[d.name] for d in e.decls
                     if self.first[d.name] is d), ""]
        w.append("#### " + ", ".join("`%s`" % n for n in names))
        w.append("")
        w.append("<!-- sample: %s -->" % h.path)
        w.append("```c")
        w += h.lines[e.first - 1:e.last]
        w.append("```")
        w.append("")
        w += self.prose(e.comment)
        funcs = [d for d in e.decls if d.kind == "function"]
        if funcs:
            lines = [self.inline(self.ownership[d.name]) for d in funcs]
            if len(funcs) == 1:
                w.append("**Ownership:** %s." % lines[0])
            elif len(set(lines)) == 1:
                w.append("**Ownership** (each): %s." % lines[0])
            else:
                w.append("**Ownership:**")
                w.append("")
                for d, line in zip(funcs, lines):
                    w.append("- `%s`: %s." % (d.name, line))
            w.append("")
        return w


def escape(text):
    """Text outside code spans, as Markdown: the characters that would start
    emphasis, HTML or a link are escaped; the rest stays readable."""
    text = text.replace("\\", "\\\\")
    for ch in "*_<`":
        text = text.replace(ch, "\\" + ch)
    return text.replace("](", "\\](")


# ----------------------------------------------------------------- driver

def load(root):
    headers = []
    for path in installed_headers(root):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        headers.append(parse_header(path, text))
    STRUCTS_WITH_TENSORS.clear()
    for h in headers:
        for s in h.sections:
            for e in s.entries:
                for d in e.decls:
                    if d.kind == "type" and d.body and d.name != "tg_tensor" and \
                            re.search(r"\btg_tensor\s*\*\s*[A-Za-z_]", d.body):
                        STRUCTS_WITH_TENSORS.add(d.name)
    return headers


def build(root):
    headers = load(root)
    doc = Doc(headers)
    # A prototype that the plain scan finds and the parser did not.
    for h in headers:
        parsed = {d.name for _, _, d in h.functions()}
        for name, line in declared_names("\n".join(h.lines)).items():
            if name not in parsed:
                doc.problems.append((h.path, line, "%s is declared here but was not "
                                     "understood by %s" % (name, SCRIPT)))
    return doc


def check(root, out=sys.stdout):
    """0 when docs/api.md is current and every function states ownership."""
    doc = build(root)
    failed = False
    if doc.problems:
        failed = True
        print("%s: ownership cannot be derived (or a declaration cannot be "
              "read) for:" % SCRIPT, file=out)
        for path, line, msg in sorted(doc.problems):
            print("  %s:%d: %s" % (path, line, msg), file=out)
        print("  hint: say it in the function's comment; the words are listed "
              "at the top of %s" % SCRIPT, file=out)
    want = doc.render()
    path = os.path.join(root, OUTPUT)
    have = ""
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            have = f.read()
    documented = set(re.findall(r'<a id="([A-Za-z_]\w*)"></a>', have))
    missing = [(h.path, d.first, d.name) for h in doc.headers
               for _, _, d in h.functions() if d.name not in documented]
    if missing:
        failed = True
        print("%s: declared functions missing from %s:" % (SCRIPT, OUTPUT), file=out)
        for p, line, name in missing:
            print("  %s:%d: %s" % (p, line, name), file=out)
    declared = {d.name for h in doc.headers for s in h.sections
                for e in s.entries for d in e.decls}
    gone = sorted(n for n in documented if n not in declared)
    if gone:
        failed = True
        print("%s: %s documents what no header declares: %s"
              % (SCRIPT, OUTPUT, ", ".join(gone)), file=out)
    if have != want:
        failed = True
        diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(),
                                         OUTPUT + " (now)", OUTPUT + " (--write)",
                                         lineterm="", n=1))
        added = sum(1 for l in diff if l.startswith("+") and not l.startswith("+++"))
        removed = sum(1 for l in diff if l.startswith("-") and not l.startswith("---"))
        print("%s: %s is not what --write makes of the headers (%d lines to "
              "add, %d to remove):" % (SCRIPT, OUTPUT, added, removed), file=out)
        for l in diff[:40]:
            print("  " + l, file=out)
        if len(diff) > 40:
            print("  ... (%d more diff lines)" % (len(diff) - 40), file=out)
        print("  hint: python3 %s --write" % SCRIPT, file=out)
    if not failed:
        nfun = sum(1 for h in doc.headers for _ in h.functions())
        print("%s: %s is current; %d functions, each with its ownership"
              % (SCRIPT, OUTPUT, nfun), file=out)
    return 1 if failed else 0


def write(root, out=sys.stdout):
    doc = build(root)
    text = doc.render()
    path = os.path.join(root, OUTPUT)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    nfun = sum(1 for h in doc.headers for _ in h.functions())
    print("%s: wrote %s (%d functions in %d headers)"
          % (SCRIPT, OUTPUT, nfun, len(doc.headers)), file=out)
    if doc.problems:
        for path, line, msg in sorted(doc.problems):
            print("  %s:%d: %s" % (path, line, msg), file=out)
        print("%s: %d problems: their ownership lines are incomplete"
              % (SCRIPT, len(doc.problems)), file=out)
        return 1
    return 0


# -------------------------------------------------------------- self-test

FIXTURE_MESON = """project('fixture', 'c')
install_headers('fix.h', subdir: 'fix')
subdir('sub')
"""
FIXTURE_SUB_MESON = "install_headers('sub.h', subdir: 'fix/sub')\n"
FIXTURE_UMBRELLA = '#include "sub/sub.h"\n'
FIXTURE_SUB = """/*
 * sub/sub.h - a fixture header.
 *
 * Ownership: returned tensors are NEW references.
 */
#ifndef SUB_H
#define SUB_H

#define SUB_MAX 4 // a macro

typedef struct tg_tensor tg_tensor;
/* Holds two tensors. */
typedef struct sub_pair {
    tg_tensor *a; // owned
    tg_tensor *b;
} sub_pair;

/* ------------------------------------------------------------ making */
/* Every function here: arguments borrowed. */

/* A copy of x. New reference. */
tg_tensor *sub_copy(const tg_tensor *x);
/* Two prototypes, one comment: new references; a and b are borrowed. */
tg_tensor *sub_add(const tg_tensor *a, const tg_tensor *b);
tg_tensor *sub_mul(const tg_tensor *a,
                   const tg_tensor *b); // a * b

/* ----------------------------------------------------------- keeping */

/* The i-th tensor of p (borrowed, valid while p lives). p is borrowed. */
tg_tensor *sub_get(const sub_pair *p, int i);
/* Takes ownership of t and stores it in p; p is borrowed. */
int sub_put(sub_pair *p, tg_tensor *t);
/* Returns the sum as a new reference; *mean receives the mean, also a new
 * reference. x borrowed. */
tg_tensor *sub_sum(const tg_tensor *x, tg_tensor **mean);
/* out receives new references; x borrowed. */
int sub_split(const tg_tensor *x, sub_pair *out);
/* A malloc'd string the caller frees; x borrowed. */
char *sub_format(const tg_tensor *x);
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void sub_log(const char *fmt, ...); // arguments borrowed
int sub_count(void);

/* A comment on its own, which no declaration follows. */

%(extra)s
#endif
"""


def self_test():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    # the shared fixture writer, imported here: gen_error_catalogue.py
    # imports this script as a module
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from doc_fixture import Capture, write_tree

    def make(tmp, extra=""):
        write_tree(tmp, {"meson.build": FIXTURE_MESON,
                         "fix.h": FIXTURE_UMBRELLA,
                         "sub/meson.build": FIXTURE_SUB_MESON,
                         "sub/sub.h": FIXTURE_SUB % {"extra": extra}})

    def run(fn, root):
        cap = Capture()
        return fn(root, out=cap), cap.text

    with tempfile.TemporaryDirectory() as tmp:
        make(tmp)
        expect(installed_headers(tmp) == ["fix.h", "sub/sub.h"],
               "headers found through install_headers and subdir()")
        rc, text = run(write, tmp)
        expect(rc == 0, "--write on correct headers succeeds:\n" + text)
        rc, text = run(check, tmp)
        expect(rc == 0, "--check ACCEPTS a current api.md:\n" + text)
        doc = build(tmp)
        own = doc.ownership
        expect(own.get("sub_copy") == "returns a new reference; arguments borrowed",
               "sub_copy: %r" % own.get("sub_copy"))
        expect(own.get("sub_mul") == "returns a new reference; arguments borrowed",
               "a group comment covers the run: %r" % own.get("sub_mul"))
        expect(own.get("sub_get") == "returns a borrowed pointer (valid while p lives); "
               "arguments borrowed", "sub_get: %r" % own.get("sub_get"))
        expect(own.get("sub_put") == "returns no reference; takes ownership of t; "
               "other arguments borrowed", "sub_put: %r" % own.get("sub_put"))
        expect(own.get("sub_sum") == "returns a new reference; *mean receives new "
               "references; other arguments borrowed", "sub_sum: %r" % own.get("sub_sum"))
        expect(own.get("sub_split") == "returns no reference; out receives new "
               "references; other arguments borrowed", "sub_split: %r" % own.get("sub_split"))
        expect(own.get("sub_format") == "returns memory the caller frees with free(); "
               "arguments borrowed", "sub_format: %r" % own.get("sub_format"))
        expect(own.get("sub_log") == "arguments borrowed",
               "an attribute and #if lines: %r" % own.get("sub_log"))
        expect(own.get("sub_count") == "returns no reference",
               "sub_count: %r" % own.get("sub_count"))
        with open(os.path.join(tmp, OUTPUT), encoding="utf-8") as f:
            md = f.read()
        expect('<!-- sample: sub/sub.h -->\n```c\ntg_tensor *sub_add(const tg_tensor *a, '
               'const tg_tensor *b);\ntg_tensor *sub_mul(const tg_tensor *a,\n'
               in md, "a run is one verbatim block, tagged with its header")
        expect("#if defined(__GNUC__)\n__attribute__((format(printf, 1, 2)))\n#endif\n"
               "void sub_log" in md, "the #if lines stay with their prototype")
        expect("SUB_MAX" in md and "sub_pair" in md, "macros and types are listed")
        expect("\nA comment on its own, which no declaration follows.\n" in md,
               "a comment with no declaration stays, as prose")
        expect("\nEvery function here: arguments borrowed.\n" in md,
               "a section's introduction is shown")

        # A stale api.md: a comment changed after --write.
        with open(os.path.join(tmp, "sub/sub.h"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(tmp, "sub/sub.h"), "w", encoding="utf-8") as f:
            f.write(text.replace("/* A copy of x.", "/* A fresh copy of x."))
        rc, text = run(check, tmp)
        expect(rc == 1 and "not what --write makes" in text,
               "--check REJECTS a stale api.md:\n" + text)

        # A function added to the header but not to api.md.
        make(tmp, extra="/* New reference; x borrowed. */\n"
                        "tg_tensor *sub_neg(const tg_tensor *x);\n")
        rc, text = run(check, tmp)
        expect(rc == 1 and "sub/sub.h:50: sub_neg" in text,
               "--check names a declared function missing from api.md:\n" + text)

        # A pointer-returning function with no ownership words.
        make(tmp, extra="/* The negation of x. */\n"
                        "tg_tensor *sub_neg(const tg_tensor *x);\n")
        run(write, tmp)
        rc, text = run(check, tmp)
        expect(rc == 1 and "sub/sub.h:50: sub_neg does not say what it returns" in text,
               "--check REJECTS a pointer return without ownership words:\n" + text)

        # An out-pointer nobody mentions, an argument not said borrowed.
        make(tmp, extra="/* New reference. */\n"
                        "tg_tensor *sub_two(const tg_tensor *x, tg_tensor **second);\n")
        run(write, tmp)
        rc, text = run(check, tmp)
        expect(rc == 1 and "sub_two does not say what *second receives" in text
               and "sub_two does not say whether x is borrowed" in text,
               "--check REJECTS unstated out-pointers and arguments:\n" + text)

        # "New reference" on a function that returns an int.
        make(tmp, extra="/* Writes x. New reference. */\n"
                        "int sub_bad(const tg_tensor *x, tg_tensor *y);\n")
        run(write, tmp)
        rc, text = run(check, tmp)
        expect(rc == 1 and "sub_bad says \"new reference\" but returns int" in text,
               "--check REJECTS a \"new reference\" with no pointer to go to:\n" + text)

        # A prototype the parser cannot read is reported, not skipped.
        make(tmp, extra="tg_tensor *sub_odd(const tg_tensor *x)\n"
                        "    ;;\n")
        run(write, tmp)
        rc, text = run(check, tmp)
        expect(rc == 1 and "sub_odd" in text,
               "--check reports a declaration it cannot read:\n" + text)

    if failures:
        print("%s --self-test: %d failures" % (SCRIPT, len(failures)))
        for f in failures:
            print("  FAIL: " + f)
        return 1
    print("%s --self-test: all checks passed" % SCRIPT)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="the repository (default: this script's)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.write:
        return write(args.root)
    return check(args.root)


if __name__ == "__main__":
    sys.exit(main())
