"""The one source of Kiln's tool definitions: tools/make_tools.py makes docs/tools/ from it.

- SPEC_ROOT and SPEC_DEFS: the compact document spec schema, for tool use. It is
  docs/spec.schema.json cut to what a model needs to fill a spec in: every member,
  short descriptions, and simpler patterns that accept a subset of what Kiln accepts
  (columns A..ZZ in upper case, rows up to 999999, at most three fraction digits in a
  time, margins of at most 2 in, ...). It must never accept a spec `kiln validate`
  refuses, except by a rule no JSON Schema can state (lengths that must agree, names
  that must exist or differ, ranges that must not overlap, image bytes):
  tests/e2e/test_tools.py checks that with every sample and with generated specs.
- STRICT_DEFS: what OpenAI's strict mode gets instead of the compact definitions it
  cannot express (a `not`, a $ref beside other keywords, string lengths, objects keyed
  by column); each accepts a subset of the compact definition. make_tools.py turns
  the rest into strict form mechanically.
- TOOLS: the four MCP tools of the contract (docs/tools/mcp.json); the model-API
  files (openai.json, anthropic.json) carry render_document and execute_code.

The descriptions are written for a model and say only what the names and types do not.
"""

# ---------------------------------------------------------------- patterns

# Characters XML 1.0 cannot hold (C0 controls but tab, LF and CR; U+FFFE, U+FFFF):
# Kiln refuses them in every string of a spec.
BAD = r"\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF"
TEXT = "^[^" + BAD + "]*$"
NAME = "^[^" + BAD + "]+$"

# A1 references, columns A..ZZ and rows 1..999999: a subset of Kiln's A..XFD and
# 1..1048576 that keeps the patterns short.
CELL = r"\$?[A-Z]{1,2}\$?[1-9][0-9]{0,5}"
SHEET = r"(?:'(?:[^'\x00-\x1F]|'')+'|[A-Za-z0-9_.]+)"

# Real days from 1900-01-01; 29 February only in the leap years 1904..2096.
DATE = (r"(?:(?:19|[2-9][0-9])[0-9]{2}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
        r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
        r"|(?:19|20)(?:0[48]|[2468][048]|[13579][26])-02-29|2000-02-29)")
