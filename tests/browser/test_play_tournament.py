"""A practice tournament on the practice table (/play): a person enters a practice knockout
whose other entries are practice bots; their round-1 match opens by itself, they play it by
clicks and win it (their bot opponent resigns), the final opens by itself once the bots'
other semi-final is recorded, they resign it, and the page shows the bracket, the places and
the play-money prizes as the server records them. The screen fits a laptop's and a phone's
width."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from service.client import ApiProblem, GinClient
from service.practice import TOURNAMENT_BUY_IN, open_tournament, practice_player
from tests.browser.test_play import ENDED, click_one_action, wait_for_my_turn_or
from tests.browser.tour import PHONE, overflow
from tests.integration.workers import Served

#: My actions by clicks before I resign (the bots then play the rest quickly).
MY_ACTIONS = 2
#: How long the bots' other semi-final may take (ms): a hand can last to the stock's end,
#: about 30 turns at the bots' pace (a pause of 0.3 s after each bot's turn, then a task
#: through the embedded broker), longer on a busy machine; then its settlement deals the
#: final.
BOTS_SEMI_FINAL_MS = 90_000


@pytest.fixture(scope="module")
def operator(served: Served) -> Iterator[GinClient]:
    with GinClient(served.base, served.api_key()) as client:
        yield client


def money(amount: int) -> str:
    return f"{amount / 100:.2f} XPM"


def resign_for(operator: GinClient, tournament: dict[str, Any], seat: int, match_id: str) -> None:
    """The entrant at ``seat`` resigns ``match_id`` (a bot may act meanwhile: a stale version
    is read again)."""
    bot = next(e["player_id"] for e in tournament["entries"] if e["seat"] == seat)
    as_bot = operator.as_(operator.player_token(bot, 60)["token"])
    for _ in range(5):
        view = as_bot.match(match_id)
        if view["status"] != "playing":
            return  # I won it by my clicks already
        try:
            as_bot.act(match_id, {"action": "RESIGN"}, view["version"])
            return
        except ApiProblem as problem:
            if problem.code != "stale_version":
                raise
    raise AssertionError("the bot could not resign")


def resign_until_over(page: Any) -> None:
    """Resign each match of mine the page opens until the page says the tournament is
    over."""
    over = page.locator("#tournament-state").filter(has_text="The tournament is over")
    resign = page.get_by_role("button", name="Resign", exact=True)
    while True:
        page.wait_for_function(
            """() => /The tournament is over/.test(
                       document.getElementById("tournament-state").textContent) ||
                     [...document.querySelectorAll("#actions button")]
                       .some((b) => b.textContent === "Resign" && !b.disabled)""",
            timeout=30_000,
        )
        if over.count():
            return
        resign.click()
        page.get_by_role("button", name="Confirm resign", exact=True).click()
        page.locator("#status").filter(has_text="Match over").wait_for()


def test_a_practice_knockout_entered_played_and_its_prizes_shown(
    page: Any, operator: GinClient
) -> None:
    # First To Knock: one hand a match, so the bots' other semi-final and final are quick.
    tournament = open_tournament(operator, "knockout", format="first_to_knock", target=None)
    tournament_id = tournament["id"]
    player_id, minted = practice_player(operator, "Tester", ttl_seconds=600)
    page.goto(f"/play#token={minted['token']}")
    page.get_by_role("heading", name="Practice tournaments").wait_for()
    entry = page.get_by_role("button", name=f"Enter {tournament['name']} ({tournament_id})")
    entry.click()  # my entry fills the field: the tournament starts and deals round 1

    # My round-1 match opens by itself; I play a few actions by clicks.
    page.locator("#table").wait_for(state="visible")
    state = page.locator("#tournament-state")
    state.filter(has_text="Your match is being played in round 1 of 2").wait_for()
    for _ in range(MY_ACTIONS):
        wait_for_my_turn_or(page, ENDED)
        if ENDED.search(page.locator("#status").inner_text()):
            break
        version = int(page.locator("#status").get_attribute("data-version"))
        click_one_action(page)
        page.wait_for_function(
            "v => Number(document.getElementById('status').dataset.version) > v", arg=version
        )
    started = operator.tournament(tournament_id)
    me = next(e["seat"] for e in started["entries"] if e["player_id"] == player_id)
    [mine] = [
        m for m in started["rounds"][0]["matches"] if me in (m["first_seat"], m["second_seat"])
    ]
    # My bot opponent resigns (the operator acts for its player): I win round 1.
    rival = mine["second_seat"] if mine["first_seat"] == me else mine["first_seat"]
    resign_for(operator, started, rival, mine["match_id"])
    page.locator("#status").filter(has_text="Match over").wait_for()

    # The final opens by itself once the bots' other semi-final is recorded and it is
    # dealt; the bracket shows round 1 decided. I resign the final: second place.
    state.filter(has_text="Your match is being played in round 2 of 2").wait_for(
        timeout=BOTS_SEMI_FINAL_MS
    )
    page.locator("#bracket").filter(has_text=f"Seat {me} (you) won").wait_for()
    final_id = operator.tournament(tournament_id)["rounds"][1]["matches"][0]["match_id"]
    page.get_by_role("button", name="Resign", exact=True).wait_for()
    assert operator.match(final_id)["status"] == "playing"
    resign_until_over(page)
    assert operator.match(final_id)["status"] == "finished"
    finished = operator.tournament(tournament_id)
    assert finished["status"] == "finished"

    # The places and play-money prizes, as the server recorded them.
    rows = [
        [cell.strip() for cell in row]
        for row in page.locator("#places tbody tr").evaluate_all(
            "rows => rows.map((r) => [...r.cells].map((c) => c.textContent))"
        )
    ]
    expected = sorted(
        (e["first_place"], e["seat"], e["last_place"], e["prize"]["amount"])
        for e in finished["entries"]
    )
    assert rows == [
        [
            f"{first}" if first == last else f"{first}-{last}",
            f"Seat {seat} (you)" if seat == me else f"Seat {seat}",
            money(prize),
        ]
        for first, seat, last, prize in expected
    ]
    pool = TOURNAMENT_BUY_IN * 4
    assert [row[2] for row in rows[:2]] == [money(pool * 7 // 10), money(pool * 3 // 10)]
    my_entry = next(e for e in finished["entries"] if e["seat"] == me)
    assert (my_entry["first_place"], my_entry["prize"]["amount"]) == (2, pool * 3 // 10)
    assert f"You placed 2 and won {money(pool * 3 // 10)}" in state.inner_text()
    final = page.locator("#bracket").filter(has_text="Final")
    assert final.count() == 1 and " won" in final.inner_text()

    # The tournament screen fits a laptop's width and a phone's.
    assert overflow(page) == 0
    page.set_viewport_size(PHONE)
    assert overflow(page) == 0


@pytest.mark.page_only
def test_what_the_page_reads_from_a_tournament_view(page: Any) -> None:
    """The page's reading of a tournament view (static/play/tournament.js, run in the
    browser): the caller's match at a single table and in a bracket, where they stand when
    knocked out (their standing's places) and at the end, and the places with their prizes,
    tied places shared."""
    page.goto("/play")
    got = page.evaluate(
        """async () => {
          const t = await import("/assets/play/tournament.js");
          const xpm = (amount) => ({amount, currency: "XPM"});
          const entry = (seat, state, first = null, last = null, prize = null) =>
            ({seat, state, first_place: first, last_place: last, prize});
          const table = {kind: "single_table", status: "running", you: 2, entrants: 3,
            table: {match_id: "mch_t", seats: [3, 2, 1]}, rounds: [], standings: [],
            entries: [entry(1, "playing"), entry(2, "playing"), entry(3, "playing")]};
          const knockout = {kind: "knockout", status: "running", you: 4, entrants: 4,
            table: null, rounds: [{round: 1, matches: [
              {match_no: 1, match_id: "mch_a", first_seat: 1, second_seat: 4, winner_seat: 1},
              {match_no: 2, match_id: "mch_b", first_seat: 2, second_seat: 3,
               winner_seat: null}]}],
            standings: [{seats: [1], first_place: 1, last_place: 1},
                        {seats: [2, 3], first_place: 2, last_place: 3},
                        {seats: [4], first_place: 4, last_place: 4}],
            entries: [entry(1, "playing"), entry(2, "playing"), entry(3, "playing"),
                      entry(4, "knocked_out")]};
          const over = {...table, status: "finished", entries: [
            entry(1, "placed", 3, 3, xpm(0)), entry(2, "champion", 1, 2, xpm(1501)),
            entry(3, "champion", 1, 2, xpm(1502))]};
          return {
            tableMatch: t.myMatch(table),
            knockoutMatch: t.myMatch(knockout),
            knockedOut: t.stateLine(knockout),
            bracket: t.bracketRounds(knockout),
            overLine: t.stateLine(over),
            places: t.placeRows(over),
            sofar: t.placeRows(knockout),
          };
        }"""
    )
    assert got["tableMatch"] == "mch_t"
    assert got["knockoutMatch"] is None  # seat 4 lost match 1: nothing of theirs to play
    assert got["knockedOut"] == "You are out (place 4): the others play on."
    assert got["bracket"] == [
        {
            "title": "Round 1 of 2",
            "lines": [
                "Match 1: Seat 1 v Seat 4 (you): Seat 1 won",
                "Match 2: Seat 2 v Seat 3: playing",
            ],
        }
    ]
    assert got["overLine"] == "The tournament is over. You placed 1-2 and won 15.01 XPM."
    assert got["places"] == [
        {"place": "1-2", "who": "Seat 2 (you)", "prize": "15.01 XPM"},
        {"place": "1-2", "who": "Seat 3", "prize": "15.02 XPM"},
        {"place": "3", "who": "Seat 1", "prize": "0.00 XPM"},
    ]
    assert got["sofar"] == [
        {"place": "1", "who": "Seat 1", "prize": ""},
        {"place": "2-3", "who": "Seat 2, Seat 3", "prize": ""},
        {"place": "4", "who": "Seat 4 (you)", "prize": ""},
    ]
