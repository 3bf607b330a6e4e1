"""docs/tools/ (the tool definitions for MCP and the model APIs) against its source,
the full spec schema and bin/kiln.

- `make tools` output is what is committed: tools/make_tools.py --out TMP, compared
  byte for byte, so the files cannot drift from tools/definitions.py.
- The compact spec schema (docs/tools/spec.schema.json) is valid JSON Schema 2020-12,
  at most 16 KB minified, and accepts every sample and every valid spec of the tests.
- Everything it accepts `kiln validate` accepts: the samples, and a few hundred specs
  generated from the schema (random members, enum values, lengths within bounds;
  strings from the patterns) after the repairs no JSON Schema can state (REPAIRS).
  It rejects every invalid spec (tests/invalid/, and the inline ones kiln refuses) that
  the full schema rejects.
- openai.json passes a mechanical check of OpenAI's strict-mode rules (check_strict),
  which itself fails on schemas planted with each kind of violation.
- Strict-mode calls generated from openai.json (nulls included), passed through
  clients/python/kiln_tools.py from_openai_strict, are specs the compact schema and
  `kiln validate` accept; the null rule's premises hold in openai.json.
- anthropic.json and mcp.json carry the compact schema as the tools' input schema, and
  mcp.json's output schemas take the contract's results and errors.

Cheap: no sandbox, no external reader. Run:
KILN_BIN=bin/kiln /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/e2e/test_tools.py
"""
import ast
import base64
import copy
import json
import random
import re
import shutil
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO, SANITIZED, describe, sample_specs

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # a clear failure, not a skip
    raise RuntimeError("jsonschema is required: apt-get install python3-jsonschema (make deps)")

try:  # Python 3.11 keeps the regex parser here; older ones as sre_parse
    from re import _parser as sre_parse, _constants as sre_c
except ImportError:  # pragma: no cover
    import sre_parse
    import sre_constants as sre_c

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "clients" / "python"))
import definitions as D  # noqa: E402
import make_tools as M  # noqa: E402
import kiln_tools  # noqa: E402

TOOLS_DIR = REPO / "docs" / "tools"
FULL_SCHEMA = REPO / "docs" / "spec.schema.json"
INVALID_DIR = REPO / "tests" / "invalid"
LIMIT = 16 * 1024

python_only = pytest.mark.skipif(SANITIZED, reason="a Python-only check: the plain run has it")


def load(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def minified_len(doc):
    return len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@pytest.fixture(scope="module")
def compact():
    return load(TOOLS_DIR / "spec.schema.json")


@pytest.fixture(scope="module")
def compact_v(compact):
    return Draft202012Validator(compact)


@pytest.fixture(scope="module")
def full_v():
    return Draft202012Validator(load(FULL_SCHEMA))


@pytest.fixture(scope="module")
def openai_doc():
    return load(TOOLS_DIR / "openai.json")


@pytest.fixture(scope="module")
def mcp_doc():
    return load(TOOLS_DIR / "mcp.json")


def first_errors(validator, instance, n=3):
    errs = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return "; ".join("/%s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:200]) for e in errs[:n])


# --------------------------------------------------------------------------- the files

@python_only
def test_make_tools_output_is_what_is_committed(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "make_tools.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, "make_tools.py failed:\n" + proc.stderr[-3000:]
    made = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in TOOLS_DIR.iterdir())
    assert made == committed, "docs/tools/ holds %s, make tools makes %s" % (committed, made)
    stale = [n for n in made if (tmp_path / n).read_bytes() != (TOOLS_DIR / n).read_bytes()]
    assert not stale, ("docs/tools/%s differ from what `make tools` makes from tools/definitions.py: "
                       "run `make tools` and commit" % ", ".join(stale))


@python_only
def test_make_has_a_tools_target():
    text = (REPO / "Makefile").read_text()
    assert re.search(r"^tools:.*\n\t\$\(PYTHON\) tools/make_tools\.py", text, re.M), "no `tools` target"
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split()
    assert "tools" in phony


@python_only
def test_compact_schema_is_2020_12_and_small(compact):
    assert compact["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(compact)
    size = minified_len(compact)
    full = minified_len(load(FULL_SCHEMA))
    assert size <= LIMIT, "the compact schema is %d bytes minified, over %d" % (size, LIMIT)
    assert size < full / 3, "compact %d bytes against the full schema's %d" % (size, full)
    readme = (TOOLS_DIR / "README.md").read_text()
    assert "{:,} bytes minified".format(size) in readme


@python_only
def test_compact_schema_root_takes_a_spec(compact):
    assert compact["type"] == "object" and compact["additionalProperties"] is False
    assert set(compact["properties"]) == set(load(FULL_SCHEMA)["properties"])


def _object_members(node, defs):
    """The member names an object schema allows (following $ref bases and branches)."""
    names = set()
    if isinstance(node, dict):
        names |= set(k for k, v in node.get("properties", {}).items() if v is not False)
        if "$ref" in node:
            names |= _object_members(defs[node["$ref"].split("/")[-1]], defs)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, ()):
                names |= _object_members(sub, defs)
    return names


@python_only
def test_compact_schema_has_every_member_of_the_full_one(compact):
    """Every member the full schema defines for sheets, blocks, slides, cells, ...
    is in the compact one (by name, per object kind)."""
    full = load(FULL_SCHEMA)
    fdefs, cdefs = full["$defs"], compact["$defs"]
    pairs = {"sheet": "sh", "column": "col", "style": "sty", "run": "run", "image": "img",
             "metadata": None, "theme": None, "page": None}
    missing = []
    for fname, cname in pairs.items():
        fnode = fdefs[fname]
        cnode = cdefs[cname] if cname else compact["properties"][fname]
        lost = _object_members(fnode, fdefs) - _object_members(cnode, cdefs)
        missing += ["%s.%s" % (fname, m) for m in sorted(lost)]
    cblock = _object_members(cdefs["blk"], cdefs)
    for name in sorted(fdefs):
        if name.endswith("_block"):
            missing += ["%s.%s" % (name, m) for m in sorted(_object_members(fdefs[name], fdefs) - cblock)]
    sheet_chart = cdefs["sh"]["properties"]["charts"]["items"]
    for name, cnode in (("slide", cdefs["sld"]), ("sheet_chart", sheet_chart), ("chart", cdefs["lch"]),
                        ("cell_object", cdefs["cell"]), ("conditional_format", cdefs["sh"]["properties"]
                                                         ["conditional_formats"]["items"])):
        lost = _object_members(fdefs[name], fdefs) - _object_members(cnode, cdefs)
        missing += ["%s.%s" % (name, m) for m in sorted(lost)]
    assert not missing, "members the compact schema lacks: " + ", ".join(missing)


# --------------------------------------------------------------------------- valid specs

SPEC_KEYS = {"version", "metadata", "theme", "page", "sheets", "blocks", "slides"}


def inline_specs():
    """The spec literals of the e2e tests: dicts whose keys are spec members, with
    sheets, blocks or slides."""
    found = []
    for path in sorted((REPO / "tests" / "e2e").glob("test_*.py")):
        if path.name == "test_tools.py":
            continue  # its specs are made to test this file's checks
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Dict) and node.keys
                    and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)):
                continue
            keys = {k.value for k in node.keys}
            if not (keys <= SPEC_KEYS and keys & {"sheets", "blocks", "slides"}):
                continue
            try:
                spec = ast.literal_eval(node)
            except ValueError:
                continue  # built from variables
            found.append(("%s:%d" % (path.name, node.lineno), spec))
    return found


