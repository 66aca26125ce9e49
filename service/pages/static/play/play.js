// The practice table: token, lobby, and one match played (or watched) by clicking. Every
// change of a match comes from the API: a seat, an action's answer, or the long-poll on the
// match's version (GET /v1/matches/{id}?wait_for_version=N), never a timer. A practice
// tournament the person entered is read (GET /v1/tournaments/{id}) every
// TOURNAMENT_POLL_MS while they are not playing a live match of it (the API has no
// tournament stream yet); their next match opens as soon as a read shows it dealt.
import { ApiProblem, api, loadToken, saveToken } from "./api.js";
import { GAME_NAMES, cardFace, handLine, isRed, offers, readView, resultLine } from "./model.js";
import { bracketRounds, myMatch, offerLine, placeRows, stateLine } from "./tournament.js";

const $ = (id) => document.getElementById(id);
// The match the player sits in, kept in the tab so that the lobby can lead back to it.
const MATCH_KEY = "gin.play.match";
// The practice tournament the player entered, kept in the tab like the match.
const TOURNAMENT_KEY = "gin.play.tournament";
const TOURNAMENT_POLL_MS = 1000;

const state = {
  matchId: null,
  view: null, // the newest view shown
  mode: null, // what a click on a card does: a mode's name from offers()
  busy: false, // an action is on its way
  resigning: false,
  watcher: null, // the long-poll's AbortController
  focus: null, // the name of the hand's or actions' button that has the keyboard focus
  tournament: null, // the followed tournament: {id, view, timer, opened: match ids opened}
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

function showProblem(error) {
  if (error && error.name === "AbortError") return;
  const text = error instanceof ApiProblem ? `${error.message} (${error.code || error.status})` : String(error);
  $("problem").textContent = text;
  if (error instanceof ApiProblem && (error.status === 401 || error.code === "token_expired")) {
    forget("The token was refused: paste a fresh one.");
  }
}

function clearProblem() {
  $("problem").textContent = "";
}

// --- the token ---------------------------------------------------------------------------

// A link may hand the token over in its fragment (#token=...): never sent to a server, moved
// into sessionStorage and wiped from the address bar at once.
function tokenFromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) {
    saveToken(token.trim());
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function forget(message = "") {
  stopWatching();
  stopTournament();
  saveToken(null);
  try {
    sessionStorage.removeItem(MATCH_KEY);
    sessionStorage.removeItem(TOURNAMENT_KEY);
  } catch {
    // nothing kept
  }
  state.matchId = null;
  $("token-form").hidden = false;
  $("token-held").hidden = true;
  $("lobby").hidden = true;
  $("table").hidden = true;
  $("tournament").hidden = true;
  $("problem").textContent = message;
}

function useToken() {
  $("token-form").hidden = true;
  $("token-held").hidden = false;
  showLobby();
}

// --- the lobby ---------------------------------------------------------------------------

async function showLobby() {
  stopWatching();
  stopTournament();
  state.matchId = null;
  $("table").hidden = true;
  $("tournament").hidden = true;
  $("lobby").hidden = false;
  $("resume-row").hidden = !remembered();
  $("tournament-resume-row").hidden = !rememberedTournament();
  try {
    const [page, tournaments] = await Promise.all([api.lobby(), api.tournaments()]);
    renderLobby(page.data.filter((t) => t.practice && t.status === "open"));
    renderTournaments(tournaments.data.filter((t) => t.practice));
  } catch (error) {
    showProblem(error);
  }
}

function money(m) {
  return m ? `${(m.amount / 100).toFixed(2)} ${m.currency}` : "";
}

function renderTournaments(tournaments) {
  $("tournaments-empty").hidden = tournaments.length > 0;
  $("tournaments").replaceChildren(
    ...tournaments.map((t) =>
      el(
        "li",
        { class: "table-entry" },
        el("span", { class: "table-name", text: t.name }),
        el("span", { text: offerLine(t) }),
        el(
          "span",
          { class: "row" },
          el("button", { type: "button", "aria-label": `Enter ${t.name} (${t.id})`, text: "Enter", onclick: () => enter(t) }),
        ),
      ),
    ),
  );
}

async function enter(t) {
  clearProblem();
  try {
    const entered = await api.enter(t.id);
    followTournament(entered.id, entered);
  } catch (error) {
    showProblem(error);
  }
}

// --- a practice tournament -----------------------------------------------------------------

function rememberedTournament() {
  try {
    return sessionStorage.getItem(TOURNAMENT_KEY);
  } catch {
    return null;
  }
}

function stopTournament() {
  if (state.tournament) clearTimeout(state.tournament.timer);
  state.tournament = null;
}

// Show the tournament `id` (its view `first` if at hand) and follow it to its end.
function followTournament(id, first = null) {
  stopTournament();
  try {
    sessionStorage.setItem(TOURNAMENT_KEY, id);
  } catch {
    // no storage: no way back but entering again
  }
  state.tournament = { id, view: null, timer: null, opened: new Set() };
  $("lobby").hidden = true;
  $("tournament").hidden = false;
  $("tournament-heading").textContent = first ? first.name : "Tournament";
  $("tournament-state").textContent = "Loading the tournament…";
  if (first) showTournament(first);
  readTournament(id);
}

// The live match being played now is the person's: its long-poll drives the page meanwhile.
function playingLive() {
  const view = state.view;
  return Boolean(
    view && state.matchId === view.id && view.status === "playing" && view.you !== null && view.you !== undefined,
  );
}

async function readTournament(id) {
  const followed = state.tournament;
  if (!followed || followed.id !== id) return;
  if (!playingLive()) {
    try {
      showTournament(await api.tournament(id));
    } catch (error) {
      showProblem(error);
    }
  }
  const view = followed.view;
  if (state.tournament === followed && !(view && (view.status === "finished" || view.status === "cancelled"))) {
    followed.timer = setTimeout(() => readTournament(id), TOURNAMENT_POLL_MS);
  }
}

function showTournament(t) {
  const followed = state.tournament;
  if (!followed || followed.id !== t.id) return;
  followed.view = t;
  $("tournament-heading").textContent = t.name;
  say($("tournament-state"), stateLine(t));
  const bracket = $("bracket");
  if (t.kind === "knockout") {
    bracket.replaceChildren(
      ...bracketRounds(t).map((round) =>
        el("div", {}, el("h3", { text: round.title }), el("ul", {}, ...round.lines.map((line) => el("li", { text: line })))),
      ),
    );
  } else {
    const seated = t.table ? `Seated in this order: ${t.table.seats.map((seat) => (seat === t.you ? `Seat ${seat} (you)` : `Seat ${seat}`)).join(", ")}.` : "";
    bracket.replaceChildren(el("p", { text: seated }));
  }
  $("places").tBodies[0].replaceChildren(
    ...placeRows(t).map((row) => el("tr", {}, el("td", { text: row.place }), el("td", { text: row.who }), el("td", { text: row.prize }))),
  );
  if (t.status === "finished" || t.status === "cancelled") {
    try {
      if (sessionStorage.getItem(TOURNAMENT_KEY) === t.id) sessionStorage.removeItem(TOURNAMENT_KEY);
    } catch {
      // nothing kept
    }
  }
  const next = myMatch(t);
  if (next && !followed.opened.has(next) && state.matchId !== next) {
    followed.opened.add(next);
    openMatch(next);
  }
}

function renderLobby(tables) {
  const list = $("tables");
  list.replaceChildren();
  $("lobby-empty").hidden = tables.length > 0;
  for (const table of tables) {
    const game = GAME_NAMES[table.game] || table.game;
    const taken = table.seat_count - table.free_seats;
    const stake = table.stake ? `stake ${money(table.stake)}` : `buy-in ${money(table.max_buyin)}`;
    list.append(
      el(
        "li",
        { class: "table-entry" },
        el("span", { class: "table-name", text: table.name }),
        el("span", { text: `${game}, ${table.format.replaceAll("_", " ")}` }),
        el("span", { text: `${taken} of ${table.seat_count} seats taken, ${stake}` }),
        el(
          "span",
          { class: "row" },
          el("button", { type: "button", "aria-label": `Sit at ${table.name} (${table.id})`, text: "Sit", onclick: () => sit(table) }),
          el("button", { type: "button", "aria-label": `Watch ${table.name} (${table.id})`, text: "Watch", onclick: () => openMatch(table.match_id) }),
        ),
      ),
    );
  }
}

async function sit(table) {
  clearProblem();
  const body = table.min_buyin ? { buyin: table.max_buyin.amount } : {};
  try {
    const seated = await api.sit(table.id, body);
    await openMatch(seated.match_id);
  } catch (error) {
    showProblem(error);
  }
}

// --- one match ---------------------------------------------------------------------------

async function openMatch(matchId) {
  clearProblem();
  stopWatching();
  Object.assign(state, { matchId, view: null, mode: null, resigning: false });
  $("result").textContent = "";
  $("turn").textContent = "Loading the match…";
  $("lobby").hidden = true;
  $("table").hidden = false;
  try {
    show(await api.view(matchId), true);
  } catch (error) {
    showLobby();
    showProblem(error);
    return;
  }
  watch(matchId);
}

function remember(view) {
  try {
    const seated = view.you !== null && view.you !== undefined;
    if (seated && (view.status === "playing" || view.status === "waiting")) {
      sessionStorage.setItem(MATCH_KEY, view.id);
    } else if (sessionStorage.getItem(MATCH_KEY) === view.id) {
      sessionStorage.removeItem(MATCH_KEY);
    }
  } catch {
    // no storage: no way back but the match id
  }
}

function remembered() {
  try {
    return sessionStorage.getItem(MATCH_KEY);
  } catch {
    return null;
  }
}

function stopWatching() {
  if (state.watcher) state.watcher.abort();
  state.watcher = null;
}

// One long-poll at a time, for as long as the match is shown and live.
async function watch(matchId) {
  const controller = new AbortController();
  state.watcher = controller;
  while (!controller.signal.aborted && state.matchId === matchId) {
    const view = state.view;
    if (view && view.status !== "playing" && view.status !== "waiting") return;
    try {
      show(await api.waitPast(matchId, view ? view.version : 0, controller.signal));
    } catch (error) {
      if (controller.signal.aborted) return;
      showProblem(error);
      await new Promise((resolve) => setTimeout(resolve, 3000)); // the network came back?
    }
  }
}

// Draw `view` unless a newer one is already shown.
function show(view, first = false) {
  if (view.id !== state.matchId) return;
  if (!first && state.view && view.version <= state.view.version) return;
  if (!state.view || state.view.version !== view.version) state.mode = null;
  state.view = view;
  remember(view);
  render();
}

function render() {
  const view = state.view;
  const seen = readView(view);
  const game = GAME_NAMES[seen.game] || seen.game;
  $("table-heading").textContent = `${game}, ${view.format.replaceAll("_", " ")}`;
  $("status").dataset.version = view.version;
  announce(view, seen);
  renderPlayers(view, seen);
  renderPiles(seen);
  renderHand(view, seen);
  keepFocus();
}

const nameOfButton = (button) => button.getAttribute("aria-label") || button.textContent;

// Redrawing replaces the buttons: a keyboard player's focus goes back to the button of the
// same name, else to the first one that can be pressed (once one can).
function keepFocus() {
  if (state.focus === null || document.activeElement !== document.body) return;
  const buttons = [...document.querySelectorAll("#hand button, #actions button")];
  const next =
    buttons.find((b) => !b.disabled && nameOfButton(b) === state.focus) ||
    buttons.find((b) => !b.disabled);
  if (next) next.focus();
}

function announce(view, seen) {
  const records = [];
  if (view.previous_hand) records.push(view.previous_hand);
  if (view.play && Array.isArray(view.play.hands)) records.push(...view.play.hands);
  const latest = Math.max(...records.map((r) => r.number));
  // A partnership deal ends at two tables: a line each.
  const lines = records.filter((r) => r.number === latest).map((r) => handLine(r, seen.nameOf));
  if (view.status === "finished" || view.status === "void") lines.push(resultLine(view, seen.nameOf));
  say($("result"), lines.join(" "));
  let turn;
  if (view.status === "waiting" || view.status === "open") turn = "Waiting for the table to fill…";
  else if (view.status === "cancelled") turn = "The table was cancelled before it filled: every stake went back.";
  else if (view.status !== "playing") turn = "";
  else if (view.you === null || view.you === undefined) {
    turn = `Watching: ${seen.toAct.map(seen.nameOf).join(", ") || "nobody"} to act.`;
  } else if (seen.forfeited) {
    turn = "You resigned: the others play on to the match's end.";
  } else if (seen.toAct.includes(view.you) && seen.mine && seen.mine.legal.length) {
    turn = "Your turn.";
  } else if (!seen.mine) turn = "You sit out this hand.";
  else turn = `Waiting for ${seen.toAct.map(seen.nameOf).join(", ") || "the deal"}…`;
  say($("turn"), turn);
}

// The status region is announced by screen readers on change: only a change is written.
function say(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function renderPlayers(view, seen) {
  const counts = new Map();
  for (const table of seen.tables) {
    table.seats.forEach((seat, i) => counts.set(seat, table.counts[i]));
  }
  $("players").replaceChildren(
    ...view.seats.map((s) => {
      const who = s.seat === view.you ? `${seen.nameOf(s.seat)} (you)` : seen.nameOf(s.seat);
      const facts = [counts.has(s.seat) ? `${counts.get(s.seat)} cards` : "not dealt in"];
      const points = seen.pointsOf(s.seat);
      if (points !== null && points !== undefined) facts.push(`${points} points`);
      const team = seen.teamOf(s.seat);
      if (team >= 0 && s.seat !== view.you && team === seen.teamOf(view.you)) facts.push("your partner");
      const acting = seen.toAct.includes(s.seat);
      if (acting) facts.push("to act");
      return el("li", { class: acting ? "acting" : "" }, el("strong", { text: who }), ` ${facts.join(", ")}`);
    }),
  );
}

function renderPiles(seen) {
  const piles = $("piles");
  piles.replaceChildren();
  const melds = $("melds");
  melds.replaceChildren();
  melds.hidden = true;
  seen.tables.forEach((table) => {
    const names = table.seats.map(seen.nameOf).join(" and ");
    const top = table.discard[table.discard.length - 1];
    piles.append(
      el(
        "p",
        { "data-seats": table.seats.join(" ") },
        seen.tables.length > 1 ? `${names}: ` : "",
        `Stock ${table.stock} cards. Discard pile: `,
        top ? el("span", { class: `card-face${isRed(top) ? " red" : ""}`, "aria-label": top, text: cardFace(top) }) : "empty",
      ),
    );
    if (table.melds && table.melds.length) {
      melds.hidden = false;
      melds.append(el("h3", { text: "Melds on the table" }));
      table.melds.forEach((meld, i) => {
        melds.append(
          el(
            "p",
            {},
            `Meld ${i + 1}: `,
            ...meld.cards.map((c) => el("span", { class: `card-face${isRed(c) ? " red" : ""}`, "aria-label": c, text: cardFace(c) })),
          ),
        );
      });
    }
  });
}

function renderHand(view, seen) {
  const hand = $("hand");
  const actions = $("actions");
  const live = view.status === "playing";
  const { buttons, modes } = offers(live ? seen.mine : null);
  if (state.mode && !modes.some((m) => m.name === state.mode)) state.mode = null;
  const mode = modes.find((m) => m.name === state.mode) || modes.find((m) => m.kind === "DISCARD");
  hand.hidden = !seen.mine;
  hand.replaceChildren(
    ...(seen.mine ? seen.mine.cards : []).map((code) => {
      const action = mode && mode.cards.get(code);
      return el("button", {
        type: "button",
        class: `card${isRed(code) ? " red" : ""}`,
        "aria-label": code,
        text: cardFace(code),
        disabled: state.busy || !action,
        onclick: () => act(action),
      });
    }),
  );
  const row = [];
  for (const { name, action } of buttons) {
    row.push(el("button", { type: "button", text: name, disabled: state.busy, onclick: () => act(action) }));
  }
  for (const m of modes) {
    if (m.kind === "DISCARD") continue;
    const pressed = state.mode === m.name;
    row.push(
      el("button", {
        type: "button",
        text: m.name,
        "aria-pressed": String(pressed),
        disabled: state.busy,
        onclick: () => {
          state.mode = pressed ? null : m.name;
          render();
        },
      }),
    );
  }
  if (mode && mode.kind !== "DISCARD") {
    row.push(el("span", { class: "hint", text: `Pick the card to discard as you ${mode.name.toLowerCase()}.` }));
  }
  if (live && view.you !== null && view.you !== undefined && !seen.forfeited) {
    if (state.resigning) {
      row.push(
        el("button", { type: "button", class: "danger", text: "Confirm resign", disabled: state.busy, onclick: () => act({ action: "RESIGN" }) }),
        el("button", { type: "button", text: "Keep playing", onclick: () => { state.resigning = false; render(); } }),
      );
    } else {
      row.push(el("button", { type: "button", class: "danger", text: "Resign", onclick: () => { state.resigning = true; render(); } }));
    }
  }
  actions.replaceChildren(...row);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function act(action) {
  if (!action || state.busy) return;
  state.busy = true;
  state.resigning = false;
  clearProblem();
  render();
  try {
    // At partnership Gin the other table plays on meanwhile and moves the match's version:
    // a 409 is read again and the action sent again while the fresh view still lists it.
    for (let attempt = 0; ; attempt += 1) {
      const view = state.view;
      try {
        show(await api.act(view.id, { ...action, expected_version: view.version }));
        break;
      } catch (error) {
        if (!(error instanceof ApiProblem) || error.code !== "stale_version" || attempt >= 3) throw error;
        show(await api.view(view.id));
        const mine = readView(state.view).mine;
        const still = action.action === "RESIGN" || (mine && mine.legal.some((a) => same(a, action)));
        if (!still) break;
      }
    }
  } catch (error) {
    showProblem(error);
    try {
      show(await api.view(state.view.id)); // the match moved on: draw where it is
    } catch (again) {
      showProblem(again);
    }
  } finally {
    state.busy = false;
    render();
  }
}

// --- wiring ------------------------------------------------------------------------------

function start() {
  tokenFromFragment();
  document.addEventListener("focusin", (event) => {
    const inPlay = event.target.closest && event.target.closest("#hand, #actions");
    state.focus = inPlay ? nameOfButton(event.target) : null;
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    if (!token) return;
    saveToken(token);
    clearProblem();
    useToken();
  });
  $("forget").addEventListener("click", () => forget());
  $("refresh").addEventListener("click", () => showLobby());
  $("back").addEventListener("click", () => showLobby());
  $("tournament-back").addEventListener("click", () => showLobby());
  $("resume").addEventListener("click", () => openMatch(remembered()));
  $("tournament-resume").addEventListener("click", () => followTournament(rememberedTournament()));
  $("watch-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("watch-match").value.trim();
    if (id) openMatch(id);
  });
  if (loadToken()) useToken();
}

start();
