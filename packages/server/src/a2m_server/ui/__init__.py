"""The agent memory page: what each agent knows, in a browser, served by the server itself
under ``/ui/`` (``a2m-server serve``, or any app :func:`a2m_server.bindings.http.create_app`
builds).

Server-rendered HTML that reads without JavaScript; a small script of its own
(``static/ui.js``) edits rows in place. Nothing is fetched from elsewhere. Reads are scoped
to the signed-in principal exactly as the API's are; every change is a protocol call
(``memory/remember``, ``memory/reinforce``, ``memory/forget``)."""

from ._app import create_ui_app

__all__ = ["UI_PREFIX", "create_ui_app"]

UI_PREFIX = "/ui"
"""Where the page is served."""
