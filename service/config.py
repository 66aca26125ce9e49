"""Settings from environment variables, with embedded defaults that need no server.

With nothing set, the service uses a SQLite file under ``var/`` and a Celery broker backed by
the same kind of file store, so a newcomer's first command works without PostgreSQL or Redis.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DEFAULT_VAR_DIR = Path(os.environ.get("GIN_VAR_DIR", "var"))

#: Idempotency keys are kept at least this long (API_CONVENTIONS: "at least 24 hours").
MIN_IDEMPOTENCY_RETENTION_HOURS = 24

#: What the API reads of a request beyond its body (``MAX_CONTENT_LENGTH``): longer is refused
#: as a problem (414, 431); gunicorn's own limits lie beyond these (deploy/gunicorn.conf.py).
MAX_REQUEST_TARGET_BYTES = 4096  # the path and query
MAX_HEADER_FIELDS = 100
MAX_HEADER_FIELD_BYTES = 16384  # one "Name: value"
DEFAULT_MAX_CONTENT_LENGTH = 64 * 1024


class ConfigError(ValueError):
    """Raised when an environment variable holds a value the service cannot run with."""


def int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def bool_env(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def text_env(name: str, default: str) -> str:
    """The variable's text, stripped, or ``default`` when it is unset or blank."""
    raw = (os.environ.get(name) or "").strip()
    return raw or default


def optional_env(name: str) -> str | None:
    """The variable's text, stripped, or ``None`` when it is unset or blank."""
    return (os.environ.get(name) or "").strip() or None


def _rate_limit(name: str, default: str) -> str:
    """A rate limit string in the ``limits`` library's syntax ("300000 per minute", several
    joined by ";"), checked now so a typo fails at start-up rather than on the first request."""
    raw = os.environ.get(name) or default
    if raw == default:  # a default is good (the web app parses it); a worker, which has no
        # use for limits, starts without importing it (about 0.1 s)
        return raw
    from limits import parse_many

    try:
        parse_many(raw)
    except ValueError:
        raise ConfigError(
            f"{name} must be a rate limit like '1000 per minute', got {raw!r}"
        ) from None
    return raw