def kiln_validate_many(items, base_dir):
    """[(label, spec)] -> {label: CompletedProcess} of `kiln validate --base-dir`."""
    workdir = Path(base_dir) / "_specs"
    workdir.mkdir(exist_ok=True)

    def one(numbered):
        n, (label, spec) = numbered
        path = workdir / ("s%d.json" % n)
        path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
        proc = subprocess.run([str(KILN_BIN), "validate", "--base-dir", str(base_dir), str(path)],
                              capture_output=True, text=True, timeout=120)
        return label, proc

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, enumerate(items)))


@pytest.fixture(scope="module")
def test_specs(kiln_bin, tmp_path_factory):
    """The inline specs of the tests, split by `kiln validate`'s verdict: (valid,
    refused with status 3)."""
    base = tmp_path_factory.mktemp("inline")
    items = inline_specs()
    assert len(items) > 100, "found only %d inline specs in tests/e2e" % len(items)
    verdicts = kiln_validate_many(items, base)
    valid = [(label, spec) for label, spec in items if verdicts[label].returncode == 0]
    invalid = [(label, spec) for label, spec in items if verdicts[label].returncode == 3]
    return valid, invalid


@pytest.fixture(scope="module")
def valid_specs(test_specs, kiln_bin, sample_data_ready):
    """Every sample, fuzz seed and inline test spec `kiln validate` accepts."""
    out = []
    for path in sample_specs():
        proc = subprocess.run([str(KILN_BIN), "validate", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, "kiln validate %s: %s" % (path.name, describe(proc))
        out.append(("samples/" + path.name, load(path)))
    for path in sorted((REPO / "fuzz" / "seeds").glob("*.json")):
        proc = subprocess.run([str(KILN_BIN), "validate", str(path)], capture_output=True, text=True)
        if proc.returncode == 0:
            out.append(("fuzz/seeds/" + path.name, load(path)))
    valid, _ = test_specs
    assert len(valid) >= 30, "only %d inline test specs are valid" % len(valid)
    return out + valid


@python_only
def test_every_valid_spec_validates_against_the_compact_schema(valid_specs, compact_v):
    bad = [(label, first_errors(compact_v, spec)) for label, spec in valid_specs
           if not compact_v.is_valid(spec)]
    assert not bad, "valid specs the compact schema rejects (%d of %d):\n%s" % (
        len(bad), len(valid_specs), "\n".join("  %s: %s" % b for b in bad))


def invalid_files():
    return [(p.name, load(p)) for p in sorted(INVALID_DIR.glob("*.json")) if p.name != "expected.json"]


@python_only
def test_compact_schema_rejects_what_the_full_schema_rejects(test_specs, compact_v, full_v):
    """tests/invalid/ and the inline specs kiln refuses: the compact schema rejects each
    one the full schema rejects (rules JSON Schema cannot state it may accept, as the
    full schema does)."""
    _, refused = test_specs
    cases = invalid_files() + refused
    full_rejects = [(label, spec) for label, spec in cases if not full_v.is_valid(spec)]
    accepted = [label for label, spec in full_rejects if compact_v.is_valid(spec)]
    rejected = sum(1 for _, spec in cases if not compact_v.is_valid(spec))
    assert not accepted, ("%d invalid specs the full schema rejects and the compact one accepts: %s"
                          % (len(accepted), ", ".join(accepted)))
    inv = invalid_files()
    expected = load(INVALID_DIR / "expected.json")["cases"]
    by_full = sum(1 for name, _ in inv if expected[name]["schema"] == "invalid")
    by_compact = sum(1 for name, spec in inv if not compact_v.is_valid(spec))
    assert by_compact >= by_full, (by_compact, by_full)
    print("\ntests/invalid: the compact schema rejects %d of %d (the full schema %d); with the "
          "inline specs kiln refuses: %d of %d (the full schema %d)"
          % (by_compact, len(inv), by_full, rejected, len(cases), len(full_rejects)))


# --------------------------------------------------------------------------- generating specs

POOL = (string.ascii_letters + string.digits + string.punctuation + " \t\n"
        + "éÅßçЖж中文€\u00a0\u2028\u200b\x7f\u0085\ufeff\U0001F600'")


class Gen:
    """Instances of a schema: random members (every required one), enum values,
    lengths within bounds, strings from the patterns. Objects are walked as
    make_tools.Strict sees them (branches, bases, members that exclude each other)."""

    def __init__(self, defs, rng, max_depth=10, likely=None):
        """likely: {member name: the chance an optional member of that name is given}."""
        self.defs = defs
        self.rng = rng
        self.likely = likely or {}
        self.long = 0  # when set, a regex repeat runs up to this many times
        self._outside = {}  # a negated class: the characters of POOL it takes
        self.flat = M.Strict(defs, lenient=True)
        self.max_depth = max_depth
        self._alts = {}

    # strings from a regex ------------------------------------------------
    def regex(self, pattern):
        for _ in range(50):
            out = "".join(self._walk(sre_parse.parse(pattern), 0))
            if re.search(pattern, out):
                return out
        raise AssertionError("cannot make a string matching %r" % pattern)

    def _char_in(self, items):
        negate = any(op == sre_c.NEGATE for op, _ in items)

        def inside(ch):
            c = ord(ch)
            for op, av in items:
                if op == sre_c.LITERAL and c == av:
                    return True
                if op == sre_c.RANGE and av[0] <= c <= av[1]:
                    return True
                if op == sre_c.CATEGORY and re.match(
                        {sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_SPACE: r"\s",
                         sre_c.CATEGORY_WORD: r"\w"}.get(av, r"(?!)"), ch):
                    return True
            return False

        if negate:
            key = repr(items)
            if key not in self._outside:
                self._outside[key] = [ch for ch in POOL if not inside(ch)]
            return self.rng.choice(self._outside[key])
        op, av = self.rng.choice([x for x in items if x[0] != sre_c.NEGATE])
        if op == sre_c.LITERAL:
            return chr(av)
        if op == sre_c.RANGE:
            lo, hi = av
            if hi > 0x7F and self.rng.random() < 0.7:
                hi = min(hi, 0x7E) if lo <= 0x7E else hi
            for _ in range(20):
                c = self.rng.randint(lo, hi)
                if not 0xD800 <= c <= 0xDFFF:
                    return chr(c)
            return chr(lo)
        return {sre_c.CATEGORY_DIGIT: "7", sre_c.CATEGORY_SPACE: " "}.get(av, "a")

    def _walk(self, parsed, depth):
        out = []
        for op, av in parsed:
            if op == sre_c.LITERAL:
                out.append(chr(av))
            elif op == sre_c.NOT_LITERAL:
                out.append(self.rng.choice([c for c in POOL if ord(c) != av]))
            elif op == sre_c.ANY:
                out.append(self.rng.choice(POOL.replace("\n", "")))
            elif op == sre_c.IN:
                out.append(self._char_in(av))
            elif op == sre_c.BRANCH:
                out.extend(self._walk(self.rng.choice(av[1]), depth + 1))
            elif op == sre_c.SUBPATTERN:
                out.extend(self._walk(av[-1], depth + 1))
            elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
                lo, hi, sub = av
                if self.long:
                    n = min(hi, self.long)
                else:
                    hi = lo + 5 if hi == sre_c.MAXREPEAT else hi
                    n = self.rng.randint(lo, min(hi, lo + (8 if depth < 2 else 3)))
                for _ in range(n):
                    out.extend(self._walk(sub, depth + 1))
            elif op == sre_c.AT:
                pass
            else:
                raise AssertionError("regex op %r not supported" % op)
        return out

    # schemas -------------------------------------------------------------
    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node and set(node) <= {"$ref", "description"}:
            node = self.defs[node["$ref"].split("/")[-1]]
        return node

    def long_string(self, node, make):
        """Now and then a string as long as maxLength allows, of any characters the
        pattern takes (multibyte ones included: lengths count characters)."""
        limit = node.get("maxLength")
        if not limit or limit > 40000 or self.rng.random() >= 0.04:
            return None  # (not the 20 MiB of an image's base64)
        self.long = limit
        try:
            s = make()
        finally:
            self.long = 0
        return s[:limit] if isinstance(s, str) else None

    def string_ok(self, s, node):
        if "pattern" in node and not re.search(node["pattern"], s):
            return False
        if len(s) < node.get("minLength", 0) or len(s) > node.get("maxLength", 1 << 30):
            return False
        neg = node.get("not")
        if neg is not None:
            if "const" in neg and s == neg["const"]:
                return False
            if "pattern" in neg and re.search(neg["pattern"], s):
                return False
        return True

    def gen(self, node, depth=0):
        node = self.resolve(node)
        if node is True or node == {}:
            return self.rng.choice([1, "x", True, None])
        if "$ref" in node:  # a definition and more keywords
            target = self.resolve({"$ref": node["$ref"]})
            kinds = self.flat.kind(target) or set()
            if "object" in kinds or (not kinds and self.flat.is_object(target)):
                return self.obj(node, depth)
            rest = {k: v for k, v in node.items() if k not in ("$ref", "description")}
            if "array" in kinds:
                return self.gen(self.flat.meet(target, rest), depth)
            value = self.long_string(rest, lambda: self.gen(target, depth))
            if value is not None and self.string_ok(value, rest):
                return value
            for _ in range(100):
                value = self.gen(target, depth)
                if isinstance(value, str) and len(value) > rest.get("maxLength", 1 << 30):
                    value = value[:rest["maxLength"]]
                if not isinstance(value, str) or self.string_ok(value, rest):
                    return value
            raise AssertionError("cannot make a value for %r" % node)
        if "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
            return {self.regex("^[A-Za-z][a-z]{0,5}$"): self.gen(node["additionalProperties"], depth + 1)
                    for _ in range(self.rng.randint(0, 3))}
        if self.flat.is_object(node):
            return self.obj(node, depth)
        if "anyOf" in node or "oneOf" in node:
            return self.gen(self.rng.choice(node.get("anyOf") or node["oneOf"]), depth)
        if "enum" in node:
            return self.rng.choice(node["enum"])
        if "const" in node:
            return node["const"]
        t = node.get("type")
        if isinstance(t, list):
            t = self.rng.choice(t)
        if t == "string":
            long = self.long_string(node, lambda: self.regex(node["pattern"]) if "pattern" in node else "x" * 10 ** 5)
            if long is not None and self.string_ok(long, node):
                return long
            for _ in range(100):
                s = self.regex(node["pattern"]) if "pattern" in node else self.regex("^[a-z ]{0,12}$")
                if len(s) > node.get("maxLength", 1 << 30):
                    s = s[:node["maxLength"]]
                if self.string_ok(s, node):
                    return s
            raise AssertionError("cannot make a string for %r" % node)
        if t in ("integer", "number"):
            lo, hi = node.get("minimum", -10 ** 6), node.get("maximum", 10 ** 6)
            pick = self.rng.random()
            if pick < 0.3:  # the bounds, often
                return lo if pick < 0.15 else hi
            if t == "integer":
                return self.rng.randint(int(lo), int(min(hi, lo + 1000)))
            value = round(self.rng.uniform(lo, min(hi, lo + 1000)), self.rng.choice([0, 2, 6]))
            return max(lo, min(hi, value))
        if t == "boolean":
            return self.rng.random() < 0.5
        if t == "null":
            return None
        if t == "array" or "items" in node:
            lo = node.get("minItems", 0)
            hi = node.get("maxItems", lo + 3)
            n = lo if depth >= self.max_depth else self.rng.randint(lo, min(hi, lo + (3 if depth < 6 else 1)))
            return [self.gen(node.get("items", {}), depth + 1) for _ in range(n)]
        raise AssertionError("cannot generate from %r" % node)

    def obj(self, node, depth):
        key = json.dumps(node, sort_keys=True)  # not id(): merged schemas are short-lived
        if key not in self._alts:
            self._alts[key] = self.flat.alternatives(node)
        alts = self._alts[key]
        for _ in range(20):
            alt = self.rng.choice(alts)
            out = {}
            for name in alt["order"]:
                if name in alt["absent"] or name not in alt["props"]:
                    continue
                schema = self.flat.member(alt["props"][name])
                if schema is None:
                    break
                p = 0.6 if depth < 3 else 0.3 if depth < self.max_depth else 0.0
                p = self.likely.get(name, p) if depth < self.max_depth else p
                if name in alt["present"] or self.rng.random() < p:
                    out[name] = self.gen(schema, depth + 1)
            else:
                if alt["present"] <= set(out):
                    return out
        raise AssertionError("cannot make an object for %r" % node)


# One pixel, the PNG of docs/spec.md.
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5Er"
           "kJggg==")


def _quote(name):
    return "'%s'" % name.replace("'", "''")


def _sheet_ref(names):
    return _quote(names[0]) + "!" if names else ""


class Repairs:
    """What no JSON Schema can state, made true of a generated spec (each a rule of
    the C validator, docs/spec.md): lengths that agree, names that exist and differ,
    merges clear of data and of each other, files that exist."""

    def __init__(self, rng):
        self.rng = rng

    def __call__(self, spec):
        spec = copy.deepcopy(spec)
        sheets = spec.get("sheets") or []
        names = self.sheet_names(sheets)
        for sheet in sheets:
            self.table(sheet, names, sheet=True)
        for block in spec.get("blocks") or []:
            if block.get("type") == "table":
                self.table(block, names)
            elif block.get("type") == "chart":
                self.chart(block, names, literal=True)
            elif block.get("type") == "image":
                self.image(block["image"])
        for slide in spec.get("slides") or []:
            if "table" in slide:
                self.table(slide["table"], names)
            if "chart" in slide:
                self.chart(slide["chart"], names, literal=True)
            if "image" in slide:
                self.image(slide["image"])
        if (spec.get("page") or {}).get("header") is True and not (spec.get("metadata") or {}).get("title"):
            spec.setdefault("metadata", {})["title"] = "Title"  # header true shows the title
        return spec

    @staticmethod
    def sheet_names(sheets):
        """Sheet names unique ignoring case (as Kiln folds them)."""
        seen, names = set(), []
        for i, sheet in enumerate(sheets):
            name = sheet.get("name")
            if name is None:
                continue
            if name.lower() in seen or name.casefold() in seen:
                name = sheet["name"] = "Sheet %d x" % i
            seen |= {name.lower(), name.casefold()}
            names.append(name)
        return names

    def table(self, t, names, sheet=False):
        cols = t.get("columns")
        rows = t.get("rows")
        if not cols and isinstance(rows, list):  # object rows need columns (the walk skips if/then)
            rows[:] = [[] if isinstance(r, dict) else r for r in rows]
        object_rows = isinstance(rows, list) and any(isinstance(r, dict) for r in rows)
        jsonl = (t.get("data") or {}).get("format") == "jsonl"
        if cols:
            seen = set()
            for j, col in enumerate(cols):  # keys unique (explicit always; from headers for object rows)
                key = col.get("key", col.get("header") if object_rows or jsonl else None)
                if key is None:
                    continue
                if key in seen or ("key" in col and col["key"] in seen):
                    col["key"] = key = "k%d" % j
                seen.add(key)
        keys = {c.get("key", c.get("header")) for c in cols or []} - {None}
        dated = {j: c.get("key", c.get("header")) for j, c in enumerate(cols or [])
                 if c.get("type") in ("date", "datetime")}
        if isinstance(rows, list):
            for i, row in enumerate(rows):
                if isinstance(row, list) and cols is not None:
                    del row[len(cols):]
                elif isinstance(row, dict):
                    for k in [k for k in row if k not in keys]:
                        del row[k]
                # A string in a date column must be an ISO date (docs/spec.md, Column typing).
                for j, key in dated.items():
                    where = j if isinstance(row, list) else key
                    if (where in row) if isinstance(row, dict) else j < len(row):
                        cell = row[where]
                        if isinstance(cell, str):
                            row[where] = "2026-03-31"
                        elif isinstance(cell, dict) and isinstance(cell.get("value"), str):
                            cell["value"] = "2026-03-31"
        if "data" in t:
            t["data"]["path"] = "tables/t.jsonl" if jsonl else "tables/t.csv"
        if not sheet:
            return
        n_rows = (len(rows) if isinstance(rows, list) else 0) + 2
        for k, merge in enumerate(t.get("merges") or []):
            r = n_rows + 3 + 2 * k
            merge["range"] = "A%d:B%d" % (r, r)
        own = t.get("name")
        for chart in t.get("charts") or []:
            self.chart(chart, ([own] if own else []) + names, literal=False)
        for img in t.get("images") or []:
            self.image(img["image"])
        for v in t.get("validations") or []:
            while len(",".join(v["values"])) > 255:
                v["values"].pop()

    def chart(self, c, names, literal):
        cats, series = c.get("categories"), c["series"]
        if isinstance(cats, list):
            n = len(cats)
        elif isinstance(series[0]["values"], list):
            n = len(series[0]["values"])
        else:
            n = self.rng.randint(1, 4)
        if isinstance(cats, str):
            c["categories"] = self.range(cats, "A", n, names)
        for s in series:
            values = s["values"]
            if isinstance(values, list):
                del values[n:]
                values.extend(self.rng.randint(0, 99) for _ in range(n - len(values)))
            else:
                s["values"] = self.range(values, "B", n, names)
            name = s.get("name")
            if not literal and isinstance(name, str) and (name.startswith("=") or "!" in name):
                s["name"] = ("=" if name.startswith("=") else "") + (_sheet_ref(names) if "!" in name else "") + "B1"
                if s["name"] == "B1":
                    s["name"] = "=B1"

    def range(self, text, column, n, names):
        eq = "=" if text.startswith("=") else ""
        prefix = _sheet_ref(names) if "!" in text else ""
        return "%s%s%s2:%s%d" % (eq, prefix, column, column, n + 1)

    @staticmethod
    def image(img):
        if "data" in img:
            img["data"] = PNG_1PX
        else:
            img["path"] = "images/logo.png"
        if "format" in img:
            img["format"] = "png"


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    """The files the repaired specs name: an image, a CSV and a JSON Lines file."""
    base = tmp_path_factory.mktemp("base")
    (base / "images").mkdir()
    shutil.copy(REPO / "samples" / "images" / "kiln_logo.png", base / "images" / "logo.png")
    (base / "tables").mkdir()
    shutil.copy(REPO / "samples" / "tables" / "headcount_2026.csv", base / "tables" / "t.csv")
    (base / "tables" / "t.jsonl").write_text('["a", 1]\n["b", 2]\n', encoding="utf-8")
    return base


def compact_defs():
    return dict(D.SPEC_DEFS)


N_COMPACT = 400  # whole specs
N_FOCUS = 60     # and for each of FOCUS, specs around generated values of one definition
N_STRICT = 200

# Definitions generated on their own, in a spec made around them (name: wrap(values)):
# cells in rows, and lists nested deep (every optional "items" likely).
FOCUS = {
    "cellv": lambda v: {"sheets": [{"rows": [v[:4], v[4:8]]}],
                        "blocks": [{"type": "table", "rows": [v[8:]]}]},
    "l1": lambda v: {"blocks": [{"type": "list", "items": v[0]}], "slides": [{"bullets": v[1]}]},
}
FOCUS_LIKELY = {"cellv": {}, "l1": {"items": 0.95}}


def focus_specs(defs, name, seed):
    """A spec around values generated from the definition `name` of defs (FOCUS)."""
    rng = random.Random(seed)
    kind = "cellv" if name in ("cellv", short_name("cellv")) else "l1"
    gen = Gen(defs, rng, max_depth=40, likely=FOCUS_LIKELY[kind])
    values = [gen.gen({"$ref": "#/$defs/" + name}) for _ in range(12 if kind == "cellv" else 2)]
    return rng, FOCUS[kind](values)


def list_depth(items):
    """How many levels a list's items nest."""
    deepest = 0
    for item in items:
        if isinstance(item, dict) and "items" in item:
            nested = item["items"]
            deepest = max(deepest, list_depth(nested["items"] if isinstance(nested, dict) else nested))
    return 1 + deepest


@pytest.fixture(scope="module")
def generated_specs(compact_v):
    """N_COMPACT specs generated from the compact schema, and N_FOCUS for each of FOCUS,
    repaired; each one the compact schema accepts (a generated spec it rejects, which
    the generator's lax walk of if/then and `not` can make, is dropped and counted)."""
    specs, dropped = [], []
    seeds = [("seed %d" % s, s, None) for s in range(N_COMPACT)]
    seeds += [("%s seed %d" % (f, s), s, f) for f in FOCUS for s in range(N_FOCUS)]
    for label, seed, focus in seeds:
        if focus:
            rng, spec = focus_specs(compact_defs(), focus, seed)
            spec = Repairs(rng)(spec)
        else:
            rng = random.Random(seed)
            spec = Repairs(rng)(Gen(compact_defs(), rng).gen(D.SPEC_ROOT))
        if compact_v.is_valid(spec):
            specs.append((label, spec))
        else:
            dropped.append((label, first_errors(compact_v, spec, 1)))
    assert len(specs) >= len(seeds) * 3 // 4, "only %d of %d generated specs are valid: %s" % (
        len(specs), len(seeds), dropped[:5])
    depth = max(list_depth(spec["blocks"][0]["items"]) for label, spec in specs if label.startswith("l1"))
    assert depth == D.LIST_LEVELS, "the list specs nest %d levels, not %d" % (depth, D.LIST_LEVELS)
    print("\ngenerated %d specs, %d dropped: %s" % (len(specs), len(dropped), dropped[:40]))
    return specs


