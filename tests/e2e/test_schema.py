"""docs/spec.schema.json, the samples and the invalid specs, against each other and bin/kiln.

- The schema is a valid draft 2020-12 schema and usable as a tool's input schema as it
  is: $schema, $id, title, and a description on every property.
- Every samples/*.json validates against the schema, and `kiln validate` accepts it.
- Every tests/invalid/NAME.json is rejected by `kiln validate` with the exit status and
  the JSON Pointer tests/invalid/expected.json gives, and by the schema too (except the
  few rules JSON Schema cannot express, marked "beyond": then the schema must accept it,
  which documents that only the C validator enforces the rule).

Run: /usr/bin/python3 -m pytest -q tests/e2e/test_schema.py  (KILN_BIN selects the binary).
"""
import json
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO, describe, err_text, run_kiln, sample_specs

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # a clear failure, not a skip
    raise RuntimeError("jsonschema is required: apt-get install python3-jsonschema")

SCHEMA_PATH = REPO / "docs" / "spec.schema.json"
INVALID_DIR = REPO / "tests" / "invalid"
EXPECTED_PATH = INVALID_DIR / "expected.json"


def _load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def schema():
    return _load(SCHEMA_PATH)


@pytest.fixture(scope="module")
def validator(schema):
    return Draft202012Validator(schema)


def _errors(validator, instance):
    return sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))


def _show(errors, limit=5):
    return "\n".join("  %s: %s" % ("/" + "/".join(str(p) for p in e.absolute_path), e.message[:300])
                     for e in errors[:limit])


EXPECTED = _load(EXPECTED_PATH)["cases"]
INVALID_FILES = sorted(p.name for p in INVALID_DIR.glob("*.json") if p.name != "expected.json")


# --------------------------------------------------------------------------- the schema

def test_schema_is_valid_draft_2020_12(schema):
    assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schema_root_is_usable_as_a_tool_input_schema(schema):
    """Assistant APIs take a tool's input schema as an object schema and refuse
    combinators at its root (Anthropic: "input_schema does not support oneOf, allOf,
    or anyOf at the top level")."""
    assert schema.get("type") == "object"
    for key in ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref"):
        assert key not in schema, "root-level %r" % key
    assert isinstance(schema.get("properties"), dict) and schema["properties"]


def test_schema_has_id_title_description(schema):
    for key in ("$id", "title", "description"):
        assert isinstance(schema.get(key), str) and schema[key], "schema lacks %s" % key
    assert schema.get("additionalProperties") is False


def _walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, path + "/" + k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, "%s/%d" % (path, i))


CONDITIONAL = ("if", "then", "else", "not", "anyOf", "allOf", "oneOf")


def test_every_property_has_a_description(schema):
    """An assistant reads descriptions to fill the spec in: every member an object
    defines has one. (Pure constraints inside if/then/not/anyOf, such as
    {"series": {"maxItems": 1}}, define no member and need none.)"""
    missing = []
    for path, node in _walk(schema):
        props = node.get("properties")
        if not isinstance(props, dict) or path.endswith("/properties"):
            continue
        defines = node.get("additionalProperties") is False or not any(
            seg in CONDITIONAL for seg in path.split("/"))
        if defines:
            for name, sub in props.items():
                if isinstance(sub, dict) and not sub.get("description"):
                    missing.append(path + "/properties/" + name)
    assert not missing, "properties without a description:\n" + "\n".join(missing)


def test_every_object_closes_its_members(schema):
    """Unknown members are errors: every schema that lists properties says
    additionalProperties false (or is a conditional part of one that does)."""
    open_objects = []
    for path, node in _walk(schema):
        if "properties" in node and not isinstance(node.get("properties"), bool):
            if path.endswith("/properties"):
                continue  # a member named "properties" would land here; there is none
            conditional = any(seg in ("if", "not", "anyOf", "allOf") for seg in path.split("/"))
            if node.get("additionalProperties") is not False and not conditional:
                open_objects.append(path or "/")
    # The block dispatcher lists only "type"; each block type's own schema is closed.
    open_objects = [p for p in open_objects if p not in ("/$defs/block", "/$defs/conditional_format")]
    assert not open_objects, "objects that accept unknown members:\n" + "\n".join(open_objects)


# --------------------------------------------------------------------------- samples

SAMPLES = sample_specs()


def test_there_are_samples():
    names = {p.name for p in SAMPLES}
    for want in ("sales_workbook.json", "financial_model.json", "export_200k.json",
                 "report_blocks.json", "deck_slides.json"):
        assert want in names, "samples/%s is missing" % want


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_validates_against_schema(validator, path):
    errors = _errors(validator, _load(path))
    assert not errors, "%s does not match the schema:\n%s" % (path.name, _show(errors))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_sample_passes_c_validator(path, sample_data_ready):
    proc = run_kiln("validate", path)
    assert proc.returncode == 0, "kiln validate %s: %s" % (path.name, describe(proc))


