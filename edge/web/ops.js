// The operations page: polls the edge's GET /status (admin key) once a second and shows regions
// (location, breaker, latency EWMA chart, load, queue, residency), recent failovers and
// degradations with their cause, the edge's sessions, and its recent turns' stages (waterfall.js).
//
// `window.voicemeshOps.snapshot()` returns what the page shows as plain JSON (the browser test
// compares it with /status).

import { ADMIN_SLOT, askForKey, authedFetch, forgetKey, HttpError } from "./auth.js";
import { COLORS, drawLines } from "./chart.js";
import { renderWaterfall } from "./waterfall.js";

const POLL_MS = 1000;
const WINDOW_MS = 5 * 60 * 1000;

const $ = (sel) => document.querySelector(sel);
const history = new Map(); // region id -> [[tMs, ewmaMs|null], ...] gathered from polls
let last = null; // last /status body
let regions = []; // normalized regions of the last poll
let polls = 0;
let key = "";

const num = (...vals) => {
  for (const v of vals) if (v !== undefined && v !== null && Number.isFinite(Number(v))) return Number(v);
  return null;
};

const ms = (...secs) => {
  const v = num(...secs);
  return v === null ? null : v * 1000;
};

/**
 * One region from /status (router/health.py + router/core.py name the fields). Latency EWMA is the
 * router's time-to-first-audio EWMA, else its first-byte EWMA (both null until a turn was served).
 */
export function normalizeRegion(id, r) {
  const loc = r.location || {};
  const breaker = r.breaker && typeof r.breaker === "object" ? r.breaker.state : r.breaker ?? r.breaker_state;
  const capacity = num(r.capacity, r.slots);
  let load = num(r.load, r.active, r.in_flight);
  // The region reports load as a fraction of its slots; show it as slots in use.
  if (load !== null && load <= 1 && capacity) load = Math.round(load * capacity * 10) / 10;
  return {
    id: String(r.id ?? r.region ?? id),
    url: r.url || "",
    location: r.location_name || (loc.lat !== undefined ? `${(+loc.lat).toFixed(2)}, ${(+loc.lon).toFixed(2)}` : "–"),
    breaker: String(breaker ?? "unknown").replace("_", "-"),
    healthy: r.probe_ok ?? r.healthy ?? null,
    regionStatus: r.region_status ?? null,
    ewmaMs: ms(r.ttfa_ewma_s, r.first_byte_ewma_s) ?? num(r.ewma_ms, r.latency_ewma_ms),
    probeMs: ms(r.probe_rtt_ewma_s),
    scoreMs: ms(r.score_s),
    rank: r.rank ?? null,
    load,
    capacity,
    queue: num(r.queue_depth, r.queued, r.queue),
    residency: Array.isArray(r.residency) ? r.residency : r.residency ? [String(r.residency)] : [],
  };
}

export function normalizeStatus(s) {
  const router = s.router ?? s;
  const src = router.regions ?? [];
  const list = Array.isArray(src)
    ? src.map((r, i) => normalizeRegion(i, r))
    : Object.entries(src).map(([id, r]) => normalizeRegion(id, r));
  const events = (router.recent_failovers ?? router.failovers ?? []).map((e) => ({
    ...e,
    kind: e.kind ?? (e.to ? "failover" : "degraded"),
  }));
  const edge = s.edge ?? {};
  const sessions = edge.sessions ?? edge.open_sessions ?? s.sessions ?? null;
  return { regions: list, events, degradedTurns: num(router.degraded_turns), sessions, edge };
}

function fmtWhen(e) {
  const at = e.at ?? e.time ?? e.ts;
  if (at === undefined || at === null) return "";
  const t = typeof at === "string" ? Date.parse(at) : Number(at) > 1e12 ? Number(at) : Number(at) * 1000;
  return Number.isFinite(t) ? new Date(t).toLocaleTimeString() : String(at);
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  node.append(...children);
  return node;
}

function renderRegions(list) {
  const box = $("#regions");
  const fmt = (v) => (v === null ? "–" : `${Math.round(v)} ms`);
  box.replaceChildren(
    ...list.map((r) => {
      const pct = r.load !== null && r.capacity ? Math.min(100, (100 * r.load) / r.capacity) : 0;
      const health = r.healthy === null ? "–" : r.healthy ? r.regionStatus || "healthy" : "unreachable";
      return el(
        "article",
        { class: "card region-card", "data-region": r.id, "data-breaker": r.breaker },
        el(
          "h3",
          {},
          el("span", {}, r.id, r.rank !== null ? el("small", { class: "muted" }, `  #${r.rank + 1}`) : ""),
          el("span", { class: "badge breaker", "data-breaker": r.breaker }, `breaker ${r.breaker}`),
        ),
        el(
          "dl",
          {},
          el("dt", {}, "location"), el("dd", { class: "location" }, r.location),
          el("dt", {}, "health"), el("dd", { class: "health" }, health),
          el("dt", {}, "latency EWMA"), el("dd", { class: "ewma" }, fmt(r.ewmaMs)),
          el("dt", {}, "probe RTT"), el("dd", { class: "probe" }, fmt(r.probeMs)),
          el("dt", {}, "load"),
          el("dd", { class: "load-text" }, r.load === null ? "–" : `${r.load}${r.capacity ? ` / ${r.capacity} slots` : ""}`),
          el("dt", {}, "queue"), el("dd", { class: "queue" }, r.queue === null ? "–" : String(r.queue)),
          el("dt", {}, "residency"), el("dd", { class: "residency" }, r.residency.join(", ") || "any"),
        ),
        el("div", { class: "load", title: `${Math.round(pct)} % of capacity` }, el("span", { style: `width:${pct}%` })),
      );
    }),
  );
}

