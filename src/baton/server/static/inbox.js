// The inbox: pending inputs across apps and sessions, answered through generated forms,
// kept current by the server's pending streams; and a timeline view per session.
"use strict";

const { el } = SchemaForm;
const state = { user: "user", key: "", apps: [], pending: {}, cards: new Map(), streams: null, liveCount: 0 };
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  if (state.key) h["X-API-Key"] = state.key;
  return h;
}

async function api(path, { method = "GET", body } = {}) {
  const response = await fetch(path, {
    method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    // Refusals carry `detail` (text), or FastAPI's list of problems plus a `message`.
    const detail = data && (data.message || data.detail);
    throw new Error(typeof detail === "string" ? detail : JSON.stringify(detail || response.statusText));
  }
  return data;
}

function userBase(app) {
  return `/apps/${enc(app)}/users/${enc(state.user)}`;
}

function when(seconds) {
  const age = Date.now() / 1000 - seconds;
  if (age < 60) return "just now";
  if (age < 3600) return `${Math.floor(age / 60)} min ago`;
  return new Date(seconds * 1000).toLocaleString();
}

function short(value, limit = 140) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text && text.length > limit ? `${text.slice(0, limit - 1)}…` : text ?? "";
}

// -- live pending streams ---------------------------------------------------------------

function setLive() {
  const live = $("live");
  const on = state.liveCount > 0;
  live.textContent = on ? "live" : "offline";
  live.className = `live ${on ? "on" : "off"}`;
}

function connect() {
  if (state.streams) state.streams.abort();
  state.streams = new AbortController();
  state.pending = {};
  for (const card of state.cards.values()) card.remove();
  state.cards.clear();
  render();
  for (const app of state.apps) follow(app, state.streams.signal);
}

async function follow(app, signal) {
  while (!signal.aborted) {
    let connected = false;
    try {
      const response = await fetch(`${userBase(app)}/pending/stream`, { headers: headers(false), signal });
      if (!response.ok) throw new Error((await response.json()).detail || response.statusText);
      connected = true;
      state.liveCount += 1;
      setLive();
      await readFrames(response.body, (data) => {
        state.pending[app] = data.pending;
        render();
        refreshSession(app);
        scheduleSessions();
      });
    } catch (error) {
      if (signal.aborted) return;
      if (!connected) log(`${app}: ${error.message}`, "failed");
    } finally {
      if (connected) { state.liveCount -= 1; setLive(); }
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

async function readFrames(body, onData) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) onData(JSON.parse(data));
    }
  }
}

// -- inbox ------------------------------------------------------------------------------

function keyOf(item) {
  return `${item.appName}/${item.sessionId}/${item.invocationId}/${item.interruptId}`;
}

function render() {
  const items = Object.values(state.pending).flat().sort((a, b) => a.createdAt - b.createdAt);
  const wanted = new Set(items.map(keyOf));
  for (const [key, card] of state.cards) {
    if (!wanted.has(key)) { card.remove(); state.cards.delete(key); }
  }
  const list = $("pending");
  for (const item of items) {
    const key = keyOf(item);
    if (!state.cards.has(key)) state.cards.set(key, card(item));
    list.append(state.cards.get(key)); // re-appending keeps order and keeps typed values
  }
  $("count").textContent = String(items.length);
  $("empty").hidden = items.length > 0;
}

// A RequestInput has its message; a long-running tool call (an agent asking for approval)
// has the tool's name, and its arguments as the payload.
function title(item) {
  if (item.message) return item.message;
  if (item.functionName && item.functionName !== "adk_request_input") return `${item.functionName} is waiting for your answer`;
  return "Input requested";
}

