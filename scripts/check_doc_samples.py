#!/usr/bin/env python3
"""Checks that the docs show real code and real output.

    check_doc_samples.py --root SRC [--program examples/x.c=/path/to/exe ...]
                         [--timeout SECONDS] [--no-figures]
    check_doc_samples.py --self-test

Reads README.md and every docs/**/*.md under SRC and checks:

- every ```c fence carries a tag on the line right above it,

      <!-- sample: examples/tutorial/01_tensors.c -->

  and the block's lines occur verbatim and contiguous in that file (trailing
  whitespace ignored; a block inside a list item loses the fence's
  indentation first). A sample from examples/**.c must name a program the
  suite builds: one given with --program (docs/meson.build passes every
  entry of doc_programs);
- every block tagged `<!-- output: PATH [args] -->` occurs contiguous in the
  standard output of the program built from PATH, run once per distinct
  args (split on spaces) in a fresh temporary directory with a timeout; a
  non-zero exit is an error. A field that changes from run to run (a time)
  is shown as `...`: that token matches any one field of the output line,
  and the spaces around it may differ;
- every paragraph or table tagged `<!-- figures: PATH [args] -->` (on the
  line right above it) quotes that program's output: each number in it
  written with a decimal point or a percent sign (97.97%, 13.2996, -2.30,
  7.6e-4) must be, at the precision the paragraph gives, a number the
  program prints (0.36 stands for 0.3606, not for 0.3706). Counts
  written without a point (1000 steps, layer 5) and backquoted spans are
  not checked. So prose that reads a run stays true when the run changes.
  --no-figures leaves these paragraphs (and the runs only they need)
  unchecked: for builds whose programs run many times slower (sanitizers),
  where the plain build's test checks them;
- every identifier tg_... or TG_... in a fenced block or in a backquoted
  span of prose is declared in a public header (tapegrad.h, tensor/tensor.h,
  autograd/autograd.h, autograd/ops.h, nn/nn.h), or in an internal header
  (accepted, and listed as internal: the docs explain the internals too),
  or defined in the file the block is a sample or the output of (or in a
  local header that file includes), or listed in ALLOWED below with its
  reason. `tg_make_*` stands for the names that start with tg_make_. A
  name counts as declared only where code declares it, not in a comment.

Every problem is printed as file:line: message; the exit status is then 1.
--self-test builds small doc trees in a temporary folder, with /bin/sh
scripts as programs, and checks that each kind of wrong doc is rejected for
its reason and that a right one passes. It does not read the repository.

This script checks the docs against the code; it does not build anything
and it knows nothing of what the examples compute. Python 3 standard
library only.
"""
import argparse
import difflib
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_fixture import write_tree  # noqa: E402  (the self-test's trees)

PUBLIC_HEADERS = ["tapegrad.h", "tensor/tensor.h", "autograd/autograd.h",
                  "autograd/ops.h", "nn/nn.h"]
# Public headers of optional parts (dist/: built with MPI only, documented
# always): read when they exist.
OPTIONAL_PUBLIC_HEADERS = ["dist/dist.h"]
INTERNAL_HEADERS = ["tensor/internal.h", "autograd/internal.h",
                    "nn/internal.h", "autograd/tape.h",
                    "dist/internal.h", "tensor/debug.h"]
# The matmul kernels' header (its environment variable and test hooks).
INTERNAL_HEADERS += ["autograd/ops/gemm.h"]

# Names the docs may mention that no header declares, each with its reason.
ALLOWED = {
    "TG_HAVE_MPI": "1 or 0 in dist/config.h, which meson makes from "
                   "dist/config.h.in: whether the build has dist/ (MPI)",
    "TG_PLOTS_DIR": "the folder of the demos' gnuplot scripts: an "
                    "environment variable and a define of examples/"
                    "meson.build, read by examples/demo_util.c; not part "
                    "of the library",
}

NAME_RE = re.compile(r"(?<![A-Za-z0-9_])(tg_[a-z0-9_]+|TG_[A-Z0-9_]+)(?![A-Za-z0-9])"
                     r"(\*?)")