def _no_duplicate_members(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a member given twice")  # JSON Kiln refuses, before any schema
    return dict(pairs)


@pytest.fixture(scope="module")
def corpus_specs(compact_v):
    """The fuzzers' corpora and regressions (fuzz/): each JSON object the compact schema
    accepts once repaired, as inputs nobody wrote for this test."""
    found = []
    for path in sorted((REPO / "fuzz").glob("*/fuzz_*/*")) + sorted((REPO / "fuzz" / "seeds").glob("*.json")):
        try:
            spec = json.loads(path.read_bytes().decode("utf-8"), object_pairs_hook=_no_duplicate_members)
        except ValueError:
            continue
        if isinstance(spec, dict):
            spec = Repairs(random.Random(path.name))(spec) if compact_v.is_valid(spec) else spec
            if compact_v.is_valid(spec):
                found.append((str(path.relative_to(REPO)), spec))
    assert len(found) >= 50, "only %d fuzz inputs are specs the compact schema accepts" % len(found)
    return found


def test_kiln_accepts_the_fuzz_inputs_the_compact_schema_accepts(corpus_specs, base_dir, kiln_bin):
    verdicts = kiln_validate_many(corpus_specs, base_dir)
    refused = [(label, verdicts[label]) for label, _ in corpus_specs if verdicts[label].returncode != 0]
    assert not refused, "%d of %d fuzz inputs the compact schema accepts, refused by kiln validate:\n%s" % (
        len(refused), len(corpus_specs), "\n".join("  %s: %s" % (l, p.stderr.strip()[:300]) for l, p in refused))


def test_kiln_accepts_every_spec_the_compact_schema_accepts(generated_specs, base_dir, kiln_bin):
    verdicts = kiln_validate_many(generated_specs, base_dir)
    refused = [(label, spec, verdicts[label]) for label, spec in generated_specs
               if verdicts[label].returncode != 0]
    kinds = {k for _, spec in generated_specs for k in ("sheets", "blocks", "slides") if k in spec}
    assert kinds == {"sheets", "blocks", "slides"}
    assert not refused, "%d of %d specs the compact schema accepts, refused by kiln validate:\n%s" % (
        len(refused), len(generated_specs), "\n".join(
            "  %s: %s\n    %s" % (label, p.stderr.strip()[:400], json.dumps(spec)[:1500])
            for label, spec, p in refused[:4]))


# --------------------------------------------------------------------------- strict mode

STRICT_ALLOWED = {"type", "properties", "required", "additionalProperties", "items", "enum",
                  "anyOf", "$ref", "$defs", "description", "pattern", "format", "minimum",
                  "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems",
                  "maxItems"}
STRICT_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}


