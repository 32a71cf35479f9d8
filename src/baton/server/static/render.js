// Values for people: JSON as a collapsible tree, messages as Markdown. Both build DOM
// nodes with textContent only, never innerHTML, so a model's or a user's text cannot
// inject markup or script; links keep only http(s) and mailto targets.
"use strict";

const Render = (() => {
  const { el } = SchemaForm;

  function scalar(value) {
    const kind = value === null ? "null" : typeof value;
    return el("span", { class: `j-${kind}`, text: JSON.stringify(value) });
  }

  // Objects and arrays fold; the first `openDepth` levels start open.
  function json(value, openDepth = 1, depth = 0) {
    if (value === null || typeof value !== "object") return scalar(value);
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
    if (entries.length === 0) return el("span", { class: "j-empty", text: `${open}${close}` });
    const count = Array.isArray(value) ? `${entries.length} items` : `${entries.length} keys`;
    const rows = entries.map(([key, v]) => el("div", { class: "j-row" }, [
      Array.isArray(value) ? null : el("span", { class: "j-key", text: `${key}: ` }),
      json(v, openDepth, depth + 1),
    ]));
    return el("details", { class: "json", open: depth < openDepth }, [
      el("summary", { text: `${open} ${count} ${close}` }), el("div", { class: "j-body" }, rows),
    ]);
  }

  const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;

  function inline(text) {
    const out = [];
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) out.push(document.createTextNode(text.slice(last, match.index)));
      out.push(token(match[0]));
      last = match.index + match[0].length;
    }
    if (last < text.length) out.push(document.createTextNode(text.slice(last)));
    return out;
  }

  function token(raw) {
    if (raw.startsWith("`")) return el("code", { text: raw.slice(1, -1) });
    if (raw.startsWith("**")) return el("strong", {}, inline(raw.slice(2, -2)));
    if (raw.startsWith("*")) return el("em", {}, inline(raw.slice(1, -1)));
    const [, label, href] = raw.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/);
    if (!/^(https?:|mailto:)/i.test(href)) return document.createTextNode(raw);
    return el("a", { href, rel: "noopener noreferrer", target: "_blank", text: label });
  }

  // Paragraphs, # headings, - / * / 1. lists, ``` code blocks, inline code, bold, italic, links.
  function markdown(text) {
    const root = el("div", { class: "md" });
    const lines = String(text).split("\n");
    let list = null;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("```")) {
        const code = [];
        while (++i < lines.length && !lines[i].startsWith("```")) code.push(lines[i]);
        root.append(el("pre", {}, [el("code", { text: code.join("\n") })]));
        list = null;
        continue;
      }
      const item = line.match(/^\s*(?:[-*]|(\d+)\.)\s+(.*)$/);
      if (item) {
        const tag = item[1] ? "ol" : "ul";
        if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag); root.append(list); }
        list.append(el("li", {}, inline(item[2])));
        continue;
      }
      list = null;
      const heading = line.match(/^(#{1,4})\s+(.*)$/);
      if (heading) root.append(el(`h${Math.min(6, heading[1].length + 3)}`, {}, inline(heading[2])));
      else if (line.trim() !== "") root.append(el("p", {}, inline(line)));
    }
    return root;
  }

  return { json, markdown };
})();