function card(item) {
  const form = SchemaForm.create(item.responseSchema || null);
  const error = el("div", { class: "error", role: "alert" });
  const submit = el("button", { type: "submit", text: "Submit answer" });
  const sessionLink = el("a", { href: `#/session/${enc(item.appName)}/${enc(item.sessionId)}`, text: `session ${item.sessionId.slice(0, 8)}` });
  const meta = el("div", { class: "meta" }, [
    el("span", { text: item.appName }), sessionLink,
    el("span", { text: `asks ${item.interruptId}` }), el("span", { text: when(item.createdAt) }),
  ]);
  const payload = item.payload === undefined || item.payload === null
    ? null : el("pre", { class: "payload", text: JSON.stringify(item.payload, null, 2) });
  const node = el("form", { class: "card", novalidate: true, "data-interrupt": item.interruptId, "data-session": item.sessionId }, [
    meta, el("h3", { text: title(item) }), payload, form.element,
    el("div", { class: "actions" }, [submit, error]),
  ]);
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    let value;
    try { value = form.read(); } catch (e) { error.textContent = `Not valid: ${e.message}`; return; }
    submit.disabled = true;
    try {
      const path = `${userBase(item.appName)}/sessions/${enc(item.sessionId)}/interrupts/${enc(item.interruptId)}/respond`;
      const events = await api(path, { method: "POST", body: { response: value, invocationId: item.invocationId } });
      submit.textContent = "Answered";
      await report(item.appName, item.sessionId, `answered ${item.interruptId}`, events);
    } catch (e) {
      error.textContent = e.message;
      submit.disabled = false;
    }
  });
  return node;
}

async function report(app, sessionId, what, events) {
  let status = "running";
  let failure = "";
  try {
    const timeline = await api(`${userBase(app)}/sessions/${enc(sessionId)}/timeline`);
    const last = timeline.invocations[timeline.invocations.length - 1];
    if (last) { status = last.status; failure = last.error || ""; }
  } catch { /* the session may be gone; report what we know */ }
  const output = [...events].reverse().find((e) => e.output !== undefined);
  const outcome = failure ? ` · ${failure}` : output ? ` · ${output.author}: ${short(output.output)}` : "";
  const text = `${app} · session ${sessionId.slice(0, 8)}: ${what} → run ${status}${outcome}`;
  log(text, status, `#/session/${enc(app)}/${enc(sessionId)}`);
}

function log(text, status, href) {
  const badge = el("span", { class: `badge ${status}`, text: status });
  const body = href ? el("a", { href, text }) : el("span", { text });
  const item = el("li", { "data-status": status }, [badge, " ", body]);
  $("activity").prepend(item);
}

async function startRun(event) {
  event.preventDefault();
  const app = $("start-app").value;
  const message = $("start-message").value;
  const button = event.submitter || event.target.querySelector("button");
  button.disabled = true;
  try {
    const session = await api(`${userBase(app)}/sessions`, { method: "POST", body: {} });
    const newMessage = message ? { role: "user", parts: [{ text: message }] } : null;
    const events = await api("/run", { method: "POST", body: { appName: app, userId: state.user, sessionId: session.id, newMessage } });
    $("start-message").value = "";
    await report(app, session.id, "started", events);
  } catch (e) {
    log(`${app}: ${e.message}`, "failed");
  } finally {
    button.disabled = false;
  }
}

// -- recent sessions ----------------------------------------------------------------------

let sessionsTimer = null;

function scheduleSessions() {
  if (sessionsTimer === null) sessionsTimer = setTimeout(loadSessions, 300);
}

async function loadSessions() {
  sessionsTimer = null;
  const lists = await Promise.all(state.apps.map((app) => api(`${userBase(app)}/sessions`).catch(() => [])));
  const recent = lists.flat().sort((a, b) => b.lastUpdateTime - a.lastUpdateTime).slice(0, 10);
  $("sessions").replaceChildren(...recent.map((s) => el("li", {}, [
    el("a", { href: `#/session/${enc(s.appName)}/${enc(s.id)}`, text: `${s.appName} · ${s.id.slice(0, 8)}` }),
    el("span", { class: "when", text: ` ${when(s.lastUpdateTime)}` }),
  ])));
}

// -- session view -------------------------------------------------------------------------

let viewing = null;