# At most three fraction digits: Kiln rounds a time to the millisecond, and
# 9999-12-31T23:59:59.9996 would round past the last day Excel holds.
TIME = (r"(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,3})?)?"
        r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?")

# Sheet names: 1..31 characters, none of [ ] : * ? / \ or controls, no apostrophe
# first or last, not History (Excel reserves it).
_SN_END = r"[^'\[\]:*?/\\\x00-\x1F\uFFFE\uFFFF]"
_SN_MID = r"[^\[\]:*?/\\\x00-\x1F\uFFFE\uFFFF]"
SHEET_NAME = "^" + _SN_MID + "{1,31}$"
SHEET_NAME_NOT = "^'|'$|^[Hh][Ii][Ss][Tt][Oo][Rr][Yy]$"

# A Markdown character reference to a character XML cannot hold (&#30;, &#x1E;, &#65535;).
MD_BAD_REF = (r"&#(?:0*(?:[1-8]|1[124-9]|2[0-9]|3[01]|6553[45])"
              r"|[xX]0*(?:[1-8bBcCeEfF]|1[0-9a-fA-F]|[fF]{3}[eEfF]));")

# Excel table names must not read as a cell reference (A1, R1C1, R, C): four letters
# (or underscores) first never do.
TABLE_NAME = r"^[A-Za-z_]{4}[A-Za-z0-9_.]{0,251}$"

# ---------------------------------------------------------------- helpers


def ref(name, desc=None):
    node = {"$ref": "#/$defs/" + name}
    if desc:
        node["description"] = desc
    return node


def obj(props, required=(), desc=None, **more):
    node = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        node["required"] = list(required)
    node.update(more)
    if desc:
        node["description"] = desc
    return node


def arr(items, lo=None, hi=None, desc=None):
    node = {"type": "array"}
    if lo:
        node["minItems"] = lo
    if hi is not None:
        node["maxItems"] = hi
    node["items"] = items
    if desc:
        node["description"] = desc
    return node


def num(lo=None, hi=None, desc=None, integer=False):
    node = {"type": "integer" if integer else "number"}
    if lo is not None:
        node["minimum"] = lo
    if hi is not None:
        node["maximum"] = hi
    if desc:
        node["description"] = desc
    return node


def string(pattern, desc=None, **more):
    node = {"type": "string", "pattern": pattern}
    node.update(more)
    if desc:
        node["description"] = desc
    return node


def enum(values, desc=None):
    node = {"enum": list(values)}
    if desc:
        node["description"] = desc
    return node


def branch(props, required=(), **more):
    """One alternative of an object: the members it adds or narrows."""
    node = {"properties": props}
    if required:
        node["required"] = list(required)
    node.update(more)
    return node


def closed(branches, required=(), props=None, desc=None):
    """An object that is one of `branches`, closed: a member is allowed when the
    object or the branch that matched defines it (unevaluatedProperties)."""
    node = {"type": "object"}
    if props:
        node["properties"] = props
    if required:
        node["required"] = list(required)
    node["anyOf"] = branches
    node["unevaluatedProperties"] = False
    if desc:
        node["description"] = desc
    return node


def uses(base, props, required=(), desc=None, close=True):
    """The open base definition `base` and `props`; closed unless close is False (a
    branch of a closed object, or a base itself)."""
    node = {"type": "object"} if close else {}
    node["$ref"] = "#/$defs/" + base
    node["properties"] = props
    if required:
        node["required"] = list(required)
    if close:
        node["unevaluatedProperties"] = False
    if desc:
        node["description"] = desc
    return node


B = {"type": "boolean"}
T = ref("text")
ONE_TEXT = [{"required": ["text"]}, {"required": ["runs"]}]

# ---------------------------------------------------------------- the compact spec

LIST_LEVELS = 9      # Kiln nests lists 9 levels deep
OBJECT_LEVELS = 2    # items of the first levels may nest a list object {ordered, start, items}


def list_defs(last, compact):
    """The list definitions: l<N> is the items of a list at nesting level N.

    compact: a level is the shared array "la" with its items' "items" narrowed ($ref
    beside other keywords); only the first OBJECT_LEVELS levels nest a list object
    (deeper, a nested list is an array, numbered as its parent), so the levels past
    OBJECT_LEVELS + 1 are written inside l<OBJECT_LEVELS + 1>. Else (strict mode,
    which has no such $ref) each level is written out in full, l1..l<last>."""
    defs = {}
    if not compact:
        for level in range(1, last + 1):
            props = {"text": T, "runs": ref("runs")}
            if level < last:
                nxt = ref("l%d" % (level + 1))
                props["items"] = {"anyOf": [nxt, obj({"ordered": B, "start": ref("start"),
                                                      "items": nxt}, ["items"])]}
            defs["l%d" % level] = arr({"anyOf": [T, obj(props, oneOf=ONE_TEXT)]}, 1)
    else:
        defs["la"] = arr({"anyOf": [T, uses("tr", {"items": {}})]}, 1)
        defs["lo"] = obj({"ordered": B, "start": ref("start"), "items": {}}, ["items"])

        def level_def(level, nested):
            return {"$ref": "#/$defs/la", "items": {"properties": {"items": nested}}}

        inner = False
        for level in range(last, OBJECT_LEVELS, -1):
            inner = level_def(level, inner)
        defs["l%d" % (OBJECT_LEVELS + 1)] = inner
        for level in range(OBJECT_LEVELS, 0, -1):
            nxt = ref("l%d" % (level + 1))
            defs["l%d" % level] = level_def(level, {"anyOf": [nxt, {"$ref": "#/$defs/lo",
                                                                    "properties": {"items": nxt}}]})
    defs["l1"]["description"] = ("strings or {text|runs, items}; items: the same, or {ordered, "
                                 "start, items}; %d levels" % last)
    return defs


SPEC_DEFS = {
    # strings
    "text": string(TEXT),
    "ctext": {"$ref": "#/$defs/text", "maxLength": 32767},
    "name": {"$ref": "#/$defs/text", "minLength": 1},
    "color": string(r"^#?[0-9A-Fa-f]{6}$"),
    # ASCII only (percent-encode the rest): Kiln counts a URL's 2,079 in UTF-8 bytes.
    "url": string(r"^(?:https?://|ftp://|mailto:)[!-~]+$", maxLength=2079),
    "datetime": string("^" + DATE + TIME + "$", "YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM]"),
    # The date part of a date-time is 10 characters long, and a date is nothing else.
    "date": {"$ref": "#/$defs/datetime", "pattern": "^.{10}$", "description": "YYYY-MM-DD"},
    "cell": string("^" + CELL + "$"),
    "range": string("^" + CELL + "(?::" + CELL + ")?$"),
    "srange": string("^=?(?:" + SHEET + "!)?" + CELL + "(?::" + CELL + ")?$",
                     "one row or column, e.g. 'Sheet 2'!B2:B13"),
    "sheet_name": string(SHEET_NAME, **{"not": {"pattern": SHEET_NAME_NOT}}),
    "tname": string(TABLE_NAME, "4 letters first"),
    "path": string(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$"),
    "b64": string("^[A-Za-z0-9+/]+={0,2}$", minLength=4, maxLength=27962028),
    "lv": {"$ref": "#/$defs/name", "maxLength": 255},
    # Markdown: no character reference to a character XML forbids (Kiln decodes them).
    "md": {"$ref": "#/$defs/text", "not": {"pattern": MD_BAD_REF}},
    "msg": {"$ref": "#/$defs/text", "maxLength": 255},
    "px": num(16, 8192, integer=True),
    "start": num(0, 2147483647, integer=True),
    "align": enum(["left", "center", "right"]),
    "border": enum(["thin", "medium", "thick", "none"]),
    # formats: the members a cell style, a conditional format's style and a run share
    "f4": {"properties": {"bold": B, "italic": B, "underline": B, "strike": B, "color": ref("color")}},
    "style": uses("f4", {"fill": ref("color"), "border": ref("border"), "wrap": B,
                         "size": num(1, 409), "font": ref("name"), "align": ref("align"),
                         "valign": enum(["top", "middle", "bottom"])}),
    # cells
    "scalar": {"anyOf": [{"type": ["number", "boolean", "null"]}, ref("ctext")]},
    "formula": {"$ref": "#/$defs/name", "maxLength": 8192, "not": {"const": "="}},
    "cellv": {"anyOf": [ref("scalar"), obj({
        "formula": ref("formula"), "date": ref("date"), "datetime": ref("datetime"),
        "url": ref("url"), "text": ref("ctext"), "value": ref("scalar"),
        "number_format": ref("name"), "style": ref("style")},
        oneOf=[{"required": ["formula"]}, {"required": ["date"]}, {"required": ["datetime"]},
               {"required": ["url"]}, {"required": ["value"], "properties": {"formula": False}}],
        dependentRequired={"text": ["url"]})],
        "description": "null: blank; a string is never a formula; a formula's value: its cached result"},
    "column": obj({
        "header": ref("ctext"),
        "key": ref("name"),
        "type": enum(["auto", "string", "number", "integer", "currency", "percent", "date",
                      "datetime", "boolean"]),
        "number_format": ref("name"), "width": num(0, 255), "align": ref("align")}),
    "image": obj({"path": ref("path"), "data": ref("b64"), "format": enum(["png", "jpeg"]),
                  "alt": T}, oneOf=[{"required": ["path"]}, {"required": ["data"]}]),
    # tables: the members a sheet, a table block and a table slide share
    "table": {
        "properties": {
            "columns": arr(ref("column"), hi=16384),
            "rows": arr({"anyOf": [arr(ref("cellv"), hi=16384),
                                   {"type": "object", "propertyNames": T,
                                    "additionalProperties": ref("cellv")}]}, hi=1048576,
                        desc="arrays, or objects by column key"),
            "data": obj({"path": ref("path"), "format": enum(["csv", "jsonl"]), "header": B,
                         "delimiter": string(r"^[\t !#-~]$")}, ["path", "format"],
                        anyOf=[branch({"format": {"const": "csv"}}),
                               branch({"header": False, "delimiter": False})]),
            "header": B},
        "not": {"required": ["rows", "data"]},
        "if": {"required": ["rows"], "properties": {"rows": {"contains": {"type": "object"}}}},
        "then": {"required": ["columns"], "properties": {"columns": {"minItems": 1}}}},
    "tablex": uses("table", {"caption": T, "name": ref("sheet_name")},
                   close=False),
    # charts: the members every chart has
    # A sheet's chart may take ranges of the workbook; "lchart", in a block or on a
    # slide, takes literal data only.
    "chart": {
        "properties": {
            "title": T, "stacked": B, "legend": enum(["right", "left", "top", "bottom", "none"]),
            "x_axis": ref("axis"), "y_axis": ref("axis"), "width": ref("px"), "height": ref("px"),
            "categories": {"anyOf": [ref("cats"), ref("srange")]},
            "series": arr(obj({
                "name": {"anyOf": [string("^(?:=?" + SHEET + "!|=)" + CELL + "$"),
                                   string(r"^[^=!\x00-\x1F\uFFFE\uFFFF][^!\x00-\x1F\uFFFE\uFFFF]*$")],
                         "description": "in a sheet, =B1 or Data!B1 is a cell"},
                "values": {"anyOf": [ref("vals"), ref("srange")]},
                "color": ref("color")}, ["values"]), 1, 255)},
        "required": ["kind", "series"],
        "anyOf": [branch({"kind": {"enum": ["column", "bar", "area"]}}),
                  branch({"kind": {"const": "line"}, "stacked": False}),
                  branch({"kind": {"const": "scatter"}, "stacked": False,
                          "categories": {"items": {"type": "number"}}}),
                  branch({"kind": {"enum": ["pie", "doughnut"]}, "stacked": False,
                          "x_axis": False, "y_axis": False, "series": {"maxItems": 1}})]},
    "lchart": uses("chart", {"categories": ref("cats"),
                             "series": {"items": {"properties": {"values": ref("vals")}}}}, close=False),
    "axis": obj({"title": T}),
    "cats": arr({"anyOf": [T, {"type": "number"}]}, 1),
    "vals": arr({"type": ["number", "null"]}, 1, desc="null: a gap"),
    # rich text
    "run": uses("f4", {"text": T, "superscript": B, "subscript": B, "code": B, "size": num(1, 409),
                       "font": ref("name"), "link": ref("url")}, ["text"]),
    "runs": arr(ref("run"), 1),
    "tr": {"properties": {"text": T, "runs": ref("runs")}, "oneOf": ONE_TEXT},
}
# superscript and subscript exclude each other (stricter than Kiln: not both given).
SPEC_DEFS["run"]["not"] = {"required": ["superscript", "subscript"]}
SPEC_DEFS.update(list_defs(LIST_LEVELS, compact=True))
SPEC_DEFS["list"] = {"anyOf": [ref("l1"), {"$ref": "#/$defs/lo", "properties": {"items": ref("l1")}}]}
SPEC_DEFS.update({
    "block": closed([
        uses("tr", {"type": {"const": "heading"}, "level": num(1, 6, integer=True)}, close=False),
        uses("tr", {"type": {"const": "paragraph"},
                    "align": enum(["left", "center", "right", "justify"])}, close=False),
        branch({"type": {"const": "list"}, "ordered": B, "start": ref("start"), "items": ref("l1")},
               ["items"]),
        uses("tablex", {"type": {"const": "table"}}, close=False),
        branch({"type": {"const": "image"}, "image": ref("image"), "caption": T,
                "width": {"anyOf": [num(1, 14400), string(
                    r"^(?:[1-9][0-9]{0,2}(?:\.[0-9]+)?(?:pt|mm)"
                    r"|(?:[1-9][0-9]?(?:\.[0-9]+)?|0\.[1-9][0-9]*)(?:cm|in))$")],
                    }}, ["image"]),
        uses("lchart", {"type": {"const": "chart"}, "caption": T}, close=False),
        branch({"type": {"const": "page_break"}}),
        branch({"type": {"const": "toc"}, "title": T, "levels": num(1, 6, integer=True)}),
        branch({"type": {"const": "code"}, "text": T, "language": ref("name")}, ["text"]),
        uses("tr", {"type": {"const": "quote"}, "attribution": T}, close=False),
        branch({"type": {"const": "rule"}}),
        branch({"type": {"const": "markdown"}, "text": ref("md")}, ["text"])],
        ["type"]),
    "slide": closed([
        branch({"layout": {"enum": ["title", "section"]}, "subtitle": T}, ["layout"]),
        branch({"layout": {"const": "content"}, "bullets": ref("list")}),
        branch({"layout": {"const": "two_column"}, "left": ref("list"), "right": ref("list")}, ["layout"]),
        branch({"layout": {"const": "table"}, "table": uses("tablex", {})}, ["layout", "table"]),
        branch({"layout": {"const": "image"}, "image": ref("image")}, ["layout", "image"]),
        branch({"layout": {"const": "chart"}, "chart": uses("lchart", {})}, ["layout", "chart"]),
        branch({"layout": {"const": "blank"}, "title": False}, ["layout"])],
        props={"title": T, "notes": T}),
    "sheet": uses("table", {
        "name": ref("sheet_name"),
        "freeze": obj({"rows": num(0, 1048575, integer=True), "columns": num(0, 16383, integer=True)}),
        "autofilter": B,
        "table": {"anyOf": [B, obj({
            "name": ref("tname"),
            "style": string(r"^Table Style (?:Light|Medium|Dark) [1-9]$"),
            "total_row": B})]},
        "merges": arr(obj({"range": ref("range"), "value": ref("cellv")}, ["range"])),
        "conditional_formats": arr(closed([
            uses("cfc", {"criteria": enum(["between", "not_between"]), "maximum": {"type": "number"}},
                 ["maximum"], close=False),
            uses("cfc", {"criteria": enum(["==", "!=", ">", ">=", "<", "<="])}, close=False),
            branch({"type": {"const": "color_scale"}, "colors": arr(ref("color"), 2, 3)}, ["colors"]),
            branch({"type": {"const": "data_bar"}, "color": ref("color")})],
            ["range", "type"], {"range": ref("range")})),
        "validations": arr(obj({
            "range": ref("range"), "type": {"const": "list"},
            "values": arr(ref("lv"), 1),
            "message": ref("msg")}, ["range", "type", "values"])),
        "charts": arr(uses("chart", {"anchor": ref("cell")})),
        "images": arr(obj({"image": ref("image"), "anchor": ref("cell"), "scale": num(0.01, 100)},
                          ["image", "anchor"])),
        "comments": arr(obj({"cell": ref("cell"), "text": ref("ctext"), "author": T}, ["cell", "text"])),
        "tab_color": ref("color")}),
    "cfc": {"properties": {"type": {"const": "cell"}, "value": {"type": "number"},
                           "style": uses("f4", {"fill": ref("color"), "border": ref("border")})},
            "required": ["criteria", "value", "style"]},
    # A margin of at most 2 in (144pt, 50mm, 5cm): four of them always leave the 1 in
    # of text width and height Kiln requires, on the smallest page (A5) too.
    "margin": {"anyOf": [num(0, 144), string(
        r"^(?:(?:(?:1[0-3]|[0-9])?[0-9](?:\.[0-9]+)?|14[0-4])pt|(?:[1-4]?[0-9](?:\.[0-9]+)?|50)mm"
        r"|(?:[0-4](?:\.[0-9]+)?|5)cm|(?:[01](?:\.[0-9]+)?|2)in)$")], "description": "2in at most"},
})
SPEC_DEFS["sheet"]["not"] = {"required": ["table", "autofilter"]}

SPEC_ROOT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1},
        "metadata": obj({"title": T, "author": T, "subject": T, "description": T, "company": T,
                         "category": T, "keywords": {"anyOf": [T, arr(T)]},
                         "created": ref("datetime")}),
        "theme": obj({"font": ref("name"), "heading_font": ref("name"), "mono_font": ref("name"),
                      "font_size": num(6, 72), "accent_colors": arr(ref("color"), 1, 12),
                      "header_fill": ref("color"), "header_font_color": ref("color")}),
        "page": obj({
            "size": enum(["A4", "Letter", "Legal", "A3", "A5"]),
            "orientation": enum(["portrait", "landscape"]),
            "margins": obj({side: ref("margin") for side in ("top", "bottom", "left", "right")}),
            "header": {"anyOf": [B, ref("name")]},
            "page_numbers": B}),
        "sheets": arr(ref("sheet"), 1, 256),
        "blocks": arr(ref("block"), 1),
        "slides": arr(ref("slide"), 1),
    },
    "anyOf": [{"required": ["sheets"]}, {"required": ["blocks"]}, {"required": ["slides"]}],
    "description": "A Kiln document: sheets (workbook), blocks (report) or slides (deck)",
}

