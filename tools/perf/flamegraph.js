/*
 * The flame graph's interaction, embedded whole by tools/perf/flamegraph
 * in the SVG it writes (the file stays self-contained: no network).
 *
 * Each box is a <g class="frame"> whose <rect> carries data-id (its index
 * in document order), data-parent (its caller's id, -1 for the root),
 * data-weight, data-name and its first geometry (data-x0, data-w0). The
 * logic works on a plain list of those frames and the DOM part only
 * applies its results, so tools/perf/test_flamegraph.py runs the logic
 * under Node.js without a browser:
 *
 *   click a box      zoom: it spans the graph, the boxes above it widen
 *                    with it, its callers span the graph dimmed, the
 *                    rest hide; "Reset Zoom" (top left) undoes it
 *   Search (top right, or Ctrl-F)
 *                    a regular expression; matching boxes turn purple
 *                    and the line below the title gives their share of
 *                    the samples, a box inside a matching one counted
 *                    once; Escape clears it
 *   hover a box      the line at the bottom names it, its weight and its
 *                    share of the whole graph
 */
"use strict";

var flamegraph = (function () {
    /* Whether frame a is frame b or one of b's callees (above it). */
    function within(frames, a, b) {
        for (var f = a; f >= 0; f = frames[f].parent) {
            if (f === b) {
                return true;
            }
        }
        return false;
    }

    /*
     * Each frame's geometry with frame z zoomed to [left, left + width]:
     * {x, w, shown, dim}. z < 0 is the graph as drawn.
     */
    function zoomLayout(frames, z, left, width) {
        return frames.map(function (f, i) {
            if (z < 0) {
                return { x: f.x0, w: f.w0, shown: true, dim: false };
            }
            var zf = frames[z];
            if (within(frames, i, z)) {
                var scale = width / zf.w0;
                return { x: left + (f.x0 - zf.x0) * scale, w: f.w0 * scale,
                         shown: true, dim: false };
            }
            if (within(frames, z, i)) {
                return { x: left, w: width, shown: true, dim: true };
            }
            return { x: f.x0, w: f.w0, shown: false, dim: false };
        });
    }

    /*
     * The frames whose names match re, and the weight they cover: a match
     * called from a match is inside its caller's box, counted once.
     */
    function searchMatch(frames, re) {
        var matched = [];
        var weight = 0;
        frames.forEach(function (f, i) {
            if (!re.test(f.name)) {
                return;
            }
            matched.push(i);
            for (var p = f.parent; p >= 0; p = frames[p].parent) {
                if (re.test(frames[p].name)) {
                    return;
                }
            }
            weight += f.weight;
        });
        return { matched: matched, weight: weight };
    }

    /* "name: 12 samples, 20.00%" for the details line. */
    function describe(frames, i, unit) {
        var total = frames[0].weight;
        var share = total ? 100 * frames[i].weight / total : 0;
        return frames[i].name + ": " + frames[i].weight + " " + unit + ", "
            + share.toFixed(2) + "%";
    }

    /* ---- the DOM: only in a browser ---------------------------------- */

    function attach(doc) {
        var svg = doc.documentElement;
        var unit = svg.getAttribute("data-unit");
        var left = Number(svg.getAttribute("data-left"));
        var width = Number(svg.getAttribute("data-width"));
        var groups = Array.prototype.slice.call(
            doc.querySelectorAll("g.frame"));
        var frames = groups.map(function (g) {
            var r = g.querySelector("rect");
            return { name: r.getAttribute("data-name"),
                     parent: Number(r.getAttribute("data-parent")),
                     weight: Number(r.getAttribute("data-weight")),
                     x0: Number(r.getAttribute("data-x0")),
                     w0: Number(r.getAttribute("data-w0")),
                     fill: r.getAttribute("fill") };
        });
        var details = doc.getElementById("details");
        var matchLine = doc.getElementById("matched");
        var reset = doc.getElementById("unzoom");
        var search = doc.getElementById("search");
        var matched = [];

        function label(g, name, w) {
            var fit = Math.floor((w - 6) / 7);
            var text = g.querySelector("text");
            text.textContent = fit >= name.length ? name
                : fit < 3 ? "" : name.slice(0, fit - 2) + "..";
        }

        function zoom(z) {
            zoomLayout(frames, z, left, width).forEach(function (l, i) {
                var g = groups[i];
                var r = g.querySelector("rect");
                g.style.display = l.shown ? "" : "none";
                g.style.opacity = l.dim ? "0.5" : "";
                r.setAttribute("x", l.x.toFixed(2));
                r.setAttribute("width", l.w.toFixed(2));
                g.querySelector("text").setAttribute("x",
                                                     (l.x + 3).toFixed(2));
                label(g, frames[i].name, l.w);
            });
            reset.style.display = z < 0 ? "none" : "";
        }

        function highlight(re) {
            matched.forEach(function (i) {
                groups[i].querySelector("rect").setAttribute(
                    "fill", frames[i].fill);
            });
            matched = [];
            matchLine.textContent = "";
            if (re === null) {
                return;
            }
            var found = searchMatch(frames, re);
            found.matched.forEach(function (i) {
                groups[i].querySelector("rect").setAttribute(
                    "fill", "rgb(230,0,230)");
            });
            matched = found.matched;
            matchLine.textContent = "Matched: "
                + (100 * found.weight / frames[0].weight).toFixed(2) + "% ("
                + found.weight + " " + unit + ")";
        }

        function ask() {
            var text = doc.defaultView.prompt("Search for (regular expression)",
                                              "");
            if (text) {
                try {
                    highlight(new RegExp(text));
                } catch (e) {
                    matchLine.textContent = "Bad expression: " + e.message;
                }
            }
        }

        groups.forEach(function (g, i) {
            g.addEventListener("click", function () { zoom(i); });
            g.addEventListener("mouseover", function () {
                details.textContent = describe(frames, i, unit);
            });
            g.addEventListener("mouseout", function () {
                details.textContent = " ";
            });
        });
        reset.addEventListener("click", function () { zoom(-1); });
        search.addEventListener("click", ask);
        doc.defaultView.addEventListener("keydown", function (e) {
            if (e.ctrlKey && e.key === "f") {
                e.preventDefault();
                ask();
            } else if (e.key === "Escape") {
                highlight(null);
            }
        });
        zoom(-1);
    }

    if (typeof document !== "undefined" && document.documentElement
            && document.documentElement.getAttribute("data-unit") !== null) {
        attach(document);
    }

    return { zoomLayout: zoomLayout, searchMatch: searchMatch,
             describe: describe };
})();

if (typeof module !== "undefined") {
    module.exports = flamegraph;
}