def check_strict(params, where="parameters"):
    """Every way `params` breaks OpenAI's strict-mode rules, as messages naming the JSON
    path: root an object; each object closed (additionalProperties false) with every
    property in required; only the keywords strict mode supports; $ref only to
    #/$defs/NAME and alone; the limits (5,000 properties, 10 levels of nested objects,
    120,000 characters of property names and enum values, 1,000 enum values, 15,000
    characters for a string enum of more than 250 values)."""
    problems = []
    defs = params.get("$defs", {}) if isinstance(params, dict) else {}
    if not isinstance(params, dict) or params.get("type") != "object":
        problems.append("%s: the root must be type object" % where)
    for key in ("anyOf", "oneOf", "allOf", "$ref", "not", "enum"):
        if isinstance(params, dict) and key in params:
            problems.append("%s: %r at the root" % (where, key))
    counts = {"properties": 0, "chars": 0, "enum_values": 0}

    def walk(node, path, root=False):
        if not isinstance(node, dict):
            problems.append("%s: a schema must be an object, not %r" % (path, node))
            return
        for key in node:
            if key not in STRICT_ALLOWED:
                problems.append("%s: keyword %r is not supported in strict mode" % (path, key))
        if "$defs" in node and not root:
            problems.append("%s: $defs only at the root" % path)
        if "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/$defs/") or ref[8:] not in defs:
                problems.append("%s: $ref %r does not name a definition of #/$defs" % (path, ref))
            if set(node) - {"$ref"}:
                problems.append("%s: $ref with other keywords %s" % (path, sorted(set(node) - {"$ref"})))
        types = node.get("type")
        for t in (types if isinstance(types, list) else [types] if types else []):
            if t not in STRICT_TYPES:
                problems.append("%s: type %r" % (path, t))
        is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in node
        if is_object:
            props = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                problems.append("%s: an object without additionalProperties: false" % path)
            missing = sorted(set(props) - set(node.get("required", [])))
            if missing:
                problems.append("%s: properties not in required: %s" % (path, ", ".join(missing)))
            extra = sorted(set(node.get("required", [])) - set(props))
            if extra:
                problems.append("%s: required names no property: %s" % (path, ", ".join(extra)))
            counts["properties"] += len(props)
            counts["chars"] += sum(len(k) for k in props)
        if "enum" in node:
            values = node["enum"]
            counts["enum_values"] += len(values)
            strs = [v for v in values if isinstance(v, str)]
            counts["chars"] += sum(len(v) for v in strs)
            if len(strs) > 250 and sum(len(v) for v in strs) > 15000:
                problems.append("%s: a string enum of %d values over 15,000 characters" % (path, len(strs)))
        for key, sub in node.get("properties", {}).items():
            walk(sub, "%s/properties/%s" % (path, key))
        if "items" in node:
            walk(node["items"], path + "/items")
        for i, sub in enumerate(node.get("anyOf", [])):
            walk(sub, "%s/anyOf/%d" % (path, i))
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], path + "/additionalProperties")

    walk(params, where, root=True)
    for name, sub in defs.items():
        walk(sub, "%s/$defs/%s" % (where, name))
    if counts["properties"] > 5000:
        problems.append("%s: %d properties, over 5,000" % (where, counts["properties"]))
    if counts["chars"] > 120000:
        problems.append("%s: %d characters of names and enum values, over 120,000" % (where, counts["chars"]))
    if counts["enum_values"] > 1000:
        problems.append("%s: %d enum values, over 1,000" % (where, counts["enum_values"]))
    depth = object_depth(params, defs)
    if depth > 10:
        problems.append("%s: objects nest %d levels, over 10" % (where, depth))
    return problems


