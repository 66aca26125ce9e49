// Replaying a finished hand from its history: the deck in deal order and the actions fix
// every state. Two-player Gin (docs/engine.md 2; three-player and partnership Gin play the
// same two-player hands, docs/multiplayer-gin.md) and Rummy (docs/rummy.md 5, 11). Every
// card an action names must be where the replay says it is, every actor must be the seat
// to act and every action legal in its phase; the first one that is not stops the replay
// and is reported. Nothing here touches the network or the page.

import { cardIndex, inDisplayOrder } from "./fair.js";

const POINTS = { A: 1, T: 10, J: 10, Q: 10, K: 10 };

function rankOf(code) {
  return "A23456789TJQK".indexOf(code[0]) + 1;
}

/** A card's points (1.3); Rummy's ace counts `acePoints`. */
export function cardPoints(code, acePoints = 1) {
  if (code[0] === "A") return acePoints;
  return POINTS[code[0]] ?? Number(code[0]);
}

function sameCards(a, b) {
  if (a.length !== b.length) return false;
  const x = inDisplayOrder(a);
  const y = inDisplayOrder(b);
  return x.every((code, i) => code === y[i]);
}

function without(cards, gone) {
  return cards.filter((code) => !gone.includes(code));
}

/** Whether `cards` are a set or a run; `aceHigh` lets an ace follow the king (Rummy 1.7). */
export function isMeld(cards, aceHigh = false) {
  if (cards.length < 3 || new Set(cards).size !== cards.length) return false;
  if (cards.some((code) => cardIndex(code) < 0)) return false;
  if (cards.every((code) => code[0] === cards[0][0])) return cards.length <= 4;
  if (!cards.every((code) => code[1] === cards[0][1])) return false;
  const consecutive = (ranks) => ranks.every((r, i) => i === 0 || r === ranks[i - 1] + 1);
  const low = cards.map(rankOf).sort((a, b) => a - b);
  if (consecutive(low)) return true;
  return aceHigh && consecutive(low.map((r) => (r === 1 ? 14 : r)).sort((a, b) => a - b));
}

/** The least deadwood of a Gin hand (1.9): every arrangement of disjoint melds tried. */
export function leastDeadwood(cards) {
  const n = cards.length;
  const melds = [];
  for (let mask = 1; mask < 1 << n; mask += 1) {
    const chosen = cards.filter((_, i) => mask & (1 << i));
    if (chosen.length >= 3 && isMeld(chosen)) melds.push(mask);
  }
  const points = cards.map((code) => cardPoints(code));
  const best = new Map();
  const least = (free) => {
    if (best.has(free)) return best.get(free);
    let result = points.reduce((sum, p, i) => (free & (1 << i) ? sum + p : sum), 0);
    for (const meld of melds) {
      if ((meld & free) === meld) result = Math.min(result, least(free & ~meld));
    }
    best.set(free, result);
    return result;
  };
  return least((1 << n) - 1);
}

class Mismatch extends Error {}

function fail(message) {
  throw new Mismatch(message);
}

/** The hand to replay, read from a history answer (GET /v1/hands/{id}); throws on bad data. */
export function readHand(data) {
  if (typeof data !== "object" || data === null) fail("the history is not a JSON object");
  const { fairness, history } = data;
  if (typeof fairness !== "object" || fairness === null) fail("the history has no fairness block");
  if (typeof history !== "object" || history === null) fail("the history has no history block");
  if (!Array.isArray(history.deck) || !Array.isArray(history.actions)) {
    fail("the history has no deck or no actions");
  }
  const game = history.game === "rummy" ? "rummy" : "gin";
  const players = game === "rummy" ? history.players : 2;
  const seats = history.seats ?? fairness.seats ?? [...Array(players).keys()];
  if (!Number.isInteger(players) || !Array.isArray(seats) || seats.length !== players) {
    fail("the history's seats do not match its players");
  }
  return { data, game, players, seats, fairness, history };
}

/** One replayed position: the state after `index` actions (0: the deal). */
function snapshot(state, index, entry) {
  return JSON.parse(JSON.stringify({ ...state, index, entry: entry ?? null }));
}

