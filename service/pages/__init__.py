"""Pages for people: the operator console (``/console``), hand replay and verification
(``/verify``) and the practice table (``/play``), served by the same Flask app as the API.

Every page is a server-rendered template with small JavaScript modules from ``static/``
(served at ``/assets/``; no CDN, no build step). Each page answers with a
Content-Security-Policy that forbids inline script and any other origin, so a page can only
run this package's own files. Pages call the public API like any client does.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response, render_template

# The policy of every page: its own scripts, styles, images and API calls, nothing inline,
# never framed. WebCrypto needs no permission; fetch() stays on this origin.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)

blp = Blueprint(
    "pages",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/assets",
)


def page_headers(response: Response) -> Response:
    """The headers of every page (each page blueprint applies it with ``after_request``)."""
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


blp.after_request(page_headers)


@blp.get("/")
def home() -> str:
    """The service's front page: where each page for people is."""
    return render_template("pages/home.html")


def init_pages(app: Flask) -> None:
    """Register every page's blueprint (each page lives in a module of this package, its
    templates under ``templates/pages/<page>/`` and its scripts under ``static/<page>/``)."""
    app.register_blueprint(blp)
    # Each page's endpoints are named under ``pages.`` (``pages.play.play``), like this
    # module's own: the OpenAPI test tells HTML pages from API operations by that prefix.
    from service.pages import console, play, verify  # they import page_headers from here

    app.register_blueprint(console.blp)
    app.register_blueprint(verify.blp)
    app.register_blueprint(play.blp, name_prefix="pages")
