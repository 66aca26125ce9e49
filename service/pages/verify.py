"""Hand replay and verification (``/verify``): a finished hand's history, fetched by its id
with a credential the person types (``/verify?hand=<hand id>``) or pasted or uploaded, is
checked in the browser (WebCrypto, no network call: the commitment, the deck from the seeds,
every action against the replay) and stepped through from any seat's point of view or a
spectator's (docs/pages.md, "Verify a hand")."""

from __future__ import annotations

from flask import Blueprint, render_template

from service.pages import page_headers

blp = Blueprint("verify", __name__, template_folder="templates")
blp.after_request(page_headers)


@blp.get("/verify")
def verify() -> str:
    """The page; its script reads ``hand`` (a hand id) from the query string itself."""
    return render_template("pages/verify/verify.html")
