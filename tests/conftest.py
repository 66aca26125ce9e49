"""Shared test configuration: bounded hypothesis profiles (CI stays well under its budget)."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import socket
import sys
import tempfile
import warnings

from hypothesis import HealthCheck, settings

# A property test's examples follow the profile: the developer's default (``dev``, used when
# HYPOTHESIS_PROFILE is unset) keeps tests/unit to seconds, ``quick`` (``make unit``) is a
# smoke run, and ``ci`` (.ci/run) is the thorough one. A test whose examples are whole games
# states its count under ci with tests/unit/budget.py's ``examples(N)``; the lighter profiles
# run the same share of N as their max_examples is of ci's.
settings.register_profile("dev", max_examples=10, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=5, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The in-process Celery app (tasks kicked by requests) uses the embedded filesystem broker in a
# temporary folder, never the repo's var/; tests that need a real broker and worker start their
# own processes with TEST_BROKER_URL. (CELERY_BROKER_URL would override every Celery app in
# this process, the real-broker test clients included, so it must stay unset here.)
# Every test process has a folder of its own: pytest-xdist's workers inherit the environment of
# the process that started them, so a folder made by a test process (GIN_TEST_VAR_DIR names it)
# is replaced, while one set from outside is kept.
os.environ.pop("CELERY_BROKER_URL", None)
if "GIN_VAR_DIR" not in os.environ or os.environ["GIN_VAR_DIR"] == os.environ.get(
    "GIN_TEST_VAR_DIR"
):
    _var_dir = tempfile.mkdtemp(prefix="gin-test-var-")
    os.environ["GIN_VAR_DIR"] = os.environ["GIN_TEST_VAR_DIR"] = _var_dir
    atexit.register(shutil.rmtree, _var_dir, ignore_errors=True)


# --- Database and HTTP fixtures for the service (integration and api tests) ---------------------
#
# Tests run on a throwaway database built by the Alembic migrations: a SQLite file in a temp
# directory by default, or, when TEST_DATABASE_URL is set (CI), a PostgreSQL database
# ``test_<random>`` created on that server for this run and dropped afterwards.

import secrets  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Generator, Iterable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

import pytest  # noqa: E402

# --- Several test processes (pytest-xdist) -------------------------------------------------------
#
# Each process makes its own databases, var folder, broker queues and key prefixes (below and in
# tests/integration/workers.py). What they share is the machine's cores: a test marked
# ``timing`` asserts a wall-clock bound, so it runs with no other test beside it. Every test
# holds a lock of the run (in the folder the controlling process names in GIN_TEST_LOCK_DIR)
# while it runs, setup and teardown included: shared for most tests, exclusive for ``timing``
# ones. A second lock, the turnstile, taken on the way in and held while waiting, keeps the other
# processes' stream of tests from starving an exclusive one.


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        folder = tempfile.mkdtemp(prefix="gin-test-locks-")
        os.environ["GIN_TEST_LOCK_DIR"] = folder  # the workers, started later, inherit it
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        config.add_cleanup(lambda: os.environ.pop("GIN_TEST_LOCK_DIR", None))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    folder = os.environ.get("GIN_TEST_LOCK_DIR")
    if not folder or "PYTEST_XDIST_WORKER" not in os.environ:
        return (yield)
    alone = item.get_closest_marker("timing") is not None
    with (
        open(os.path.join(folder, "turnstile"), "a") as turnstile,
        open(os.path.join(folder, "tests"), "a") as tests,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        return (yield)  # closing the file releases its lock


# --- The contract fuzzing's figures, over every test process (tests/contract/tally.py) --------


_contract_tally: Any = None
_contract_lines: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _contract_tally
    if "PYTEST_XDIST_WORKER" in os.environ or "test_schemathesis.py::" not in report.nodeid:
        return  # the controlling process (or the only one) reads every test's report
    if _contract_tally is None:
        from tests.contract.tally import Tally

        _contract_tally = Tally()
    _contract_tally.add(report.nodeid, report.when, report.user_properties)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _contract_tally is None:
        return
    figures, wrong = _contract_tally.findings()
    _contract_lines[:] = figures + [f"FAILED contract fuzzing: {w}" for w in wrong]
    if wrong and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _contract_lines:
        terminalreporter.write_line(line, red=line.startswith("FAILED"))


def _name_leaked_connections() -> None:
    """A psycopg connection garbage-collected while still open warns (an error here) long
    after the test that opened it, in whichever test the collector happens to run: say which
    test opened it, so the leak can be found from one failing run."""
    try:
        import psycopg
        from psycopg import Connection
    except ImportError:  # pragma: no cover - psycopg is a declared dependency
        return
    connect, delete = Connection.connect.__func__, Connection.__del__  # type: ignore[attr-defined]

    def connect_and_remember(cls: Any, *args: Any, **kwargs: Any) -> Any:
        connection = connect(cls, *args, **kwargs)
        connection._gin_opened_in = os.environ.get("PYTEST_CURRENT_TEST", "no test")
        return connection

    def warn_naming_the_test(self: Any, *args: Any) -> None:
        opened_in = getattr(self, "_gin_opened_in", None)
        if opened_in is None or getattr(self, "closed", True) or hasattr(self, "_pool"):
            delete(self, *args)
            return
        if sys.meta_path is None:  # the interpreter is exiting: no test is left to blame
            return
        leak = f"a connection opened in {opened_in} was never closed"
        warnings.warn(leak, ResourceWarning, stacklevel=2)

    Connection.connect = classmethod(connect_and_remember)  # type: ignore[method-assign,assignment]
    psycopg.connect = Connection.connect  # the module's name was bound at its import
    Connection.__del__ = warn_naming_the_test  # type: ignore[method-assign]


_name_leaked_connections()

TEST_SECRET_KEY = "test-secret-key"
T = TypeVar("T")


#: Per server (its maintenance database's URL): the database this test process migrated once,
#: which the throwaway databases with this tree's migrations are copied from.
_MIGRATED_TEMPLATES: dict[str, str] = {}


def _create_database(maintenance: Any, name: str, template: str | None = None) -> None:
    """``name``, commented with this process's id: .ci/run drops the throwaway databases a
    killed run left behind, and keeps those of a test process still running."""
    from sqlalchemy import create_engine, text

    admin = create_engine(maintenance, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            copied = f' TEMPLATE "{template}"' if template else ""
            connection.execute(text(f'CREATE DATABASE "{name}"{copied}'))
            made_by = f"gin test process, pid {os.getpid()}"
            connection.execute(text(f"COMMENT ON DATABASE \"{name}\" IS '{made_by}'"))
    finally:
        admin.dispose()


def _drop_database(maintenance: Any, name: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(maintenance, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _migrated_template(maintenance: Any) -> str:
    """This process's database migrated by this tree's migrations on ``maintenance``'s server,
    made on first use and dropped at exit: copying it (CREATE DATABASE ... TEMPLATE, a file
    copy) gives the same database as running every migration again, in a fraction of the
    time. Nothing else ever connects to it (PostgreSQL copies only an unused template)."""
    from service.db.migrate import upgrade

    server = maintenance.render_as_string(hide_password=False)
    if server not in _MIGRATED_TEMPLATES:
        name = f"test_{secrets.token_hex(6)}"
        _create_database(maintenance, name)
        atexit.register(_drop_database, maintenance, name)
        upgrade(maintenance.set(database=name).render_as_string(hide_password=False))
        _MIGRATED_TEMPLATES[server] = name
    return _MIGRATED_TEMPLATES[server]


@contextmanager
def throwaway_postgres(
    base_url: str, migrate: Callable[[str], None] | None = None
) -> Iterator[str]:
    """A fresh PostgreSQL database on ``base_url``'s server, migrated (by ``migrate``, else a
    copy of one this process migrated with this tree's migrations), dropped on exit."""
    from sqlalchemy.engine import make_url

    name = f"test_{secrets.token_hex(6)}"
    # CREATE/DROP DATABASE run from the maintenance database, which always exists.
    maintenance = make_url(base_url).set(database="postgres")
    template = None if migrate else _migrated_template(maintenance)
    _create_database(maintenance, name, template)
    url = make_url(base_url).set(database=name).render_as_string(hide_password=False)
    try:
        if migrate:
            migrate(url)
        yield url
    finally:
        _drop_database(maintenance, name)


