// Building the page from data. Every value becomes a text node or an attribute set through the
// DOM API — never parsed as HTML — because tasks, model output and tool results are hostile text.

export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function show(root, ...children) {
  root.replaceChildren();
  append(root, children);
}

export const badge = (status) => h("span", { class: `badge ${status}` }, status ?? "—");

export function when(epoch) {
  return typeof epoch === "number" ? new Date(epoch * 1000).toLocaleString() : "—";
}

export function seconds(value) {
  if (typeof value !== "number") return "—";
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`;
}

export const runHref = (runId) => `#/runs/${encodeURIComponent(runId)}`;
export const operationHref = (runId, operationId) =>
  `${runHref(runId)}/operations/${encodeURIComponent(operationId)}`;

export function facts(pairs) {
  return h("dl", { class: "facts" },
    pairs.filter(([, value]) => value !== undefined).map(([name, value]) =>
      [h("dt", {}, name), h("dd", {}, value === null ? "—" : value)]));
}

// An approval's answer on one line, beside the call it answered: "approved by alice at …
// (reason: …)"; the default that applied once it expired.
export function answeredLine(approval) {
  if (approval.status === "pending") return `waits for a person: ${approval.question}`;
  const at = when(approval.answered_at);
  if (approval.status === "expired") return `expired at ${at} (the default, ${approval.default}, applied)`;
  const by = approval.actor ? ` by ${approval.actor}` : "";
  const why = approval.reason ? ` (reason: ${approval.reason})` : "";
  return `${approval.status}${by} at ${at}${why}`;
}
