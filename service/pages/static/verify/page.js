// The verify page: load a hand history (fetched with a typed credential, pasted or opened
// from a file), verify it in the browser and step through its replay.

import { ALGORITHM, commitment, inDisplayOrder, shuffle } from "./fair.js";
import { readHand, replay } from "./replay.js";

const $ = (id) => document.getElementById(id);

const ENGINE = "docs/engine.md";
const RUMMY = "docs/rummy.md";

let current = null; // { hand, steps, viewpoint, index }

function item(text, attributes = {}) {
  const li = document.createElement("li");
  li.textContent = text;
  for (const [name, value] of Object.entries(attributes)) li.setAttribute(name, value);
  return li;
}

function cards(list) {
  return list.length ? list.join(" ") : "none";
}

function count(n) {
  return n === 1 ? "1 card" : `${n} cards`;
}

// --- verifying ------------------------------------------------------------------------

/** Every check of a history; returns { hand, steps, reasons, checks }. */
export async function check(text) {
  const reasons = [];
  const checks = [];
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    return { reasons: ["the hand history is not valid JSON"], checks, steps: [] };
  }
  let hand;
  try {
    hand = readHand(data);
  } catch (error) {
    return { reasons: [error.message], checks, steps: [] };
  }
  const { fairness, history } = hand;
  const seeds = fairness.client_seeds ?? [fairness.client_seed_1, fairness.client_seed_2];
  let counter = null;
  try {
    if (fairness.algorithm !== ALGORITHM) throw new Error(`unknown shuffle algorithm ${JSON.stringify(fairness.algorithm)}`);
    const computed = await commitment(fairness.server_seed);
    if (computed !== String(fairness.commitment).toLowerCase()) {
      reasons.push("the server seed's SHA-256 is not the commitment published before the hand");
    } else {
      checks.push("Commitment: SHA-256 of the revealed server seed is the commitment.");
    }
    if (fairness.client_seeds && (seeds[0] !== fairness.client_seed_1 || seeds[1] !== fairness.client_seed_2)) {
      reasons.push("client_seed_1 and client_seed_2 are not the first two client seeds");
    }
    if (data.number !== undefined && fairness.nonce !== data.number) {
      reasons.push(`the nonce ${fairness.nonce} is not the hand's number ${data.number}`);
    }
    const dealt = await shuffle(fairness.server_seed, seeds, fairness.nonce);
    counter = dealt.counter;
    const same = dealt.order.length === history.deck.length && dealt.order.every((c, i) => c === history.deck[i]);
    if (!same) {
      const at = dealt.order.findIndex((c, i) => c !== history.deck[i]);
      reasons.push(`the deck is not the one the seeds give (position ${at + 1}: ${history.deck[at]} instead of ${dealt.order[at]})`);
    } else {
      checks.push(`Deck: the seeds and nonce ${fairness.nonce} give exactly this deck order.`);
    }
  } catch (error) {
    reasons.push(error.message);
  }
  const { steps, problem, shuffles } = replay(hand);
  if (problem) reasons.push(problem);
  else checks.push(`Actions: all ${history.actions.length} replay legally from the deck to the recorded result.`);
  if (counter !== null) {
    for (const restock of shuffles) {
      const next = await shuffle(fairness.server_seed, seeds, fairness.nonce, restock.pile, counter);
      counter = next.counter;
      if (next.order.some((c, i) => c !== restock.order[i])) {
        reasons.push(`the restock of action ${restock.seq} is not the fair stream's shuffle`);
      } else {
        checks.push(`Restock of action ${restock.seq}: the stream continued gives this order.`);
      }
    }
  }
  return { hand, steps, reasons, checks };
}

function showVerdict(result) {
  const ok = result.reasons.length === 0;
  const verdict = $("verdict-text");
  verdict.textContent = ok ? "Verified" : "Not verified";
  verdict.className = `verdict ${ok ? "ok" : "bad"}`;
  $("reasons").replaceChildren(...result.reasons.map((reason) => item(`Why: ${reason}.`)));
  $("checks").replaceChildren(...result.checks.map((text) => item(text)));
}

// --- the replay -----------------------------------------------------------------------

function seatName(hand, handSeat) {
  return handSeat === null || handSeat === undefined ? "nobody" : `Seat ${hand.seats[handSeat]}`;
}

function said(hand, entry, viewer) {
  const who = seatName(hand, entry.seat);
  const mine = viewer === entry.seat;
  switch (entry.action) {
    case "DRAW_STOCK":
      if (entry.restock) return `${who} drew from a new stock shuffled from the discard pile${mine ? `: ${entry.card}` : ""}`;
      return `${who} drew from the stock${mine ? `: ${entry.card}` : ""}`;
    case "TURN_OVER":
      return `${who} turned the discard pile over and drew${mine ? `: ${entry.card}` : ""}`;
    case "TAKE_UPCARD":
      return `${who} took the upcard ${entry.card}`;
    case "DRAW_DISCARD":
      return `${who} took ${entry.card} from the discard pile`;
    case "DISCARD":
      return `${who} discarded ${entry.card}`;
    case "KNOCK":
    case "GIN":
      return `${who} knocked with ${entry.card}`;
    case "TAKE_DISCARD_AND_KNOCK":
      return `${who} took ${entry.taken} and knocked with ${entry.card}`;
    case "MELD":
      return `${who} melded ${cards(entry.cards)}`;
    case "LAY_OFF":
      return `${who} laid off ${cards(entry.cards)} on table meld ${entry.meld}`;
    case "FORFEIT":
      return entry.seat === null ? `the hand was cut short (${entry.reason})` : `${who} forfeited (${entry.reason ?? "resigned"})`;
    default:
      return `${who}: ${entry.action.toLowerCase().replaceAll("_", " ")}`;
  }
}