def object_depth(node, defs, stack=()):
    """The most objects nested along any path (following $refs); a cycle counts as
    too deep."""
    if not isinstance(node, dict):
        return 0
    if "$ref" in node:
        name = node["$ref"].split("/")[-1]
        if name in stack:
            return 99
        return object_depth(defs.get(name, {}), defs, stack + (name,))
    here = 1 if node.get("type") == "object" or "properties" in node else 0
    subs = list(node.get("properties", {}).values()) + node.get("anyOf", [])
    if "items" in node:
        subs.append(node["items"])
    return here + max([object_depth(s, defs, stack) for s in subs] or [0])


@python_only
def test_openai_json_passes_the_strict_mode_check(openai_doc):
    assert set(openai_doc) == {"comment", "tools"} and "Chat Completions" in openai_doc["comment"]
    names = [t["name"] for t in openai_doc["tools"]]
    assert names == ["execute_code", "render_document"]
    problems = []
    for tool in openai_doc["tools"]:
        assert set(tool) == {"type", "name", "description", "parameters", "strict"}
        assert tool["type"] == "function" and tool["strict"] is True
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool["name"])
        problems += check_strict(tool["parameters"], tool["name"] + "/parameters")
    assert not problems, "strict-mode violations:\n" + "\n".join(problems)
    depth = object_depth(openai_doc["tools"][1]["parameters"], openai_doc["tools"][1]["parameters"]["$defs"])
    print("\nopenai.json: strict-mode check passed; render_document's objects nest %d levels" % depth)


