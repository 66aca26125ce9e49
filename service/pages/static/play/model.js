// What the practice table shows, read from a match view (GET /v1/matches/{id}): one shape for
// every game. Two-player Gin carries its hand in `view.hand`; three-player and partnership
// Gin and Rummy in `view.play` (docs/games.md). Nothing here touches the page.

export const GAME_NAMES = {
  gin: "Two-player Gin",
  gin_three: "Three-player Gin",
  gin_partnership: "Partnership Gin",
  rummy: "Rummy",
};

const RANKS = "A23456789TJQK";
const SUITS = { C: "♣", D: "♦", H: "♥", S: "♠" };

// "TD" -> "10♦", what a card button shows (its accessible name stays "TD").
export function cardFace(code) {
  const rank = code[0] === "T" ? "10" : code[0];
  return `${rank}${SUITS[code[1]] || code[1]}`;
}

export function isRed(code) {
  return code[1] === "D" || code[1] === "H";
}

// Whether `cards` split wholly into melds (sets of 3-4 of a rank, runs of 3+ in a suit, ace
// low): a knock leaving such a hand is gin. The lowest-ranked card left must start a run or
// be in a set, so trying those is enough.
export function allMelded(cards) {
  if (cards.length === 0) return true;
  const rank = (c) => RANKS.indexOf(c[0]);
  const sorted = [...cards].sort((a, b) => rank(a) - rank(b));
  const [low, ...rest] = sorted;
  const same = rest.filter((c) => c[0] === low[0]);
  for (const size of [2, 3]) {
    for (const group of choose(same, size)) {
      if (allMelded(rest.filter((c) => !group.includes(c)))) return true;
    }
  }
  const run = [low];
  for (let r = rank(low) + 1; r < RANKS.length; r += 1) {
    const next = `${RANKS[r]}${low[1]}`;
    if (!rest.includes(next)) break;
    run.push(next);
    if (run.length >= 3 && allMelded(sorted.filter((c) => !run.includes(c)))) return true;
  }
  return false;
}

function choose(items, size) {
  if (size === 0) return [[]];
  const out = [];
  items.forEach((item, i) => {
    for (const tail of choose(items.slice(i + 1), size - 1)) out.push([item, ...tail]);
  });
  return out;
}

// The view as the page draws it:
// - `tables`: each hand being played (several at three-player and partnership Gin): its seats,
//   each seat's card count, stock, discard pile, Rummy's table melds, whose turn;
// - `mine`: the caller's own cards and legal actions (null for a spectator or a seat sitting out);
// - `toAct`: the seats whose turn it is.
export function readView(view) {
  const seats = view.seats || [];
  // Names as the seats give them; a name that several seats share (the bots') gets its
  // seat's number.
  const named = (s) => s.display_name || `Seat ${s.seat + 1}`;
  const nameOf = (seat) => {
    const found = seats.find((s) => s.seat === seat);
    if (!found) return `Seat ${seat + 1}`;
    const shared = seats.filter((s) => named(s) === named(found)).length > 1;
    return shared ? `${named(found)} ${seat + 1}` : named(found);
  };
  const game = view.game || "gin";
  const out = { game, nameOf, you: view.you, tables: [], mine: null, toAct: [] };
  if (view.hand) {
    const hand = view.hand;
    out.tables.push(pile([0, 1], hand));
    if (Array.isArray(hand.hand)) {
      out.mine = { cards: hand.hand, legal: hand.legal_actions || [], deadwood: hand.deadwood };
    }
    if (hand.to_act !== null && hand.to_act !== undefined) out.toAct = [hand.to_act];
  } else if (view.play) {
    const play = view.play;
    out.toAct = play.to_act || [];
    const dealt = play.tables || (play.hand && play.hand.hand ? [play.hand] : []);
    for (const table of dealt) {
      if (!table.hand) continue;
      out.tables.push(pile(table.seats, table.hand));
      if (Array.isArray(table.hand.hand)) {
        out.mine = {
          cards: table.hand.hand,
          legal: play.legal_actions || table.hand.legal_actions || [],
          deadwood: table.hand.deadwood,
        };
      }
    }
  }
  if (view.status !== "playing") out.toAct = [];
  out.pointsOf = pointsOf(view);
  // Rummy: a seat that resigned sits the rest of the match out while the others play on.
  const forfeited = (view.play && view.play.forfeited) || [];
  out.forfeited = view.you !== null && view.you !== undefined && forfeited[view.you] === true;
  out.teamOf = (seat) => {
    const teams = (view.play && view.play.teams) || null;
    return teams ? teams.findIndex((team) => team.includes(seat)) : -1;
  };
  return out;
}

