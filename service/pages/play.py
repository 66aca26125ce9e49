"""The practice table (``/play``): a person with a player token sits at a practice table
(play money) of any game against the practice bots or other people, and plays by clicking;
or watches a public table as a spectator.

The page is a client of the public API and nothing else: its scripts (``static/play/``) call
the lobby, seats, match view (long-polled with ``wait_for_version``) and actions endpoints
with the player token in the ``Authorization`` header. The token is pasted into the page (or
handed over in the URL's fragment, which never reaches a server) and kept in the tab's
``sessionStorage`` only (docs/pages.md, "Practice table").
"""

from __future__ import annotations

from flask import Blueprint, render_template

from service.pages import page_headers

blp = Blueprint("play", __name__, template_folder="templates")
blp.after_request(page_headers)


@blp.get("/play")
def play() -> str:
    """The practice table."""
    return render_template("pages/play/play.html")
