"""The Python SDK's models against the daemon's OpenAPI document (GET /openapi.json, generated from the zod
schemas the daemon serves).

For each model (``Step``, ``ExceptionMarker``, ``ToolCall``, ``DesignSpace``, ``Limit``) and the schema it reads:
every field the model declares is a property of the schema (``duration_ms`` is ``durationMs``), of a compatible
type (``str`` a string, ``int`` an integer, ``float`` a number, a nested model an object checked the same way,
``Optional`` whatever the schema allows or ``null``; a nullable property needs an ``Optional`` field), and every
property the schema requires is a field of the model. A field renamed on either side fails here.

The document comes from the daemon at LINEKEEPER_URL, or from the file LINEKEEPER_OPENAPI names; without either,
only the checker's own tests run (they show that it does fail on a renamed, missing or retyped field).
"""
import collections.abc
import copy
import dataclasses
import json
import os
import pathlib
import re
import sys
import typing
import unittest
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # sdk/python: the package under test

from linekeeper import DesignSpace, ExceptionMarker, Limit, Step, ToolCall  # noqa: E402

#: Each model and where its schema is: a component, then properties; "[]" an array's items, "{}" a map's values.
MODELS: List[Tuple[type, Tuple[str, ...]]] = [
    (Step, ("Run", "steps", "[]")),
    (ExceptionMarker, ("Run", "steps", "[]", "exceptions")),
    (ToolCall, ("ToolCallLine",)),
    (DesignSpace, ("DesignSpace",)),
    (Limit, ("DesignSpace", "setpoints", "{}")),
]

_PRIMITIVES: Dict[type, Tuple[str, ...]] = {str: ("string",), int: ("integer",), float: ("number", "integer"), bool: ("boolean",)}


def wire_name(field: str) -> str:
    """The JSON name of a model field: ``duration_ms`` → ``durationMs``."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), field)


def load_document() -> Optional[Dict[str, Any]]:
    """The OpenAPI document: served by the daemon at LINEKEEPER_URL, or the file LINEKEEPER_OPENAPI names."""
    url = os.environ.get("LINEKEEPER_URL", "")
    if url:
        with urllib.request.urlopen(url.rstrip("/") + "/openapi.json", timeout=30) as resp:
            doc: Dict[str, Any] = json.loads(resp.read().decode("utf-8"))
            return doc
    path = os.environ.get("LINEKEEPER_OPENAPI", "")
    if path:
        loaded: Dict[str, Any] = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        return loaded
    return None


def resolve(doc: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow ``$ref`` (``#/components/schemas/…``) to the schema it names."""
    while "$ref" in schema:
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            raise AssertionError(f"unsupported $ref {ref}")
        node: Any = doc
        for part in ref[2:].split("/"):
            node = node[part]
        schema = node
    return schema


def locate(doc: Mapping[str, Any], path: Sequence[str]) -> Mapping[str, Any]:
    """The schema at ``path``: a component of the document, then property names, ``[]`` and ``{}``."""
    schema = resolve(doc, doc["components"]["schemas"][path[0]])
    for step in path[1:]:
        if step == "[]":
            schema = resolve(doc, schema["items"])
        elif step == "{}":
            schema = resolve(doc, schema["additionalProperties"])
        else:
            schema = resolve(doc, schema["properties"][step])
    return schema


def types_of(schema: Mapping[str, Any]) -> Optional[Tuple[str, ...]]:
    """The JSON types a schema admits, or None for any value (no ``type``)."""
    t = schema.get("type")
    if t is None:
        return None
    return tuple(t) if isinstance(t, list) else (str(t),)


def type_problems(doc: Mapping[str, Any], hint: Any, schema: Mapping[str, Any], where: str) -> List[str]:
    """Why a value of the schema would not fit the field's type hint (empty when it fits)."""
    schema = resolve(doc, schema)
    if hint is Any:
        return []
    admitted = types_of(schema)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return [f"{where}: unsupported union {hint}"]
        if admitted is None:
            return type_problems(doc, inner[0], schema, where)
        rest = tuple(t for t in admitted if t != "null")
        return type_problems(doc, inner[0], {**schema, "type": list(rest)}, where) if rest else []
    if admitted is None:
        return [f"{where}: the schema admits any value, the model only {hint}"]
    if "null" in admitted:
        return [f"{where}: the schema admits null, the model's {hint} does not (make it Optional)"]
    if hint in _PRIMITIVES:
        wrong = [t for t in admitted if t not in _PRIMITIVES[hint]]
        return [f"{where}: the schema's {'/'.join(wrong)} is no {hint.__name__}"] if wrong else []
    if dataclasses.is_dataclass(hint):
        if admitted != ("object",):
            return [f"{where}: the schema's {'/'.join(admitted)} is no {hint.__name__}"]
        return model_problems(doc, hint, schema, where)
    if origin in (list, tuple, collections.abc.Sequence):
        if admitted != ("array",):
            return [f"{where}: the schema's {'/'.join(admitted)} is no sequence"]
        item = args[0] if args else Any  # List[X], Sequence[X], Tuple[X, ...]
        return type_problems(doc, item, schema.get("items", {}), f"{where}[]")
    if origin in (dict, collections.abc.Mapping):
        if admitted != ("object",):
            return [f"{where}: the schema's {'/'.join(admitted)} is no mapping"]
        value = args[1] if len(args) == 2 else Any
        extra = schema.get("additionalProperties")
        if not isinstance(extra, dict):
            return [f"{where}: the schema is no map (no additionalProperties schema)"]
        return type_problems(doc, value, extra, f"{where}{{}}")
    return [f"{where}: unsupported type hint {hint}"]


