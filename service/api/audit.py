"""The audit: a settlement replayed and reconciled, and the invariants of the operator's books."""

from __future__ import annotations

from flask import Response, jsonify
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from service.api.context import db_session, principal, unit
from service.api.problems import documents
from service.api.schemas import Timestamp
from service.clock import rfc3339, utcnow
from service.errors import Forbidden, NotFound, TokenExpired, Unauthenticated
from service.usecases import audit, tournament_audit

blp = Blueprint("audit", __name__, url_prefix="/v1/audit", description="Audit.")


class DiscrepancyOut(Schema):
    field = fields.String(
        required=True,
        metadata={
            "example": "statement.payouts",
            "description": "What differs: `hands[N]...`, `match_actions[i]`, "
            "`statement.<figure>`, `ledger.capture[<account>]`, "
            "`ledger.escrow[<account>]`, `ledger.chain[...]`, ...",
        },
    )
    expected = fields.Raw(
        allow_none=True,
        required=True,
        metadata={"description": "What the replay, recomputation or invariant says it should be."},
    )
    actual = fields.Raw(allow_none=True, required=True, metadata={"description": "What is stored."})
    detail = fields.String(metadata={"description": "Why it was expected, or what broke."})


class SettlementAuditOut(Schema):
    object = fields.Constant("settlement_audit")
    settlement_id = fields.String(required=True)
    match_id = fields.String(required=True)
    operator_id = fields.String(required=True)
    format = fields.String(allow_none=True, required=True)
    hands_replayed = fields.Integer(required=True)
    ok = fields.Boolean(required=True, metadata={"description": "True when nothing differs."})
    discrepancies = fields.List(fields.Nested(DiscrepancyOut), required=True)
    audited_at = Timestamp(required=True)


class LedgerAuditOut(Schema):
    object = fields.Constant("ledger_audit")
    operator_id = fields.String(allow_none=True, required=True)
    ok = fields.Boolean(required=True)
    accounts_checked = fields.Integer(required=True)
    transactions_checked = fields.Integer(required=True)
    entries_checked = fields.Integer(required=True)
    settled_matches_checked = fields.Integer(required=True)
    discrepancies = fields.List(fields.Nested(DiscrepancyOut), required=True)
    audited_at = Timestamp(required=True)


@blp.route("/settlements/<match_id>")
@blp.response(200, SettlementAuditOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
@unit
def audit_settlement(match_id: str) -> Response:
    """Audit a match's settlement (operator only).

    Every hand is dealt again from its revealed seed and replayed from its action log, the
    statement is recomputed and compared with the stored one, and the ledger capture and the
    match's escrow are checked against it. A 200 carries the findings: `ok` is false when
    anything differs, and each discrepancy names the field, the expected and the stored value.
    """
    started = utcnow()
    report = audit.audit_match(db_session(), principal(), match_id).to_dict()
    report["audited_at"] = rfc3339(started)
    return jsonify(report)


class TournamentAuditOut(Schema):
    object = fields.Constant("tournament_audit")
    tournament_id = fields.String(required=True)
    operator_id = fields.String(required=True)
    status = fields.String(
        required=True, metadata={"enum": ["open", "running", "finished", "cancelled"]}
    )
    matches_checked = fields.Integer(
        required=True, metadata={"description": "Matches whose recorded result was checked."}
    )
    ok = fields.Boolean(required=True, metadata={"description": "True when nothing differs."})
    discrepancies = fields.List(fields.Nested(DiscrepancyOut), required=True)
    audited_at = Timestamp(required=True)


@blp.route("/tournaments/<tournament_id>")
@blp.response(200, TournamentAuditOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden, NotFound)
@unit
def audit_tournament(tournament_id: str) -> Response:
    """Audit a tournament (operator only).

    The seed's commitment and the draw are recomputed from the revealed seed and the
    entrants, the bracket is replayed from the draw and its matches' winners, and the money
    is checked against the ledger: the fees kept, each prize recomputed from the payout table
    and the standings (or each entry refunded whole), and nothing left held once it is over.
    A 200 carries the findings: `ok` is false when anything differs.
    """
    started = utcnow()
    report = tournament_audit.audit_one(db_session(), principal(), tournament_id).to_dict()
    report["audited_at"] = rfc3339(started)
    return jsonify(report)


@blp.route("/ledger")
@blp.response(200, LedgerAuditOut)
@documents(blp, Unauthenticated, TokenExpired, Forbidden)
@unit
def audit_ledger() -> Response:
    """Check the invariants of the operator's books.

    Every transaction balanced, every account's balance equal to the sum of its entries, the
    hash chains intact, and the escrow of every settled match empty.
    """
    started = utcnow()
    report = audit.ledger_report(db_session(), principal()).to_dict()
    report["audited_at"] = rfc3339(started)
    return jsonify(report)
