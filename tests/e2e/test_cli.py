"""The kiln command line: help, usage errors, validation, every limit and kind of
malformed spec, exit statuses, error lines with JSON Pointers, --json output, the
size ceiling, and the output guarantee (nothing at OUT, no temporary file, an
existing OUT untouched) after every failure, including SIGKILL.
"""
import base64
import json
import os
import re
import signal
import struct
import subprocess
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from conftest import (SANITIZED, pdf_info, run_kiln_peak, KILN_BIN, SAMPLES, assert_ooxml_ok, describe, err_text, listing, out_text,
                      render_ok, run_kiln, write_spec)

try:
    import openpyxl
except ImportError:
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl")

ERROR_LINE = re.compile(r"^kiln: error: (.*)$")
# A line names its pointer as --json does; "(whole spec)" stands for "".
POINTER_LINE = re.compile(r"^kiln: error: (/[^:]*|\(whole spec\)): (.*)$")
WHOLE_SPEC = "(whole spec)"
CODES = {"usage": 2, "invalid_spec": 3, "limit_exceeded": 3, "too_large": 4, "unreadable_input": 5,
         "write_failed": 6, "out_of_memory": 7, "internal": 70}
MINIMAL = {"sheets": [{"name": "S", "rows": [["a", 1]]}]}


def png_bytes(w=2, h=2):
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


PNG_B64 = base64.b64encode(png_bytes()).decode()


def error_lines(proc):
    lines = [l for l in err_text(proc).splitlines() if l.strip()]
    return lines


def assert_error_lines(proc):
    lines = error_lines(proc)
    assert lines, "no error message on stderr: " + describe(proc)
    bad = [l for l in lines if not ERROR_LINE.match(l)]
    # a closing count of the errors not shown may be phrased freely, but is still a kiln line
    if bad == lines[-1:] and re.match(r"^kiln: .*\d+.*more", bad[0]):
        bad = []
    assert not bad, "stderr lines not in the form 'kiln: error: ...':\n%s" % "\n".join(bad)
    return lines


def pointers(proc):
    """The pointer of every error line ("" for a line without one, or for the whole spec)."""
    return [p or "" for p in shown_pointers(proc)]


def shown_pointers(proc):
    """The pointer each error line shows: "" for "(whole spec)", None for a line with none."""
    out = []
    for l in error_lines(proc):
        m = POINTER_LINE.match(l)
        out.append(None if not m else "" if m.group(1) == WHOLE_SPEC else m.group(1))
    return out


def assert_lines_match_json(proc, obj):
    """Every error the human lines show carries the pointer --json gives it (or none
    when --json gives none), in the same order."""
    shown = shown_pointers(proc)
    for i, e in enumerate(obj["errors"]):
        assert i < len(shown), "fewer error lines than --json errors:\n%s" % describe(proc)
        assert shown[i] == e.get("pointer"), (
            "error %d: the line shows pointer %r, --json %r\n%s" % (i, shown[i], e.get("pointer"),
                                                                   describe(proc)))


def assert_pointer(proc, pointer_re):
    ps = pointers(proc)
    assert any(re.fullmatch(pointer_re, p) for p in ps), \
        "no error with a pointer matching %r; got pointers %s\n%s" % (pointer_re, ps, describe(proc))


def parse_json_stdout(proc):
    text = out_text(proc).strip()
    assert text, "--json printed nothing on stdout: " + describe(proc)
    try:
        obj = json.loads(text)
    except ValueError as e:
        pytest.fail("--json stdout is not one JSON object (%s): %r" % (e, text[:500]))
    assert isinstance(obj, dict), obj
    return obj


def assert_json_failure(obj, exit_code, pointer_re=None):
    assert obj.get("ok") is False, obj
    errs = obj.get("errors")
    assert isinstance(errs, list) and errs, obj
    for e in errs:
        assert isinstance(e.get("code"), str) and e["code"] in CODES, e
        assert isinstance(e.get("message"), str) and e["message"], e
        assert "pointer" not in e or isinstance(e["pointer"], str), e
    assert CODES[errs[0]["code"]] == exit_code, "first error code %s does not give exit %d" % (errs[0]["code"], exit_code)
    if pointer_re is not None:
        hit = [e for e in errs if re.fullmatch(pointer_re, e.get("pointer") or "")]
        assert hit, "no JSON error with pointer %r in %s" % (pointer_re, errs)
        return hit[0]
    return errs[0]


def expect_failure(tmp_path, spec, exit_code, pointer_re=None, message_re=None, extra=(),
                   also_validate=True, also_json=True, timeout=300, spec_name="spec.json"):
    """Render spec (dict/str/bytes, or a Path) and check the whole failure contract."""
    sd = tmp_path / "specdir"
    sd.mkdir(exist_ok=True)
    od = tmp_path / "outdir"
    od.mkdir(exist_ok=True)
    (od / "keep.txt").write_text("unrelated file")
    sp = spec if isinstance(spec, Path) else write_spec(sd, spec, spec_name)
    before_out, before_spec = listing(od), listing(sd)
    out = od / "result.xlsx"
    proc = run_kiln("render", sp, "-o", out, *extra, timeout=timeout)
    assert proc.returncode == exit_code, "expected exit %d, got: %s" % (exit_code, describe(proc))
    assert_error_lines(proc)
    if pointer_re is not None:
        assert_pointer(proc, pointer_re)
    if message_re is not None:
        assert re.search(message_re, err_text(proc), re.I), \
            "message does not match %r: %s" % (message_re, describe(proc))
    assert not out.exists(), "a failed render left %s" % out
    assert listing(od) == before_out, "output dir changed: %s -> %s" % (before_out, listing(od))
    assert listing(sd) == before_spec, "spec dir changed: %s -> %s" % (before_spec, listing(sd))
    if also_json:
        pj = run_kiln("render", sp, "-o", out, "--json", *extra, timeout=timeout)
        assert pj.returncode == exit_code, describe(pj)
        obj = parse_json_stdout(pj)
        assert_json_failure(obj, exit_code, pointer_re)
        assert_lines_match_json(proc, obj)
        assert listing(od) == before_out
    if also_validate and exit_code in (3, 5):
        pv = run_kiln("validate", sp, "--scan-data", timeout=timeout)
        assert pv.returncode == exit_code, "validate: " + describe(pv)
        if pointer_re is not None:
            assert_pointer(pv, pointer_re)
    return proc


# =========================================================================== help and usage

def test_help(kiln_bin):
    p = run_kiln("--help")
    assert p.returncode == 0, describe(p)
    text = out_text(p)
    for word in ("render", "validate", "--version"):
        assert word in text, "--help does not mention %s:\n%s" % (word, text)


def test_help_per_command(kiln_bin):
    for args in (("help", "render"), ("render", "--help")):
        p = run_kiln(*args)
        assert p.returncode == 0, describe(p)
        t = out_text(p)
        assert "-o" in t and "--format" in t and "--max-bytes" in t and "--base-dir" in t, t
    for args in (("help", "validate"), ("validate", "--help")):
        p = run_kiln(*args)
        assert p.returncode == 0, describe(p)
        assert "--scan-data" in out_text(p), out_text(p)


def test_help_unknown_command_is_usage_error(kiln_bin):
    p = run_kiln("help", "frobnicate")
    assert p.returncode == 2, describe(p)
    assert "frobnicate" in err_text(p)


def test_version(kiln_bin):
    p = run_kiln("--version")
    assert p.returncode == 0, describe(p)
    assert re.search(r"\bkiln\b.*\d+\.\d+", out_text(p), re.I), out_text(p)


