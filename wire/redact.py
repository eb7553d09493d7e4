"""Credentials out of what is shown or logged: URLs lose their user-info secrets, tokens their body.

Every tier prints URLs (Redis, regions, the LLM) in ``/status``, ``/health`` and logs; a
``redis://:PASSWORD@host`` there would hand the password to whoever reads them.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"


def redact_url(url: str) -> str:
    """``url`` with any password (or a bare user-info token) replaced by ``***``; host, port and path
    stay, so the URL still says where it points. Unparseable input is masked whole."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return MASK
    if not parts.username and parts.password is None:
        return url
    netloc = host or ""
    if ":" in netloc:  # an IPv6 literal
        netloc = f"[{netloc}]"
    if port is not None:
        netloc = f"{netloc}:{port}"
    if parts.password is not None:
        user = parts.username or ""
        netloc = f"{user}:{MASK}@{netloc}"
    else:  # https://TOKEN@host: the user name is the credential
        netloc = f"{MASK}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_SECRET_PARAM = re.compile(
    r"(?i)([?&](?:[^=&#]*(?:key|token|secret|password|auth|signature|sig|jwt)[^=&#]*)=)[^&#]*"
)


def redact_query(path: str) -> str:
    """A request path with the values of its secret-looking query parameters (``api_key``,
    ``token``, ``client_secret``, ...) replaced by ``***``: no route takes a key in its query, but a
    client may still send one, and the access log must not keep it."""
    return _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, path)


def redact_token(token: str, *, keep: int = 6) -> str:
    """The first ``keep`` characters of a secret and an ellipsis: enough to tell keys apart in a log."""
    return token[:keep] + "…"


__all__ = ["MASK", "redact_query", "redact_token", "redact_url"]
