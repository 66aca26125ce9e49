// The public API as the practice table uses it: every call carries the player token in the
// Authorization header (never in a URL); a problem+json answer becomes an ApiProblem.

export class ApiProblem extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "";
  }
}

const TOKEN_KEY = "gin.play.token";

// The token lives in this tab's sessionStorage (gone when the tab closes), else in memory.
let memoryToken = null;

export function loadToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || memoryToken;
  } catch {
    return memoryToken;
  }
}

export function saveToken(token) {
  memoryToken = token;
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage refused (a private window's quota): memory only
  }
}

// A fresh Idempotency-Key (crypto.randomUUID needs a secure context; this does not).
export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function call(method, path, { body, key, signal } = {}) {
  const headers = { Accept: "application/json", Authorization: `Bearer ${loadToken()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Idempotency-Key"] = key;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiProblem(response.status, answer);
  return answer;
}

export const api = {
  lobby: () => call("GET", "/v1/tables?currency=XPM&limit=50"),
  table: (id) => call("GET", `/v1/tables/${encodeURIComponent(id)}`),
  sit: (id, body) =>
    call("POST", `/v1/tables/${encodeURIComponent(id)}/seats`, { body, key: newKey() }),
  view: (id) => call("GET", `/v1/matches/${encodeURIComponent(id)}`),
  // The long-poll: answers once the match is past `version`, or after `timeout` seconds.
  waitPast: (id, version, signal) =>
    call("GET", `/v1/matches/${encodeURIComponent(id)}?wait_for_version=${version}&timeout=25`, {
      signal,
    }),
  act: (id, body) => call("POST", `/v1/matches/${encodeURIComponent(id)}/actions`, { body }),
  tournaments: () => call("GET", "/v1/tournaments?currency=XPM&status=open&limit=50"),
  tournament: (id) => call("GET", `/v1/tournaments/${encodeURIComponent(id)}`),
  enter: (id) =>
    call("POST", `/v1/tournaments/${encodeURIComponent(id)}/entries`, { key: newKey() }),
};