PLANTED = {
    "oneOf": ({"type": "object", "additionalProperties": False, "required": ["a"],
               "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "number"}]}}},
              "parameters/properties/a: keyword 'oneOf'"),
    "no additionalProperties": ({"type": "object", "required": ["a"],
                                 "properties": {"a": {"type": "object", "required": [], "properties": {},
                                                      "additionalProperties": False}}},
                                "parameters: an object without additionalProperties"),
    "optional property": ({"type": "object", "additionalProperties": False, "required": [],
                           "properties": {"a": {"type": ["string", "null"]}}},
                          "parameters: properties not in required: a"),
    "allOf": ({"type": "object", "additionalProperties": False, "required": ["a"],
               "properties": {"a": {"allOf": [{"type": "string"}]}}}, "keyword 'allOf'"),
    "if/then": ({"type": "object", "additionalProperties": False, "required": [], "properties": {},
                 "if": {"required": ["a"]}, "then": {"required": ["b"]}}, "keyword 'if'"),
    "not": ({"type": "object", "additionalProperties": False, "required": ["a"],
             "properties": {"a": {"type": "string", "not": {"const": "x"}}}}, "keyword 'not'"),
    "default": ({"type": "object", "additionalProperties": False, "required": ["a"],
                 "properties": {"a": {"type": "string", "default": "x"}}}, "keyword 'default'"),
    "minLength": ({"type": "object", "additionalProperties": False, "required": ["a"],
                   "properties": {"a": {"type": "string", "minLength": 1}}}, "keyword 'minLength'"),
    "root anyOf": ({"anyOf": [{"type": "object", "additionalProperties": False, "required": [],
                               "properties": {}}]}, "parameters: the root must be type object"),
    "$ref beside": ({"type": "object", "additionalProperties": False, "required": ["a"],
                     "properties": {"a": {"$ref": "#/$defs/x", "description": "d"}},
                     "$defs": {"x": {"type": "string"}}}, "$ref with other keywords"),
    "unknown $ref": ({"type": "object", "additionalProperties": False, "required": ["a"],
                      "properties": {"a": {"$ref": "#/definitions/x"}}}, "does not name a definition"),
    "too deep": (None, "objects nest 11 levels"),
    "too many enum values": ({"type": "object", "additionalProperties": False, "required": ["a"],
                              "properties": {"a": {"type": "integer", "enum": list(range(1001))}}},
                             "1001 enum values"),
}


def _deep(levels):
    node = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "additionalProperties": False, "required": ["x"], "properties": {"x": node}}
    return node


@python_only
@pytest.mark.parametrize("case", sorted(PLANTED))
def test_strict_check_catches_a_planted_violation(case):
    schema, message = PLANTED[case]
    if schema is None:
        schema = _deep(11)
    problems = check_strict(schema)
    assert any(message in p for p in problems), "%s: not caught; the check said %s" % (case, problems)
    assert not check_strict(_deep(10)), "a schema within the rules is refused"