@contextmanager
def throwaway_sqlite(directory: Any) -> Iterator[str]:
    from service.db.migrate import upgrade

    path = directory / f"test_{secrets.token_hex(6)}.sqlite"
    url = f"sqlite:///{path}"
    upgrade(url)
    yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A migrated SQLite file that tests copy instead of migrating again."""
    directory = tmp_path_factory.mktemp("sqlite-template")
    with throwaway_sqlite(directory) as url:
        return url.removeprefix("sqlite:///")


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The run's shared database (PostgreSQL when TEST_DATABASE_URL is set, else SQLite)."""
    base = os.environ.get("TEST_DATABASE_URL")
    if base:
        with throwaway_postgres(base) as url:
            yield url
    else:
        with throwaway_sqlite(tmp_path_factory.mktemp("db")) as url:
            yield url


@pytest.fixture
def fresh_database_url(tmp_path: Any, sqlite_template: str) -> Iterator[str]:
    """A database of the test's own, for tests that tamper with rows or drop triggers."""
    base = os.environ.get("TEST_DATABASE_URL")
    if base:
        with throwaway_postgres(base) as url:
            yield url
    else:
        path = tmp_path / "fresh.sqlite"
        shutil.copy(sqlite_template, path)
        yield f"sqlite:///{path}"


