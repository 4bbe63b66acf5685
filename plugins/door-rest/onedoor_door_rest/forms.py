"""How the OpenAPI document describes the chat calls' bodies: JSON (the request model) or a
``multipart/form-data`` upload (:mod:`.bodies` reads both).

The chat routes read their body themselves (FastAPI would take JSON only), so their
request models are not in FastAPI's own schema: :func:`chat_body_spec` names them for
:func:`add_request_schemas`, which puts them (and the models they use) in the document's
components.
"""

from __future__ import annotations

from typing import Any

from .bodies import FILE_FIELD, MULTIPART
from .thread_models import NOT_BLANK

_SCHEMAS = "onedoor_request_models"  # app.state attribute: the request models to document


def form_schema(limits: Any) -> dict[str, Any]:
    """The schema of a chat upload's fields: a message, files, or both."""
    props: dict[str, Any] = {
        "message": {"type": "string", "maxLength": limits.max_message_chars,
                    "description": "what the user says now (may be left out when files are sent)"},
        FILE_FIELD: {"type": "array", "minItems": 1, "maxItems": limits.max_parts,
                     "items": {"type": "string", "format": "binary"},
                     "description": "files to attach (repeat the field for each): a part's Content-Type is its "
                     "media type (else it is guessed from the file name), checked against the bytes; images, audio "
                     "and video by their type, documents otherwise; the file name is kept as a safe base name"},
    }
    return {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
        "anyOf": [{"required": ["message"], "properties": {"message": {"pattern": NOT_BLANK}}},
                  {"required": [FILE_FIELD]}],
    }


def document_model(app: Any, model: Any) -> None:
    """Have ``model`` (a request body a route reads itself) in the document's components."""
    models = getattr(app.state, _SCHEMAS, None)
    if models is None:
        models = {}
        setattr(app.state, _SCHEMAS, models)
    models[model.__name__] = model


def chat_body_spec(app: Any, model: Any, limits: Any) -> dict[str, Any]:
    """``openapi_extra`` for a chat operation: its JSON body is ``model``, or an upload."""
    document_model(app, model)
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}},
                MULTIPART: {"schema": form_schema(limits)},
            },
        }
    }


def add_request_schemas(app: Any, schema: dict[str, Any]) -> None:
    """Put the request models :func:`chat_body_spec` named in ``schema``'s components."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, model in (getattr(app.state, _SCHEMAS, None) or {}).items():
        own = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for sub, definition in own.pop("$defs", {}).items():
            components.setdefault(sub, definition)
        components[name] = own


__all__ = ["add_request_schemas", "chat_body_spec", "document_model", "form_schema"]