@python_only
def test_strict_definitions_accept_a_subset_of_the_compact_ones():
    """Each STRICT_DEFS definition accepts only what the compact definition of the same
    name does (strings from its pattern, and edge cases)."""
    edges = ["History", "HISTORY", "history", "Histor", "Historyx", "'a", "a'", "'", "a", "=",
             "==1", "=A1", "", "x" * 31, "x" * 32, "R1C1", "A1", "Tbl1", "Sales", "a\tb",
             "2024-02-29", "1900-02-29", "2000-02-29", "2100-02-29", "9999-12-31", "=SUM(A1)",
             "&#30;", "&&#30;", "&#x1e;", "&#8212;", "a & b", "&amp;", "&", "&&"]
    defs = compact_defs()
    gen = Gen(dict(defs, **D.STRICT_DEFS), random.Random(7))
    for name, strict_def in D.STRICT_DEFS.items():
        if strict_def.get("type") != "string":
            continue
        compact_def = dict(defs[name], **{"$defs": defs})
        compact_check = Draft202012Validator(compact_def)
        strict_check = Draft202012Validator(strict_def)
        samples = edges + [gen.gen(strict_def) for _ in range(200)]
        bad = [s for s in samples if strict_check.is_valid(s) and not compact_check.is_valid(s)]
        assert not bad, "STRICT_DEFS[%r] accepts what the compact %r does not: %r" % (name, name, bad[:5])
        assert any(strict_check.is_valid(s) for s in samples), name
    sheet = Draft202012Validator(D.STRICT_DEFS["sheet_name"])
    assert not sheet.is_valid("History") and not sheet.is_valid("hIsToRy") and sheet.is_valid("Historia")


@pytest.fixture(scope="module")
def strict_calls(openai_doc):
    """N_STRICT render_document calls generated from openai.json, nulls included, and
    N_FOCUS for each of FOCUS (cells and lists generated on their own, in a call made
    around them)."""
    params = openai_doc["tools"][1]["parameters"]
    calls = []
    for seed in range(N_STRICT):
        gen = Gen(params["$defs"], random.Random(10000 + seed))
        calls.append(("strict seed %d" % seed, gen.gen(params)))
    for focus in FOCUS:
        for seed in range(N_FOCUS):
            rng, spec = focus_specs(params["$defs"], short_name(focus), 20000 + seed)
            calls.append(("strict %s seed %d" % (focus, seed), {"format": "xlsx", "filename": None, "spec": spec}))
    return calls


def short_name(name):
    return D.SHORT_NAMES.get(name, name)


@python_only
def test_compact_schema_refuses_markdown_entities_kiln_refuses(compact_v):
    def md(text):
        return {"blocks": [{"type": "markdown", "text": text}]}
    for text in ("&#30;", "x &#x1E; y", "&#0011;", "&#65535;", "&#xFFFE;"):
        assert not compact_v.is_valid(md(text)), text
    for text in ("&#8212;", "&#13;", "&#9; &amp; &#x1E", "R&D"):
        assert compact_v.is_valid(md(text)), text


@python_only
def test_compact_schema_nests_lists_as_deep_as_kiln(compact_v):
    def nested(levels):
        item = "leaf"
        for _ in range(levels - 1):
            item = {"text": "x", "items": [item]}
        return {"blocks": [{"type": "list", "items": [item]}]}
    assert list_depth(nested(D.LIST_LEVELS)["blocks"][0]["items"]) == D.LIST_LEVELS
    assert compact_v.is_valid(nested(D.LIST_LEVELS)), first_errors(compact_v, nested(D.LIST_LEVELS))
    assert not compact_v.is_valid(nested(D.LIST_LEVELS + 1))


@python_only
def test_strict_calls_convert_to_compact_specs(strict_calls, compact_v, openai_doc):
    nulls = sum(json.dumps(args).count("null") for _, args in strict_calls)
    assert nulls > N_STRICT, "the strict calls hold few nulls (%d)" % nulls
    bad = []
    for label, args in strict_calls:
        converted = kiln_tools.from_openai_strict("render_document", args)
        assert set(converted) <= {"format", "spec", "filename"} and "spec" in converted
        if not compact_v.is_valid(converted["spec"]):
            bad.append((label, first_errors(compact_v, converted["spec"])))
    assert not bad, "strict calls that convert to specs the compact schema rejects:\n%s" % "\n".join(
        "  %s: %s" % b for b in bad[:8])


def test_kiln_accepts_converted_strict_calls(strict_calls, base_dir, kiln_bin):
    specs = []
    for label, args in strict_calls:
        spec = kiln_tools.from_openai_strict("render_document", args)["spec"]
        specs.append((label, Repairs(random.Random(label))(spec)))
    verdicts = kiln_validate_many(specs, base_dir)
    refused = [(label, spec, verdicts[label]) for label, spec in specs if verdicts[label].returncode != 0]
    assert not refused, "%d of %d converted strict calls refused by kiln validate:\n%s" % (
        len(refused), len(specs), "\n".join("  %s: %s\n    %s" % (l, p.stderr.strip()[:400], json.dumps(s)[:1200])
                                            for l, s, p in refused[:4]))


def _strict_objects(params):
    """Every closed object schema of a strict-mode schema."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(params)
    return found


@python_only
def test_the_null_rule_holds_in_openai_json(openai_doc):
    """The premises of from_openai_strict: the one required member that may be null is
    a value cell's value, and a value cell is the one object with exactly its members."""
    required_nulls = []
    for tool in D.TOOLS:
        if "openai" in tool["apis"]:
            M.strict_schema(tool, required_nulls)
    assert {(member, members) for _, member, members in required_nulls} == {
        ("value", kiln_tools.VALUE_CELL_MEMBERS)}, required_nulls
    shapes = [frozenset(o["properties"]) for t in openai_doc["tools"] for o in _strict_objects(t["parameters"])]
    assert shapes.count(kiln_tools.VALUE_CELL_MEMBERS) == 1, "value cells: %d objects with its members" % (
        shapes.count(kiln_tools.VALUE_CELL_MEMBERS))


@python_only
def test_from_openai_strict():
    args = {"format": "xlsx", "filename": None, "spec": {
        "metadata": None, "blocks": None, "slides": None,
        "sheets": [{"name": None, "rows": [
            [None, 1, {"value": None, "number_format": None, "style": {"bold": True, "fill": None}},
             {"formula": "=1", "value": None, "number_format": None, "style": None}]],
            "merges": [{"range": "A3:B3", "value": None}]}]}}
    text = json.dumps(args)
    out = kiln_tools.from_openai_strict("render_document", text)
    assert out == {"format": "xlsx", "spec": {"sheets": [{"rows": [
        [None, 1, {"value": None, "style": {"bold": True}}, {"formula": "=1"}]],
        "merges": [{"range": "A3:B3"}]}]}}
    assert json.loads(text) == args  # not changed in place
    assert kiln_tools.from_openai_strict("execute_code", {"code": "1", "language": None,
                                                          "session_id": None, "timeout_seconds": None}) == {"code": "1"}
    with pytest.raises(TypeError):
        kiln_tools.from_openai_strict("execute_code", "[1]")


