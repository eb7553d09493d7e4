// The turn waterfall on the operations page: for each recent turn (GET /status's edge.turns, read
// back from each response.done's voicemesh_stages: edge/responses/recent_turns.py), its edge stages
// as contiguous bars from the end of speech, the region's own marks (from its admission, the end of
// `queue`) as a second lane, and each failover as a marked line (from -> to, when).

const EDGE = ["eos", "commit", "route", "connect", "queue", "region", "degrade", "relay", "fallback"];
const REGION = ["stt", "llm_ttft", "first_clause", "tts_first_audio"];
const ROWS = 8;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("data-") || k === "style" || k === "title") node.setAttribute(k, v);
    else node[k] = v;
  }
  node.append(...children);
  return node;
}

/** One turn's bars: [{lane, name, startMs, ms}], edge stages first, then the region's marks. */
export function turnBars(stages) {
  const bars = [];
  let at = 0;
  let admitted = null;
  for (const name of EDGE) {
    if (!(name in stages)) continue;
    bars.push({ lane: "edge", name, startMs: at, ms: stages[name] });
    at += stages[name];
    if (name === "queue") admitted = at;
  }
  // The region's timings are marks from its admission; shown as segments from one mark to the next.
  let prev = 0;
  for (const name of REGION) {
    const mark = stages[`region_${name}`];
    if (admitted === null || mark === undefined || mark < prev) continue;
    bars.push({ lane: "region", name, startMs: admitted + prev, ms: mark - prev });
    prev = mark;
  }
  return bars;
}

function row(turn, scaleMs) {
  const pct = (v) => `${((100 * v) / scaleMs).toFixed(2)}%`;
  const track = el("div", { className: "wf-track" });
  for (const b of turnBars(turn.stages_ms || {})) {
    const label = `${b.lane === "region" ? "region " : ""}${b.name}: ${Math.round(b.ms)} ms`;
    track.append(el("span", {
      className: `wf-bar wf-${b.lane}`, "data-stage": b.name, "data-lane": b.lane, title: label,
      style: `left:${pct(b.startMs)};width:${pct(Math.max(b.ms, 0))}`,
    }));
  }
  for (const f of turn.failovers || []) {
    track.append(el("span", {
      className: "wf-failover", "data-from": f.from, "data-to": f.to,
      title: `failover ${f.from} → ${f.to} (${f.reason}) at ${Math.round(f.at_ms)} ms`,
      style: `left:${pct(Math.max(0, f.at_ms))}`,
    }));
  }
  const total = turn.stages_ms?.first_audio;
  const who = turn.failed_over_from ? `${turn.failed_over_from} → ${turn.region}` : turn.region || turn.served_by;
  const when = new Date(turn.at * 1000).toLocaleTimeString();
  const head = el("div", { className: "wf-label", title: turn.response_id },
    `${when} · ${who} · ${turn.status}${total === undefined ? "" : ` · ${Math.round(total)} ms`}`);
  return el("div", { className: "wf-row", "data-response": turn.response_id }, head, track);
}

/** Draw the last turns (newest first) into `box`, on one time scale so rows compare. */
export function renderWaterfall(box, turns) {
  const recent = (turns || []).slice(-ROWS).reverse();
  if (!recent.length) {
    box.replaceChildren(el("p", { className: "muted" }, "no turn yet"));
    return;
  }
  const ends = recent.flatMap((t) => turnBars(t.stages_ms || {}).map((b) => b.startMs + b.ms));
  const scaleMs = Math.max(100, ...ends, ...recent.flatMap((t) => (t.failovers || []).map((f) => f.at_ms)));
  const legend = el("div", { className: "legend" },
    ...EDGE.map((n) => el("span", {}, el("i", { className: "wf-bar wf-edge", "data-stage": n }), n)),
    ...REGION.map((n) => el("span", {}, el("i", { className: "wf-bar wf-region", "data-stage": n }), `region ${n}`)),
    el("span", {}, el("i", { className: "wf-failover" }), "failover"));
  box.replaceChildren(...recent.map((t) => row(t, scaleMs)), legend);
}
