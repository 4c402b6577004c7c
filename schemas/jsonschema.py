"""The JSON Schema of the contracts as editors and API clients read it: a unit-bearing field
(schemas.units) says its unit and bounds next to its own description, and its default is
written with its unit, as a user would write it (pydantic writes the stored SI number)."""

from __future__ import annotations

from typing import Any


def with_units(node: Any) -> Any:
    """Rewrite a JSON Schema document (or OpenAPI document) in place, and return it."""
    if isinstance(node, dict):
        unit, bounds = node.get("x-unit"), node.get("x-bounds")
        if bounds and node.get("description") and node["description"] != bounds:
            node["description"] = f"{node['description']} ({bounds})"
        default = node.get("default")
        if unit and isinstance(default, int | float) and not isinstance(default, bool):
            node["default"] = f"{default:g}{unit}"
        for value in node.values():
            with_units(value)
    elif isinstance(node, list):
        for value in node:
            with_units(value)
    return node
