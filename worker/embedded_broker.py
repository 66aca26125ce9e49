"""The embedded default broker: kombu's filesystem transport, each message written whole.

kombu's filesystem transport writes a message by creating its file in the queue folder and
then writing into it; a consumer lists the folder, takes the file and reads it, without
waiting for the writer. A consumer that comes by in between reads an empty message, and the
Celery worker stops on it ("Unrecoverable error: JSONDecodeError"), the message lost. The
closer the worker polls (:data:`worker.celery_app.FILESYSTEM_POLLING_SECONDS`), the likelier:
at twenty looks a second it happened within a minute of ``gin-service run``. Here a message
is written in a staging folder beside the queue and renamed into it once complete, so a
consumer sees the whole of it or nothing (a rename within one file system is atomic).
Everything else is kombu's.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps
from kombu.utils.objects import cached_property


class Channel(filesystem.Channel):
    """kombu's filesystem channel, publishing each message by an atomic rename."""

    @cached_property
    def staging_folder(self) -> str:
        """Where messages are written before they are moved into the queue folder (on the
        same file system: the ``staging_folder`` transport option, else a ``staging`` folder
        beside the queue folder)."""
        folder = self.transport_options.get("staging_folder")
        return str(folder or Path(self.data_folder_out).parent / "staging")

    # kombu's filesystem channel (payload, **kwargs) and its base (message) differ already.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Put ``payload`` onto ``queue``: named as kombu names it (the time in milliseconds
        first, so a folder listing sorts messages oldest first), written in full, then moved
        in."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        staged = os.path.join(self.staging_folder, name)
        try:
            with open(staged, "wb") as out:
                out.write(dumps(payload).encode())  # type: ignore[no-untyped-call]
            os.replace(staged, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc


class Transport(filesystem.Transport):
    """kombu's filesystem transport with :class:`Channel`."""

    Channel = Channel