function describe(entry) {
  return `action ${entry.seq ?? "?"} (${entry.action}${entry.seat == null ? "" : ` by hand seat ${entry.seat}`})`;
}

function checkDeck(deck) {
  const seen = new Set(deck);
  if (deck.length !== 52 || seen.size !== 52 || deck.some((code) => cardIndex(code) < 0)) {
    fail("the deck is not 52 different cards");
  }
}

// --- two-player Gin -------------------------------------------------------------------

function dealGin(history) {
  const { deck } = history;
  const dealer = history.dealer;
  if (dealer !== 0 && dealer !== 1) fail(`the dealer ${JSON.stringify(dealer)} is not seat 0 or 1`);
  const first = 1 - dealer;
  const hands = [[], []];
  for (let i = 0; i < 20; i += 1) hands[i % 2 === 0 ? first : dealer].push(deck[i]);
  if (history.upcard !== undefined && history.upcard !== deck[20]) {
    fail(`the upcard ${history.upcard} is not the deck's 21st card ${deck[20]}`);
  }
  const opening = history.ruleset?.opening ?? "PASS_SEQUENCE";
  return {
    hands,
    stock: deck.slice(21),
    discard: [deck[20]],
    table: [],
    toAct: first,
    phase: opening === "PASS_SEQUENCE" ? "OFFER_1" : "DRAW",
    taken: null,
    ended: false,
    dealer,
  };
}

const DEAD_STOCK = 2;

function applyGin(s, entry, ruleset) {
  const kind = entry.action;
  const seat = entry.seat;
  if (kind === "FORFEIT") {
    if (seat !== null && seat !== 0 && seat !== 1) fail(`${describe(entry)}: no such seat`);
    Object.assign(s, { ended: true, phase: "ENDED", endedBy: "forfeit", forfeiter: seat, toAct: null });
    return;
  }
  if (seat !== s.toAct) fail(`${describe(entry)}: it was hand seat ${s.toAct}'s turn`);
  const hand = s.hands[seat];
  const top = s.discard[s.discard.length - 1];
  const holds = (card) => {
    if (!hand.includes(card)) fail(`${describe(entry)}: ${card} is not in that hand`);
    if (card === s.taken) fail(`${describe(entry)}: ${card} was taken from the discard pile this turn`);
  };
  const allowed = {
    PASS: ["OFFER_1", "OFFER_2"],
    TAKE_UPCARD: ["OFFER_1", "OFFER_2"],
    DRAW_STOCK: ["DRAW", "FIRST_DRAW"],
    DRAW_DISCARD: ["DRAW"],
    DISCARD: ["DISCARD"],
    KNOCK: ["DISCARD"],
    GIN: ["DISCARD"],
    BIG_GIN: ["DISCARD"],
    TAKE_DISCARD_AND_KNOCK: ["LAST_CHANCE"],
    DECLINE: ["LAST_CHANCE"],
  }[kind];
  if (!allowed) fail(`${describe(entry)}: not a Gin action`);
  if (!allowed.includes(s.phase)) fail(`${describe(entry)}: not allowed in ${s.phase}`);
  if (kind === "PASS") {
    [s.phase, s.toAct] = s.phase === "OFFER_1" ? ["OFFER_2", s.dealer] : ["FIRST_DRAW", 1 - s.dealer];
  } else if (kind === "TAKE_UPCARD" || kind === "DRAW_DISCARD") {
    if (entry.card !== top) fail(`${describe(entry)}: ${entry.card} is not the top of the discard pile (${top})`);
    s.discard.pop();
    hand.push(top);
    s.taken = top;
    s.phase = "DISCARD";
  } else if (kind === "DRAW_STOCK") {
    if (entry.card !== s.stock[0]) fail(`${describe(entry)}: ${entry.card} is not the top of the stock`);
    hand.push(s.stock.shift());
    s.taken = null;
    if (ruleset.dead_hand_rule === "IMMEDIATE" && s.stock.length <= DEAD_STOCK) {
      Object.assign(s, { ended: true, phase: "ENDED", endedBy: "dead", toAct: null });
    } else {
      s.phase = "DISCARD";
    }
  } else if (kind === "DISCARD") {
    holds(entry.card);
    s.hands[seat] = without(hand, [entry.card]);
    s.discard.push(entry.card);
    s.taken = null;
    if (s.stock.length <= DEAD_STOCK) {
      if (ruleset.dead_hand_rule === "FIFTIETH_CARD") {
        [s.phase, s.toAct] = ["LAST_CHANCE", 1 - seat];
      } else {
        Object.assign(s, { ended: true, phase: "ENDED", endedBy: "dead", toAct: null });
      }
    } else {
      [s.phase, s.toAct] = ["DRAW", 1 - seat];
    }
  } else if (kind === "KNOCK" || kind === "GIN") {
    holds(entry.card);
    s.hands[seat] = without(hand, [entry.card]);
    Object.assign(s, { ended: true, phase: "ENDED", endedBy: "knock", knocker: seat, knockCard: entry.card, toAct: null, taken: null });
  } else if (kind === "BIG_GIN") {
    Object.assign(s, { ended: true, phase: "ENDED", endedBy: "knock", knocker: seat, knockCard: null, toAct: null, taken: null });
  } else if (kind === "TAKE_DISCARD_AND_KNOCK") {
    if (entry.taken !== top) fail(`${describe(entry)}: ${entry.taken} is not the top of the discard pile (${top})`);
    if (entry.card === top || !hand.includes(entry.card)) fail(`${describe(entry)}: ${entry.card} is not in that hand`);
    s.discard.pop();
    s.hands[seat] = without([...hand, top], [entry.card]);
    Object.assign(s, { ended: true, phase: "ENDED", endedBy: "knock", knocker: seat, knockCard: entry.card, toAct: null, taken: null });
  } else if (kind === "DECLINE") {
    Object.assign(s, { ended: true, phase: "ENDED", endedBy: "dead", toAct: null });
  }
}