SPEC_META = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Kiln document spec v1, compact",
}

# ---------------------------------------------------------------- strict mode


def _not_word(word, first, mid, last, max_len):
    """A pattern for the strings `first mid{0,max_len-2} last` (or one `first`
    character) other than `word` in any case: shorter or longer than it, or differing
    from it at some position (strict mode has no `not`, nor lookahead)."""
    n = len(word)

    def but(cls, ch):  # the negated class cls without both cases of ch
        return cls[:-1] + ch.lower() + ch.upper() + "]"

    alts = []
    for i, ch in enumerate(word):
        parts = []
        for j in range(n):
            cls = first if j == 0 else last if j == n - 1 else mid
            if j < i:
                parts.append("[%s%s]" % (word[j].upper(), word[j].lower()))
            elif j == i:
                parts.append(but(cls, ch))
            else:
                parts.append(cls)
        alts.append("".join(parts))
    shorter = "%s(?:%s{0,%d}%s)?" % (first, mid, n - 3, last)
    longer = "%s%s{%d,%d}%s" % (first, mid, n - 1, max_len - 2, last)
    return "^(?:" + "|".join([shorter, longer] + alts) + ")$"


# Lists nest this deep in strict mode, which allows 10 levels of nested objects in all:
# a slide's bullets (a list object), 3 levels of items with list objects, and a run
# make the 10 (tests/e2e/test_tools.py counts them).
STRICT_LIST_LEVELS = 3