def model_problems(doc: Mapping[str, Any], model: type, schema: Mapping[str, Any], where: str) -> List[str]:
    """What does not match between a dataclass model and an object schema: names both ways, and types."""
    schema = resolve(doc, schema)
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    hints = typing.get_type_hints(model)
    problems: List[str] = []
    declared = set()
    for f in dataclasses.fields(model):
        wire = wire_name(f.name)
        declared.add(wire)
        if wire not in props:
            problems.append(f"{where}.{f.name}: no property {wire!r} in the schema (it has {', '.join(sorted(props))})")
            continue
        problems += type_problems(doc, hints[f.name], props[wire], f"{where}.{f.name}")
    for name in sorted(required - declared):
        problems.append(f"{where}: the schema requires {name!r}, the model has no field for it")
    return problems


def document_problems(doc: Mapping[str, Any], models: Sequence[Tuple[type, Tuple[str, ...]]] = tuple(MODELS)) -> List[str]:
    problems: List[str] = []
    for model, path in models:
        try:
            schema = locate(doc, path)
        except KeyError as e:
            problems.append(f"{model.__name__}: no schema at {'.'.join(path)} ({e})")
            continue
        problems += model_problems(doc, model, schema, model.__name__)
    return problems


# A small document of the same form as the daemon's, for the checker's own tests.
SAMPLE: Dict[str, Any] = {
    "components": {"schemas": {
        "Marker": {"type": "object", "properties": {
            "total": {"type": "integer"}, "open": {"type": "integer"}, "blocking": {"type": "integer"}, "kinds": {"type": "array", "items": {"type": "string"}},
        }, "required": ["total", "open", "blocking", "kinds"]},
        "Thing": {"type": "object", "properties": {
            "id": {"type": "integer"}, "durationMs": {"type": ["number", "null"]}, "note": {"type": "string"}, "marker": {"$ref": "#/components/schemas/Marker"},
            "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {"min": {"type": "number"}}, "required": ["min"]}},
        }, "required": ["id", "durationMs", "marker"]},
    }},
}


@dataclasses.dataclass(frozen=True)
class _Min:
    min: float


@dataclasses.dataclass(frozen=True)
class _Thing:
    id: int
    duration_ms: Optional[float]
    marker: ExceptionMarker
    note: Optional[str] = None
    limits: Optional[Mapping[str, _Min]] = None


class CheckerTest(unittest.TestCase):
    """The checker passes a matching model and fails each kind of drift (no daemon needed)."""

    def problems(self, doc: Mapping[str, Any], model: type = _Thing) -> List[str]:
        return document_problems(doc, [(model, ("Thing",))])

    def test_a_matching_model_passes(self) -> None:
        self.assertEqual(self.problems(SAMPLE), [])

    def test_a_property_renamed_in_the_schema_fails(self) -> None:
        doc = copy.deepcopy(SAMPLE)
        thing = doc["components"]["schemas"]["Thing"]
        thing["properties"]["durationMillis"] = thing["properties"].pop("durationMs")
        thing["required"] = ["id", "durationMillis", "marker"]
        found = self.problems(doc)
        self.assertTrue(any("_Thing.duration_ms: no property 'durationMs'" in p for p in found), found)
        self.assertTrue(any("requires 'durationMillis'" in p for p in found), found)

    def test_a_field_renamed_in_the_model_fails(self) -> None:
        @dataclasses.dataclass(frozen=True)
        class Renamed:
            id: int
            duration_millis: Optional[float]
            marker: ExceptionMarker

        found = self.problems(SAMPLE, Renamed)
        self.assertTrue(any("Renamed.duration_millis: no property 'durationMillis'" in p for p in found), found)
        self.assertTrue(any("requires 'durationMs'" in p for p in found), found)

    def test_a_nested_rename_a_retyped_field_and_a_lost_optional_fail(self) -> None:
        doc = copy.deepcopy(SAMPLE)
        schemas = doc["components"]["schemas"]
        schemas["Marker"]["properties"]["kindList"] = schemas["Marker"]["properties"].pop("kinds")
        schemas["Thing"]["properties"]["id"] = {"type": "string"}
        schemas["Thing"]["properties"]["limits"]["additionalProperties"]["properties"]["min"] = {"type": "boolean"}
        found = self.problems(doc)
        self.assertTrue(any("_Thing.marker.kinds: no property 'kinds'" in p for p in found), found)
        self.assertTrue(any("_Thing.id: the schema's string is no int" in p for p in found), found)
        self.assertTrue(any("_Thing.limits{}.min: the schema's boolean is no float" in p for p in found), found)

        @dataclasses.dataclass(frozen=True)
        class NotNullable:
            id: int
            duration_ms: float
            marker: ExceptionMarker

        self.assertTrue(any("admits null" in p for p in self.problems(SAMPLE, NotNullable)))

    def test_wire_names(self) -> None:
        self.assertEqual([wire_name(n) for n in ("seq", "duration_ms", "max_rate_per_min", "audit_seq")], ["seq", "durationMs", "maxRatePerMin", "auditSeq"])


@unittest.skipUnless(os.environ.get("LINEKEEPER_URL") or os.environ.get("LINEKEEPER_OPENAPI"), "needs LINEKEEPER_URL (a daemon) or LINEKEEPER_OPENAPI (a copy of its document)")
class ModelsAgainstTheDaemonTest(unittest.TestCase):
    def test_every_model_field_is_in_its_schema_and_every_required_property_in_its_model(self) -> None:
        doc = load_document()
        assert doc is not None
        self.assertEqual(doc.get("openapi"), "3.1.0")
        self.assertEqual(document_problems(doc), [])
        print(f"openapi models checked: {', '.join(m.__name__ for m, _ in MODELS)}")


if __name__ == "__main__":
    unittest.main()