/** The showdown and score of 2.8-2.9 against the replay's final hands. */
function checkGinOutcome(s, history) {
  const outcome = history.outcome ?? {};
  const ruleset = history.ruleset ?? {};
  const expectedKind = { dead: "dead", forfeit: "forfeit" }[s.endedBy];
  if (expectedKind) {
    if (outcome.kind !== expectedKind) fail(`the outcome is ${outcome.kind}, the replay ends ${expectedKind}`);
    if (outcome.points !== 0) fail("a hand without a showdown scores no points");
    const winner = s.endedBy === "forfeit" && s.forfeiter !== null ? 1 - s.forfeiter : null;
    if (outcome.winner !== winner) fail("the outcome names another winner than the replay");
    return;
  }
  const score = outcome.score ?? {};
  if (outcome.knocker !== s.knocker) fail("the outcome names another knocker than the replay");
  if ((outcome.knock_card ?? null) !== s.knockCard) fail("the outcome names another knock card than the replay");
  const knocker = score.knocker ?? {};
  const defender = score.defender ?? {};
  const parts = (side) => [...(side.melds ?? []).flat(), ...(side.laid_off ?? []), ...(side.unmatched ?? [])];
  if (!sameCards(parts(knocker), s.hands[s.knocker])) fail("the knocker's shown cards are not its hand");
  if (!sameCards(parts(defender), s.hands[1 - s.knocker])) fail("the defender's shown cards are not its hand");
  for (const meld of [...(knocker.melds ?? []), ...(defender.melds ?? [])]) {
    if (!isMeld(meld)) fail(`${meld.join(" ")} is not a meld`);
  }
  const count = (cards) => cards.reduce((sum, code) => sum + cardPoints(code), 0);
  const k = count(knocker.unmatched ?? []);
  const d = count(defender.unmatched ?? []);
  if (k !== score.knocker_deadwood || d !== score.defender_deadwood) fail("the deadwood counts do not add up");
  if (k !== leastDeadwood(s.hands[s.knocker])) fail("the knocker's arrangement does not leave its least deadwood");
  const own = leastDeadwood(s.hands[1 - s.knocker]);
  if (k === 0 ? d !== own : d > own) fail("the defender's deadwood is not what its cards leave");
  const m = history.multiplier ?? 1;
  let kind;
  let points;
  let winner;
  if (score.kind === "big_gin") {
    [kind, points, winner] = ["big_gin", m * ((ruleset.big_gin_bonus ?? 31) + d), s.knocker];
  } else if (k === 0) {
    [kind, points, winner] = ["gin", m * ((ruleset.gin_bonus ?? 25) + d), s.knocker];
  } else if (k > (history.knock_limit ?? 10)) {
    fail(`the knocker's deadwood ${k} is over the knock limit`);
  } else if (k < d) {
    [kind, points, winner] = ["knock", m * (d - k), s.knocker];
  } else {
    [kind, points, winner] = ["undercut", m * (k - d + (ruleset.undercut_bonus ?? 25)), 1 - s.knocker];
  }
  if (outcome.kind !== kind || outcome.points !== points || outcome.winner !== winner) {
    fail(`the score says ${outcome.kind} for ${outcome.points}, the cards make it ${kind} for ${points}`);
  }
}

