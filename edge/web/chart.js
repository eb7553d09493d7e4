// A small line chart on a <canvas>, plain 2D context: one line per series over a sliding window.

export const COLORS = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777"];

/**
 * Draw `series` (Map name -> [[tMs, value], ...]) over the window ending at `nowMs`.
 * Gaps (null values) break the line, so a region that stopped reporting shows as a gap.
 */
export function drawLines(canvas, series, { nowMs, windowMs, unit = "ms" }) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);

  const pad = { l: 62, r: 12, t: 10, b: 24 };
  const t0 = nowMs - windowMs;
  let max = 0;
  for (const pts of series.values()) {
    for (const [t, v] of pts) if (t >= t0 && v !== null && v > max) max = v;
  }
  max = niceCeil(max || 100);
  const x = (t) => pad.l + ((t - t0) / windowMs) * (w - pad.l - pad.r);
  const y = (v) => h - pad.b - (v / max) * (h - pad.t - pad.b);

  // Grid and axes labels.
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#6b7385";
  g.strokeStyle = "#e5e7eb";
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    g.beginPath();
    g.moveTo(pad.l, y(v));
    g.lineTo(w - pad.r, y(v));
    g.stroke();
    g.textAlign = "right";
    g.fillText(`${Math.round(v)} ${unit}`, pad.l - 6, y(v) + 4);
  }
  g.textAlign = "center";
  const minutes = Math.round(windowMs / 60000);
  for (let m = 0; m <= minutes; m++) {
    const t = nowMs - m * 60000;
    g.fillText(m === 0 ? "now" : `-${m} min`, x(t), h - 6);
  }

  const empty = [...series.values()].every((pts) => !pts.some(([t, v]) => t >= t0 && v !== null));
  if (empty) {
    g.fillStyle = "#94a3b8";
    g.font = "13px system-ui, sans-serif";
    g.fillText("no turns served yet: the EWMA appears with the first answer", (pad.l + w - pad.r) / 2, h / 2);
  }

  // Lines.
  let i = 0;
  for (const [, pts] of series) {
    g.strokeStyle = COLORS[i++ % COLORS.length];
    g.lineWidth = 2;
    g.beginPath();
    let pen = false;
    for (const [t, v] of pts) {
      if (t < t0 || v === null) {
        pen = false;
        continue;
      }
      if (pen) g.lineTo(x(t), y(v));
      else g.moveTo(x(t), y(v));
      pen = true;
    }
    g.stroke();
  }
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
