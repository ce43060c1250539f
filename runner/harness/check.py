"""Finds the experiment's "module:function" references without running them.

The runner calls this before any worker starts: a misspelt module or
function, or a syntax error, would otherwise surface only after the image
was built and every case had tried to import it. Nothing is imported: the
modules are located on sys.path (PYTHONPATH holds the experiment and its
includes) and parsed, so GPU-only code (triton, CUDA extensions built at
import) is checked on any machine, in milliseconds.

    python3 check.py '[{"key": "benchmark.inputs", "ref": "gla.inputs:make_inputs"}, ...]' [host]

prints a JSON list of problems, each {key, ref, file, line, message}.

With "host" (xrun submit's check on the submitting machine, before the
image build) only the experiment's own modules are judged, those under
PYTHONPATH: an installed package may be absent here, or another version,
and the check in the container judges those.
"""

import ast
import difflib
import json
import os
import sys
from importlib.machinery import PathFinder


class Skip(Exception):
    """A module the host cannot judge: the container's check will."""


class Problem(Exception):
    def __init__(self, message, file="", line=0):
        super().__init__(message)
        self.message, self.file, self.line = message, file, line


def roots():
    """The experiment's directories: PYTHONPATH, as the runner and xrun set it."""
    return [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def own(origin):
    return any(os.path.abspath(origin).startswith(r + os.sep) for r in roots())


def top_level_modules():
    """The modules and packages directly in the experiment's directories."""
    names = set()
    for r in roots():
        try:
            entries = os.listdir(r)
        except OSError:
            continue
        for e in entries:
            if e.endswith(".py"):
                names.add(e[:-3])
            elif e.isidentifier() and os.path.isdir(os.path.join(r, e)):
                names.add(e)
    return names


def closest(name, candidates):
    """' (did you mean X?)' for the candidate closest to name, or ''."""
    m = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return "; did you mean %s?" % m[0] if m else ""


def locate(modname, host=False):
    """Returns the spec of modname, found package by package without
    executing any __init__.py (whose syntax is checked on the way)."""
    path = None
    spec = None
    parts = modname.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        spec = PathFinder.find_spec(name, path)
        if spec is None:
            if i == 0 and name in sys.builtin_module_names:
                return None
            hint = closest(parts[i], top_level_modules()) if i == 0 else ""
            if host and i == 0 and not hint:
                raise Skip()  # perhaps a package the image installs
            where = "the experiment, its includes and the installed packages" if i == 0 else parts[i - 1]
            raise Problem("module %s not found (looked in %s)%s" % (name, where, hint))
        if host and i == 0 and spec.origin not in (None, "built-in", "frozen") and not own(spec.origin) and \
                not any(own(p + os.sep + "x") for p in (spec.submodule_search_locations or [])):
            raise Skip()  # an installed package: the image's version may differ
        if i < len(parts) - 1:
            if spec.submodule_search_locations is None:
                raise Problem("%s is a module, not a package: %s cannot be in it" % (name, modname), spec.origin or "")
            if spec.origin and spec.origin.endswith(".py"):
                parse(spec.origin)
            path = spec.submodule_search_locations
    return spec


parsed = {}


def parse(file):
    if file not in parsed:
        try:
            with open(file, "rb") as f:
                src = f.read()
            parsed[file] = ast.parse(src, filename=file)
        except SyntaxError as e:
            msg = "%s: %s" % (type(e).__name__, e.msg)
            text = (e.text or "").strip()
            if text:
                msg += ": " + (text if len(text) <= 60 else text[:57] + "...")
            raise Problem(msg, e.filename or file, e.lineno or 0)
        except (OSError, ValueError) as e:
            raise Problem("cannot read %s: %s" % (file, e), file)
    return parsed[file]


def defined(tree):
    """Top-level names a module defines, the functions and classes among
    them that are its own (not imported), and whether it may define others
    in ways a parse cannot see (star imports, module __getattr__,
    globals())."""
    names, funcs, dynamic = set(), set(), False

    def targets(t):
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def walk(body):
        nonlocal dynamic
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(st.name)
                funcs.add(st.name)
                if st.name == "__getattr__":
                    dynamic = True
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    targets(t)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
                targets(st.target)
            elif isinstance(st, ast.Import):
                for a in st.names:
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(st, ast.ImportFrom):
                for a in st.names:
                    if a.name == "*":
                        dynamic = True
                    names.add(a.asname or a.name)
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)):
                if isinstance(st, (ast.For, ast.AsyncFor)):
                    targets(st.target)
                walk(st.body)
                walk(getattr(st, "orelse", []))
            elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                walk(st.body)
                for h in st.handlers:
                    walk(h.body)
                walk(st.orelse)
                walk(st.finalbody)
            elif isinstance(st, ast.Expr):
                for n in ast.walk(st):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("globals", "setattr", "exec"):
                        dynamic = True
    walk(tree.body)
    return names, funcs, dynamic


def check(ref, host=False):
    mod, sep, attr = ref.partition(":")
    if not sep or not mod or not attr:
        raise Problem("%r is not module:function" % ref)
    spec = locate(mod, host)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return  # a builtin, compiled or namespace module: nothing to parse
    tree = parse(spec.origin)
    name = attr.split(".")[0]
    names, funcs, dynamic = defined(tree)
    if name in names or dynamic:
        return
    # Only the module's own functions are listed: its imports (np, torch)
    # are not what a spec names.
    own_funcs = sorted(n for n in funcs if not n.startswith("_"))
    hint = closest(name, own_funcs) or closest(name, [n for n in names if not n.startswith("_")])
    if own_funcs:
        have = "its functions: " + ", ".join(own_funcs[:12]) + (", ..." if len(own_funcs) > 12 else "")
    else:
        have = "it defines no functions"
    raise Problem("module %s has no function %s%s (%s)" % (mod, name, hint, have), spec.origin)


def main():
    problems = []
    # One problem of a file (a syntax error) is said once, under the first
    # key that names the file, with the others that do.
    first = {}
    host = sys.argv[2:3] == ["host"]
    for t in json.loads(sys.argv[1]):
        try:
            check(t["ref"], host)
        except Skip:
            pass
        except Problem as p:
            where = (p.file, p.line, p.message)
            if p.file and where in first:
                first[where].append(t["key"])
                continue
            problems.append({"key": t["key"], "ref": t["ref"], "file": os.path.relpath(p.file) if p.file else "",
                             "line": p.line, "message": p.message})
            first[where] = []
            problems[-1]["_also"] = first[where]
    for p in problems:
        also = p.pop("_also", [])
        if also:
            p["message"] += " (also named by %s)" % ", ".join(also)
    json.dump(problems, sys.stdout)


if __name__ == "__main__":
    main()