function table(columns, rows) {
  const head = el("tr", {}, columns.map((c) => el("th", { text: c })));
  const body = rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, [c]))));
  return el("table", {}, [el("thead", {}, [head]), el("tbody", {}, body)]);
}

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

function code(value) {
  return value === undefined || value === null ? "" : el("code", { text: short(value, 400) });
}

async function showSession(app, sessionId) {
  viewing = { app, sessionId };
  $("inbox-view").hidden = true;
  $("session-view").hidden = false;
  $("session-title").textContent = `${app} · session ${sessionId}`;
  const bodyNode = $("session-body");
  try {
    const t = await api(`${userBase(app)}/sessions/${enc(sessionId)}/timeline`);
    bodyNode.replaceChildren(
      el("h3", { text: "Runs" }),
      table(["run", "status", "started", "updated", "error", ""], t.invocations.map((i) => [i.id, badge(i.status), when(i.createdAt), when(i.updatedAt), i.error || "", continueAction(app, sessionId, i)])),
      el("h3", { text: "Nodes" }),
      table(["node", "status", "output"], t.nodes.map((n) => [n.path, badge(n.status), code(n.output)])),
      el("h3", { text: "Timeline" }),
      table(["when", "node", "what", "detail", "by"], t.entries.map((e) => [when(e.time), e.node, e.kind, code(e.detail), e.by || ""])),
      el("h3", { text: "State" }),
      el("pre", { text: JSON.stringify(t.state, null, 2) }),
    );
  } catch (e) {
    bodyNode.replaceChildren(el("p", { class: "error", text: e.message }));
  }
}

// A failed run, or one whose process died mid-step, continues where it stopped: what
// committed is not redone. A run still executing elsewhere answers 409 (shown).
function continueAction(app, sessionId, run) {
  if (run.status !== "failed" && run.status !== "running") return "";
  const error = el("div", { class: "error", role: "alert" });
  const button = el("button", { type: "button", class: "continue", text: "Continue run" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    error.textContent = "";
    try {
      const body = { appName: app, userId: state.user, sessionId, invocationId: run.id };
      const events = await api("/run", { method: "POST", body });
      await report(app, sessionId, "continued", events);
      await showSession(app, sessionId);
    } catch (e) {
      error.textContent = e.message;
      button.disabled = false;
    }
  });
  return el("div", { class: "run-action" }, [button, error]);
}

function refreshSession(app) {
  if (viewing && viewing.app === app && !$("session-view").hidden) showSession(viewing.app, viewing.sessionId);
}

function route() {
  const match = location.hash.match(/^#\/session\/([^/]+)\/(.+)$/);
  if (match) { showSession(decodeURIComponent(match[1]), decodeURIComponent(match[2])); return; }
  viewing = null;
  $("inbox-view").hidden = false;
  $("session-view").hidden = true;
}

// -- start --------------------------------------------------------------------------------

async function init() {
  state.user = localStorage.getItem("baton.user") || "user";
  state.key = localStorage.getItem("baton.key") || "";
  $("user").value = state.user;
  $("api-key").value = state.key;
  const changed = async () => {
    state.user = $("user").value.trim() || "user";
    state.key = $("api-key").value.trim();
    localStorage.setItem("baton.user", state.user);
    localStorage.setItem("baton.key", state.key);
    await loadApps();
  };
  $("user").addEventListener("change", changed);
  $("api-key").addEventListener("change", changed);
  $("identity").addEventListener("submit", (e) => { e.preventDefault(); changed(); });
  $("start-form").addEventListener("submit", startRun);
  window.addEventListener("hashchange", route);
  await loadApps();
  route();
}

async function loadApps() {
  try {
    state.apps = await api("/list-apps");
  } catch (e) {
    state.apps = [];
    log(`cannot list apps: ${e.message}`, "failed");
  }
  $("start-app").replaceChildren(...state.apps.map((a) => el("option", { value: a, text: a })));
  connect();
  scheduleSessions();
}

init();