function render() {
  const { hand, steps, index } = current;
  const viewer = current.viewpoint;
  const step = steps[index];
  const last = steps.length - 1;
  const what = step.entry ? said(hand, step.entry, viewer) : "the deal";
  $("step").textContent = `Step ${index} of ${last}: ${what}.`;
  $("to-act").textContent = step.ended ? "Nobody: the hand has ended" : seatName(hand, step.toAct);
  $("stock").textContent = count(step.stock.length);
  const top = step.discard[step.discard.length - 1];
  $("discard").textContent = top
    ? `${top} on top; ${count(step.discard.length)}, bottom first: ${cards(step.discard)}`
    : "empty";
  $("melds").textContent = hand.game === "rummy"
    ? (step.table.length
      ? step.table.map((m, i) => {
        const laid = m.layoffs.map((l) => `; ${seatName(hand, l.seat)} laid off ${cards(l.cards)}`).join("");
        return `${i}: ${cards(m.cards)} (melded by ${seatName(hand, m.melded_by)}${laid})`;
      }).join("; ")
      : "none")
    : "none (Gin melds stay in the hand until the showdown)";
  $("holdings").replaceChildren(...step.hands.map((held, i) => {
    const seat = hand.seats[i];
    const text = i === viewer
      ? `Seat ${seat} (you): ${cards(inDisplayOrder(held))}`
      : `Seat ${seat}: ${count(held.length)}`;
    return item(text, { "data-seat": String(seat) });
  }));
  $("first").disabled = $("previous").disabled = index === 0;
  $("next").disabled = $("last").disabled = index === last;
}

function go(index) {
  if (!current) return;
  current.index = Math.max(0, Math.min(current.steps.length - 1, index));
  render();
}

function showReplay(result) {
  if (!result.hand || result.steps.length === 0) {
    current = null;
    $("replay").hidden = true;
    return;
  }
  const { hand } = result;
  const options = [["", "Spectator"], ...hand.seats.map((seat, i) => [String(i), `Seat ${seat}`])];
  $("viewpoint").replaceChildren(...options.map(([value, label]) => {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = label;
    return option;
  }));
  current = { hand, steps: result.steps, index: 0, viewpoint: null };
  $("replay").hidden = false;
  render();
}

// --- score and settlement -------------------------------------------------------------

function scoreLines(hand) {
  const { history } = hand;
  const outcome = history.outcome ?? {};
  const lines = [];
  if (hand.game === "rummy") {
    const paying = outcome.points !== null && outcome.points !== undefined;
    if (outcome.void) lines.push(`Void hand (${outcome.void}): nothing scores (${RUMMY} 5.5.4).`);
    else lines.push(`${seatName(hand, outcome.winner)} went out${outcome.went_rummy ? " and went rummy, so every payment is doubled" : ""} (${RUMMY} ${outcome.went_rummy ? "5.4.2" : "5.4.1"}).`);
    hand.seats.forEach((seat, i) => {
      const figure = paying ? `points ${outcome.points[i]}` : `penalty ${outcome.penalties?.[i]}`;
      lines.push(`Seat ${seat}: count ${outcome.counts?.[i]}, ${figure} (${RUMMY} ${paying ? "5.6.2" : "5.7.1"}).`);
    });
    return lines;
  }
  if (outcome.kind === "dead") return [`Dead hand: no points and no box (${ENGINE} 2.10).`];
  if (outcome.kind === "forfeit") return [`Ended by a forfeit: no points (${ENGINE} 9.4).`];
  const score = outcome.score ?? {};
  lines.push(`${seatName(hand, outcome.knocker)} knocked with deadwood ${score.knocker_deadwood}; the defender kept ${score.defender_deadwood} after lay-offs (${ENGINE} 2.8).`);
  lines.push(`${seatName(hand, outcome.winner)} scores ${outcome.points}: ${outcome.kind} (${ENGINE} 2.9).`);
  return lines;
}

const FORMAT_RULES = {
  first_to_knock: `${ENGINE} 6.2`,
  match_play: `${ENGINE} 6.3`,
  money_play: `${ENGINE} 6.4`,
  classic: `${ENGINE} 3.2`,
};

