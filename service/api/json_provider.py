"""Flask's JSON provider with :mod:`service.jsoncodec` encoding the responses."""

from __future__ import annotations

from typing import Any

from flask.json.provider import DefaultJSONProvider
from werkzeug.sansio.response import Response as BaseResponse

from service import jsoncodec


class FastJSONProvider(DefaultJSONProvider):
    """Responses are encoded by orjson (compact, key order kept; Flask's own conversions for
    dates, decimals, UUIDs and dataclasses still apply through ``default``). Requests are still
    decoded by the standard library (see :mod:`service.jsoncodec`)."""

    sort_keys = False

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if kwargs:  # an explicit indent or separator: the standard library's way
            return super().dumps(obj, **kwargs)
        return jsoncodec.dumps_bytes(obj, default=self.default).decode()

    def response(self, *args: Any, **kwargs: Any) -> BaseResponse:
        obj = self._prepare_response_obj(args, kwargs)
        if self.indents:
            return super().response(*args, **kwargs)  # indented for people
        response_class: Any = self._app.response_class
        compact: BaseResponse = response_class(self.body(obj), mimetype=self.mimetype)
        return compact

    @property
    def indents(self) -> bool:
        """Whether responses are indented for people (debug mode), not sent compact."""
        return bool(self._app.debug and self.compact is None) or self.compact is False

    def body(self, obj: Any) -> bytes:
        """The body :meth:`response` sends for ``obj`` (compact, newline-terminated)."""
        return jsoncodec.dumps_bytes(obj, default=self.default) + b"\n"