@pytest.mark.parametrize("args", [
    (),
    ("frobnicate",),
    ("render",),
    ("render", "{spec}"),                                   # missing -o
    ("render", "-o", "{out}"),                               # missing SPEC
    ("render", "{spec}", "-o"),                              # -o without a value
    ("render", "{spec}", "-o", "{out}", "--bogus"),
    ("render", "{spec}", "-o", "{out}", "--format", "odt"),
    ("render", "{spec}", "-o", "{dir}/result.txt"),            # unknown extension, no --format
    ("render", "{spec}", "-o", "{dir}/result"),                # no extension, no --format
    ("render", "{spec}", "-o", "-"),                          # stdout needs --format
    ("render", "{spec}", "-o", "{out}", "--max-bytes", "abc"),
    ("render", "{spec}", "-o", "{out}", "--max-bytes", "-5"),
    ("render", "{spec}", "-o", "{out}", "--max-bytes", "10X"),
    ("render", "{spec}", "-o", "{out}", "--max-bytes"),
    ("render", "{spec}", "{spec}", "-o", "{out}"),             # two specs
    ("validate",),
    ("validate", "{spec}", "--bogus"),
    ("--bogus",),
], ids=lambda a: " ".join(a) or "no-args")
def test_usage_errors_exit_2(tmp_path, kiln_bin, args):
    spec = write_spec(tmp_path, MINIMAL)
    od = tmp_path / "o"
    od.mkdir()
    out = od / "result.xlsx"
    argv = [a.format(spec=spec, out=out, dir=od) for a in args]
    p = run_kiln(*argv)
    assert p.returncode == 2, describe(p)
    assert err_text(p).strip(), "no message for a usage error"
    assert p.stdout == b"", "a usage error printed on stdout: " + describe(p)
    assert listing(od) == {}, "a usage error wrote %s" % listing(od)


@pytest.mark.parametrize("args", [
    ("frobnicate",),
    ("render", "{spec}"),
    ("render", "{spec}", "-o", "{out}", "--bogus"),
    ("render", "{spec}", "-o", "{out}", "--max-bytes"),
    ("render", "{spec}", "-o", "{out}", "--format", "odt"),
], ids=lambda a: " ".join(a))
def test_usage_error_message_format(tmp_path, kiln_bin, args):
    """The contract's error line, `kiln: error: MESSAGE`, comes first (a usage hint may follow)."""
    spec = write_spec(tmp_path, MINIMAL)
    p = run_kiln(*[a.format(spec=spec, out=tmp_path / "o.xlsx") for a in args])
    assert p.returncode == 2, describe(p)
    first = error_lines(p)[0] if error_lines(p) else ""
    assert ERROR_LINE.match(first), "first stderr line is not 'kiln: error: ...': %r" % first


@pytest.mark.parametrize("fmt", ["docx", "pdf", "pptx"])
def test_other_formats_either_render_or_are_usage_errors(tmp_path, kiln_bin, fmt):
    spec = write_spec(tmp_path, MINIMAL)
    od = tmp_path / "o"
    od.mkdir()
    out = od / ("result." + fmt)
    p = run_kiln("render", spec, "-o", out)
    if p.returncode == 2:
        assert_error_lines(p)
        assert listing(od) == {}
    else:
        assert p.returncode == 0, describe(p)
        magic = b"%PDF-" if fmt == "pdf" else b"PK\x03\x04"
        assert out.read_bytes().startswith(magic)


def test_format_option_overrides_extension(tmp_path, kiln_bin):
    spec = write_spec(tmp_path, MINIMAL)
    out = tmp_path / "result.bin"
    p = run_kiln("render", spec, "-o", out, "--format", "xlsx")
    assert p.returncode == 0, describe(p)
    assert zipfile.is_zipfile(out)
    copy = tmp_path / "copy.xlsx"    # openpyxl insists on the extension
    copy.write_bytes(out.read_bytes())
    assert openpyxl.load_workbook(copy).sheetnames == ["S"]


# =========================================================================== validate

def test_validate_good_spec(tmp_path, kiln_bin):
    spec = write_spec(tmp_path, MINIMAL)
    p = run_kiln("validate", spec)
    assert p.returncode == 0, describe(p)
    assert "error" not in err_text(p).lower(), describe(p)
    assert list(tmp_path.iterdir()) == [spec], "validate wrote files"


def test_validate_samples(kiln_bin, sample_data_ready):
    specs = sorted(SAMPLES.glob("*.json"))
    assert specs, "no samples"
    for s in specs:
        p = run_kiln("validate", s, "--scan-data", timeout=300)
        assert p.returncode == 0, "%s: %s" % (s.name, describe(p))


def test_validate_bad_spec_lists_every_error(tmp_path, kiln_bin):
    spec = {"sheets": [{"name": "a/b", "rows": [[1]], "blod": True},
                       {"name": "ok", "rows": [[{"date": "2026-13-01"}]]}],
            "theme": {"font_size": 500}}
    sp = write_spec(tmp_path, spec)
    p = run_kiln("validate", sp)
    assert p.returncode == 3, describe(p)
    assert_error_lines(p)
    ps = pointers(p)
    for want in ("/sheets/0/name", "/sheets/0/blod", "/sheets/1/rows/0/0/date", "/theme/font_size"):
        assert any(x == want or x.startswith(want) for x in ps), "validate missed %s: %s" % (want, ps)
    pj = run_kiln("validate", sp, "--json")
    assert pj.returncode == 3
    obj = parse_json_stdout(pj)
    assert obj["ok"] is False and len(obj["errors"]) >= 4, obj