FENCE_RE = re.compile(r"^( *)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
TAG_RE = re.compile(r"^\s*<!--\s*(sample|output|figures)\s*:\s*(.*?)\s*-->\s*$")
LOOSE_TAG_RE = re.compile(r"\s*<!--\s*(sample|output|figure)s?\b",
                          re.IGNORECASE)
C_LANGS = {"c", "h", "c99", "c11", "cpp", "c++", "{.c}"}
DEFAULT_TIMEOUT = 120


class Problem:
    def __init__(self, path, line, message, details=()):
        self.path, self.line = path, line
        self.message, self.details = message, list(details)

    def __str__(self):
        head = "%s:%d: %s" % (self.path, self.line, self.message)
        return "\n".join([head] + ["    " + d for d in self.details])


# ------------------------------------------------------------ markdown


class Block:
    """A fenced block: the line of its opening fence (1-based), its info
    word, its lines without the fence's indentation, and its tag."""

    def __init__(self, line, lang, lines):
        self.line, self.lang, self.lines = line, lang, lines
        self.tag = None  # (kind, argument string, tag line)


def parse_markdown(relpath, text, problems):
    """Returns (blocks, prose, figures): the fenced blocks, the prose as a
    list of paragraphs, each a list of (line number, text), and for each
    paragraph tagged figures, (its tag, the paragraph)."""
    lines = text.split("\n")
    blocks, prose, paragraph, figures = [], [], [], []
    pending_tag = None
    i = 0
    while i < len(lines):
        line, number = lines[i], i + 1
        fence = FENCE_RE.match(line)
        tag = TAG_RE.match(line)
        if pending_tag and pending_tag[0] == "figures":
            if fence or tag or not line.strip():
                problems.append(Problem(relpath, pending_tag[2],
                                        "a figures tag must be on the line "
                                        "right above a paragraph or table"))
            else:
                if paragraph:
                    prose.append(paragraph)
                paragraph = []
                figures.append((pending_tag, paragraph))
            pending_tag = None
        if pending_tag and not fence:
            problems.append(Problem(relpath, pending_tag[2],
                                    "a %s tag must be on the line right "
                                    "above a fenced block" % pending_tag[0]))
            pending_tag = None
        if tag:
            kind, arg = tag.group(1), tag.group(2)
            if not arg:
                problems.append(Problem(relpath, number,
                                        "the %s tag names no file" % kind))
            else:
                pending_tag = (kind, arg, number)
            i += 1
            continue
        if LOOSE_TAG_RE.match(line):  # not a mention inside prose
            problems.append(Problem(
                relpath, number, "malformed tag (expected "
                "'<!-- sample: PATH -->' or '<!-- output: PATH [args] -->' "
                "alone on its line)"))
            i += 1
            continue
        if not fence:
            if line.strip():
                paragraph.append((number, line))
            elif paragraph:
                prose.append(paragraph)
                paragraph = []
            i += 1
            continue
        if paragraph:
            prose.append(paragraph)
            paragraph = []
        indent, marker, lang = len(fence.group(1)), fence.group(2), \
            fence.group(3).lower()
        close = re.compile(r"^ *" + re.escape(marker[0]) + "{%d,}\\s*$"
                           % len(marker))
        body, j = [], i + 1
        while j < len(lines) and not close.match(lines[j]):
            raw = lines[j]
            strip = len(raw) - len(raw.lstrip(" "))
            body.append(raw[min(indent, strip):])
            j += 1
        if j == len(lines):
            problems.append(Problem(relpath, number,
                                    "this fenced block is never closed"))
        block = Block(number, lang, body)
        if pending_tag:
            block.tag = pending_tag
            pending_tag = None
        blocks.append(block)
        i = j + 1
    if pending_tag:
        problems.append(Problem(relpath, pending_tag[2],
                                "a %s tag must be on the line right above a "
                                "%s" % (pending_tag[0], "paragraph or table"
                                        if pending_tag[0] == "figures"
                                        else "fenced block")))
    if paragraph:
        prose.append(paragraph)
    return blocks, prose, figures


def inline_code_names(paragraph):
    """(line, name, is_prefix) for every tg_/TG_ name inside a backquoted
    span of one paragraph (a span may run over several lines)."""
    text = "\n".join(t for _, t in paragraph)
    first = paragraph[0][0]
    found = []
    for span in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text,
                            re.DOTALL):
        for m in NAME_RE.finditer(span.group(2)):
            offset = span.start(2) + m.start()
            line = first + text.count("\n", 0, offset)
            found.append((line, m.group(1), m.group(2) == "*"))
    return found


# ------------------------------------------------------------ C names


def strip_c(text):
    """C text without comments and with empty string literals, newlines
    kept, line continuations joined."""
    def repl(m):
        s = m.group(0)
        if s.startswith("/"):
            return "\n" * s.count("\n") if s.startswith("/*") else " "
        return s[0] * 2
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|"
                  r"'(?:\\.|[^'\\\n])*'", repl, text, flags=re.DOTALL)
    return text.replace("\\\n", " ")


