// Opening the edge's OpenAI-Realtime WebSocket the way OpenAI's browser clients do: with a
// short-lived client secret in the `openai-insecure-api-key.` subprotocol (browsers cannot set
// headers on a WebSocket). The API key itself only ever travels in a same-origin HTTPS/HTTP POST.

import { authedFetch } from "./auth.js";

const SECRET_TTL_S = 600;

/** Trade the API key for a client secret: `{value, expires_at, session}`. */
export async function mintClientSecret(key) {
  const body = JSON.stringify({
    expires_after: { anchor: "created_at", seconds: SECRET_TTL_S },
    session: { type: "realtime" },
  });
  const secret = await authedFetch("/v1/realtime/client_secrets", key, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
  });
  if (!secret || typeof secret.value !== "string") throw new Error("the edge returned no client secret");
  return secret;
}

/** Open the Realtime socket; resolves once it is open. */
export function openRealtime(secret) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const model = secret.session && secret.session.model;
  const query = model ? `?model=${encodeURIComponent(model)}` : "";
  const ws = new WebSocket(`${proto}//${location.host}/v1/realtime${query}`, [
    "realtime",
    `openai-insecure-api-key.${secret.value}`,
  ]);
  return new Promise((resolve, reject) => {
    ws.addEventListener("open", () => resolve(ws), { once: true });
    ws.addEventListener(
      "close",
      (ev) => reject(new Error(`the edge refused the connection (${ev.code} ${ev.reason || "no reason"})`)),
      { once: true },
    );
  });
}

/** A message handler that parses each Realtime event and hands it on; a bad one goes to `onError`. */
export function eventReader(onEvent, onError) {
  return (text) => {
    let ev;
    try {
      ev = JSON.parse(text);
    } catch (err) {
      onError(`bad event from the edge: ${err.message}`);
      return;
    }
    onEvent(ev);
  };
}