# Each is a subset of the compact definition of the same name (tests/e2e/test_tools.py
# checks them on sample strings). String lengths become pattern bounds where they are
# small; the long ones (32,767 characters in a cell, 8,192 in a formula, 2,079 in a URL,
# 20 MiB of base64) are left to Kiln's validator, which reports them like any error.
STRICT_DEFS = {
    "ctext": string(TEXT),
    "name": string(NAME),
    "url": string(SPEC_DEFS["url"]["pattern"]),
    "date": string("^" + DATE + "$", "YYYY-MM-DD"),
    "sheet_name": string(_not_word("history", _SN_END, _SN_MID, _SN_END, 31)),
    "b64": string("^[A-Za-z0-9+/]{4,}={0,2}$"),
    "lv": string("^[^" + BAD + "]{1,255}$"),
    "msg": string("^[^" + BAD + "]{0,255}$"),
    # No numeric character reference at all (named ones never give a control character).
    "md": string("^(?:[^&" + BAD + "]|&+[^#&" + BAD + "])*&*$"),
    "formula": string("^(?:=[^" + BAD + "]|[^=" + BAD + "])[^" + BAD + "]*$"),
    # Rows are arrays only: an object keyed by column has no fixed members.
    "table": dict(SPEC_DEFS["table"], properties=dict(
        SPEC_DEFS["table"]["properties"],
        rows=arr(arr(ref("cellv"), hi=16384), hi=1048576, desc="arrays of cells, left to right"))),
    **list_defs(STRICT_LIST_LEVELS, compact=False),
    "list": {"anyOf": [ref("l1"), obj({"ordered": B, "start": ref("start"), "items": ref("l1")},
                                      ["items"])]},
}
del STRICT_DEFS["table"]["if"], STRICT_DEFS["table"]["then"]

