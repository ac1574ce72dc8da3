#!/usr/bin/env python3
"""Tests of tools/perf/flamegraph, printed as KTAP for make check's host tests:
the tree of folded stacks, the boxes' geometry and weights in the SVG,
labels, escaping, bad input, and the embedded script's zoom, search and
details line, run under Node.js (skipped, saying so, where it is absent).
"""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
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


class Skip(Exception):
    pass


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


# Runs the script embedded in an SVG on the frames the SVG holds, then the
# calls the test asks for, and prints their results as JSON.
NODE_DRIVER = r"""
const vm = require("vm");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const ctx = { module: { exports: {} } };
vm.runInNewContext(input.code, ctx);
const fg = ctx.module.exports;
const out = input.calls.map(function (c) {
    if (c[0] === "zoom") {
        return fg.zoomLayout(input.frames, c[1], input.left, input.width);
    }
    if (c[0] === "search") {
        return fg.searchMatch(input.frames, new RegExp(c[1]));
    }
    return fg.describe(input.frames, c[1], input.unit);
});
process.stdout.write(JSON.stringify(out));
"""


def run_script(svg, calls):
    """The results of calls (("zoom", id), ("search", regex),
    ("describe", id)) made on the SVG's embedded script under Node.js."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise Skip("Node.js is not installed: the script's logic is untested")
    root = ElementTree.fromstring(svg)
    frames = []
    for rect in root.iter(SVG + "rect"):
        if "data-id" in rect.attrib:
            check_eq(int(rect.get("data-id")), len(frames))
            frames.append({"name": rect.get("data-name"),
                           "parent": int(rect.get("data-parent")),
                           "weight": int(rect.get("data-weight")),
                           "x0": float(rect.get("data-x0")),
                           "w0": float(rect.get("data-w0"))})
    code = root.find(SVG + "script").text
    proc = subprocess.run(
        [node, "-e", NODE_DRIVER], capture_output=True, text=True,
        input=json.dumps({"code": code, "frames": frames, "calls": calls,
                          "left": int(root.get("data-left")),
                          "width": int(root.get("data-width")),
                          "unit": root.get("data-unit")}))
    if proc.returncode != 0:
        raise AssertionError("node: %s" % proc.stderr)
    return frames, json.loads(proc.stdout)


# The script's DOM part on a stand-in document built from the SVG's
# elements (no browser here): the events the test plays, then each
# box's state and the three text lines after each.
DOM_DRIVER = r"""
const vm = require("vm");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
function El(attrs) {
    this.attrs = attrs; this.style = {}; this.on = {}; this.kids = {};
    this.textContent = "";
}
El.prototype.getAttribute = function (k) {
    return k in this.attrs ? this.attrs[k] : null;
};
El.prototype.setAttribute = function (k, v) { this.attrs[k] = String(v); };
El.prototype.addEventListener = function (t, f) { this.on[t] = f; };
El.prototype.querySelector = function (s) { return this.kids[s]; };
const groups = input.rects.map(function (a) {
    const g = new El({});
    g.kids.rect = new El(a);
    g.kids.text = new El({});
    return g;
});
const byId = {};
["details", "matched", "unzoom", "search"].forEach(function (id) {
    byId[id] = new El({});
});
let answer = "";
const view = new El({});
view.prompt = function () { return answer; };
const doc = {
    documentElement: new El(input.svg),
    defaultView: view,
    querySelectorAll: function () { return groups; },
    getElementById: function (id) { return byId[id]; },
};
vm.runInNewContext(input.code, { document: doc });
const out = input.events.map(function (e) {
    if (e[0] === "click") {
        groups[e[1]].on.click();
    } else if (e[0] === "hover") {
        groups[e[1]].on.mouseover();
    } else if (e[0] === "reset") {
        byId.unzoom.on.click();
    } else if (e[0] === "search") {
        answer = e[1];
        byId.search.on.click();
    } else if (e[0] === "key") {
        view.on.keydown({ key: e[1], ctrlKey: false,
                          preventDefault: function () {} });
    }
    return {
        boxes: groups.map(function (g) {
            const r = g.kids.rect;
            return [r.attrs.x, r.attrs.width, g.style.display,
                    g.style.opacity, r.attrs.fill, g.kids.text.textContent];
        }),
        details: byId.details.textContent,
        matched: byId.matched.textContent,
        unzoom: byId.unzoom.style.display,
    };
});
process.stdout.write(JSON.stringify(out));
"""


def run_dom(svg, events):
    """The state of the SVG's boxes and lines after each of events, played
    on its script's DOM part."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise Skip("Node.js is not installed: the script's logic is untested")
    root = ElementTree.fromstring(svg)
    rects = [dict(r.attrib) for r in root.iter(SVG + "rect")
             if "data-id" in r.attrib]
    proc = subprocess.run(
        [node, "-e", DOM_DRIVER], capture_output=True, text=True,
        input=json.dumps({"code": root.find(SVG + "script").text,
                          "rects": rects, "svg": dict(root.attrib),
                          "events": events}))
    if proc.returncode != 0:
        raise AssertionError("node: %s" % proc.stderr)
    return rects, json.loads(proc.stdout)


