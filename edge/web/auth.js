// The edge's API key, kept in this tab only (sessionStorage) and never sent over a WebSocket.
// The operations page keeps its admin key in a slot of its own (ADMIN_SLOT): /status needs the
// admin scope, and the talk page's caller key does not have it.
//
// `voicemesh up` prints a URL like http://127.0.0.1:8080/#key=KEY: the fragment never reaches a
// server; we move it into sessionStorage and strip it from the address bar. Otherwise the user
// types the key once into the form. The talk page trades the key for a short-lived client secret
// (POST /v1/realtime/client_secrets) and opens the Realtime WebSocket with that secret only.

const STORAGE_KEY = "voicemesh.apiKey";
export const ADMIN_SLOT = "voicemesh.adminKey";

export function takeKeyFromFragment(slot = STORAGE_KEY) {
  const params = new URLSearchParams(location.hash.slice(1));
  const key = params.get("key");
  if (key) {
    sessionStorage.setItem(slot, key);
    history.replaceState(null, "", location.pathname + location.search);
  }
}

export function storedKey(slot = STORAGE_KEY) {
  return sessionStorage.getItem(slot) || "";
}

export function forgetKey(slot = STORAGE_KEY) {
  sessionStorage.removeItem(slot);
}

/** Resolve with the key kept in `slot`: the stored one, or whatever the user submits in `form`. */
export function askForKey(form, slot = STORAGE_KEY) {
  takeKeyFromFragment(slot);
  const key = storedKey(slot);
  if (key) return Promise.resolve(key);
  form.hidden = false;
  const input = form.querySelector("input");
  input.focus();
  return new Promise((resolve) => {
    form.addEventListener("submit", function onSubmit(ev) {
      ev.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      sessionStorage.setItem(slot, value);
      input.value = "";
      form.hidden = true;
      form.removeEventListener("submit", onSubmit);
      resolve(value);
    });
  });
}

export class HttpError extends Error {
  constructor(status, reason) {
    super(`HTTP ${status}: ${reason}`);
    this.status = status;
  }
}

/** The edge's reason for a non-2xx answer, as an HttpError (its JSON `detail` or `error.message`). */
export async function httpError(res) {
  let reason = res.statusText;
  try {
    const body = await res.json();
    reason = body.detail || body.error?.message || body.message || JSON.stringify(body);
  } catch {
    /* not JSON: keep the status text */
  }
  return new HttpError(res.status, reason);
}

/** fetch() with the key as a Bearer token; a non-2xx answer throws HttpError with the edge's reason. */
export async function authedFetch(url, key, init = {}) {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${key}`);
  const res = await fetch(url, { ...init, headers });
  if (!res.ok) throw await httpError(res);
  return res.json();
}
