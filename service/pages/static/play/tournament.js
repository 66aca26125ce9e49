// What the practice table shows of a practice tournament, read from its view
// (GET /v1/tournaments/{id}): the bracket or the table, the standings, the places and prizes,
// and the caller's match to play now (docs/tournaments.md). Nothing here touches the page.
import { GAME_NAMES } from "./model.js";

export function money(m) {
  return m ? `${(m.amount / 100).toFixed(2)} ${m.currency}` : "";
}

const places = (first, last) => (first === last ? `${first}` : `${first}-${last}`);

// "Seat 3" or "Seat 3 (you)".
export function seatName(seat, you) {
  if (seat === null || seat === undefined) return "to be decided";
  return seat === you ? `Seat ${seat} (you)` : `Seat ${seat}`;
}

// How many rounds a knockout of `entrants` plays (4 -> 2).
export function roundsOf(entrants) {
  return Math.round(Math.log2(entrants));
}

// A line for the lobby: the game, the field and the entry.
export function offerLine(t) {
  const game = GAME_NAMES[t.game] || t.game;
  const kind = t.kind === "knockout" ? "knockout" : "single table";
  const entry = `entry ${money(t.buy_in)} + ${money(t.fee)} fee`;
  return `${game} ${kind}, ${t.entries_taken} of ${t.entrants} entered, ${entry}, prize pool ${money(t.prize_pool)}`;
}

// The caller's match being played now (dealt, not yet recorded), else null.
export function myMatch(t) {
  if (t.status !== "running" || t.you === null || t.you === undefined) return null;
  if (t.table) return t.table.seats.includes(t.you) ? t.table.match_id : null;
  for (const round of t.rounds) {
    for (const m of round.matches) {
      const mine = m.first_seat === t.you || m.second_seat === t.you;
      if (mine && m.match_id && m.winner_seat === null) return m.match_id;
    }
  }
  return null;
}

// The caller's entry, else null.
export function myEntry(t) {
  return t.entries.find((e) => e.seat === t.you) || null;
}

// The caller's places ("3-4"): its entry's once placed, else its group's in the standings.
export function myPlaces(t) {
  const entry = myEntry(t);
  if (entry && entry.first_place !== null && entry.first_place !== undefined) {
    return places(entry.first_place, entry.last_place);
  }
  const group = t.standings.find((s) => s.seats.includes(t.you));
  return group ? places(group.first_place, group.last_place) : "";
}

// One sentence on where the tournament and the caller stand.
export function stateLine(t) {
  const entry = myEntry(t);
  if (t.status === "open") {
    const missing = t.entrants - t.entries_taken;
    return `Waiting for ${missing} more entr${missing === 1 ? "y" : "ies"} to start.`;
  }
  if (t.status === "cancelled") return "The tournament was cancelled: entries are refunded by its rules.";
  if (t.status === "finished") {
    let mine = "";
    if (entry && entry.prize) {
      const won = entry.prize.amount > 0 ? `and won ${money(entry.prize)}` : "(no prize)";
      mine = ` You placed ${myPlaces(t)} ${won}.`;
    }
    return `The tournament is over.${mine}`;
  }
  if (!entry) return "The tournament is being played.";
  if (entry.state === "knocked_out" || entry.state === "placed") {
    const at = myPlaces(t);
    return `You are out (place${at.includes("-") ? "s" : ""} ${at}): the others play on.`;
  }
  if (myMatch(t)) {
    const round = t.kind === "knockout" ? ` in round ${t.rounds.length} of ${roundsOf(t.entrants)}` : "";
    return `Your match is being played${round}.`;
  }
  return "You won your match: waiting for the round's other matches.";
}

// A knockout's rounds: [{title, lines}], each line one match.
export function bracketRounds(t) {
  const total = roundsOf(t.entrants);
  return t.rounds.map((round) => ({
    title: round.round === total ? "Final" : `Round ${round.round} of ${total}`,
    lines: round.matches.map((m) => {
      const pair = `${seatName(m.first_seat, t.you)} v ${seatName(m.second_seat, t.you)}`;
      const outcome = m.winner_seat === null ? "playing" : `${seatName(m.winner_seat, t.you)} won`;
      return `Match ${m.match_no}: ${pair}: ${outcome}`;
    }),
  }));
}

// The places: [{place, who, prize}] best first, from the entries once placed, else from the
// standings so far.
export function placeRows(t) {
  const placed = t.entries.filter((e) => e.first_place !== null && e.first_place !== undefined);
  if (placed.length === t.entries.length && placed.length > 0) {
    return [...placed]
      .sort((a, b) => a.first_place - b.first_place || a.seat - b.seat)
      .map((e) => ({
        place: places(e.first_place, e.last_place),
        who: seatName(e.seat, t.you),
        prize: e.prize ? money(e.prize) : "",
      }));
  }
  return t.standings.map((s) => ({
    place: places(s.first_place, s.last_place),
    who: s.seats.map((seat) => seatName(seat, t.you)).join(", "),
    prize: "",
  }));
}