# ---------------------------------------------------------------- the tools

EXECUTE_CODE_DESCRIPTION = (
    "Run Python (default) or bash in a sandboxed Kiln session. Variables, imports and files "
    "persist across calls, as in a notebook; files live in /mnt/data. Use it to compute, "
    "analyse data and make figures or files (pandas, numpy, matplotlib; no network). In "
    "Python, `import kiln` builds documents from DataFrames and figures (kiln.Workbook(), "
    "kiln.Document(), kiln.Deck(); .save(\"report.xlsx\")), rendered after the cell. Returns "
    "the status, stdout and stderr (cut past a cap, with a note), the last expression's "
    "value, figures as images, every file created or changed as a link, and the session_id; "
    "an exception returns its traceback as an error. Pass the session_id of an earlier result "
    "to keep its variables and files: always do so (without it a client of MCP 2026-07-28, "
    "which has no connections, gets a new session each call; an older one gets its "
    "connection's own session).")

RENDER_DOCUMENT_DESCRIPTION = (
    "Render a Kiln document spec to a file: an .xlsx workbook, a .docx report, a .pptx deck or "
    "a .pdf. One spec for all four: sheets (rows of cells, formulas, number formats, native "
    "charts), blocks (headings, paragraphs, lists, tables, images, charts) or slides; any spec "
    "renders to any format. Returns a link (kiln://files/{id}) with the size and SHA-256. An "
    "invalid spec returns every error with its JSON Pointer (e.g. /sheets/0/rows/3/1): fix "
    "those members and call again. Kiln does not evaluate formulas: give each its cached value. "
    "Rules the schema cannot show: a series has one value per category; a chart range is one "
    "row or column of an existing sheet; merges neither overlap nor cover data; sheet names "
    "differ ignoring case, column keys differ; strings in a date column are ISO dates; "
    "page.header true needs metadata.title; a markdown block's lists nest 9 levels; an image is "
    "base64 data unless its path names a file given with the render. Example: {\"sheets\": [{\"name\": \"Sales\", \"columns\": "
    "[{\"header\": \"Region\"}, {\"header\": \"Revenue\", \"type\": \"currency\"}], \"rows\": "
    "[[\"North\", 1200.5], [\"South\", 980], [\"Total\", {\"formula\": \"=SUM(B2:B3)\", "
    "\"value\": 2180.5}]]}]}")

