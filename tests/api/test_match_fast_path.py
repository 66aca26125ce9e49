"""The match views and actions answered without Flask (service.api.matchpath).

Two applications share one database: the session's ``app`` (with the fast path, the default)
and ``slow`` (``MATCH_FAST_PATH=false``, the ordinary Flask path). Whichever answered, the
client must not be able to tell: the same bytes, the same headers, the same refusals. The
outcome counter says which path answered, so every test also checks that the path it means to
exercise was the one taken.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from service.api.fastpath import installed
from service.api.matchpath import MatchFastPath
from service.bots import decide
from service.observability.logs import current_request_id
from service.usecases import play
from tests.api.play_clients import action_body, join, open_table, player_client
from tests.api.test_auth_and_errors import assert_problem
from tests.conftest import ApiClient, CounterMoved, new_operator, serving

OUTCOMES = ("answered", "declined", "refused", "error")
#: Headers whose values differ between any two answers (the rate limit's count goes on).
VARYING = {"X-Request-Id", "RateLimit-Remaining", "RateLimit-Reset"}


@pytest.fixture(scope="module")
def slow(database_url: str) -> Iterator[Any]:
    with serving(database_url, MATCH_FAST_PATH=False) as application:
        assert not any(isinstance(p, MatchFastPath) for p in installed(application))
        yield application


#: Asserts how many requests each outcome counted inside the ``with`` block.
Took = functools.partial(CounterMoved, "gin_match_fast_path", "outcome", OUTCOMES)


def both(client: ApiClient, slow: Any) -> tuple[ApiClient, ApiClient]:
    """``client`` and the same credential on the ordinary path."""
    return client, ApiClient(slow.test_client(), client.token)


def same_answer(fast: Any, ordinary: Any) -> None:
    """Status, body (byte for byte) and headers alike, but for the per-request values."""
    assert fast.status_code == ordinary.status_code
    assert fast.data == ordinary.data
    assert fast.headers.get("Content-Type") == ordinary.headers.get("Content-Type")
    names = {n for n, _ in fast.headers} - VARYING
    assert names == {n for n, _ in ordinary.headers} - VARYING
    for name in names:
        assert fast.headers.get(name) == ordinary.headers.get(name), name


def seated(api: ApiClient, **settings: Any) -> tuple[list[ApiClient], str]:
    table = open_table(api, **settings)
    clients = [player_client(api), player_client(api)]
    for client in clients:
        assert join(client, table["id"]).status_code == 201
    return clients, table["match_id"]


def test_a_whole_match_reads_alike_on_both_paths(api: ApiClient, slow: Any) -> None:
    """Every answer the fast path gives (views and the actions' views) is what the ordinary
    path answers for the same state, to the byte; the match plays to its end."""
    clients, match_id = seated(api, format="first_to_knock", stake=300)
    path = f"/v1/matches/{match_id}"
    actions = 0
    while True:
        views = {}
        for client in clients:
            fast, ordinary = both(client, slow)
            with Took(answered=1):
                answer = fast.get(path)
            same_answer(answer, ordinary.get(path))
            views[answer.get_json()["you"]] = (client, answer.get_json())
        view = views[0][1]
        if view["status"] != "playing":
            break
        mover, mine = views[view["hand"]["to_act"]]
        with Took(answered=1):
            acted = mover.post(f"{path}/actions",
                               action_body(decide(mine["hand"]), mine["version"]))
        assert acted.status_code == 200, acted.get_json()
        same_answer(acted, both(mover, slow)[1].get(path))
        actions += 1
        assert actions < 500
    assert view["status"] == "finished" and view["result"] is not None
    # Operators read through it too (an API key, looked up in the database).
    with Took(answered=1):
        answer = api.get(path)
    same_answer(answer, both(api, slow)[1].get(path))
    assert answer.get_json()["you"] is None


@pytest.fixture
def match(api: ApiClient) -> tuple[list[ApiClient], str, dict[str, Any]]:
    """A live match and the view of the player to act."""
    clients, match_id = seated(api)
    views = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
    to_act = views[0]["hand"]["to_act"]
    mover = next(i for i, v in enumerate(views) if v["you"] == to_act)
    clients.insert(0, clients.pop(mover))
    return clients, match_id, views[mover]


def test_refusals_are_the_ordinary_paths(
    match: tuple[list[ApiClient], str, dict[str, Any]], other_api: ApiClient, slow: Any
) -> None:
    """The use case refuses and writes nothing; the ordinary path answers the same problem."""
    (mover, waiting), match_id, view = match
    path = f"/v1/matches/{match_id}"
    legal = view["hand"]["legal_actions"]
    version = view["version"]
    stranger = player_client(other_api)
    refused = [
        (waiting, "POST", action_body(legal[0], version)),  # not its turn
        (mover, "POST", {"action": "DISCARD", "card": "ZZ", "expected_version": version}),
        (mover, "POST", action_body(legal[0], version + 5)),  # stale
        (stranger, "GET", None),  # another operator's match
        (stranger, "POST", action_body(legal[0], version)),
        (mover.as_("pt_forged.token"), "GET", None),
        (mover.as_("sk_unknown"), "GET", None),
        (mover, "GET", "/v1/matches/mch_none"),
    ]
    for client, method, body in refused:
        fast, ordinary = both(client, slow)
        route = path if method == "GET" else f"{path}/actions"
        if isinstance(body, str):
            route, body = body, None
        expected = ordinary.request(method, route, json=body)
        assert 400 <= expected.status_code < 500, expected.get_json()
        with Took(refused=1):
            answer = fast.request(method, route, json=body)
        assert_problem(answer, expected.status_code, expected.get_json()["code"])
        same_answer(answer, expected)
    # Nothing changed: the mover's view is still the one it decided on.
    assert mover.get(path).get_json()["version"] == version


def test_uncommon_requests_go_the_ordinary_way(
    match: tuple[list[ApiClient], str, dict[str, Any]]
) -> None:
    (mover, _), match_id, view = match
    path = f"/v1/matches/{match_id}"
    version = view["version"]
    text = view["hand"]["legal_actions"][0]
    # A long-poll, and a query the schema refuses, are Flask's.
    with Took():
        assert mover.get(f"{path}?wait_for_version={version - 1}").status_code == 200
        assert_problem(mover.get(f"{path}?timeout=abc"), 422, "validation_failed")
    # A body that is not plain JSON, or not one the schema takes.
    with Took(declined=4):
        answers = [
            mover.request("POST", f"{path}/actions", data="{", content_type="application/json"),
            mover.post(f"{path}/actions", {"action": "FLY", "expected_version": version}),
            mover.post(f"{path}/actions", {**action_body(text, version), "extra": 1}),
            mover.request("POST", f"{path}/actions", data="action=PASS",
                          content_type="application/x-www-form-urlencoded"),
        ]
    for answer in answers:
        assert 400 <= answer.status_code < 500
        assert answer.mimetype == "application/problem+json"
    # No expected_version: If-Match, checked by Flask.
    with Took(declined=2):
        bare = {k: v for k, v in action_body(text, version).items() if k != "expected_version"}
        assert_problem(mover.post(f"{path}/actions", bare, headers={"If-Match": "x"}),
                       422, "validation_failed")
        acted = mover.post(f"{path}/actions", bare, headers={"If-Match": f'"{version}"'})
    assert acted.status_code == 200 and acted.get_json()["version"] == version + 1
    # With an Idempotency-Key: the ordinary path stores and replays the answer.
    after = acted.get_json()
    if after["hand"]["to_act"] == after["you"]:
        body = action_body(after["hand"]["legal_actions"][0], after["version"])
        with Took(declined=2):
            first = mover.post(f"{path}/actions", body, key="fast-path-key")
            again = mover.post(f"{path}/actions", body, key="fast-path-key")
        assert first.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.data == first.data
    # Resigning is Flask's too (it locks the row and ends the match).
    with Took(declined=1):
        resigned = mover.post(f"{path}/actions", {"action": "RESIGN"})
    assert resigned.status_code == 200 and resigned.get_json()["status"] == "finished"


def test_rate_limits_count_each_request_once(database_url: str) -> None:
    """A request the fast path answers, or counts and hands over, costs one request."""
    with serving(database_url, RATELIMIT_PLAYER="50 per minute") as limited:
        operator = ApiClient(limited.test_client(), new_operator(limited)[1])
        (mover, _), match_id = seated(operator)
        path = f"/v1/matches/{match_id}"
        with Took(answered=2, refused=1):
            answers = [mover.get(path), mover.get(path), mover.get("/v1/matches/mch_none")]
    assert [a.status_code for a in answers] == [200, 200, 404]
    remaining = [int(a.headers["RateLimit-Remaining"]) for a in answers]
    assert remaining == [remaining[0], remaining[0] - 1, remaining[0] - 2]
    assert {a.headers["RateLimit-Limit"] for a in answers} == {"50"}


def test_the_request_id_is_the_use_cases_too(
    match: tuple[list[ApiClient], str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Log lines (and tasks queued) inside the use case carry the request's id; the request's
    own line is written once, with its route."""
    (mover, _), match_id, _view = match
    seen = []
    real = play.get_view

    def get_view(*args: Any) -> Any:
        seen.append(current_request_id())
        return real(*args)

    monkeypatch.setattr(play, "get_view", get_view)
    with caplog.at_level(logging.INFO, logger="gin.request"), Took(answered=1):
        answer = mover.get(f"/v1/matches/{match_id}", headers={"X-Request-Id": "trace-42"})
    assert answer.headers["X-Request-Id"] == "trace-42"
    assert seen == ["trace-42"] and current_request_id() is None
    lines = [r for r in caplog.records if getattr(r, "request_id", None) == "trace-42"]
    assert [(r.method, r.route, r.status) for r in lines] == [  # type: ignore[attr-defined]
        ("GET", "/v1/matches/<match_id>", 200)
    ]
    # Refused and handed to Flask: both attempts, and the answer, carry one id.
    seen.clear()
    with Took(refused=1):
        missing = mover.get("/v1/matches/mch_none")
    assert missing.status_code == 404
    assert seen == [missing.headers["X-Request-Id"]] * 2
