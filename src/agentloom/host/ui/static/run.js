// A run's timeline: its state, its operations in order (phase, duration, hook decisions,
// rewritten arguments and results, unknown outcomes highlighted, approval buttons on a waiting
// call, a "Fork from here" button on each call of the run's own agent) and its events, live
// over the SSE stream: each event refreshes the view (and, as a
// safety net while the run has not ended, a slow poll).
import { call, followEvents, runPath } from "./api.js";
import { answeredLine, badge, facts, h, operationHref, runHref, seconds, show, when } from "./dom.js";
import { pretty } from "./diff.js";

const REFRESH_DELAY_MS = 100;
const POLL_MS = 5000;
const ENDED = new Set(["succeeded", "failed", "cancelled", "timed_out"]);

function usage(value) {
  if (!value) return null;
  return `${value.input_tokens ?? "—"} input, ${value.output_tokens ?? "—"} output, ` +
    `${value.reasoning_tokens ?? "—"} reasoning tokens`;
}

function runFacts(run) {
  const waiting = run.diagnosis?.waiting_for;
  return [
    h("h1", {}, "Run ", h("span", { class: "muted" }, run.run_id)),
    facts([
      ["status", h("span", { "data-testid": "run-status" }, badge(run.status))],
      ["agent", run.agent],
      ["task", run.task],
      ["forked from", run.forked_from ? h("span", { "data-testid": "forked-from" },
        h("a", { href: runHref(run.forked_from.run_id) }, run.forked_from.run_id),
        ` at ${run.forked_from.operation_id} (turn ${run.forked_from.turn})`,
        run.forked_from.release_changed ? " under another release" : "") : undefined],
      ["files", run.forked_from ? run.files : undefined],
      ["owner", `${run.actor ?? "—"} in ${run.project ?? "—"}`],
      ["created", when(run.created_at)],
      ["duration", seconds(run.duration_s)],
      ["usage", usage(run.usage)],
      ["output", run.output],
      ["error", run.error ? pretty(run.error) : null],
      ["waiting for", waiting ? waiting.kind : undefined],
      ["unknown calls", run.diagnosis?.unknown_calls?.length ? pretty(run.diagnosis.unknown_calls) : undefined],
      ["next step", run.diagnosis?.next_step ?? undefined],
    ]),
  ];
}

// A workflow run's graph state (runs show --json "nodes"): each node's status, attempts and
// output, what it waits for, its effects that are unknown; then the edges.
function graph(run) {
  if (!run.nodes) return null;
  const rows = run.nodes.map((node) => h("tr", { class: node.unknown.length ? "unknown" :
    node.status === "waiting" ? "waiting" : "", "data-node": node.node },
  h("td", {}, node.node), h("td", {}, node.kind), h("td", {}, badge(node.status)),
  h("td", {}, node.attempts), h("td", { class: "task" }, node.output ?? ""),
  h("td", { class: "task" }, node.error ? `${node.error.code}: ${node.error.message}` :
    node.unknown.length ? `effect unknown: ${pretty(node.unknown)}` : "")));
  const edges = (run.edges ?? []).map((edge) => h("li", {}, `${edge.from.join(" + ")} → ` +
    `${edge.to.join(", ")}${edge.when ? ` when ${edge.when}` : ""}` +
    `${edge.on_error ? ` on error: ${edge.on_error}` : ""}${edge.max ? ` (max ${edge.max})` : ""}`));
  return h("section", { "data-testid": "graph" },
    h("h2", {}, `Workflow ${run.workflow} `, h("span", { class: "muted" },
      run.current.length ? `current: ${run.current.join(", ")}` : "")),
    h("table", {}, h("thead", {}, h("tr", {}, ["node", "kind", "status", "attempts", "output",
      ""].map((t) => h("th", {}, t)))), h("tbody", {}, rows)),
    h("ul", { class: "muted" }, edges));
}

function hookChips(op) {
  return op.hooks.map((hook) => h("span", { class: `chip ${hook.decision ?? ""}`, title: hook.reason ?? "" },
    `${hook.timing} ${hook.hook_id}: ${hook.decision ?? hook.status}`));
}

function changeChips(op) {
  return [
    op.arguments_changed && h("span", { class: "chip changed" }, "arguments rewritten"),
    op.result_changed && h("span", { class: "chip changed" }, "result changed"),
  ];
}

