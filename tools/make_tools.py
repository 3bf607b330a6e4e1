#!/usr/bin/python3
"""Make docs/tools/ from tools/definitions.py (`make tools`; standard library only).

    /usr/bin/python3 tools/make_tools.py [--out DIR]

writes into DIR (default docs/tools):

  spec.schema.json  the compact document spec schema (JSON Schema 2020-12)
  mcp.json          {"tools": [...]}: the MCP tools, as tools/list gives them (minified:
                    the C server embeds the file as it is)
  openai.json       the function tools render_document and execute_code in OpenAI's
                    strict mode (Responses API form; "comment" says how Chat Completions
                    nests them)
  anthropic.json    the same two tools for Anthropic's Messages API
  README.md         what each file is, its size, and the strict-mode null rule

Every file is a function of tools/definitions.py alone, byte for byte
(tests/e2e/test_tools.py makes them again into a temporary directory and compares).

The strict form is made here, mechanically, from the compact schema (strict_schema):
an object whose members depend on each other (anyOf or oneOf branches, a `not` of
required members, dependentRequired, a base definition it extends) becomes an anyOf of
closed objects, one for each way its members can go; every member is required, and
one the compact schema leaves optional may be null. Definitions strict mode cannot
express at all are replaced by definitions.STRICT_DEFS.
"""
import argparse
import copy
import itertools
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import definitions as D  # noqa: E402

REF = "#/$defs/"


def short(name):
    return D.SHORT_NAMES.get(name, name)


def ref_name(node):
    return node["$ref"][len(REF):]