C_KEYWORDS = {"return", "else", "case", "goto", "sizeof", "do", "if",
              "while", "for", "switch", "default", "break", "continue"}


def c_declared_names(text):
    """The tg_/TG_ names a C file declares or defines: macros, enum
    constants, struct/union/enum tags, typedefs, and functions and
    variables declared at file scope."""
    code = strip_c(text)
    names = set()
    keep = []
    for line in code.split("\n"):
        m = re.match(r"\s*#\s*define\s+(\w+)", line)
        if m:
            names.add(m.group(1))
        keep.append("" if line.lstrip().startswith("#") else line)
    code = "\n".join(keep)
    code = re.sub(r"\bextern\s*\"\"\s*\{", " ", code)  # extern "C" {
    for m in re.finditer(r"\benum\b\s*(\w*)\s*\{([^}]*)\}", code):
        names.add(m.group(1))
        for item in m.group(2).split(","):
            ident = re.match(r"\s*(\w+)", item)
            if ident:
                names.add(ident.group(1))
    for m in re.finditer(r"\b(?:struct|union|enum)\s+(\w+)\s*[{;]", code):
        names.add(m.group(1))
    for m in re.finditer(r"\btypedef\b", code):
        depth, k = 0, m.end()
        while k < len(code) and not (code[k] == ";" and depth == 0):
            depth += {"{": 1, "}": -1}.get(code[k], 0)
            k += 1
        stmt = code[m.end():k]
        flat = re.sub(r"\{[^{}]*\}", " ", stmt)
        while re.search(r"\{[^{}]*\}", flat):
            flat = re.sub(r"\{[^{}]*\}", " ", flat)
        fnptr = re.search(r"\(\s*\*\s*(\w+)\s*\)", flat)
        if fnptr:
            names.add(fnptr.group(1))
        else:
            idents = re.findall(r"\w+", re.sub(r"\[[^\]]*\]", " ", flat))
            if idents:
                names.add(idents[-1])
    # File scope only: blank out everything inside braces.
    depth, top = 0, []
    for ch in code:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth == 0 or ch == "\n":
            top.append(ch)
            continue
        top.append(" ")
    top = "".join(top)
    for m in re.finditer(r"(\w+)[\s*]+((?:tg|TG)_\w+)\s*[(\[=;,]", top):
        if m.group(1) not in C_KEYWORDS:
            names.add(m.group(2))
    return {n for n in names if n.startswith(("tg_", "TG_"))}


# ------------------------------------------------------------ matching


NUMBER_RE = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(%?)"
                       r"(?![\w])")


def numbers_in(text):
    """(as written, value, half a unit of its last digit) for every number
    in text: '-2.30' is (-2.30, 0.005), '7.6e-4' (7.6e-4, 0.05e-4)."""
    found = []
    for m in NUMBER_RE.finditer(text):
        written = m.group(1)
        mantissa, _, exponent = written.lower().partition("e")
        decimals = len(mantissa.partition(".")[2])
        scale = 10.0 ** (int(exponent) if exponent else 0)
        found.append((m.group(0), float(written),
                      0.5 * 10.0 ** -decimals * scale * (1 + 1e-9)))
    return found


def same_line(shown, printed):
    """Whether a block line shows a printed line: equal, or equal but for
    the fields shown as '...' (each stands for one field of the printed
    line; the spaces around it may differ)."""
    if shown == printed:
        return True
    fields = shown.split()
    if "..." not in fields:
        return False
    lead = shown[:len(shown) - len(shown.lstrip())]
    pattern = re.escape(lead) + r"\s+".join(
        r"\S+" if f == "..." else re.escape(f) for f in fields)
    return re.fullmatch(pattern, printed) is not None


def find_run(block, lines):
    """Index in lines where block occurs contiguously, or -1."""
    n = len(block)
    for start in range(len(lines) - n + 1):
        if all(same_line(block[k], lines[start + k]) for k in range(n)):
            return start
    return -1


