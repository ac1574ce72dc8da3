#!/usr/bin/env python3
"""Tests of tools/perf/flamegraph, printed as KTAP for make check's host tests:
the tree of folded stacks, the boxes' geometry and weights in the SVG,
labels, escaping, and bad input.
"""

import importlib.machinery
import importlib.util
import os
import sys
import traceback
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
SVG = "{http://www.w3.org/2000/svg}"


def load_tool():
    # The tool has no .py suffix (it is a command): load it by path.
    path = os.path.join(HERE, "flamegraph")
    loader = importlib.machinery.SourceFileLoader("flamegraph", path)
    spec = importlib.util.spec_from_loader("flamegraph", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


fg = load_tool()
TESTS = []
FOLDED = ("calltree;root;alpha;shared 4\n"
          "calltree;root;alpha 2\n"
          "calltree;root;beta;gamma 4\n"
          "calltree;root;beta;shared 4\n"
          "calltree;root;beta 4\n"
          "calltree;root 2\n")


def test(fn):
    TESTS.append(fn)
    return fn


def check_eq(got, want):
    if got != want:
        raise AssertionError("got %r, want %r" % (got, want))


def boxes(svg):
    """{(depth, name): (x, width, weight)} of the SVG's boxes."""
    root = ElementTree.fromstring(svg)
    found = {}
    for g in root.iter(SVG + "g"):
        rect = g.find(SVG + "rect")
        name = g.find(SVG + "title").text.rsplit(" (", 1)[0]
        found[(int(rect.get("data-depth")), name)] = (
            float(rect.get("x")), float(rect.get("width")),
            int(rect.get("data-weight")))
    return found


@test
def tree_weights_sum_the_stacks():
    root = fg.parse(FOLDED)
    check_eq(root.weight, 20)
    r = root.children["calltree"].children["root"]
    check_eq((r.weight, r.children["alpha"].weight,
              r.children["beta"].weight), (20, 6, 12))
    check_eq(r.children["beta"].children["shared"].weight, 4)


@test
def boxes_are_as_wide_as_their_weight():
    b = boxes(fg.render(fg.parse(FOLDED), width=1020))
    # 1000 pixels for 20: 50 a unit, from x=10.
    check_eq(b[(0, "all")], (10.0, 1000.0, 20))
    check_eq(b[(2, "root")], (10.0, 1000.0, 20))
    check_eq(b[(3, "alpha")], (10.0, 300.0, 6))
    check_eq(b[(3, "beta")], (310.0, 600.0, 12))
    check_eq(b[(4, "gamma")], (310.0, 200.0, 4))


@test
def callers_are_below_and_siblings_in_name_order():
    b = boxes(fg.render(fg.parse("b;y 1\nb;x 1\na 2\n"), width=420))
    check_eq([n for (d, n) in sorted(b, key=lambda k: (k[0], b[k][0]))],
             ["all", "a", "b", "x", "y"])
    svg = ElementTree.fromstring(fg.render(fg.parse("a;b 1\n")))
    ys = {g.find(SVG + "title").text.split(" ")[0]:
          int(g.find(SVG + "rect").get("y")) for g in svg.iter(SVG + "g")}
    if not ys["all"] > ys["a"] > ys["b"]:
        raise AssertionError("callers must be below: %r" % ys)


@test
def labels_fit_and_names_are_escaped():
    check_eq(fg.label("perf_work_tree_shared", 1000),
             "perf_work_tree_shared")
    check_eq(fg.label("perf_work_tree_shared", 6 + 7 * 8), "perf_w..")
    check_eq(fg.label("perf_work_tree_shared", 20), "")
    svg = fg.render(fg.parse("a<b>&\"c 1\n"))
    ElementTree.fromstring(svg)
    if "a&lt;b&gt;&amp;&quot;c" not in svg:
        raise AssertionError("name not escaped")


@test
def bad_line_is_an_error():
    try:
        fg.parse("a;b 1\na;b x\n")
    except fg.FoldedError as e:
        check_eq(str(e), "line 2: expected 'STACK WEIGHT', got 'a;b x'")
    else:
        raise AssertionError("no error")


def main():
    print("KTAP version 1")
    print("1..%d" % len(TESTS))
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
        except Exception:
            failed += 1
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            print("not ok %d %s" % (i, fn.__name__))
        else:
            print("ok %d %s" % (i, fn.__name__))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
