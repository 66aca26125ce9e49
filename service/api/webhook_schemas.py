"""Request and response bodies of the webhook endpoints and their delivery log."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from service.api.schemas import (
    ListEnvelope,
    ListQuery,
    StrictBoolean,
    StrictInteger,
    Timestamp,
)
from service.db.webhook_models import DELIVERY_STATUSES
from service.usecases.webhooks import (
    DEFAULT_GRACE,
    EVENT_TYPES,
    MAX_GRACE,
    MAX_URL_LENGTH,
    URL_PATTERN,
)

_TYPES = ", ".join(EVENT_TYPES)


def _event_types(**kwargs: Any) -> fields.List:
    # Checked by the use case (one message naming the field); documented here.
    return fields.List(
        fields.String(metadata={"enum": list(EVENT_TYPES)}),
        allow_none=True,
        metadata={
            "description": f"Event types to receive ({_TYPES}), at least one; null or left "
            "out: all.",
            "example": ["match.finished", "settlement.completed"],
            "minItems": 1,
        },
        **kwargs,
    )


def _url(**kwargs: Any) -> fields.String:
    # Checked by the use case (service.usecases.webhooks.check_url); documented here.
    return fields.String(
        metadata={
            "description": "An absolute `http` or `https` URL of at most "
            f"{MAX_URL_LENGTH} ASCII characters: no credentials, no fragment, a port from 1 to "
            "65535. It must not point at a loopback, private, link-local or otherwise "
            "non-public address (`localhost`, `127.0.0.1`, `10.0.0.0/8`, `169.254.169.254`, "
            "`[::1]`, `fc00::/7`...): such a URL is refused, unless the service allows private "
            "networks (development). A host name is checked again at every delivery, against "
            "every address it then resolves to.",
            "example": "https://ops.example/gin",
            "format": "uri",
            "pattern": URL_PATTERN,
            "maxLength": MAX_URL_LENGTH,
        },
        **kwargs,
    )


class WebhookEndpointIn(Schema):
    url = _url(required=True)
    event_types = _event_types(load_default=None)
    description = fields.String(load_default="", validate=validate.Length(max=255))
    enabled = StrictBoolean(load_default=True)


class WebhookEndpointPatch(Schema):
    url = _url()
    event_types = _event_types()
    description = fields.String(validate=validate.Length(max=255))
    enabled = StrictBoolean(
        metadata={"description": "false: no new deliveries; pending ones are cancelled."}
    )


class RotateSecretIn(Schema):
    grace_period_seconds = StrictInteger(
        load_default=int(DEFAULT_GRACE.total_seconds()),
        maximum=int(MAX_GRACE.total_seconds()),
        metadata={
            "description": "How long the old secret keeps signing beside the new one "
            "(a second v1= value); 0 retires it at once."
        },
    )


class WebhookEndpointOut(Schema):
    id = fields.String(required=True, metadata={"example": "whk_01JDX..."})
    object = fields.Constant("webhook_endpoint")
    url = fields.String(required=True)
    description = fields.String(required=True)
    event_types = fields.List(fields.String(), allow_none=True, required=True)
    enabled = fields.Boolean(required=True)
    secret = fields.String(
        metadata={
            "description": "The signing secret (whsec_...): only in the responses that "
            "create the endpoint or rotate its secret."
        }
    )
    previous_secret_expires_at = Timestamp(
        allow_none=True,
        required=True,
        metadata={"description": "After a rotation: until when the old secret also signs."},
    )
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)
    deleted = fields.Boolean(metadata={"description": "Only in the answer to DELETE."})


class WebhookEndpointList(ListEnvelope):
    data = fields.List(fields.Nested(WebhookEndpointOut), required=True)


class DeliveryQuery(ListQuery):
    status = fields.String(validate=validate.OneOf(DELIVERY_STATUSES))


class WebhookAttemptOut(Schema):
    number = fields.Integer(required=True, metadata={"description": "1 for the first attempt."})
    manual = fields.Boolean(required=True, metadata={"description": "Asked by a redelivery."})
    attempted_at = Timestamp(required=True)
    status_code = fields.Integer(allow_none=True, required=True)
    error = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "Why it failed: HTTP status, timeout or connection error."},
    )
    duration_ms = fields.Integer(required=True)
    next_attempt_at = Timestamp(
        allow_none=True,
        required=True,
        metadata={"description": "The retry this attempt scheduled, if any."},
    )


class WebhookDeliveryOut(Schema):
    id = fields.String(required=True, metadata={"example": "whd_01JDX..."})
    object = fields.Constant("webhook_delivery")
    endpoint_id = fields.String(required=True)
    event_id = fields.String(required=True)
    event_type = fields.String(required=True)
    status = fields.String(
        required=True, metadata={"description": "pending, delivered, failed or cancelled"}
    )
    attempt_count = fields.Integer(required=True)
    next_attempt_at = Timestamp(allow_none=True, required=True)
    last_attempt_at = Timestamp(allow_none=True, required=True)
    last_status_code = fields.Integer(allow_none=True, required=True)
    last_error = fields.String(allow_none=True, required=True)
    delivered_at = Timestamp(allow_none=True, required=True)
    created_at = Timestamp(required=True)
    attempts = fields.List(fields.Nested(WebhookAttemptOut), required=True)


class WebhookDeliveryList(ListEnvelope):
    data = fields.List(fields.Nested(WebhookDeliveryOut), required=True)