function settlementLines(settlement) {
  const statement = settlement.statement ?? {};
  if (Array.isArray(statement.lines)) return statement.lines.map((line) => line.text ?? `${line.reason} (${line.rule})`);
  const rule = FORMAT_RULES[statement.format] ?? "docs/engine.md 6";
  const lines = (statement.hands ?? []).map((h) => `Hand ${h.number}: ${h.kind}, ${h.points} points to ${h.winner === null ? "nobody" : `seat ${h.winner}`} (${ENGINE} 2.9).`);
  for (const [name, value] of Object.entries(statement.bonuses ?? {})) lines.push(`Bonus ${name}: ${JSON.stringify(value)} (${rule}).`);
  if (statement.final_totals) lines.push(`Final totals: ${statement.final_totals.join(", ")} (${rule}).`);
  lines.push(`Fee ${statement.fee} ${settlement.currency} on ${statement.fee_base_amount} (${ENGINE} 6.1).`);
  (statement.payouts ?? []).forEach((amount, seat) => {
    lines.push(`Seat ${seat} receives ${amount} ${settlement.currency}, net ${statement.net?.[seat]} (${rule}).`);
  });
  return lines;
}

async function showScore(hand, credential) {
  $("score").hidden = false;
  $("score-lines").replaceChildren(...scoreLines(hand).map((text) => item(text)));
  $("settlement-lines").replaceChildren();
  const matchId = hand.data.match_id;
  if (!credential || !matchId) {
    $("settlement-note").textContent = "Type a credential and fetch the hand to see the match's settlement.";
    return;
  }
  const response = await fetch(`/v1/matches/${encodeURIComponent(matchId)}/settlement`, {
    headers: { Authorization: `Bearer ${credential}` },
  });
  if (!response.ok) {
    $("settlement-note").textContent = response.status === 404
      ? "The match is not settled yet."
      : `The settlement could not be read (HTTP ${response.status}).`;
    return;
  }
  const settlement = await response.json();
  $("settlement-note").textContent = `Settlement ${settlement.id} of match ${matchId}, the whole match's:`;
  $("settlement-lines").replaceChildren(...settlementLines(settlement).map((text) => item(text)));
}

// --- wiring ---------------------------------------------------------------------------

// While a hand is being loaded or checked, the verdict region carries data-pending.
async function pending(work) {
  $("verdict").dataset.pending = "true";
  try {
    await work();
  } finally {
    delete $("verdict").dataset.pending;
  }
}

async function verifyText(credential = null) {
  $("verdict-text").textContent = "Checking…";
  $("verdict-text").className = "verdict";
  const result = await check($("history").value);
  showVerdict(result);
  showReplay(result);
  if (result.hand) await showScore(result.hand, credential);
  else $("score").hidden = true;
}

async function fetchHand() {
  const id = $("hand-id").value.trim();
  const credential = $("credential").value.trim();
  if (!id || !credential) {
    $("verdict-text").textContent = "Type the hand id and an API key or player token.";
    return;
  }
  // A hand id, or a match id and the hand's number ("mch_.../2").
  const [match, number] = id.split("/");
  const path = number === undefined
    ? `/v1/hands/${encodeURIComponent(id)}`
    : `/v1/matches/${encodeURIComponent(match)}/hands/${encodeURIComponent(number)}`;
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${credential}` },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    $("verdict-text").textContent = `Could not fetch the hand: ${body.detail ?? `HTTP ${response.status}`}`;
    $("verdict-text").className = "verdict bad";
    return;
  }
  $("history").value = JSON.stringify(body, null, 2);
  await verifyText(credential);
}

async function openFile() {
  const file = $("upload").files[0];
  if (!file) return;
  $("history").value = await file.text();
  await verifyText();
}

function keys(event) {
  if (!current || event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target.closest("input, textarea, select")) return;
  const moves = { ArrowLeft: -1, ArrowRight: 1 };
  if (event.key in moves) go(current.index + moves[event.key]);
  else if (event.key === "Home") go(0);
  else if (event.key === "End") go(current.steps.length - 1);
  else return;
  event.preventDefault();
}

function start() {
  $("verify").addEventListener("click", () => pending(() => verifyText($("credential").value.trim() || null)));
  $("fetch-form").addEventListener("submit", (event) => {
    event.preventDefault();
    pending(fetchHand);
  });
  $("upload").addEventListener("change", () => pending(openFile));
  $("first").addEventListener("click", () => go(0));
  $("previous").addEventListener("click", () => go(current.index - 1));
  $("next").addEventListener("click", () => go(current.index + 1));
  $("last").addEventListener("click", () => go(current.steps.length - 1));
  $("viewpoint").addEventListener("change", (event) => {
    current.viewpoint = event.target.value === "" ? null : Number(event.target.value);
    render();
  });
  document.addEventListener("keydown", keys);
  const query = new URLSearchParams(window.location.search);
  const id = query.get("hand") ?? (query.get("match") && `${query.get("match")}/${query.get("number") ?? 1}`);
  if (id) {
    $("hand-id").value = id;
    $("verdict-text").textContent = "Type an API key or player token that may read this hand, then Fetch.";
  }
  document.body.dataset.ready = "true";
}

start();