def test_sample_images_exist_and_are_small():
    for spec_path in SAMPLES:
        for _, node in _walk(_load(spec_path)):
            if "path" in node and isinstance(node["path"], str) and node["path"].startswith("images/"):
                img = spec_path.parent / node["path"]
                assert img.is_file(), "%s names %s, which does not exist" % (spec_path.name, img)
                assert img.stat().st_size < 50 * 1024, "%s is larger than 50 KB" % img


# --------------------------------------------------------------------------- valid forms

# Forms of docs/spec.md that no sample uses: the schema and `kiln validate` both accept them.
VALID_FORMS = {
    "nested_list_objects": {"blocks": [{"type": "list", "items": [
        "Scope agreed",
        {"text": "Rollout", "items": {"ordered": True, "start": 2, "items": [
            "Pilot", {"text": "Every region", "items": {"ordered": False, "items": ["North"]}}]}},
        {"text": "Review", "items": ["as the parent"]}]}],
        "slides": [{"title": "Plan", "bullets": {"ordered": True, "items": [
            {"runs": [{"text": "Build"}], "items": {"ordered": False, "items": ["Parser"]}}]}}]},
    "null_chart_values": {"sheets": [{"name": "S", "rows": [[1]], "charts": [
        {"kind": "line", "categories": ["a", "b", "c"], "series": [{"values": [1, None, 3]}]},
        {"kind": "scatter", "categories": [1, 2], "series": [{"values": [None, 2]}]}]}],
        "blocks": [{"type": "chart", "kind": "pie", "categories": ["a", "b"],
                    "series": [{"values": [None, 1]}]}],
        "slides": [{"layout": "chart", "chart": {"kind": "area", "series": [{"values": [1, None]}]}}]},
}


@pytest.mark.parametrize("name", sorted(VALID_FORMS))
def test_valid_form_accepted_by_schema_and_c_validator(validator, tmp_path, name):
    spec = VALID_FORMS[name]
    errors = _errors(validator, spec)
    assert not errors, "the schema rejects %s:\n%s" % (name, _show(errors))
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps(spec), encoding="utf-8")
    proc = run_kiln("validate", path)
    assert proc.returncode == 0, "kiln validate %s: %s" % (name, describe(proc))


# --------------------------------------------------------------------------- invalid specs

def test_expected_lists_every_invalid_file():
    listed = set(EXPECTED)
    present = set(INVALID_FILES)
    assert present - listed == set(), "tests/invalid files missing from expected.json: %s" % sorted(present - listed)
    assert listed - present == set(), "expected.json names files that do not exist: %s" % sorted(listed - present)
    assert len(present) >= 30
    for name, e in EXPECTED.items():
        assert e["status"] == 3, name
        assert e["schema"] in ("invalid", "beyond"), name
        assert e["pointer"] == "" or e["pointer"].startswith("/"), name


def _read_instance(path):
    try:
        return _load(path)
    except json.JSONDecodeError:
        return None


@pytest.mark.parametrize("name", INVALID_FILES)
def test_invalid_spec_against_schema(validator, name):
    exp = EXPECTED[name]
    instance = _read_instance(INVALID_DIR / name)
    errors = _errors(validator, instance)
    if exp["schema"] == "beyond":
        assert not errors, ("%s is marked \"beyond\" (a rule JSON Schema cannot express) but the schema "
                            "rejects it; mark it \"invalid\":\n%s" % (name, _show(errors)))
    else:
        assert errors, "the schema accepts %s, which is invalid: %s" % (name, exp["why"])


@pytest.mark.parametrize("name", INVALID_FILES)
def test_invalid_spec_rejected_by_c_validator(name):
    exp = EXPECTED[name]
    proc = run_kiln("validate", INVALID_DIR / name)
    assert proc.returncode == exp["status"], (
        "kiln validate %s: expected exit %d (%s)\n%s" % (name, exp["status"], exp["why"], describe(proc)))
    stderr = err_text(proc)
    want = "kiln: error: " + exp["pointer"]
    lines = [ln for ln in stderr.splitlines() if ln.startswith("kiln: error: ")]
    assert lines, "kiln validate %s printed no `kiln: error: POINTER: MESSAGE` line\n%s" % (name, describe(proc))
    assert any(ln.startswith(want) for ln in lines), (
        "kiln validate %s: no error names %r (%s)\n%s" % (name, exp["pointer"] or "(root)", exp["why"], describe(proc)))
