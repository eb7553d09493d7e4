// Which transport the talk page uses: WebRTC by default; the WebSocket when the page's switch
// says so, or the address asks for it (`/?transport=websocket`), or the browser has no WebRTC.
// The switch writes its choice into the address (history.replaceState), so a reload keeps it.

const TRANSPORTS = ["webrtc", "websocket"];

function fromAddress() {
  const asked = new URLSearchParams(location.search).get("transport");
  return TRANSPORTS.includes(asked) ? asked : null;
}

/** Set the switch from the address (or the browser's abilities) and keep the address in step. */
export function transportSwitch(select) {
  const webrtc = typeof RTCPeerConnection === "function";
  if (!webrtc) select.querySelector('option[value="webrtc"]').disabled = true;
  select.value = webrtc ? fromAddress() || "webrtc" : "websocket";
  select.addEventListener("change", () => {
    const params = new URLSearchParams(location.search);
    params.set("transport", select.value);
    history.replaceState(null, "", `${location.pathname}?${params}`);
  });
}