LIST_FILES_DESCRIPTION = (
    "List the files in a Kiln session's /mnt/data: name, size, media type and SHA-256. "
    "Pass the session_id an earlier result returned (needed under MCP 2026-07-28; else it "
    "defaults to the connection's own session).")

LOAD_FILE_DESCRIPTION = (
    "Copy a file from the host into a Kiln session's /mnt/data, for code to read. Only from "
    "the directories the operator allowed (--allow-read); a symbolic link out of them is "
    "refused. A file of the same name in /mnt/data is replaced. Returns its name, size and "
    "SHA-256, and the session_id: pass it to execute_code to use the file.")

SESSION_ID = {"type": "string", "minLength": 1,
              "description": "the session_id an earlier result returned"}

_STREAM = {"type": "object", "properties": {"text": {"type": "string"}, "bytes": {"type": "integer"},
                                            "truncated": {"type": "boolean"}}}
_FILE = {"type": "object", "required": ["name", "bytes", "sha256"],
         "properties": {"name": {"type": "string"}, "bytes": {"type": "integer"},
                        "media_type": {"type": "string"}, "sha256": {"type": "string"},
                        "source": {"type": "string"}, "uri": {"type": "string"}}}
_DOCUMENT = {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string"}, "spec": {"type": "string"},
                            "format": {"type": "string"}, "bytes": {"type": "integer"},
                            "media_type": {"type": "string"}, "sha256": {"type": "string"},
                            "warnings": {"type": "array"}, "uri": {"type": "string"}}}