def rename_refs(node):
    """A copy of node with every definition name (in $ref and $defs) made short."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref":
                out[key] = REF + short(value[len(REF):])
            elif key == "$defs":
                out[key] = {short(k): rename_refs(v) for k, v in value.items()}
                if len(out[key]) != len(value):
                    raise SystemExit("make_tools: SHORT_NAMES gives two definitions one name")
            else:
                out[key] = rename_refs(value)
        return out
    if isinstance(node, list):
        return [rename_refs(v) for v in node]
    return node


def refs_in(node, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.add(ref_name(node))
            else:
                refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            refs_in(value, found)
    return found


def ordered_refs(node, found=None):
    """The definition names node refers to, in order, once each."""
    found = [] if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                if ref_name(node) not in found:
                    found.append(ref_name(node))
            else:
                ordered_refs(value, found)
    elif isinstance(node, list):
        for value in node:
            ordered_refs(value, found)
    return found


def reachable(root, defs):
    """The definitions root reaches, in the order defs lists them."""
    seen, todo = set(), refs_in(root, set())
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in defs:
            raise SystemExit("make_tools: $ref to an undefined definition %r" % name)
        seen.add(name)
        todo |= refs_in(defs[name], set()) - seen
    return {k: v for k, v in defs.items() if k in seen}


def minified(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------- the compact schema


def compact_spec():
    """docs/tools/spec.schema.json: the compact spec schema, on its own."""
    doc = dict(D.SPEC_META)
    doc.update(D.SPEC_ROOT)
    doc["$defs"] = reachable(D.SPEC_ROOT, D.SPEC_DEFS)
    return rename_refs(doc)


def input_schema(tool):
    schema = copy.deepcopy(tool["inputSchema"])
    if "SPEC" in schema["properties"].values():
        for key, value in schema["properties"].items():
            if value == "SPEC":
                schema["properties"][key] = copy.deepcopy(D.SPEC_ROOT)
        schema["$defs"] = reachable(D.SPEC_ROOT, D.SPEC_DEFS)
    return rename_refs(schema)


def mcp_tools():
    tools = []
    for tool in D.TOOLS:
        tools.append({
            "name": tool["name"],
            "title": tool["title"],
            "description": tool["description"],
            "inputSchema": input_schema(tool),
            "outputSchema": tool["outputSchema"],
            "annotations": tool["annotations"],
        })
    return {"tools": tools}


def anthropic_tools():
    return [{"name": t["name"], "description": t["description"], "input_schema": input_schema(t)}
            for t in D.TOOLS if "anthropic" in t["apis"]]


# ---------------------------------------------------------------- strict mode


class Strict:
    """The strict-mode form of a schema whose $defs are `defs` (source names)."""

    # A member schema longer than this (minified) that is an object or holds objects
    # becomes a definition of its own, "<owner>_<member>": the closed objects of
    # one compact object repeat their members, and would repeat it whole.
    HOIST = 160

    def __init__(self, defs, lenient=False):
        """lenient: pass over the keywords that have no strict form (if/then,
        propertyNames, ...) instead of failing, to walk a compact schema's objects (the
        tests generate instances that way)."""
        self.defs = defs
        self.lenient = lenient
        self.hoisted = {}  # name: schema
        # (owner, member, the object's members) for each required member that may be
        # null: from_openai_strict keeps null there (docs/tools/README.md).
        self.required_nulls = []
        self.hoisted_by_json = {}  # minified schema: name

    # -- members and alternatives

    def alternatives(self, node):
        """The ways an object schema's members can go: a list of partial objects,
        each {"props": {name: [schema, ...]}, "order": [name, ...], "present": set,
        "absent": set}."""
        parts = []
        own = {"props": {}, "order": [], "present": set(node.get("required", ())), "absent": set()}
        for name, sub in node.get("properties", {}).items():
            own["order"].append(name)
            if sub is False:
                own["absent"].add(name)
            elif sub is True or sub == {}:
                own["props"].setdefault(name, [])
            else:
                own["props"].setdefault(name, []).append(sub)
        parts.append([own])
        if "$ref" in node:  # the base a node extends: its members after the node's own
            parts.append(self.alternatives(self.defs[ref_name(node)]))
        for sub in node.get("allOf", ()):
            parts.append(self.alternatives(sub))
        if "anyOf" in node:
            parts.append([alt for sub in node["anyOf"] for alt in self.alternatives(sub)])
        if "oneOf" in node:
            parts.append(self.one_of(node["oneOf"]))
        if "not" in node:
            neg = node["not"]
            if set(neg) != {"required"}:
                raise ValueError("strict: a `not` other than of required members: %r" % neg)
            parts.append([self.partial(absent={m}) for m in neg["required"]])
        for member, needs in node.get("dependentRequired", {}).items():
            parts.append([self.partial(absent={member}), self.partial(present=set(needs))])
        for key in ("if", "then", "else", "patternProperties", "propertyNames", "contains"):
            if key in node and not self.lenient:
                raise ValueError("strict: %r has no strict form; give one in STRICT_DEFS" % key)
        extra = node.get("additionalProperties", False)
        if extra not in (False, True) and extra != {} and not self.lenient:
            raise ValueError("strict: an object of open members has no strict form")
        out = []
        for combo in itertools.product(*parts):
            merged = self.partial()
            for alt in combo:
                for name in alt["order"]:
                    if name not in merged["order"]:
                        merged["order"].append(name)
                for name, subs in alt["props"].items():
                    merged["props"].setdefault(name, []).extend(subs)
                merged["present"] |= alt["present"]
                merged["absent"] |= alt["absent"]
            if not merged["present"] & merged["absent"]:
                out.append(merged)
        return out

    @staticmethod
    def partial(present=(), absent=()):
        return {"props": {}, "order": [], "present": set(present), "absent": set(absent)}

    def one_of(self, branches):
        """oneOf of branches that only require or forbid members: for each branch, the
        objects that match it and no other."""
        simple = []
        for b in branches:
            alts = self.alternatives(b)
            if len(alts) != 1 or alts[0]["props"]:
                raise ValueError("strict: oneOf branches must only require or forbid members")
            simple.append(alts[0])
        out = []
        for i, alt in enumerate(simple):
            mine = self.partial(alt["present"], alt["absent"])
            mine["order"] = list(alt["order"])
            for j, other in enumerate(simple):
                if j == i or other["absent"] & mine["present"] or other["present"] & mine["absent"]:
                    continue  # that branch cannot match as well
                missing = other["present"] - mine["present"]
                if len(missing) == 1:
                    mine["absent"] |= missing
                elif not missing and len(other["absent"]) == 1:
                    mine["present"] |= other["absent"]
                elif missing or other["absent"]:
                    raise ValueError("strict: a oneOf too complex to split: %r" % branches)
                else:
                    mine = None  # both branches would match
                    break
            if mine is not None and not mine["present"] & mine["absent"]:
                out.append(mine)
        return out

    # -- schemas

    def lookup(self, name):
        return self.hoisted[name] if name in self.hoisted else self.defs[name]

    def resolve(self, node):
        while isinstance(node, dict) and set(node) <= {"$ref", "description"} and "$ref" in node:
            node = self.lookup(ref_name(node))
        return node

    def kind(self, node):
        """The JSON types a schema allows, as a set (None: any)."""
        node = self.resolve(node)
        if "anyOf" in node and "type" not in node:
            kinds = set()
            for b in node["anyOf"]:
                k = self.kind(b)
                if k is None:
                    return None
                kinds |= k
            return kinds
        if "type" in node:
            t = node["type"]
            kinds = set(t if isinstance(t, list) else [t])
            return kinds | ({"number"} if "integer" in kinds else set())
        values = node.get("enum", [node["const"]] if "const" in node else None)
        if values is not None:
            return {json_type(v) for v in values}
        if "$ref" in node:
            return self.kind(self.lookup(ref_name(node)))
        return None

    def meet(self, a, b):
        """A schema for what both a and b accept (None when nothing is), for the few
        shapes the compact schema narrows a member with."""
        if a == b or b == {}:
            return a
        if a == {}:
            return b
        if "anyOf" in b and "anyOf" not in a:
            a, b = b, a
        if "anyOf" in a:
            kept = [m for m in (self.meet(x, b) for x in a["anyOf"]) if m is not None]
            if not kept:
                return None
            if len(kept) == 1:
                return kept[0]
            out = {"anyOf": kept}
            if "description" in a:
                out["description"] = a["description"]
            return out
        ka, kb = self.kind(a), self.kind(b)
        if ka is not None and kb is not None and not ka & kb:
            return None
        narrowing = {k for k in b if k != "description"}
        applies = {"items": "array", "minItems": "array", "maxItems": "array",
                   "properties": "object", "required": "object"}
        if ka is not None and narrowing and all(k in applies and applies[k] not in ka for k in narrowing):
            return a  # b constrains only types a does not allow
        if "$ref" in a and set(a) <= {"$ref", "description"}:
            if "$ref" in b and set(b) <= {"$ref", "description"}:
                raise ValueError("strict: two different $refs for one member: %r %r" % (a, b))
            return self.meet(copy.deepcopy(self.resolve(a)), b)
        if "$ref" in b and set(b) <= {"$ref", "description"}:
            return self.meet(a, copy.deepcopy(self.resolve(b)))
        out = copy.deepcopy(a)
        for key, value in b.items():
            if key not in out:
                out[key] = copy.deepcopy(value)
            elif key == "items":
                out[key] = self.meet(out[key], value)
                if out[key] is None:
                    return None
            elif key == "maxItems":
                out[key] = min(out[key], value)
            elif key == "minItems":
                out[key] = max(out[key], value)
            elif key in ("enum", "const"):
                pass  # below
            elif key == "properties":
                for name, sub in value.items():
                    out[key][name] = self.meet(out[key][name], sub) if name in out[key] else sub
            elif key == "required":
                out[key] = out[key] + [m for m in value if m not in out[key]]
            elif key == "description":
                pass
            elif out[key] != value:
                raise ValueError("strict: cannot narrow %r with %r" % (a, b))
        values = None
        for node in (a, b):
            vs = node.get("enum", [node["const"]] if "const" in node else None)
            if vs is not None:
                values = vs if values is None else [v for v in values if v in vs]
        if values is not None:
            out.pop("const", None)
            out["enum"] = values
            if not values:
                return None
        return out

    def member(self, subs):
        schema = {}
        for sub in subs:
            schema = self.meet(schema, sub)
            if schema is None:
                return None
        return schema

    def nullable(self, node):
        node = copy.deepcopy(node)
        desc = node.pop("description", None)
        if "$ref" in node:
            node = {"anyOf": [node, {"type": "null"}]}
        elif "anyOf" in node:
            if not any(self.admits_null(b) for b in node["anyOf"]):
                node["anyOf"].append({"type": "null"})
        else:
            t = node["type"]
            types = t if isinstance(t, list) else [t]
            if "null" not in types:
                node["type"] = types + ["null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"].append(None)
        if desc:
            node["description"] = desc
        return node

    def admits_null(self, node):
        kinds = self.kind(node)
        return kinds is None or "null" in kinds

    def is_object(self, node):
        if not isinstance(node, dict):
            return False
        if node.get("type") == "object" or "properties" in node or "unevaluatedProperties" in node:
            return True
        if "$ref" in node and set(node) - {"$ref", "description"}:
            return True
        return False

    def hoist(self, schema, name):
        text = minified(schema)
        if len(text) <= self.HOIST or '"object"' not in text:
            return schema
        if text not in self.hoisted_by_json:
            while name in self.hoisted or name in self.defs:
                name += "_"
            self.hoisted_by_json[text] = name
            self.hoisted[name] = schema
        return {"$ref": REF + self.hoisted_by_json[text]}

    def objects(self, node, owner):
        """The closed objects an object schema is, in strict form."""
        found = []  # (object, its optional members)
        for alt in self.alternatives(node):
            props, required = {}, []
            for name in alt["order"]:
                if name in alt["absent"]:
                    continue
                subs = alt["props"].get(name)
                if subs is None:
                    continue
                schema = self.member(subs)
                if schema is None:
                    if name in alt["present"]:
                        break
                    continue
                if schema == {}:
                    raise ValueError("strict: member %r has no schema" % name)
                where = "%s_%s" % (owner, name)
                schema = self.convert(schema, where)
                desc = schema.get("description")
                body = {k: v for k, v in schema.items() if k != "description"}
                hoisted = self.hoist(body, where)
                if hoisted is not body:
                    schema = {"anyOf": [hoisted], "description": desc} if desc else hoisted
                props[name] = schema if name in alt["present"] else self.nullable(schema)
                required.append(name)
            else:
                if alt["present"] - set(props):
                    continue  # a required member no schema allows
                obj = {"type": "object", "properties": props, "required": required,
                       "additionalProperties": False}
                for name in sorted(alt["present"]):
                    if self.admits_null(props[name]):
                        self.required_nulls.append((owner, name, frozenset(props)))
                if all(obj != other for other, _ in found):
                    found.append((obj, set(props) - alt["present"]))
        # An object is left out when another takes the same members, and more that may
        # be null: a strict call of the first is one of the second with those nulls.
        out = [obj for obj, _ in found
               if not any(other is not obj and set(obj["properties"]) < set(other["properties"])
                          and all(other["properties"][k] == v for k, v in obj["properties"].items())
                          and set(other["properties"]) - set(obj["properties"]) <= optional
                          for other, optional in found)]
        if not out:
            raise ValueError("strict: an object no instance can match: %r" % node)
        return out

    def convert(self, node, owner="root"):
        """The strict form of a schema (owner: a name for what it belongs to)."""
        if not isinstance(node, dict):
            raise ValueError("strict: a boolean schema in a member position")
        desc = node.get("description")
        if self.is_object(node):
            objs = self.objects(node, owner)
            out = objs[0] if len(objs) == 1 else {"anyOf": objs}
        elif "$ref" in node:
            target = self.defs[ref_name(node)]
            if desc is None:
                return {"$ref": node["$ref"]}
            # A $ref beside a description: strict mode takes none, so a small
            # definition is written out, an object one wrapped.
            if self.is_object(target) or "anyOf" in target:
                return {"anyOf": [{"$ref": node["$ref"]}], "description": desc}
            out = self.convert(target, ref_name(node))
        elif "anyOf" in node:
            branches = []
            for b in node["anyOf"]:
                conv = self.convert(b, owner)
                if "anyOf" in conv and "description" not in conv:
                    branches.extend(conv["anyOf"])
                else:
                    branches.append(conv)
            out = {"anyOf": branches}
        else:
            out = {}
            for key, value in node.items():
                if key in ("type", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                           "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "enum"):
                    out[key] = copy.deepcopy(value)
                elif key == "const":
                    out["enum"] = [value]
                elif key == "minLength" and value == 1 and "pattern" not in node:
                    out["pattern"] = "."  # not empty (strict mode has no minLength)
                elif key == "items":
                    out[key] = self.convert(value, owner)
                elif key == "description":
                    pass
                else:
                    raise ValueError("strict: keyword %r has no strict form (in %r)" % (key, node))
            if "enum" in out and "type" not in out:
                kinds = sorted({json_type(v) for v in out["enum"]})
                out = dict({"type": kinds[0] if len(kinds) == 1 else kinds}, **out)
        if desc:
            out["description"] = desc
        return out


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def strict_defs():
    defs = dict(D.SPEC_DEFS)
    defs.update(D.STRICT_DEFS)
    return defs


def strict_schema(tool, required_nulls=None):
    """A tool's parameters in OpenAI strict mode; required_nulls (a list) gets the
    required members that may be null (Strict.required_nulls)."""
    defs = strict_defs()
    schema = copy.deepcopy(tool["inputSchema"])
    for key, value in schema["properties"].items():
        if value == "SPEC":
            schema["properties"][key] = {"$ref": REF + "spec"}
            defs["spec"] = D.SPEC_ROOT
    strict = Strict(defs)
    root = strict.convert(schema)
    if root.get("type") != "object":
        raise ValueError("strict: the root of %s is not one object" % tool["name"])
    # In a fixed order (each definition after what refers to it, in the order the
    # references come), so that the hoisted definitions get the same names each time.
    converted, todo = {}, ordered_refs(root)
    while todo:
        name = todo.pop(0)
        if name in converted:
            continue
        if name in strict.hoisted:
            converted[name] = strict.hoisted[name]
        else:
            converted[name] = strict.convert(defs[name], short(name))
        todo += [n for n in ordered_refs(converted[name]) if n not in converted]
    if converted:
        order = [n for n in defs if n in converted]
        order += sorted(n for n in converted if n not in defs)
        root["$defs"] = {name: converted[name] for name in order}
    if required_nulls is not None:
        required_nulls.extend(strict.required_nulls)
    return rename_refs(root)


OPENAI_COMMENT = (
    "Kiln's function tools for OpenAI, strict mode, made by tools/make_tools.py from "
    "tools/definitions.py (docs/tools/README.md). \"tools\" is the Responses API form, "
    "{type, name, description, parameters, strict}. Chat Completions nests the same "
    "members: {\"type\": \"function\", \"function\": {name, description, parameters, "
    "strict}} (clients/python/kiln_tools.py load(\"openai\", chat=True)). In strict mode "
    "the model sends null for every member it leaves out: turn its arguments into Kiln's "
    "with clients/python/kiln_tools.py from_openai_strict (the rule: docs/tools/README.md).")


def openai_tools():
    tools = [{"type": "function", "name": t["name"], "description": t["description"],
              "parameters": strict_schema(t), "strict": True}
             for t in D.TOOLS if "openai" in t["apis"]]
    return {"comment": OPENAI_COMMENT, "tools": tools}


# ---------------------------------------------------------------- files


def pretty(doc):
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def full_schema_sizes():
    path = os.path.join(HERE, "..", "docs", "spec.schema.json")
    with open(path, "rb") as fh:
        raw = fh.read()
    return len(raw), len(minified(json.loads(raw)).encode("utf-8"))


def hints_table():
    """The MCP tools' annotations as a Markdown table, with the reason for each."""
    rows = ["| tool | readOnly | destructive | idempotent | openWorld | why |",
            "|---|---|---|---|---|---|"]
    for tool in D.TOOLS:
        a = tool["annotations"]
        rows.append("| `%s` | %s | %s | %s | %s | %s |" % (
            tool["name"], *("yes" if a[k] else "no" for k in
                            ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")),
            tool["hints_why"]))
    return "\n".join(rows)


def build():
    """{file name: its bytes}."""
    files = {}
    spec = compact_spec()
    files["spec.schema.json"] = pretty(spec).encode("utf-8")
    files["mcp.json"] = (minified(mcp_tools()) + "\n").encode("utf-8")
    files["openai.json"] = pretty(openai_tools()).encode("utf-8")
    files["anthropic.json"] = pretty(anthropic_tools()).encode("utf-8")
    full_raw, full_min = full_schema_sizes()
    sizes = {
        "full_raw": full_raw, "full_min": full_min,
        "compact_min": len(minified(spec).encode("utf-8")),
        "compact_file": len(files["spec.schema.json"]),
        "mcp_file": len(files["mcp.json"]),
        "openai_file": len(files["openai.json"]),
        "openai_min": len(minified(openai_tools()).encode("utf-8")),
        "anthropic_file": len(files["anthropic.json"]),
        "anthropic_min": len(minified(anthropic_tools()).encode("utf-8")),
        "list_levels": D.LIST_LEVELS, "strict_list_levels": D.STRICT_LIST_LEVELS,
        "object_levels": D.OBJECT_LEVELS,
    }
    with open(os.path.join(HERE, "README.template.md"), encoding="utf-8") as fh:
        readme = fh.read()
    readme = readme.replace("@hints_table@", hints_table())
    for key, value in sizes.items():
        readme = readme.replace("@%s@" % key, "{:,}".format(value))
    if re.search(r"@[a-z_]+@", readme):
        raise SystemExit("make_tools: README.template.md names a size make_tools does not know")
    files["README.md"] = readme.encode("utf-8")
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "tools"),
                        help="the directory to write into (default docs/tools)")
    args = parser.parse_args(argv)
    files = build()
    os.makedirs(args.out, exist_ok=True)
    for name, data in files.items():
        path = os.path.join(args.out, name)
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    print("make_tools: wrote %s into %s" % (", ".join(files), os.path.relpath(args.out)))


if __name__ == "__main__":
    main()
