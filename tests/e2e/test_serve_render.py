"""`kiln serve`: POST /v1/render (issue 7) - each format rendered through the API, downloaded,
byte-identical to `kiln render` of the same spec, opened with the readers the writer tests
use (openpyxl, python-docx, pypdf, the pptx XML) and checked by ooxml-check; specs with
errors (422 with every pointer, as `kiln validate --json` reports them); CSV inputs by id.
"""
import csv
import hashlib
import io
import json
import re
import zipfile

import pytest

from conftest import SAMPLES, assert_ooxml_ok, describe, load_json, out_text, run_kiln, soffice_convert
from serve_helpers import MEDIA_TYPES, serve_factory, server, validate_component  # noqa: F401 (fixtures)

try:
    import openpyxl
    import docx
    import pypdf
except ImportError as e:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("openpyxl, python-docx and pypdf are required (python3-openpyxl, "
                       "python3-docx, python3-pypdf): %s" % e)
from lxml import etree

CASES = [("sales_workbook", "xlsx"), ("business_report", "docx"), ("business_report", "pdf"),
         ("quarterly_review", "pptx")]


def with_inputs(server, node, ids, base=SAMPLES):
    """The spec with every file it names ({"path": "images/x.png"}) uploaded and named by its
    id instead, as the API wants; ids collects {id: local path}."""
    if isinstance(node, list):
        return [with_inputs(server, v, ids, base) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_inputs(server, v, ids, base) for k, v in node.items()}
    path = node.get("path")
    if isinstance(path, str) and (base / path).is_file():
        local = base / path
        known = [i for i, p in ids.items() if p == local]
        fid = known[0] if known else server.upload(local.name, local.read_bytes())["id"]
        ids[fid] = local
        out["path"] = fid
        low = path.lower()
        if "format" not in node and low.endswith(".csv"):
            out["format"] = "csv"
        elif "format" not in node and (low.endswith(".jsonl") or low.endswith(".ndjson")):
            out["format"] = "jsonl"
    return out