def explain_mismatch(block, lines, where, first_line, what):
    """Problem details for a block that does not occur in lines: where the
    longest run of its first lines matches, the first line that does not,
    and the nearest lines of `what`."""
    best, best_start = 0, -1
    for start in range(len(lines)):
        k = 0
        while (k < len(block) and start + k < len(lines)
               and same_line(block[k], lines[start + k])):
            k += 1
        if k > best:
            best, best_start = k, start
    bad = block[best]
    details = []
    if best == 0:
        near = nearest_line(bad, lines)
        message = "block line 1 is not in %s" % what
        details.append("block: %r" % bad)
        if near is not None:
            details.append("nearest lines of %s:" % what)
            details += context(lines, near, near, where)
    else:
        message = ("block lines 1-%d match lines %d-%d of %s, but block line "
                   "%d differs" % (best, best_start + 1, best_start + best,
                                   what, best + 1))
        details.append("block: %r" % bad)
        following = best_start + best
        if following < len(lines):
            details.append("lines of %s there:" % what)
            details += context(lines, following, following, where)
        else:
            details.append("%s ends there" % what)
        elsewhere = [i for i, l in enumerate(lines) if l == bad]
        if elsewhere:
            details.append("that line is line %s of %s: out of order?"
                           % (", ".join(str(i + 1) for i in elsewhere[:5]),
                              what))
    return first_line + 1 + best, message, details


def nearest_line(line, lines):
    best, best_ratio = None, 0.0
    stripped = line.strip()
    for i, candidate in enumerate(lines):
        if not candidate.strip():
            continue
        ratio = difflib.SequenceMatcher(None, stripped,
                                        candidate.strip()).ratio()
        if ratio > best_ratio:
            best, best_ratio = i, ratio
    return best if best_ratio >= 0.5 else None


def context(lines, lo, hi, where):
    out = []
    for i in range(max(0, lo - 1), min(len(lines), hi + 2)):
        mark = ">" if lo <= i <= hi else " "
        out.append("%s %s:%d: %s" % (mark, where, i + 1, lines[i]))
    return out


# ------------------------------------------------------------ the check