LOG_FORMATS = ("json", "text")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class Settings:
    database_url: str
    broker_url: str
    secret_key: str
    idempotency_retention_hours: int = 24
    player_token_ttl_seconds: int = 900
    db_pool_size: int = 10
    match_states_kept: int = 1024
    # Operations: logs, metrics and rate limits.
    log_format: str = "text"
    log_level: str = "INFO"
    metrics_token: str | None = None
    metrics_db_cache_seconds: int = 10
    ratelimit_enabled: bool = True
    ratelimit_storage_uri: str = "memory://"
    ratelimit_operator: str = "300000 per minute"
    ratelimit_player: str = "30000 per minute"
    ratelimit_anonymous: str = "30000 per minute"
    ratelimit_key_prefix: str = "gin"
    # Request bodies: a longer one is refused (413), unread by its Content-Length.
    max_content_length: int = DEFAULT_MAX_CONTENT_LENGTH
    # Webhooks may reach loopback and private addresses (service.outbound.targets): for
    # development only, in production that is server-side request forgery.
    webhook_allow_private_networks: bool = False
    # Workers and beat: how often beat sweeps for finished matches left unsettled.
    settlement_sweep_seconds: int = 5
    # The broker: Redis redelivers an unacknowledged task (a worker killed mid-task) after
    # this long; keys and the queue's name, so that deployments can share a server.
    celery_visibility_timeout: int = 6 * 3600
    celery_key_prefix: str | None = None
    celery_queue: str = "gin"
    # Change notices for waiting clients (service.live.notices): None picks the broker when
    # it is Redis, else datagram sockets in the var folder.
    notify_url: str | None = None

    def __post_init__(self) -> None:
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(f"LOG_FORMAT must be one of {LOG_FORMATS}, got {self.log_format!r}")
        if self.log_level not in LOG_LEVELS:
            raise ConfigError(f"LOG_LEVEL must be one of {LOG_LEVELS}, got {self.log_level!r}")
        if self.idempotency_retention_hours < MIN_IDEMPOTENCY_RETENTION_HOURS:
            raise ConfigError(
                "IDEMPOTENCY_RETENTION_HOURS must be at least "
                f"{MIN_IDEMPOTENCY_RETENTION_HOURS}, got {self.idempotency_retention_hours!r}"
            )
        if self.match_states_kept < 0:
            raise ConfigError(
                f"MATCH_STATES_KEPT must be 0 or more, got {self.match_states_kept!r}"
            )
        if self.max_content_length <= 0:
            raise ConfigError(
                f"MAX_CONTENT_LENGTH must be positive, got {self.max_content_length!r}"
            )
        if self.player_token_ttl_seconds <= 0:
            raise ConfigError(
                f"PLAYER_TOKEN_TTL_SECONDS must be positive, got {self.player_token_ttl_seconds!r}"
            )
        if self.settlement_sweep_seconds <= 0:
            raise ConfigError(
                f"SETTLEMENT_SWEEP_SECONDS must be positive, got {self.settlement_sweep_seconds!r}"
            )

    @classmethod
    def from_env(cls) -> Settings:
        var = DEFAULT_VAR_DIR
        return cls(
            database_url=os.environ.get("DATABASE_URL", f"sqlite:///{var.resolve()}/gin.sqlite"),
            # The embedded broker is kombu's filesystem transport: messages are files under
            # var/broker, shared by the web process, the worker and beat; no server needed.
            broker_url=os.environ.get("CELERY_BROKER_URL", f"filesystem://{var.resolve()}/broker"),
            secret_key=os.environ.get("SECRET_KEY", "dev-only-insecure-secret"),
            idempotency_retention_hours=int_env("IDEMPOTENCY_RETENTION_HOURS", 24),
            player_token_ttl_seconds=int_env("PLAYER_TOKEN_TTL_SECONDS", 900),
            db_pool_size=int_env("DB_POOL_SIZE", 10),
            match_states_kept=int_env("MATCH_STATES_KEPT", 1024),
            log_format=(os.environ.get("LOG_FORMAT") or "text").strip().lower(),
            log_level=(os.environ.get("LOG_LEVEL") or "INFO").strip().upper(),
            metrics_token=os.environ.get("METRICS_TOKEN") or None,
            metrics_db_cache_seconds=int_env("METRICS_DB_CACHE_SECONDS", 10),
            ratelimit_enabled=bool_env("RATELIMIT_ENABLED", True),
            ratelimit_storage_uri=os.environ.get("RATELIMIT_STORAGE_URI") or "memory://",
            ratelimit_operator=_rate_limit("RATELIMIT_OPERATOR", "300000 per minute"),
            ratelimit_player=_rate_limit("RATELIMIT_PLAYER", "30000 per minute"),
            ratelimit_anonymous=_rate_limit("RATELIMIT_ANONYMOUS", "30000 per minute"),
            ratelimit_key_prefix=os.environ.get("RATELIMIT_KEY_PREFIX") or "gin",
            max_content_length=int_env("MAX_CONTENT_LENGTH", DEFAULT_MAX_CONTENT_LENGTH),
            webhook_allow_private_networks=bool_env("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False),
            settlement_sweep_seconds=int_env("SETTLEMENT_SWEEP_SECONDS", 5),
            celery_visibility_timeout=int_env("CELERY_VISIBILITY_TIMEOUT", 6 * 3600),
            celery_key_prefix=optional_env("CELERY_KEY_PREFIX"),
            celery_queue=text_env("CELERY_QUEUE", "gin"),
            notify_url=optional_env("NOTIFY_URL"),
        )

    def as_flask_config(self) -> dict[str, Any]:
        return {key.upper(): value for key, value in asdict(self).items()}


def bind_address(default: str) -> str:
    """``GIN_BIND``, the HOST:PORT to serve on, or ``default``."""
    return optional_env("GIN_BIND") or default


def database_configured() -> bool:
    """Whether ``DATABASE_URL`` names a database (otherwise the embedded SQLite file)."""
    return optional_env("DATABASE_URL") is not None


def simulation_api_key() -> str | None:
    """``GIN_API_KEY``: the operator key ``gin-service simulate`` plays with."""
    return optional_env("GIN_API_KEY")


def refwallet_secrets() -> list[str]:
    """``REFWALLET_SECRET``: the reference operator wallet's signing secrets, comma-separated
    (several while a rotated one overlaps); none when unset."""
    raw = optional_env("REFWALLET_SECRET") or ""
    return [secret.strip() for secret in raw.split(",") if secret.strip()]


#: The file a Celery worker creates once it is ready, when the variable names one (set by
#: ``gin-service run`` for the worker it starts).
WORKER_READY_FILE_VARIABLE = "GIN_WORKER_READY_FILE"


def worker_ready_file() -> str | None:
    """``GIN_WORKER_READY_FILE``: where this worker says it is ready, if anywhere."""
    return optional_env(WORKER_READY_FILE_VARIABLE)


#: The folder where each gunicorn worker leaves a file named by its pid once it has booted,
#: when the variable names one (set by ``gin-service run``, which prints its banner after
#: every worker's boot lines).
WEB_READY_DIR_VARIABLE = "GIN_WEB_READY_DIR"


def web_ready_dir() -> str | None:
    """``GIN_WEB_READY_DIR``: where this server's workers say they have booted, if anywhere."""
    return optional_env(WEB_READY_DIR_VARIABLE)


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides``, for a child process it starts."""
    return {**os.environ, **overrides}


def allow_private_networks() -> None:
    """Let this process and the ones it starts reach loopback and private addresses
    (``WEBHOOK_ALLOW_PRIVATE_NETWORKS``; ``gin-service run --seamless-demo``, whose operator
    wallet listens on loopback). Development only."""
    os.environ["WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "1"


#: Where prometheus-client keeps the metrics of a server's processes (it reads the variable
#: itself, in every process, so a server that makes the folder exports it).
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def metrics_dir() -> str | None:
    """The multiprocess metrics folder in use, if any (read each time: a server sets it)."""
    return optional_env(METRICS_DIR_VARIABLE)


def use_metrics_dir(path: str) -> None:
    """Make ``path`` the metrics folder of this process and the ones it starts."""
    os.environ[METRICS_DIR_VARIABLE] = path


@dataclass(frozen=True)
class ServerSettings:
    """How a process serves, logs and exports metrics, read before (or without) the app:
    gunicorn's configuration file, ``gin-service run``, the Celery worker's signal handlers
    and the container health check. ``docs/configuration.md`` says what each one does."""

    bind: str | None = None  # GIN_BIND; None: the caller's own default
    web_concurrency: int | None = None  # None: the CPUs + 1
    worker_class: str = "gthread"
    threads: int = 8
    worker_connections: int = 10000
    timeout: int = 60
    graceful_timeout: int = 35
    keepalive: int = 5
    preload: bool = True
    max_requests: int = 10000
    max_requests_jitter: int | None = None  # None: a tenth of max_requests
    forwarded_allow_ips: str = "127.0.0.1"
    balance: bool = True
    access_log: bool = False
    log_format: str = "text"
    log_level: str | None = None  # None: the process's own default (INFO, or Celery's -l)
    worker_metrics_port: int | None = None
    worker_metrics_addr: str = "0.0.0.0"
    role_file: str = "/tmp/gin-role"

    def __post_init__(self) -> None:
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(f"LOG_FORMAT must be one of {LOG_FORMATS}, got {self.log_format!r}")
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ConfigError(f"LOG_LEVEL must be one of {LOG_LEVELS}, got {self.log_level!r}")

    @classmethod
    def from_env(cls) -> ServerSettings:
        port = optional_env("WORKER_METRICS_PORT")
        level = optional_env("LOG_LEVEL")
        concurrency = optional_env("WEB_CONCURRENCY")
        jitter = optional_env("GUNICORN_MAX_REQUESTS_JITTER")
        return cls(
            bind=optional_env("GIN_BIND"),
            web_concurrency=int_env("WEB_CONCURRENCY", 0) if concurrency else None,
            worker_class=text_env("GUNICORN_WORKER_CLASS", "gthread"),
            threads=int_env("GUNICORN_THREADS", 8),
            worker_connections=int_env("GUNICORN_WORKER_CONNECTIONS", 10000),
            timeout=int_env("GUNICORN_TIMEOUT", 60),
            graceful_timeout=int_env("GUNICORN_GRACEFUL_TIMEOUT", 35),
            keepalive=int_env("GUNICORN_KEEPALIVE", 5),
            preload=bool_env("GUNICORN_PRELOAD", True),
            max_requests=int_env("GUNICORN_MAX_REQUESTS", 10000),
            max_requests_jitter=int_env("GUNICORN_MAX_REQUESTS_JITTER", 0) if jitter else None,
            forwarded_allow_ips=text_env("FORWARDED_ALLOW_IPS", "127.0.0.1"),
            balance=bool_env("GUNICORN_BALANCE", True),
            access_log=bool_env("GUNICORN_ACCESS_LOG", False),
            log_format=text_env("LOG_FORMAT", "text").lower(),
            log_level=level.upper() if level else None,
            worker_metrics_port=int_env("WORKER_METRICS_PORT", 0) if port else None,
            worker_metrics_addr=text_env("WORKER_METRICS_ADDR", "0.0.0.0"),
            role_file=text_env("GIN_ROLE_FILE", "/tmp/gin-role"),
        )