function renderChart(list, nowMs) {
  const series = new Map(list.map((r) => [r.id, history.get(r.id) || []]));
  drawLines($("#ewma"), series, { nowMs, windowMs: WINDOW_MS });
  $("#legend").replaceChildren(
    ...list.map((r, i) => el("span", {}, el("i", { style: `background:${COLORS[i % COLORS.length]}` }), r.id)),
  );
}

function renderEvents(events, degradedTurns) {
  $("#degraded-count").textContent = degradedTurns === null ? "" : `(${degradedTurns} degraded turns so far)`;
  const body = $("#events");
  if (!events.length) {
    body.replaceChildren(el("tr", {}, el("td", { colSpan: 5, class: "muted" }, "none yet")));
    return;
  }
  const rows = events.slice(-20).reverse().map((e) => {
    const kind = String(e.kind ?? e.type ?? (e.to_region ? "failover" : "degraded"));
    const cls = /degrad/.test(kind) ? "kind-degraded" : "kind-failover";
    return el(
      "tr",
      {},
      el("td", {}, fmtWhen(e)),
      el("td", { class: cls }, kind),
      el("td", {}, String(e.from_region ?? e.from ?? "–")),
      el("td", {}, String(e.to_region ?? e.to ?? (cls === "kind-degraded" ? "edge voice" : ""))),
      el("td", { title: e.detail || "" }, String(e.reason ?? e.cause ?? "") + (e.gap_s ? ` · gap ${Math.round(e.gap_s * 1000)} ms` : "")),
    );
  });
  body.replaceChildren(...rows);
}

function renderSessions(sessions, edge) {
  const box = $("#sessions");
  if (sessions === null) {
    box.textContent = "–";
  } else if (Array.isArray(sessions)) {
    box.textContent = `${sessions.length} connected`;
  } else if (typeof sessions === "object") {
    box.textContent = Object.entries(sessions).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
  } else {
    box.textContent = `${sessions} connected`;
  }
  box.dataset.sessions = Array.isArray(sessions) ? sessions.length : typeof sessions === "number" ? sessions : "";
  if (edge.id || edge.name) box.textContent += ` (edge ${edge.id || edge.name})`;
}

function setStatus(state, text) {
  const pill = $("#status");
  pill.dataset.state = state;
  pill.textContent = text;
}

async function poll() {
  const nowMs = Date.now();
  try {
    last = await authedFetch("/status", key);
    polls += 1;
    const view = normalizeStatus(last);
    regions = view.regions;
    for (const r of regions) {
      const pts = history.get(r.id) || [];
      pts.push([nowMs, r.ewmaMs]);
      while (pts.length && pts[0][0] < nowMs - WINDOW_MS) pts.shift();
      history.set(r.id, pts);
    }
    renderRegions(regions);
    renderChart(regions, nowMs);
    renderEvents(view.events, view.degradedTurns);
    renderSessions(view.sessions, view.edge);
    renderWaterfall($("#waterfall"), view.edge.turns);
    $("#error").hidden = true;
    setStatus("live", `live · ${new Date(nowMs).toLocaleTimeString()}`);
  } catch (err) {
    if (err instanceof HttpError && (err.status === 401 || err.status === 403)) {
      forgetKey(ADMIN_SLOT);
      const which = err.status === 403 ? "that key is not an admin key" : "the edge refused that key";
      $("#error").textContent = `${which} (${err.message}); enter the admin key`;
      $("#error").hidden = false;
      setStatus("error", "not authenticated");
      key = await askForKey($("#key-form"), ADMIN_SLOT);
    } else {
      $("#error").textContent = `cannot read /status: ${err.message}`;
      $("#error").hidden = false;
      setStatus("error", "edge unreachable");
    }
  }
  setTimeout(poll, POLL_MS); // chained, not setInterval: a slow edge never gets overlapping polls
}

window.voicemeshOps = {
  snapshot: () => ({
    polls,
    status: last,
    regions: [...document.querySelectorAll(".region-card")].map((card) => ({
      id: card.dataset.region,
      breaker: card.dataset.breaker,
      location: card.querySelector(".location").textContent,
      residency: card.querySelector(".residency").textContent,
      ewma: card.querySelector(".ewma").textContent,
    })),
    normalized: regions,
    waterfall: [...document.querySelectorAll(".wf-row")].map((r) => ({
      response: r.dataset.response,
      bars: [...r.querySelectorAll(".wf-bar")].map((b) => ({ lane: b.dataset.lane, stage: b.dataset.stage })),
      failovers: r.querySelectorAll(".wf-failover").length,
    })),
  }),
};

key = await askForKey($("#key-form"), ADMIN_SLOT);
setStatus("connecting", "connecting");
poll();
