// The agentteams dashboard: plain JavaScript, no library, no build step. It reads the JSON
// API (a view of the table of operations) and redraws what the events stream says changed.
"use strict";

// The token: in the page when it was opened with ?token= (then kept for this tab in
// sessionStorage, which, unlike a cookie, no server on another port of this host is sent),
// and taken out of the address bar. No token: the login hint only.
const KEPT = "agentteams-token";
const GIVEN = document.querySelector('meta[name="agentteams-token"]').content;
if (GIVEN) sessionStorage.setItem(KEPT, GIVEN);
const TOKEN = GIVEN || sessionStorage.getItem(KEPT) || "";
if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", "/" + location.hash);
const $ = (selector) => document.querySelector(selector);
let team = null;
let stream = null;
const names = { members: [] };
let reading = null; // whose transcript is open

// ------------------------------------------------------------------ the API

async function api(path, options = {}) {
  // Every call carries the token in a header (a write must: a URL is kept in logs).
  const headers = { Authorization: "Bearer " + TOKEN };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch("/api/v1" + path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const body = await response.json();
  if (response.status === 401) loggedOut(); // a token kept from a server since restarted
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function loggedOut() {
  sessionStorage.removeItem(KEPT);
  if (stream) stream.close();
  $("#team").hidden = true;
  $("#teams").replaceChildren();
  $("#login").hidden = false;
}

const teamPath = (rest) => "/teams/" + encodeURIComponent(team) + rest;

function notice(text, bad = false) {
  const p = $("#notice");
  p.textContent = text;
  p.className = bad ? "bad" : "";
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// Each part is drawn at most once per burst of events.
const pending = new Set();
function soon(draw) {
  if (pending.has(draw)) return;
  pending.add(draw);
  queueMicrotask(async () => {
    pending.delete(draw);
    try {
      await draw();
    } catch (error) {
      notice(String(error.message || error), true);
    }
  });
}

// ------------------------------------------------------------------ the parts

async function drawTeams() {
  const { teams } = await api("/teams");
  const nav = $("#teams");
  nav.replaceChildren(
    ...teams.map((t) =>
      el("a", { href: "#team=" + encodeURIComponent(t.name), class: t.name === team ? "current" : "", "data-team": t.name }, t.name)
    )
  );
  if (!teams.length) notice("no teams yet: 'agentteams team create NAME', or 'agentteams demo'");
  return teams;
}

function mib(bytes) {
  return bytes ? (bytes / 1048576).toFixed(1) + " MiB" : "";
}

async function drawMembers() {
  const [{ members }, tree, status] = await Promise.all([
    api(teamPath("/members")),
    api(teamPath("/ps")),
    api(teamPath("")),
  ]);
  const live = Object.fromEntries(tree.teammates.map((m) => [m.name, m]));
  names.members = members.map((m) => m.name);
  const rows = members.flatMap((m) => {
    const t = live[m.name] || {};
    const proc = t.process || {};
    const state = t.state || m.state || (m.name === "team-lead" ? (status.up ? "up" : "down") : "");
    const task = t.task ? "#" + t.task.id + " " + t.task.subject : m.task ? "#" + m.task : "";
    const row = el(
      "tr",
      { "data-member": m.name },
      el(
        "td",
        { class: "name" },
        el("span", { class: "swatch " + (m.color || "none") }),
        el("a", { href: "#", class: "open-transcript", title: "its transcript", onclick: (e) => openTranscript(e, m.name) }, m.name)
      ),
      el("td", { class: "state " + state, "data-state": state }, state),
      el("td", {}, task),
      el("td", {}, m.backend),
      el("td", {}, t.host || ""),
      el("td", {}, String(t.pid || m.pid || "")),
      el("td", { class: "num" }, proc.cpu_percent === undefined ? "" : proc.cpu_percent.toFixed(0)),
      el("td", { class: "num" }, mib(proc.rss)),
      el("td", { class: "num" }, t.restarts === undefined ? "" : String(t.restarts)),
      el("td", { class: "num unread" }, t.unread === undefined ? "" : String(t.unread))
    );
    // Its tools' processes, as `agentteams ps` shows them below it.
    const tools = (t.children || []).map((c) =>
      el(
        "tr",
        { class: "child", "data-pid": String(c.pid) },
        el("td", { colSpan: 5, class: "cmd", title: c.cmdline }, "\u00a0\u00a0".repeat(c.depth) + "└─ " + c.cmdline.slice(0, 100)),
        el("td", {}, String(c.pid)),
        el("td", { class: "num" }, c.cpu_percent.toFixed(0)),
        el("td", { class: "num" }, mib(c.rss)),
        el("td", {}),
        el("td", {})
      )
    );
    return [row, ...tools];
  });
  $("#members tbody").replaceChildren(...rows);
  const c = status.tasks;
  $("#summary").replaceChildren(
    el("h2", {}, status.team),
    el("span", { class: status.up ? "up" : "down" }, status.up ? "up (supervisor " + status.supervisor + ")" : "down"),
    tree.supervisor ? el("span", { class: "dim" }, "supervisor " + mib(tree.supervisor.rss) + (tree.forkserver ? " · fork server " + tree.forkserver.pid : "") + (tree.wake ? " · wake " + tree.wake : "")) : null,
    el("span", {}, `tasks: ${c.pending} pending · ${c.in_progress} in progress · ${c.completed} completed · ${c.failed} failed`),
    status.description ? el("span", { class: "description" }, status.description) : null
  );
  const to = $("#send-form select");
  const chosen = to.value;
  to.replaceChildren(...names.members.map((n) => el("option", { value: n }, n)), el("option", { value: "*" }, "* (everyone)"));
  if (chosen) to.value = chosen;
}

// What each task waits for: its blockedBy, and the tasks that say they block it (a
// completed blocker leaves blockedBy, but stays in its own blocks: the graph keeps it).
function waitsFor(tasks) {
  const after = Object.fromEntries(tasks.map((t) => [t.id, new Set(t.blockedBy)]));
  for (const t of tasks) for (const x of t.blocks) if (after[x]) after[x].add(t.id);
  return Object.fromEntries(Object.entries(after).map(([id, set]) => [id, [...set].sort((a, b) => a - b)]));
}

function taskCard(t, after) {
  const open = t.blockedBy.length ? el("span", { class: "blocked" }, "after " + t.blockedBy.map((b) => "#" + b).join(" ")) : null;
  const done = after.filter((b) => !t.blockedBy.includes(b));
  const blocked = [open, done.length ? el("span", { class: "done-blockers" }, "after " + done.map((b) => "#" + b).join(" ") + " ✓") : null];
  const owner = t.owner ? el("span", { class: "owner" }, t.owner) : null;
  const error = t.metadata && t.metadata.lastError ? el("p", { class: "error" }, t.metadata.lastError) : null;
  return el("li", { class: "task", "data-task": t.id }, el("b", {}, "#" + t.id + " "), t.subject, " ", owner, " ", ...blocked, error);
}

function drawGraph(tasks, after) {
  // Layers by the longest chain of blockers; an edge from each blocker to what waits for it.
  const svg = $("#graph");
  const byId = Object.fromEntries(tasks.map((t) => [t.id, t]));
  const depth = {};
  const layer = (t, seen = new Set()) => {
    if (depth[t.id] !== undefined) return depth[t.id];
    if (seen.has(t.id)) return 0;
    seen.add(t.id);
    const below = after[t.id].filter((b) => byId[b]).map((b) => layer(byId[b], seen) + 1);
    return (depth[t.id] = Math.max(0, ...below));
  };
  tasks.forEach((t) => layer(t));
  const rows = {};
  const at = {};
  for (const t of tasks) {
    const d = depth[t.id];
    rows[d] = (rows[d] || 0) + 1;
    at[t.id] = { x: 10 + d * 190, y: 10 + (rows[d] - 1) * 30 };
  }
  const ns = "http://www.w3.org/2000/svg";
  const shape = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  };
  const parts = [];
  for (const t of tasks) {
    for (const b of after[t.id]) {
      if (!at[b]) continue;
      const open = t.blockedBy.includes(b) ? " open" : "";
      parts.push(shape("line", { x1: at[b].x + 160, y1: at[b].y + 12, x2: at[t.id].x, y2: at[t.id].y + 12, class: "edge" + open }));
    }
  }
  for (const t of tasks) {
    const g = shape("g", { class: "node " + (t.metadata && t.metadata.lastError ? "failed" : t.status), "data-task": t.id });
    g.append(shape("rect", { x: at[t.id].x, y: at[t.id].y, width: 160, height: 24, rx: 4 }));
    const label = shape("text", { x: at[t.id].x + 6, y: at[t.id].y + 16 });
    const name = "#" + t.id + " " + t.subject;
    label.textContent = name.length > 22 ? name.slice(0, 21) + "…" : name;
    const title = shape("title", {});
    title.textContent = "#" + t.id + " " + t.subject + " (" + t.status + ")";
    g.append(label, title);
    parts.push(g);
  }
  const width = 20 + (Math.max(0, ...Object.values(depth)) + 1) * 190;
  const height = 20 + Math.max(1, ...Object.values(rows)) * 30;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.replaceChildren(...parts);
}

async function drawTasks() {
  const { tasks } = await api(teamPath("/tasks"));
  const after = waitsFor(tasks);
  for (const column of document.querySelectorAll("#board .column")) {
    const status = column.dataset.status;
    const mine = tasks.filter((t) => {
      const failed = Boolean(t.metadata && t.metadata.lastError) && t.status !== "completed";
      return status === "failed" ? failed : !failed && t.status === status;
    });
    column.querySelector("ol").replaceChildren(...mine.map((t) => taskCard(t, after[t.id])));
  }
  drawGraph(tasks, after);
}

function messageItem(m) {
  const e = m.event;
  const kind = e.kind === "message" ? null : el("span", { class: "kind" }, e.kind.replaceAll("_", " "));
  return el(
    "li",
    { class: "message " + e.kind + (m.read ? "" : " unread"), "data-from": e.from, "data-to": m.to },
    el("time", {}, e.timestamp.slice(11, 19)),
    el("span", { class: "route" }, e.from + " → " + m.to),
    e.trust === "forged" || e.trust === "unverified" ? el("span", { class: "trust " + e.trust }, e.trust) : null,
    kind,
    e.summary ? el("span", { class: "summary" }, e.summary) : null,
    el("p", { class: "text" }, e.text)
  );
}

async function drawMessages() {
  const { messages } = await api(teamPath("/messages?limit=200"));
  $("#messages").replaceChildren(...messages.map(messageItem));
  $("#messages").scrollTop = $("#messages").scrollHeight;
}

function addMessage(m) {
  const list = $("#messages");
  list.append(messageItem(m));
  while (list.children.length > 300) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
}

function requestCard(r) {
  const id = r.request_id || r.requestId; // a plan request's fields are Claude Code's camelCase
  const feedback = el("input", { class: "feedback", placeholder: "feedback (optional)" });
  const answer = (approve) => async () => {
    try {
      await api(teamPath("/requests/" + encodeURIComponent(id)), {
        method: "POST",
        body: { approve, feedback: feedback.value },
      });
      notice((approve ? "approved " : "denied ") + id);
    } catch (error) {
      notice(error.message, true);
    }
    soon(drawRequests);
  };
  const what =
    r.type === "permission_request"
      ? [el("b", {}, r.agent_id + " asks to run " + r.tool_name), el("p", {}, r.description), el("pre", {}, JSON.stringify(r.input, null, 2))]
      : [el("b", {}, r.from + " asks you to approve its plan"), el("pre", {}, r.planContent)];
  return el(
    "div",
    { class: "request", "data-request": id },
    ...what,
    feedback,
    el("button", { class: "approve", type: "button", onclick: answer(true) }, "Approve"),
    el("button", { class: "deny", type: "button", onclick: answer(false) }, "Deny")
  );
}

async function drawRequests() {
  const { requests } = await api(teamPath("/requests"));
  // A card still waiting is kept as it is: feedback being typed into it is not lost.
  const shown = new Map([...document.querySelectorAll("#requests .request")].map((c) => [c.dataset.request, c]));
  const cards = requests.map((r) => shown.get(r.request_id || r.requestId) || requestCard(r));
  $("#requests").replaceChildren(...(cards.length ? cards : [el("p", { class: "empty" }, "no plan or permission request is waiting")]));
}

function openTranscript(event, name) {
  event.preventDefault();
  reading = name;
  $("#transcript-section").hidden = false;
  soon(drawTranscript);
  $("#transcript-section").scrollIntoView();
}

function partItem(p) {
  if (p.type === "tool_use") {
    return el("div", { class: "part tool-use" }, el("b", {}, "→ " + p.name + " "), el("code", {}, JSON.stringify(p.input)));
  }
  if (p.type === "tool_result") {
    return el("div", { class: "part tool-result" + (p.is_error ? " error" : "") }, el("b", {}, p.is_error ? "← error " : "← "), el("pre", {}, p.text || ""));
  }
  return el("div", { class: "part " + p.type }, el("p", {}, p.text || ""));
}

async function drawTranscript() {
  if (reading === null) return;
  $("#transcript-title").textContent = "Transcript: " + reading;
  const list = $("#transcript");
  let entries = [];
  try {
    ({ entries } = await api(teamPath("/transcripts/" + encodeURIComponent(reading) + "?limit=100")));
  } catch (error) {
    list.replaceChildren(el("li", { class: "empty" }, error.message));
    return;
  }
  list.replaceChildren(
    ...entries.map((e) =>
      el(
        "li",
        { class: "entry " + e.role },
        el("time", {}, e.timestamp.slice(11, 19)),
        el("span", { class: "role" }, e.sidechain ? e.role + " (" + e.sidechain + ")" : e.role),
        ...e.parts.map(partItem)
      )
    )
  );
  list.scrollTop = list.scrollHeight;
}

async function drawUsage() {
  const usage = await api(teamPath("/usage"));
  const total = (t) => t.input + t.output + t.cache_read + t.cache_write;
  const rows = usage.agents.map((a) =>
    el(
      "tr",
      {},
      el("td", {}, a.agent),
      el("td", {}, a.model),
      el("td", { class: "num" }, String(a.tokens.requests)),
      el("td", { class: "num" }, total(a.tokens).toLocaleString()),
      el("td", { class: "num" }, a.usd === null ? "?" : a.usd.toFixed(4))
    )
  );
  $("#usage tbody").replaceChildren(...rows);
}

// ------------------------------------------------------------------ live

function listen() {
  if (stream) stream.close();
  // An EventSource sends no header: the token goes in its URL, which only reads.
  const url = "/api/v1/teams/" + encodeURIComponent(team) + "/events?token=" + encodeURIComponent(TOKEN);
  stream = new EventSource(url);
  const live = $("#live");
  stream.addEventListener("hello", () => {
    live.textContent = "live";
    live.className = "on";
    drawAll(); // what changed while the stream was closed
  });
  stream.onerror = () => {
    live.textContent = "reconnecting…";
    live.className = "off";
  };
  stream.addEventListener("message", (event) => {
    const m = JSON.parse(event.data);
    addMessage(m);
    if (m.event.kind.endsWith("_request") || m.event.kind.endsWith("_response")) soon(drawRequests);
  });
  stream.addEventListener("inbox", () => {
    soon(drawMembers);
    soon(drawRequests);
  });
  stream.addEventListener("task", () => {
    soon(drawTasks);
    soon(drawMembers);
  });
  stream.addEventListener("member", () => {
    soon(drawMembers);
    soon(drawUsage);
  });
  stream.addEventListener("transcript", (event) => {
    if (JSON.parse(event.data).names.includes(reading)) soon(drawTranscript);
  });
  stream.addEventListener("resync", () => drawAll());
}

function drawAll() {
  for (const draw of [drawMembers, drawTasks, drawMessages, drawRequests, drawUsage, drawTranscript]) soon(draw);
}

async function choose() {
  const teams = await drawTeams();
  const wanted = new URLSearchParams(location.hash.slice(1)).get("team");
  const next = teams.some((t) => t.name === wanted) ? wanted : teams.length ? teams[0].name : null;
  if (next === null) return;
  if (next !== team) {
    team = next;
    $("#team").hidden = false;
    for (const a of document.querySelectorAll("#teams a")) a.className = a.dataset.team === team ? "current" : "";
    $("#messages").replaceChildren();
    reading = null;
    $("#transcript-section").hidden = true;
    listen();
  }
}

// ------------------------------------------------------------------ forms

$("#send-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    const sent = await api(teamPath("/messages"), {
      method: "POST",
      body: { to: form.to.value, text: form.text.value, summary: form.summary.value },
    });
    notice(sent.message);
    form.text.value = "";
    form.summary.value = "";
  } catch (error) {
    notice(error.message, true);
  }
});

$("#task-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const blocked = form.blocked_by.value.split(/[\s,#]+/).filter(Boolean);
  try {
    const task = await api(teamPath("/tasks"), {
      method: "POST",
      body: { subject: form.subject.value, description: form.description.value, blocked_by: blocked },
    });
    notice("created task #" + task.id);
    form.reset();
  } catch (error) {
    notice(error.message, true);
  }
});

if (TOKEN) {
  window.addEventListener("hashchange", () => choose().catch((e) => notice(e.message, true)));
  choose().catch((e) => notice(e.message, true));
} else {
  loggedOut();
}