class Checker:
    def __init__(self, root, programs, timeout=DEFAULT_TIMEOUT,
                 figures=True):
        self.root = os.path.abspath(root)
        self.figures = figures
        # Programs run from a temporary folder: their paths must be absolute.
        self.programs = {posixpath.normpath(k): os.path.abspath(v)
                         for k, v in programs.items()}
        self.timeout = timeout
        self.problems = []
        self.notes = {}     # doc -> {internal name: its header}
        self.runs = {}      # (source, args) -> (stdout lines, error)
        self.defined = {}   # file -> names it defines
        self.stats = {"docs": 0, "samples": 0, "outputs": 0, "figures": 0,
                      "figures skipped": 0, "names": 0}
        self.public, self.internal = set(), {}
        for rel in PUBLIC_HEADERS:
            text = self.read(rel)
            if text is None:
                self.problems.append(Problem(
                    rel, 1, "public header missing (the list is "
                    "PUBLIC_HEADERS in scripts/check_doc_samples.py)"))
            else:
                self.public |= c_declared_names(text)
        for rel in OPTIONAL_PUBLIC_HEADERS:
            self.public |= c_declared_names(self.read(rel) or "")
        for rel in INTERNAL_HEADERS:
            text = self.read(rel)
            for name in c_declared_names(text or ""):
                self.internal.setdefault(name, rel)

    def read(self, rel):
        path = os.path.join(self.root, rel)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def docs(self):
        found = []
        if os.path.isfile(os.path.join(self.root, "README.md")):
            found.append("README.md")
        for dirpath, dirnames, filenames in os.walk(
                os.path.join(self.root, "docs")):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".md"):
                    full = os.path.join(dirpath, name)
                    found.append(os.path.relpath(full, self.root)
                                 .replace(os.sep, "/"))
        return found

    def run(self):
        for doc in self.docs():
            self.check_doc(doc)
        return self.problems

    def source_path(self, doc, line, rel):
        """The repository path a tag names, or None after a problem."""
        norm = posixpath.normpath(rel)
        if posixpath.isabs(norm) or norm.startswith(".."):
            self.problems.append(Problem(
                doc, line, "%s: give a path inside the repository, from its "
                "root" % rel))
            return None
        # A sample must come from the code, not from a doc (which would
        # match itself) or a build folder (which is not in the repository).
        first = norm.split("/", 1)[0]
        if norm.endswith(".md") or first.startswith("build") or \
                first.startswith("."):
            self.problems.append(Problem(
                doc, line, "%s: a sample must name a source file of the "
                "repository, not a doc or a build product" % rel))
            return None
        return norm

    def check_doc(self, doc):
        self.stats["docs"] += 1
        text = self.read(doc)
        blocks, prose, figures = parse_markdown(doc, text, self.problems)
        for block in blocks:
            extra = set()
            if block.tag is None:
                if block.lang in C_LANGS:
                    self.problems.append(Problem(
                        doc, block.line, "C block without a tag: put "
                        "'<!-- sample: PATH -->' on the line above, PATH "
                        "being the file its lines come from"))
            elif block.tag[0] == "sample":
                extra = self.check_sample(doc, block)
            else:
                extra = self.check_output(doc, block)
            for k, line in enumerate(block.lines):
                for m in NAME_RE.finditer(line):
                    self.check_name(doc, block.line + 1 + k, m.group(1),
                                    m.group(2) == "*", extra)
        for paragraph in prose:
            for line, name, prefix in inline_code_names(paragraph):
                self.check_name(doc, line, name, prefix, set())
        for tag, paragraph in figures:
            self.check_figures(doc, tag, paragraph)

    def names_of(self, rel):
        """Names rel defines, with those of the local headers it includes
        (#include "x.h", relative to rel's folder)."""
        if rel not in self.defined:
            text = self.read(rel) or ""
            names = c_declared_names(text)
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text,
                                  re.MULTILINE):
                path = posixpath.normpath(posixpath.join(
                    posixpath.dirname(rel), inc))
                names |= c_declared_names(self.read(path) or "")
            self.defined[rel] = names
        return self.defined[rel]

    def check_sample(self, doc, block):
        _, arg, tag_line = block.tag
        self.stats["samples"] += 1
        if len(arg.split()) != 1:
            self.problems.append(Problem(
                doc, tag_line, "a sample tag names one file, not %r" % arg))
            return set()
        rel = self.source_path(doc, tag_line, arg)
        if rel is None:
            return set()
        text = self.read(rel)
        if text is None:
            self.problems.append(Problem(doc, tag_line,
                                         "%s: no such file" % rel))
            return set()
        if (rel.startswith("examples/") and rel.endswith(".c")
                and rel not in self.programs):
            self.problems.append(Problem(
                doc, tag_line, "%s is not a program the suite builds and "
                "runs: register it in doc_programs (examples/meson.build, "
                "examples/*/meson.build)" % rel))
        self.match(doc, block, [l.rstrip() for l in text.split("\n")], rel,
                   rel)
        return self.names_of(rel)

    def program_output(self, doc, kind, arg, tag_line):
        """(source path, stdout lines) of the run an output or figures tag
        names, or (source path or None, None) after a problem."""
        words = arg.split()
        rel = self.source_path(doc, tag_line, words[0])
        if rel is None:
            return None, None
        if rel not in self.programs:
            self.problems.append(Problem(
                doc, tag_line, "%s is not a program the suite builds: %s "
                "must come from an entry of doc_programs" %
                (rel, "an output" if kind == "output" else "figures")))
            return None, None
        key = (rel, tuple(words[1:]))
        if key not in self.runs:
            self.runs[key] = self.execute(rel, words[1:])
        out, error = self.runs[key]
        if error:
            self.problems.append(Problem(doc, tag_line, error[0], error[1:]))
            return rel, None
        return rel, out

    def check_output(self, doc, block):
        _, arg, tag_line = block.tag
        self.stats["outputs"] += 1
        rel, out = self.program_output(doc, "output", arg, tag_line)
        if rel is None:
            return set()
        if out is not None:
            shown = " ".join(arg.split())
            self.match(doc, block, out, "the output of " + shown,
                       "stdout of " + shown)
        return self.names_of(rel)

    def check_figures(self, doc, tag, paragraph):
        """Every number of the paragraph written with a point or a percent
        sign is one the program prints, at the paragraph's precision."""
        _, arg, tag_line = tag
        if not self.figures:
            self.stats["figures skipped"] += 1
            return
        self.stats["figures"] += 1
        _, out = self.program_output(doc, "figures", arg, tag_line)
        if out is None:
            return
        printed = [value for line in out
                   for _, value, _ in numbers_in(line)]
        shown = " ".join(arg.split())
        for line, text in paragraph:
            # backquoted spans are code or commands, not figures
            text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", " ", text)
            for written, value, tolerance in numbers_in(text):
                if not re.search(r"[.%eE]", written):
                    continue
                if any(abs(v - value) <= tolerance for v in printed):
                    continue
                near = sorted(printed, key=lambda v: abs(v - value))[:3]
                self.problems.append(Problem(
                    doc, line, "%s is not a number that %s prints (at the "
                    "precision written)" % (written, shown),
                    ["nearest printed: %s" % ", ".join("%g" % v for v in near)]
                    if near else []))

    def execute(self, rel, args):
        """Runs a program in a fresh folder: (stdout lines, None), or
        (None, error lines)."""
        exe = self.programs[rel]
        shown = " ".join([rel] + list(args))
        if not os.path.isfile(exe):
            return None, ["%s: the executable %s does not exist (is it "
                          "built?)" % (rel, exe)]
        folder = tempfile.mkdtemp(prefix="doc-output-")
        try:
            proc = subprocess.run([exe] + list(args), cwd=folder,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:
            return None, ["%s did not finish within %g s" %
                          (shown, self.timeout)]
        except OSError as e:
            return None, ["%s could not be run: %s" % (shown, e)]
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").rstrip().split("\n")
            return None, (["%s exited with status %d; its stderr ends with:"
                           % (shown, proc.returncode)]
                          + ["| " + l for l in err[-8:]])
        out = proc.stdout.decode("utf-8", "replace").split("\n")
        return [l.rstrip() for l in out], None

    def match(self, doc, block, lines, what, where):
        body = [l.rstrip() for l in block.lines]
        if not any(body):
            self.problems.append(Problem(doc, block.line,
                                         "the tagged block is empty"))
            return
        if find_run(body, lines) >= 0:
            return
        line, message, details = explain_mismatch(body, lines, where,
                                                  block.line, what)
        self.problems.append(Problem(doc, line, message, details))

    def check_name(self, doc, line, name, prefix, extra):
        self.stats["names"] += 1
        known = self.public | extra
        if name in known or name in ALLOWED:
            return
        if name in self.internal:
            self.notes.setdefault(doc, {})[name] = self.internal[name]
            return
        if prefix or name.endswith("_"):
            everything = known | set(self.internal)
            if any(n.startswith(name) and n != name for n in everything):
                return
        close = difflib.get_close_matches(name, sorted(self.public), n=3)
        hint = ["did you mean %s?" % ", ".join(close)] if close else []
        self.problems.append(Problem(
            doc, line, "%s is declared in no public header (%s), internal "
            "header, nor the file this block comes from" %
            (name, ", ".join(PUBLIC_HEADERS)), hint))


def report(checker):
    for doc, names in sorted(checker.notes.items()):
        print("note: %s mentions internal names (accepted): %s" % (
            doc, ", ".join("%s (%s)" % (n, names[n]) for n in sorted(names))))
    problems = sorted(checker.problems, key=lambda p: (p.path, p.line))
    for p in problems:
        print(p)
    s = checker.stats
    if s["figures skipped"]:
        print("note: %d figures paragraphs not checked (--no-figures)"
              % s["figures skipped"])
    print("%d docs, %d samples, %d outputs, %d figures, %d names checked: %s"
          % (s["docs"], s["samples"], s["outputs"], s["figures"], s["names"],
             "%d problem(s)" % len(problems) if problems else "all good"))
    return 1 if problems else 0


# ------------------------------------------------------------ self-test

FIXTURE = {
    "tapegrad.h": "#include \"tensor/tensor.h\"\n#define TAPEGRAD_VERSION \"0\"\n",
    "tensor/tensor.h":
        "/* a comment naming tg_commented_out */\n"
        "#define TG_MAX_DIMS 8\n"
        "typedef struct tg_tensor {\n    int ndim;\n} tg_tensor;\n"
        "typedef enum tg_dtype {\n    TG_FLOAT32 = 0,\n    TG_INT64,\n"
        "} tg_dtype;\n"
        "tg_tensor *tg_zeros(const long *shape, int ndim, tg_dtype d);\n"
        "void tg_release(tg_tensor *t);\n"
        "typedef void (*tg_error_handler)(const char *message);\n",
    "autograd/autograd.h": "int tg_backward(tg_tensor *root);\n",
    "autograd/ops.h": "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
                      "tg_tensor *tg_make_a(void);\n"
                      "tg_tensor *tg_make_b(void);\n"
                      "#ifdef __cplusplus\n}\n#endif\n",
    "nn/nn.h": "typedef struct tg_module tg_module;\n",
    "autograd/internal.h": "int tg_record(void *node);\n",
    "examples/hello_util.h": "#define TG_HELLO_LOCAL 1\n",
    "examples/hello.c":
        "/* examples/hello.c - says hello. */\n"
        "#include \"tapegrad.h\"\n"
        "#include \"hello_util.h\"\n"
        "\n"
        "static int tg_local_helper(void) { return 0; }\n"
        "\n"
        "int main(void)\n"
        "{\n"
        "    tg_tensor *x = tg_zeros(0, 0, TG_FLOAT32);\n"
        "    (void)TG_HELLO_LOCAL;\n"
        "    tg_release(x);\n"
        "    return tg_local_helper();\n"
        "}\n",
    "docs/guide.md":
        "# Guide\n"
        "\n"
        "Call `tg_zeros`, then `tg_release`; the `tg_make_*` family; the\n"
        "internal `tg_record`; `TG_PLOTS_DIR` is allowed. A tag reads\n"
        "`<!-- sample: PATH -->` in prose.\n"
        "\n"
        "- a list item:\n"
        "\n"
        "  <!-- sample: examples/hello.c -->\n"
        "  ```c\n"
        "  int main(void)\n"
        "  {\n"
        "      tg_tensor *x = tg_zeros(0, 0, TG_FLOAT32);\n"
        "      (void)TG_HELLO_LOCAL;\n"
        "  ```\n"
        "\n"
        "<!-- output: examples/hello.c --greet -->\n"
        "```text\n"
        "hello, --greet\n"
        "  indented line  \n"
        "accuracy 97.97%  loss 13.2996  time   ... s\n"
        "```\n"
        "\n"
        "<!-- figures: examples/hello.c --greet -->\n"
        "The run ends at 98.0% (exactly 97.97%) with a loss of 13.30, after\n"
        "1000 steps of `--lr 0.5`.\n"
        "\n"
        "<!-- sample: tensor/tensor.h -->\n"
        "```c\n"
        "void tg_release(tg_tensor *t);\n"
        "```\n"
        "\n"
        "```sh\n"
        "echo untagged blocks of other languages are not checked\n"
        "```\n",
    "README.md":
        "# Fixture\n"
        "\n"
        "<!-- sample: examples/hello.c -->\n"
        "```c\n"
        "    (void)TG_HELLO_LOCAL;\n"
        "    tg_release(x);\n"
        "    return tg_local_helper();   \n"
        "}\n"
        "```\n",
}

HELLO = ("#!/bin/sh\n"
         "echo \"first line\"\n"
         "echo \"hello, $1\"\n"
         "echo \"  indented line\"\n"
         "echo \"accuracy 97.97%  loss 13.2996  time 0.53 s\"\n"
         "exit 0\n")

# name: (what to change, a phrase the problem must contain)
WRONG_CASES = [
    ("block not in file",
     [("README.md", "    (void)TG_HELLO_LOCAL;\n    tg_release(x);",
       "    (void)TG_HELLO_LOCAL;\n    tg_release(y);")],
     "but block line 2 differs"),
    ("first block line not in file",
     [("README.md", "    (void)TG_HELLO_LOCAL;\n", "    (void)TG_ELSE;\n")],
     "block line 1 is not in examples/hello.c"),
    ("block line differs",
     [("README.md", "    return tg_local_helper();", "    return 1;")],
     "but block line 3 differs"),
    ("block lines out of order",
     [("README.md", "    tg_release(x);\n    return tg_local_helper();",
       "    return tg_local_helper();\n    tg_release(x);")],
     "out of order"),
    ("untagged C block",
     [("docs/guide.md", "<!-- sample: tensor/tensor.h -->\n", "")],
     "C block without a tag"),
    ("tag not right above its block",
     [("docs/guide.md", "<!-- sample: tensor/tensor.h -->\n",
       "<!-- sample: tensor/tensor.h -->\n\n")],
     "must be on the line right above"),
    ("a doc named as the sample (it would match itself)",
     [("docs/guide.md", "<!-- sample: tensor/tensor.h -->\n",
       "<!-- sample: docs/guide.md -->\n")],
     "not a doc or a build product"),
    ("missing file",
     [("README.md", "sample: examples/hello.c", "sample: examples/bye.c")],
     "examples/bye.c: no such file"),
    ("example program not registered",
     [("PROGRAMS", "examples/hello.c", "examples/other.c")],
     "is not a program the suite builds and runs"),
    ("wrong output line",
     [("docs/guide.md", "hello, --greet\n", "hello, greet\n")],
     "is not in the output of examples/hello.c --greet"),
    ("output of an unbuilt program",
     [("docs/guide.md", "output: examples/hello.c", "output: examples/x.c")],
     "examples/x.c is not a program the suite builds"),
    ("program exiting 1",
     [("hello.sh", "exit 0", "exit 1")],
     "exited with status 1"),
    ("unknown tg_ name in prose",
     [("docs/guide.md", "Call `tg_zeros`", "Call `tg_zeroes`")],
     "tg_zeroes is declared in no public header"),
    ("unknown TG_ name in a code block",
     [("docs/guide.md", "```sh\necho untagged",
       "```sh\necho TG_NO_SUCH_FLAG untagged")],
     "TG_NO_SUCH_FLAG is declared in no public header"),
    ("name of a header the sample file does not include",
     [("examples/hello.c", '#include "hello_util.h"\n', "")],
     "TG_HELLO_LOCAL is declared in no public header"),
    ("name only in a header comment",
     [("docs/guide.md", "Call `tg_zeros`", "Call `tg_commented_out`")],
     "tg_commented_out is declared in no public header"),
    ("unclosed fence",
     [("README.md", "}\n```\n", "}\n")],
     "never closed"),
    ("a number in prose that the run does not print",
     [("docs/guide.md", "a loss of 13.30", "a loss of 34.5")],
     "34.5 is not a number that examples/hello.c --greet prints"),
    ("a number in prose rounded wrongly",
     [("docs/guide.md", "at 98.0%", "at 97.9%")],
     "97.9% is not a number that examples/hello.c --greet prints"),
    ("figures tag not right above its paragraph",
     [("docs/guide.md", "--greet -->\nThe run", "--greet -->\n\nThe run")],
     "figures tag must be on the line right above a paragraph"),
    ("figures of an unbuilt program",
     [("docs/guide.md", "figures: examples/hello.c", "figures: examples/x.c")],
     "figures must come from an entry of doc_programs"),
    ("an output field other than the elided one differs",
     [("docs/guide.md", "loss 13.2996  time", "loss 13.2997  time")],
     "but block line 3 differs"),
    ("malformed tag",
     [("README.md", "<!-- sample: examples/hello.c -->",
       "<!-- samples examples/hello.c -->")],
     "malformed tag"),
]


def build_fixture(folder, changes):
    files = dict(FIXTURE, **{"hello.sh": HELLO,
                             "PROGRAMS": "examples/hello.c"})
    files = write_tree(folder, files, changes)
    script = os.path.join(folder, "hello.sh")
    os.chmod(script, 0o755)
    return {files["PROGRAMS"]: script}


def self_test():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="doc-samples-self-test-") as tmp:
        folder = os.path.join(tmp, "right")
        checker = Checker(folder, build_fixture(folder, []), timeout=20)
        problems = checker.run()
        if problems or checker.stats["samples"] != 3 \
                or checker.stats["outputs"] != 1 \
                or checker.stats["figures"] != 1:
            failures += 1
            print("FAIL: the right fixture is rejected:")
            for p in problems:
                print(p)
        else:
            print("ok: accepts the right docs (%d samples, 1 output, 1 "
                  "figures, %d "
                  "names, %d internal)" % (checker.stats["samples"],
                                           checker.stats["names"],
                                           len(checker.notes)))
        skipping = Checker(folder, build_fixture(folder, [
            ("docs/guide.md", "a loss of 13.30", "a loss of 34.5")]),
            timeout=20, figures=False)
        if skipping.run() or skipping.stats["figures skipped"] != 1:
            failures += 1
            print("FAIL: --no-figures still checks the figures")
        else:
            print("ok: --no-figures leaves the figures unchecked, and says "
                  "so")
        if checker.notes.get("docs/guide.md") != {
                "tg_record": "autograd/internal.h"}:
            failures += 1
            print("FAIL: internal names are not reported as such")
        for k, (case, changes, phrase) in enumerate(WRONG_CASES):
            folder = os.path.join(tmp, "wrong%d" % k)
            checker = Checker(folder, build_fixture(folder, changes),
                              timeout=20)
            problems = checker.run()
            text = "\n".join(str(p) for p in problems)
            if phrase in text:
                print("ok: rejects %s" % case)
            else:
                failures += 1
                print("FAIL: %s: expected a problem saying %r, got:\n%s"
                      % (case, phrase, text or "(no problem)"))
    print("self-test: %s" % ("passed" if failures == 0 else
                             "%d failure(s)" % failures))
    return 1 if failures else 0


# ------------------------------------------------------------ main


def main(argv):
    parser = argparse.ArgumentParser(
        description="Checks the samples, outputs and names in README.md and "
        "docs/**/*.md.")
    parser.add_argument("--root", help="the source tree")
    parser.add_argument("--program", action="append", default=[],
                        metavar="SOURCE=EXE",
                        help="a program the suite builds, e.g. "
                        "examples/tensor_tour.c=build/examples/tensor_tour")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds each program may run (default %(default)s)")
    parser.add_argument("--no-figures", action="store_true",
                        help="do not check the figures paragraphs (nor run "
                        "what only they need)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on fixtures of its own")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.root:
        parser.error("--root is required")
    programs = {}
    for entry in args.program:
        source, sep, exe = entry.partition("=")
        if not sep or not source or not exe:
            parser.error("--program takes SOURCE=EXE, not %r" % entry)
        programs[source] = exe
    checker = Checker(args.root, programs, args.timeout,
                      figures=not args.no_figures)
    checker.run()
    return report(checker)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