def frame_id(frames, name, depth_parent=None):
    ids = [i for i, f in enumerate(frames) if f["name"] == name
           and (depth_parent is None
                or frames[f["parent"]]["name"] == depth_parent)]
    check_eq(len(ids), 1)
    return ids[0]


@test
def script_zoom_widens_a_box_and_its_callees():
    svg = fg.render(fg.parse(FOLDED), width=1020)
    frames, _ = run_script(svg, [])
    beta = frame_id(frames, "beta")
    frames, (drawn, zoomed) = run_script(svg, [("zoom", -1), ("zoom", beta)])
    for f, d in zip(frames, drawn):
        check_eq((d["x"], d["w"], d["shown"], d["dim"]),
                 (f["x0"], f["w0"], True, False))
    at = {frames[i]["name"] + "/" + frames[frames[i]["parent"]]["name"]
          if frames[i]["parent"] >= 0 else "all": z
          for i, z in enumerate(zoomed)}
    # beta (x 310, 600 wide of 1000) spans the graph: 1000/600 a pixel.
    check_eq(at["beta/root"], {"x": 10, "w": 1000, "shown": True,
                               "dim": False})
    check_eq(round(at["gamma/beta"]["w"], 6), round(200 * 1000 / 600, 6))
    check_eq(at["gamma/beta"]["x"], 10)
    check_eq(round(at["shared/beta"]["x"], 6),
             round(10 + 200 * 1000 / 600, 6))
    for caller in ("all", "calltree/all", "root/calltree"):
        check_eq(at[caller], {"x": 10, "w": 1000, "shown": True,
                              "dim": True})
    for other in ("alpha/root", "shared/alpha"):
        check_eq(at[other]["shown"], False)


@test
def script_search_counts_nested_matches_once():
    svg = fg.render(fg.parse(FOLDED), width=1020)
    frames, (shared, nested, none) = run_script(
        svg, [("search", "^shared$"), ("search", "root|shared"),
              ("search", "nothing")])
    check_eq(sorted(frames[i]["name"] for i in shared["matched"]),
             ["shared", "shared"])
    check_eq(shared["weight"], 8)
    # shared is called from root: root's 20 covers it.
    check_eq(nested["weight"], 20)
    check_eq(len(nested["matched"]), 3)
    check_eq(none, {"matched": [], "weight": 0})


@test
def script_details_line_names_weight_unit_and_share():
    svg = fg.render(fg.parse(FOLDED), width=1020, unit="samples")
    frames, _ = run_script(svg, [])
    alpha = frame_id(frames, "alpha")
    _, (text,) = run_script(svg, [("describe", alpha)])
    check_eq(text, "alpha: 6 samples, 30.00%")
    if "<title>alpha (6 samples, 30.00%)</title>" not in svg:
        raise AssertionError("tooltip without unit")


@test
def script_drives_the_boxes():
    svg = fg.render(fg.parse(FOLDED), width=1020)
    rects, states = run_dom(svg, [
        ("hover", 0), ("click", 0), ("reset",), ("search", "gamma"),
        ("key", "Escape"), ("search", "(")])
    names = [r["data-name"] for r in rects]
    beta, gamma = names.index("beta"), names.index("gamma")
    alpha = names.index("alpha")
    first, clicked, reset, found, cleared, bad = states
    check_eq(first["details"], "all: 20 samples, 100.00%")
    check_eq(first["unzoom"], "none")
    # The root's zoom is the graph as drawn, Reset Zoom offered.
    check_eq([b[:2] for b in clicked["boxes"]],
             [[r["x"], r["width"]] for r in rects])
    check_eq(clicked["unzoom"], "")
    check_eq(reset["unzoom"], "none")
    check_eq(found["boxes"][gamma][4], "rgb(230,0,230)")
    check_eq(found["boxes"][beta][4], rects[beta]["fill"])
    check_eq(found["matched"], "Matched: 20.00% (4 samples)")
    check_eq(cleared["boxes"][gamma][4], rects[gamma]["fill"])
    check_eq(cleared["matched"], "")
    check_eq(bad["matched"][:16], "Bad expression: ")
    _, (zoomed,) = run_dom(svg, [("click", beta)])
    check_eq(zoomed["boxes"][beta][:4], ["10.00", "1000.00", "", ""])
    check_eq(zoomed["boxes"][alpha][2], "none")
    check_eq(zoomed["boxes"][0][3], "0.5")
    check_eq(zoomed["boxes"][gamma][5], "gamma")


@test
def svg_is_self_contained():
    svg = fg.render(fg.parse(FOLDED))
    for remote in ("http:", "https:", "xlink:href", "src="):
        stripped = svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        if remote in stripped:
            raise AssertionError("SVG refers outside itself: %s" % remote)


def main():
    print("KTAP version 1")
    print("1..%d" % len(TESTS))
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
        except Skip as e:
            print("ok %d %s # SKIP %s" % (i, fn.__name__, e))
            continue
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
