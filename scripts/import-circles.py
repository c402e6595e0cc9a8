#!/usr/bin/env python3
"""Import circles between the source files of each crate (issue 28: "a house without circles").

A file depends on another when it names one of its items by path (`use crate::a::b`,
`crate::a::b::f()`, `super::x`, `use self::...` in a folder module). References to the crate
root (lib.rs/main.rs re-exports, `crate::Foo`) and a parent module's own `mod` lines are not
counted: the root lists every file by nature. Test modules inside a file (`#[cfg(test)] mod
tests`) are skipped. Prints every strongly connected component of more than one file; exit
status 1 when there is one.

    scripts/import-circles.py            # every crate under crates/
    scripts/import-circles.py crates/sim  # one crate
"""
import os
import re
import sys


def strip(text):
    """The code without comments, strings and `#[cfg(test)]` modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, flags=re.S)
    if not m:
        return [re.sub(r"\s+as\s+\w+$", "", tree)]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part.strip() for p in expand(prefix + part.strip())]


def crate_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            if rel and rel[0] == "bin":
                continue
            mods[tuple(rel)] = path
    return mods


def resolve(mods, path):
    """The file that holds the item at module path `path` (longest prefix with a file)."""
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in mods:
            return tuple(path[:n])
    return ()


def graph(src):
    mods = crate_files(src)
    edges = {m: set() for m in mods}
    for mod, path in mods.items():
        code = strip(open(path, encoding="utf-8").read())
        is_folder = path.endswith("mod.rs") or path.endswith("lib.rs") or path.endswith("main.rs")
        here = list(mod) if is_folder else list(mod[:-1])  # the module `self` of a folder is itself
        refs = []
        for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", code):
            refs += expand(m.group(1))
        code_no_use = re.sub(r"\buse\s+[^;]*;", "", code)
        refs += re.findall(r"\b((?:crate|super)(?:::\w+)+)", code_no_use)
        for r in refs:
            segs = [s.strip() for s in r.split("::") if s.strip()]
            if segs[0] == "crate":
                target = segs[1:]
            else:
                base = list(mod)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        base = base[:-1]
                    segs = segs[1:]
                target = base + segs
                if r.startswith("self") and not is_folder:
                    continue
            t = resolve(mods, target)
            if t and t != mod:
                edges[mod].add(t)
    return mods, edges


def sccs(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = sys.argv[1:] or sorted(
        os.path.join(root, "crates", c) for c in os.listdir(os.path.join(root, "crates"))
    )
    total = 0
    for crate in crates:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        mods, edges = graph(src)
        for comp in sccs(edges):
            total += 1
            names = sorted(os.path.relpath(mods[m], crate) for m in comp)
            print(f"{os.path.basename(os.path.normpath(crate))}: {len(names)} files: {' '.join(names)}")
    print(f"{total} import circle(s)")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