// --- Rummy ----------------------------------------------------------------------------

const DEAL_SIZE = { 2: 10, 3: 7, 4: 7, 5: 6, 6: 6 };

function dealRummy(history) {
  const { deck, players, dealer } = history;
  if (!DEAL_SIZE[players]) fail(`a Rummy hand has 2-6 players, not ${players}`);
  if (!Number.isInteger(dealer) || dealer < 0 || dealer >= players) fail("the dealer is not a seat");
  const dealt = DEAL_SIZE[players] * players;
  const hands = Array.from({ length: players }, () => []);
  for (let i = 0; i < dealt; i += 1) hands[(dealer + 1 + i) % players].push(deck[i]);
  return {
    hands,
    stock: deck.slice(dealt + 1),
    discard: [deck[dealt]],
    table: [],
    toAct: (dealer + 1) % players,
    phase: "DRAW",
    taken: null,
    ended: false,
    dealer,
    laidThisTurn: false,
    laidBefore: Array(players).fill(false),
    forfeited: Array(players).fill(false),
    restocks: 0,
    turns: 0,
  };
}

function nextActive(s, seat) {
  const n = s.hands.length;
  for (let step = 1; step <= n; step += 1) {
    const candidate = (seat + step) % n;
    if (!s.forfeited[candidate]) return candidate;
  }
  return null;
}

function endRummy(s, winner, voidReason, wentRummy = false) {
  Object.assign(s, { ended: true, phase: "ENDED", toAct: null, taken: null, winner, void: voidReason, wentRummy });
}

function startRummyTurn(s, seat, rules) {
  Object.assign(s, { toAct: seat, phase: "DRAW", taken: null, laidThisTurn: false });
  if (s.stock.length === 0) {
    if (s.discard.length === 0) endRummy(s, null, "NO_CARDS");
    else if (s.restocks >= (rules.max_restocks ?? 3)) endRummy(s, null, "MAX_RESTOCKS");
  }
}

