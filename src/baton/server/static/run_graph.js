// The picture of a run: the app's graph as the server laid it out (`GET .../graph`),
// drawn as SVG, each node coloured by its state in the run. Built with DOM calls only
// (no innerHTML), so node names cannot inject markup.
"use strict";

const RunGraph = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const LABELS = { done: "done", running: "running", waiting: "waiting for a person", failed: "failed", idle: "not reached" };

  function svg(tag, attrs = {}, children = []) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function edgePath(from, to, back) {
    const x1 = from.x + from.width / 2;
    const x2 = to.x + to.width / 2;
    if (back) {  // a loop: out of the source's right side, back into the target's right side
      const right = Math.max(from.x + from.width, to.x + to.width) + 30;
      const y1 = from.y + from.height / 2;
      const y2 = to.y + to.height / 2;
      return `M ${from.x + from.width} ${y1} C ${right} ${y1}, ${right} ${y2}, ${to.x + to.width} ${y2}`;
    }
    const y1 = from.y + from.height;
    const y2 = to.y;
    const mid = (y1 + y2) / 2;
    return `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`;
  }

  function edge(e, byName) {
    const from = byName.get(e.source);
    const to = byName.get(e.target);
    if (!from || !to) return null;
    const path = svg("path", { d: edgePath(from, to, e.back), class: "edge", "marker-end": "url(#arrow)" });
    if (!e.label) return path;
    const x = (from.x + to.x + from.width) / 2 + (e.back ? from.width / 2 + 30 : 6);
    const y = (from.y + from.height + to.y) / 2;
    return svg("g", {}, [path, svg("text", { x, y, class: "edge-label" }, [document.createTextNode(e.label)])]);
  }

  function node(n, onClick) {
    const terminal = n.kind === "start" || n.kind === "end";
    const label = terminal ? n.kind.toUpperCase() : n.name;
    const shape = terminal
      ? svg("ellipse", { cx: n.x + n.width / 2, cy: n.y + n.height / 2, rx: n.width / 2.6, ry: n.height / 2 })
      : svg("rect", { x: n.x, y: n.y, width: n.width, height: n.height, rx: 8 });
    const text = svg("text", { x: n.x + n.width / 2, y: n.y + n.height / 2 + 4, "text-anchor": "middle" },
      [document.createTextNode(label.length > 20 ? `${label.slice(0, 19)}…` : label)]);
    const title = svg("title", {}, [document.createTextNode(`${n.name} (${n.kind}): ${LABELS[n.state] || n.state}`)]);
    const group = svg("g", {
      class: `node state-${n.state}`, "data-node": n.name, "data-state": n.state,
      tabindex: terminal ? -1 : 0, role: terminal ? "img" : "button", "aria-label": `${n.name}: ${LABELS[n.state] || n.state}`,
    }, [title, shape, text]);
    if (!terminal) {
      group.addEventListener("click", () => onClick(n.name));
      group.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") onClick(n.name); });
    }
    return group;
  }

  // The SVG for `graph`; `onClick(name)` is called when a node is chosen.
  function draw(graph, onClick) {
    const byName = new Map(graph.nodes.map((n) => [n.name, n]));
    const arrow = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      [svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" })]);
    const width = graph.width + 40;
    return svg("svg", {
      class: "run-graph", viewBox: `0 0 ${width} ${graph.height}`, width, height: graph.height,
      role: "group", "aria-label": `graph of run ${graph.invocationId || "(none yet)"}`, "data-run": graph.invocationId || "",
    }, [
      svg("defs", {}, [arrow]),
      ...graph.edges.map((e) => edge(e, byName)),
      ...graph.nodes.map((n) => node(n, onClick)),
    ]);
  }

  function legend() {
    const { el } = SchemaForm;
    return el("div", { class: "graph-legend" }, Object.entries(LABELS).map(([state, text]) =>
      el("span", { class: `key state-${state}` }, [el("i"), text])));
  }

  return { draw, legend, LABELS };
})();
