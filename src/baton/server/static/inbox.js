// The inbox: pending inputs across apps and sessions, answered through generated forms,
// kept current by the server's pending streams; and a timeline view per session.
"use strict";

const { el } = SchemaForm;
const state = { user: "user", key: "", apps: [], pending: [], sessions: [], cards: new Map() };
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  if (state.key) h["X-API-Key"] = state.key;
  return h;
}

async function api(path, { method = "GET", body, extraHeaders = {} } = {}) {
  const response = await fetch(path, {
    method, headers: { ...headers(body !== undefined), ...extraHeaders },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    // A run that failed after it started answers with the error's status and the events it
    // committed; callers report its outcome from the session's timeline.
    if (data && Array.isArray(data.events)) return data.events;
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

// -- the one live stream ---------------------------------------------------------------
// A browser allows six connections per host, so the page opens ONE stream for everything
// it shows (every app's questions, the recent sessions). It reconnects with backoff, and
// the badge says what is true: live only while frames or keep-alives keep arriving.

const STALL_MS = 20000;   // no byte for this long: the stream is dead, reconnect
const MAX_BACKOFF_MS = 30000;
const live = { controller: null, attempt: 0, lastError: "" };

function setLive(status, text) {
  const badge = $("live");
  badge.textContent = text || status;
  badge.className = `live ${status === "live" ? "on" : status === "offline" ? "off" : "wait"}`;
  badge.dataset.state = status;
}

function connect() {
  if (live.controller) live.controller.abort();
  live.controller = new AbortController();
  live.attempt = 0;
  live.lastError = "";
  state.pending = [];
  state.sessions = [];
  for (const card of state.cards.values()) card.remove();
  state.cards.clear();
  render();
  follow(live.controller.signal);
}

async function follow(signal) {
  while (!signal.aborted) {
    setLive("connecting", "connecting…");
    try {
      await streamOnce(signal);
      throw new Error("the server ended the stream (restarting?)");
    } catch (error) {
      if (signal.aborted) return;
      if (error.message !== live.lastError) log(`live updates: ${error.message}`, "failed");
      live.lastError = error.message;
    }
    if (signal.aborted) return;
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** live.attempt) * (0.75 + Math.random() / 2);
    live.attempt += 1;
    setLive("offline", `offline · retry in ${Math.round(delay / 1000)} s`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

async function streamOnce(outer) {
  const own = new AbortController();
  const stop = () => own.abort();
  outer.addEventListener("abort", stop);
  try {
    const response = await fetch(`/users/${enc(state.user)}/inbox/stream`, { headers: headers(false), signal: own.signal });
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      throw new Error((data && data.detail) || response.statusText);
    }
    await readFrames(response.body, own, (data) => {
      live.attempt = 0;
      setLive("live");
      onSnapshot(data);
    }, () => setLive("live"));
  } finally {
    outer.removeEventListener("abort", stop);
  }
}

// Calls onData for each data frame and onBeat for every chunk (keep-alives included);
// aborts the request when nothing arrives for STALL_MS.
async function readFrames(body, controller, onData, onBeat) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let timer = setTimeout(() => controller.abort(), STALL_MS);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(), STALL_MS);
      onBeat();
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (data) onData(JSON.parse(data));
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

// The stream's first frame is the whole view; each later one holds what changed:
// `changed` questions (new or changed), `removed` ones (their keys), and `sessions`
// when the recent list changed.
function onSnapshot(data) {
  if (data.pending) {
    state.pending = data.pending;
  } else {
    const gone = new Set((data.removed || []).map(keyOf));
    const changed = new Map((data.changed || []).map((item) => [keyOf(item), item]));
    const kept = state.pending.filter((item) => !gone.has(keyOf(item)) && !changed.has(keyOf(item)));
    state.pending = [...kept, ...changed.values()].sort(byPosition);
  }
  if (data.sessions) state.sessions = data.sessions;
  render();
  renderSessions();
  refreshSession();
}

// -- inbox ------------------------------------------------------------------------------

// Oldest first, as the server lists them.
function byPosition(a, b) {
  return a.createdAt - b.createdAt
    || (a.invocationId < b.invocationId ? -1 : a.invocationId > b.invocationId ? 1 : 0)
    || (a.interruptId < b.interruptId ? -1 : a.interruptId > b.interruptId ? 1 : 0);
}

// The occurrence tells one asking from the next: a loop that asks the same id again gets
// a new card, never the earlier card that would answer the earlier pass.
function keyOf(item) {
  return `${item.appName}/${item.sessionId}/${item.invocationId}/${item.interruptId}/${item.occurrence}`;
}

function render() {
  const items = state.pending.filter(matchesSearch);
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
  const filtered = items.length < state.pending.length;
  $("empty").textContent = filtered ? "Nothing matches the search or status." : "Nothing is waiting for an answer.";
}

// A RequestInput has its message; a long-running tool call (an agent asking for approval)
// has the tool's name, and its arguments as the payload.
function title(item) {
  if (item.message) return item.message;
  if (item.functionName && item.functionName !== "adk_request_input") return `${item.functionName} is waiting for your answer`;
  return "Input requested";
}

// A tool call waiting for confirmation: the tool's name and arguments, approve or reject.
function confirmationCard(item) {
  const call = (item.payload && item.payload.originalFunctionCall) || {};
  const error = el("div", { class: "error", role: "alert" });
  const approve = el("button", { type: "button", class: "approve", text: "Approve" });
  const reject = el("button", { type: "button", class: "reject", text: "Reject" });
  const args = el("pre", { class: "payload", text: JSON.stringify(call.args || {}, null, 2) });
  const node = el("form", { class: "card confirmation", novalidate: true, "data-interrupt": item.interruptId, "data-session": item.sessionId }, [
    meta(item), el("h3", { text: `${call.name || "a tool"} needs your approval` }),
    item.message ? el("p", { class: "hint", text: item.message }) : null, args,
    artifactLinks(item.appName, item.sessionId),
    el("div", { class: "actions" }, [approve, reject, error]),
  ]);
  const keyFor = answerKeys();
  const decide = async (confirmed) => {
    error.textContent = "";
    approve.disabled = reject.disabled = true;
    try {
      await respond(item, { confirmed }, keyFor);
      (confirmed ? approve : reject).textContent = confirmed ? "Approved" : "Rejected";
    } catch (e) {
      error.textContent = e.message;
      approve.disabled = reject.disabled = false;
    }
  };
  approve.addEventListener("click", () => decide(true));
  reject.addEventListener("click", () => decide(false));
  return node;
}

function meta(item) {
  const sessionLink = isOthers(item)
    ? el("span", { text: `session ${item.sessionId.slice(0, 8)}` })
    : el("a", { href: `#/session/${enc(item.appName)}/${enc(item.sessionId)}`, text: `session ${item.sessionId.slice(0, 8)}` });
  return el("div", { class: "meta" }, [
    el("span", { text: item.appName }), sessionLink,
    el("span", { text: `asks ${item.interruptId}` }), el("span", { text: when(item.createdAt) }),
    deadline(item), assignment(item),
  ]);
}

// ---- Assigned questions (RequestInput(assignee=...)) ----
// A question may be assigned to another person: it shows in their inbox too, only they
// may answer it, and the session's owner sees whom the run waits on.

function isOthers(item) {
  return item.userId !== undefined && item.userId !== state.user;
}

function waitsOnSomeoneElse(item) {
  return Boolean(item.assignee) && item.assignee !== state.user;
}

function assignment(item) {
  if (!item.assignee) return null;
  const text = isOthers(item) ? `asked by ${item.userId}, for you` : `waits on ${item.assignee}`;
  return el("span", { class: "assignee", text });
}

function waitingCard(item) {
  return el("div", { class: "card waiting", "data-interrupt": item.interruptId, "data-session": item.sessionId }, [
    meta(item), el("h3", { text: title(item) }),
    el("p", { class: "hint", text: `Waiting on ${item.assignee}: only they can answer this question.` }),
  ]);
}

function respondPath(item) {
  const owner = `/apps/${enc(item.appName)}/users/${enc(item.userId || state.user)}`;
  return `${owner}/sessions/${enc(item.sessionId)}/interrupts/${enc(item.interruptId)}/respond`;
}
// ---- end of assigned questions ----

// A question with a deadline says when it expires and what happens then.
function deadline(item) {
  if (item.expiresAt === undefined || item.expiresAt === null) return null;
  const left = item.expiresAt - Date.now() / 1000;
  const at = new Date(item.expiresAt * 1000).toLocaleString();
  const due = left <= 0 ? "expired" : left < 3600 ? `expires in ${Math.ceil(left / 60)} min` : `expires ${at}`;
  const then = item.answersOnTimeout ? "then answered by its default" : "then the run fails";
  return el("span", { class: "deadline", title: at, text: `${due} (${then})` });
}

// -- artifacts ----------------------------------------------------------------------------
// The files a run saved (the document to approve...), each a download link. A link cannot
// carry the API key header, so a click fetches the file with it and saves the bytes.

function artifactPath(app, sessionId, kind) {
  return `${userBase(app)}/sessions/${enc(sessionId)}/${kind}`;
}

function fileUrl(app, sessionId, name, version) {
  const path = `${artifactPath(app, sessionId, "artifact-files")}/${name.split("/").map(enc).join("/")}`;
  return version === undefined ? path : `${path}?version=${version}`;
}

async function download(event, url, name) {
  event.preventDefault();
  const link = event.currentTarget;
  try {
    const response = await fetch(url, { headers: headers(false) });
    if (!response.ok) throw new Error((await response.json().catch(() => ({}))).detail || response.statusText);
    const blobUrl = URL.createObjectURL(await response.blob());
    const save = el("a", { href: blobUrl, download: name.split("/").pop() });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(blobUrl), 10000);
    link.removeAttribute("title");
  } catch (e) {
    link.title = `download failed: ${e.message}`;
    link.classList.add("failed");
  }
}

function fileLink(app, sessionId, name, version, text) {
  const url = fileUrl(app, sessionId, name, version);
  const link = el("a", { class: "artifact", href: url, download: name.split("/").pop(), text: text || name });
  link.addEventListener("click", (event) => download(event, url, name));
  return link;
}

// The session's files under a card: filled in once they are listed.
function artifactLinks(app, sessionId) {
  const box = el("div", { class: "artifacts", hidden: true });
  api(artifactPath(app, sessionId, "artifacts")).then((names) => {
    if (!names.length) return;
    box.replaceChildren(el("span", { text: "Files:" }), ...names.map((n) => fileLink(app, sessionId, n)));
    box.hidden = false;
  }).catch(() => {});
  return box;
}

// The session view's table: each file, its versions, each version downloadable.
async function artifactTable(app, sessionId) {
  const names = await api(artifactPath(app, sessionId, "artifacts")).catch(() => []);
  if (!names.length) return [];
  const rows = await Promise.all(names.map(async (name) => {
    const base = `${artifactPath(app, sessionId, "artifacts")}/${name.split("/").map(enc).join("/")}`;
    const versions = await api(`${base}/versions/metadata`).catch(() => []);
    const links = versions.map((v) => fileLink(app, sessionId, name, v.version, `v${v.version}`));
    const latest = versions[versions.length - 1] || {};
    return [fileLink(app, sessionId, name), latest.mimeType || "", el("span", { class: "versions" }, links), latest.createTime ? when(latest.createTime) : ""];
  }));
  return [el("h3", { text: "Files" }), table(["file", "type", "versions", "saved"], rows)];
}

// One Idempotency-Key per card and answer: sending the same answer again from a card (its
// first reply was lost, say to a dropped connection) gets the first reply instead of a
// refusal, while a changed answer is a new request.
function answerKeys() {
  const keys = new Map();
  return (value) => {
    const answer = JSON.stringify(value);
    if (!keys.has(answer)) {
      keys.set(answer, globalThis.crypto && crypto.randomUUID
        ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`);
    }
    return keys.get(answer);
  };
}

async function respond(item, value, keyFor) {
  // The occurrence makes the answer answer this asking only: if the question was answered
  // and asked again meanwhile, the server refuses it (409) instead of answering the new one.
  const body = { response: value, invocationId: item.invocationId, occurrence: item.occurrence };
  if (item.assignee) body.answeredBy = state.user;
  const extraHeaders = { "Idempotency-Key": keyFor(value) };
  const events = await api(respondPath(item), { method: "POST", body, extraHeaders });
  if (isOthers(item)) reportToAssignee(item, events);
  else await report(item.appName, item.sessionId, `answered ${item.interruptId}`, events);
}

// ---- Credential requests (adk_request_credential) ----
// What is asked in a person's words (an API key and where it is sent, a token, or a
// sign-in at the OAuth2 provider), and one field. The answer is the request's AuthConfig
// with the typed key or token, or the pasted sign-in address, in exchangedAuthCredential:
// the shape the server checks (the terminal builds the same, baton.auth.credential_asking).
// A key or token is typed into a password field and goes into the request only: never
// into the page's other parts, the activity log, the console or local storage.

function credentialAsk(item) {
  const config = (item.payload && item.payload.authConfig) || {};
  const scheme = config.authScheme || {};
  const exchanged = config.exchangedAuthCredential || {};
  const link = exchanged.oauth2 && exchanged.oauth2.authUri;
  if (scheme.type === "apiKey") {
    const where = `the ${scheme.in || "header"} ${scheme.name || ""}`.trim();
    return { config, typed: "API key", what: `API key (sent in ${where})`, credential: (v) => ({ authType: "apiKey", apiKey: v }) };
  }
  if (scheme.type === "http") {
    const name = scheme.scheme || "bearer";
    return { config, typed: "token", what: `${name} token (HTTP ${name} authentication)`, credential: (v) => ({ authType: "http", http: { scheme: name, credentials: { token: v } } }) };
  }
  if (link) {
    let provider = link;
    try { provider = new URL(link).hostname; } catch { /* shown as given */ }
    return { config, typed: "redirect URL", what: `sign in at ${provider} (${scheme.type})`, link, provider,
      credential: (v) => ({ ...exchanged, oauth2: { ...exchanged.oauth2, authResponseUri: v } }) };
  }
  return { config, typed: "token", what: `access token (${scheme.type || "unknown scheme"})`, credential: (v) => ({ authType: "oauth2", oauth2: { accessToken: v } }) };
}

function credentialCard(item) {
  const ask = credentialAsk(item);
  const secret = ask.typed !== "redirect URL";
  const error = el("div", { class: "error", role: "alert" });
  const submit = el("button", { type: "submit", text: secret ? `Send ${ask.typed}` : "Send" });
  const field = el("input", {
    name: "credential", type: secret ? "password" : "url", autocomplete: "off", spellcheck: "false", required: true,
    placeholder: secret ? `the ${ask.typed} (not shown)` : "https://… (the address the sign-in sent you to)",
  });
  const label = secret ? `${ask.typed[0].toUpperCase()}${ask.typed.slice(1)}` : "Then paste the address the sign-in sent you to";
  const steps = ask.link
    ? [el("p", {}, [el("a", { class: "sign-in", href: ask.link, target: "_blank", rel: "noopener noreferrer", text: `Sign in at ${ask.provider}` })])]
    : [];
  const hint = item.message && !(ask.link && item.message.includes(ask.link)) ? el("p", { class: "hint", text: item.message }) : null;
  const request = el("details", { class: "value" }, [el("summary", { text: "request" }), Render.json(item.payload, 1)]);
  const node = el("form", { class: "card credential", novalidate: true, "data-interrupt": item.interruptId, "data-session": item.sessionId }, [
    meta(item), el("h3", { text: `Asks for: ${ask.what}` }), hint, ...steps,
    el("label", { class: "credential-field" }, [label, field]), request,
    el("div", { class: "actions" }, [submit, error]),
  ]);
  const keyFor = answerKeys();
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const typed = field.value.trim();
    if (!typed) { error.textContent = `Type the ${ask.typed} first.`; return; }
    submit.disabled = true;
    try {
      await respond(item, { ...ask.config, exchangedAuthCredential: ask.credential(typed) }, keyFor);
      field.value = "";
      submit.textContent = "Sent";
    } catch (e) {
      error.textContent = e.message; // the server's reason; the question stays open
      submit.disabled = false;
    }
  });
  return node;
}
// ---- end of credential requests ----

function card(item) {
  if (waitsOnSomeoneElse(item)) return waitingCard(item);
  if (item.functionName === "adk_request_confirmation") return confirmationCard(item);
  if (item.functionName === "adk_request_credential") return credentialCard(item);
  const form = SchemaForm.create(item.responseSchema || null);
  const error = el("div", { class: "error", role: "alert" });
  const submit = el("button", { type: "submit", text: "Submit answer" });
  const payload = item.payload === undefined || item.payload === null
    ? null : el("pre", { class: "payload", text: JSON.stringify(item.payload, null, 2) });
  const node = el("form", { class: "card", novalidate: true, "data-interrupt": item.interruptId, "data-session": item.sessionId }, [
    meta(item), el("h3", { text: title(item) }), payload, artifactLinks(item.appName, item.sessionId), form.element,
    el("div", { class: "actions" }, [submit, error]),
  ]);
  const keyFor = answerKeys();
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    let value;
    try { value = form.read(); } catch (e) { error.textContent = `Not valid: ${e.message}`; return; }
    submit.disabled = true;
    try {
      await respond(item, value, keyFor);
      submit.textContent = "Answered";
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
  const outcome = failure ? ` · ${failure}` : lastOutput(events);
  const text = `${app} · session ${sessionId.slice(0, 8)}: ${what} → run ${status}${outcome}`;
  log(text, status, `#/session/${enc(app)}/${enc(sessionId)}`);
}

// The assignee answered in someone else's session: they may not open it (403), so the
// entry names whose session it was and links nowhere.
function reportToAssignee(item, events) {
  const text = `${item.appName} · ${item.userId}'s session ${item.sessionId.slice(0, 8)}: answered ${item.interruptId}${lastOutput(events)}`;
  log(text, "answered");
}

function lastOutput(events) {
  const output = [...events].reverse().find(isOutput);
  return output ? ` · ${nodeOf(output)}: ${short(outputOf(output))}` : "";
}

// A node's output: an output event, or an agent's reply marked as its node's output.
function isOutput(e) {
  return e.output !== undefined || Boolean(e.nodeInfo && e.nodeInfo.messageAsOutput);
}

function outputOf(e) {
  if (e.output !== undefined) return e.output;
  return ((e.content && e.content.parts) || []).map((p) => p.text || "").join("");
}

// The node an event is about (a function node's events are signed by its workflow).
function nodeOf(e) {
  const path = e.nodeInfo && e.nodeInfo.path;
  return path ? path.split("/").pop().split("@")[0] : e.author;
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

// Search matches an app, a session id or any text of a question (message, tool, payload);
// the status filter keeps sessions whose latest run stands so, and their questions.
function searchText() {
  return $("search").value.trim().toLowerCase();
}

function matchesSearch(item) {
  const wanted = $("status-filter").value;
  if (wanted && wanted !== "paused") return false; // an open question's run waits
  const text = searchText();
  if (!text) return true;
  const haystack = [item.appName, item.sessionId, item.interruptId, item.message, item.functionName,
    JSON.stringify(item.payload ?? "")].join(" ").toLowerCase();
  return haystack.includes(text);
}

function renderSessions() {
  const text = searchText();
  const wanted = $("status-filter").value;
  const shown = state.sessions.filter((s) => (!wanted || s.status === wanted)
    && (!text || `${s.appName} ${s.id}`.toLowerCase().includes(text)));
  $("sessions").replaceChildren(...shown.slice(0, 10).map((s) => el("li", { "data-status": s.status }, [
    el("a", { href: `#/session/${enc(s.appName)}/${enc(s.id)}`, text: `${s.appName} · ${s.id.slice(0, 8)}` }),
    " ", badge(s.status === "paused" ? "waiting" : s.status),
    el("span", { class: "when", text: ` ${when(s.lastUpdateTime)}` }),
  ])));
}

// -- session view -------------------------------------------------------------------------

let viewing = null;

function table(columns, rows) {
  const head = el("tr", {}, columns.map((c) => el("th", { text: c })));
  const body = rows.map((cells) => el("tr", {}, cells.map((c, i) => el("td", { "data-label": columns[i] }, [c]))));
  return el("div", { class: "scroll" }, [el("table", {}, [el("thead", {}, [head]), el("tbody", {}, body)])]);
}

function badge(status) {
  return el("span", { class: `badge ${status}`, text: status });
}

// A value in a cell: a short line, unfolding into the whole value as a JSON tree.
function value(v) {
  if (v === undefined || v === null) return "";
  if (typeof v !== "object") return el("code", { text: short(v, 400) });
  return el("details", { class: "value" }, [el("summary", {}, [el("code", { text: short(v, 80) })]), Render.json(v, 1)]);
}

// One history entry, as the server described it (the terminal prints the same summary):
// messages as Markdown, everything else as its summary line with its data unfolding below.
function entry(e) {
  const kind = el("span", { class: `kind ${e.kind}`, text: e.kind });
  if (e.kind === "message") return el("div", { class: "entry" }, [kind, Render.markdown(e.detail)]);
  const data = e.detail !== null && typeof e.detail === "object"
    ? el("details", { class: "value" }, [el("summary", { text: "data" }), Render.json(e.detail, 2)]) : null;
  return el("div", { class: "entry" }, [kind, el("span", { class: "summary", text: e.summary }), data]);
}

async function showSession(app, sessionId) {
  const summary = state.sessions.find((s) => s.appName === app && s.id === sessionId);
  if (!viewing || viewing.app !== app || viewing.sessionId !== sessionId) graphView.node = null;
  viewing = { app, sessionId, stamp: summary ? summary.lastUpdateTime : null };
  $("inbox-view").hidden = true;
  $("session-view").hidden = false;
  $("session-title").textContent = `${app} · session ${sessionId}`;
  const bodyNode = $("session-body");
  try {
    const t = await api(`${userBase(app)}/sessions/${enc(sessionId)}/timeline`);
    const files = await artifactTable(app, sessionId);
    bodyNode.replaceChildren(
      el("h3", { text: "Runs" }),
      table(["run", "status", "started", "updated", "error", ""], t.invocations.map((i) => [i.id, badge(i.status), when(i.createdAt), when(i.updatedAt), i.error || "", runActions(app, sessionId, i)])),
      el("h3", { text: "Graph" }),
      graphSection(app, sessionId, t),
      el("h3", { text: "Checkpoints" }),
      checkpointSection(app, sessionId),
      el("h3", { text: "Nodes" }),
      table(["node", "status", "output"], t.nodes.map((n) => [n.path, badge(n.status), value(n.output)])),
      el("h3", { text: "Timeline" }),
      table(["when", "node", "what", "by"], t.entries.map((e) => [when(e.time), e.node, entry(e), e.by || ""])),
      el("h3", { text: "State" }),
      el("div", { class: "state" }, [Render.json(t.state, 2)]),
      ...files,
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

// -- run graph: the latest run drawn, coloured live; a click shows what the node did ---------

// Kept across reloads of the session view, so the node chosen stays chosen.
const graphView = { node: null };

function graphSection(app, sessionId, timeline) {
  const box = el("div", { class: "graph-box", id: "graph" });
  const detail = el("div", { class: "node-detail", id: "node-detail", hidden: true });
  const holder = el("div", { class: "graph-section" }, [RunGraph.legend(), box, detail]);
  loadGraph(app, sessionId, timeline, box, detail);
  return holder;
}

async function loadGraph(app, sessionId, timeline, box, detail) {
  try {
    const graph = await api(`${userBase(app)}/sessions/${enc(sessionId)}/graph`);
    const choose = (name) => { graphView.node = name; showNode(graph, timeline, box, detail); };
    box.replaceChildren(RunGraph.draw(graph, choose));
    if (graphView.node && graph.nodes.some((n) => n.name === graphView.node)) showNode(graph, timeline, box, detail);
  } catch (e) {
    box.replaceChildren(el("p", { class: "error", text: `graph: ${e.message}` }));
  }
}

function topNode(path) {
  const segments = (path || "").split("/");
  return segments.length > 1 ? segments[1].split("@")[0] : null;
}

// Whether a timeline entry is the drawn node's: in an agent's tree every event has the
// root's path, so its author (the entry's node) says (node.agents); in a workflow, its path.
function isNodes(node, name, e) {
  return node && node.agents.length ? node.agents.includes(e.node) : topNode(e.path) === name;
}

// A node's story in the drawn run: its outputs, questions (with the answer and who gave
// it), errors; a waiting node links to its question in the inbox.
function showNode(graph, timeline, box, detail) {
  const name = graphView.node;
  for (const g of box.querySelectorAll(".node")) g.classList.toggle("selected", g.dataset.node === name);
  const node = graph.nodes.find((n) => n.name === name);
  const ofRun = timeline.entries.filter((e) => e.invocationId === graph.invocationId);
  const asked = new Set(ofRun.filter((e) => e.kind === "asked" && isNodes(node, name, e)).map((e) => e.detail.interruptId));
  // Its own entries, and the answers (with who gave them) to the questions it asked.
  const rows = ofRun.filter((e) => isNodes(node, name, e) || (e.kind === "answered" && asked.has(e.detail.interruptId)));
  const waiting = state.pending.filter((p) => p.sessionId === timeline.sessionId && p.invocationId === graph.invocationId
    && (node && node.agents.length ? asked.has(p.interruptId) : topNode(p.nodePath) === name));
  detail.hidden = false;
  detail.replaceChildren(
    el("h4", {}, [`${name} `, badge(node ? node.state : "idle"), el("span", { class: "kind", text: ` ${node ? node.kind : ""}` })]),
    rows.length ? table(["when", "what", "by"], rows.map((e) => [when(e.time), entry(e), e.by || ""]))
      : el("p", { class: "empty", text: `${name} has not run in this run yet.` }),
    ...waiting.map((p) => el("p", {}, [el("a", { href: "#/", class: "answer-link", text: `answer “${title(p)}” in the inbox` })])),
  );
}

// -- time travel: rewind a session to before a run (Runner.rewind_async) ------------------

function runActions(app, sessionId, run) {
  return el("div", { class: "run-actions" }, [continueAction(app, sessionId, run), rewindAction(app, sessionId, run)]);
}

function rewindAction(app, sessionId, run) {
  if (run.status === "rewound" || run.status === "running") return "";
  return rewindButton(app, sessionId, run.id);
}

// Refusals (a run still executing, one already rewound) are shown under the button.
function rewindButton(app, sessionId, runId) {
  const run = { id: runId };
  const error = el("div", { class: "error", role: "alert" });
  const button = el("button", { type: "button", class: "rewind", text: "Rewind to before this run", "data-run": run.id });
  button.addEventListener("click", async () => {
    if (!window.confirm(`Undo run ${run.id} and every later run of this session? Nothing is deleted.`)) return;
    button.disabled = true;
    error.textContent = "";
    try {
      await api(`${userBase(app)}/sessions/${enc(sessionId)}/rewind`, { method: "POST", body: { rewindBeforeInvocationId: run.id } });
      log(`${app} · session ${sessionId.slice(0, 8)}: rewound to before run ${run.id.slice(0, 10)}`, "rewound", `#/session/${enc(app)}/${enc(sessionId)}`);
      await showSession(app, sessionId);
    } catch (e) {
      error.textContent = e.message;
      button.disabled = false;
    }
  });
  return el("div", { class: "run-action" }, [button, error]);
}

// -- time travel: checkpoints, each with its rewind and fork ------------------------------

function checkpointSection(app, sessionId) {
  const box = el("div", { class: "checkpoints", id: "checkpoints" }, [el("p", { class: "empty", text: "loading…" })]);
  loadCheckpoints(app, sessionId, box);
  return box;
}

async function loadCheckpoints(app, sessionId, box) {
  try {
    const points = await api(`${userBase(app)}/sessions/${enc(sessionId)}/checkpoints`);
    if (!points.length) { box.replaceChildren(el("p", { class: "empty", text: "No checkpoints yet: no run has started." })); return; }
    box.replaceChildren(table(["when", "checkpoint", "answers given", ""], points.map((p) => [
      when(p.time), el("span", { text: p.label }), answeredText(p), checkpointActions(app, sessionId, p),
    ])));
  } catch (e) {
    box.replaceChildren(el("p", { class: "error", text: `checkpoints: ${e.message}` }));
  }
}

function answeredText(point) {
  return Object.entries(point.answers).map(([id, v]) =>
    `${id} = ${short(v, 60)}${point.answeredBy[id] ? ` by ${point.answeredBy[id]}` : ""}`).join("; ");
}

// A fork makes a new session (this one is not changed) and opens it; at a question, the
// run waits there again in the fork, so it can be answered differently; after a step, the
// run continues from there in the fork (the server picks it up).
const FORK_LABELS = { question: "Fork here to answer again", step: "Fork here to re-run from this step" };

function checkpointActions(app, sessionId, point) {
  const error = el("div", { class: "error", role: "alert" });
  const fork = el("button", { type: "button", class: "fork", text: FORK_LABELS[point.kind] || "Fork here", "data-checkpoint": point.id });
  fork.addEventListener("click", async () => {
    fork.disabled = true;
    error.textContent = "";
    try {
      const forked = await api(`${userBase(app)}/sessions/${enc(sessionId)}/fork`, { method: "POST", body: { checkpointId: point.id } });
      log(`${app} · session ${sessionId.slice(0, 8)}: forked at ${point.label} into ${forked.id.slice(0, 8)}`, "forked", `#/session/${enc(app)}/${enc(forked.id)}`);
      location.hash = `#/session/${enc(app)}/${enc(forked.id)}`;
    } catch (e) {
      error.textContent = e.message;
      fork.disabled = false;
    }
  });
  const rewind = point.kind === "start" ? rewindButton(app, sessionId, point.invocationId) : "";
  return el("div", { class: "run-actions" }, [fork, rewind, error]);
}

// The stream sends a frame only when something changed; the session shown is reloaded
// when its own update time moved.
function refreshSession() {
  if (!viewing || $("session-view").hidden) return;
  const summary = state.sessions.find((s) => s.appName === viewing.app && s.id === viewing.sessionId);
  const stamp = summary ? summary.lastUpdateTime : null;
  if (stamp !== viewing.stamp) showSession(viewing.app, viewing.sessionId);
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
  // ?user=ann opens that user's inbox (the README's curl steps act for ann).
  const asked = new URLSearchParams(location.search).get("user");
  if (asked) localStorage.setItem("baton.user", asked);
  state.user = asked || localStorage.getItem("baton.user") || "user";
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
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  for (const id of ["search", "status-filter"]) {
    $(id).addEventListener("input", () => { render(); renderSessions(); });
  }
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
}

init();