function applyRummy(s, entry, rules, shuffles) {
  const kind = entry.action;
  const seat = entry.seat;
  const n = s.hands.length;
  if (!Number.isInteger(seat) || seat < 0 || seat >= n) fail(`${describe(entry)}: no such seat`);
  if (kind === "FORFEIT") {
    if (s.forfeited[seat]) fail(`${describe(entry)}: that seat has forfeited already`);
    s.forfeited[seat] = true;
    const active = s.forfeited.flatMap((gone, i) => (gone ? [] : [i]));
    if (active.length === 1) endRummy(s, active[0], null);
    else if (seat === s.toAct) startRummyTurn(s, nextActive(s, seat), rules);
    return;
  }
  if (seat !== s.toAct) fail(`${describe(entry)}: it was hand seat ${s.toAct}'s turn`);
  const shuffling = rules.restock === "SHUFFLE";
  const hand = s.hands[seat];
  if (["DRAW_STOCK", "DRAW_DISCARD", "TURN_OVER"].includes(kind)) {
    if (s.phase !== "DRAW") fail(`${describe(entry)}: the seat has drawn this turn already`);
    if (kind === "DRAW_DISCARD") {
      if (s.stock.length === 0 && shuffling) fail(`${describe(entry)}: the stock is empty, it must restock`);
      const top = s.discard[s.discard.length - 1];
      if (top === undefined || entry.card !== top) fail(`${describe(entry)}: ${entry.card} is not the top of the discard pile`);
      s.discard.pop();
      s.taken = top;
    } else {
      if (kind === "TURN_OVER") {
        if (shuffling || s.stock.length || !s.discard.length) fail(`${describe(entry)}: the pile cannot be turned over now`);
        [s.stock, s.discard] = [s.discard, []];
        s.restocks += 1;
      } else if (s.stock.length === 0) {
        if (!shuffling || !s.discard.length) fail(`${describe(entry)}: the stock is empty`);
        const order = entry.order;
        if (entry.restock !== "SHUFFLE" || !Array.isArray(order) || !sameCards(order, s.discard)) {
          fail(`${describe(entry)}: the restock's order is not the discard pile's cards`);
        }
        shuffles.push({ pile: inDisplayOrder(s.discard), order, seq: entry.seq });
        [s.stock, s.discard] = [[...order], []];
        s.restocks += 1;
      } else if (entry.restock !== undefined) {
        fail(`${describe(entry)}: a restock while the stock still had cards`);
      }
      if (entry.card !== s.stock[0]) fail(`${describe(entry)}: ${entry.card} is not the top of the stock`);
      s.stock.shift();
      s.taken = null;
    }
    hand.push(entry.card);
    s.phase = "PLAY";
    return;
  }
  if (s.phase !== "PLAY") fail(`${describe(entry)}: the turn's draw comes first`);
  const aceHigh = rules.ace_mode === "HIGH_OR_LOW";
  if (kind === "MELD" || kind === "LAY_OFF") {
    const cards = entry.cards;
    if (!Array.isArray(cards) || cards.length === 0) fail(`${describe(entry)}: no cards`);
    for (const card of cards) if (!hand.includes(card)) fail(`${describe(entry)}: ${card} is not in that hand`);
    if (kind === "MELD") {
      if (entry.meld !== s.table.length) fail(`${describe(entry)}: the new meld would be table meld ${s.table.length}`);
      if (!isMeld(cards, aceHigh)) fail(`${describe(entry)}: ${cards.join(" ")} is not a meld`);
      s.table.push({ cards: inDisplayOrder(cards), melded_by: seat, melded: inDisplayOrder(cards), layoffs: [] });
    } else {
      const target = s.table[entry.meld];
      if (!target) fail(`${describe(entry)}: there is no table meld ${entry.meld}`);
      const joined = [...target.cards, ...cards];
      if (!isMeld(joined, aceHigh)) fail(`${describe(entry)}: ${cards.join(" ")} cannot be laid off there`);
      target.cards = inDisplayOrder(joined);
      target.layoffs.push({ seat, cards: inDisplayOrder(cards) });
    }
    const rest = without(hand, cards);
    if (rest.length === 0 && rules.must_discard_to_go_out) fail(`${describe(entry)}: this table goes out only by a discard`);
    if (s.taken !== null && rest.length === 1 && rest[0] === s.taken) fail(`${describe(entry)}: it leaves only the card taken from the pile`);
    s.hands[seat] = rest;
    if (cards.includes(s.taken)) s.taken = null;
    s.laidThisTurn = true;
    if (rest.length === 0) endRummy(s, seat, null, !s.laidBefore[seat]);
    return;
  }
  if (kind !== "DISCARD") fail(`${describe(entry)}: not a Rummy action`);
  if (!hand.includes(entry.card)) fail(`${describe(entry)}: ${entry.card} is not in that hand`);
  if (entry.card === s.taken) fail(`${describe(entry)}: ${entry.card} was taken from the discard pile this turn`);
  const wasLaid = s.laidBefore[seat];
  s.hands[seat] = without(hand, [entry.card]);
  s.discard.push(entry.card);
  s.taken = null;
  s.turns += 1;
  s.laidBefore[seat] = wasLaid || s.laidThisTurn;
  if (s.hands[seat].length === 0) endRummy(s, seat, null, !wasLaid);
  else if (s.turns >= (rules.max_turns ?? 300)) endRummy(s, null, "MAX_TURNS");
  else startRummyTurn(s, nextActive(s, seat), rules);
}