@python_only
def test_kiln_tools_load():
    mcp = kiln_tools.load("mcp")
    assert [t["name"] for t in mcp] == ["execute_code", "render_document", "list_files", "load_file"]
    responses = kiln_tools.load("openai")
    chat = kiln_tools.load("openai", chat=True)
    assert [t["function"] for t in chat] == [{k: v for k, v in t.items() if k != "type"} for t in responses]
    assert all(t["type"] == "function" for t in chat)
    assert [t["name"] for t in kiln_tools.load("anthropic")] == ["execute_code", "render_document"]
    with pytest.raises(ValueError):
        kiln_tools.load("gemini")


# --------------------------------------------------------------------------- anthropic and mcp

@python_only
def test_anthropic_json(mcp_doc):
    tools = load(TOOLS_DIR / "anthropic.json")
    assert isinstance(tools, list) and [t["name"] for t in tools] == ["execute_code", "render_document"]
    by_name = {t["name"]: t for t in mcp_doc["tools"]}
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        schema = tool["input_schema"]
        assert schema["type"] == "object", tool["name"]
        for key in ("anyOf", "oneOf", "allOf"):
            assert key not in schema, "%s: %s at the top level" % (tool["name"], key)
        assert schema == by_name[tool["name"]]["inputSchema"]
        assert tool["description"] == by_name[tool["name"]]["description"]
        Draft202012Validator.check_schema(schema)


@python_only
def test_render_document_takes_the_compact_schema(mcp_doc, compact):
    schema = {t["name"]: t for t in mcp_doc["tools"]}["render_document"]["inputSchema"]
    spec = schema["properties"]["spec"]
    assert spec == {k: v for k, v in compact.items() if k not in ("$schema", "title", "$defs")}
    assert schema["$defs"] == compact["$defs"]
    assert schema["required"] == ["format", "spec"]
    v = Draft202012Validator(schema)
    for path in sample_specs():
        assert v.is_valid({"format": "xlsx", "spec": load(path), "filename": "x.xlsx"}), path.name
    assert not v.is_valid({"format": "odt", "spec": load(sample_specs()[0])})


@python_only
def test_mcp_json(mcp_doc):
    raw = (TOOLS_DIR / "mcp.json").read_text(encoding="utf-8")
    assert raw.count("\n") == 1 and raw.endswith("\n"), "mcp.json is one minified line"
    tools = mcp_doc["tools"]
    assert [t["name"] for t in tools] == ["execute_code", "render_document", "list_files", "load_file"]
    hints = {t["name"]: t["annotations"] for t in tools}
    assert hints["execute_code"] == {"title": "Run code in a Kiln session", "readOnlyHint": False,
                                     "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
    assert {k: v for k, v in hints["render_document"].items() if k != "title"} == {
        "readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert hints["list_files"]["readOnlyHint"] is True and hints["list_files"]["openWorldHint"] is False
    assert hints["load_file"]["readOnlyHint"] is False and hints["load_file"]["idempotentHint"] is True
    for tool in tools:
        assert set(tool) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool["name"])
        for key in ("inputSchema", "outputSchema"):
            assert tool[key]["type"] == "object" and "$schema" not in tool[key], (tool["name"], key)
            Draft202012Validator.check_schema(tool[key])
        # Clients compile output schemas with Ajv's draft-07 dialect (the TypeScript SDK).
        assert "$defs" not in json.dumps(tool["outputSchema"]) and "$ref" not in json.dumps(tool["outputSchema"])
        jsonschema.Draft7Validator.check_schema(tool["outputSchema"])
    inputs = {t["name"]: t["inputSchema"] for t in tools}
    assert inputs["execute_code"]["required"] == ["code"]
    assert set(inputs["execute_code"]["properties"]) == {"code", "language", "session_id", "timeout_seconds"}
    assert inputs["load_file"]["required"] == ["path"]
    assert set(inputs["list_files"]["properties"]) == {"session_id"}


@python_only
def test_output_schemas_take_the_contract_results(mcp_doc):
    """The results the contract describes (docs/session.md's cell record) match the
    output schemas."""
    out = {t["name"]: jsonschema.Draft7Validator(t["outputSchema"]) for t in mcp_doc["tools"]}
    cell = {"status": "ok", "execution_count": 2, "wall_seconds": 0.0009, "cpu_seconds": 0.0008,
            "peak_memory_bytes": 3145728, "stdout": {"text": "42\n", "bytes": 3, "truncated": False},
            "stderr": {"text": "", "bytes": 0, "truncated": False},
            "outputs": [{"type": "result", "data": {"text/plain": "42"}, "metadata": {}}],
            "error": None, "files": [{"name": "a.csv", "bytes": 3, "media_type": "text/csv",
                                      "sha256": "ab", "source": "output", "uri": "kiln://files/x"}],
            "documents": [], "dropped": {"displays": 0, "bytes": 0}, "session_id": "s1"}
    assert out["execute_code"].is_valid(cell), list(out["execute_code"].iter_errors(cell))
    error = dict(cell, status="error", error={"ename": "ValueError", "evalue": "x", "traceback": ["a", "b"]})
    assert out["execute_code"].is_valid(error)
    doc = {"uri": "kiln://files/1", "id": "1", "filename": "a.xlsx", "bytes": 10, "sha256": "ab",
           "media_type": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "warnings": []}
    assert out["render_document"].is_valid(doc)
    bad = {"errors": [{"pointer": "/sheets/0", "code": "invalid_spec", "message": "m"}], "dropped": 0}
    assert out["render_document"].is_valid(bad)
    assert not out["render_document"].is_valid({"warnings": []})
    assert out["list_files"].is_valid({"session_id": "s", "files": [{"name": "a", "bytes": 1, "media_type": "x",
                                                                     "sha256": "ab"}]})
    assert out["load_file"].is_valid({"session_id": "s", "name": "a", "bytes": 1, "sha256": "ab"})
    # A call that fails before it acts: its errors (the server's error objects, docs/cli.md).
    failed = {"errors": [{"code": "usage", "pointer": "/code", "message": "expected a string"}],
              "more_errors": 0}
    for name, validator in out.items():
        assert validator.is_valid(failed), name
        assert not validator.is_valid({"more_errors": 0}), name