// Each seat's points so far in the match (a partnership's: its team's), or null.
function pointsOf(view) {
  if (view.scores) return (seat) => view.scores.hand_points[seat];
  const standings = view.play && view.play.standings;
  if (!standings) return () => null;
  if (standings.sides && standings.hand_points) {
    return (seat) => {
      const side = standings.sides.findIndex((members) => members.includes(seat));
      return side < 0 ? null : standings.hand_points[side];
    };
  }
  if (standings.points) return (seat) => standings.points[seat];
  return () => null;
}

function pile(seats, hand) {
  return {
    seats,
    counts: hand.card_counts || [],
    stock: hand.stock_count,
    discard: hand.discard_pile || [],
    melds: hand.table_melds || null,
    toAct: hand.to_act,
  };
}

// The legal actions as the page offers them: `buttons` (actions naming no card of the hand:
// draws, melds, lay-offs, ...), `modes` (what a click on a card does: discard, knock, gin...,
// each with the cards it takes).
export function offers(mine) {
  const buttons = [];
  const modes = [];
  const mode = (name, kind) => {
    let found = modes.find((m) => m.name === name);
    if (!found) {
      found = { name, kind, cards: new Map() };
      modes.push(found);
    }
    return found;
  };
  if (!mine) return { buttons, modes };
  for (const action of mine.legal) {
    const kind = action.action;
    if (kind === "DISCARD") mode("Discard", kind).cards.set(action.card, action);
    else if (kind === "KNOCK") {
      mode("Knock", kind).cards.set(action.card, action);
      if (allMelded(mine.cards.filter((c) => c !== action.card))) {
        mode("Gin", kind).cards.set(action.card, action);
      }
    } else if (kind === "GIN") mode("Gin", kind).cards.set(action.card, action);
    else if (kind === "TAKE_DISCARD_AND_KNOCK") {
      mode("Take discard and knock", kind).cards.set(action.card, action);
    } else buttons.push({ name: buttonName(action), action });
  }
  return { buttons, modes };
}

const NAMES = {
  DRAW_STOCK: "Draw from stock",
  DRAW_DISCARD: "Take discard",
  TAKE_UPCARD: "Take upcard",
  PASS: "Pass",
  TURN_OVER: "Turn over the discard pile",
  DECLINE: "Decline",
  BIG_GIN: "Big gin",
};

export function buttonName(action) {
  const kind = action.action;
  if (kind === "MELD") return `Meld ${action.cards.join(" ")}`;
  if (kind === "LAY_OFF") return `Lay off ${action.cards.join(" ")} on meld ${action.meld + 1}`;
  return NAMES[kind] || kind.replaceAll("_", " ").toLowerCase();
}

// One line on how a finished hand went, from the two-player view's `previous_hand` or a
// multi-player view's `play.hands` entry (Rummy's carry `points` per seat and `went_rummy`).
export function handLine(record, nameOf) {
  const number = record.number ?? "";
  if (record.void) return `Hand ${number} is over: void (${record.void}).`;
  if (record.winner === null || record.winner === undefined || record.kind === "dead") {
    return `Hand ${number} is over: a dead hand, nobody scores.`;
  }
  const points = Array.isArray(record.points) ? record.points[record.winner] : record.points;
  const shown = points === undefined || points === null ? "" : ` (${points} point${points === 1 ? "" : "s"})`;
  let how;
  if (!record.kind) how = record.went_rummy ? "went rummy" : "went out";
  else {
    how = {
      knock: "won on a knock",
      undercut: "undercut the knock",
      gin: "went gin",
      big_gin: "went big gin",
    }[record.kind] || "won";
  }
  return `Hand ${number} is over: ${nameOf(record.winner)} ${how}${shown}.`;
}

// The match's end, from `view.result`.
export function resultLine(view, nameOf) {
  const result = view.result || {};
  if (result.void) return "Match over: void, every stake returned.";
  const winners = result.winners || (result.winner !== null && result.winner !== undefined ? [result.winner] : []);
  const names = winners.map((seat) => (seat === view.you ? "You" : nameOf(seat)));
  const forfeiters = result.forfeiters || (result.forfeiter !== null && result.forfeiter !== undefined ? [result.forfeiter] : []);
  const resigned = forfeiters.map((seat) => (seat === view.you ? "you" : nameOf(seat)));
  const by = resigned.length ? ` (${resigned.join(", ")} forfeited)` : "";
  if (!names.length) return `Match over${by}.`;
  return `Match over: ${names.join(" and ")} won${by}.`;
}
