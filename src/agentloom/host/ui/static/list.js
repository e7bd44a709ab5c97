// The run list: the key's runs, newest first, refreshed every few seconds.
import { call } from "./api.js";
import { badge, h, runHref, show, when } from "./dom.js";

const REFRESH_MS = 2000;
const STATUSES = ["pending", "running", "waiting", "suspended", "succeeded", "failed",
  "cancelled", "timed_out"];

function row(run) {
  return h("tr", { "data-run-id": run.run_id },
    h("td", {}, badge(run.status)),
    h("td", {}, run.agent),
    h("td", { class: "task" }, h("a", { href: runHref(run.run_id) }, run.task || "(no task)")),
    h("td", {}, when(run.created_at)),
    h("td", { class: "muted" }, run.run_id));
}

export function runList(root, fail) {
  let status = "";
  const rows = h("tbody");
  const stamp = h("span", { class: "muted" });
  const filter = h("select", {
    "aria-label": "Status",
    onchange: (event) => { status = event.target.value; refresh(); },
  }, h("option", { value: "" }, "any status"), STATUSES.map((s) => h("option", { value: s }, s)));
  show(root,
    h("h1", {}, "Runs"),
    h("div", { class: "toolbar" }, filter, stamp),
    h("table", { "data-testid": "runs" },
      h("thead", {}, h("tr", {}, ["Status", "Agent", "Task", "Created", "Run"].map((t) => h("th", {}, t)))),
      rows));

  async function refresh() {
    try {
      const query = new URLSearchParams({ limit: "100", ...(status ? { status } : {}) });
      const page = await call("GET", `/v1/runs?${query}`);
      rows.replaceChildren(...page.items.map(row));
      if (!page.items.length) rows.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No runs.")));
      stamp.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      fail(error);
    }
  }
  refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => clearInterval(timer);
}
