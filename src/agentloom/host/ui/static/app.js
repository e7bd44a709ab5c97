// The inspector's entry point: asks for an API key once, then routes on the URL's hash —
// #/ the run list, #/runs/ID a run's timeline, #/runs/ID/operations/OP one operation.
import { ApiError, apiKey } from "./api.js";
import { h, show } from "./dom.js";
import { operationDetail } from "./operation.js";
import { runTimeline } from "./run.js";
import { runList } from "./list.js";

const view = document.getElementById("view");
const forget = document.getElementById("forget");
const who = document.getElementById("who");
let leave = () => {};

function login(message) {
  leave();
  leave = () => {};
  forget.hidden = true;
  who.textContent = "";
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true,
    "aria-label": "API key", placeholder: "alk_…" });
  show(view, h("form", {
    class: "key",
    onsubmit: (event) => {
      event.preventDefault();
      apiKey.set(input.value.trim());
      route();
    },
  }, h("h1", {}, "API key"),
  h("p", { class: "muted" }, "The inspector shows the runs of one key (agentloom keys create). " +
    "It is kept in this tab only and sent as Authorization: Bearer."),
  message ? h("p", { class: "error", role: "alert" }, message) : null,
  input, h("button", { type: "submit" }, "Open")));
  input.focus();
}

function fail(error) {
  if (error instanceof ApiError && error.status === 401) {
    apiKey.clear();
    login("That key was refused: enter a valid API key.");
    return;
  }
  const text = error instanceof ApiError ? `${error.code ?? error.status}: ${error.message}` : String(error);
  let banner = view.querySelector(".problem");
  if (!banner) {
    banner = h("p", { class: "error problem", role: "alert" });
    view.prepend(banner);
  }
  banner.textContent = text;
}

function parts() {
  try {
    return location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  } catch {
    return [];
  }
}

function route() {
  leave();
  leave = () => {};
  if (!apiKey.get()) return login();
  forget.hidden = false;
  who.textContent = "key set for this tab";
  const [section, runId, sub, operationId] = parts();
  if (section === "runs" && runId && sub === "operations" && operationId)
    leave = operationDetail(view, runId, operationId, fail);
  else if (section === "runs" && runId) leave = runTimeline(view, runId, fail);
  else leave = runList(view, fail);
}

forget.addEventListener("click", () => { apiKey.clear(); login(); });
window.addEventListener("hashchange", route);
route();
