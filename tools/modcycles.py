#!/usr/bin/env python3
"""Fails when the crate's modules import each other in a cycle.

The rule (docs: STYLE's layering, src/lib.rs's architecture comment) is that dependencies point
one way: at every level of the module tree, the sibling modules under one parent form a graph
without cycles. This reads the `crate::`, `super::` and `self::` paths of every file under
src/ (test code left out: `#[cfg(test)] mod … { … }` blocks and `tests.rs` / `*_tests.rs`
files), resolves each to the deepest module file it names, and turns it into an edge between
the two siblings under the closest common parent. A path to a module's own ancestor or
descendant is no edge (declarations, re-exports up the tree). `src/bin/` is left out: binaries
sit above everything.

Text, not the compiler: a path is found wherever it is written outside comments and string
literals, so a `use` inside a function counts as much as one at the top. Prints every cycle
with the edges that close it and the files they come from, then `cycles: N`; exits 1 if N > 0.

Usage: tools/modcycles.py [SRC_DIR]   (default: src)
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_START = re.compile(r"\b(crate|super|self)\s*::")


def module_files(src):
    """Module path (a tuple) -> file, for every .rs file but the binaries'."""
    mods = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            parts = os.path.relpath(path, src)[:-3].split(os.sep)
            if parts[0] == "bin":
                continue
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts in (["lib"], ["main"]):
                parts = []
            mods[tuple(parts)] = path
    return mods


def is_test_file(path):
    base = os.path.basename(path)
    return base == "tests.rs" or base.endswith("_tests.rs")


CHAR_LITERAL = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'\n])'")
RAW_STRING = re.compile(r'b?r(#*)"')


def strip_comments_and_strings(text):
    """The code without comments and without the contents of string and char literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not text[i - 1].isalnum()):
            end = text.find('"' + m.group(1), m.end())
            out.append('""')
            i = n if end < 0 else end + 1 + len(m.group(1))
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and (m := CHAR_LITERAL.match(text, i)):
            out.append("' '")
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{")


def strip_test_modules(code):
    """The code without inline `#[cfg(test)] mod name { … }` blocks."""
    out, i = [], 0
    for m in TEST_MODULE.finditer(code):
        if m.start() < i:
            continue
        out.append(code[i : m.start()])
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        i = j
    out.append(code[i:])
    return "".join(out)


def paths_from(code, at):
    """Every path starting at `crate`/`super`/`self`, with `use` groups (nested too) expanded:
    `use crate::a::{b, c::{d, e}}` gives a::b, a::c::d and a::c::e."""
    found = []
    for m in PATH_START.finditer(code):
        found.extend(expand(m.group(1), code, m.end()))
    return found


def expand(head, code, i):
    """The paths of the path tree starting after `head::` at position `i`."""
    prefix = [head]
    while True:
        m = re.compile(r"\s*(" + IDENT + r"|\{)").match(code, i)
        if not m:
            return [prefix]
        if m.group(1) != "{":
            prefix.append(m.group(1))
            i = m.end()
            sep = re.compile(r"\s*::").match(code, i)
            if not sep:
                return [prefix]
            i = sep.end()
            continue
        # A group: split at top-level commas, expand each item below the prefix.
        depth, j, start, items = 1, m.end(), m.end(), []
        while j < len(code) and depth:
            ch = code[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    items.append(code[start:j])
            elif ch == "," and depth == 1:
                items.append(code[start:j])
                start = j + 1
            j += 1
        out = [prefix]
        for item in items:
            item = re.sub(r"\s+as\s+" + IDENT + r"\s*$", "", item.strip())
            if not item or item in ("self", "*"):
                continue
            sub = re.compile(r"\s*(" + IDENT + r")").match(item)
            if not sub:
                continue
            rest = item[sub.end() :]
            tail = re.compile(r"\s*::").match(rest)
            if tail:
                for p in expand(sub.group(1), rest, tail.end()):
                    out.append(prefix + p)
            else:
                out.append(prefix + [sub.group(1)])
        return out


def absolute(here, path):
    """`path` (starting with crate/super/self) as a path from the crate root."""
    head, rest = path[0], [p for p in path[1:] if p not in ("self", "*")]
    if head == "crate":
        return rest
    base = list(here)
    if head == "super":
        base = base[:-1]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    return base + rest


def resolve(mods, path):
    """The deepest module with a file that `path` names (or lies in)."""
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in mods:
            return tuple(path[:n])
    return None


def sibling_edges(mods):
    """parent -> {(a, b): files}: module a (a child of parent) uses something in sibling b."""
    edges = {}
    for here, path in mods.items():
        if is_test_file(path):
            continue
        with open(path, encoding="utf-8") as f:
            code = strip_test_modules(strip_comments_and_strings(f.read()))
        for p in paths_from(code, here):
            target = resolve(mods, absolute(here, p))
            if target is None:
                continue
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common in (len(here), len(target)):
                continue  # its own ancestor or descendant
            key = (here[common], target[common])
            edges.setdefault(here[:common], {}).setdefault(key, set()).add(path)
    return edges


def cycles(nodes, succ):
    """The strongly connected groups of more than one node (Tarjan, iterative)."""
    index, low, on, stack, groups, counter = {}, {}, set(), [], [], 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    mods = module_files(src)
    total = 0
    for parent, edges in sorted(sibling_edges(mods).items()):
        succ, nodes = {}, set()
        for a, b in edges:
            succ.setdefault(a, set()).add(b)
            nodes.update((a, b))
        for group in cycles(nodes, succ):
            total += 1
            where = "::".join(("crate",) + parent)
            print(f"cycle in {where}: {' <-> '.join(group)}")
            for (a, b), files in sorted(edges.items()):
                if a in group and b in group:
                    print(f"    {a} -> {b}  ({', '.join(sorted(files))})")
    print("cycles:", total)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