@pytest.fixture(scope="module")
def rendered(server, tmp_path_factory):
    """{(sample, format): (render reply, downloaded bytes, `kiln render` bytes, path)}.
    The files a sample names are uploaded and the spec names them by id; `kiln render`
    renders the same spec from a directory holding them under their ids."""
    d = tmp_path_factory.mktemp("render")
    out = {}
    for stem, fmt in CASES:
        ids = {}
        spec = with_inputs(server, load_json(SAMPLES / (stem + ".json")), ids)
        r = server.request("POST", "/v1/render", body={"format": fmt, "spec": spec, "inputs": sorted(ids),
                                                       "filename": "%s.%s" % (stem, fmt)})
        cli_dir = d / ("cli-%s-%s" % (stem, fmt))
        cli_dir.mkdir()
        for fid, local in ids.items():
            (cli_dir / fid).write_bytes(local.read_bytes())
        (cli_dir / "spec.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
        ref = d / ("%s.%s" % (stem, fmt))
        proc = run_kiln("render", cli_dir / "spec.json", "-o", ref)
        assert proc.returncode == 0, describe(proc)
        body = None
        if r.status == 201:
            body = server.download(r.json["id"])
            got = d / ("served-%s.%s" % (stem, fmt))
            got.write_bytes(body)
        out[(stem, fmt)] = (r, body, ref.read_bytes(), d / ("served-%s.%s" % (stem, fmt)))
    return out


def get(rendered, stem, fmt):
    r, body, ref, path = rendered[(stem, fmt)]
    assert r.status == 201, r
    return r, body, ref, path


@pytest.mark.parametrize("stem,fmt", CASES)
def test_render_reply(server, rendered, stem, fmt):
    r, body, ref, _ = get(rendered, stem, fmt)
    f = r.json
    assert r.getheader("Location") == "/v1/files/" + f["id"]
    assert f["filename"] == "%s.%s" % (stem, fmt)
    assert f["media_type"] == MEDIA_TYPES[fmt]
    assert f["source"] == "document"
    assert f["bytes"] == len(body) and f["sha256"] == hashlib.sha256(body).hexdigest()
    # the file is listed and described like any other
    meta = server.request("GET", "/v1/files/" + f["id"])
    assert meta.status == 200
    assert meta.json == {k: v for k, v in f.items() if k != "warnings"}
    head = server.request("HEAD", "/v1/files/%s/content" % f["id"])
    assert head.getheader("Content-Type") == MEDIA_TYPES[fmt]
    assert head.getheader("Content-Disposition") == 'attachment; filename="%s.%s"' % (stem, fmt)


@pytest.mark.parametrize("stem,fmt", CASES)
def test_render_identical_to_cli(rendered, stem, fmt):
    _, body, ref, _ = get(rendered, stem, fmt)
    assert body == ref, "%s.%s: the served document differs from `kiln render`'s (%d vs %d bytes)" % (
        stem, fmt, len(body), len(ref))


def test_xlsx_opens(rendered):
    _, _, _, path = get(rendered, "sales_workbook", "xlsx")
    spec = load_json(SAMPLES / "sales_workbook.json")
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames[:len(spec["sheets"])] == [s["name"] for s in spec["sheets"]]
    sheet = spec["sheets"][0]
    ws = wb[sheet["name"]]
    headers = [c.get("header") for c in sheet["columns"]]
    assert [ws.cell(1, i + 1).value for i in range(len(headers))] == headers
    first = sheet["rows"][0]
    assert ws.cell(2, 2).value == first[1] and ws.cell(2, 5).value == first[4]
    assert wb.properties.title == spec["metadata"]["title"]


def test_docx_opens(rendered):
    _, _, _, path = get(rendered, "business_report", "docx")
    d = docx.Document(str(path))
    text = "\n".join(p.text for p in d.paragraphs)
    spec = load_json(SAMPLES / "business_report.json")
    headings = [b.get("text") for b in spec["blocks"] if b.get("type") == "heading"]
    assert headings, "test bug: no headings in the sample"
    for h in headings[:5]:
        assert h in text, h
    assert d.core_properties.title == spec["metadata"]["title"]


def test_pdf_opens(rendered):
    _, _, _, path = get(rendered, "business_report", "pdf")
    reader = pypdf.PdfReader(str(path))
    assert len(reader.pages) >= 1
    text = " ".join(reader.pages[i].extract_text() for i in range(min(3, len(reader.pages))))
    spec = load_json(SAMPLES / "business_report.json")
    words = [w for w in re.findall(r"[A-Za-z]{5,}", spec["metadata"]["title"])]
    assert words and all(w in text for w in words), (words, text[:500])
    assert reader.metadata.title == spec["metadata"]["title"]


def test_pptx_opens(rendered):
    _, _, _, path = get(rendered, "quarterly_review", "pptx")
    spec = load_json(SAMPLES / "quarterly_review.json")
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        slides = sorted(n for n in z.namelist() if re.fullmatch(r"ppt/slides/slide\d+\.xml", n))
        assert len(slides) == len(spec["slides"])
        root = etree.fromstring(z.read("ppt/slides/slide1.xml"))
        text = "".join(root.itertext())
        ct = z.read("[Content_Types].xml").decode()
    assert spec["slides"][0]["title"] in text
    assert "presentationml.presentation.main+xml" in ct


def test_ooxml_check(rendered):
    paths = [get(rendered, s, f)[3] for s, f in CASES if f != "pdf"]
    assert_ooxml_ok(*paths)


def test_libreoffice_opens(rendered, tmp_path):
    """LibreOffice converts each served OOXML document (one call for all)."""
    paths = [get(rendered, s, f)[3] for s, f in CASES if f != "pdf"]
    proc, pdfs = soffice_convert(paths, tmp_path / "lo")
    missing = [str(p) for p, pdf in pdfs.items() if pdf is None]
    assert not missing, "LibreOffice did not convert %s:\n%s" % (missing, proc.stdout[-3000:])


def test_format_from_filename(server):
    spec = {"version": 1, "sheets": [{"name": "S", "rows": [["a", 1]]}]}
    r = server.request("POST", "/v1/render", body={"spec": spec, "filename": "from-name.xlsx"})
    assert r.status == 201 and r.json["media_type"] == MEDIA_TYPES["xlsx"], r
    r = server.request("POST", "/v1/render", body={"spec": spec, "format": "xlsx"})
    assert r.status == 201 and r.json["filename"] == "document.xlsx", r


def test_render_null_members_are_left_out(server):
    """format, filename and inputs given as null are as if left out, as docs/openapi.json's
    RenderRequest says (and the requests validate against it): the format from the file
    name, the default name for the format; and neither is still a 400 naming /format."""
    spec = {"version": 1, "sheets": [{"name": "S", "rows": [["a", 1]]}]}
    for body, name in (({"format": None, "filename": "n.docx", "inputs": None}, "n.docx"),
                       ({"format": "pdf", "filename": None, "inputs": None}, "document.pdf")):
        body["spec"] = spec
        validate_component(body, "RenderRequest")
        r = server.request("POST", "/v1/render", body=body)
        assert r.status == 201 and r.json["filename"] == name, r
    r = server.request("POST", "/v1/render", body={"spec": spec, "format": None, "filename": None})
    assert r.status == 400 and r.json["error"]["details"]["pointer"] == "/format", r


def test_render_csv_input(server, tmp_path):
    rows = [["region", "revenue"], ["West", "10.5"], ["East", "20"], ["Nörth", "7"]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    f = server.upload("regions.csv", buf.getvalue().encode("utf-8"), media_type="text/csv")
    spec = {"version": 1, "sheets": [{"name": "Regions", "columns": [{"header": "Region"},
                                                                     {"header": "Revenue", "type": "number"}],
                                      "data": {"path": f["id"], "format": "csv", "header": True}}]}
    r = server.request("POST", "/v1/render", body={"format": "xlsx", "spec": spec, "inputs": [f["id"]],
                                                   "filename": "regions.xlsx"})
    assert r.status == 201, r
    out = tmp_path / "regions.xlsx"
    out.write_bytes(server.download(r.json["id"]))
    ws = openpyxl.load_workbook(out)["Regions"]
    got = [[c.value for c in row] for row in ws.iter_rows(min_row=1, max_row=4, max_col=2)]
    assert got == [["Region", "Revenue"], ["West", 10.5], ["East", 20], ["Nörth", 7]]
    # the input is not listed under its id as a name anywhere on disk: nothing left in work/
    assert server.request("DELETE", "/v1/files/" + f["id"]).status == 204


def test_render_unknown_input(server):
    spec = {"version": 1, "sheets": [{"name": "S", "data": {"path": "f" * 32, "format": "csv"}}]}
    r = server.request("POST", "/v1/render", body={"format": "xlsx", "spec": spec, "inputs": ["f" * 32]})
    assert r.status == 404 and r.error_code == "not_found", r


def test_render_relative_paths_say_what_to_do(server):
    """samples/business_report.json as `kiln render` takes it (its images and table by paths
    beside it): 422, one unreadable_input error at each path, saying what the API wants
    instead (upload the file, list its id in inputs, give the id as the path)."""
    spec = load_json(SAMPLES / "business_report.json")
    r = server.request("POST", "/v1/render", body={"format": "docx", "spec": spec})
    assert r.status == 422 and r.error_code == "invalid_spec", r
    errors = r.json["error"]["details"]["errors"]
    assert [(e["pointer"], e["code"]) for e in errors] == [
        ("/blocks/0/image/path", "unreadable_input"), ("/blocks/31/data/path", "unreadable_input"),
        ("/blocks/32/image/path", "unreadable_input")], errors
    for e, path in zip(errors, ["images/kiln_logo.png", "tables/headcount_2026.csv",
                                "images/regional_trend.jpg"]):
        m = e["message"]
        assert '"%s"' % path in m and "POST /v1/files" in m and '"inputs"' in m and "id" in m, m
    # an uploaded file's id, used as the path but left out of inputs: say so
    f = server.upload("logo.png", (SAMPLES / "images" / "kiln_logo.png").read_bytes())
    spec = {"blocks": [{"type": "image", "image": {"path": f["id"]}}]}
    r = server.request("POST", "/v1/render", body={"format": "docx", "spec": spec})
    assert r.status == 422, r
    [e] = r.json["error"]["details"]["errors"]
    assert e["pointer"] == "/blocks/0/image/path" and e["code"] == "unreadable_input", e
    assert f["id"] in e["message"] and 'not in "inputs"' in e["message"], e
    r = server.request("POST", "/v1/render", body={"format": "docx", "spec": spec, "inputs": [f["id"]]})
    assert r.status == 201, r


def test_render_spec_errors(server, tmp_path):
    spec = {"version": 1, "sheets": [{"name": "A/B", "columns": [{"header": "x", "type": "bogus"}],
                                      "rows": [[1, 2, 3]]}, {"name": "", "rows": "nope"}]}
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(spec))
    proc = run_kiln("validate", "--json", p)
    expected = json.loads(out_text(proc))["errors"]
    assert len(expected) >= 3, "test bug: expected several errors"
    r = server.request("POST", "/v1/render", body={"format": "xlsx", "spec": spec})
    assert r.status == 422 and r.error_code == "invalid_spec", r
    d = r.json["error"]["details"]
    assert sorted(e["pointer"] for e in d["errors"]) == sorted(e["pointer"] for e in expected)
    assert {e["pointer"]: e["message"] for e in d["errors"]} == {e["pointer"]: e["message"] for e in expected}
    assert d["more_errors"] == 0
    assert "/sheets/0/columns/0/type" in [e["pointer"] for e in d["errors"]]


@pytest.mark.parametrize("body,pointer", [
    ({"format": "xls", "spec": {"version": 1, "sheets": []}}, "/format"),
    ({"format": 7, "spec": {"version": 1, "sheets": []}}, "/format"),
    ({"format": "xlsx"}, "/spec"),
    ({"format": "xlsx", "spec": "not an object"}, "/spec"),
    ({"format": "xlsx", "spec": {"version": 1, "sheets": [{"name": "S", "rows": [[1]]}]}, "inputs": "x"}, "/inputs"),
    ({"format": "xlsx", "spec": {"version": 1, "sheets": [{"name": "S", "rows": [[1]]}]}, "filename": ""}, "/filename"),
    ({"spec": {"version": 1, "sheets": [{"name": "S", "rows": [[1]]}]}, "filename": "x.doc"}, "/format"),
])
def test_render_bad_request(server, body, pointer):
    r = server.request("POST", "/v1/render", body=body)
    assert r.status == 400 and r.error_code == "invalid_request", r
    assert r.json["error"]["details"].get("pointer") == pointer, r


def test_render_not_an_object(server):
    r = server.request("POST", "/v1/render", body=[1, 2])
    assert r.status == 400 and r.error_code == "invalid_request", r


def test_render_metrics(server, rendered):
    text = server.metrics()
    for fmt in ("xlsx", "docx", "pdf", "pptx"):
        m = re.search(r'^kiln_renders_total\{[^}]*format="%s"[^}]*\} (\d+)' % fmt, text, re.M)
        assert m and int(m.group(1)) >= 1, (fmt, text[:3000])


# =========================================================================== limits

def fake_jpeg(size, seed):
    """A JPEG of about size bytes Kiln accepts (SOF, SOS, EOI; the structure is checked, the
    pixels never decoded) whose scan is random: stored as it is, it does not compress."""
    import random
    rng = random.Random(seed)
    sof = b"\xff\xc0\x00\x11\x08\x00\x64\x00\x64\x03\x01\x11\x00\x02\x11\x00\x03\x11\x00"
    sos = b"\xff\xda\x00\x0c\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00"
    scan = rng.randbytes(size).replace(b"\xff", b"\xfe")    # no marker inside the scan
    return b"\xff\xd8" + sof + sos + scan + b"\xff\xd9"


def test_render_over_the_ceiling_is_413(server):
    """A document past the output ceiling (30 MiB, fixed): two different 16 MiB images (each
    under the 20 MiB an image may have; one used twice would be stored once) in a docx."""
    ids = [server.upload("big%d.jpg" % i, fake_jpeg(16 << 20, i))["id"] for i in range(2)]
    before = server.request("GET", "/v1/files?limit=1").json["total"]
    spec = {"version": 1, "blocks": [{"type": "image", "image": {"path": i, "alt": "noise"}}
                                     for i in ids]}
    r = server.request("POST", "/v1/render", body={"format": "docx", "spec": spec, "inputs": ids},
                       timeout=120)
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == 30 << 20, r
    assert "document" in r.json["error"]["message"], r
    assert server.request("GET", "/v1/files?limit=1").json["total"] == before
    for i in ids:
        assert server.request("DELETE", "/v1/files/" + i).status == 204


def vm_hwm_bytes(pid):
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/%d/status" % pid)


def test_json_bomb_is_413(serve_factory):
    """4 MiB of empty arrays would cost jansson over 150 MiB: it is refused (413, details.limit
    the memory budget, 32 bytes a byte) quickly, and the server's peak memory stays low."""
    import time
    s = serve_factory(name="bomb")
    head, tail = b'{"format":"xlsx","spec":{"version":1,"x":[', b"[]]}}"
    body = head + b"[]," * ((4 << 20) // 3) + tail
    t0 = time.monotonic()
    r = s.request("POST", "/v1/render", body=body, headers={"Content-Type": "application/json"})
    took = time.monotonic() - t0
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == 32 * len(body), r
    assert "more memory than its size allows" in r.json["error"]["message"], r
    # (about 1 s here; under ASan with full malloc stack traces about 16 s: a bound
    # that catches a hang, not a benchmark)
    assert took < 60, took
    hwm = vm_hwm_bytes(s.proc.pid)
    assert hwm < 300 * 1000 * 1000, "peak RSS %d MB" % (hwm // 1000000)
    # and the server is fine afterwards
    assert s.request("GET", "/healthz", key=None).status == 200
    ok = s.request("POST", "/v1/render", body={"format": "xlsx", "spec": {
        "version": 1, "sheets": [{"name": "S", "rows": [[1]]}]}})
    assert ok.status == 201, ok
