#!/usr/bin/env python3
"""The tree's structural rules, checked over the sources (no build needed).

  check-layout.py SRC_ROOT

  - no #include cycle among runtime/'s components. A component is a header and the
    source that implements it (runtime/include/zrt/X.h with runtime/lib/X.cpp,
    runtime/lib/cuda/Y.h with runtime/lib/cuda/Y.cu): two components that include
    each other's headers, even only from their sources, cannot be built, tested or
    understood one without the other. A quoted include is resolved as the compiler
    does: the including file's folder, then the runtime's and the project's include
    folders;
  - no source or header over 800 lines in lib/ or runtime/lib.

Prints every violation and exits 1 when there is one; prints what it checked
otherwise.
"""
import os
import re
import sys

MAX_LINES = 800
SOURCE = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def files_under(root, top):
    for folder, _, names in os.walk(os.path.join(root, top)):
        for name in sorted(names):
            if name.endswith(SOURCE):
                yield os.path.join(folder, name)


def component(root, path):
    """runtime/include/zrt/X.h and runtime/lib/X.cpp are the component "X";
    runtime/lib/cuda/Y.cu is "cuda/Y"."""
    for base in ("runtime/include/zrt", "runtime/lib", "runtime"):
        prefix = os.path.join(root, base) + os.sep
        if path.startswith(prefix):
            return os.path.splitext(path[len(prefix):])[0]
    return path


def include_graph(root):
    search = [os.path.join(root, d) for d in ("runtime/include", "runtime/lib", "include")]
    runtime = os.path.join(root, "runtime")
    graph = {}
    for path in files_under(root, "runtime"):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        node = component(root, path)
        edges = graph.setdefault(node, [])
        for name in INCLUDE.findall(text):
            for base in [os.path.dirname(path)] + search:
                target = os.path.normpath(os.path.join(base, name))
                if os.path.isfile(target):
                    if target.startswith(runtime + os.sep):
                        other = component(root, target)
                        if other != node and other not in edges:
                            edges.append(other)
                    break
    return graph


def cycles(graph):
    """Tarjan's strongly connected components of more than one file (or a file that
    includes itself), each as a sorted list."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative depth-first search (the graph may be deeper than Python's stack).
        work = [(v, iter(graph.get(v, ())))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.abspath(sys.argv[1])
    problems = []
    graph = include_graph(root)
    for members in cycles(graph):
        problems.append("include cycle among runtime/'s components: " + " <-> ".join(members))
    sizes = 0
    for top in ("lib", "runtime/lib"):
        for path in files_under(root, top):
            sizes += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                problems.append("%s has %d lines (at most %d)"
                                % (os.path.relpath(path, root), n, MAX_LINES))
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("layout: %d runtime components, %d includes between them, no cycle; %d files in lib/ and "
          "runtime/lib, none over %d lines"
          % (len(graph), sum(len(e) for e in graph.values()), sizes, MAX_LINES))


if __name__ == "__main__":
    main()
