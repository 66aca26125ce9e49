"""Gin Rummy match service.

``create_app`` is the Flask application factory; nothing is built or connected at import
time. The pure game rules live in :mod:`service.games` and import no framework.
"""

from __future__ import annotations

from typing import Any


def create_app(config: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    """Build the Flask application from the environment, overridden by ``config``."""
    from flask import Flask

    from service import observability
    from service.api import init_api
    from service.api.json_provider import FastJSONProvider
    from service.config import Settings
    from service.db import make_engine, make_sessionmaker
    from service.db.match_states import keep_decoded_states
    from service.observability import metrics, ratelimit, tasks
    from service.pages import init_pages

    app = Flask(__name__)
    app.json = FastJSONProvider(app)
    settings = Settings.from_env()
    app.config.from_mapping(settings.as_flask_config())
    if config:
        app.config.update(config)

    engine = make_engine(app.config["DATABASE_URL"], pool_size=app.config["DB_POOL_SIZE"])
    app.extensions["gin"] = {"engine": engine, "sessionmaker": make_sessionmaker(engine)}
    keep_decoded_states(
        engine, int(app.config["MATCH_STATES_KEPT"]), on_read=metrics.count_state_read
    )
    # Metrics, request logs and rate limits first: their before_request hooks then run before
    # the API's (the timer starts and the limit is checked before authentication).
    observability.init_app(app)
    api = init_api(app)
    init_pages(app)
    ratelimit.document(api)
    tasks.connect(logging_setup=False)  # requests' ids travel into the tasks they publish
    return app
