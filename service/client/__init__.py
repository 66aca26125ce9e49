"""The typed Python client of the service's HTTP API (used by the simulator and the tests)."""

from service.client.api import (
    ApiProblem,
    Endpoint,
    FieldProblem,
    GinClient,
    MatchEvent,
    new_key,
    operations,
)

__all__ = [
    "ApiProblem",
    "Endpoint",
    "FieldProblem",
    "GinClient",
    "MatchEvent",
    "new_key",
    "operations",
]