export function runTimeline(root, runId, fail) {
  const controller = new AbortController();
  const head = h("section");
  const rows = h("tbody");
  const log = h("ol", { class: "events", "data-testid": "events" });
  const live = h("span", { class: "muted", "data-testid": "live" }, "connecting…");
  show(root, h("p", {}, h("a", { href: "#/" }, "← all runs")), head,
    h("h2", {}, "Timeline"),
    h("table", { "data-testid": "timeline" },
      h("thead", {}, h("tr", {}, ["#", "at", "kind", "capability", "role", "phase", "status",
        "duration", "hooks", "changes", ""].map((t) => h("th", {}, t)))),
      rows),
    h("h2", {}, "Events ", live), log);

  async function answer(button, operationId, verb) {
    for (const b of button.parentElement.querySelectorAll("button")) b.disabled = true;
    try {
      await call("POST", `${runPath(runId)}/operations/${encodeURIComponent(operationId)}/${verb}`,
        { reason: `${verb === "approve" ? "approved" : "rejected"} in the run inspector` });
    } catch (error) {
      fail(error);
    }
    refresh();
  }

  // "Fork from here" (POST /v1/runs/{id}/fork): a new run whose history stops before this
  // call, optionally with a new user message; the page goes to the fork.
  async function fork(button, operationId) {
    const message = window.prompt("A new user message after the history (optional):", "");
    if (message === null) return;
    button.disabled = true;
    try {
      const body = { at: operationId };
      if (message.trim()) body.message = message;
      const forked = await call("POST", `${runPath(runId)}/fork`, body);
      location.hash = runHref(forked.run_id);
    } catch (error) {
      button.disabled = false;
      fail(error);
    }
  }

  // Only a model or tool call of the run's own agent is a fork point (agent/fork.py).
  const forkable = (op) => (op.kind === "model" || op.kind === "tool") &&
    typeof op.logical_key === "string" && op.logical_key.startsWith(`${runId}/t`) &&
    /^\d+\/(model(#\d+)?|c\d+)$/.test(op.logical_key.slice(runId.length + 2));

  function row(run, op, index) {
    const asked = (run.diagnosis?.waiting_for?.approvals ?? []).find((a) => a.operation_id === op.operation_id);
    const waiting = op.phase === "awaiting_approval";
    const action = waiting ? h("td", { "data-testid": "approval" },
      asked ? h("div", { class: "question" }, asked.question) : null,
      h("button", { class: "approve", type: "button", onclick: (e) => answer(e.target, op.operation_id, "approve") }, "Approve"),
      " ",
      h("button", { class: "reject", type: "button", onclick: (e) => answer(e.target, op.operation_id, "reject") }, "Reject"))
      : h("td", {}, op.approval ? h("span", { class: `chip ${op.approval.decision ?? ""}`,
        "data-testid": "approval-answer" }, answeredLine(op.approval)) : null,
      forkable(op) ? h("button", { class: "fork", type: "button", "data-testid": "fork",
        title: "a new run from before this call", onclick: (e) => fork(e.target, op.operation_id) },
      "Fork from here") : null);
    const offset = typeof op.created_at === "number" ? `+${seconds(op.created_at - run.created_at)}` : "—";
    return h("tr", { class: op.status === "unknown" ? "unknown" : waiting ? "waiting" : "",
      "data-operation-id": op.operation_id },
      h("td", {}, index + 1), h("td", { class: "muted" }, offset), h("td", {}, op.kind),
      h("td", {}, h("a", { href: operationHref(runId, op.operation_id) }, op.capability)),
      h("td", {}, op.role), h("td", {}, op.phase),
      h("td", {}, badge(op.status), op.outcome && op.outcome !== op.status ? ` ${op.outcome}` : null),
      h("td", {}, seconds(op.duration_s)), h("td", {}, hookChips(op)), h("td", {}, changeChips(op)),
      action);
  }

  let poll = null;
  async function refresh() {
    clearTimeout(poll);
    try {
      const [run, ops] = await Promise.all([call("GET", runPath(runId)),
        call("GET", `${runPath(runId)}/operations`)]);
      if (controller.signal.aborted) return;
      show(head, runFacts(run), graph(run));
      rows.replaceChildren(...ops.items.map((op, index) => row(run, op, index)));
      if (!ENDED.has(run.status) && !controller.signal.aborted) poll = setTimeout(refresh, POLL_MS);
    } catch (error) {
      if (!controller.signal.aborted) fail(error);
    }
  }

  let pending = null;
  const onEvent = (message) => {
    live.textContent = "live";
    const what = message.data.capability ?? message.data.status ?? "";
    log.append(h("li", { value: message.id }, `${message.event} ${what}`));
    clearTimeout(pending);
    pending = setTimeout(refresh, REFRESH_DELAY_MS);
  };
  refresh();
  followEvents(runId, onEvent, controller.signal).then(
    () => { if (!controller.signal.aborted) live.textContent = "finished"; }, fail);
  return () => { controller.abort(); clearTimeout(pending); clearTimeout(poll); };
}