def test_validate_json_success(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    p = run_kiln("validate", sp, "--json")
    assert p.returncode == 0, describe(p)
    assert parse_json_stdout(p).get("ok") is True


def test_validate_scan_data_finds_bad_csv_field(tmp_path, kiln_bin):
    (tmp_path / "d.csv").write_text("n\n1\n2\nnot-a-number\n4\n", encoding="utf-8")
    spec = {"sheets": [{"name": "D", "columns": [{"header": "n", "type": "integer"}],
                        "data": {"path": "d.csv", "format": "csv"}}]}
    sp = write_spec(tmp_path, spec)
    p = run_kiln("validate", sp)
    assert p.returncode == 0, "validate without --scan-data should not read the data: " + describe(p)
    p = run_kiln("validate", sp, "--scan-data")
    assert p.returncode == 3, describe(p)
    assert_pointer(p, r"/sheets/0/data.*")
    assert re.search(r"\b4\b|line 4|row 3", err_text(p)), "the message should name the line: " + err_text(p)
    # render finds it while streaming and leaves nothing
    expect_failure(tmp_path, sp, 3, r"/sheets/0/data.*")


def test_validate_missing_spec_is_5(tmp_path, kiln_bin):
    p = run_kiln("validate", tmp_path / "nope.json")
    assert p.returncode == 5, describe(p)
    assert_error_lines(p)


# =========================================================================== malformed specs

def deep(n):
    """A spec whose JSON nests n levels deep (the top object is level 1)."""
    inner = "1"
    for _ in range(n - 5):
        inner = "[" + inner + "]"
    return '{"sheets":[{"rows":[[' + inner + ']]}]}'


MALFORMED = [
    # id, spec, exit, pointer regex, message regex
    ("syntax-error", '{"sheets": [{"name": "a",, "rows": [[1]]}]}', 3, None,
     r"line \d+|column \d+|position \d+|offset \d+|byte \d+"),
    ("syntax-truncated", '{"sheets": [{"rows": [[1]]', 3, None, r"line \d+|column \d+|position \d+|offset \d+|byte \d+"),
    ("not-an-object", '[1, 2, 3]', 3, r"/?", None),
    ("empty-file", "", 3, None, None),
    ("nan-literal", '{"sheets":[{"rows":[[NaN]]}]}', 3, None, None),
    ("no-content", {}, 3, None, None),
    ("empty-sheets", {"sheets": []}, 3, None, None),
    ("version-2", {"version": 2, "sheets": [{"rows": [[1]]}]}, 3, r"/version", None),
    ("unknown-top-member", {"sheets": [{"rows": [[1]]}], "sheetz": []}, 3, r"/sheetz", None),
    ("unknown-sheet-member", {"sheets": [{"name": "a", "rows": [[1]], "blod": True}]}, 3, r"/sheets/0/blod", None),
    ("unknown-style-member", {"sheets": [{"rows": [[{"value": 1, "style": {"blod": True}}]]}]}, 3,
     r"/sheets/0/rows/0/0/style/blod", None),
    ("unknown-cell-member", {"sheets": [{"rows": [[{"value": 1, "colour": "#FF0000"}]]}]}, 3,
     r"/sheets/0/rows/0/0/colour", None),
    ("sheets-wrong-type", {"sheets": {"name": "a"}}, 3, r"/sheets", None),
    ("name-wrong-type", {"sheets": [{"name": 5, "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("rows-wrong-type", {"sheets": [{"rows": "a,b"}]}, 3, r"/sheets/0/rows", None),
    ("row-wrong-type", {"sheets": [{"rows": [5]}]}, 3, r"/sheets/0/rows/0", None),
    ("cell-array", {"sheets": [{"rows": [[[1, 2]]]}]}, 3, r"/sheets/0/rows/0/0", None),
    ("cell-object-empty", {"sheets": [{"rows": [[{}]]}]}, 3, r"/sheets/0/rows/0/0", None),
    ("cell-two-kinds", {"sheets": [{"rows": [[{"formula": "=1", "date": "2026-01-01"}]]}]}, 3,
     r"/sheets/0/rows/0/0(/.*)?", None),
    ("freeze-wrong-type", {"sheets": [{"rows": [[1]], "freeze": {"rows": "1"}}]}, 3, r"/sheets/0/freeze/rows", None),
    ("bad-date", {"sheets": [{"rows": [[{"date": "2026-02-30"}]]}]}, 3, r"/sheets/0/rows/0/0/date", None),
    ("bad-datetime", {"sheets": [{"rows": [[{"datetime": "2026-03-31T25:00:00"}]]}]}, 3,
     r"/sheets/0/rows/0/0/datetime", None),
    ("date-column-bad-string", {"sheets": [{"columns": [{"type": "date"}], "rows": [["yesterday"]]}]}, 3,
     r"/sheets/0/rows/0/0", None),
    ("bad-url-scheme", {"sheets": [{"rows": [[{"url": "javascript:alert(1)"}]]}]}, 3, r"/sheets/0/rows/0/0/url", None),
    ("bad-color", {"sheets": [{"rows": [[1]], "tab_color": "#GG0000"}]}, 3, r"/sheets/0/tab_color", None),
    ("bad-column-type", {"sheets": [{"columns": [{"type": "money"}], "rows": [[1]]}]}, 3,
     r"/sheets/0/columns/0/type", None),
    ("column-width-256", {"sheets": [{"columns": [{"width": 256}], "rows": [[1]]}]}, 3,
     r"/sheets/0/columns/0/width", None),
    ("row-longer-than-columns", {"sheets": [{"columns": [{"header": "a"}], "rows": [[1, 2]]}]}, 3,
     r"/sheets/0/rows/0(/1)?", None),
    ("bad-merge-range", {"sheets": [{"rows": [[1]], "merges": [{"range": "A1:ZZZZ1"}]}]}, 3,
     r"/sheets/0/merges/0/range", None),
    ("bad-cell-ref", {"sheets": [{"rows": [[1]], "comments": [{"cell": "1A", "text": "x"}]}]}, 3,
     r"/sheets/0/comments/0/cell", None),
    ("validation-over-255", {"sheets": [{"rows": [[1]], "validations": [
        {"range": "A1:A9", "type": "list", "values": ["v%03d" % i for i in range(80)]}]}]}, 3,
     r"/sheets/0/validations/0/values", None),
    ("table-and-autofilter", {"sheets": [{"columns": [{"header": "a"}], "rows": [[1]], "table": True,
                                          "autofilter": True}]}, 3, r"/sheets/0/(table|autofilter)", None),
    ("chart-bad-kind", {"sheets": [{"rows": [[1]], "charts": [{"kind": "radar", "categories": ["a"],
                                                                "series": [{"values": [1]}]}]}]}, 3,
     r"/sheets/0/charts/0/kind", None),
    ("chart-values-mismatch", {"sheets": [{"rows": [[1]], "charts": [{"kind": "column", "categories": ["a", "b"],
                                                                       "series": [{"values": [1]}]}]}]}, 3,
     r"/sheets/0/charts/0/series/0/values", None),
    ("pie-two-series", {"sheets": [{"rows": [[1]], "charts": [{"kind": "pie", "categories": ["a"],
                                                                "series": [{"values": [1]}, {"values": [2]}]}]}]}, 3,
     r"/sheets/0/charts/0/series(/1)?", None),
    ("theme-font-size", {"theme": {"font_size": 100}, "sheets": [{"rows": [[1]]}]}, 3, r"/theme/font_size", None),
    ("page-margin-too-big", {"page": {"margins": {"top": "5in"}}, "sheets": [{"rows": [[1]]}]}, 3,
     r"/page/margins/top", None),
    ("metadata-created-bad", {"metadata": {"created": "yesterday"}, "sheets": [{"rows": [[1]]}]}, 3,
     r"/metadata/created", None),
    ("run-super-and-sub", {"blocks": [{"type": "paragraph", "runs": [{"text": "x", "superscript": True,
                                                                         "subscript": True}]}]}, 3,
     r"/blocks/0/runs/0(/.*)?", None),
    ("list-nesting-10", {"blocks": [{"type": "list", "items": [
        json.loads('{"text":"a","items":[' * 9 + '"x"' + ']}' * 9)]}]}, 3, r"/blocks/0/items.*", None),
    ("block-unknown-type", {"blocks": [{"type": "video"}]}, 3, r"/blocks/0/type", None),
    ("slide-bad-layout", {"slides": [{"layout": "fancy"}]}, 3, r"/slides/0/layout", None),
    # sheet names
    ("name-32-chars", {"sheets": [{"name": "x" * 32, "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("name-empty", {"sheets": [{"name": "", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("name-leading-quote", {"sheets": [{"name": "'abc", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("name-trailing-quote", {"sheets": [{"name": "abc'", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("name-duplicate-case", {"sheets": [{"name": "Data", "rows": [[1]]}, {"name": "dATA", "rows": [[1]]}]}, 3,
     r"/sheets/1/name", None),
] + [("name-char-%s" % {"[": "lbracket", "]": "rbracket", ":": "colon", "*": "star", "?": "question",
                         "/": "slash", "\\": "backslash"}[ch],
      {"sheets": [{"name": "a%sb" % ch, "rows": [[1]]}]}, 3, r"/sheets/0/name", None)
     for ch in "[]:*?/\\"] + [
    # characters
    ("control-char-cell", {"sheets": [{"rows": [["a\u0001b"]]}]}, 3, r"/sheets/0/rows/0/0", None),
    ("control-char-escape-1f", {"sheets": [{"rows": [[{"value": "x\u001fy"}]]}]}, 3, r"/sheets/0/rows/0/0(/value)?", None),
    ("control-char-name", {"sheets": [{"name": "a\u0007", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("control-char-title", {"metadata": {"title": "t\u000bt"}, "sheets": [{"rows": [[1]]}]}, 3, r"/metadata/title", None),
    ("control-char-header", {"sheets": [{"columns": [{"header": "h\u0002"}], "rows": [[1]]}]}, 3,
     r"/sheets/0/columns/0/header", None),
    ("uffff", {"sheets": [{"rows": [["a\uffffb"]]}]}, 3, r"/sheets/0/rows/0/0", None),
    ("ufffe", {"sheets": [{"rows": [["a\ufffeb"]]}]}, 3, r"/sheets/0/rows/0/0", None),
    ("nul-in-string", '{"sheets":[{"rows":[["a\\u0000b"]]}]}', 3, r"/sheets/0/rows/0/0|", None),
    ("nul-in-comment", '{"sheets":[{"rows":[[1]],"comments":[{"cell":"A1","text":"x\\u0000"}]}]}', 3,
     r"/sheets/0/comments/0/text|", None),
    ("invalid-utf8", b'{"sheets":[{"rows":[["\xff\xfe bad"]]}]}', 3, None, None),
    ("lone-surrogate", '{"sheets":[{"rows":[["\\ud800"]]}]}', 3, None, None),
    # rules the spec added: members that would do nothing, ranges, dates, objects
    ("object-row-unknown-member", {"sheets": [{"columns": [{"header": "a"}], "rows": [{"a": 1, "b": 2}]}]}, 3,
     r"/sheets/0/rows/0/b", None),
    ("object-row-without-columns", {"sheets": [{"rows": [{"a": 1}]}]}, 3, r"/sheets/0/rows/0(/a)?", None),
    ("name-history", {"sheets": [{"name": "History", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("name-history-lower", {"sheets": [{"name": "history", "rows": [[1]]}]}, 3, r"/sheets/0/name", None),
    ("merges-overlap", {"sheets": [{"rows": [[1]], "merges": [{"range": "A1:B2"}, {"range": "B2:C3"}]}]}, 3,
     r"/sheets/0/merges/[01](/range)?", None),
    ("date-with-time", {"sheets": [{"rows": [[{"date": "2026-03-31T10:00"}]]}]}, 3, r"/sheets/0/rows/0/0/date", None),
    ("date-before-1900", {"sheets": [{"rows": [[{"date": "1899-12-31"}]]}]}, 3, r"/sheets/0/rows/0/0/date", None),
    ("datetime-minute-60", {"sheets": [{"rows": [[{"datetime": "2026-03-31T10:60"}]]}]}, 3,
     r"/sheets/0/rows/0/0/datetime", None),
    ("pie-with-axis", {"sheets": [{"rows": [[1]], "charts": [{"kind": "pie", "categories": ["a"],
                                                               "series": [{"values": [1]}], "x_axis": {"title": "x"}}]}]},
     3, r"/sheets/0/charts/0/x_axis", None),
    ("line-stacked", {"sheets": [{"rows": [[1]], "charts": [{"kind": "line", "categories": ["a"], "stacked": True,
                                                              "series": [{"values": [1]}]}]}]}, 3,
     r"/sheets/0/charts/0/stacked", None),
    ("cf-maximum-on-gt", {"sheets": [{"rows": [[1]], "conditional_formats": [
        {"range": "A1:A2", "type": "cell", "criteria": ">", "value": 1, "maximum": 5, "style": {"bold": True}}]}]}, 3,
     r"/sheets/0/conditional_formats/0/maximum", None),
    ("cf-between-without-maximum", {"sheets": [{"rows": [[1]], "conditional_formats": [
        {"range": "A1:A2", "type": "cell", "criteria": "between", "value": 1, "style": {"bold": True}}]}]}, 3,
     r"/sheets/0/conditional_formats/0", None),
    ("cf-style-font", {"sheets": [{"rows": [[1]], "conditional_formats": [
        {"range": "A1:A2", "type": "cell", "criteria": ">", "value": 1, "style": {"font": "Arial"}}]}]}, 3,
     r"/sheets/0/conditional_formats/0/style/font", None),
    ("url-over-2079", {"sheets": [{"rows": [[{"url": "https://example.com/" + "a" * 2070}]]}]}, 3,
     r"/sheets/0/rows/0/0/url", None),
    ("url-scheme-only", {"sheets": [{"rows": [[{"url": "https://"}]]}]}, 3, r"/sheets/0/rows/0/0/url", None),
    ("text-without-url", {"sheets": [{"rows": [[{"value": "x", "text": "label"}]]}]}, 3,
     r"/sheets/0/rows/0/0/text", None),
    ("formula-empty", {"sheets": [{"rows": [[{"formula": "="}]]}]}, 3, r"/sheets/0/rows/0/0/formula", None),
    ("number-format-empty", {"sheets": [{"rows": [[{"value": 1, "number_format": ""}]]}]}, 3,
     r"/sheets/0/rows/0/0/number_format", None),
    ("column-key-empty", {"sheets": [{"columns": [{"key": ""}], "rows": [[1]]}]}, 3, r"/sheets/0/columns/0/key", None),
    ("range-two-dimensional", {"sheets": [{"rows": [[1, 2], [3, 4]], "charts": [
        {"kind": "column", "categories": ["a", "b"], "series": [{"values": "A1:B2"}]}]}]}, 3,
     r"/sheets/0/charts/0/series/0/values", None),
    ("range-count-mismatch", {"sheets": [{"rows": [[1], [2], [3]], "charts": [
        {"kind": "column", "categories": ["a", "b"], "series": [{"values": "A1:A3"}]}]}]}, 3,
     r"/sheets/0/charts/0/series/0/values", None),
    ("range-missing-sheet", {"sheets": [{"rows": [[1], [2]], "charts": [
        {"kind": "column", "categories": ["a", "b"], "series": [{"values": "'Nope'!A1:A2"}]}]}]}, 3,
     r"/sheets/0/charts/0/series/0/values", None),
    ("series-name-starting-with-eq-bad-ref", {"sheets": [{"rows": [[1]], "charts": [
        {"kind": "column", "categories": ["a"], "series": [{"name": "=not a ref", "values": [1]}]}]}]}, 3,
     r"/sheets/0/charts/0/series/0/name", None),
    ("chart-width-0", {"sheets": [{"rows": [[1]], "charts": [
        {"kind": "column", "categories": ["a"], "series": [{"values": [1]}], "width": 0}]}]}, 3,
     r"/sheets/0/charts/0/width", None),
    ("image-scale-0", {"sheets": [{"rows": [[1]], "images": [{"image": {"data": PNG_B64}, "anchor": "B2",
                                                               "scale": 0}]}]}, 3, r"/sheets/0/images/0/scale", None),
    ("image-without-anchor", {"sheets": [{"rows": [[1]], "images": [{"image": {"data": PNG_B64}}]}]}, 3,
     r"/sheets/0/images/0(/anchor)?", None),
    ("image-data-url", {"sheets": [{"rows": [[1]], "images": [{"image": {"data": "data:image/png;base64," + PNG_B64},
                                                                "anchor": "B2"}]}]}, 3,
     r"/sheets/0/images/0/image(/data)?", None),
    ("image-path-and-data", {"sheets": [{"rows": [[1]], "images": [{"image": {"data": PNG_B64, "path": "x.png"},
                                                                     "anchor": "B2"}]}]}, 3,
     r"/sheets/0/images/0/image(/(data|path))?", None),
    ("paragraph-text-and-runs", {"blocks": [{"type": "paragraph", "text": "x", "runs": [{"text": "y"}]}]}, 3,
     r"/blocks/0(/text|/runs)?", None),
    ("runs-empty", {"blocks": [{"type": "paragraph", "runs": []}]}, 3, r"/blocks/0/runs", None),
    ("block-chart-with-anchor", {"blocks": [{"type": "chart", "kind": "line", "categories": ["a"],
                                             "series": [{"values": [1]}], "anchor": "B2"}]}, 3,
     r"/blocks/0/anchor", None),
    ("slide-subtitle-on-chart", {"slides": [{"layout": "chart", "title": "t", "subtitle": "s", "chart": {
        "kind": "bar", "categories": ["a"], "series": [{"values": [1]}]}}]}, 3, r"/slides/0/subtitle", None),
    ("table-slide-without-table", {"slides": [{"layout": "table", "title": "t"}]}, 3, r"/slides/0(/table)?", None),
    ("control-char-member-name", '{"sheets":[{"rows":[[1]]}],"a\u0001":1}', 3, r".*", None),
    # limits
    ("cell-32768-chars", {"sheets": [{"rows": [["x" * 32768]]}]}, 3, r"/sheets/0/rows/0/0", r"32,?767"),
    ("cell-32768-codepoints", {"sheets": [{"rows": [["\u00e9" * 32768]]}]}, 3, r"/sheets/0/rows/0/0", r"32,?767"),
    ("formula-32768-chars", {"sheets": [{"rows": [[{"formula": "=" + "1+" * 16384 + "1"}]]}]}, 3,
     r"/sheets/0/rows/0/0(/formula)?", None),
    ("columns-16385", {"sheets": [{"columns": [{}] * 16385, "rows": [[1]]}]}, 3, r"/sheets/0/columns(/16384)?",
     r"16,?384"),
    ("row-16385-cells", {"sheets": [{"rows": [[1] * 16385]}]}, 3, r"/sheets/0/rows/0(/16384)?", r"16,?384"),
    ("sheets-257", {"sheets": [{"rows": [[1]]} for _ in range(257)]}, 3, r"/sheets(/256)?", r"256"),
    ("json-depth-65", deep(65), 3, None, r"depth|nest|64"),
    ("json-depth-1000", deep(1000), 3, None, r"depth|nest|64"),
]


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_spec(tmp_path, kiln_bin, case):
    _id, spec, code, pointer, message = case
    expect_failure(tmp_path, spec, code, pointer, message)


def test_limits_at_the_boundary_are_accepted(tmp_path, kiln_bin):
    """Exactly at each limit renders: 32,767 characters (as code points, not bytes), 16,384 columns,
    31-character names, 256 sheets, nesting 64 levels deep is not refused for depth."""
    spec = {"sheets": [{"name": "x" * 31, "rows": [["\u00e9" * 32767, "y" * 32767]]},
                       {"name": "wide", "rows": [[1] * 16384]}]
            + [{"rows": [[i]]} for i in range(254)]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "edge.xlsx")
    wb = openpyxl.load_workbook(out, read_only=True)
    assert len(wb.sheetnames) == 256 and wb.sheetnames[0] == "x" * 31
    ws = wb.worksheets[0]
    row = next(ws.iter_rows(values_only=True))
    assert len(row[0]) == 32767 and len(row[1]) == 32767
    wide = next(wb["wide"].iter_rows(values_only=True))
    assert len(wide) == 16384 and wide[-1] == 1
    wb.close()
    p = run_kiln("validate", write_spec(tmp_path, deep(64), "deep64.json"))
    assert not re.search(r"depth|nest", err_text(p), re.I), "depth 64 refused: " + describe(p)


def test_rows_over_limit_inline(tmp_path, kiln_bin):
    rows = "[" + ",".join(["[1]"] * 1048577) + "]"
    spec = '{"sheets":[{"rows":' + rows + '}]}'
    expect_failure(tmp_path, spec, 3, r"/sheets/0/rows(/1048576)?", r"1,?048,?576", also_validate=True)


def test_rows_over_limit_with_header_inline(tmp_path, kiln_bin):
    """1,048,576 data rows plus the header row is one too many."""
    rows = "[" + ",".join(["[1]"] * 1048576) + "]"
    spec = '{"sheets":[{"columns":[{"header":"h"}],"rows":' + rows + '}]}'
    expect_failure(tmp_path, spec, 3, r"/sheets/0/rows(/\d+)?", r"1,?048,?576", also_json=False)


def test_rows_over_limit_via_csv(tmp_path, kiln_bin):
    sd = tmp_path / "specdir"
    sd.mkdir()
    with open(sd / "big.csv", "w") as fh:
        fh.write("n\n")
        fh.write("1\n" * 1048576)
    spec = {"sheets": [{"name": "Big", "data": {"path": "big.csv", "format": "csv", "header": True}}]}
    expect_failure(tmp_path, spec, 3, r"/sheets/0/data.*", r"1,?048,?576", also_json=False, timeout=600)


def test_whole_document_errors_name_their_pointer(tmp_path, kiln_bin):
    """An error of the whole spec shows "(whole spec)" where --json gives "", and an
    error a writer meets at one block names that block, on stderr as in --json."""
    # the spec's size and its syntax: the whole spec
    big = tmp_path / "big.json"
    big.write_bytes(b'{"sheets": [{"rows": [[1]]}]}' + b" " * (64 << 20))
    for spec in (big, write_spec(tmp_path, '{"sheets": [', "broken.json")):
        p = run_kiln("validate", spec)
        assert p.returncode == 3, describe(p)
        assert error_lines(p)[0].startswith("kiln: error: (whole spec): "), describe(p)
        pj = run_kiln("validate", spec, "--json")
        obj = parse_json_stdout(pj)
        assert obj["errors"][0]["pointer"] == "", obj
        assert_lines_match_json(p, obj)
    big.unlink()
    # the PDF's page limit, met at the block that passes it (at once: 20,001 page breaks
    # need at least as many pages, whatever else the blocks hold)
    spec = {"blocks": [{"type": "paragraph", "text": "start"}] +
                      [{"type": "page_break"}] * 20001}
    p = expect_failure(tmp_path, spec, 3, r"/blocks/\d+", r"20000 pages",
                       extra=("--format", "pdf"), also_validate=False)
    blocks = [int(x.split("/")[2]) for x in pointers(p) if x.startswith("/blocks/")]
    assert blocks and 19990 <= blocks[0] <= 20001, describe(p)


@pytest.mark.skipif(SANITIZED, reason="memory under AddressSanitizer is the sanitizer's")
def test_memory_follows_the_spec_not_a_tree_of_it(tmp_path, kiln_bin):
    """A spec of many small values costs memory in proportion to its own size. jansson's
    tree of 200,000 short paragraphs alone was 20 times the text (an object with its own
    hash table per block), and a million-row inline sheet kept its tree for the whole
    render; the parser now builds one block, one row at a time, and the model is about
    130 bytes a block plus its text (docs/spec.md, "What a spec costs"). The bound is
    generous (the process's own libraries are about 20 MB) and fails the tree at once."""
    blocks = {"blocks": [{"type": "paragraph", "text": "Paragraph %d." % i} for i in range(200000)]}
    rows = {"sheets": [{"name": "Data", "columns": [{"header": h} for h in "ABCDE"],
                        "rows": [[i, i * 0.25, "Region %d" % (i % 7), i % 42, i % 2 == 0]
                                 for i in range(200000)]}]}
    for name, spec, formats in (("blocks", blocks, ("docx", "pdf", "pptx", "xlsx")),
                                ("rows", rows, ("xlsx", "docx"))):
        path = write_spec(tmp_path, spec, name + ".json")
        size = path.stat().st_size
        bound = 6 * size + (40 << 20)
        proc, peak = run_kiln_peak("validate", path)
        assert proc.returncode == 0, describe(proc)
        assert peak < bound, "validate %s (%d bytes): peak %d MB" % (name, size, peak >> 20)
        for fmt in formats:
            out = tmp_path / ("%s.%s" % (name, fmt))
            proc, peak = run_kiln_peak("render", path, "-o", out, timeout=600)
            # flat text past a deck's 5,000 slides is refused, at once (test_render_pptx.py)
            assert proc.returncode in (0, 3), describe(proc)
            # libharu holds the whole PDF until it is saved: about 10 KB a page of text
            # besides the model (docs/spec.md)
            pages = int(pdf_info(out)["Pages"]) if fmt == "pdf" else 0
            assert peak < bound + pages * (16 << 10), (
                "%s to %s (%d bytes, %d pages): peak %d MB" % (name, fmt, size, pages, peak >> 20))
            if out.exists():
                out.unlink()


def test_spec_over_64_mib(tmp_path, kiln_bin):
    sd = tmp_path / "specdir"
    sd.mkdir()
    big = sd / "big.json"
    body = b'{"sheets":[{"rows":[[1]]}]}'
    with open(big, "wb") as fh:
        fh.write(body)
        fh.write(b" " * ((64 << 20) + 1 - len(body)))
    assert big.stat().st_size == (64 << 20) + 1
    p = expect_failure(tmp_path, big, 3, None, r"67,?108,?864|64 ?MiB")
    pj = run_kiln("render", big, "-o", tmp_path / "outdir" / "x.xlsx", "--json")
    err = assert_json_failure(parse_json_stdout(pj), 3)
    assert err["code"] == "limit_exceeded" and err.get("limit") == 64 << 20, err
    # the same through standard input
    with open(big, "rb") as fh:
        ps = subprocess.run([str(KILN_BIN), "render", "-", "-o", str(tmp_path / "outdir" / "y.xlsx")],
                            stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert ps.returncode == 3, describe(ps)
    assert not (tmp_path / "outdir" / "y.xlsx").exists()
    # exactly at the limit is not refused for size
    with open(big, "r+b") as fh:
        fh.truncate(64 << 20)
    pv = run_kiln("validate", big)
    big.unlink()   # keep pytest's retained temp dirs small
    assert pv.returncode == 0, "a spec of exactly 64 MiB was refused: " + describe(pv)
    assert p.returncode == 3


def test_images_over_1000(tmp_path, kiln_bin):
    imgs = [{"image": {"data": PNG_B64}, "anchor": "B%d" % (i + 2)} for i in range(1001)]
    spec = {"sheets": [{"rows": [[1]], "images": imgs}]}
    p = expect_failure(tmp_path, spec, 3, r"/sheets/0/images(/1000)?(/image)?", r"1,?000")
    pj = run_kiln("validate", write_spec(tmp_path, spec, "v.json"), "--json")
    obj = parse_json_stdout(pj)
    assert any(e.get("code") == "limit_exceeded" and e.get("limit") == 1000 for e in obj["errors"]), obj
    assert p.returncode == 3


def test_images_1000_accepted(tmp_path, kiln_bin):
    imgs = [{"image": {"data": PNG_B64}, "anchor": "B%d" % (i + 2)} for i in range(1000)]
    out = render_ok(write_spec(tmp_path, {"sheets": [{"rows": [[1]], "images": imgs}]}), tmp_path / "i.xlsx")
    with zipfile.ZipFile(out) as z:
        assert len([n for n in z.namelist() if n.startswith("xl/media/")]) >= 1


def test_image_over_20_mib(tmp_path, kiln_bin):
    sd = tmp_path / "specdir"
    sd.mkdir()
    with open(sd / "huge.png", "wb") as fh:
        fh.write(png_bytes()[:33])  # signature + IHDR
        fh.write(os.urandom(1 << 20) * 21)
    spec = {"sheets": [{"rows": [[1]], "images": [{"image": {"path": "huge.png"}, "anchor": "B2"}]}]}
    try:
        expect_failure(tmp_path, spec, 3, r"/sheets/0/images/0(/image(/path)?)?")
    finally:
        (sd / "huge.png").unlink()


def test_image_inline_over_20_mib(tmp_path, kiln_bin):
    data = base64.b64encode(png_bytes()[:33] + b"\0" * ((20 << 20) + 1)).decode()
    spec = {"sheets": [{"rows": [[1]], "images": [{"image": {"data": data}, "anchor": "B2"}]}]}
    try:
        expect_failure(tmp_path, spec, 3, r"/sheets/0/images/0(/image(/data)?)?", also_validate=False)
    finally:
        (tmp_path / "specdir" / "spec.json").unlink()


@pytest.mark.parametrize("case", ["junk-with-png-signature", "not-an-image", "bad-base64", "format-mismatch",
                                  "gif"])
def test_bad_images(tmp_path, kiln_bin, case):
    if case == "junk-with-png-signature":
        img = {"data": base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"junk" * 50).decode()}
    elif case == "not-an-image":
        img = {"data": base64.b64encode(b"hello world, not an image").decode()}
    elif case == "bad-base64":
        img = {"data": "!!!not base64!!!"}
    elif case == "format-mismatch":
        img = {"data": PNG_B64, "format": "jpeg"}
    else:
        img = {"data": base64.b64encode(b"GIF89a" + b"\0" * 40).decode()}
    spec = {"sheets": [{"rows": [[1]], "images": [{"image": img, "anchor": "B2"}]}]}
    expect_failure(tmp_path, spec, 3, r"/sheets/0/images/0/image(/(data|format))?")


# =========================================================================== paths

def _path_case(tmp_path, kind):
    """Lay out files for a path case; returns the image path to put in the spec."""
    sd = tmp_path / "specdir"
    sd.mkdir(exist_ok=True)
    (tmp_path / "outside.png").write_bytes(png_bytes())
    (sd / "real.png").write_bytes(png_bytes())
    if kind == "dotdot":
        return "../outside.png"
    if kind == "dotdot-inside":
        (sd / "sub").mkdir()
        return "sub/../real.png"
    if kind == "absolute":
        return str(tmp_path / "outside.png")
    if kind == "symlink-file":
        os.symlink(sd / "real.png", sd / "link.png")
        return "link.png"
    if kind == "symlink-relative":
        os.symlink("real.png", sd / "link2.png")
        return "link2.png"
    if kind == "symlink-dir":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "pic.png").write_bytes(png_bytes())
        os.symlink(tmp_path / "elsewhere", sd / "linkdir")
        return "linkdir/pic.png"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["dotdot", "dotdot-inside", "absolute", "symlink-file", "symlink-relative",
                                  "symlink-dir"])
def test_image_path_escapes_refused(tmp_path, kiln_bin, kind):
    path = _path_case(tmp_path, kind)
    spec = {"sheets": [{"rows": [[1]], "images": [{"image": {"path": path}, "anchor": "B2"}]}]}
    expect_failure(tmp_path, spec, 3, r"/sheets/0/images/0/image(/path)?")


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink-file", "symlink-dir"])
def test_data_path_escapes_refused(tmp_path, kiln_bin, kind):
    sd = tmp_path / "specdir"
    sd.mkdir()
    (tmp_path / "outside.csv").write_text("a\n1\n")
    (sd / "real.csv").write_text("a\n1\n")
    if kind == "dotdot":
        path = "../outside.csv"
    elif kind == "absolute":
        path = str(tmp_path / "outside.csv")
    elif kind == "symlink-file":
        os.symlink(sd / "real.csv", sd / "link.csv")
        path = "link.csv"
    else:
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "x.csv").write_text("a\n1\n")
        os.symlink(tmp_path / "d", sd / "ld")
        path = "ld/x.csv"
    spec = {"sheets": [{"data": {"path": path, "format": "csv"}}]}
    expect_failure(tmp_path, spec, 3, r"/sheets/0/data(/path)?")


def test_missing_image_file_is_5(tmp_path, kiln_bin):
    spec = {"sheets": [{"rows": [[1]], "images": [{"image": {"path": "nope.png"}, "anchor": "B2"}]}]}
    expect_failure(tmp_path, spec, 5, r"/sheets/0/images/0/image(/path)?")


def test_missing_data_file_is_5(tmp_path, kiln_bin):
    spec = {"sheets": [{"data": {"path": "nope.csv", "format": "csv"}}]}
    expect_failure(tmp_path, spec, 5, r"/sheets/0/data(/path)?")


def test_missing_spec_file_is_5(tmp_path, kiln_bin):
    expect_failure(tmp_path, tmp_path / "does-not-exist.json", 5, None, also_validate=True)


def test_spec_is_a_directory_is_5(tmp_path, kiln_bin):
    d = tmp_path / "adir.json"
    d.mkdir()
    expect_failure(tmp_path, d, 5, None)


def test_base_dir_option(tmp_path, kiln_bin):
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "logo.png").write_bytes(png_bytes())
    (assets / "d.csv").write_text("k,v\na,1\n")
    spec = {"sheets": [{"name": "D", "data": {"path": "d.csv", "format": "csv"},
                        "images": [{"image": {"path": "logo.png"}, "anchor": "D2"}]}]}
    sp = write_spec(tmp_path, spec)
    p = run_kiln("render", sp, "-o", tmp_path / "x.xlsx")
    assert p.returncode == 5, "without --base-dir the files are not beside the spec: " + describe(p)
    out = render_ok(sp, tmp_path / "y.xlsx", "--base-dir", assets)
    assert [[c.value for c in r] for r in openpyxl.load_workbook(out)["D"].iter_rows(max_col=2)] == [
        ["k", "v"], ["a", 1]]
    p = run_kiln("validate", sp, "--base-dir", assets, "--scan-data")
    assert p.returncode == 0, describe(p)


def test_stdin_spec_resolves_paths_from_cwd(tmp_path, kiln_bin):
    (tmp_path / "d.csv").write_text("k\nz\n")
    spec = json.dumps({"sheets": [{"name": "D", "data": {"path": "d.csv", "format": "csv"}}]})
    p = run_kiln("render", "-", "-o", tmp_path / "o.xlsx", input=spec, cwd=tmp_path)
    assert p.returncode == 0, describe(p)
    assert openpyxl.load_workbook(tmp_path / "o.xlsx")["D"]["A2"].value == "z"


# =========================================================================== output guarantees

def sales_spec():
    p = SAMPLES / "sales_workbook.json"
    if not p.is_file():
        pytest.fail("samples/sales_workbook.json is missing")
    return p


def test_size_ceiling(tmp_path, kiln_bin):
    od = tmp_path / "o"
    od.mkdir()
    out = od / "sales.xlsx"
    p = run_kiln("render", sales_spec(), "-o", out, "--max-bytes", "2K")
    assert p.returncode == 4, describe(p)
    lines = assert_error_lines(p)
    m = re.search(r"size ceiling of 2048 bytes \(reached (\d+) bytes\)", "\n".join(lines))
    assert m, "ceiling message not as documented: " + err_text(p)
    assert int(m.group(1)) > 2048
    assert listing(od) == {}, listing(od)
    pj = run_kiln("render", sales_spec(), "-o", out, "--max-bytes", "2K", "--json")
    assert pj.returncode == 4
    e = assert_json_failure(parse_json_stdout(pj), 4)
    assert e["code"] == "too_large" and e.get("limit") == 2048 and e.get("actual", 0) > 2048, e
    assert listing(od) == {}


def test_size_ceiling_exact_boundary(tmp_path, kiln_bin):
    """A file of exactly N bytes passes --max-bytes N and fails N-1."""
    spec = {"metadata": {"created": "2026-01-01T00:00:00Z", "title": "fixed"},
            "sheets": [{"name": "S", "rows": [[i, "row %d" % i] for i in range(200)]}]}
    sp = write_spec(tmp_path, spec)
    first = render_ok(sp, tmp_path / "a.xlsx")
    size = first.stat().st_size
    render_ok(sp, tmp_path / "b.xlsx", "--max-bytes", str(size))
    assert (tmp_path / "b.xlsx").stat().st_size == size
    p = run_kiln("render", sp, "-o", tmp_path / "c.xlsx", "--max-bytes", str(size - 1))
    assert p.returncode == 4, describe(p)
    assert not (tmp_path / "c.xlsx").exists()
    assert "ceiling of %d bytes" % (size - 1) in err_text(p)


@pytest.mark.parametrize("arg,ok", [("1M", True), ("30M", True), ("1G", True), ("100000", True),
                                    ("1k", None), ("2K", False)])
def test_max_bytes_suffixes(tmp_path, kiln_bin, arg, ok):
    sp = write_spec(tmp_path, MINIMAL)
    p = run_kiln("render", sp, "-o", tmp_path / "o.xlsx", "--max-bytes", arg)
    if ok is None:      # lower-case suffix: either accepted as K or a usage error, never anything else
        assert p.returncode in (0, 2, 4), describe(p)
    elif ok:
        assert p.returncode == 0, describe(p)
    else:
        assert p.returncode == 4, describe(p)


def test_existing_target_survives_failures(tmp_path, kiln_bin):
    od = tmp_path / "o"
    od.mkdir()
    out = od / "precious.xlsx"
    content = os.urandom(5000)
    out.write_bytes(content)
    st = out.stat()
    bad = write_spec(tmp_path, {"sheets": [{"name": "a/b", "rows": [[1]]}]})
    p = run_kiln("render", bad, "-o", out)
    assert p.returncode == 3, describe(p)
    p = run_kiln("render", sales_spec(), "-o", out, "--max-bytes", "2K")
    assert p.returncode == 4, describe(p)
    missing_img = write_spec(tmp_path, {"sheets": [{"rows": [[1]], "images": [
        {"image": {"path": "nope.png"}, "anchor": "A2"}]}]}, "m.json")
    p = run_kiln("render", missing_img, "-o", out)
    assert p.returncode == 5, describe(p)
    assert out.read_bytes() == content
    assert out.stat().st_ino == st.st_ino and out.stat().st_mtime_ns == st.st_mtime_ns
    assert sorted(os.listdir(od)) == ["precious.xlsx"]
    # a successful render replaces it
    render_ok(write_spec(tmp_path, MINIMAL, "ok.json"), out)
    assert zipfile.is_zipfile(out) and sorted(os.listdir(od)) == ["precious.xlsx"]


def test_render_to_missing_directory_is_6(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    before = listing(tmp_path)
    p = run_kiln("render", sp, "-o", tmp_path / "no" / "such" / "dir" / "x.xlsx")
    assert p.returncode == 6, describe(p)
    assert_error_lines(p)
    assert listing(tmp_path) == before
    pj = run_kiln("render", sp, "-o", tmp_path / "no" / "x.xlsx", "--json")
    assert pj.returncode == 6
    e = assert_json_failure(parse_json_stdout(pj), 6)
    assert e["code"] == "write_failed"


def test_render_below_a_file_is_6(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    (tmp_path / "afile").write_text("x")
    p = run_kiln("render", sp, "-o", tmp_path / "afile" / "x.xlsx")
    assert p.returncode == 6, describe(p)
    assert (tmp_path / "afile").read_text() == "x"


def test_render_onto_a_directory_fails_cleanly(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    target = tmp_path / "target.xlsx"
    target.mkdir()
    (target / "inside").write_text("keep")
    p = run_kiln("render", sp, "-o", target)
    assert p.returncode == 6, describe(p)
    assert (target / "inside").read_text() == "keep"


def test_stdin_to_stdout(tmp_path, kiln_bin):
    spec = json.dumps({"sheets": [{"name": "Piped", "rows": [["a", 1], ["b", {"date": "2026-03-31"}]]}]})
    p = run_kiln("render", "-", "-o", "-", "--format", "xlsx", input=spec, cwd=tmp_path)
    assert p.returncode == 0, describe(p)
    assert p.stdout[:4] == b"PK\x03\x04", p.stdout[:40]
    f = tmp_path / "piped.xlsx"
    f.write_bytes(p.stdout)
    assert_ooxml_ok(f)
    ws = openpyxl.load_workbook(f)["Piped"]
    assert ws["A1"].value == "a" and ws["B1"].value == 1 and ws["B2"].value.year == 2026
    assert sorted(os.listdir(tmp_path)) == ["piped.xlsx"], "stdout render left files in the cwd"


def test_stdout_json_goes_to_stderr(tmp_path, kiln_bin):
    p = run_kiln("render", "-", "-o", "-", "--format", "xlsx", "--json", input=json.dumps(MINIMAL))
    assert p.returncode == 0, describe(p)
    assert p.stdout[:4] == b"PK\x03\x04"
    obj = json.loads(err_text(p).strip().splitlines()[-1])
    assert obj["ok"] is True and obj["format"] == "xlsx" and obj["bytes"] == len(p.stdout), obj


def test_stdout_ceiling_writes_nothing(tmp_path, kiln_bin):
    with open(sales_spec(), "rb") as fh:
        spec = fh.read()
    p = run_kiln("render", "-", "-o", "-", "--format", "xlsx", "--max-bytes", "2K", input=spec,
                 cwd=sales_spec().parent)
    assert p.returncode == 4, describe(p)
    assert p.stdout == b"", "bytes reached stdout although the render failed"


def test_stdin_invalid_spec(tmp_path, kiln_bin):
    p = run_kiln("render", "-", "-o", tmp_path / "x.xlsx", input='{"sheets": [{"name": "a?"}]}')
    assert p.returncode == 3, describe(p)
    assert_pointer(p, r"/sheets/0/name")
    assert not (tmp_path / "x.xlsx").exists()


def test_json_success_shape(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    out = tmp_path / "ok.xlsx"
    p = run_kiln("render", sp, "-o", out, "--json")
    assert p.returncode == 0, describe(p)
    obj = parse_json_stdout(p)
    assert obj == {"ok": True, "path": str(out), "format": "xlsx", "bytes": out.stat().st_size,
                   "warnings": [], "errors": [], "more_errors": 0}, obj
    assert err_text(p).strip() == "", "stderr on success: " + err_text(p)


def test_success_is_silent(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, MINIMAL)
    p = run_kiln("render", sp, "-o", tmp_path / "ok.xlsx")
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", describe(p)


def test_json_failure_shape_and_limit_fields(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, {"sheets": [{"name": "ok", "rows": [["x" * 32768]]}, {"name": "a:b"}]})
    p = run_kiln("render", sp, "-o", tmp_path / "x.xlsx", "--json")
    assert p.returncode == 3, describe(p)
    obj = parse_json_stdout(p)
    assert obj["ok"] is False
    by_ptr = {e.get("pointer"): e for e in obj["errors"]}
    e = by_ptr.get("/sheets/0/rows/0/0")
    assert e is not None, obj
    assert e["code"] == "limit_exceeded" and e["limit"] == 32767 and e["actual"] == 32768, e
    n = by_ptr.get("/sheets/1/name")
    assert n is not None and n["code"] == "invalid_spec", obj
    assert set(n) <= {"code", "pointer", "message", "limit", "actual"}, n
    # stderr carries the same errors, one per line
    assert_pointer(p, r"/sheets/0/rows/0/0")
    assert_pointer(p, r"/sheets/1/name")


def test_many_errors_are_capped(tmp_path, kiln_bin):
    spec = {"sheets": [{"name": "s%d?" % i, "rows": [[1]]} for i in range(120)]}
    p = run_kiln("validate", write_spec(tmp_path, spec))
    assert p.returncode == 3, describe(p)
    lines = assert_error_lines(p)
    assert 50 <= len(lines) <= 52, "expected 50 errors and a count of the rest, got %d lines" % len(lines)
    assert re.search(r"\b70\b", lines[-1]), "the last line should count the 70 errors not shown: " + lines[-1]


def test_sigkill_during_render_leaves_nothing(tmp_path, kiln_bin, sample_data_ready):
    spec = SAMPLES / "export_200k.json"
    if not spec.is_file():
        pytest.fail("samples/export_200k.json is missing")
    od = tmp_path / "o"
    od.mkdir()
    killed_mid_render = False
    for delay in (0.3, 0.15, 0.05):
        proc = subprocess.Popen([str(KILN_BIN), "render", str(spec), "-o", str(od / "export.xlsx")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        during = os.listdir(od)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            killed_mid_render = True
            assert during == [], "named files visible in the output dir during the render: %s" % during
            assert os.listdir(od) == [], "SIGKILL left %s" % os.listdir(od)
            break
        proc.wait()
        for name in os.listdir(od):
            os.unlink(od / name)
    assert killed_mid_render, "the 200k-row render finished in under 0.05 s: cannot test a kill mid-render"


def test_repeated_render_is_deterministic_in_content(tmp_path, kiln_bin):
    spec = {"metadata": {"created": "2026-01-01T00:00:00Z"}, "sheets": [{"name": "S", "rows": [[1, "a"]]}]}
    sp = write_spec(tmp_path, spec)
    a = render_ok(sp, tmp_path / "a.xlsx")
    b = render_ok(sp, tmp_path / "b.xlsx")
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        assert za.namelist() == zb.namelist()
        for n in za.namelist():
            assert za.read(n) == zb.read(n), "part %s differs between two renders of the same spec" % n


DATA_CASES = [
    # id, file name, bytes, data source extras, columns, pointer
    ("csv-control-char", "d.csv", b"a\nx\x01y\n", {"format": "csv"}, None, r"/sheets/0/data.*"),
    ("csv-invalid-utf8", "d.csv", b"a\n\xff\xfe\n", {"format": "csv"}, None, r"/sheets/0/data.*"),
    ("csv-bad-number", "d.csv", b"n\n1\nabc\n", {"format": "csv"}, [{"type": "number"}], r"/sheets/0/data.*"),
    ("csv-bad-date", "d.csv", b"d\n2026-02-30\n", {"format": "csv"}, [{"type": "date"}], r"/sheets/0/data.*"),
    ("csv-bad-boolean", "d.csv", b"b\nyes\n", {"format": "csv"}, [{"type": "boolean"}], r"/sheets/0/data.*"),
    ("csv-too-many-fields", "d.csv", b"a\n1,2\n", {"format": "csv"}, [{"header": "a"}], r"/sheets/0/data.*"),
    ("csv-unterminated-quote", "d.csv", b'a\n"open\n', {"format": "csv"}, None, r"/sheets/0/data.*"),
    ("csv-cell-32768", "d.csv", b"a\n" + b"x" * 32768 + b"\n", {"format": "csv"}, None, r"/sheets/0/data.*"),
    ("csv-columns-16385", "d.csv", b",".join([b"1"] * 16385) + b"\n", {"format": "csv", "header": False}, None,
     r"/sheets/0/data.*"),
    ("jsonl-not-json", "d.jsonl", b'["a"]\n{not json\n', {"format": "jsonl"}, None, r"/sheets/0/data.*"),
    ("jsonl-bad-cell", "d.jsonl", b'[{"bogus": 1}]\n', {"format": "jsonl"}, None, r"/sheets/0/data.*"),
    ("jsonl-nul", "d.jsonl", b'["a\\u0000b"]\n', {"format": "jsonl"}, None, r"/sheets/0/data.*"),
    ("jsonl-with-header", "d.jsonl", b'["a"]\n', {"format": "jsonl", "header": True}, None, r"/sheets/0/data/header"),
    ("csv-delimiter-quote", "d.csv", b"a\n1\n", {"format": "csv", "delimiter": '"'}, None,
     r"/sheets/0/data/delimiter"),
    ("csv-delimiter-two-chars", "d.csv", b"a\n1\n", {"format": "csv", "delimiter": ";;"}, None,
     r"/sheets/0/data/delimiter"),
    ("rows-and-data", "d.csv", b"a\n1\n", {"format": "csv", "_rows": True}, None, r"/sheets/0(/rows|/data)?"),
]


@pytest.mark.parametrize("case", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_malformed_data_file(tmp_path, kiln_bin, case):
    _id, name, data, extra, columns, pointer = case
    sd = tmp_path / "specdir"
    sd.mkdir()
    (sd / name).write_bytes(data)
    src = {"path": name}
    src.update({k: v for k, v in extra.items() if not k.startswith("_")})
    sheet = {"name": "D", "data": src}
    if columns:
        sheet["columns"] = columns
    if extra.get("_rows"):
        sheet["rows"] = [[1]]
    expect_failure(tmp_path, {"sheets": [sheet]}, 3, pointer)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs: a disk that fills up part-way through a render."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test mounts a tmpfs and needs root (CI runs as root)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("memory_mode", [False, True], ids=["constant-memory", "in-memory"])
def test_full_disk_leaves_nothing_and_fails(tmp_path, small_disk, memory_mode):
    """docs/cli.md: on a full disk nothing appears at OUT and the exit status is 6.
    libxlsxwriter does not check writes to its scratch files, so they must share the
    output's filesystem for the failure to be seen (a corrupt file reported as a
    success was the bug this guards against)."""
    spec = json.loads((SAMPLES / "export_200k.json").read_text(encoding="utf-8"))
    # the spec lives in tmp_path; its CSV is read from samples/ through --base-dir
    if memory_mode:
        spec["sheets"][0]["merges"] = [{"range": "L1:M1", "value": "merged"}]
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    target = small_disk / "big.xlsx"
    proc = subprocess.run([str(KILN_BIN), "render", str(spec_path), "--base-dir", str(SAMPLES),
                           "-o", str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300)
    assert proc.returncode == 6, describe(proc)
    assert "kiln: error:" in err_text(proc)
    assert listing(small_disk) == {}


def test_cli_edge_cases(tmp_path):
    """Usage errors come as JSON when --json was asked for; an option given twice is a
    usage error; an invalid spec is refused (3) for a deck as for any format, leaving
    no file; output that cannot reach stdout is a write failure."""
    proc = run_kiln("render", "x.json", "-o", str(tmp_path / "a.xlsx"), "-o", str(tmp_path / "b.xlsx"),
                    "--json")
    assert proc.returncode == 2, describe(proc)
    doc = json.loads(out_text(proc))
    assert doc["ok"] is False and doc["errors"][0]["code"] == "usage"
    assert "more than once" in doc["errors"][0]["message"]
    assert listing(tmp_path) == {}

    bad = write_spec(tmp_path, {"sheets": [{"name": "[bad"}]})
    proc = run_kiln("render", bad, "-o", tmp_path / "r.pptx")
    assert proc.returncode == 3, describe(proc)
    assert "/sheets/0/name" in err_text(proc), describe(proc)
    assert not (tmp_path / "r.pptx").exists()

    good = SAMPLES / "sales_workbook.json"
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([str(KILN_BIN), "validate", str(good), "--json"], stdout=full,
                              stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 6, proc.stderr.decode()
    assert b"standard output" in proc.stderr
