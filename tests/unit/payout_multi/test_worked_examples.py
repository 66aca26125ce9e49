"""Worked examples 7.12 (four-player Rummy) and 7.15 (three-player Gin): their money parts,
read from worked_examples.json beside this file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.games.common.settings import FeeBase, FeeRule
from service.games.common.statement import Statement
from service.games.multi_gin.payout import classic_three_player
from service.games.rummy.payout import rummy_penalty, rummy_per_hand

CASES = json.loads((Path(__file__).parent / "worked_examples.json").read_text("utf-8"))["cases"]
NAMES = {"7.12": {0: "A", 1: "B", 2: "C", 3: "D"}, "7.15": {0: "P", 1: "Q", 2: "R"}}


def seats(values: dict[str, int]) -> dict[int, int]:
    return {int(seat): value for seat, value in values.items()}


def run(kind: str, given: dict[str, Any]) -> Statement:
    fee = FeeRule(given.get("fee_bps", 0), FeeBase.WINNINGS)
    if kind == "rummy_per_hand":
        return rummy_per_hand(
            given["winner"],
            seats(given["counts"]),
            given["stake_per_point"],
            seats(given["balances"]),
            fee,
            went_rummy=given["went_rummy"],
        )
    if kind == "rummy_penalty":
        return rummy_penalty(
            seats(given["penalties"]), given["stake_per_point"], seats(given["caps"]), fee
        )
    assert kind == "classic_three_player"
    return classic_three_player(
        seats(given["totals"]),
        seats(given["hand_points"]),
        given["winner"],
        given["stake_per_point"],
        seats(given["buyins"]),
        fee,
        game_bonus=given["game_bonus"],
    )


def check(case: dict[str, Any]) -> None:
    s = run(case["kind"], case["input"])
    expect = case["expect"]
    assert s.net == seats(expect["net"])
    assert s.fee == expect["fee"]
    assert s.cap_applied is expect["cap_applied"]
    assert sorted(s.payments(), key=str) == sorted(map(tuple, expect["payments"]), key=str)
    if "text_starts" in expect:
        lines = s.text(NAMES[case["example"]]).splitlines()
        assert [line.split(":")[0] for line in lines] == expect["text_starts"]


def cases(example: str) -> list[Any]:
    chosen = [c for c in CASES if c["example"] == example]
    assert chosen, f"no worked example {example} in the data file"
    return [pytest.param(c, id=c["name"]) for c in chosen]


@pytest.mark.parametrize("case", cases("7.12"))
def test_7_12_four_player_rummy_payout(case: dict[str, Any]) -> None:
    check(case)


@pytest.mark.parametrize("case", cases("7.15"))
def test_7_15_three_player_settlement(case: dict[str, Any]) -> None:
    check(case)
