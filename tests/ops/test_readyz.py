"""/healthz and /readyz: ready only when the database answers and is migrated and the broker
can be reached."""

from __future__ import annotations

import socket
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.conftest import make_test_app


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once the socket is closed


def test_ready_when_everything_answers(fresh_database_url: str) -> None:
    app = make_test_app(fresh_database_url)
    response = app.test_client().get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {
        "status": "ok",
        "checks": {"database": "ok", "migrations": "ok", "broker": "ok"},
    }
    assert app.test_client().get("/healthz").get_json() == {"status": "ok"}
    app.extensions["gin"]["engine"].dispose()


def test_database_down_is_503(tmp_path: Path) -> None:
    app = make_test_app(f"sqlite:///{tmp_path}/no/such/folder/db.sqlite")
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "unreachable"
    assert app.test_client().get("/healthz").status_code == 200  # alive all the same


def test_postgres_unreachable_is_503() -> None:
    port = _closed_port()
    app = make_test_app(f"postgresql+psycopg://postgres@127.0.0.1:{port}/nothing?connect_timeout=2")
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["checks"]["database"] == "unreachable"


def test_unmigrated_database_is_503(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/empty.sqlite"
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE unrelated (id INTEGER)"))
    engine.dispose()
    app = make_test_app(url)
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["checks"] == {
        "database": "ok",
        "migrations": "behind",
        "broker": "ok",
    }


def test_broker_unreachable_is_503(fresh_database_url: str) -> None:
    port = _closed_port()
    for url in (f"redis://127.0.0.1:{port}/0", f"amqp://guest:guest@127.0.0.1:{port}//"):
        app = make_test_app(fresh_database_url, BROKER_URL=url)
        response = app.test_client().get("/readyz")
        assert response.status_code == 503, url
        assert response.get_json()["checks"]["broker"] == "unreachable"
        assert response.get_json()["checks"]["database"] == "ok"
        app.extensions["gin"]["engine"].dispose()