# Output schemas are checked by MCP clients (the TypeScript SDK compiles them with
# Ajv's default dialect, draft-07, and checks every structuredContent, an isError
# result's too): plain keywords only, no $schema, no $defs; open objects, so a member
# the server adds later breaks no client. A call that fails before it acts (bad
# arguments, no such session, a bad spec) has {"errors": [...], ...} for its
# structuredContent, the error objects of docs/cli.md: each output schema takes that
# too.
_ERRORS = {"type": "array", "items": {
    "type": "object", "required": ["message"],
    "properties": {"pointer": {"type": "string"}, "code": {"type": "string"},
                   "message": {"type": "string"}}}}


def _result(props, required):
    """An output schema: the tool's result (with `required`), or the call's errors."""
    props = dict(props, errors=_ERRORS, dropped={"type": "integer"},
                 more_errors={"type": "integer"})
    return {"type": "object", "properties": props,
            "anyOf": [{"required": list(required)}, {"required": ["errors"]}]}


_STREAM = {"type": "object", "properties": {"text": {"type": "string"}, "bytes": {"type": "integer"},
                                            "truncated": {"type": "boolean"}}}
_FILE = {"type": "object", "required": ["name", "bytes", "sha256"],
         "properties": {"name": {"type": "string"}, "bytes": {"type": "integer"},
                        "media_type": {"type": "string"}, "sha256": {"type": "string"},
                        "source": {"type": "string"}, "uri": {"type": "string"}}}
_DOCUMENT = {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string"}, "spec": {"type": "string"},
                            "format": {"type": "string"}, "bytes": {"type": "integer"},
                            "media_type": {"type": "string"}, "sha256": {"type": "string"},
                            "warnings": {"type": "array"}, "uri": {"type": "string"}}}

EXECUTE_CODE_OUTPUT = _result({
    "session_id": {"type": "string"},
    "status": {"enum": ["ok", "error", "interrupted", "timeout", "memory_limit",
                        "output_limit", "session_lost"]},
    "execution_count": {"type": "integer"},
    "wall_seconds": {"type": "number"},
    "cpu_seconds": {"type": "number"},
    "peak_memory_bytes": {"type": ["integer", "null"]},
    "stdout": _STREAM,
    "stderr": _STREAM,
    "outputs": {"type": "array", "items": {"type": "object"}},
    "error": {"type": ["object", "null"],
              "properties": {"ename": {"type": "string"}, "evalue": {"type": "string"},
                             "traceback": {"type": "array", "items": {"type": "string"}}}},
    "files": {"type": "array", "items": _FILE},
    "documents": {"type": "array", "items": _DOCUMENT},
    "dropped": {"type": "object", "properties": {"displays": {"type": "integer"},
                                                 "bytes": {"type": "integer"}}},
}, ["session_id", "status"])
# The cell record's "dropped" is an object (what the output caps left out), not a count.
EXECUTE_CODE_OUTPUT["properties"]["dropped"] = {
    "type": "object", "properties": {"displays": {"type": "integer"}, "bytes": {"type": "integer"}}}

RENDER_DOCUMENT_OUTPUT = _result({
    "uri": {"type": "string"}, "id": {"type": "string"}, "filename": {"type": "string"},
    "media_type": {"type": "string"}, "bytes": {"type": "integer"},
    "sha256": {"type": "string"}, "warnings": {"type": "array", "items": {"type": "object"}},
}, ["uri", "id", "filename", "media_type", "bytes", "sha256"])