def make_test_app(url: str, **overrides: Any) -> Any:
    from service import create_app

    return create_app(
        {
            "TESTING": True,
            "DATABASE_URL": url,
            "SECRET_KEY": TEST_SECRET_KEY,
            "BROKER_URL": "memory://",
            **overrides,
        }
    )


@contextmanager
def serving(url: str, **overrides: Any) -> Iterator[Any]:
    """A test app (:func:`make_test_app`) whose connections are closed afterwards."""
    application = make_test_app(url, **overrides)
    try:
        yield application
    finally:
        application.extensions["gin"]["engine"].dispose()


@pytest.fixture(scope="session")
def app(database_url: str) -> Iterator[Any]:
    with serving(database_url) as application:
        yield application


def plan_of(engine: Any, statement: Any) -> str:
    """The plan the database picks for ``statement`` (literal values bound in), as text. On
    PostgreSQL sequential scans are ruled out, so that a small table's plan shows which
    index the query can use."""
    compiled = statement.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as connection:  # driver SQL: a literal's ":" is no parameter
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            return "\n".join(connection.exec_driver_sql(f"EXPLAIN {compiled}").scalars())
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
        return "\n".join(str(row[-1]) for row in rows)


@contextmanager
def nested_plans(app: Any, *settings: str) -> Iterator[list[str]]:
    """PostgreSQL: the plan of every statement that ``app`` runs inside the block, nested ones
    included (triggers, functions), with the rows each node read (auto_explain, sent to the
    client as notices); ``settings`` (``"enable_seqscan = off"``) apply to those connections.
    The pool is emptied on entry and exit: the block's connections are its own, and keep the
    plans they cache from one request to the next."""
    from sqlalchemy import event

    engine = app.extensions["gin"]["engine"]
    plans: list[str] = []

    def explain_every_statement(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.add_notice_handler(lambda d: plans.append(d.message_primary))
        with dbapi_connection.cursor() as cursor:
            cursor.execute("LOAD 'auto_explain'")
            for setting in (
                "log_min_duration = 0",
                "log_nested_statements = on",
                "log_analyze = on",
                "log_timing = off",
                "log_level = notice",
            ):
                cursor.execute(f"SET auto_explain.{setting}")
            for setting in settings:
                cursor.execute(f"SET {setting}")
        dbapi_connection.commit()

    engine.dispose()
    event.listen(engine, "connect", explain_every_statement)
    try:
        yield plans
    finally:
        event.remove(engine, "connect", explain_every_statement)
        engine.dispose()


def wait_until(
    check: Callable[[], bool],
    timeout: float = 10.0,
    what: str = "the condition",
    interval: float = 0.002,
) -> None:
    """Poll ``check`` until it is true: for progress made by another thread or process whose
    only signal is state it changes (a queue's length, the database)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def counter_values(metric: str, label: str, values: Iterable[str]) -> dict[str, float]:
    """A Prometheus counter's samples (``<metric>_total``) by the values of one label."""
    from prometheus_client import REGISTRY

    return {
        value: REGISTRY.get_sample_value(f"{metric}_total", {label: value}) or 0.0
        for value in values
    }


class CounterMoved:
    """Asserts how far each value of a counter's label moved inside the ``with`` block:
    ``expected`` names the values that moved and by how much (the rest stay put)."""

    def __init__(self, metric: str, label: str, values: Iterable[str], **expected: int) -> None:
        self.metric, self.label, self.values = metric, label, tuple(values)
        self.expected = expected

    def __enter__(self) -> CounterMoved:
        self.before = counter_values(self.metric, self.label, self.values)
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            after = counter_values(self.metric, self.label, self.values)
            moved = {k: int(after[k] - self.before[k]) for k in after if after[k] != self.before[k]}
            assert moved == self.expected


def in_unit(session: Any, use_case: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``use_case(session, *args, **kwargs)`` as one unit of work, as views and tasks run it."""
    from service.usecases import unit_of_work

    return unit_of_work.run(session, use_case, session, *args, **kwargs)


@pytest.fixture
def session(app: Any) -> Iterator[Any]:
    db = app.extensions["gin"]["sessionmaker"]()
    yield db
    db.close()


class ApiClient:
    """One HTTP client helper for the api tests: JSON in, response out, a bearer token."""

    def __init__(self, client: Any, token: str | None = None) -> None:
        self.client = client
        self.token = token

    def as_(self, token: str | None) -> ApiClient:
        return ApiClient(self.client, token)

    def request(
        self,
        method: str,
        path: str,
        json: Any = None,
        key: str | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        sent = dict(headers or {})
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        if key is not None:
            sent["Idempotency-Key"] = key
        return self.client.open(path, method=method, json=json, headers=sent, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, json=json if json is not None else {}, **kwargs)

    def put(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("PUT", path, json=json, **kwargs)

    def patch(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("PATCH", path, json=json, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)

    # Small factories
    def new_player(self, currency: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {
            "external_id": f"ext-{secrets.token_hex(4)}",
            "display_name": "Alice",
            "display_currency": currency,
            **fields,
        }
        response = self.post("/v1/players", body)
        assert response.status_code == 201, response.get_json()
        return dict(response.get_json())

    def deposit(
        self, player_id: str, amount: int, currency: str = "EUR", key: str | None = None
    ) -> Any:
        return self.post(
            f"/v1/players/{player_id}/deposits",
            {"amount": {"amount": amount, "currency": currency}},
            key=key or secrets.token_hex(8),
        )


def new_operator(app: Any, name: str = "Acme Casino") -> tuple[str, str]:
    """(operator id, API key) of a fresh operator."""
    from service.clock import utcnow
    from service.usecases.operators import create_operator

    db = app.extensions["gin"]["sessionmaker"]()
    try:
        operator, issued = in_unit(db, create_operator, name, utcnow())
    finally:
        db.close()
    return operator.id, issued.secret


@pytest.fixture
def api(app: Any) -> ApiClient:
    """A client authenticated as a fresh operator (so tests never see each other's data)."""
    operator_id, key = new_operator(app)
    client = ApiClient(app.test_client(), key)
    client.operator_id = operator_id  # type: ignore[attr-defined]
    return client


@pytest.fixture
def other_api(app: Any) -> ApiClient:
    """A client of a second, unrelated operator."""
    operator_id, key = new_operator(app, "Other Operator")
    client = ApiClient(app.test_client(), key)
    client.operator_id = operator_id  # type: ignore[attr-defined]
    return client


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = dict(response.get_json())
    assert body["status"] == status and body["code"] == code
    assert body["type"] == f"/problems/{code}"  # a page of this service (test_http_edges)
    assert body["title"] and body["detail"]
    assert "Traceback" not in response.get_data(as_text=True)
    return body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
