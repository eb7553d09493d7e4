// What an event says about where a turn went: region, queue, failover, degradation.
//
// The stock Realtime protocol has no such fields, so the edge carries them two ways that do not
// break stock clients: `response.metadata` (string map) on response.created / response.done, and
// vendor events whose type starts with `voicemesh.` (a stock client ignores unknown types).
// The edge (edge/responses/response.py) sets, in response.metadata: `voicemesh_region`,
// `voicemesh_failed_over_from`, and on degraded turns `voicemesh_degraded: "true"`,
// `served_by: "edge"`, `voicemesh_degraded_reason`; it sends `voicemesh.turn.queued`
// {response_id, position, estimated_wait_s}. Other spellings are read too (router-style names).

const truthy = (v) => v === true || v === "true" || v === "1" || v === 1;

function fields(ev) {
  const out = {};
  for (const src of [ev.response && ev.response.metadata, ev.metadata, ev.data, ev]) {
    if (src && typeof src === "object") {
      for (const [k, v] of Object.entries(src)) if (!(k in out)) out[k] = v;
    }
  }
  return out;
}

/** Returns a partial note `{region, attempt, degraded, reason, queue, failover}`, or null. */
export function routingNote(ev) {
  const type = String(ev.type || "");
  const vendor = type.startsWith("voicemesh.");
  const meta = ev.response && ev.response.metadata;
  if (!vendor && !meta) return null;
  const f = fields(ev);
  const note = {};
  const degraded =
    /degrad/.test(type) || truthy(f.voicemesh_degraded) || truthy(f.degraded) || f.served_by === "edge";
  const region = f.voicemesh_region || f.region || f.region_id || f.to_region;
  if (region && !degraded) note.region = String(region);
  if (f.attempt !== undefined) note.attempt = Number(f.attempt);
  if (degraded) {
    note.degraded = true;
    note.reason = String(f.voicemesh_degraded_reason || f.degraded_reason || f.reason || f.cause || "");
  }
  if (/queue/.test(type) || f.queue_position !== undefined) {
    const position = f.position ?? f.queue_position;
    if (position !== undefined) {
      note.queue = { position: Number(position), wait: Number(f.estimated_wait_s ?? f.wait_s ?? NaN) };
    }
  }
  if (/admit|routed/.test(type)) note.queue = null;
  const from = f.voicemesh_failed_over_from || f.from_region;
  if (/fail(ed)?_?over/.test(type) || from) {
    note.failover = {
      from: String(from || f.from || ""),
      to: String(f.to_region || f.to || region || ""),
      reason: String(f.reason || f.cause || ""),
    };
  }
  return Object.keys(note).length ? note : null;
}
