// Two versions of a value side by side, the lines that differ marked: proposed vs executed
// arguments, raw vs effective results.
import { h } from "./dom.js";

export function pretty(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  return JSON.stringify(value, null, 2);
}

// The longest common subsequence of lines, walked back into same / del / add steps.
export function lineDiff(before, after) {
  const a = before.split("\n"), b = after.split("\n");
  const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
  const steps = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { steps.push(["same", a[i]]); i++; j++; }
    else if (j < b.length && (i === a.length || table[i][j + 1] >= table[i + 1][j])) steps.push(["add", b[j++]]);
    else steps.push(["del", a[i++]]);
  }
  return steps;
}

function side(title, text, steps, keep, testid) {
  const body = text === null
    ? h("pre", { class: "muted" }, "(none)")
    : h("pre", {}, steps.filter(([op]) => op === "same" || op === keep)
        .map(([op, line]) => h("span", { class: op }, line)));
  return h("div", { "data-testid": testid }, h("h3", {}, title), body);
}

export function sideBySide(leftTitle, left, rightTitle, right, testid) {
  const a = pretty(left), b = pretty(right);
  const steps = a !== null && b !== null ? lineDiff(a, b)
    : (a ?? b ?? "").split("\n").map((line) => ["same", line]);
  return h("div", { class: "sides", "data-testid": testid },
    side(leftTitle, a, steps, "del", `${testid}-left`),
    side(rightTitle, b, steps, "add", `${testid}-right`));
}