LIST_FILES_OUTPUT = _result({"session_id": {"type": "string"},
                             "files": {"type": "array", "items": _FILE}}, ["session_id", "files"])

LOAD_FILE_OUTPUT = _result({"session_id": {"type": "string"}, "name": {"type": "string"},
                            "bytes": {"type": "integer"}, "sha256": {"type": "string"}},
                           ["session_id", "name", "bytes", "sha256"])

# The tools, in the order tools/list gives them. In an input schema the string "SPEC"
# stands for the compact spec schema: make_tools.py puts its root there and its $defs
# at the input schema's root, where every "#/$defs/..." resolves.
TOOLS = [
    {
        "name": "execute_code",
        "title": "Run code in a Kiln session",
        "description": EXECUTE_CODE_DESCRIPTION,
        "inputSchema": obj({
            "code": {"type": "string", "description": "the code to run"},
            "language": enum(["python", "bash"], "default python"),
            "session_id": SESSION_ID,
            "timeout_seconds": num(1, 600, "wall-clock limit for this call"),
        }, ["code"]),
        "outputSchema": EXECUTE_CODE_OUTPUT,
        "annotations": {"title": "Run code in a Kiln session", "readOnlyHint": False,
                        "destructiveHint": True, "idempotentHint": False, "openWorldHint": False},
        # Why (docs/tools/README.md shows it).
        "hints_why": "code changes the session's files and variables and may delete or overwrite "
                     "what an earlier call made; running it twice is not running it once; the "
                     "sandbox has no network",
        "apis": ["mcp", "openai", "anthropic"],
    },
    {
        "name": "render_document",
        "title": "Render a document",
        "description": RENDER_DOCUMENT_DESCRIPTION,
        "inputSchema": obj({
            "format": enum(["xlsx", "docx", "pptx", "pdf"]),
            "spec": "SPEC",
            "filename": {"type": "string", "pattern": r"^[^/\\\x00-\x1F]+$",
                         "description": "the file's name, e.g. q3.xlsx"},
        }, ["format", "spec"]),
        "outputSchema": RENDER_DOCUMENT_OUTPUT,
        "annotations": {"title": "Render a document", "readOnlyHint": False,
                        "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        "hints_why": "it stores a new file and changes nothing else; the same arguments give the "
                     "same document; it reads nothing outside Kiln",
        "apis": ["mcp", "openai", "anthropic"],
    },
    {
        "name": "list_files",
        "title": "List a session's files",
        "description": LIST_FILES_DESCRIPTION,
        "inputSchema": obj({"session_id": SESSION_ID}),
        "outputSchema": LIST_FILES_OUTPUT,
        "annotations": {"title": "List a session's files", "readOnlyHint": True,
                        "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        "hints_why": "it only reads the session's file list",
        "apis": ["mcp"],
    },
    {
        "name": "load_file",
        "title": "Load a host file into a session",
        "description": LOAD_FILE_DESCRIPTION,
        "inputSchema": obj({
            "path": {"type": "string", "minLength": 1,
                     "description": "the host file, under an --allow-read directory"},
            "name": {"type": "string", "minLength": 1,
                     "description": "its name in /mnt/data (default: the path's base name)"},
            "session_id": SESSION_ID,
        }, ["path"]),
        "outputSchema": LOAD_FILE_OUTPUT,
        "annotations": {"title": "Load a host file into a session", "readOnlyHint": False,
                        "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
        "hints_why": "it writes into /mnt/data and replaces a file of the same name there, which "
                     "is not only additive, so destructive as MCP defines the hint (a host may "
                     "ask before it runs); loading the same file again leaves the same state; it "
                     "reads only the operator's --allow-read directories",
        "apis": ["mcp"],
    },
]

# ---------------------------------------------------------------- names

# The names the generated schemas give the definitions: short, since every "$ref"
# repeats one (a definition not listed keeps its name).
SHORT_NAMES = {
    "text": "t", "ctext": "ct", "name": "nm", "color": "rgb", "datetime": "dt", "date": "d",
    "cell": "a1", "range": "rng", "srange": "srng", "sheet_name": "sn", "tname": "tn",
    "start": "st", "align": "al", "border": "bd", "style": "sty", "scalar": "v",
    "formula": "fx", "cellv": "cell", "column": "col", "image": "img", "table": "tbl",
    "tablex": "tblx", "chart": "ch", "lchart": "lch", "axis": "ax", "block": "blk",
    "slide": "sld", "sheet": "sh", "margin": "mg", "runs": "rs",
}
