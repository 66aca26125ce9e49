"""Settings from environment variables, with embedded defaults that need no server.

With nothing set, the service uses a SQLite file under ``var/`` and a Celery broker backed by
the same kind of file store, so a newcomer's first command works without PostgreSQL or Redis.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_VAR_DIR = Path(os.environ.get("GIN_VAR_DIR", "var"))


@dataclass(frozen=True)
class Settings:
    database_url: str
    broker_url: str
    secret_key: str

    @classmethod
    def from_env(cls) -> Settings:
        var = DEFAULT_VAR_DIR
        return cls(
            database_url=os.environ.get("DATABASE_URL", f"sqlite:///{var.resolve()}/gin.sqlite"),
            broker_url=os.environ.get(
                "CELERY_BROKER_URL", f"sqla+sqlite:///{var.resolve()}/broker.sqlite"
            ),
            secret_key=os.environ.get("SECRET_KEY", "dev-only-insecure-secret"),
        )

    def as_flask_config(self) -> dict[str, str]:
        return {key.upper(): value for key, value in asdict(self).items()}
