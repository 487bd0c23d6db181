#!/usr/bin/env python3
"""Writes bench/grammar_schemas/*.json: realistic response_format / tool-argument schemas (nested
objects, enums, arrays, patterned and formatted strings, optional fields, $defs) for grammar_bench.
Deterministic; re-run to regenerate."""
import json, os

out = os.path.join(os.path.dirname(__file__), "grammar_schemas")
os.makedirs(out, exist_ok=True)
S = {}

def obj(props, required=None, strict=True, **kw):
    d = {"type": "object", "properties": props}
    d["required"] = list(props) if required is None else required
    if strict: d["additionalProperties"] = False
    d.update(kw)
    return d

units = ["celsius", "fahrenheit", "kelvin"]
for i, city_len in enumerate([20, 40, 60]):
    S[f"tool_weather_{i}"] = obj({"location": {"type": "string", "description": "City and country", "maxLength": city_len},
                                  "unit": {"enum": units[: i + 2]}}, required=["location"], strict=i != 1)
for i, n in enumerate([3, 5, 8]):
    S[f"tool_search_{i}"] = obj({"query": {"type": "string", "minLength": 1},
                                 "max_results": {"type": "integer", "minimum": 1, "maximum": 10 * n},
                                 "site": {"anyOf": [{"type": "string", "format": "hostname"}, {"type": "null"}]},
                                 "language": {"enum": ["en", "de", "fr", "es", "it", "ja", "zh", "pt"][:n]}},
                                required=["query"])
for i, fmt in enumerate(["date", "date-time", "time"]):
    S[f"tool_calendar_{i}"] = obj({"title": {"type": "string", "maxLength": 80},
                                   "start": {"type": "string", "format": fmt},
                                   "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 5},
                                   "reminder_minutes": {"type": "integer", "minimum": 0, "maximum": 1440}},
                                  required=["title", "start"])
for i, depth in enumerate([1, 2, 3, 4]):
    inner = {"type": "string", "maxLength": 30}
    for d in range(depth):
        inner = obj({"name": {"type": "string", "maxLength": 24}, "child": inner, "weight": {"type": "number"}},
                    required=["name", "child"])
    S[f"nested_{i}"] = inner
for i, k in enumerate([2, 4, 6, 10]):
    S[f"person_{i}"] = obj({**{"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
                               "email": {"type": "string", "format": "email"}},
                            **{f"field_{j}": [{"type": "string"}, {"type": "boolean"}, {"type": "number"},
                                              {"enum": ["low", "medium", "high"]}][j % 4] for j in range(k)}},
                           required=["name", "age"], strict=i % 2 == 0)
for i, pat in enumerate(["^[A-Z]{3}-[0-9]{4}$", "^\\+?[0-9]{7,15}$", "^[a-z0-9_]{3,16}$", "^#[0-9a-fA-F]{6}$",
                         "^(GET|POST|PUT|DELETE) /[a-z/]*$"]):
    S[f"pattern_{i}"] = obj({"code": {"type": "string", "pattern": pat}, "note": {"type": "string", "maxLength": 50}},
                            required=["code"])
for i, n in enumerate([3, 10, 30]):
    S[f"classify_{i}"] = obj({"label": {"enum": [f"category_{j}" for j in range(n)]},
                              "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                              "reasons": {"type": "array", "items": {"type": "string", "maxLength": 60}, "minItems": 1, "maxItems": 3}})
for i, n in enumerate([2, 5, 20]):
    S[f"extract_list_{i}"] = obj({"items": {"type": "array", "maxItems": n, "items": obj(
        {"product": {"type": "string"}, "quantity": {"type": "integer", "exclusiveMinimum": 0},
         "price": {"type": "number", "minimum": 0}, "currency": {"enum": ["USD", "EUR", "GBP", "JPY"]}})}})
for i in range(3):
    S[f"recursive_tree_{i}"] = {"$defs": {"node": obj({"id": {"type": "string", "format": "uuid"} if i == 0 else {"type": "integer"},
                                                        "label": {"type": "string", "maxLength": 16 * (i + 1)},
                                                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
                                                       required=["id", "children"])},
                                "$ref": "#/$defs/node"}
for i, n in enumerate([2, 3, 5]):
    tools = []
    for t in range(n):
        tools.append(obj({"name": {"const": f"tool_{t}"},
                          "arguments": obj({"x": {"type": "integer"}, "mode": {"enum": ["fast", "exact"]}, "text": {"type": "string"}},
                                           required=["x"])}))
    S[f"tool_choice_required_{i}"] = {"type": "array", "minItems": 1, "items": {"anyOf": tools}}
for i in range(3):
    S[f"sql_query_{i}"] = obj({"table": {"enum": ["users", "orders", "products", "events"][: i + 2]},
                               "columns": {"type": "array", "items": {"type": "string", "pattern": "^[a-z_]+$"}, "minItems": 1},
                               "where": {"type": ["string", "null"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 1000}},
                              required=["table", "columns"])
for i in range(3):
    S[f"address_{i}"] = obj({"street": {"type": "string"}, "city": {"type": "string", "maxLength": 40},
                             "postal_code": {"type": "string", "pattern": ["^[0-9]{5}$", "^[A-Z0-9 ]{5,8}$", "^[0-9]{3}-[0-9]{4}$"][i]},
                             "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
                             "coordinates": {"type": "array", "prefixItems": [{"type": "number", "minimum": -90, "maximum": 90},
                                                                             {"type": "number", "minimum": -180, "maximum": 180}],
                                             "items": False}}, required=["street", "city", "country"])
for i in range(3):
    S[f"review_{i}"] = obj({"rating": {"type": "integer", "minimum": 1, "maximum": 5 if i < 2 else 10},
                            "title": {"type": "string", "maxLength": 60}, "pros": {"type": "array", "items": {"type": "string"}},
                            "cons": {"type": "array", "items": {"type": "string"}}, "recommend": {"type": "boolean"},
                            "reviewed_at": {"type": "string", "format": "date-time"}}, required=["rating", "recommend"])
for i in range(3):
    S[f"network_{i}"] = obj({"host": {"type": "string", "format": ["ipv4", "ipv6", "hostname"][i]},
                             "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                             "protocol": {"enum": ["tcp", "udp"]}, "tags": {"type": "object", "additionalProperties": {"type": "string"}}},
                            required=["host", "port"])
for i in range(3):
    S[f"json_object_{i}"] = {"type": "object"} if i == 0 else obj({"data": {"type": "object"}, "meta": {"type": ["object", "null"]}}, required=["data"])

S["tool_send_email"] = obj({"to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1, "maxItems": 4},
                            "subject": {"type": "string", "maxLength": 120}, "body": {"type": "string"},
                            "priority": {"enum": ["low", "normal", "high"]}}, required=["to", "subject", "body"])
S["translation"] = obj({"source_language": {"type": "string", "pattern": "^[a-z]{2}$"},
                        "target_language": {"type": "string", "pattern": "^[a-z]{2}$"},
                        "translation": {"type": "string"}, "alternatives": {"type": "array", "items": {"type": "string"}, "maxItems": 2}})
S["sentiment_batch"] = {"type": "array", "items": obj({"id": {"type": "integer", "minimum": 0},
                        "sentiment": {"enum": ["positive", "negative", "neutral", "mixed"]}}), "maxItems": 8}

for name, schema in sorted(S.items()):
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(schema, f, indent=1)
        f.write("\n")
print(len(S), "schemas in", out)
