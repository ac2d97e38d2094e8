"""``GET /api/v1/openapi.json``: the API described from the same Structs and docstrings as
every other door (the operations' inputs and outputs), so a field is named once."""

from __future__ import annotations

from typing import Any

import msgspec

from ipc import operations as io
from supervisor.web.routes import PREFIX, ROUTES, ErrorBody, Route

REF = "#/components/schemas/{name}"


def _query(route: Route, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """A GET's or DELETE's fields as query parameters (the path's and the fixed aside)."""
    taken = {*route.params, *route.fixed}
    return [
        {"name": name, "in": "query", "required": name in fields.get("required", []), "schema": schema}
        for name, schema in fields.get("properties", {}).items()
        if name not in taken
    ]


def _operation(route: Route, schemas: dict[str, Any]) -> dict[str, Any]:
    op = route.operation
    doc = op.doc
    params: list[dict[str, Any]] = [
        {"name": "team", "in": "path", "required": True, "schema": {"type": "string"}}
    ]
    params += [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in route.params
    ]
    entry: dict[str, Any] = {
        "operationId": op.name if route.path != "/tasks/{id}/claim" else "task_claim_id",
        "summary": doc.split(".")[0].replace("\n", " "),
        "description": doc,
        "responses": {
            "200": {
                "description": "the operation's output",
                "content": {"application/json": {"schema": {"$ref": REF.format(name=op.output.__name__)}}},
            },
            "default": {
                "description": "an error: the command line's one line, and its kind",
                "content": {"application/json": {"schema": {"$ref": REF.format(name="ErrorBody")}}},
            },
        },
    }
    if route.method in ("GET", "DELETE"):
        params += _query(route, schemas.get(op.input.__name__, {}))
    else:
        body = {"$ref": REF.format(name=op.input.__name__)}
        entry["requestBody"] = {"required": False, "content": {"application/json": {"schema": body}}}
    entry["parameters"] = params
    return entry


def document() -> dict[str, Any]:
    kinds: list[Any] = [ErrorBody, io.Teams]
    for route in ROUTES:
        kinds += [route.operation.input, route.operation.output]
    _, schemas = msgspec.json.schema_components(list(dict.fromkeys(kinds)), ref_template=REF)
    paths: dict[str, dict[str, Any]] = {
        PREFIX + "/teams": {
            "get": {
                "operationId": "list_teams",
                "summary": "The teams under the root",
                "responses": {
                    "200": {
                        "description": "every team whose config parses; a line for each that does not",
                        "content": {"application/json": {"schema": {"$ref": REF.format(name="Teams")}}},
                    }
                },
            }
        },
        PREFIX + "/teams/{team}/events": {
            "get": {
                "operationId": "events",
                "summary": "What changes in the team, as Server-Sent Events (message, inbox, task, member, resync)",
                "parameters": [
                    {"name": "team", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "a stream of events, each 'event: NAME' and 'data: JSON'",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
    }
    for route in ROUTES:
        paths.setdefault(route.full_path, {})[route.method.lower()] = _operation(route, schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "agentteams", "version": _version()},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"token": []}],
        "paths": paths,
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentteams")
    except PackageNotFoundError:
        return "0"
