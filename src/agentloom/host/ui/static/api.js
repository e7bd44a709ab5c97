// The /v1 client: the API key (kept in this tab's sessionStorage), JSON calls, and a run's
// event stream read with fetch streaming — EventSource cannot send the Authorization header,
// and a key in a URL would end up in logs.

const STORAGE = "agentloom.apiKey";
const RETRY_MS = 1000;

export const apiKey = {
  get: () => sessionStorage.getItem(STORAGE),
  set: (key) => sessionStorage.setItem(STORAGE, key),
  clear: () => sessionStorage.removeItem(STORAGE),
};

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code ?? null;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${apiKey.get() ?? ""}`, ...extra };
}

export async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text.slice(0, 300) }; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const runPath = (runId) => `/v1/runs/${encodeURIComponent(runId)}`;

// One SSE message block: its id, event type and JSON data; null for a comment.
function parseMessage(block) {
  const message = {};
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const cut = line.indexOf(":");
    const name = cut < 0 ? line : line.slice(0, cut);
    const value = cut < 0 ? "" : line.slice(cut + 1).replace(/^ /, "");
    message[name] = name === "data" ? JSON.parse(value) : value;
  }
  return "data" in message ? message : null;
}

// Calls onEvent for each of the run's events, in order and once each, reconnecting with
// Last-Event-ID after a dropped connection, until the run's run.finished or signal aborts.
export async function followEvents(runId, onEvent, signal) {
  let last = 0;
  while (!signal.aborted) {
    try {
      const response = await fetch(`${runPath(runId)}/events`,
        { headers: headers({ "Last-Event-ID": String(last) }), signal });
      if (!response.ok) {
        const problem = await response.json().catch(() => null);
        throw new ApiError(response.status, problem);
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer = (buffer + value).replaceAll("\r\n", "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const message = parseMessage(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (message === null) continue;
          last = Number(message.id);
          onEvent(message);
          if (message.event === "run.finished") return;
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError && error.status < 500) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