/** The table, the outcome's counts and points (5.6-5.7) against the replay. */
function checkRummyOutcome(s, history) {
  const rules = history.rules ?? {};
  const outcome = history.outcome ?? {};
  if (outcome.winner !== s.winner || (outcome.void ?? null) !== (s.void ?? null)) {
    fail("the outcome names another winner or void reason than the replay");
  }
  if (Boolean(outcome.went_rummy) !== Boolean(s.wentRummy)) fail("the outcome's rummy flag is not the replay's");
  const melds = history.table_melds ?? [];
  if (melds.length !== s.table.length) fail("the table melds are not the replay's");
  s.table.forEach((meld, i) => {
    const shown = melds[i];
    const layoffs = (shown.layoffs ?? []).map((l) => `${l.seat}:${inDisplayOrder(l.cards).join(" ")}`);
    const replayed = meld.layoffs.map((l) => `${l.seat}:${l.cards.join(" ")}`);
    if (!sameCards(shown.cards ?? [], meld.cards) || shown.melded_by !== meld.melded_by || layoffs.join("|") !== replayed.join("|")) {
      fail(`table meld ${i} is not the replay's`);
    }
  });
  const counts = s.hands.map((cards) => (s.void ? 0 : cards.reduce((sum, c) => sum + cardPoints(c, rules.ace_points ?? 1), 0)));
  if (s.winner !== null && s.winner !== undefined) counts[s.winner] = 0;
  if (JSON.stringify(outcome.counts) !== JSON.stringify(counts)) fail("the counts are not the cards left in the hands");
  const factor = s.wentRummy ? 2 : 1;
  if ((rules.scoring ?? "PAY_WINNER") === "PAY_WINNER") {
    const points = counts.map((c) => -factor * c);
    if (s.winner !== null && s.winner !== undefined) points[s.winner] = -points.reduce((a, b) => a + b, 0) + points[s.winner];
    if (s.void) points.fill(0);
    if (JSON.stringify(outcome.points) !== JSON.stringify(points)) fail("the points are not what the counts make");
  } else {
    const extra = s.wentRummy ? rules.rummy_penalty ?? 25 : 0;
    const penalties = counts.map((c, i) => (s.void || i === s.winner ? 0 : c + extra));
    if (JSON.stringify(outcome.penalties) !== JSON.stringify(penalties)) fail("the penalties are not what the counts make");
  }
}

// --- both -----------------------------------------------------------------------------

/**
 * Replays `hand` (from readHand). Returns `{ steps, problem, shuffles }`: a state per action
 * (step 0 is the deal), the first inconsistency found (or null) and the Rummy SHUFFLE
 * restocks in order (`pile` in display order, the `order` the history records), which the
 * caller checks against the fair stream.
 */
export function replay(hand) {
  const { game, history } = hand;
  const steps = [];
  const shuffles = [];
  let problem = null;
  try {
    checkDeck(history.deck);
    const state = game === "rummy" ? dealRummy(history) : dealGin(history);
    steps.push(snapshot(state, 0, null));
    history.actions.forEach((entry, i) => {
      if (typeof entry !== "object" || entry === null) fail(`action ${i + 1} is not an object`);
      if (entry.seq !== undefined && entry.seq !== i + 1) fail(`action ${i + 1} is numbered ${entry.seq}`);
      if (state.ended) fail(`${describe(entry)}: the hand had ended`);
      if (game === "rummy") applyRummy(state, entry, history.rules ?? {}, shuffles);
      else applyGin(state, entry, history.ruleset ?? {});
      steps.push(snapshot(state, i + 1, entry));
    });
    if (!state.ended) fail("the actions end before the hand does");
    const finals = history.final_hands ?? [];
    state.hands.forEach((cards, i) => {
      if (!sameCards(finals[i] ?? [], cards)) fail(`hand seat ${i}'s final hand is not the replay's`);
    });
    if (game === "rummy") checkRummyOutcome(state, history);
    else checkGinOutcome(state, history);
  } catch (error) {
    if (!(error instanceof Mismatch)) throw error;
    problem = error.message;
  }
  return { steps, problem, shuffles };
}
