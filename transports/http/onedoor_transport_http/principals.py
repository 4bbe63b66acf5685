"""Tokens that name principals: the ``tokens_file`` option.

One line per token, ``PRINCIPAL TOKEN`` (blank lines and ``#`` comments ignored). Each
token (16+ characters) names the principal its requests act as; a principal may have
several tokens (rotation), a token names exactly one principal. The single ``token``
option is the principal ``local``. Doors read the principal with
``ServeContext.principal_of(scope)``: threads, questions and runs belong to it.
"""

from __future__ import annotations

import re
from pathlib import Path

from onedoor import LOCAL_PRINCIPAL, OptionsError

MIN_TOKEN = 16
_PRINCIPAL = re.compile(r"[A-Za-z0-9_.@:-]{1,128}")


def read_tokens_file(path: str | Path) -> dict[str, str]:
    """``{token: principal}`` from a tokens file; one :class:`OptionsError` naming the
    line for anything wrong (the token itself is never echoed)."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OptionsError(f"tokens_file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionsError(f"tokens_file {path} cannot be read: {exc}") from None
    tokens: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        where = f"tokens_file {path}, line {number}"
        if len(parts) != 2:
            raise OptionsError(f"{where}: write PRINCIPAL TOKEN (two words)")
        principal, token = parts
        if not _PRINCIPAL.fullmatch(principal):
            raise OptionsError(f"{where}: a principal is 1-128 letters, digits or _.@:-")
        if len(token) < MIN_TOKEN:
            raise OptionsError(f"{where}: the token must be at least {MIN_TOKEN} characters")
        if tokens.get(token, principal) != principal:
            raise OptionsError(f"{where}: this token already names principal {tokens[token]!r}")
        tokens[token] = principal
    if not tokens:
        raise OptionsError(f"tokens_file {path} names no token")
    return tokens


def all_tokens(token: str, tokens_file: str) -> dict[str, str]:
    """Every accepted token and its principal: the file's, plus ``token`` as ``local``."""
    tokens = read_tokens_file(tokens_file) if tokens_file else {}
    if token:
        if tokens.get(token, LOCAL_PRINCIPAL) != LOCAL_PRINCIPAL:
            raise OptionsError("the token option is also in tokens_file under another principal")
        tokens[token] = LOCAL_PRINCIPAL
    return tokens
