// Shoal console: a small single page, vanilla JS (no build step, no CDN).
// Hash routes: #/topics, #/share-groups[/ID], #/consumer-groups[/ID], #/charts.
// A share group's page follows the broker over server-sent events (…/events).
"use strict";

const API = "api";
const STATES = ["available", "acquired", "acknowledged", "archived"];
let stream = null;      // the open EventSource, closed when the page changes
let chartTimer = null;  // the charts page's refresh timer
let overview = { allow_writes: false };
const openRecords = new Set();  // share-partitions whose records table is open

document.addEventListener("toggle", (event) => {
  const details = event.target;
  if (!details.dataset || !details.dataset.records) return;
  if (details.open) openRecords.add(details.dataset.records); else openRecords.delete(details.dataset.records);
}, true);

const main = document.getElementById("main");

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  }[c]));
}

function bytes(n) {
  if (n == null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function duration(ms) {
  if (ms == null || ms < 0) return ms === -1 ? "forever" : "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

async function getJson(path) {
  const response = await fetch(`${API}/${path}`, { headers: { Accept: "application/json" } });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

async function post(path, body) {
  const response = await fetch(`${API}/${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Shoal-Console": "1" },
    body: JSON.stringify(body || {}),
  });
  return { ok: response.ok, body: await response.json() };
}

function table(headers, rows) {
  const head = headers.map((h) => `<th class="${h.num ? "num" : ""} ${h.narrow ? "hide-narrow" : ""}">${esc(h.label)}</th>`).join("");
  const body = rows.join("") || `<tr><td colspan="${headers.length}" class="muted">None</td></tr>`;
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

// ---- topics

async function showTopics() {
  const data = await getJson("topics");
  const rows = data.topics.map((t) => `
    <tr data-topic="${esc(t.name)}">
      <td><details><summary>${esc(t.name)}${t.internal ? ' <span class="badge">internal</span>' : ""}</summary>
        ${table([{ label: "Partition" }, { label: "Log start", num: 1 }, { label: "Log end", num: 1 }, { label: "Size", num: 1 }],
          t.partitions.map((p) => `<tr><td>${p.partition}</td><td class="num">${p.log_start_offset}</td><td class="num">${p.log_end_offset}</td><td class="num">${bytes(p.size_bytes)}</td></tr>`))}
      </details></td>
      <td class="num">${t.partitions.length}</td>
      <td class="num">${t.records}</td>
      <td class="num">${bytes(t.size_bytes)}</td>
      <td class="num hide-narrow">${duration(t.retention_ms)}</td>
      <td class="num hide-narrow">${t.retention_bytes < 0 ? "none" : bytes(t.retention_bytes)}</td>
    </tr>`);
  main.innerHTML = `<h1>Topics <span class="muted">(${data.topics.length})</span></h1>
    <div class="card">${table([{ label: "Topic" }, { label: "Partitions", num: 1 }, { label: "Records", num: 1 }, { label: "Size", num: 1 }, { label: "Retention", num: 1, narrow: 1 }, { label: "Retention bytes", num: 1, narrow: 1 }], rows)}</div>`;
}

// ---- share groups

async function showShareGroups() {
  const data = await getJson("share-groups");
  const rows = data.groups.map((g) => `
    <tr><td><a href="#/share-groups/${encodeURIComponent(g.group_id)}">${esc(g.group_id)}</a></td>
    <td><span class="badge ${esc(g.state)}">${esc(g.state)}</span></td><td class="num">${g.members}</td></tr>`);
  main.innerHTML = `<h1>Share groups <span class="muted">(${data.groups.length})</span></h1>
    ${data.enabled ? "" : '<p class="msg error">Share groups are disabled on this broker (share.version=0).</p>'}
    <div class="card">${table([{ label: "Group" }, { label: "State" }, { label: "Members", num: 1 }], rows)}</div>`;
}

function showShareGroup(groupId) {
  main.innerHTML = `<h1>Share group ${esc(groupId)}</h1><p class="live" id="live">connecting…</p><div id="group"></div>`;
  stream = new EventSource(`${API}/share-groups/${encodeURIComponent(groupId)}/events`);
  const live = document.getElementById("live");
  stream.onopen = () => { live.textContent = "live"; live.classList.add("on"); };
  stream.onerror = () => { live.textContent = "reconnecting…"; live.classList.remove("on"); };
  stream.onmessage = (event) => {
    const group = JSON.parse(event.data);
    document.getElementById("group").innerHTML = group ? renderShareGroup(group) : '<p class="msg error">No such share group.</p>';
    bindActions("share", groupId);
  };
}

function utc(ms) {
  return ms == null ? "" : new Date(ms).toISOString().replace(".000Z", "Z");
}

// Shoal's delivery extensions of the group (key order, scheduled delivery, pause).
function renderDelivery(d) {
  if (!d) return "";
  const on = [];
  if (d.paused) on.push('<span class="badge ext" data-ext="paused">paused</span>');
  if (d.key_order) on.push('<span class="badge ext" data-ext="key-order">key order</span>');
  if (d.delay_max_ms > 0) on.push(`<span class="badge ext" data-ext="scheduled">scheduled delivery (≤ ${duration(d.delay_max_ms)})</span>`);
  return on.length ? `<span>Delivery ${on.join(" ")}</span>` : "";
}

// What key order and scheduled delivery hold back in one share-partition.
function renderHolds(p, d) {
  const h = p.holds;
  if (!h) return "";
  const keyOrder = (d && d.key_order) || h.blocked_records > 0;
  const scheduled = (d && d.delay_max_ms > 0) || h.scheduled_records > 0 || h.malformed_deliver_at > 0;
  if (!keyOrder && !scheduled) return "";
  const parts = [];
  if (keyOrder) {
    parts.push(`<span>Blocked keys <b class="blocked-keys">${h.blocked_keys}</b></span>
      <span>Held by key <b class="blocked-records">${h.blocked_records}</b></span>`);
  }
  if (scheduled) {
    const due = h.next_due_ms == null ? "–"
      : `<span class="due" data-due="${Date.now() + h.next_due_in_ms}" title="${esc(utc(h.next_due_ms))}">${duration(h.next_due_in_ms)}</span>`;
    parts.push(`<span>Waiting for their time <b class="scheduled-records">${h.scheduled_records}</b></span>
      <span>Next due <b class="next-due">${due}</b></span>`);
    if (h.malformed_deliver_at > 0) parts.push(`<span>Malformed deliver.at <b class="malformed">${h.malformed_deliver_at}</b></span>`);
  }
  const keys = h.top_blocked_keys.map((k) => `<tr class="blocked-key"><td title="0x${esc(k.key_hex)}">${esc(k.key)}</td><td class="num">${k.held_records}</td></tr>`);
  const top = keys.length ? table([{ label: "Blocked key" }, { label: "Records held", num: 1 }], keys) : "";
  return `<div class="kv holds">${parts.join("")}</div>${top}`;
}

function heldText(e) {
  const held = [];
  if (e.key_blocked) held.push("by key");
  if (e.deliver_at_ms != null) held.push(`until ${utc(e.deliver_at_ms)}`);
  return held.join(", ");
}

function renderShareGroup(g) {
  const members = g.members.map((m) => `
    <tr><td title="${esc(m.member_id)}">${esc(m.member_id.slice(0, 12))}…</td><td>${esc(m.client_id)}</td>
    <td class="hide-narrow">${esc(m.client_host)}</td><td class="num">${m.member_epoch}</td>
    <td>${m.assignment.map((a) => `${esc(a.topic)}: ${a.partitions.join(",")}`).join("; ")}</td></tr>`);
  const partitions = g.partitions.map((p) => renderSharePartition(p, g.delivery)).join("") || '<p class="muted">No share-partition state yet.</p>';
  return `
    <div class="kv"><span>State <b class="badge ${esc(g.state)}" id="group-state">${esc(g.state)}</b></span>
      <span>Group epoch <b>${g.group_epoch}</b></span><span>Assignment epoch <b>${g.assignment_epoch}</b></span>${renderDelivery(g.delivery)}</div>
    ${actionsHtml(g.allow_writes)}
    <h2>Members (${g.members.length})</h2>
    <div class="card">${table([{ label: "Member" }, { label: "Client" }, { label: "Host", narrow: 1 }, { label: "Epoch", num: 1 }, { label: "Assignment" }], members)}</div>
    <h2>Share-partitions</h2>
    <div class="legend">${STATES.map((s) => `<span><i style="background: var(--${s})"></i>${s}</span>`).join("")}<span><i style="outline: 2px solid var(--pending)"></i>write pending</span><span><i class="held-key"></i>held by key</span><span><i class="held-time"></i>waiting for its time</span></div>
    ${partitions}`;
}

function renderSharePartition(p, delivery) {
  const id = `${p.topic}-${p.partition}`;
  const head = `<div class="kv"><span><b>${esc(id)}</b></span>
    <span>SPSO <b class="spso">${p.start_offset}</b></span>
    <span>SPEO <b class="speo">${p.loaded ? p.end_offset : "–"}</b></span>
    <span>Lag <b class="lag">${p.lag < 0 ? "–" : p.lag}</b></span>
    <span>Log end <b>${p.log_end_offset ?? "–"}</b></span></div>`;
  if (!p.loaded) {
    return `<div class="card sp" data-sp="${esc(id)}">${head}<p class="muted">Not loaded in memory (no consumer has fetched it lately).</p></div>`;
  }
  const cells = p.inflight.map((e) => {
    const count = e.last_offset - e.first_offset + 1;
    const label = e.first_offset === e.last_offset ? e.first_offset : `${e.first_offset}–${e.last_offset}`;
    const held = heldText(e);
    const title = `${label}: ${e.state}, delivery ${e.delivery_count}${e.holder ? `, held by ${e.holder}` : ""}${held ? `, held back ${held}` : ""}`;
    return `<span class="cell ${e.pending_write ? "pending" : ""} ${e.key_blocked ? "held-key" : ""} ${e.deliver_at_ms != null ? "held-time" : ""}" style="flex-grow: ${Math.min(count, 20)}"
      data-state="${e.state}" data-first="${e.first_offset}" data-last="${e.last_offset}"
      data-dc="${e.delivery_count}" data-holder="${esc(e.holder ?? "")}" title="${esc(title)}">${label}${e.delivery_count > 1 ? ` ×${e.delivery_count}` : ""}</span>`;
  }).join("");
  const now = Date.now();
  const rows = p.inflight.map((e) => `
    <tr class="entry" data-state="${e.state}"><td>${e.first_offset === e.last_offset ? e.first_offset : `${e.first_offset}–${e.last_offset}`}</td>
    <td>${e.state}${e.pending_write ? " (write pending)" : ""}</td><td class="num">${e.delivery_count}</td>
    <td title="${esc(e.holder ?? "")}">${e.holder ? esc(e.holder.slice(0, 12)) + "…" : ""}</td>
    <td class="num lock" data-expires="${e.lock_expires_in_ms == null ? "" : now + e.lock_expires_in_ms}">${e.lock_expires_in_ms == null ? "" : duration(Math.max(0, e.lock_expires_in_ms))}</td>
    <td class="held">${esc(heldText(e))}</td></tr>`);
  return `<div class="card sp" data-sp="${esc(id)}">${head}
    ${renderHolds(p, delivery)}
    <div class="strip">${cells || '<span class="muted">Nothing in flight.</span>'}</div>
    ${p.inflight_truncated ? `<p class="muted">Showing the first ${p.inflight.length} entries (console.inflight.max.records).</p>` : ""}
    <details data-records="${esc(id)}" ${openRecords.has(id) ? "open" : ""}><summary>Records (${p.inflight.length} entries, ${p.delivery_complete_count} complete)</summary>
    ${table([{ label: "Offsets" }, { label: "State" }, { label: "Deliveries", num: 1 }, { label: "Holder" }, { label: "Lock expires in", num: 1 }, { label: "Held back" }], rows)}</details></div>`;
}

// Lock and due-time countdowns tick between events.
setInterval(() => {
  const now = Date.now();
  document.querySelectorAll("td.lock[data-expires]").forEach((td) => {
    if (td.dataset.expires) td.textContent = duration(Math.max(0, Number(td.dataset.expires) - now));
  });
  document.querySelectorAll("span.due[data-due]").forEach((span) => {
    span.textContent = duration(Math.max(0, Number(span.dataset.due) - now));
  });
}, 500);

// ---- consumer groups

async function showConsumerGroups() {
  const data = await getJson("consumer-groups");
  const rows = data.groups.map((g) => `
    <tr><td><a href="#/consumer-groups/${encodeURIComponent(g.group_id)}">${esc(g.group_id)}</a></td>
    <td>${esc(g.type)}</td><td><span class="badge ${esc(g.state)}">${esc(g.state)}</span></td>
    <td class="num">${g.partitions}</td><td class="num">${g.lag ?? "–"}</td></tr>`);
  main.innerHTML = `<h1>Consumer groups <span class="muted">(${data.groups.length})</span></h1>
    <div class="card">${table([{ label: "Group" }, { label: "Type" }, { label: "State" }, { label: "Partitions", num: 1 }, { label: "Lag", num: 1 }], rows)}</div>`;
}

async function showConsumerGroup(groupId) {
  const g = await getJson(`consumer-groups/${encodeURIComponent(groupId)}`);
  if (!g) { main.innerHTML = `<h1>${esc(groupId)}</h1><p class="msg error">No such consumer group.</p>`; return; }
  const rows = g.partitions.map((p) => `
    <tr><td>${esc(p.topic)}</td><td class="num">${p.partition}</td><td class="num">${p.committed_offset}</td>
    <td class="num">${p.log_end_offset ?? "–"}</td><td class="num lag">${p.lag ?? "–"}</td></tr>`);
  main.innerHTML = `<h1>Consumer group ${esc(g.group_id)}</h1>
    <div class="kv"><span>Type <b>${esc(g.type)}</b></span><span>State <b class="badge ${esc(g.state)}">${esc(g.state)}</b></span></div>
    ${actionsHtml(g.allow_writes)}
    <div class="card">${table([{ label: "Topic" }, { label: "Partition", num: 1 }, { label: "Committed", num: 1 }, { label: "Log end", num: 1 }, { label: "Lag", num: 1 }], rows)}</div>`;
  bindActions("consumer", groupId);
}

// ---- actions (only when the broker runs with console.allow.writes=true)

function actionsHtml(allowed) {
  if (!allowed) return "";
  return `<div class="actions"><button data-act="reset" data-to="earliest">Reset to earliest</button>
    <button data-act="reset" data-to="latest">Reset to latest</button>
    <button data-act="delete" class="danger">Delete group</button></div><div class="msg" id="msg"></div>`;
}

function bindActions(kind, groupId) {
  document.querySelectorAll("button[data-act]").forEach((button) => {
    button.onclick = async () => {
      const what = button.dataset.act === "delete" ? `delete group ${groupId}` : `reset ${groupId} to ${button.dataset.to}`;
      if (!window.confirm(`Really ${what}?`)) return;
      const id = encodeURIComponent(groupId);
      const result = button.dataset.act === "delete"
        ? await post(`groups/${id}/delete`)
        : await post(`${kind}-groups/${id}/reset-offsets`, { to: button.dataset.to });
      const msg = document.getElementById("msg");
      msg.className = result.ok ? "msg" : "msg error";
      msg.textContent = result.ok ? "Done." : `${result.body.error}: ${result.body.message ?? ""}`;
      if (result.ok && button.dataset.act === "delete") location.hash = `#/${kind}-groups`;
    };
  });
}

// ---- charts

const CHARTS = [
  { title: "Throughput (records/s in, acquired/s)", rates: ["records_in", "records_acquired"] },
  { title: "Bytes/s (in, out)", rates: ["bytes_in", "bytes_out"] },
  { title: "Acknowledgements/s by type", rates: ["acks_accept", "acks_release", "acks_reject", "lock_timeouts"] },
  { title: "Lag (records)", gauges: ["share_lag", "consumer_lag"] },
];
const COLORS = ["#1f77b4", "#e5533d", "#4caf50", "#f6a313"];

function lineChart(t, series) {
  const w = 600, h = 160, pad = 30;
  const all = series.flatMap((s) => s.values);
  const max = Math.max(1, ...all);
  const t0 = t[0] ?? 0, t1 = t[t.length - 1] ?? 1;
  const x = (v) => pad + ((v - t0) / Math.max(1, t1 - t0)) * (w - pad - 5);
  const y = (v) => h - 15 - (v / max) * (h - 25);
  const lines = series.map((s, i) => {
    const points = s.values.map((v, j) => `${x(t[j]).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    return `<polyline fill="none" stroke="${COLORS[i]}" stroke-width="1.5" points="${points}"/>`;
  }).join("");
  const legend = series.map((s, i) => `<text x="${pad + i * 110}" y="10" style="fill:${COLORS[i]}">${esc(s.name)}</text>`).join("");
  return `<svg class="chart" viewBox="0 0 ${w} ${h}" preserveAspectRatio="none">
    <line x1="${pad}" y1="${h - 15}" x2="${w}" y2="${h - 15}" stroke="#ccc"/>
    <text x="2" y="${y(max) + 4}">${max.toPrecision(3)}</text><text x="2" y="${h - 12}">0</text>
    ${legend}${lines}</svg>`;
}

async function showCharts() {
  const data = await getJson("charts");
  const span = data.t.length ? duration(data.t[data.t.length - 1] - data.t[0]) : "";
  main.innerHTML = `<h1>Charts <span class="muted">${data.t.length} samples ${span ? `over ${span}` : "(the first come after a few seconds)"}</span></h1>
    <div class="charts">${CHARTS.map((c) => {
      const series = (c.rates || []).map((n) => ({ name: n, values: data.rates[n] || [] }))
        .concat((c.gauges || []).map((n) => ({ name: n, values: data.gauges[n] || [] })));
      return `<div class="card"><h2>${esc(c.title)}</h2>${lineChart(data.t, series)}</div>`;
    }).join("")}</div>`;
}

// ---- routing

async function route() {
  if (stream) { stream.close(); stream = null; }
  if (chartTimer) { clearInterval(chartTimer); chartTimer = null; }
  const [, page = "share-groups", id] = location.hash.match(/^#\/([^/]*)\/?(.*)$/) || [];
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === page));
  try {
    if (page === "topics") await showTopics();
    else if (page === "consumer-groups") await (id ? showConsumerGroup(decodeURIComponent(id)) : showConsumerGroups());
    else if (page === "charts") { await showCharts(); chartTimer = setInterval(showCharts, 5000); }
    else if (id) showShareGroup(decodeURIComponent(id));
    else await showShareGroups();
  } catch (error) {
    main.innerHTML = `<p class="msg error">${esc(error.message)}</p>`;
  }
}

async function start() {
  try {
    overview = await getJson("overview");
    document.getElementById("node").textContent = `node ${overview.node_id} · cluster ${overview.cluster_id}${overview.allow_writes ? " · writes allowed" : " · read-only"}`;
  } catch (error) {
    document.getElementById("node").textContent = "broker unreachable";
  }
  window.addEventListener("hashchange", route);
  await route();
}

start();
