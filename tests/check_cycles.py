#!/usr/bin/python3
"""tests/check_cycles.py [--relative-to DIR] OBJECT... - the cycles of the call graph
between object files.

Each object is a node, with an edge A -> B when A uses a symbol B defines (nm: an
undefined symbol of A that is a global one of B; a symbol two objects define, such as
the writer table of writers_dl.c and writers_static.c, gives an edge to each). A
strongly connected component of more than one object is a cycle: each of its files
calls, through the others, back into itself, so none of them is a layer that can be
read, tested or replaced without the rest. For each cycle this prints its files and the
edges between them with the symbols that make them, and the exit status is 1; with no
cycle it prints nothing and exits 0. Names are shown relative to DIR (the build
directory). tests/check_cycles.sh runs it over a build; tests/README.md says more.
"""
import collections
import os
import subprocess
import sys

SHOWN_SYMBOLS = 6  # per edge; the rest are counted


def symbols(objects):
    """defines[symbol] = objects defining it; uses[object] = symbols it needs."""
    defines = collections.defaultdict(set)
    uses = collections.defaultdict(set)
    # One nm for all: -A names the object on each line, -P gives
    # "object: symbol type [value size]".
    out = subprocess.run(['nm', '-g', '-A', '-P', *objects], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        obj, sep, rest = line.rpartition(': ')
        fields = rest.split()
        if not sep or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == 'U':
            uses[obj].add(name)
        elif kind not in ('w', 'v'):  # weak undefined: no definition here
            defines[name].add(obj)
    return defines, uses


def graph(objects):
    defines, uses = symbols(objects)
    edges = {o: collections.defaultdict(set) for o in objects}
    for obj in objects:
        for name in uses[obj]:
            for target in defines.get(name, ()):
                if target != obj:
                    edges[obj][target].add(name)
    return edges


def cycles(objects, edges):
    """Tarjan's strongly connected components, without recursion (a long chain
    of files must not meet Python's recursion limit); those of 2+ objects."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in objects:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def main(argv):
    relative_to = None
    if len(argv) >= 2 and argv[0] == '--relative-to':
        relative_to, argv = argv[1], argv[2:]
    objects = sorted(set(argv))
    if not objects:
        print('usage: check_cycles.py [--relative-to DIR] OBJECT...', file=sys.stderr)
        return 2

    def shown(path):
        return os.path.relpath(path, relative_to) if relative_to else path

    edges = graph(objects)
    found = cycles(objects, edges)
    for component in found:
        members = set(component)
        print(f'check_cycles: a cycle of {len(component)} files: '
              + ' '.join(shown(o) for o in component))
        for obj in component:
            for target in sorted(t for t in edges[obj] if t in members):
                names = sorted(edges[obj][target])
                more = len(names) - SHOWN_SYMBOLS
                listed = ' '.join(names[:SHOWN_SYMBOLS]) + (f' (and {more} more)' if more > 0 else '')
                print(f'    {shown(obj)} -> {shown(target)}: {listed}')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
