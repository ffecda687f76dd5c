"""Validation of JSON bodies against the request and response schemas of Discord's OpenAPI document."""
import re

import jsonschema


def _operation(openapi: dict, method: str, template: str) -> dict:
    # Our route templates name the emoji parameter as Discord's document does only up to spelling.
    path = openapi["paths"].get(template) or openapi["paths"][re.sub(r"\{emoji[^}]*\}", "{emoji_name}", template)]
    return path[method.lower()]


# Where Discord's OpenAPI document and Discord's answers disagree, the answers win. Each erratum
# names the documented behaviour it follows.
#
# Field errors inside `errors` carry string codes such as "BASE_TYPE_MAX_LENGTH" (the "Error
# Messages" examples of the API reference); the document types every `code` as an integer.
def _with_errata(components: dict) -> dict:
    components = dict(components)
    schemas = dict(components["schemas"])
    inner = dict(schemas["InnerErrors"])
    inner["properties"] = {"_errors": {"type": "array", "items": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": ["string", "integer"]}, "message": {"type": "string"}}}}}
    schemas["InnerErrors"] = inner
    components["schemas"] = schemas
    return components


def _validator(openapi: dict, schema: dict) -> jsonschema.Draft202012Validator:
    root = dict(schema)
    root["components"] = _with_errata(openapi["components"])
    return jsonschema.Draft202012Validator(root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _resolve(openapi: dict, node: dict) -> dict:
    while "$ref" in node:
        parts = node["$ref"].lstrip("#/").split("/")
        node = openapi
        for part in parts:
            node = node[part]
    return node


def response_errors(openapi: dict, method: str, template: str, status: int, body) -> list[str]:
    """Every way `body` breaks the schema Discord documents for that answer; empty when it fits."""
    responses = _operation(openapi, method, template)["responses"]
    spec = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
    assert spec is not None, f"Discord documents no {status} answer for {method} {template}"
    spec = _resolve(openapi, spec)
    if status == 204:
        assert body in (None, b"", ""), "a 204 must have no body"
        return []
    schema = spec["content"]["application/json"]["schema"]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(openapi, schema).iter_errors(body)]


def request_errors(openapi: dict, method: str, template: str, body) -> list[str]:
    """Every way a request body breaks the schema Discord documents for it."""
    content = _resolve(openapi, _operation(openapi, method, template)["requestBody"])["content"]
    schema = content["application/json"]["schema"]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(openapi, schema).iter_errors(body)]
