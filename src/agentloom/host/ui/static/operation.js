// One operation in full: identity and outcome, its hook decisions, its attempts, proposed vs
// executed arguments and raw vs effective result, side by side with the changed lines marked.
import { call, runPath } from "./api.js";
import { answeredLine, badge, facts, h, runHref, seconds, show, when } from "./dom.js";
import { pretty, sideBySide } from "./diff.js";

function table(testid, columns, items) {
  if (!items.length) return h("p", { class: "muted" }, "None.");
  return h("table", { "data-testid": testid },
    h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))),
    h("tbody", {}, items.map((item) => h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(item) ?? "—"))))));
}

// Who answered the person's question about this call, when, and why.
function approvalSection(approval) {
  if (!approval) return null;
  return h("section", { "data-testid": "approval-detail" },
    h("h2", {}, "Approval ", h("span", { class: `chip ${approval.decision ?? ""}` }, approval.status)),
    h("p", {}, answeredLine(approval)),
    facts([
      ["question", approval.question], ["asked by", approval.asked_by.join(", ")],
      ["asked", when(approval.asked_at)], ["deadline", approval.deadline ? when(approval.deadline) : null],
      ["default", approval.default], ["decision", approval.decision], ["actor", approval.actor],
      ["answered", approval.answered_at ? when(approval.answered_at) : null], ["reason", approval.reason],
    ]));
}

function render(root, runId, op) {
  show(root,
    h("p", {}, h("a", { href: runHref(runId) }, "← the run's timeline")),
    h("h1", {}, `${op.kind} ${op.capability}`),
    facts([
      ["operation", op.operation_id], ["call id", op.call_id], ["role", op.role],
      ["purpose", op.purpose], ["phase", op.phase],
      ["status", h("span", { "data-testid": "operation-status" }, badge(op.status))],
      ["outcome", op.outcome], ["created", when(op.created_at)], ["duration", seconds(op.duration_s)],
      ["error", op.error ? pretty(op.error) : null], ["reason", op.reason],
      ["usage", op.usage ? pretty(op.usage) : null],
    ]),
    approvalSection(op.approval),
    h("h2", {}, "Hooks"),
    table("hooks", [["timing", (x) => x.timing], ["#", (x) => x.position], ["hook", (x) => x.hook_id],
      ["status", (x) => x.status], ["decision", (x) => x.decision], ["reason", (x) => x.reason],
      ["diagnostic", (x) => x.diagnostic ?? x.patch_error]], op.hooks),
    h("h2", {}, "Attempts"),
    table("attempts", [["#", (x) => x.attempt_no], ["status", (x) => badge(x.status)],
      ["started", (x) => when(x.started_at)], ["finished", (x) => when(x.finished_at)]], op.attempts.items),
    h("h2", {}, "Arguments ", op.arguments_changed ? h("span", { class: "chip changed" }, "rewritten by a hook") : null),
    sideBySide("proposed", op.proposed_arguments, "executed", op.executed_arguments, "arguments"),
    h("h2", {}, "Result ", op.result_changed ? h("span", { class: "chip changed" }, "changed by a hook") : null),
    sideBySide("raw", op.raw_result, "effective", op.effective_result, "result"));
}

export function operationDetail(root, runId, operationId, fail) {
  call("GET", `${runPath(runId)}/operations`).then((page) => {
    const op = page.items.find((item) => item.operation_id === operationId);
    if (op) render(root, runId, op);
    else show(root, h("p", { class: "error" }, `The run has no operation ${operationId}.`));
  }, fail);
  return () => {};
}
